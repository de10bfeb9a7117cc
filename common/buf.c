/*
 * buf.c: bounded dynamic buffer (see buf.h), after curl's dynbuf.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "banned.h"

#define BUF_MINCAP	64

void
buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = b->cap = 0;
	b->max = max;
}

void
buf_release(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

/* Makes room for len + n bytes plus the NUL. */
static int
buf_grow(struct buf *b, size_t n)
{
	size_t	 need, cap;
	char	*p;

	if (n > b->max || b->len > b->max - n) {
		errno = ENOSPC;
		return -1;
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : BUF_MINCAP;
	while (cap < need)
		cap = cap > (size_t)-1 / 2 ? need : cap * 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	if ((p = realloc(b->data, cap)) == NULL)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	if (buf_grow(b, n) == -1)
		return -1;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
buf_appends(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int
buf_vappendf(struct buf *b, const char *fmt, va_list ap)
{
	va_list	 ap2;
	int	 n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -1;
	if (buf_grow(b, (size_t)n) == -1)
		return -1;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int
buf_appendf(struct buf *b, const char *fmt, ...)
{
	va_list	 ap;
	int	 r;

	va_start(ap, fmt);
	r = buf_vappendf(b, fmt, ap);
	va_end(ap);
	return r;
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

const char *
buf_str(const struct buf *b)
{
	return b->data != NULL ? b->data : "";
}

char *
buf_detach(struct buf *b, size_t *lenp)
{
	char	*p = b->data;

	if (lenp != NULL)
		*lenp = b->len;
	if (p == NULL)
		p = calloc(1, 1);
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}
