/*
 * Unit tests for supervisor/names.c: a person's name as LibreChat sends it
 * is cleaned for a terminal (no control, format or stray bytes, bounded),
 * kept per user, and found again by name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../supervisor/names.c"

#define S(x)	((char *)(uintptr_t)(x))

static void
clean_is(const char *in, const char *want)
{
	char	 out[NAME_MAX_BYTES + 8];

	if (want == NULL) {
		assert_int_equal(name_clean(in, out, sizeof(out)), -1);
		return;
	}
	assert_int_equal(name_clean(in, out, sizeof(out)), 0);
	assert_string_equal(out, want);
}

static void
test_clean(void **state)
{
	char	 big[400], out[NAME_MAX_BYTES + 8];

	(void)state;
	clean_is("alice@example.org", "alice@example.org");
	clean_is("  Zoë Müller  ", "Zoë Müller");
	clean_is("evil\r\n\x1b[31mroot", "evil[31mroot");
	/* A right-to-left override, zero widths, a BOM, an isolate. */
	clean_is("rtl\xe2\x80\xae" "gpj.exe", "rtlgpj.exe");
	clean_is("a\xe2\x80\x8b" "b\xef\xbb\xbf" "c\xe2\x81\xa6" "d", "abcd");
	/* Not UTF-8: dropped byte by byte, the rest kept. */
	clean_is("bad\xff\xc3(seq", "bad(seq");
	clean_is("\xed\xa0\x80x", "x");		/* a surrogate */
	clean_is("", NULL);
	clean_is("\x01\x02 \t", NULL);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(name_clean(big, out, sizeof(out)), 0);
	assert_int_equal(strlen(out), NAME_MAX_BYTES);
}

static void
test_record_find(void **state)
{
	struct conf	 c;
	char		 dir[] = "/tmp/vnames.XXXXXX", got[NAME_MAX_BYTES + 8];
	char		 user[USER_ID_MAX + 1], cmd[64];
	int		 n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(&c, 0, sizeof(c));
	c.state_dir = dir;
	c.user_name_header = S("X-User-Name");
	assert_int_equal(names_get(&c, "u1", got, sizeof(got)), -1);
	assert_int_equal(names_record(&c, "u1", "Alice@Example.org\n"), 0);
	assert_int_equal(names_get(&c, "u1", got, sizeof(got)), 0);
	assert_string_equal(got, "Alice@Example.org");
	assert_int_equal(names_record(&c, "u2", "bob"), 0);
	assert_int_equal(names_record(&c, "u3", "\x01"), -1);
	assert_int_equal(names_find(&c, "alice@example.org", user, sizeof(user),
	    &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(user, "u1");
	assert_int_equal(names_find(&c, "carol", user, sizeof(user), &n), 0);
	assert_int_equal(n, 0);
	/* Two users, one name: both counted, so callers refuse it. */
	assert_int_equal(names_record(&c, "u3", "bob"), 0);
	assert_int_equal(names_find(&c, "bob", user, sizeof(user), &n), 0);
	assert_int_equal(n, 2);
	names_forget(&c, "u3");
	assert_int_equal(names_find(&c, "bob", user, sizeof(user), &n), 0);
	assert_int_equal(n, 1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_record_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
