/*
 * libFuzzer driver for egress-proxy/parse.c: the request parser, the head
 * rewriter, the response parser and chunked framing.  Built by
 * `make test-fuzz-egress` / `make fuzz` with clang -fsanitize=fuzzer.
 *
 * The first byte picks what to exercise, so one corpus covers all four.
 * Besides the sanitizers, it checks the parser's own promises: an accepted
 * head lies inside the input, every field span lies inside the head, the
 * host is clean, and the rewritten head parses again as an origin request
 * with no Proxy-* field left.
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*p = (const char *)data + 1;
	struct http_resp resp;
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
		if (http_parse_response(p, n, 16384, &resp) == HTTP_DONE &&
		    resp.head_len > n)
			abort();
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
