/*
 * text.c: UTF-8 sequences, escaped names and sizes in words (text.h).
 */
#include <stdio.h>
#include <string.h>

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

unsigned long
utf8_code(const unsigned char *p, int k)
{
	unsigned long	 cp;
	int		 i;

	if (k <= 1)
		return p[0];
	cp = p[0] & (0x7f >> k);
	for (i = 1; i < k; i++)
		cp = cp << 6 | (p[i] & 0x3f);
	return cp;
}

/* Unicode 15.1, DerivedGeneralCategory.txt, every Cf range. */
static const struct {
	unsigned long	 lo, hi;
} format_chars[] = {
	{ 0x00ad, 0x00ad }, { 0x0600, 0x0605 }, { 0x061c, 0x061c },
	{ 0x06dd, 0x06dd }, { 0x070f, 0x070f }, { 0x0890, 0x0891 },
	{ 0x08e2, 0x08e2 }, { 0x180e, 0x180e }, { 0x200b, 0x200f },
	{ 0x202a, 0x202e }, { 0x2060, 0x2064 }, { 0x2066, 0x206f },
	{ 0xfeff, 0xfeff }, { 0xfff9, 0xfffb }, { 0x110bd, 0x110bd },
	{ 0x110cd, 0x110cd }, { 0x13430, 0x1343f }, { 0x1bca0, 0x1bca3 },
	{ 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f },
};

int
unicode_invisible(unsigned long cp)
{
	size_t	 i;

	if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
		return 1;
	for (i = 0; i < sizeof(format_chars) / sizeof(format_chars[0]); i++)
		if (cp >= format_chars[i].lo && cp <= format_chars[i].hi)
			return 1;
	return 0;
}

/* Whether the character at p (n > 0 bytes left) is escaped; *k: its bytes. */
static int
must_escape(const unsigned char *p, size_t n, int flags, int *k)
{
	if ((*k = utf8_seq(p, n)) <= 0) {
		*k = 1;			/* byte by byte: the next may be valid */
		return 1;
	}
	if (*k == 1)
		return (flags & ESCAPE_CONTROL) && (p[0] < 0x20 || p[0] == 0x7f);
	return (flags & ESCAPE_INVISIBLE) && unicode_invisible(utf8_code(p, *k));
}

/* The escaped form of the character at p (k bytes) into x; its length. */
static size_t
escape_char(const unsigned char *p, int k, int esc, char x[17])
{
	static const char hex[] = "0123456789abcdef";
	size_t	 n = 0;
	int	 i;

	if (!esc) {
		if (k == 1 && p[0] == '\\') {
			memcpy(x, "\\\\", 2);
			return 2;
		}
		memcpy(x, p, (size_t)k);
		return (size_t)k;
	}
	for (i = 0; i < k; i++) {
		x[n++] = '\\';
		x[n++] = 'x';
		x[n++] = hex[p[i] >> 4];
		x[n++] = hex[p[i] & 15];
	}
	return n;
}

int
text_escape(struct buf *out, const char *s, size_t n, int flags)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t		 i, xn;
	int		 k, bad, esc = (flags & ESCAPE_ALWAYS) != 0;
	char		 x[17];

	/* A name is mostly clean: one pass to find out, then as it is. */
	for (i = 0; i < n && !esc; i += (size_t)k)
		esc = must_escape(p + i, n - i, flags, &k);
	if (!esc)
		return buf_append(out, s, n) == -1 ? -1 : 0;
	for (i = 0; i < n; i += (size_t)k) {
		bad = must_escape(p + i, n - i, flags, &k);
		xn = escape_char(p + i, k, bad, x);
		if (buf_append(out, x, xn) == -1)
			return -1;
	}
	return 1;
}

void
text_escape_line(char *out, size_t outlen, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	const int	 flags = ESCAPE_CONTROL | ESCAPE_INVISIBLE;
	size_t		 i, n = strlen(s), o = 0, xn;
	int		 k, bad, esc = 0;
	char		 x[17];

	for (i = 0; i < n && !esc; i += (size_t)k)
		esc = must_escape(p + i, n - i, flags, &k);
	for (i = 0; i < n; i += (size_t)k) {
		bad = must_escape(p + i, n - i, flags, &k);
		if (esc)
			xn = escape_char(p + i, k, bad, x);
		else {
			xn = (size_t)k;		/* all clean: as it is */
			memcpy(x, p + i, xn);
		}
		if (o + xn >= outlen)
			break;
		memcpy(out + o, x, xn);
		o += xn;
	}
	out[o] = '\0';
}
