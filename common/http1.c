/*
 * http1.c: strict HTTP/1.1 message heads (RFC 9112) and body framing, for
 * the egress proxy and the supervisor's agent client alike.
 *
 * The parser works on the bytes read so far and either asks for more,
 * accepts a whole head, or refuses with a status and a one-line reason.  It
 * accepts less than the RFC allows a lenient recipient to accept: no bare
 * LF, no obs-fold, no whitespace before a colon, no control bytes in fields,
 * one Host and one Content-Length at most, never both Content-Length and
 * Transfer-Encoding.  What a proxy sees twice (the target and Host) has to
 * agree with one reading only, so ambiguity is refused, not resolved.
 */
#include <sys/types.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http1.h"
#include "banned.h"

/* ------------------------------------------------------------ characters */

static int
is_tchar(unsigned char c)
{
	if (isalnum(c))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A field value byte: VCHAR, SP, HTAB, obs-text. */
static int
is_fchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int
span_eq(const char *buf, struct h1_span s, const char *lit)
{
	size_t	 n = strlen(lit);

	return s.len == n && strncasecmp(buf + s.off, lit, n) == 0;
}

static int
refuse(struct h1_req *r, int status, const char *reason)
{
	r->status = status;
	r->reason = reason;
	return H1_ERROR;
}

/*
 * Finds the end of the head.  Every LF must follow a CR and every CR must
 * precede an LF; a NUL anywhere is refused.  Returns the head length, 0 when
 * incomplete, -1 when malformed.
 */
static long
head_end(const char *buf, size_t len)
{
	size_t	 i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\0')
			return -1;
		if (c == '\n' && (i == 0 || buf[i - 1] != '\r'))
			return -1;
		if (c == '\r' && i + 1 < len && buf[i + 1] != '\n')
			return -1;
		if (c == '\n' && i >= 3 && buf[i - 2] == '\n')
			return (long)(i + 1);
	}
	return 0;
}

/* ------------------------------------------------------------ authority */

static int
parse_port(const char *s, size_t n, uint16_t *port)
{
	unsigned long	 v = 0;
	size_t		 i;

	/* 1-65535 in plain decimal: no sign, no leading zero, no blanks. */
	if (n == 0 || n > 5 || s[0] == '0')
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int
h1_parse_authority(const char *s, size_t len, uint16_t defport,
    struct h1_req *r, const char **reason)
{
	const char	*p, *end = s + len, *hend, *colon;
	size_t		 hlen, i;

	if (memchr(s, '@', len) != NULL) {
		*reason = "userinfo in the target is not allowed";
		return -1;
	}
	if (len == 0) {
		*reason = "empty host";
		return -1;
	}
	r->host_v6 = 0;
	if (s[0] == '[') {
		struct in6_addr a;

		if ((hend = memchr(s, ']', len)) == NULL) {
			*reason = "unterminated IPv6 literal";
			return -1;
		}
		hlen = (size_t)(hend - s - 1);
		if (memchr(s, '%', (size_t)(hend - s)) != NULL) {
			*reason = "zone identifiers are not allowed";
			return -1;
		}
		if (hlen == 0 || hlen > 45) {
			*reason = "malformed IPv6 literal";
			return -1;
		}
		for (i = 0; i < hlen; i++)
			if (!isxdigit((unsigned char)s[1 + i]) &&
			    s[1 + i] != ':' && s[1 + i] != '.') {
				*reason = "malformed IPv6 literal";
				return -1;
			}
		memcpy(r->host, s + 1, hlen);
		r->host[hlen] = '\0';
		if (inet_pton(AF_INET6, r->host, &a) != 1) {
			*reason = "malformed IPv6 literal";
			return -1;
		}
		r->host_v6 = 1;
		p = hend + 1;
		if (p == end)
			colon = NULL;
		else if (*p == ':')
			colon = p;
		else {
			*reason = "junk after IPv6 literal";
			return -1;
		}
	} else {
		colon = memchr(s, ':', len);
		hend = colon != NULL ? colon : end;
		hlen = (size_t)(hend - s);
		if (hlen == 0) {
			*reason = "empty host";
			return -1;
		}
		if (hlen > H1_MAX_HOST) {
			*reason = "host name too long";
			return -1;
		}
		for (i = 0; i < hlen; i++) {
			unsigned char c = (unsigned char)s[i];

			if (!isalnum(c) && c != '-' && c != '.' && c != '_') {
				*reason = "bad character in host";
				return -1;
			}
			r->host[i] = (char)tolower(c);
		}
		r->host[hlen] = '\0';
	}
	if (colon == NULL) {
		if (defport == 0) {
			*reason = "missing port";
			return -1;
		}
		r->port = defport;
		return 0;
	}
	if (parse_port(colon + 1, (size_t)(end - colon - 1), &r->port) == -1) {
		*reason = "malformed or out-of-range port";
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ request */

static int
parse_target(const char *buf, struct h1_span t, struct h1_req *r)
{
	const char	*s = buf + t.off, *a, *end = s + t.len, *rest;
	const char	*reason;
	size_t		 i;

	for (i = 0; i < t.len; i++)
		if (s[i] == '#')
			return refuse(r, 400, "fragment in request target");
	if (r->connect) {
		if (h1_parse_authority(s, t.len, 0, r, &reason) == -1)
			return refuse(r, 400, reason);
		return 0;
	}
	if (t.len >= 8 && strncasecmp(s, "https://", 8) == 0)
		return refuse(r, 400, "https targets must use CONNECT");
	if (t.len < 7 || strncasecmp(s, "http://", 7) != 0) {
		if (s[0] == '/' || s[0] == '*')
			return refuse(r, 400,
			    "a proxy request needs an absolute http:// URI");
		return refuse(r, 400, "unsupported URI scheme");
	}
	a = s + 7;
	for (rest = a; rest < end && *rest != '/' && *rest != '?'; rest++)
		;
	if (h1_parse_authority(a, (size_t)(rest - a), 80, r, &reason) == -1)
		return refuse(r, 400, reason);
	r->path.off = (uint32_t)(rest - buf);
	r->path.len = (uint32_t)(end - rest);
	return 0;
}

static int
parse_number(const char *s, size_t n, long long *out)
{
	long long	 v = 0;
	size_t		 i;

	if (n == 0 || n > 15)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Does the comma-separated list in s (n bytes) contain tok? */
static int
list_has(const char *s, size_t n, const char *tok, size_t toklen)
{
	size_t	 i = 0, j;

	while (i < n) {
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == ','))
			i++;
		j = i;
		while (j < n && s[j] != ',' && s[j] != ' ' && s[j] != '\t')
			j++;
		if (j - i == toklen && toklen > 0 &&
		    strncasecmp(s + i, tok, toklen) == 0)
			return 1;
		i = j;
	}
	return 0;
}

/* What the fields of one head said about framing and reuse. */
struct framing {
	int		 nhost, ncl, nte, chunked, close, keep;
	long long	 content_length;	/* -1 when absent */
	int		 status;		/* on H1_ERROR */
	const char	*reason;
};

static int
framing_refuse(struct framing *fr, int status, const char *reason)
{
	fr->status = status;
	fr->reason = reason;
	return H1_ERROR;
}

/*
 * Parses the header fields between p and end (the last CRLF of the head
 * excluded) into fields[*nfields..].  Shared by requests and responses.
 */
static int
parse_fields(const char *buf, size_t p, size_t end, struct h1_field *fields,
    int *nfields, struct framing *fr)
{
	memset(fr, 0, sizeof(*fr));
	fr->content_length = -1;
	while (p < end) {
		size_t	 eol, n, v, ve;
		struct h1_field *f;

		eol = p;
		while (eol < end && buf[eol] != '\r')
			eol++;
		if (buf[p] == ' ' || buf[p] == '\t')
			return framing_refuse(fr, 400, "obsolete line folding");
		for (n = p; n < eol && is_tchar((unsigned char)buf[n]); n++)
			;
		if (n == p)
			return framing_refuse(fr, 400,
			    "malformed header field name");
		if (n == eol || buf[n] != ':') {
			if (buf[n] == ' ' || buf[n] == '\t')
				return framing_refuse(fr, 400,
				    "whitespace before colon");
			return framing_refuse(fr, 400,
			    "malformed header field name");
		}
		for (v = n + 1; v < eol; v++)
			if (!is_fchar((unsigned char)buf[v]))
				return framing_refuse(fr, 400,
				    "control character in header field");
		v = n + 1;
		while (v < eol && (buf[v] == ' ' || buf[v] == '\t'))
			v++;
		ve = eol;
		while (ve > v && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
			ve--;
		if (*nfields == H1_MAX_HEADERS)
			return framing_refuse(fr, 431, "too many header fields");
		f = &fields[(*nfields)++];
		f->name.off = (uint32_t)p;
		f->name.len = (uint32_t)(n - p);
		f->value.off = (uint32_t)v;
		f->value.len = (uint32_t)(ve - v);

		if (span_eq(buf, f->name, "host"))
			fr->nhost++;
		else if (span_eq(buf, f->name, "content-length")) {
			if (++fr->ncl > 1)
				return framing_refuse(fr, 400,
				    "duplicate Content-Length");
			if (parse_number(buf + v, ve - v, &fr->content_length))
				return framing_refuse(fr, 400,
				    "malformed Content-Length");
		} else if (span_eq(buf, f->name, "transfer-encoding")) {
			if (++fr->nte > 1)
				return framing_refuse(fr, 400,
				    "duplicate Transfer-Encoding");
			fr->chunked = (ve - v == 7 &&
			    strncasecmp(buf + v, "chunked", 7) == 0);
		} else if (span_eq(buf, f->name, "connection")) {
			if (list_has(buf + v, ve - v, "close", 5))
				fr->close = 1;
			if (list_has(buf + v, ve - v, "keep-alive", 10))
				fr->keep = 1;
		}
		p = eol + 2;
	}
	return 0;
}

int
h1_parse_request(const char *buf, size_t len, size_t max,
    struct h1_req *r)
{
	long		 hl;
	size_t		 sp1, sp2, eol;
	struct h1_span target;
	struct framing	 fr;

	memset(r, 0, sizeof(*r));
	r->content_length = -1;
	hl = head_end(buf, len > max ? max : len);
	if (hl == -1)
		return refuse(r, 400, "bare CR, bare LF or NUL in request head");
	if (hl == 0)
		return len >= max ?
		    refuse(r, 431, "request head too large") : H1_NEED_MORE;
	r->head_len = (size_t)hl;

	/* request-line = method SP request-target SP HTTP-version CRLF */
	for (eol = 0; buf[eol] != '\r'; eol++)
		;
	for (sp1 = 0; sp1 < eol && is_tchar((unsigned char)buf[sp1]); sp1++)
		;
	if (sp1 == 0 || sp1 == eol || buf[sp1] != ' ' || sp1 > 32)
		return refuse(r, 400, "malformed request method");
	r->method.off = 0;
	r->method.len = (uint32_t)sp1;
	for (sp2 = sp1 + 1; sp2 < eol; sp2++) {
		unsigned char c = (unsigned char)buf[sp2];

		if (c == ' ')
			break;
		if (c < 0x21 || c > 0x7e)
			return refuse(r, 400, "bad byte in request target");
	}
	if (sp2 == sp1 + 1 || sp2 == eol)
		return refuse(r, 400, "malformed request line");
	target.off = (uint32_t)(sp1 + 1);
	target.len = (uint32_t)(sp2 - sp1 - 1);
	if (eol - sp2 - 1 != 8 || strncmp(buf + sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (buf[sp2 + 8] != '0' && buf[sp2 + 8] != '1'))
		return refuse(r, 400, "unsupported HTTP version");
	r->minor = buf[sp2 + 8] - '0';
	r->connect = (sp1 == 7 && strncmp(buf, "CONNECT", 7) == 0);
	if (parse_target(buf, target, r) == H1_ERROR)
		return H1_ERROR;

	if (parse_fields(buf, eol + 2, (size_t)hl - 2, r->fields, &r->nfields,
	    &fr) == H1_ERROR)
		return refuse(r, fr.status, fr.reason);
	r->content_length = fr.content_length;
	if (fr.nhost > 1)
		return refuse(r, 400, "duplicate Host");
	if (fr.nhost == 0 && r->minor == 1 && !r->connect)
		return refuse(r, 400, "missing Host");
	if (fr.ncl && fr.nte)
		return refuse(r, 400,
		    "both Content-Length and Transfer-Encoding");
	if (fr.nte && !fr.chunked)
		return refuse(r, 400, "unsupported Transfer-Encoding");
	if (r->connect && (fr.nte || r->content_length > 0))
		return refuse(r, 400, "CONNECT with a body");
	r->chunked = fr.chunked;
	r->close = r->minor == 0 ? !fr.keep : fr.close;
	return H1_DONE;
}

/* ------------------------------------------------------------ rewriting */

/*
 * Is the field called name hop-by-hop, for a message whose fields are
 * fields[0..nfields)?  Shared by requests and responses (RFC 9110 7.6.1):
 * the fixed list, every Proxy-* field (our policy: credentials for this
 * proxy go no further), and whatever a Connection field names.
 */
static int
hop_by_hop(const char *buf, const struct h1_field *fields, int nfields,
    struct h1_span name)
{
	static const char *const drop[] = {
		"connection", "keep-alive", "te", "trailer", "upgrade",
		"proxy-connection",
	};
	size_t	 i;
	int	 k;

	for (i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (span_eq(buf, name, drop[i]))
			return 1;
	if (name.len >= 6 && strncasecmp(buf + name.off, "proxy-", 6) == 0)
		return 1;
	/* Framing fields stay even when Connection names them: the body is
	 * passed on as framed, so its framing has to go with it. */
	if (span_eq(buf, name, "content-length") ||
	    span_eq(buf, name, "transfer-encoding"))
		return 0;
	for (k = 0; k < nfields; k++) {
		const struct h1_field *f = &fields[k];

		if (span_eq(buf, f->name, "connection") &&
		    list_has(buf + f->value.off, f->value.len,
		    buf + name.off, name.len))
			return 1;
	}
	return 0;
}

int
h1_rewrite_request(const char *buf, const struct h1_req *r,
    struct buf *out)
{
	int	 k, kept = 1;		/* Host */

	if (buf_append(out, buf + r->method.off, r->method.len) == -1 ||
	    buf_appends(out, " ") == -1)
		return -1;
	if (r->path.len == 0 || buf[r->path.off] == '?')
		if (buf_appends(out, "/") == -1)
			return -1;
	if (buf_append(out, buf + r->path.off, r->path.len) == -1 ||
	    buf_appendf(out, " HTTP/1.1\r\nHost: %s%s%s", r->host_v6 ? "[" : "",
	    r->host, r->host_v6 ? "]" : "") == -1)
		return -1;
	if (r->port != 80 && buf_appendf(out, ":%u", r->port) == -1)
		return -1;
	if (buf_appends(out, "\r\n") == -1)
		return -1;
	for (k = 0; k < r->nfields; k++) {
		const struct h1_field *f = &r->fields[k];

		/* Host is replaced by the target's authority, above. */
		if (span_eq(buf, f->name, "host") ||
		    hop_by_hop(buf, r->fields, r->nfields, f->name))
			continue;
		if (buf_append(out, buf + f->name.off, f->name.len) == -1 ||
		    buf_appends(out, ": ") == -1 ||
		    buf_append(out, buf + f->value.off, f->value.len) == -1 ||
		    buf_appends(out, "\r\n") == -1)
			return -1;
		kept++;
	}
	/* No more fields than we accept ourselves (see the response's). */
	if (kept + (r->close != 0) > H1_MAX_HEADERS)
		return -1;
	if (r->close && buf_appends(out, "Connection: close\r\n") == -1)
		return -1;
	return buf_appends(out, "\r\n");
}

/* ------------------------------------------------------------ response */

static int
resp_refuse(struct h1_resp *resp, const char *reason)
{
	resp->reason = reason;
	return H1_ERROR;
}

int
h1_parse_response(const char *buf, size_t len, size_t max,
    struct h1_resp *resp)
{
	long		 hl;
	size_t		 eol;
	struct framing	 fr;

	memset(resp, 0, sizeof(*resp));
	resp->content_length = -1;
	hl = head_end(buf, len > max ? max : len);
	if (hl == -1)
		return resp_refuse(resp,
		    "bare CR, bare LF or NUL in response head");
	if (hl == 0)
		return len >= max ? resp_refuse(resp, "response head too large")
		    : H1_NEED_MORE;
	resp->head_len = (size_t)hl;
	for (eol = 0; buf[eol] != '\r'; eol++)
		;
	/* status-line = HTTP-version SP status-code SP [ reason-phrase ] */
	if (eol < 12 || strncmp(buf, "HTTP/1.", 7) != 0 ||
	    (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ' ||
	    !isdigit((unsigned char)buf[9]) ||
	    !isdigit((unsigned char)buf[10]) ||
	    !isdigit((unsigned char)buf[11]) || (eol > 12 && buf[12] != ' '))
		return resp_refuse(resp, "malformed status line");
	resp->minor = buf[7] - '0';
	resp->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 +
	    (buf[11] - '0');
	if (resp->status < 100)
		return resp_refuse(resp, "malformed status line");
	if (parse_fields(buf, eol + 2, (size_t)hl - 2, resp->fields,
	    &resp->nfields, &fr) == H1_ERROR)
		return resp_refuse(resp, fr.reason);
	resp->content_length = fr.content_length;
	resp->chunked = fr.nte && fr.chunked;
	/* Content-Length beside Transfer-Encoding is a smuggling vector:
	 * frame by the encoding and do not reuse the connection. */
	if (fr.ncl && fr.nte)
		resp->ambiguous = "both Content-Length and Transfer-Encoding";
	else if (fr.nte && !fr.chunked)
		resp->ambiguous = "unsupported Transfer-Encoding";
	resp->close = (resp->minor == 0 ? !fr.keep : fr.close) ||
	    resp->ambiguous != NULL;
	if (fr.nte)
		resp->content_length = -1;
	return H1_DONE;
}

int
h1_field_find(const char *buf, const struct h1_field *fields, int n,
    const char *name, struct h1_span *value)
{
	int	 k, found = 0;

	for (k = 0; k < n; k++)
		if (span_eq(buf, fields[k].name, name) && found++ == 0 &&
		    value != NULL)
			*value = fields[k].value;
	return found;
}

int
h1_rewrite_response(const char *buf, const struct h1_resp *resp,
    int close, struct buf *out)
{
	const char	*eol;
	int		 k, kept = 0;

	/* Only a head the parser accepted: its spans are trusted below. */
	if (resp->head_len < 4)
		return -1;
	/* The status line and each kept field go out as the upstream wrote
	 * them: nothing the client might compare is normalised. */
	eol = memchr(buf, '\r', resp->head_len);
	if (buf_append(out, buf, (size_t)(eol - buf) + 2) == -1)
		return -1;
	for (k = 0; k < resp->nfields; k++) {
		const struct h1_field *f = &resp->fields[k];
		size_t	 vend = f->value.off + f->value.len;

		if (hop_by_hop(buf, resp->fields, resp->nfields, f->name))
			continue;
		eol = memchr(buf + vend, '\r', resp->head_len - vend);
		if (buf_append(out, buf + f->name.off,
		    (size_t)(eol - buf) + 2 - f->name.off) == -1)
			return -1;
		kept++;
	}
	/* Never send on a head with more fields than we accept ourselves
	 * (nor than clients do: Python's http.client stops at 100). */
	if (close && kept == H1_MAX_HEADERS)
		return -1;
	if (close && buf_appends(out, "Connection: close\r\n") == -1)
		return -1;
	return buf_appends(out, "\r\n");
}

/* ------------------------------------------------------------ bodies */

enum {
	CS_SIZE, CS_SIZE_MORE, CS_EXT, CS_SIZE_LF, CS_DATA, CS_DATA_CR,
	CS_DATA_LF, CS_TRAILER, CS_TRAILER_NAME, CS_TRAILER_LINE, CS_TRAILER_LF,
	CS_END_LF,
};

void
body_init(struct body *b, enum body_mode mode, long long length)
{
	memset(b, 0, sizeof(*b));
	b->mode = mode;
	if (mode == BODY_LENGTH) {
		b->left = (unsigned long long)length;
		b->done = length == 0;
	} else if (mode == BODY_NONE)
		b->done = 1;
	b->cstate = CS_SIZE;
}

static int
hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Both body_feed and body_next: with one set, the walk stops after a run
 * of at most max payload bytes, which *off and *len locate.
 */
static long
body_step(struct body *b, const char *p, size_t n, size_t max, int one,
    size_t *off, size_t *len)
{
	size_t	 i = 0, take;
	int	 h;

	*off = *len = 0;
	if (b->done || b->error)
		return b->error ? -1 : 0;
	switch (b->mode) {
	case BODY_NONE:
		return 0;
	case BODY_EOF:
		*len = n < max ? n : max;
		return (long)*len;
	case BODY_LENGTH:
		take = n < b->left ? n : (size_t)b->left;
		if (take > max)
			take = max;
		b->left -= take;
		b->done = b->left == 0;
		*len = take;
		return (long)take;
	case BODY_CHUNKED:
		break;
	}
	while (i < n && !b->done) {
		unsigned char c = (unsigned char)p[i];

		switch (b->cstate) {
		case CS_SIZE:
		case CS_SIZE_MORE:
			if ((h = hexval(c)) >= 0) {
				if (++b->linelen > 15)
					goto bad;
				b->left = b->left * 16 + (unsigned)h;
				b->cstate = CS_SIZE_MORE;
			} else if (b->cstate == CS_SIZE)
				goto bad;
			else if (c == ';' || c == ' ' || c == '\t')
				b->cstate = CS_EXT;
			else if (c == '\r')
				b->cstate = CS_SIZE_LF;
			else
				goto bad;
			i++;
			break;
		case CS_EXT:
			if (c == '\r')
				b->cstate = CS_SIZE_LF;
			else if (!is_fchar(c) || ++b->linelen > 4096)
				goto bad;
			i++;
			break;
		case CS_SIZE_LF:
			if (c != '\n')
				goto bad;
			i++;
			b->linelen = 0;
			b->cstate = b->left == 0 ? CS_TRAILER : CS_DATA;
			break;
		case CS_DATA:
			take = n - i < b->left ? n - i : (size_t)b->left;
			if (take > max)
				take = max;
			b->left -= take;
			*off = i;
			*len = take;
			i += take;
			if (b->left == 0)
				b->cstate = CS_DATA_CR;
			if (one)
				return (long)i;
			break;
		case CS_DATA_CR:
			if (c != '\r')
				goto bad;
			b->cstate = CS_DATA_LF;
			i++;
			break;
		case CS_DATA_LF:
			if (c != '\n')
				goto bad;
			b->cstate = CS_SIZE;
			i++;
			break;
		case CS_TRAILER:
			if (c == '\r')
				b->cstate = CS_END_LF;
			else if (c == ' ' || c == '\t' || !is_tchar(c))
				goto bad;
			else {
				b->cstate = CS_TRAILER_NAME;
				b->linelen = 1;
			}
			i++;
			break;
		case CS_TRAILER_NAME:
			/* A trailer is a field: a name, then a colon right
			 * after it, as in a head (parse_fields). */
			if (c == ':')
				b->cstate = CS_TRAILER_LINE;
			else if (!is_tchar(c) || ++b->linelen > 8192)
				goto bad;
			i++;
			break;
		case CS_TRAILER_LINE:
			if (c == '\r')
				b->cstate = CS_TRAILER_LF;
			else if (!is_fchar(c) || ++b->linelen > 8192)
				goto bad;
			i++;
			break;
		case CS_TRAILER_LF:
			if (c != '\n')
				goto bad;
			b->cstate = CS_TRAILER;
			i++;
			break;
		case CS_END_LF:
			if (c != '\n')
				goto bad;
			b->done = 1;
			i++;
			break;
		}
	}
	return (long)i;
bad:
	b->error = 1;
	return -1;
}

long
body_feed(struct body *b, const char *p, size_t n)
{
	size_t	 off, len;

	return body_step(b, p, n, (size_t)-1, 0, &off, &len);
}

long
body_next(struct body *b, const char *p, size_t n, size_t max, size_t *off,
    size_t *len)
{
	return body_step(b, p, n, max, 1, off, len);
}

unsigned long long
body_raw(const struct body *b)
{
	if (b->done || b->error)
		return 0;
	switch (b->mode) {
	case BODY_EOF:
		return (unsigned long long)-1;
	case BODY_LENGTH:
		return b->left;
	case BODY_CHUNKED:
		return b->cstate == CS_DATA ? b->left : 0;
	case BODY_NONE:
		break;
	}
	return 0;
}
