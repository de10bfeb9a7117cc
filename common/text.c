/*
 * text.c: UTF-8 sequences, escaped names and sizes in words (text.h).
 */
#include <stdio.h>

#include "buf.h"

#include "text.h"
#include "banned.h"

int
utf8_lead(unsigned char b, unsigned char *lo, unsigned char *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (b < 0x80)
		return 0;
	if (b >= 0xc2 && b <= 0xdf)
		return 1;
	if (b == 0xe0)
		*lo = 0xa0;	/* else overlong */
	else if (b == 0xed)
		*hi = 0x9f;	/* else a surrogate */
	if (b >= 0xe0 && b <= 0xef)
		return 2;
	if (b == 0xf0)
		*lo = 0x90;	/* else overlong */
	else if (b == 0xf4)
		*hi = 0x8f;	/* else past U+10FFFF */
	if (b >= 0xf0 && b <= 0xf4)
		return 3;
	return -1;
}

size_t
utf8_next(const unsigned char *p, size_t n, int *state)
{
	unsigned char	 lo, hi;
	int		 need;
	size_t		 i;

	need = utf8_lead(p[0], &lo, &hi);
	*state = need >= 0;
	if (need <= 0)
		return 1;
	for (i = 1; i <= (size_t)need; i++) {
		if (i >= n) {
			*state = -1;
			return i;
		}
		if (p[i] < lo || p[i] > hi) {
			*state = 0;
			return i;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return i;
}

int
utf8_seq(const unsigned char *p, size_t n)
{
	int	 st;
	size_t	 k = utf8_next(p, n, &st);

	return st == 1 ? (int)k : st;
}

size_t
utf8_chars(const char *s, size_t n)
{
	size_t	 i, c = 0;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	return c;
}

size_t
utf8_floor(const char *s, size_t i)
{
	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	return i;
}

void
human_size(unsigned long long n, char *out, size_t len)
{
	if (n < 1024)
		snprintf(out, len, "%llu B", n);
	else if (n < 1024ULL * 1024)
		snprintf(out, len, "%.1f KB", (double)n / 1024);
	else if (n < 1024ULL * 1024 * 1024)
		snprintf(out, len, "%.1f MB", (double)n / (1024.0 * 1024));
	else
		snprintf(out, len, "%.1f GB", (double)n / (1024.0 * 1024 * 1024));
}

int
text_escape(struct buf *out, const char *s, size_t n, int flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t		 i;
	int		 k, esc = (flags & ESCAPE_ALWAYS) != 0;
	char		 x[4] = { '\\', 'x', 0, 0 };

	/* A name is mostly clean: one pass to find out, then as it is. */
	for (i = 0; i < n && !esc; i += (size_t)k) {
		if ((flags & ESCAPE_CONTROL) && (p[i] < 0x20 || p[i] == 0x7f))
			esc = 1;
		else if ((k = utf8_seq(p + i, n - i)) <= 0)
			esc = 1;
	}
	if (!esc)
		return buf_append(out, s, n) == -1 ? -1 : 0;
	for (i = 0; i < n; i += (size_t)k) {
		k = utf8_seq(p + i, n - i);
		if (k > 0 && !((flags & ESCAPE_CONTROL) && (p[i] < 0x20 ||
		    p[i] == 0x7f))) {
			if (p[i] == '\\' ? buf_append(out, "\\\\", 2) :
			    buf_append(out, s + i, (size_t)k))
				return -1;
			continue;
		}
		/* An invalid sequence goes byte by byte: its next byte may
		 * start a valid one. */
		k = 1;
		x[2] = hex[p[i] >> 4];
		x[3] = hex[p[i] & 15];
		if (buf_append(out, x, 4) == -1)
			return -1;
	}
	return 1;
}
