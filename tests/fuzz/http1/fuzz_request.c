/*
 * libFuzzer driver for h1_parse_request and h1_rewrite_request
 * (common/http1.c), the entry point for what a sandbox sends the egress
 * proxy.  Built and run by `make test-fuzz-egress` with clang
 * -fsanitize=fuzzer; the corpus is tests/fuzz/http1/request.
 *
 * Besides the sanitizers, it checks the parser's own promises: a refusal
 * has a status and a reason, an accepted head lies inside the input, every
 * field span lies inside the head, the host is clean, and the rewritten
 * head is one complete head with no Proxy-* field left.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct h1_req req;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	const char	*p = (const char *)data;
	struct buf	 out = BUF_INIT(1 << 20);
	int		 rc, i;
	size_t		 k;

	rc = h1_parse_request(p, n, 16384, &req);
	if (rc != H1_DONE) {
		if (rc == H1_ERROR && (req.reason == NULL ||
		    (req.status != 400 && req.status != 431)))
			abort();
		return 0;
	}
	if (req.head_len > n || req.head_len < 4 ||
	    memcmp(p + req.head_len - 4, "\r\n\r\n", 4) != 0)
		abort();
	for (i = 0; i < req.nfields; i++) {
		const struct h1_field *f = &req.fields[i];

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
		return 0;
	/* Refused only when Host and Connection would make one field too
	 * many. */
	if (h1_rewrite_request(p, &req, &out) == -1) {
		if (req.nfields < H1_MAX_HEADERS - 1)
			abort();
		buf_release(&out);
		return 0;
	}
	/* The head sent upstream is itself one strict, complete head. */
	if (out.len < 4 || memcmp(out.data + out.len - 4, "\r\n\r\n", 4) != 0 ||
	    strstr(out.data, "\r\n\r\n") != out.data + out.len - 4)
		abort();
	for (k = 0; k + 8 < out.len; k++)
		if (out.data[k] == '\n' && strncasecmp(out.data + k + 1,
		    "proxy-", 6) == 0)
			abort();
	buf_release(&out);
	return 0;
}
