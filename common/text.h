/*
 * text.h: small text helpers more than one program needs.
 */
#ifndef VIVARIUM_TEXT_H
#define VIVARIUM_TEXT_H

#include <stddef.h>

/*
 * Length of the valid UTF-8 sequence at p (n bytes left): 1 to 4, 0 when
 * invalid (overlong, a surrogate, past U+10FFFF, a bad continuation), -1
 * when valid so far but cut off by the end of the data.
 */
int	utf8_seq(const unsigned char *p, size_t n);

/* A size for people: "512 B", "48.2 KB", "3.1 MB", "1.0 GB" (powers of 1024). */
void	human_size(unsigned long long n, char *out, size_t len);

#endif
