/*
 * bearer.c: the bearer-token comparison (bearer.h).
 */
#include <string.h>
#include <strings.h>

#include "bearer.h"
#include "banned.h"

int
bearer_ok(const char *auth, const char *token, size_t tlen)
{
	volatile unsigned char	 diff;
	const char		*p;
	size_t			 alen, i;

	if (auth == NULL || token == NULL || tlen == 0)
		return 0;
	if (strncasecmp(auth, "Bearer ", 7) != 0)
		return 0;
	p = auth + 7;
	while (*p == ' ')
		p++;
	alen = strlen(p);
	/*
	 * Every byte of the expected token is looked at whatever the input,
	 * so the time taken says nothing about how much of it matched; only
	 * the length sent shows (it is the sender's own).
	 */
	diff = (unsigned char)(alen != tlen);
	for (i = 0; i < tlen; i++)
		diff |= (unsigned char)(token[i] ^ (i < alen ? p[i] : 0));
	return diff == 0;
}
