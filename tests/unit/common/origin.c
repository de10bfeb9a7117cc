/* Unit tests for common/origin.c: the Origin allow list, a URL's origin. */
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "origin.h"

static void
test_no_origin_is_allowed(void **state)
{
	assert_true(origin_allowed(NULL, NULL));
	assert_true(origin_allowed("", NULL));
}

static void
test_loopback_origins_are_allowed(void **state)
{
	assert_true(origin_allowed(NULL, "http://localhost"));
	assert_true(origin_allowed(NULL, "http://localhost:3080"));
	assert_true(origin_allowed("", "https://127.0.0.1:8443"));
	assert_true(origin_allowed("", "http://[::1]:80"));
	assert_false(origin_allowed("", "http://localhost.evil.example"));
	assert_false(origin_allowed("", "http://127.0.0.1.evil.example"));
	assert_false(origin_allowed("", "http://localhost:80x"));
	assert_false(origin_allowed("", "ftp://localhost"));
	assert_false(origin_allowed("", "null"));
}

static void
test_list_matches_exactly(void **state)
{
	const char *l = "https://chat.example.org, http://box.lan:3080";

	assert_true(origin_allowed(l, "https://chat.example.org"));
	assert_true(origin_allowed(l, "HTTPS://Chat.Example.org"));
	assert_true(origin_allowed(l, "http://box.lan:3080"));
	assert_false(origin_allowed(l, "http://chat.example.org"));
	assert_false(origin_allowed(l, "https://chat.example.org.evil"));
	assert_false(origin_allowed(l, "http://box.lan"));
	assert_false(origin_allowed(l, "http://evil.example.com"));
	assert_true(origin_allowed("*", "http://evil.example.com"));
}

static void
test_list_syntax(void **state)
{
	char err[256];

	assert_int_equal(origins_check("", err, sizeof(err)), 0);
	assert_int_equal(origins_check("*", err, sizeof(err)), 0);
	assert_int_equal(origins_check("https://a.example, http://b:1",
	    err, sizeof(err)), 0);
	assert_int_equal(origins_check("a.example", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "a.example"));
	assert_int_equal(origins_check("https://a.example/x", err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "path"));
}

static void
test_origin_of_url(void **state)
{
	char	 o[64], small[16];

	assert_int_equal(origin_of_url("https://chat.example.org/ws/abc?x#y",
	    o, sizeof(o)), 0);
	assert_string_equal(o, "https://chat.example.org");
	assert_int_equal(origin_of_url("http://box.lan:3080", o, sizeof(o)), 0);
	assert_string_equal(o, "http://box.lan:3080");
	assert_int_equal(origin_of_url("http://[::1]:8080?q", o, sizeof(o)), 0);
	assert_string_equal(o, "http://[::1]:8080");
	assert_int_equal(origin_of_url("HTTPS://A.example#f", o, sizeof(o)), 0);
	assert_string_equal(o, "HTTPS://A.example");
	/* Not http(s), no host, or something a CSP list would split on. */
	assert_int_equal(origin_of_url("ftp://a.example/", o, sizeof(o)), -1);
	assert_int_equal(origin_of_url("https:///x", o, sizeof(o)), -1);
	assert_int_equal(origin_of_url("https://", o, sizeof(o)), -1);
	assert_int_equal(origin_of_url("a.example", o, sizeof(o)), -1);
	assert_int_equal(origin_of_url("https://a.example;b/", o, sizeof(o)),
	    -1);
	assert_int_equal(origin_of_url("https://a 'unsafe-inline'/", o,
	    sizeof(o)), -1);
	/* Those are fine after the origin. */
	assert_int_equal(origin_of_url("https://a.example/x;y", o, sizeof(o)),
	    0);
	assert_string_equal(o, "https://a.example");
	/* It fits or it fails. */
	assert_int_equal(origin_of_url("https://a.exampl/", small,
	    sizeof(small)), -1);
	assert_int_equal(origin_of_url("https://a.examp/", small,
	    sizeof(small)), 0);
	assert_string_equal(small, "https://a.examp");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_origin_is_allowed),
		cmocka_unit_test(test_loopback_origins_are_allowed),
		cmocka_unit_test(test_list_matches_exactly),
		cmocka_unit_test(test_list_syntax),
		cmocka_unit_test(test_origin_of_url),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
