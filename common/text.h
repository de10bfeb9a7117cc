/*
 * text.h: small text helpers more than one program needs.
 */
#ifndef VIVARIUM_TEXT_H
#define VIVARIUM_TEXT_H

#include <stddef.h>

#include "buf.h"

/*
 * The one UTF-8 decoder.  utf8_lead: how many continuation bytes lead
 * byte b takes (0 for ASCII, -1 when b leads nothing), and the range the
 * first of them must fall in (later ones: 0x80-0xbf), which rules out
 * overlong forms, surrogates and code points past U+10FFFF.
 */
int	utf8_lead(unsigned char b, unsigned char *lo, unsigned char *hi);

/*
 * The sequence at p (n > 0 bytes left): its length, and *state 1 when it
 * is valid, 0 when not (then it is a maximal invalid subpart, at least one
 * byte, which a decoder replaces with one U+FFFD: Unicode ch. 3), -1 when
 * valid so far but cut off by the end of the data.
 */
size_t	utf8_next(const unsigned char *p, size_t n, int *state);

/* The same as a length when valid (1 to 4), 0 when invalid, -1 when cut off. */
int	utf8_seq(const unsigned char *p, size_t n);

/* Characters in valid UTF-8 s of n bytes. */
size_t	utf8_chars(const char *s, size_t n);

/* i, or where the character that byte i of valid UTF-8 falls in starts. */
size_t	utf8_floor(const char *s, size_t i);

/*
 * Appends s (n bytes) to out for a model to read.  As it is when it is
 * valid UTF-8 (and, with ESCAPE_CONTROL, has no control character);
 * otherwise, or always with ESCAPE_ALWAYS, each offending byte becomes
 * \xNN and each backslash \\, so the text stays valid and the bytes can
 * still be told apart.  Returns 1 when it escaped, 0 when s went as it
 * is, -1 when out is full.  Escaped file names carry NAME_ESCAPED_MARK.
 */
#define ESCAPE_CONTROL	0x1	/* file names: a newline would forge a line */
#define ESCAPE_ALWAYS	0x2	/* a part of a line already escaped */
#define NAME_ESCAPED_MARK	"[name not UTF-8: bytes shown as \\xNN]"
int	text_escape(struct buf *out, const char *s, size_t n, int flags);

/* A size for people: "512 B", "48.2 KB", "3.1 MB", "1.0 GB" (powers of 1024). */
void	human_size(unsigned long long n, char *out, size_t len);

#endif
