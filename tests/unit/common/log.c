/*
 * Unit tests for common/log.c: whatever a message holds, it is one line.
 * A client's path with CR/LF in it, a terminal escape, a bidi override or
 * bytes that are not UTF-8 come out escaped; errno's text is still added.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/* What the calls in fn wrote to stderr. */
static char *
captured(void (*fn)(void))
{
	static char	 out[32768];
	FILE		*f;
	size_t		 n;
	int		 saved;

	fflush(stderr);
	assert_non_null(f = tmpfile());
	saved = dup(2);
	assert_int_not_equal(saved, -1);
	assert_int_equal(dup2(fileno(f), 2), 2);
	fn();
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	return out;
}

static void
forge(void)
{
	log_info("file link: download of %s for user %s (%d bytes)",
	    "a.txt\r\nvivarium-test: forged line", "u\x1b[31m", 3);
}

static void
test_one_line(void **state)
{
	const char *s = captured(forge);

	assert_string_equal(s, "vivarium-test: file link: download of "
	    "a.txt\\x0d\\x0avivarium-test: forged line for user u\\x1b[31m "
	    "(3 bytes)\n");
}

static void
bidi_and_bytes(void)
{
	log_warnx("upload of rtl\xe2\x80\xaegpj.exe and bad\xff\\");
	log_info("caf\xc3\xa9 \\ as it is");
	errno = ENOENT;
	log_warn("open %s", "x\ny");
}

static void
test_bidi_bytes_errno(void **state)
{
	const char *s = captured(bidi_and_bytes);

	assert_string_equal(s,
	    "vivarium-test: upload of rtl\\xe2\\x80\\xaegpj.exe and bad\\xff\\\\\n"
	    "vivarium-test: caf\xc3\xa9 \\ as it is\n"
	    "vivarium-test: open x\\x0ay: No such file or directory\n");
	assert_int_equal(errno, ENOENT);	/* logging keeps errno */
}

static void
very_long(void)
{
	static char	 big[6000];

	memset(big, '\n', sizeof(big) - 1);
	log_info("%s", big);
}

static void
test_long_line_cut(void **state)
{
	const char	*s = captured(very_long);
	size_t		 n = strlen(s);

	/* Cut, still one line, never in the middle of an escape. */
	assert_true(n > 4000 && n < 8300);
	assert_int_equal(s[n - 1], '\n');
	assert_null(memchr(s, '\n', n - 1));
	assert_string_equal(s + n - 5, "\\x0a\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_line),
		cmocka_unit_test(test_bidi_bytes_errno),
		cmocka_unit_test(test_long_line_cut),
	};

	log_init("vivarium-test", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
