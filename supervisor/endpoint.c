/*
 * endpoint.c: which endpoint a URL names, and the checks at its door:
 * whether a user id is acceptable (the rule every user id keeps, from the
 * config to vivariumctl) and the bearer token.
 */
#include <string.h>

#include "bearer.h"
#include "supervisor.h"
#include "banned.h"

const char user_id_rule[] =
    "user ids may contain only lowercase letters a-z, digits and '-', must "
    "start and end with a letter or digit, and be at most 63 characters";

enum endpoint
endpoint_match(const char *url, const char **user, size_t *userlen)
{
	const char	*p, *slash;
	size_t		 n;

	*user = NULL;
	*userlen = 0;
	/* MHD hands us the path without the query string. */
	if (strcmp(url, "/mcp") == 0 || strcmp(url, "/mcp/") == 0)
		return ENDPOINT_MCP;
	if (strcmp(url, "/health") == 0)
		return ENDPOINT_HEALTH;
	if (strcmp(url, "/metrics") == 0)
		return ENDPOINT_METRICS;
	if (strncmp(url, "/u/", 3) != 0)
		return ENDPOINT_NONE;
	p = url + 3;
	if ((slash = strchr(p, '/')) == NULL)
		return ENDPOINT_NONE;
	if (strcmp(slash, "/mcp") != 0 && strcmp(slash, "/mcp/") != 0)
		return ENDPOINT_NONE;
	n = (size_t)(slash - p);
	*user = p;
	*userlen = n;
	return ENDPOINT_USER_MCP;
}

int
user_id_valid(const char *id, size_t len)
{
	size_t	 i;

	if (len == 0 || len > USER_ID_MAX)
		return -1;
	for (i = 0; i < len; i++) {
		char c = id[i];

		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			continue;
		if (c == '-' && i != 0 && i != len - 1)
			continue;
		return -1;
	}
	return 0;
}

int
token_ok(const char *auth, const char *token)
{
	return bearer_ok(auth, token, token != NULL ? strlen(token) : 0);
}
