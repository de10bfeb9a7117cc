/*
 * text.h: small text helpers more than one program needs.
 */
#ifndef VIVARIUM_TEXT_H
#define VIVARIUM_TEXT_H

#include <stddef.h>

#include "buf.h"

/*
 * Length of the valid UTF-8 sequence at p (n bytes left): 1 to 4, 0 when
 * invalid (overlong, a surrogate, past U+10FFFF, a bad continuation), -1
 * when valid so far but cut off by the end of the data.
 */
int	utf8_seq(const unsigned char *p, size_t n);

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
