/*
 * libFuzzer driver for egress-proxy/parse.c: the request parser, the head
 * rewriters, the response parser and chunked framing.  Built by
 * `make test-fuzz-egress` / `make fuzz` with clang -fsanitize=fuzzer.
 *
 * The first byte picks what to exercise, so one corpus covers all four.
 * Besides the sanitizers, it checks the parser's own promises: an accepted
 * head lies inside the input, every field span lies inside the head, the
 * host is clean, and the rewritten head parses again as an origin request
 * with no Proxy-* field left.  A rewritten response head parses again too,
 * starts with the same status line, is no longer than the input's head plus
 * the one Connection line, and keeps no hop-by-hop field.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct http_req req;

static void
check_request(const char *p, size_t n)
{
	struct buf	 out = BUF_INIT(1 << 20);
	int		 rc, i;
	size_t		 k;

	rc = http_parse_request(p, n, 16384, &req);
	if (rc != HTTP_DONE) {
		if (rc == HTTP_ERROR && (req.reason == NULL ||
		    (req.status != 400 && req.status != 431)))
			abort();
		return;
	}
	if (req.head_len > n || req.head_len < 4 ||
	    memcmp(p + req.head_len - 4, "\r\n\r\n", 4) != 0)
		abort();
	for (i = 0; i < req.nfields; i++) {
		const struct http_field *f = &req.fields[i];

		if (f->name.len == 0 || f->name.off + f->name.len > req.head_len ||
		    f->value.off + f->value.len > req.head_len)
			abort();
		for (k = 0; k < f->value.len; k++)
			if (p[f->value.off + k] == '\r' ||
			    p[f->value.off + k] == '\n' ||
			    p[f->value.off + k] == '\0')
				abort();
	}
	if (req.port == 0 || req.host[0] == '\0' || strchr(req.host, '@') ||
	    strchr(req.host, '%') || strchr(req.host, '/'))
		abort();
	if (req.connect)
		return;
	if (http_rewrite_request(p, &req, &out) == -1)
		abort();
	/* The head sent upstream is itself one strict, complete head. */
	if (out.len < 4 || memcmp(out.data + out.len - 4, "\r\n\r\n", 4) != 0 ||
	    strstr(out.data, "\r\n\r\n") != out.data + out.len - 4)
		abort();
	for (k = 0; k + 8 < out.len; k++)
		if (out.data[k] == '\n' && strncasecmp(out.data + k + 1,
		    "proxy-", 6) == 0)
			abort();
	buf_release(&out);
}

/* Fields the response rewrite must never let through. */
static int
hop_name(const char *p, size_t n)
{
	static const char *const names[] = {
		"connection", "keep-alive", "te", "trailer", "upgrade",
		"proxy-connection",
	};
	size_t	 i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (n == strlen(names[i]) && strncasecmp(p, names[i], n) == 0)
			return 1;
	return n >= 6 && strncasecmp(p, "proxy-", 6) == 0;
}

static struct http_resp resp, again;

static void
check_response(const char *p, size_t n, int close)
{
	struct buf	 out = BUF_INIT(16384 + 64);
	const char	*eol;
	int		 i, nconn = 0;

	if (http_parse_response(p, n, 16384, &resp) != HTTP_DONE)
		return;
	if (resp.head_len > n || resp.head_len < 4 ||
	    memcmp(p + resp.head_len - 4, "\r\n\r\n", 4) != 0)
		abort();
	for (i = 0; i < resp.nfields; i++) {
		const struct http_field *f = &resp.fields[i];

		if (f->name.len == 0 ||
		    f->name.off + f->name.len > resp.head_len ||
		    f->value.off + f->value.len > resp.head_len)
			abort();
	}
	if (http_rewrite_response(p, &resp, close, &out) == -1)
		abort();
	if (out.len > resp.head_len + sizeof("Connection: close\r\n") - 1)
		abort();
	eol = memchr(p, '\r', resp.head_len);
	if (out.len < (size_t)(eol - p) + 4 ||
	    memcmp(out.data, p, (size_t)(eol - p) + 2) != 0)
		abort();
	if (http_parse_response(out.data, out.len, out.len, &again) !=
	    HTTP_DONE || again.head_len != out.len ||
	    again.status != resp.status || again.chunked != resp.chunked ||
	    again.content_length != resp.content_length)
		abort();
	for (i = 0; i < again.nfields; i++) {
		const struct http_field *f = &again.fields[i];

		if (!hop_name(out.data + f->name.off, f->name.len))
			continue;
		/* Only the proxy's own Connection: close, once, last. */
		if (!close || nconn++ > 0 || i != again.nfields - 1 ||
		    f->name.len != 10 || f->value.len != 5 ||
		    memcmp(out.data + f->value.off, "close", 5) != 0)
			abort();
	}
	if (close && nconn != 1)
		abort();
	buf_release(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*p = (const char *)data + 1;
	struct body	 b;
	size_t		 n, off;
	long		 k;

	if (size == 0)
		return 0;
	n = size - 1;
	switch (data[0] % 4) {
	case 0:
	case 1:
		check_request(p, n);
		break;
	case 2:
		/* Bit 2 of the selector byte: with or without the close. */
		check_response(p, n, (data[0] >> 2) & 1);
		break;
	case 3:
		/* chunked, fed in two pieces split at a data-chosen point */
		body_init(&b, BODY_CHUNKED, 0);
		off = n ? data[0] % (n + 1) : 0;
		k = body_feed(&b, p, off);
		if (k > (long)off)
			abort();
		if (k == (long)off && !b.done) {
			k = body_feed(&b, p + off, n - off);
			if (k > (long)(n - off))
				abort();
		}
		break;
	}
	return 0;
}
