/*
 * libFuzzer driver for h1_parse_response and h1_rewrite_response
 * (common/http1.c): what an origin sends the egress proxy, and what a
 * sandbox's agent sends the supervisor.  Built and run by
 * `make test-fuzz-egress`; the corpus is tests/fuzz/http1/response.
 *
 * The first byte is an option (bit 0: rewrite with "Connection: close"),
 * the rest is the reply.  A refusal must say why; an accepted head lies
 * inside the input with its fields inside it, and its rewrite (refused only
 * when the proxy's Connection line would be one field too many) parses again,
 * starts with the same status line, is no longer than the head plus the one
 * Connection line, and keeps no hop-by-hop field.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

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

static struct h1_resp resp, again;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*p = (const char *)data + 1, *eol;
	struct buf	 out = BUF_INIT(16384 + 64);
	size_t		 n;
	int		 i, rc, nconn = 0, close;

	if (size == 0)
		return 0;
	n = size - 1;
	close = data[0] & 1;
	rc = h1_parse_response(p, n, 16384, &resp);
	if (rc == H1_ERROR && resp.reason == NULL)
		abort();
	if (rc != H1_DONE)
		return 0;
	if (resp.head_len > n || resp.head_len < 4 ||
	    memcmp(p + resp.head_len - 4, "\r\n\r\n", 4) != 0 ||
	    resp.status < 100 || resp.status > 999 ||
	    (resp.ambiguous != NULL && !resp.close) ||
	    (resp.chunked && resp.content_length != -1))
		abort();
	for (i = 0; i < resp.nfields; i++) {
		const struct h1_field *f = &resp.fields[i];

		if (f->name.len == 0 ||
		    f->name.off + f->name.len > resp.head_len ||
		    f->value.off + f->value.len > resp.head_len)
			abort();
	}
	/* Refused only when its Connection line would be one field too
	 * many: the result must parse here again. */
	if (h1_rewrite_response(p, &resp, close, &out) == -1) {
		if (!close || resp.nfields != H1_MAX_HEADERS)
			abort();
		buf_release(&out);
		return 0;
	}
	if (out.len > resp.head_len + sizeof("Connection: close\r\n") - 1)
		abort();
	eol = memchr(p, '\r', resp.head_len);
	if (out.len < (size_t)(eol - p) + 4 ||
	    memcmp(out.data, p, (size_t)(eol - p) + 2) != 0)
		abort();
	if (h1_parse_response(out.data, out.len, out.len, &again) !=
	    H1_DONE || again.head_len != out.len ||
	    again.status != resp.status || again.chunked != resp.chunked ||
	    again.content_length != resp.content_length)
		abort();
	for (i = 0; i < again.nfields; i++) {
		const struct h1_field *f = &again.fields[i];

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
	return 0;
}
