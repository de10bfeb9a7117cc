/*
 * config.c: diagnostics, strict scalar parsing and environment helpers.
 * The YAML tree is in yconf.c, so that a program reading only the
 * environment (the agent) does not link libyaml.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "config.h"
#include "banned.h"

#define CONFDIAG_MAX	(64 * 1024)

/* ---------------------------------------------------------------- diagnostics */

void
confdiag_init(struct confdiag *d, const char *file)
{
	d->file = file;
	d->count = 0;
	buf_init(&d->text, CONFDIAG_MAX);
}

void
confdiag_release(struct confdiag *d)
{
	buf_release(&d->text);
	d->count = 0;
}

void
confdiag_add(struct confdiag *d, int line, const char *fmt, ...)
{
	va_list	 ap;

	d->count++;
	if (d->file != NULL && line > 0)
		(void)buf_appendf(&d->text, "%s:%d: ", d->file, line);
	else if (d->file != NULL)
		(void)buf_appendf(&d->text, "%s: ", d->file);
	va_start(ap, fmt);
	(void)buf_vappendf(&d->text, fmt, ap);
	va_end(ap);
	(void)buf_append(&d->text, "\n", 1);
}

/* ---------------------------------------------------------------- scalars */

int
config_parse_long(const char *s, long min, long max, long *out)
{
	char	*end;
	long	 v;

	if (s == NULL || *s == '\0')
		return -1;
	/* strtol accepts blanks and '+'; we do not. */
	if (!(isdigit((unsigned char)s[0]) || (s[0] == '-' && min < 0 &&
	    isdigit((unsigned char)s[1]))))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int
config_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };
	size_t	 i;

	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

int
config_parse_size(const char *s, unsigned long long max,
    unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char	*end;

	if (s == NULL || !isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'k':
		mul = 1ULL << 10;
		break;
	case 'm':
		mul = 1ULL << 20;
		break;
	case 'g':
		mul = 1ULL << 30;
		break;
	default:
		return -1;
	}
	if (*end != '\0') {
		end++;
		/* Accept "512m", "512mb", "512MiB" alike. */
		if (tolower((unsigned char)*end) == 'i')
			end++;
		if (tolower((unsigned char)*end) == 'b')
			end++;
		if (*end != '\0')
			return -1;
	}
	if (v > ULLONG_MAX / mul || v * mul > max)
		return -1;
	*out = v * mul;
	return 0;
}

/* ---------------------------------------------------------------- environment */

const char *
config_env_str(const char *name, const char *def)
{
	const char	*v = getenv(name);

	return (v == NULL || *v == '\0') ? def : v;
}

int
config_env_long(struct confdiag *d, const char *name, long def, long min,
    long max, long *out)
{
	const char	*v = config_env_str(name, NULL);

	*out = def;
	if (v == NULL)
		return 0;
	if (config_parse_long(v, min, max, out) == -1) {
		*out = def;
		confdiag_add(d, 0, "%s=\"%s\": expected a whole number from %ld "
		    "to %ld", name, v, min, max);
		return -1;
	}
	return 0;
}

int
config_env_bool(struct confdiag *d, const char *name, int def, int *out)
{
	const char	*v = config_env_str(name, NULL);

	*out = def;
	if (v == NULL)
		return 0;
	if (config_parse_bool(v, out) == -1) {
		*out = def;
		confdiag_add(d, 0, "%s=\"%s\": expected 1 or 0 (yes/no, "
		    "true/false, on/off)", name, v);
		return -1;
	}
	return 0;
}

int
config_env_size(struct confdiag *d, const char *name, unsigned long long def,
    unsigned long long max, unsigned long long *out)
{
	const char	*v = config_env_str(name, NULL);

	*out = def;
	if (v == NULL)
		return 0;
	if (config_parse_size(v, max, out) == -1) {
		*out = def;
		confdiag_add(d, 0, "%s=\"%s\": expected a size in bytes up to "
		    "%llu (a k, m or g suffix is allowed)", name, v, max);
		return -1;
	}
	return 0;
}

int
config_parse_duration(const char *s, long max, long *out)
{
	char		 num[32];
	size_t		 n = strlen(s);
	long		 mul = 1, v;

	if (n == 0 || n >= sizeof(num))
		return -1;
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 's': mul = 1; num[n - 1] = '\0'; break;
	case 'm': mul = 60; num[n - 1] = '\0'; break;
	case 'h': mul = 3600; num[n - 1] = '\0'; break;
	case 'd': mul = 86400; num[n - 1] = '\0'; break;
	default: break;
	}
	if (config_parse_long(num, 0, max / mul, &v) == -1)
		return -1;
	*out = v * mul;
	return 0;
}

int
config_env_duration(struct confdiag *d, const char *name, long def, long min,
    long max, long *out)
{
	const char	*v = config_env_str(name, NULL);

	*out = def;
	if (v == NULL)
		return 0;
	if (config_parse_duration(v, max, out) == -1 || *out < min) {
		*out = def;
		confdiag_add(d, 0, "%s=\"%s\": expected a duration from %lds to "
		    "%lds: seconds, or a number with s, m, h or d (e.g. 15m, "
		    "24h)", name, v, min, max);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- host:port */

int
config_parse_hostport(const char *s, char *host, size_t hostlen, long *port)
{
	struct addrinfo	 hints, *res;
	const char	*h = s, *colon;
	size_t		 hl;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (end == NULL || end[1] != ':' || end == s + 1)
			return -1;
		h = s + 1;
		hl = (size_t)(end - h);
		colon = end + 1;
	} else {
		if ((colon = strrchr(s, ':')) == NULL)
			return -1;
		hl = (size_t)(colon - s);
	}
	if (hl >= hostlen || config_parse_long(colon + 1, 1, 65535, port) == -1)
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (hl == 0)
		return 0;
	/* The check the programs' bind makes: no lookup, an address. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
	if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
		return -1;
	freeaddrinfo(res);
	return 0;
}

/* ---------------------------------------------------------------- lists */

int
config_list_next(const char **pp, const char **item, size_t *n)
{
	const char	*p = *pp, *e;

	if (*p == '\0')
		return 0;
	if ((e = strchr(p, ',')) == NULL)
		e = p + strlen(p);
	*pp = *e != '\0' ? e + 1 : e;
	while (p < e && isspace((unsigned char)*p))
		p++;
	*n = (size_t)(e - p);
	while (*n > 0 && isspace((unsigned char)p[*n - 1]))
		(*n)--;
	*item = p;
	return 1;
}

int
config_list_each(const char *list, void *arg,
    int (*fn)(void *, const char *))
{
	const char	*p = list, *it;
	char		 item[256];
	size_t		 n;
	int		 rc = 0;

	while (config_list_next(&p, &it, &n)) {
		if (n == 0)
			continue;
		if (n >= sizeof(item)) {
			rc = -1;
			continue;
		}
		memcpy(item, it, n);
		item[n] = '\0';
		if (fn(arg, item) == -1)
			rc = -1;
	}
	return rc;
}
