/*
 * base64.c: base64 in the standard and URL alphabets (base64.h).
 */
#include <string.h>

#include "base64.h"
#include "banned.h"

static const char *const tabs[2] = {
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
};

size_t
base64_encoded_len(enum base64_alphabet a, size_t len)
{
	if (a == BASE64_STD)
		return (len + 2) / 3 * 4;
	return len / 3 * 4 + (len % 3 == 0 ? 0 : len % 3 + 1);
}

int
base64_encode(enum base64_alphabet a, const void *in, size_t len,
    struct buf *out)
{
	const unsigned char	*p = in;
	const char		*tab = tabs[a == BASE64_URL];
	char			 q[4];
	unsigned int		 v;
	size_t			 i, n;

	for (i = 0; i + 2 < len; i += 3) {
		v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		q[0] = tab[v >> 18];
		q[1] = tab[(v >> 12) & 63];
		q[2] = tab[(v >> 6) & 63];
		q[3] = tab[v & 63];
		if (buf_append(out, q, 4) == -1)
			return -1;
	}
	if (i == len)
		return 0;
	v = (unsigned)p[i] << 16;
	if (i + 1 < len)
		v |= (unsigned)p[i + 1] << 8;
	q[0] = tab[v >> 18];
	q[1] = tab[(v >> 12) & 63];
	q[2] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
	q[3] = '=';
	n = a == BASE64_STD ? 4 : i + 1 < len ? 3 : 2;
	return buf_append(out, q, n);
}

static int
value(const char *tab, char c)
{
	const char	*p;

	if (c == '\0' || (p = strchr(tab, c)) == NULL)
		return -1;
	return (int)(p - tab);
}

long
base64_decode(enum base64_alphabet a, int flags, const char *s, size_t len,
    unsigned char *out, size_t outlen)
{
	const char	*tab = tabs[a == BASE64_URL];
	size_t		 i, o = 0, chars = 0, pad = 0;
	unsigned int	 v = 0;
	int		 bits = 0, x;

	for (i = 0; i < len; i++) {
		if ((flags & BASE64_BLANKS) && (s[i] == ' ' || s[i] == '\t' ||
		    s[i] == '\r' || s[i] == '\n'))
			continue;
		if (s[i] == '=' && a == BASE64_STD) {
			pad++;		/* only padding may follow */
			continue;
		}
		if (pad > 0 || (x = value(tab, s[i])) == -1)
			return -1;
		chars++;
		v = (v << 6) | (unsigned)x;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= outlen)
				return -1;
			out[o++] = (unsigned char)(v >> bits);
		}
	}
	if (chars % 4 == 1)
		return -1;
	/* Padded exactly to a multiple of 4 (standard), or not at all (URL). */
	if (a == BASE64_STD && (pad > 2 || (chars + pad) % 4 != 0))
		return -1;
	/* Leftover bits must be zero: one string, one spelling. */
	if (bits > 0 && (v & ((1u << bits) - 1)) != 0)
		return -1;
	return (long)o;
}
