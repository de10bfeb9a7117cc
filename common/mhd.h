/*
 * mhd.h: small libmicrohttpd (and jansson) helpers shared by the agent and
 * the supervisor, the two programs that serve HTTP with libmicrohttpd.  The
 * functions keep their http_ prefix: they are the HTTP server's helpers.
 *
 * Four jobs, nothing more:
 *   - collecting a request body across the access handler's calls, capped,
 *     with a clear 413 when it is too big;
 *   - building and queueing JSON (and plain-text) responses;
 *   - reading request headers, strictly where they carry identity;
 *   - a guard that keeps slots for clients that speak (http_guard, guard.c).
 *
 * The Origin check is plain strings and lives in origin.h.
 *
 * A typical access handler:
 *
 *	struct http_request *req;
 *	switch (http_collect(conn, con_cls, upload_data, upload_data_size,
 *	    MAX_BODY, &req)) {
 *	case HTTP_COLLECT_MORE:		return MHD_YES;
 *	case HTTP_COLLECT_ANSWERED:	return req->ret;
 *	case HTTP_COLLECT_FAILED:	return MHD_NO;
 *	case HTTP_COLLECT_DONE:		break;	// req->body holds the body
 *	}
 *
 * and MHD_OPTION_NOTIFY_COMPLETED set to http_request_completed, which frees
 * the per-request state.
 */
#ifndef VIVARIUM_MHD_H
#define VIVARIUM_MHD_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stdint.h>

#include <jansson.h>
#include <microhttpd.h>

#include "buf.h"

/* ------------------------------------------------------------ bodies */

/* Per-request state, kept in MHD's *con_cls; freed by http_request_completed. */
struct http_request {
	struct buf	 body;		/* the request body, NUL-terminated */
	int		 too_big;	/* over the cap: the rest is discarded */
	unsigned long long seen;	/* body bytes received */
	enum MHD_Result	 ret;		/* with HTTP_COLLECT_ANSWERED */
	/* A handler's own state instead of a body (http_request_attach). */
	void		*state;
	void		(*release)(void *state, enum MHD_RequestTerminationCode);
};

/*
 * Hangs a handler's own per-request state on *con_cls (which must be
 * NULL), for handlers that stream a body instead of collecting it:
 * http_request_completed calls release(state, why) at the end.  NULL when
 * out of memory (state is not released then).
 */
struct http_request *http_request_attach(void **con_cls, void *state,
	    void (*release)(void *, enum MHD_RequestTerminationCode));

enum http_collect {
	HTTP_COLLECT_MORE,		/* return MHD_YES and wait for more */
	HTTP_COLLECT_DONE,		/* the whole body is in (*reqp)->body */
	HTTP_COLLECT_ANSWERED,		/* a 413 is queued: return (*reqp)->ret */
	HTTP_COLLECT_FAILED,		/* return MHD_NO: out of memory, or an
					 * oversized body past HTTP_DRAIN_MAX
					 * (the connection is closed) */
};

/*
 * Bodies over the cap are read and dropped, then answered 413, so the client
 * sees the answer (closing on a client still sending makes it see a reset
 * instead).  A declared Content-Length over HTTP_DRAIN_MAX is answered at
 * once; a chunked body still coming past it has the connection closed.
 */
#define HTTP_DRAIN_MAX	(64ULL * 1024 * 1024)

/*
 * Accumulates the body of the current request, at most max bytes; an
 * oversized one gets 413 (see HTTP_DRAIN_MAX).  *reqp is set on every
 * return (it may be NULL only with HTTP_COLLECT_FAILED).
 */
enum http_collect http_collect(struct MHD_Connection *, void **con_cls,
	    const char *upload_data, size_t *upload_data_size, size_t max,
	    struct http_request **reqp);
/* For MHD_OPTION_NOTIFY_COMPLETED. */
void	http_request_completed(void *cls, struct MHD_Connection *,
	    void **con_cls, enum MHD_RequestTerminationCode);

/*
 * A guard that keeps every slot of a daemon from being held by clients
 * that do not earn it (guard.c).  Each connection is in one class:
 *
 *   idle	no request yet, or between requests.  Once a request's first
 *		bytes come, its head must be in within the deadline.
 *   receiving	a head is in and its body is coming (http_guard_receiving):
 *		the body must be in within the deadline.
 *   transfer	a file link's upload, download or page (http_guard_transfer):
 *		counted against caps of its own (in total, per client address,
 *		per link), and cut when it moves fewer than min_rate bytes a
 *		second over a window of grace seconds.
 *   working	a request that proved a bearer token, or whose body is in and
 *		that the server works on (http_guard_trust): never cut.  A
 *		connection that proved the token stays working between its
 *		requests (http_guard_bearer).
 *
 * When a new connection arrives with more than soft open, the oldest idle
 * one is shut down to make room, else the oldest receiving one, else the
 * oldest transfer; a working one never is.  So neither silent nor slow
 * clients, nor link holders, lock out a client that speaks (and /health).
 * A request's end makes its connection idle again, but for a bearer's.
 * Deadlines and rates are read from the kernel (TCP_INFO); on a unix
 * socket only the body deadline holds.
 * One guard per daemon; pass it as MHD_OPTION_NOTIFY_CONNECTION,
 * http_guard_notify, guard, and call http_request_completed (or
 * http_guard_untrust) when a request ends.
 */
struct http_guard;

struct http_guard_limits {
	unsigned	 soft;		/* open connections before room is made */
	unsigned	 deadline;	/* s for a head, and a body; 0: none */
	unsigned	 xfer_max;	/* transfers at once */
	unsigned	 xfer_per_address;
	unsigned	 xfer_per_link;
	unsigned long long min_rate;	/* bytes/s a transfer moves; 0: no rule */
	unsigned	 grace;		/* s: the window min_rate is measured over */
};

/* limits copied; NULL when out of memory or the watch thread cannot start. */
struct http_guard *http_guard_new(const struct http_guard_limits *);
/* After MHD_stop_daemon, which has closed every connection it watched. */
void	http_guard_free(struct http_guard *);
void	http_guard_notify(void *guard, struct MHD_Connection *,
	    void **socket_context, enum MHD_ConnectionNotificationCode);
/* Working: never cut; sets its inactivity timeout (seconds, 0: leave it). */
void	http_guard_trust(struct MHD_Connection *, unsigned timeout_s);
/* Working for good: the connection proved a bearer token (the supervisor's
 * LibreChat), so even idle between requests it is never evicted. */
void	http_guard_bearer(struct MHD_Connection *, unsigned timeout_s);
/* Receiving: its body must come within the deadline. */
void	http_guard_receiving(struct MHD_Connection *);
/* Idle again (http_request_completed calls it). */
void	http_guard_untrust(struct MHD_Connection *);
/*
 * The answer now queued sends size bytes of fd with sendfile: a file
 * shorter than that (rewritten meanwhile) gets the connection cut within
 * a second, not retried in a busy loop.  Until the request ends.
 */
void	http_guard_file(struct MHD_Connection *, int fd, uint64_t size);
/*
 * A file link's transfer, link being the token (any bytes that name the
 * link): 0 and the connection in class transfer, its inactivity timeout
 * twice the grace; or -1 with why filled when a cap is reached (503).
 */
int	http_guard_transfer(struct MHD_Connection *, const void *link,
	    size_t linklen, char *why, size_t whylen);

/* ------------------------------------------------------------ responses */

/*
 * New responses (NULL when out of memory).  The caller may add headers and
 * then hands the response to http_queue, which queues and destroys it.
 * http_response_json serialises json compactly (json borrowed).
 */
struct MHD_Response *http_response_json(const json_t *json);
struct MHD_Response *http_response_text(const char *text);
enum MHD_Result http_queue(struct MHD_Connection *, unsigned int status,
	    struct MHD_Response *);

/* Shorthands: build, queue, destroy.  json is borrowed; text gets a newline. */
enum MHD_Result http_reply_json(struct MHD_Connection *, unsigned int status,
	    const json_t *json);
enum MHD_Result http_reply_text(struct MHD_Connection *, unsigned int status,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An empty body (e.g. 202 Accepted); allow, when set, fills an Allow header. */
enum MHD_Result http_reply_empty(struct MHD_Connection *, unsigned int status,
	    const char *allow);

/* A request header (case-insensitive), borrowed, or NULL. */
const char *http_header(struct MHD_Connection *, const char *name);
/*
 * A header that carries identity (the token, the user id, the Origin),
 * where a reader that guesses is a hole: NULL when absent; otherwise the
 * value, unless it is sent more than once or holds a NUL byte (which
 * would cut it short: "alice\0evil" read as "alice").  Then NULL with
 * *refused set and the reason in why.
 */
const char *http_header_strict(struct MHD_Connection *, const char *name,
	    int *refused, char *why, size_t whylen);

#endif
