/*
 * proof.h: an agent reached over TCP proves that it holds its sandbox's
 * secret before the supervisor sends it anything of the user's.
 *
 * A Pod's address is only a hint: once the Pod is gone (stopped, evicted)
 * the cluster may give its address to another Pod, whose agent (or
 * whatever code took its port) would receive the user's requests and,
 * sent as a Bearer token, the secret itself.  So on every new connection
 * the supervisor first sends GET /health with PROOF_CHALLENGE: a fresh
 * random nonce; the agent answers with PROOF_ANSWER: the hex of
 *
 *	HMAC-SHA256(secret, "vivarium-agent-proof\0" nonce "\0" addr "\0" port)
 *
 * where addr and port are the connection's local end as the agent sees
 * it, the address the supervisor dialled.  Only then does the secret go
 * out, on that connection.  A peer without the secret cannot answer; one
 * that relays the challenge to the real agent elsewhere gets a proof for
 * the real agent's address, not its own.
 */
#ifndef VIVARIUM_PROOF_H
#define VIVARIUM_PROOF_H

#include <stddef.h>
#include <sys/socket.h>

#define PROOF_CHALLENGE		"X-Vivarium-Challenge"
#define PROOF_ANSWER		"X-Vivarium-Proof"
#define PROOF_NONCE_LEN		16			/* random bytes */
#define PROOF_NONCE_HEX		(2 * PROOF_NONCE_LEN)	/* as sent */
#define PROOF_HEX		64			/* HMAC-SHA256 in hex */
/* An IPv6 literal without brackets, and its NUL. */
#define PROOF_ADDR_MAX		46

/* A fresh nonce as PROOF_NONCE_HEX lowercase hex digits; 0, or -1 (errno). */
int	proof_nonce(char out[PROOF_NONCE_HEX + 1]);
/* 1 when s is a nonce as proof_nonce makes them: exactly that many
 * lowercase hex digits. */
int	proof_nonce_valid(const char *s);
/*
 * The address and port of sa as both ends write it: inet_ntop's form,
 * an IPv4-mapped IPv6 address as plain IPv4.  0, or -1 when sa is
 * neither IPv4 nor IPv6.
 */
int	proof_addr(const struct sockaddr *sa, char addr[PROOF_ADDR_MAX],
	    int *port);
/* The answer to nonce at addr:port under secret (secret_len bytes). */
void	proof_make(const char *secret, size_t secret_len, const char *nonce,
	    const char *addr, int port, char out[PROOF_HEX + 1]);
/* 1 when answer (NULL: none) is the proof; in time independent of it. */
int	proof_ok(const char *secret, size_t secret_len, const char *nonce,
	    const char *addr, int port, const char *answer);

#endif
