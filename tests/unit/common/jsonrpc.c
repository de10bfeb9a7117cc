/*
 * Unit tests for common/jsonrpc.c: the error body's shape, and a message
 * quoting bytes that are not UTF-8 (a URL, a client's body), which
 * json_pack alone refuses, so the supervisor used to answer nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "jsonrpc.h"

static const char *
message(json_t *e)
{
	return json_string_value(json_object_get(json_object_get(e, "error"),
	    "message"));
}

static void
test_shape(void **state)
{
	json_t	*id = json_integer(7), *e;

	e = jsonrpc_error(id, -32601, "Method not found: %s", "x");
	assert_non_null(e);
	assert_string_equal(json_string_value(json_object_get(e, "jsonrpc")),
	    "2.0");
	assert_int_equal(json_integer_value(json_object_get(e, "id")), 7);
	assert_int_equal(json_integer_value(json_object_get(
	    json_object_get(e, "error"), "code")), -32601);
	assert_string_equal(message(e), "Method not found: x");
	json_decref(e);
	json_decref(id);
	/* No id: null, as for a parse error. */
	e = jsonrpc_error(NULL, -32000, "no");
	assert_true(json_is_null(json_object_get(e, "id")));
	json_decref(e);
}

static void
test_message_not_utf8(void **state)
{
	char	 long_msg[3000];
	json_t	*e;
	char	*s;

	e = jsonrpc_error(NULL, -32000, "no such endpoint %.100s: try /mcp",
	    "/u/\xff\xfe/x");
	assert_non_null(e);
	assert_string_equal(message(e),
	    "no such endpoint /u/\\xff\\xfe/x: try /mcp");
	s = json_dumps(e, JSON_COMPACT);
	assert_non_null(s);
	free(s);
	json_decref(e);
	/* Cut inside a character by the message's bound: still valid. */
	memset(long_msg, 'a', sizeof(long_msg));
	memcpy(long_msg + 1022, "\xc3\xa9", 2);
	long_msg[sizeof(long_msg) - 1] = '\0';
	e = jsonrpc_error(NULL, -32000, "%s", long_msg);
	assert_non_null(e);
	assert_non_null(strstr(message(e), "a\\xc3"));
	json_decref(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_message_not_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
