/*
 * libFuzzer driver for the upload form's reader (common/multipart.c),
 * which reads whatever a browser, or anyone with a link, sends.  Built
 * and run by `make test-fuzz-agent`; the corpus is
 * tests/fuzz/multipart/corpus.
 *
 * The input is read two ways.  As a body: the first byte picks where it
 * is cut, the bytes up to the first newline are the Content-Type's
 * boundary, the rest the body; read whole, cut in three, and a byte at a
 * time, the reader must say the same (parts, names, data, refusal,
 * completeness), hand on no more data than it was given, and never point
 * a run outside what it was given.  As a file: the input is the content
 * of one file in a well-formed form, and exactly it must come out.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct trace {
	char		*text;
	size_t		 len, cap;
	size_t		 data;		/* data bytes handed on */
	const char	*lo, *hi;	/* the piece being read */
	const struct multipart *m;
};

static void
add(struct trace *t, const void *p, size_t n)
{
	if (t->len + n > t->cap) {
		t->cap = (t->len + n) * 2;
		if ((t->text = realloc(t->text, t->cap)) == NULL)
			abort();
	}
	memcpy(t->text + t->len, p, n);
	t->len += n;
}

static int
on_begin(void *arg, const char *name, const char *filename)
{
	struct trace	*t = arg;

	add(t, "<", 1);
	if (name != NULL)
		add(t, name, strlen(name) + 1);
	add(t, "|", 1);
	if (filename != NULL)
		add(t, filename, strlen(filename) + 1);
	add(t, ">", 1);
	return 0;
}

static int
on_data(void *arg, const char *p, size_t n)
{
	struct trace	*t = arg;
	const char	*d = t->m->delim;

	if (n == 0 || !((p >= t->lo && p + n <= t->hi) ||
	    (p >= d && p + n <= d + t->m->dlen)))
		abort();
	t->data += n;
	add(t, p, n);
	return 0;
}

static int
on_end(void *arg)
{
	add(arg, "</>", 3);
	return 0;
}

/* Reads body, cut where cuts[] say (ascending, within len). */
static int
read_body(struct multipart *m, const char *ctype, const char *body,
    size_t len, const size_t *cuts, size_t ncuts, struct trace *t)
{
	struct mp_handler h = { on_begin, on_data, on_end, t };
	size_t	 i, at = 0, to;
	int	 rc = 0;

	t->len = t->data = 0;
	t->m = m;
	if (mp_init(m, ctype) == -1)
		return -2;
	for (i = 0; i <= ncuts && rc == 0; i++, at = to) {
		to = i < ncuts ? cuts[i] : len;
		t->lo = body + at;
		t->hi = body + to;
		if (to > at)
			rc = mp_feed(m, body + at, to - at, &h);
	}
	if (t->data > len)
		abort();
	return rc;
}

static void
same(const struct multipart *a, int ra, const struct trace *ta,
    const struct multipart *b, int rb, const struct trace *tb)
{
	if (ra != rb || mp_complete(a) != mp_complete(b) ||
	    ta->len != tb->len || (ta->len > 0 && memcmp(ta->text, tb->text,
	    ta->len) != 0) ||
	    (ra == -1 && (a->error == NULL) != (b->error == NULL)))
		abort();
}

static void
as_body(const uint8_t *data, size_t size)
{
	static struct multipart	 m1, m2;
	struct trace		 t1 = { 0 }, t2 = { 0 };
	char			 ctype[128];
	const char		*nl, *body;
	size_t			 blen, len, cuts[4096], i;
	int			 r1, r2;

	if ((nl = memchr(data + 1, '\n', size - 1)) == NULL)
		return;
	blen = (size_t)(nl - (const char *)data - 1);
	if (blen > 100)
		return;
	snprintf(ctype, sizeof(ctype), "multipart/form-data; boundary=%.*s",
	    (int)blen, (const char *)data + 1);
	body = nl + 1;
	len = size - (size_t)(body - (const char *)data);

	r1 = read_body(&m1, ctype, body, len, NULL, 0, &t1);
	cuts[0] = len ? data[0] % (len + 1) : 0;
	cuts[1] = cuts[0] + (len - cuts[0]) / 2;
	r2 = read_body(&m2, ctype, body, len, cuts, 2, &t2);
	if (r1 != -2)
		same(&m1, r1, &t1, &m2, r2, &t2);
	if (len <= sizeof(cuts) / sizeof(cuts[0])) {
		for (i = 0; i < len; i++)
			cuts[i] = i + 1;
		r2 = read_body(&m2, ctype, body, len, cuts, len ? len - 1 : 0,
		    &t2);
		if (r1 != -2)
			same(&m1, r1, &t1, &m2, r2, &t2);
	}
	free(t1.text);
	free(t2.text);
}

static void
as_file(const uint8_t *data, size_t size)
{
	static const char	 head[] = "--B0und\r\nContent-Disposition: "
				    "form-data; name=\"file\"; filename=\"f\"\r\n"
				    "\r\n", tail[] = "\r\n--B0und--\r\n";
	static const char	 want_head[] = "<file\0|f\0>";
	static struct multipart	 m;
	struct trace		 t = { 0 };
	char			*body;
	size_t			 len, cut;

	if (memmem(data, size, "\r\n--B0und", 9) != NULL)
		return;		/* the boundary must not be in the file */
	len = sizeof(head) - 1 + size + sizeof(tail) - 1;
	if ((body = malloc(len)) == NULL)
		abort();
	memcpy(body, head, sizeof(head) - 1);
	if (size > 0)
		memcpy(body + sizeof(head) - 1, data, size);
	memcpy(body + sizeof(head) - 1 + size, tail, sizeof(tail) - 1);
	cut = sizeof(head) - 1 + (size ? data[0] % size : 0);
	if (read_body(&m, "multipart/form-data; boundary=B0und", body, len,
	    &cut, 1, &t) != 0 || !mp_complete(&m) ||
	    t.len != sizeof(want_head) - 1 + size + 3 ||
	    memcmp(t.text, want_head, sizeof(want_head) - 1) != 0 ||
	    (size > 0 && memcmp(t.text + sizeof(want_head) - 1, data,
	    size) != 0) ||
	    memcmp(t.text + t.len - 3, "</>", 3) != 0)
		abort();
	free(t.text);
	free(body);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	as_body(data, size);
	as_file(data, size);
	return 0;
}
