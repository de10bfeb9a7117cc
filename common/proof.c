/*
 * proof.c: the agent's proof that it holds its secret (proof.h).
 */
#include <sys/random.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "link.h"
#include "proof.h"
#include "sha256.h"
#include "banned.h"

#define PROOF_LABEL	"vivarium-agent-proof"	/* and its NUL */

int
proof_nonce(char out[PROOF_NONCE_HEX + 1])
{
	unsigned char	 n[PROOF_NONCE_LEN];

	if (getrandom(n, sizeof(n), 0) != (ssize_t)sizeof(n)) {
		out[0] = '\0';
		if (errno == 0)
			errno = EIO;
		return -1;
	}
	hex_encode(n, sizeof(n), out);
	return 0;
}

int
proof_nonce_valid(const char *s)
{
	size_t	 i;

	if (s == NULL || strlen(s) != PROOF_NONCE_HEX)
		return 0;
	for (i = 0; i < PROOF_NONCE_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a'
		    && s[i] <= 'f')))
			return 0;
	return 1;
}

int
proof_addr(const struct sockaddr *sa, char addr[PROOF_ADDR_MAX], int *port)
{
	const struct sockaddr_in6	*s6;
	const struct sockaddr_in	*s4;
	struct in_addr			 v4;

	addr[0] = '\0';
	*port = 0;
	if (sa->sa_family == AF_INET) {
		s4 = (const struct sockaddr_in *)(const void *)sa;
		*port = ntohs(s4->sin_port);
		return inet_ntop(AF_INET, &s4->sin_addr, addr, PROOF_ADDR_MAX)
		    != NULL ? 0 : -1;
	}
	if (sa->sa_family != AF_INET6)
		return -1;
	s6 = (const struct sockaddr_in6 *)(const void *)sa;
	*port = ntohs(s6->sin6_port);
	/* A dual-stack listener sees an IPv4 peer's connection this way. */
	if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memcpy(&v4, s6->sin6_addr.s6_addr + 12, sizeof(v4));
		return inet_ntop(AF_INET, &v4, addr, PROOF_ADDR_MAX) != NULL
		    ? 0 : -1;
	}
	return inet_ntop(AF_INET6, &s6->sin6_addr, addr, PROOF_ADDR_MAX)
	    != NULL ? 0 : -1;
}

void
proof_make(const char *secret, size_t secret_len, const char *nonce,
    const char *addr, int port, char out[PROOF_HEX + 1])
{
	unsigned char	 mac[SHA256_LEN];
	char		 msg[sizeof(PROOF_LABEL) + PROOF_NONCE_HEX + 1
			    + PROOF_ADDR_MAX + 16];
	size_t		 n = 0;
	int		 k;

	/* Each piece bounded, NUL-separated: no two inputs give one text. */
	memcpy(msg, PROOF_LABEL, sizeof(PROOF_LABEL));
	n += sizeof(PROOF_LABEL);
	k = snprintf(msg + n, sizeof(msg) - n, "%.*s", PROOF_NONCE_HEX, nonce);
	n += (size_t)k + 1;
	k = snprintf(msg + n, sizeof(msg) - n, "%.*s", PROOF_ADDR_MAX - 1,
	    addr);
	n += (size_t)k + 1;
	k = snprintf(msg + n, sizeof(msg) - n, "%d", port);
	n += (size_t)k;
	hmac_sha256(secret, secret_len, msg, n, mac);
	hex_encode(mac, sizeof(mac), out);
	memset(mac, 0, sizeof(mac));
}

int
proof_ok(const char *secret, size_t secret_len, const char *nonce,
    const char *addr, int port, const char *answer)
{
	char	 want[PROOF_HEX + 1];
	int	 ok;

	if (answer == NULL || strlen(answer) != PROOF_HEX || secret_len == 0)
		return 0;
	proof_make(secret, secret_len, nonce, addr, port, want);
	ok = ct_equal(want, answer, PROOF_HEX);
	memset(want, 0, sizeof(want));
	return ok;
}
