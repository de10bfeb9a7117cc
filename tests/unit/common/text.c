/*
 * Unit tests for common/text.c: the one UTF-8 decoder (valid, invalid as
 * maximal subparts, cut off by the end), character counts and boundaries,
 * the size format every program shows, invisible characters, and the
 * escaping of names and log lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "text.h"

static void
check(const char *s, size_t n, size_t want_len, int want_state)
{
	int	 st;
	size_t	 k = utf8_next((const unsigned char *)s, n, &st);

	if (k != want_len || st != want_state)
		fail_msg("%02x...: length %zu state %d, want %zu %d",
		    (unsigned char)s[0], k, st, want_len, want_state);
}

static void
test_utf8_next(void **state)
{
	check("a", 1, 1, 1);
	check("\xc3\xa9", 2, 2, 1);
	check("\xe2\x82\xac", 3, 3, 1);
	check("\xf0\x9f\x98\x80", 4, 4, 1);
	/* Invalid: one maximal subpart each. */
	check("\x80", 1, 1, 0);			/* a stray continuation */
	check("\xc0\xaf", 2, 1, 0);		/* an overlong lead */
	check("\xe0\x80\x80", 3, 1, 0);		/* overlong: refused at byte 2 */
	check("\xed\xa0\x80", 3, 1, 0);		/* a surrogate */
	check("\xf4\x90\x80\x80", 4, 1, 0);	/* past U+10FFFF */
	check("\xf5\x80", 2, 1, 0);
	check("\xe2\x82" "a", 3, 2, 0);		/* two of three, then ASCII */
	/* Cut off by the end: valid so far. */
	check("\xe2\x82", 2, 2, -1);
	check("\xf0", 1, 1, -1);
	assert_int_equal(utf8_seq((const unsigned char *)"\xe2\x82\xac", 3), 3);
	assert_int_equal(utf8_seq((const unsigned char *)"\xe2\x82", 2), -1);
	assert_int_equal(utf8_seq((const unsigned char *)"\xe2\x82" "a", 3), 0);
	/* Overlong is known at its second byte, cut off or not. */
	assert_int_equal(utf8_seq((const unsigned char *)"\xe0\x80", 2), 0);
}

static void
test_utf8_chars_and_floor(void **state)
{
	const char	*s = "a\xc3\xa9\xe2\x82\xac" "b";	/* a é € b */

	assert_int_equal(utf8_chars(s, strlen(s)), 4);
	assert_int_equal(utf8_chars(s, 0), 0);
	assert_int_equal(utf8_floor(s, 0), 0);
	assert_int_equal(utf8_floor(s, 1), 1);
	assert_int_equal(utf8_floor(s, 2), 1);		/* inside é */
	assert_int_equal(utf8_floor(s, 4), 3);		/* inside € */
	assert_int_equal(utf8_floor(s, 5), 3);
	assert_int_equal(utf8_floor(s, 6), 6);
}

static void
test_human_size(void **state)
{
	static const struct {
		unsigned long long n;
		const char	*want;
	} t[] = {
		{ 0, "0 B" }, { 512, "512 B" }, { 1023, "1023 B" },
		{ 1024, "1.0 KB" }, { 1536, "1.5 KB" }, { 65536, "64.0 KB" },
		{ 49357, "48.2 KB" }, { 5ULL << 19, "2.5 MB" },
		{ 3ULL << 30, "3.0 GB" },
	};
	char	 out[32];
	size_t	 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		human_size(t[i].n, out, sizeof(out));
		assert_string_equal(out, t[i].want);
	}
}

static void
test_invisible(void **state)
{
	static const unsigned long yes[] = { 0x80, 0x85, 0x9f, 0xad, 0x061c,
	    0x180e, 0x200b, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202e,
	    0x2060, 0x2066, 0x2069, 0xfeff, 0xfff9, 0x1d173, 0xe0001, 0xe007f };
	static const unsigned long no[] = { 0x00, 0x1f, 0x41, 0x7f, 0xa0, 0xe9,
	    0x200a, 0x2010, 0x202f, 0x2070, 0x20ac, 0xfefe, 0xfffd, 0x1f600,
	    0xe0080 };
	size_t	 i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!unicode_invisible(yes[i]))
			fail_msg("U+%04lX is invisible", yes[i]);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (unicode_invisible(no[i]))
			fail_msg("U+%04lX is not invisible", no[i]);
	assert_int_equal(utf8_code((const unsigned char *)"A", 1), 0x41);
	assert_int_equal(utf8_code((const unsigned char *)"\xc2\x85", 2), 0x85);
	assert_int_equal(utf8_code((const unsigned char *)"\xe2\x80\xae", 3),
	    0x202e);
	assert_int_equal(utf8_code((const unsigned char *)"\xf3\xa0\x80\x81",
	    4), 0xe0001);
}

static void
esc(const char *in, int flags, const char *want, int want_r)
{
	struct buf	 b = BUF_INIT(1024);
	int		 r = text_escape(&b, in, strlen(in), flags);

	if (r != want_r || strcmp(buf_str(&b), want) != 0)
		fail_msg("text_escape(%s, %d): %d \"%s\", want %d \"%s\"", in,
		    flags, r, buf_str(&b), want_r, want);
	buf_release(&b);
}

static void
test_text_escape(void **state)
{
	esc("plain\\name.txt", ESCAPE_CONTROL, "plain\\name.txt", 0);
	esc("a\nb\\c", ESCAPE_CONTROL, "a\\x0ab\\\\c", 1);
	esc("a\nb", 0, "a\nb", 0);
	esc("bad\xff", 0, "bad\\xff", 1);
	/* Bidi and zero-width: kept unless asked, every byte shown if so. */
	esc("rtl\xe2\x80\xaegpj.exe", ESCAPE_CONTROL, "rtl\xe2\x80\xaegpj.exe", 0);
	esc("rtl\xe2\x80\xaegpj.exe", ESCAPE_CONTROL | ESCAPE_INVISIBLE,
	    "rtl\\xe2\\x80\\xaegpj.exe", 1);
	esc("\xc3\xa9t\xc3\xa9", ESCAPE_CONTROL | ESCAPE_INVISIBLE,
	    "\xc3\xa9t\xc3\xa9", 0);
	esc("x", ESCAPE_ALWAYS, "x", 1);
}

static void
test_escape_line(void **state)
{
	char	 out[64], small[12];

	text_escape_line(out, sizeof(out), "download of a.txt for user u");
	assert_string_equal(out, "download of a.txt for user u");
	text_escape_line(out, sizeof(out), "of a\r\nvivarium: forged \\x0a");
	assert_string_equal(out, "of a\\x0d\\x0avivarium: forged \\\\x0a");
	text_escape_line(out, sizeof(out), "\x1b[2Jx\xc2\x85y\xe2\x81\xa6z\xff");
	assert_string_equal(out, "\\x1b[2Jx\\xc2\\x85y\\xe2\\x81\\xa6z\\xff");
	text_escape_line(out, sizeof(out), "caf\xc3\xa9 \xe2\x82\xac");
	assert_string_equal(out, "caf\xc3\xa9 \xe2\x82\xac");
	/* Cut before what does not fit, never inside an escape or a
	 * character. */
	text_escape_line(small, sizeof(small), "abcdefgh\n");
	assert_string_equal(small, "abcdefgh");
	text_escape_line(small, sizeof(small), "abcdefghij\xc3\xa9");
	assert_string_equal(small, "abcdefghij");
	text_escape_line(small, 1, "abc");
	assert_string_equal(small, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_next),
		cmocka_unit_test(test_utf8_chars_and_floor),
		cmocka_unit_test(test_human_size),
		cmocka_unit_test(test_invisible),
		cmocka_unit_test(test_text_escape),
		cmocka_unit_test(test_escape_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
