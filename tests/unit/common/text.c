/*
 * Unit tests for common/text.c: the one UTF-8 decoder (valid, invalid as
 * maximal subparts, cut off by the end), character counts and boundaries,
 * and the size format every program shows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_next),
		cmocka_unit_test(test_utf8_chars_and_floor),
		cmocka_unit_test(test_human_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
