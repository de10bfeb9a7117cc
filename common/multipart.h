/*
 * multipart.h: a streaming reader of multipart/form-data bodies (RFC 7578,
 * RFC 2046 section 5.1.1), the bodies of uploads through file links.
 *
 * The body is fed in pieces as they arrive.  A part's data is handed on
 * in runs that point into the piece fed, never copied, so a file reaches
 * its temporary file in pieces as large as the server reads.  Between
 * pieces the reader keeps only how much of a possible delimiter it has
 * seen (handed on from its own copy of the delimiter when it turns out to
 * be data) and a part's header block (at most MP_HEADER_MAX bytes).
 *
 * The boundary is held to RFC 2046's characters, which cannot be CR: a
 * delimiter ("\r\n--" boundary) can then only begin at a CR, which is what
 * lets the reader hold so little.
 */
#ifndef VIVARIUM_MULTIPART_H
#define VIVARIUM_MULTIPART_H

#include <stddef.h>

#define MP_BOUNDARY_MAX	70		/* RFC 2046 */
#define MP_HEADER_MAX	8192		/* one part's header block */
#define MP_PAD_MAX	256		/* blanks after a delimiter */

/*
 * What a reader calls.  begin: a part's headers are in; name and filename
 * are the Content-Disposition's parameters (NULL when absent; filename ""
 * is a file input with nothing chosen).  data: the part's bytes, in order,
 * zero or more runs.  end: the part is whole (the delimiter after it has
 * been read, and the line end or "--" that makes it one).
 * Each returns 0, or -1 to stop the reader (mp_feed then returns -1 with
 * the error NULL).
 */
struct mp_handler {
	int	(*begin)(void *arg, const char *name, const char *filename);
	int	(*data)(void *arg, const char *p, size_t n);
	int	(*end)(void *arg);
	void	*arg;
};

struct multipart {
	char		 delim[4 + MP_BOUNDARY_MAX];	/* "\r\n--" boundary */
	size_t		 dlen;
	size_t		 held;		/* delim[0..held) seen, not yet passed */
	int		 state;
	int		 in_part;	/* past a part's headers: data is its */
	size_t		 pad;
	char		 hdr[MP_HEADER_MAX];
	size_t		 hlen;
	const char	*error;		/* static: why the body was refused */
};

/*
 * Sets m up for a body of the Content-Type ctype: 0, or -1 with m->error
 * when it is not multipart/form-data or has no usable boundary.
 */
int	mp_init(struct multipart *m, const char *ctype);
/*
 * Reads p[0..n), calling h.  0; or -1: with m->error (static text, a
 * sentence without its full stop) when the body is not valid, or with it
 * NULL when a handler stopped the reader.  After -1 the reader takes no
 * more.
 */
int	mp_feed(struct multipart *m, const char *p, size_t n,
	    const struct mp_handler *h);
/* 1 once the closing delimiter has been read (what follows is ignored). */
int	mp_complete(const struct multipart *m);

#endif
