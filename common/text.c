/*
 * text.c: UTF-8 sequences and sizes in words (text.h).
 */
#include <stdio.h>

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
