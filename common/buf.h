/*
 * buf.h: the one growable byte buffer, bounded by construction.
 *
 * Every buffer has a maximum set at init; an append that would pass it fails
 * with ENOSPC and leaves the buffer as it was.  The data is always
 * NUL-terminated (the NUL is not counted in len and not in max), so text can
 * be handed to C string functions directly.
 *
 *	struct buf b = BUF_INIT(1 << 20);
 *	if (buf_append(&b, p, n) == -1) ... errno is ENOSPC or ENOMEM
 *	buf_release(&b);
 */
#ifndef VIVARIUM_BUF_H
#define VIVARIUM_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char	*data;		/* owned; NULL until the first append */
	size_t	 len;
	size_t	 cap;
	size_t	 max;		/* hard limit on len */
};

#define BUF_INIT(m)	{ NULL, 0, 0, (m) }

void	 buf_init(struct buf *, size_t max);
/* Frees the storage; the buffer is empty and reusable with the same max. */
void	 buf_release(struct buf *);
/* Empties without freeing. */
void	 buf_reset(struct buf *);
int	 buf_append(struct buf *, const void *, size_t);
int	 buf_appends(struct buf *, const char *);
int	 buf_appendf(struct buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 buf_vappendf(struct buf *, const char *, va_list)
	    __attribute__((format(printf, 2, 0)));
/* Removes the first n bytes. */
void	 buf_consume(struct buf *, size_t n);
/* Returns the text ("" when empty); never NULL. */
const char *buf_str(const struct buf *);
/* Hands the storage to the caller (free() it) and empties the buffer. */
char	*buf_detach(struct buf *, size_t *lenp);

#endif
