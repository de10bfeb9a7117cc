/*
 * bearer.h: checking an `Authorization: Bearer <token>` value against the
 * token we expect, in time that says nothing about how much matched.  The
 * supervisor checks LibreChat's token with it, the agent the per-sandbox
 * secret the supervisor sends it over TCP.
 */
#ifndef VIVARIUM_BEARER_H
#define VIVARIUM_BEARER_H

#include <stddef.h>

/*
 * 1 when authorization (a header value, or NULL) is "Bearer" (any case),
 * one or more spaces, and exactly the token_len bytes of token.  Every
 * byte of token is looked at whatever was sent.  A NULL or empty token
 * never matches.
 */
int	bearer_ok(const char *authorization, const char *token,
	    size_t token_len);

#endif
