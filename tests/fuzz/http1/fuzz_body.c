/*
 * libFuzzer driver for body framing (common/http1.c): body_feed, which
 * the egress proxy uses to pass a chunked body on as it is, and body_next,
 * which the supervisor uses to take the payload out of one.  Built and run
 * by `make test-fuzz-egress`; the corpus is tests/fuzz/http1/body.
 *
 * The first byte picks where the input is split in two and how much
 * payload body_next may hand out a call; the rest is a chunked body.  The
 * two readers must agree: the same bytes consumed, the same end, the same
 * refusal, and body_next's runs must lie inside what it consumed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Feeds p[0..n) in two pieces split at off; returns bytes taken or -1. */
static long
feed(const char *p, size_t n, size_t off, struct body *b)
{
	long	 k, k2;

	body_init(b, BODY_CHUNKED, 0);
	if ((k = body_feed(b, p, off)) < 0)
		return -1;
	if (k > (long)off)
		abort();
	if (k < (long)off || b->done)
		return k;
	if ((k2 = body_feed(b, p + off, n - off)) < 0)
		return -1;
	if (k2 > (long)(n - off))
		abort();
	return k + k2;
}

/* The same with body_next, max payload bytes a call. */
static long
next(const char *p, size_t n, size_t off, size_t max, struct body *b)
{
	size_t	 i = 0, end = off, doff, dlen;
	long	 k;

	body_init(b, BODY_CHUNKED, 0);
	while (!b->done) {
		if (i == end) {
			if (end == n)
				break;
			end = n;	/* the second piece arrives */
		}
		if ((k = body_next(b, p + i, end - i, max, &doff, &dlen)) < 0)
			return -1;
		if (dlen > max || doff + dlen > (size_t)k ||
		    (size_t)k > end - i || (k == 0 && !b->done))
			abort();
		i += (size_t)k;
	}
	return (long)i;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*p = (const char *)data + 1;
	struct body	 a, b;
	size_t		 n, off, max;
	long		 ka, kb;

	if (size == 0)
		return 0;
	n = size - 1;
	off = n ? data[0] % (n + 1) : 0;
	max = (size_t)(data[0] >> 4) + 1;
	ka = feed(p, n, off, &a);
	kb = next(p, n, off, max, &b);
	if (ka != kb || a.done != b.done || a.error != b.error)
		abort();
	return 0;
}
