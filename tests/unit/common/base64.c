/*
 * Unit tests for common/base64.c: RFC 4648's vectors in both alphabets,
 * and the strict decoding that gives each string one spelling.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base64.h"

static const struct {
	const char	*in, *std, *url;
} vec[] = {
	{ "", "", "" },
	{ "f", "Zg==", "Zg" },
	{ "fo", "Zm8=", "Zm8" },
	{ "foo", "Zm9v", "Zm9v" },
	{ "foob", "Zm9vYg==", "Zm9vYg" },
	{ "fooba", "Zm9vYmE=", "Zm9vYmE" },
	{ "foobar", "Zm9vYmFy", "Zm9vYmFy" },
	{ "\xfb\xff", "+/8=", "-_8" },
};

static void
test_vectors(void **state)
{
	struct buf	 b = BUF_INIT(64);
	unsigned char	 out[16];
	size_t		 i, n;
	long		 got;

	for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		n = strlen(vec[i].in);
		buf_reset(&b);
		assert_int_equal(base64_encode(BASE64_STD, vec[i].in, n, &b), 0);
		assert_string_equal(buf_str(&b), vec[i].std);
		assert_int_equal(base64_encoded_len(BASE64_STD, n),
		    strlen(vec[i].std));
		buf_reset(&b);
		assert_int_equal(base64_encode(BASE64_URL, vec[i].in, n, &b), 0);
		assert_string_equal(buf_str(&b), vec[i].url);
		assert_int_equal(base64_encoded_len(BASE64_URL, n),
		    strlen(vec[i].url));
		got = base64_decode(BASE64_STD, 0, vec[i].std,
		    strlen(vec[i].std), out, sizeof(out));
		assert_int_equal(got, (long)n);
		assert_memory_equal(out, vec[i].in, n);
		got = base64_decode(BASE64_URL, 0, vec[i].url,
		    strlen(vec[i].url), out, sizeof(out));
		assert_int_equal(got, (long)n);
		assert_memory_equal(out, vec[i].in, n);
	}
	buf_release(&b);
}

#define DEC(a, f, s) base64_decode((a), (f), (s), strlen(s), out, sizeof(out))

static void
test_strict(void **state)
{
	unsigned char	 out[16];

	/* The other alphabet's characters. */
	assert_int_equal(DEC(BASE64_URL, 0, "+/8"), -1);
	assert_int_equal(DEC(BASE64_STD, 0, "-_8="), -1);
	/* URL: never padded; standard: padded exactly. */
	assert_int_equal(DEC(BASE64_URL, 0, "-_8="), -1);
	assert_int_equal(DEC(BASE64_STD, 0, "Zg"), -1);
	assert_int_equal(DEC(BASE64_STD, 0, "Zg="), -1);
	assert_int_equal(DEC(BASE64_STD, 0, "Zg==="), -1);
	assert_int_equal(DEC(BASE64_STD, 0, "Zg==Zg=="), -1);
	assert_int_equal(DEC(BASE64_STD, 0, "===="), -1);
	/* Non-zero leftover bits, an impossible length. */
	assert_int_equal(DEC(BASE64_URL, 0, "-_9"), -1);
	assert_int_equal(DEC(BASE64_STD, 0, "Zh=="), -1);
	assert_int_equal(DEC(BASE64_URL, 0, "A"), -1);
	assert_int_equal(DEC(BASE64_URL, 0, "AAAAA"), -1);
	/* A NUL inside, blanks only when asked for. */
	assert_int_equal(base64_decode(BASE64_URL, 0, "Zg\0A", 4, out,
	    sizeof(out)), -1);
	assert_int_equal(DEC(BASE64_STD, 0, "Zm9v\nYmFy"), -1);
	assert_int_equal(DEC(BASE64_STD, BASE64_BLANKS, " Zm9v\r\nYm\tFy\n"),
	    6);
	assert_memory_equal(out, "foobar", 6);
	/* Too little room. */
	assert_int_equal(base64_decode(BASE64_STD, 0, "Zm9vYmFy", 8, out, 5),
	    -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_strict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
