/*
 * origin.c: the Origin allow list (see origin.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "origin.h"
#include "banned.h"

/* ------------------------------------------------------------ Origin */

/* The length of "http://" or "https://" (any case) at s, of n bytes; 0
 * when s starts with neither. */
static size_t
scheme_len(const char *s, size_t n)
{
	if (n >= 7 && strncasecmp(s, "http://", 7) == 0)
		return 7;
	if (n >= 8 && strncasecmp(s, "https://", 8) == 0)
		return 8;
	return 0;
}

/* Is origin "scheme://host[:port]" with a loopback host? */
static int
origin_is_loopback(const char *origin)
{
	const char	*h, *end;
	size_t		 n;

	if ((n = scheme_len(origin, strlen(origin))) == 0)
		return 0;
	h = origin + n;
	if (*h == '[') {
		end = strchr(h, ']');
		if (end == NULL)
			return 0;
		n = (size_t)(end - h) + 1;
		if (n != 5 || strncmp(h, "[::1]", 5) != 0)
			return 0;
		h += n;
	} else {
		n = strcspn(h, ":/");
		if (n == 9 && strncasecmp(h, "localhost", 9) == 0)
			;
		else if (n >= 4 && strncmp(h, "127.", 4) == 0 &&
		    strspn(h, "0123456789.") >= n)
			;
		else
			return 0;
		h += n;
	}
	if (*h == ':') {
		h++;
		if (*h == '\0' || strspn(h, "0123456789") != strlen(h))
			return 0;
		return 1;
	}
	return *h == '\0';
}

int
origin_allowed(const char *list, const char *origin)
{
	const char	*it;
	size_t		 n, olen;

	if (origin == NULL)
		return 1;
	if (origin_is_loopback(origin))
		return 1;
	if (list == NULL)
		return 0;
	olen = strlen(origin);
	/* A trailing slash is not part of an origin, but be forgiving. */
	if (olen > 0 && origin[olen - 1] == '/')
		olen--;
	while (config_list_next(&list, &it, &n)) {
		if (n > 0 && it[n - 1] == '/')
			n--;
		if (n == 1 && *it == '*')
			return 1;
		if (n == olen && n > 0 && strncasecmp(it, origin, n) == 0)
			return 1;
	}
	return 0;
}

int
origins_check(const char *list, char *err, size_t errlen)
{
	const char	*p, *rest;
	size_t		 n, k;

	if (list == NULL)
		return 0;
	while (config_list_next(&list, &p, &n)) {
		if (n == 0 || (n == 1 && *p == '*'))
			continue;
		if ((k = scheme_len(p, n)) > 0 && n > k)
			rest = p + k;
		else {
			snprintf(err, errlen, "'%.*s' is not an origin "
			    "(expected scheme://host[:port], e.g. "
			    "https://chat.example.org)", (int)n, p);
			return -1;
		}
		if (memchr(rest, '/', (size_t)(p + n - rest)) != NULL &&
		    p[n - 1] != '/') {
			snprintf(err, errlen, "'%.*s' has a path; an origin is "
			    "only scheme://host[:port]", (int)n, p);
			return -1;
		}
	}
	return 0;
}

int
origin_of_url(const char *url, char *out, size_t outlen)
{
	size_t	 k, n;

	if ((k = scheme_len(url, strlen(url))) == 0)
		return -1;
	n = strcspn(url + k, "/?#");
	/* It goes into headers and CSP source lists as it is. */
	if (n == 0 || k + n >= outlen || strcspn(url + k, " \t\r\n;,'\"") < n)
		return -1;
	memcpy(out, url, k + n);
	out[k + n] = '\0';
	return 0;
}
