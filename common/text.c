/*
 * text.c: UTF-8 sequences and sizes in words (text.h).
 */
#include <stdio.h>

#include "buf.h"

#include "text.h"
#include "banned.h"

int
utf8_seq(const unsigned char *p, size_t n)
{
	unsigned int	 c = p[0], need, i, cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1; cp = c & 0x1f; min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2; cp = c & 0x0f; min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3; cp = c & 0x07; min = 0x10000;
	} else
		return 0;
	for (i = 1; i <= need; i++) {
		if (i >= n)
			return -1;
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return (int)need + 1;
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
