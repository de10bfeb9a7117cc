/*
 * Unit tests for common/proof.c: the agent's answer to a challenge
 * against vectors computed with Python's hmac (not with our sha256.c),
 * and every way an answer can be almost right.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../../common/proof.c"

#define SECRET	"sekrit-of-the-pod"
#define NONCE	"00112233445566778899aabbccddeeff"
/* hmac.new(SECRET, b"vivarium-agent-proof\0" NONCE b"\0" addr b"\0" port). */
#define V4	"657119cb2a50afca5db58510349716b76dc931b9cb8d99c15fdbf1c7e5ee47d9"
#define V6	"cb002d46f4a8f48279ea9beb4e56b0a88aae1587c6de53b96f0bc8e824dd7174"

static void
test_vectors(void **state)
{
	char	 out[PROOF_HEX + 1];

	proof_make(SECRET, strlen(SECRET), NONCE, "10.1.2.3", 8700, out);
	assert_string_equal(out, V4);
	proof_make(SECRET, strlen(SECRET), NONCE, "fd00::1", 8700, out);
	assert_string_equal(out, V6);
}

static void
test_ok(void **state)
{
	size_t	 sl = strlen(SECRET);
	char	 bad[PROOF_HEX + 2];

	assert_true(proof_ok(SECRET, sl, NONCE, "10.1.2.3", 8700, V4));
	/* Another secret, nonce, address, port: another answer. */
	assert_false(proof_ok("sekrit-of-the-pox", sl, NONCE, "10.1.2.3",
	    8700, V4));
	assert_false(proof_ok(SECRET, sl - 1, NONCE, "10.1.2.3", 8700, V4));
	assert_false(proof_ok(SECRET, sl, "00112233445566778899aabbccddeef0",
	    "10.1.2.3", 8700, V4));
	assert_false(proof_ok(SECRET, sl, NONCE, "10.1.2.4", 8700, V4));
	assert_false(proof_ok(SECRET, sl, NONCE, "10.1.2.3", 8701, V4));
	/* The answer: none, empty, cut, longer, upper case, one digit off. */
	assert_false(proof_ok(SECRET, sl, NONCE, "10.1.2.3", 8700, NULL));
	assert_false(proof_ok(SECRET, sl, NONCE, "10.1.2.3", 8700, ""));
	assert_false(proof_ok(SECRET, sl, NONCE, "10.1.2.3", 8700,
	    V4 + 1));
	snprintf(bad, sizeof(bad), "%s0", V4);
	assert_false(proof_ok(SECRET, sl, NONCE, "10.1.2.3", 8700, bad));
	snprintf(bad, sizeof(bad), "%s", V4);
	bad[6] = 'C';		/* "657119Cb...": upper case */
	assert_false(proof_ok(SECRET, sl, NONCE, "10.1.2.3", 8700, bad));
	snprintf(bad, sizeof(bad), "%s", V4);
	bad[PROOF_HEX - 1] = bad[PROOF_HEX - 1] == '0' ? '1' : '0';
	assert_false(proof_ok(SECRET, sl, NONCE, "10.1.2.3", 8700, bad));
	/* No secret proves nothing. */
	assert_false(proof_ok("", 0, NONCE, "10.1.2.3", 8700, V4));
}

static void
test_nonce(void **state)
{
	char	 a[PROOF_NONCE_HEX + 1], b[PROOF_NONCE_HEX + 1];

	assert_int_equal(proof_nonce(a), 0);
	assert_int_equal(proof_nonce(b), 0);
	assert_int_equal(strlen(a), PROOF_NONCE_HEX);
	assert_true(proof_nonce_valid(a));
	assert_string_not_equal(a, b);
	assert_true(proof_nonce_valid(NONCE));
	assert_false(proof_nonce_valid(NULL));
	assert_false(proof_nonce_valid(""));
	assert_false(proof_nonce_valid(NONCE "0"));
	assert_false(proof_nonce_valid("00112233445566778899aabbccddeef"));
	assert_false(proof_nonce_valid("00112233445566778899AABBCCDDEEFF"));
	assert_false(proof_nonce_valid("00112233445566778899aabbccddeefg"));
	assert_false(proof_nonce_valid("00112233445566778899aabbccddee\r\n"));
}

static void
test_addr(void **state)
{
	struct sockaddr_in	 s4;
	struct sockaddr_in6	 s6;
	struct sockaddr		 su;
	char			 a[PROOF_ADDR_MAX];
	int			 port;

	memset(&s4, 0, sizeof(s4));
	s4.sin_family = AF_INET;
	s4.sin_port = htons(8700);
	inet_pton(AF_INET, "10.1.2.3", &s4.sin_addr);
	assert_int_equal(proof_addr((struct sockaddr *)&s4, a, &port), 0);
	assert_string_equal(a, "10.1.2.3");
	assert_int_equal(port, 8700);

	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_INET6;
	s6.sin6_port = htons(9000);
	inet_pton(AF_INET6, "fd00:0:0::1", &s6.sin6_addr);
	assert_int_equal(proof_addr((struct sockaddr *)&s6, a, &port), 0);
	assert_string_equal(a, "fd00::1");
	assert_int_equal(port, 9000);
	/* What a dual-stack listener sees of an IPv4 connection. */
	inet_pton(AF_INET6, "::ffff:10.1.2.3", &s6.sin6_addr);
	assert_int_equal(proof_addr((struct sockaddr *)&s6, a, &port), 0);
	assert_string_equal(a, "10.1.2.3");

	memset(&su, 0, sizeof(su));
	su.sa_family = AF_UNIX;
	assert_int_equal(proof_addr(&su, a, &port), -1);
	assert_string_equal(a, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_ok),
		cmocka_unit_test(test_nonce),
		cmocka_unit_test(test_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
