/*
 * base64.h: the one base64 codec (RFC 4648), in its two alphabets: the
 * standard one, padded with '=' (MCP image data, kubeconfig *-data), and
 * the URL one without padding (signed links).  Decoding is strict: one
 * string has one spelling, so a link token cannot be varied and still
 * verify, and a corrupt kubeconfig is said to be corrupt.
 */
#ifndef VIVARIUM_BASE64_H
#define VIVARIUM_BASE64_H

#include <stddef.h>

#include "buf.h"

enum base64_alphabet {
	BASE64_STD,	/* A-Z a-z 0-9 + /, padded to a multiple of 4 */
	BASE64_URL	/* A-Z a-z 0-9 - _, never padded */
};

#define BASE64_BLANKS	0x1	/* decode: skip spaces, tabs, CR and LF */

/* Characters that len bytes encode to (padding included), NUL not. */
size_t	base64_encoded_len(enum base64_alphabet, size_t len);
/* Appends the encoding of len bytes at in to out: 0, or -1 (out full). */
int	base64_encode(enum base64_alphabet, const void *in, size_t len,
	    struct buf *out);
/*
 * Decodes len characters at s into out (at most outlen bytes): how many
 * bytes, or -1 when s is not exactly one encoding in that alphabet (a
 * foreign character, misplaced or missing padding, non-zero leftover
 * bits, an impossible length) or out is too small.
 */
long	base64_decode(enum base64_alphabet, int flags, const char *s,
	    size_t len, unsigned char *out, size_t outlen);

#endif
