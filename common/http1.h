/*
 * http1.h: the one strict HTTP/1.1 message parser (RFC 9112): request and
 * response heads, and body framing.  The egress proxy parses what sandboxes
 * and origins send it; the supervisor parses what a sandbox's agent answers
 * (forward.c).  Both peers are untrusted, so both get the same reading.
 *
 * The parsers work on the bytes read so far and never copy them: a head is
 * a set of spans into the caller's buffer.  Its names start h1_ (H1_): the
 * http_ ones are mhd.h's, the server side over libmicrohttpd.
 */
#ifndef VIVARIUM_HTTP1_H
#define VIVARIUM_HTTP1_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum {
	H1_NEED_MORE	= 0,
	H1_DONE	= 1,
	H1_ERROR	= -1,
};

#define H1_MAX_HEADERS	100
#define H1_MAX_HOST		253

struct h1_span {
	uint32_t	off;
	uint32_t	len;
};

struct h1_field {
	struct h1_span name;
	struct h1_span value;
};

struct h1_req {
	int		 connect;		/* CONNECT method */
	struct h1_span method;
	struct h1_span path;			/* origin-form part; absolute-form only */
	char		 host[H1_MAX_HOST + 1];	/* lower case, no brackets */
	int		 host_v6;		/* host was an [IPv6] literal */
	uint16_t	 port;
	int		 minor;			/* HTTP/1.<minor> */
	int		 nfields;
	struct h1_field fields[H1_MAX_HEADERS];
	long long	 content_length;	/* -1 when absent */
	int		 chunked;
	int		 close;			/* the client wants no reuse */
	size_t		 head_len;		/* bytes up to and with the empty line */
	int		 status;		/* on H1_ERROR: 400, 431, ... */
	const char	*reason;		/* on H1_ERROR: static text */
};

/* Parses a request head at the start of buf.  max bounds the head size. */
int	h1_parse_request(const char *buf, size_t len, size_t max,
	    struct h1_req *);
/* Parses "host:port" (CONNECT's authority-form, or an absolute URI's
 * authority when defport is non-zero).  0, or -1 with *reason set. */
int	h1_parse_authority(const char *s, size_t len, uint16_t defport,
	    struct h1_req *, const char **reason);
/* Appends the head to send upstream: origin-form target, Host set to the
 * target, hop-by-hop and Proxy-* fields dropped.  0 or -1. */
int	h1_rewrite_request(const char *buf, const struct h1_req *,
	    struct buf *out);

struct h1_resp {
	int		 status;
	int		 minor;			/* HTTP/1.<minor> */
	long long	 content_length;	/* -1 when absent or overridden */
	int		 chunked;
	int		 close;			/* the upstream wants no reuse */
	/*
	 * Framing a recipient may read one way only by guessing: both
	 * Content-Length and Transfer-Encoding (framed by the encoding), or
	 * an encoding other than chunked (read to EOF).  The egress proxy
	 * passes such a reply on and closes (close is set); the supervisor
	 * refuses it.  NULL, or what was wrong.
	 */
	const char	*ambiguous;
	size_t		 head_len;		/* bytes up to and with the empty line */
	int		 nfields;
	struct h1_field fields[H1_MAX_HEADERS];	/* spans into the head */
	const char	*reason;		/* on H1_ERROR: static text */
};

/* Parses a response head at the start of buf.  max bounds the head size. */
int	h1_parse_response(const char *buf, size_t len, size_t max,
	    struct h1_resp *);
/* Appends the head to send the client: the status line and end-to-end
 * fields byte for byte and in order, hop-by-hop and Proxy-* fields dropped
 * (Transfer-Encoding and Content-Length kept: the body passes unchanged),
 * and "Connection: close" when close is set.  buf and resp are what
 * h1_parse_response accepted.  0, or -1 with part of the head maybe
 * appended (out full, or resp not an accepted head). */
int	h1_rewrite_response(const char *buf, const struct h1_resp *,
	    int close, struct buf *out);
/* How many of fields[0..n) are called name (any case); *value is the first
 * one's value when there is one. */
int	h1_field_find(const char *buf, const struct h1_field *fields,
	    int n, const char *name, struct h1_span *value);

/* Message body framing, fed the bytes as they pass. */
enum body_mode { BODY_NONE, BODY_LENGTH, BODY_CHUNKED, BODY_EOF };

struct body {
	enum body_mode	 mode;
	unsigned long long left;	/* LENGTH: bytes to go; CHUNKED: in chunk */
	int		 cstate;	/* chunked parser state */
	unsigned	 linelen;	/* chunk size / trailer line length so far */
	int		 done;
	int		 error;
};

void	body_init(struct body *, enum body_mode, long long length);
/* Returns how many of the n bytes belong to this body (sets done when the
 * body ends there), or -1 on malformed chunked framing. */
long	body_feed(struct body *, const char *, size_t n);
/*
 * The decoding form of body_feed, for a reader that wants the payload
 * without the chunk framing: consumes framing up to and with one run of at
 * most max payload bytes, and stops there.  Returns the bytes consumed
 * (*off, *len: the payload run among them, *len 0 when none), or -1.
 */
long	body_next(struct body *, const char *, size_t n, size_t max,
	    size_t *off, size_t *len);
/* Payload bytes that may be read next with no framing between them (for
 * reading straight into the caller's buffer): 0 when framing comes first. */
unsigned long long body_raw(const struct body *);

#endif
