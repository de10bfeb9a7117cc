/*
 * sha256.h: SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for signing
 * capability links.  Small and dependency-free, so every program that
 * mints or checks a link can carry it; checked against the NIST and RFC
 * 4231 vectors in tests/unit/common/sha256.c.
 */
#ifndef VIVARIUM_SHA256_H
#define VIVARIUM_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN	32
#define SHA256_BLOCK	64

struct sha256 {
	uint32_t	 h[8];
	uint64_t	 bytes;			/* hashed so far */
	unsigned char	 block[SHA256_BLOCK];
	size_t		 fill;			/* bytes in block */
};

void	sha256_init(struct sha256 *);
void	sha256_update(struct sha256 *, const void *, size_t);
void	sha256_final(struct sha256 *, unsigned char out[SHA256_LEN]);

void	hmac_sha256(const void *key, size_t keylen, const void *msg,
	    size_t msglen, unsigned char out[SHA256_LEN]);

/* 1 when a and b (n bytes each) are equal; time independent of the data. */
int	ct_equal(const void *a, const void *b, size_t n);

#endif
