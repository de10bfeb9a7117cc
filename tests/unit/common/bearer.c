/*
 * Unit tests for common/bearer.c: the scheme, the spaces, and every way a
 * token can be almost right.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../common/bearer.c"

static void
test_bearer(void **state)
{
	static const char t[] = "0123456789abcdef0123456789abcdef";

	assert_true(bearer_ok("Bearer 0123456789abcdef0123456789abcdef", t, 32));
	assert_true(bearer_ok("bearer 0123456789abcdef0123456789abcdef", t, 32));
	assert_true(bearer_ok("BEARER   0123456789abcdef0123456789abcdef", t,
	    32));
	/* Truncated, one more, one changed, the first one changed. */
	assert_false(bearer_ok("Bearer 0123456789abcdef0123456789abcde", t, 32));
	assert_false(bearer_ok("Bearer 0123456789abcdef0123456789abcdef0", t,
	    32));
	assert_false(bearer_ok("Bearer 0123456789abcdef0123456789abcdeF", t,
	    32));
	assert_false(bearer_ok("Bearer x123456789abcdef0123456789abcdef", t, 32));
	/* Trailing space is part of what was sent. */
	assert_false(bearer_ok("Bearer 0123456789abcdef0123456789abcdef ", t,
	    32));
	/* Another scheme, no scheme, no token, nothing. */
	assert_false(bearer_ok("Basic 0123456789abcdef0123456789abcdef", t, 32));
	assert_false(bearer_ok("0123456789abcdef0123456789abcdef", t, 32));
	assert_false(bearer_ok("Bearer0123456789abcdef0123456789abcdef", t, 32));
	assert_false(bearer_ok("Bearer ", t, 32));
	assert_false(bearer_ok("", t, 32));
	assert_false(bearer_ok(NULL, t, 32));
	/* The length given is the token: a prefix of it is another token. */
	assert_true(bearer_ok("Bearer 0123", t, 4));
	assert_false(bearer_ok("Bearer 0123456789abcdef0123456789abcdef", t, 4));
	/* No token set: nothing matches, not even nothing. */
	assert_false(bearer_ok("Bearer ", "", 0));
	assert_false(bearer_ok("Bearer x", NULL, 0));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bearer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
