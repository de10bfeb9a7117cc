/*
 * hash.h: the one non-cryptographic hash (64-bit FNV-1a), for names
 * derived from ids and for hash tables.  Never for anything an attacker
 * must not steer: that is sha256.h's.
 */
#ifndef VIVARIUM_HASH_H
#define VIVARIUM_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_INIT	0xcbf29ce484222325ULL	/* FNV-1a's offset basis */

/* h carried on over n bytes at p: start with HASH_INIT, chain for more. */
uint64_t	hash_bytes(uint64_t h, const void *p, size_t n);

#endif
