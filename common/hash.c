/*
 * hash.c: 64-bit FNV-1a (hash.h).
 */
#include "hash.h"
#include "banned.h"

uint64_t
hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char	*b = p;
	size_t			 i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}
