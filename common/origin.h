/*
 * origin.h: the Origin check (DNS-rebinding protection) that the agent and
 * the supervisor make before they answer a browser, and a URL's origin.
 * Plain strings, no HTTP library.
 */
#ifndef VIVARIUM_ORIGIN_H
#define VIVARIUM_ORIGIN_H

#include <stddef.h>

/*
 * An allow list is a comma-separated list of origins ("scheme://host[:port]",
 * compared case-insensitively, no path), or "*" for any origin.
 *
 * origin_allowed returns 1 when the request may proceed: it carries no
 * Origin header (not a browser), the Origin is on the list, or the Origin is
 * a loopback one (localhost, 127.0.0.0/8, [::1]; a page served from the
 * machine itself) -- the attacker's origin in a DNS-rebinding attack is
 * their own domain, never one of these.  Returns 0 otherwise: answer 403.
 * list may be NULL or "" (only loopback origins then).
 */
int	origin_allowed(const char *list, const char *origin);
/* Checks a list's syntax; 0, or -1 with the reason in err. */
int	origins_check(const char *list, char *err, size_t errlen);
/*
 * The origin of an http(s) URL: "scheme://host[:port]" as the URL spells
 * it, without path, query or fragment, into out.  0, or -1 when url is not
 * http(s), has no host, holds a space, quote, comma or semicolon before
 * its path, or does not fit.
 */
int	origin_of_url(const char *url, char *out, size_t outlen);

#endif
