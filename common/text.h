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

/* The code point of a valid sequence of k bytes (utf8_seq's length). */
unsigned long utf8_code(const unsigned char *p, int k);

/*
 * 1 for a character that is not seen but changes what is: the C1 controls
 * (U+0080-U+009F), the line and paragraph separators, and every format
 * character (Unicode category Cf, 15.1: bidi embeddings, overrides and
 * isolates, zero-width spaces and joiners, the BOM, tags, ...).  The C0
 * controls are left to the caller (they are ASCII).
 */
int	unicode_invisible(unsigned long cp);

/*
 * Appends s (n bytes) to out for a model to read.  As it is when it is
 * valid UTF-8 (and, with ESCAPE_CONTROL, has no control character; with
 * ESCAPE_INVISIBLE, no unicode_invisible one); otherwise, or always with
 * ESCAPE_ALWAYS, each byte of an offending character becomes \xNN and each
 * backslash \\, so the text stays valid and the bytes can still be told
 * apart.  Returns 1 when it escaped, 0 when s went as it is, -1 when out
 * is full.  Escaped file names carry NAME_ESCAPED_MARK.
 */
#define ESCAPE_CONTROL	0x1	/* file names: a newline would forge a line */
#define ESCAPE_ALWAYS	0x2	/* a part of a line already escaped */
#define ESCAPE_INVISIBLE 0x4	/* C1, Cf (bidi, zero-width), U+2028/9 */
#define NAME_ESCAPED_MARK	"[name not UTF-8: bytes shown as \\xNN]"
int	text_escape(struct buf *out, const char *s, size_t n, int flags);

/*
 * s as one log line, into out (outlen > 0 bytes, always NUL-terminated):
 * text_escape's ESCAPE_CONTROL | ESCAPE_INVISIBLE without a buffer of its
 * own, so logging works when memory does not.  A line too long for out is
 * cut before the character or escape that does not fit.  Whatever a
 * client put in a path, a name or a header, it cannot start a log line of
 * its own (CR, LF), reorder one (bidi) or drive a terminal (ESC).
 */
void	text_escape_line(char *out, size_t outlen, const char *s);

/* A size for people: "512 B", "48.2 KB", "3.1 MB", "1.0 GB" (powers of 1024). */
void	human_size(unsigned long long n, char *out, size_t len);

#endif
