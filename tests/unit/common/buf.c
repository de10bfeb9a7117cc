/* Unit tests for common/buf.c: the bound is never passed, text stays terminated. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"

static void
test_append_within_max(void **state)
{
	struct buf	 b = BUF_INIT(8);

	assert_string_equal(buf_str(&b), "");
	assert_int_equal(buf_append(&b, "abcd", 4), 0);
	assert_int_equal(buf_appends(&b, "efgh"), 0);
	assert_int_equal(b.len, 8);
	assert_string_equal(buf_str(&b), "abcdefgh");
	buf_release(&b);
}

static void
test_append_over_max_fails_unchanged(void **state)
{
	struct buf	 b = BUF_INIT(5);

	assert_int_equal(buf_appends(&b, "abc"), 0);
	errno = 0;
	assert_int_equal(buf_appends(&b, "def"), -1);
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(b.len, 3);
	assert_string_equal(buf_str(&b), "abc");
	/* A huge length must not wrap around the check. */
	assert_int_equal(buf_append(&b, "x", SIZE_MAX), -1);
	assert_int_equal(b.len, 3);
	buf_release(&b);
}

static void
test_appendf_and_bound(void **state)
{
	struct buf	 b = BUF_INIT(10);

	assert_int_equal(buf_appendf(&b, "%d-%s", 42, "ok"), 0);
	assert_string_equal(buf_str(&b), "42-ok");
	assert_int_equal(buf_appendf(&b, "%s", "too long!"), -1);
	assert_string_equal(buf_str(&b), "42-ok");
	buf_release(&b);
}

static void
test_consume_and_detach(void **state)
{
	struct buf	 b = BUF_INIT(100);
	char		*p;
	size_t		 n;

	assert_int_equal(buf_appends(&b, "hello world"), 0);
	buf_consume(&b, 6);
	assert_string_equal(buf_str(&b), "world");
	buf_consume(&b, 99);
	assert_int_equal(b.len, 0);
	assert_string_equal(buf_str(&b), "");
	assert_int_equal(buf_appends(&b, "xyz"), 0);
	p = buf_detach(&b, &n);
	assert_int_equal(n, 3);
	assert_string_equal(p, "xyz");
	assert_null(b.data);
	free(p);
	p = buf_detach(&b, &n);		/* empty buffer: "" not NULL */
	assert_non_null(p);
	assert_int_equal(n, 0);
	free(p);
}

static void
test_growth_many_appends(void **state)
{
	struct buf	 b = BUF_INIT(100000);
	int		 i;

	for (i = 0; i < 10000; i++)
		assert_int_equal(buf_append(&b, "0123456789", 10), 0);
	assert_int_equal(b.len, 100000);
	assert_int_equal(buf_append(&b, "x", 1), -1);
	assert_true(b.cap <= 100001);
	buf_release(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_within_max),
		cmocka_unit_test(test_append_over_max_fails_unchanged),
		cmocka_unit_test(test_appendf_and_bound),
		cmocka_unit_test(test_consume_and_detach),
		cmocka_unit_test(test_growth_many_appends),
	};

	return cmocka_run_group_tests_name("common/buf", tests, NULL, NULL);
}
