/*
 * Unit tests for common/hash.c: FNV-1a's published 64-bit vectors, and
 * chaining equal to one pass (names on hosts are derived from it: a
 * change would rename every user's bridge).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hash.h"

static void
test_vectors(void **state)
{
	assert_true(hash_bytes(HASH_INIT, "", 0) == 0xcbf29ce484222325ULL);
	assert_true(hash_bytes(HASH_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(hash_bytes(HASH_INIT, "foobar", 6) ==
	    0x85944171f73967e8ULL);
}

static void
test_chained(void **state)
{
	uint64_t	 h = hash_bytes(HASH_INIT, "foo", 3);

	assert_true(hash_bytes(h, "bar", 3) == hash_bytes(HASH_INIT, "foobar",
	    6));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_chained),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
