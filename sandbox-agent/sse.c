/*
 * sse.c: a tools/call that asked for progress is answered as an SSE
 * stream (MCP Streamable HTTP): notifications/progress about once a
 * second while it runs, then the response, then the end of the stream.
 *
 * libmicrohttpd sends a response only once the access handler returns, so
 * the call runs in a thread of its own and the response is a callback
 * that hands out the events as the thread makes them; in thread-per-
 * connection mode that callback may block, which it does until the next
 * event.  The thread watches the connection (a dup of its descriptor, so
 * the number cannot be reused under it) for the client's closing, and an
 * eventfd for the response being dropped by libmicrohttpd (a write that
 * failed, the agent stopping): either stops the run, as a cancel does.
 */
#include <sys/eventfd.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "agent.h"
#include "mhd.h"
#include "log.h"
#include "banned.h"

/* Progress events waiting to be sent beyond this are dropped: a slow
 * reader gets fewer, never an unbounded queue. */
#define SSE_QUEUE_MAX	(64u * 1024)
/* The response itself may be large (images): its own cap. */
#define SSE_OUT_MAX	(AGENT_MAX_BODY * 16)

struct sse {
	pthread_mutex_t	 mtx;
	pthread_cond_t	 cond;
	struct buf	 out;		/* events not yet handed to MHD */
	int		 finished;	/* the thread has queued its last */

	pthread_t	 th;
	struct agent_ctx ctx;
	struct call_io	 io;
	char		*workspace, *label, *pver, *body;
	char		*hdr_method, *hdr_name;	/* the 2026 headers, or NULL */
	size_t		 len;
	json_t		*token;		/* owned */
};

/* ------------------------------------------------------------ checks */

int
sse_wanted(const char *accept, const char *body, size_t len)
{
	json_t	*msg, *m, *meta, *tok;
	int	 want = 0;

	if (accept == NULL || strcasestr(accept, "text/event-stream") == NULL)
		return 0;
	if ((msg = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL)) == NULL)
		return 0;
	m = json_object_get(msg, "method");
	meta = json_object_get(json_object_get(msg, "params"), "_meta");
	tok = json_object_get(meta, "progressToken");
	want = json_is_string(m) && strcmp(json_string_value(m),
	    "tools/call") == 0 && json_object_get(msg, "id") != NULL &&
	    (json_is_string(tok) || json_is_integer(tok));
	json_decref(msg);
	return want;
}

static json_t *
token_of(const char *body, size_t len)
{
	json_t	*msg, *tok;

	if ((msg = json_loadb(body, len, 0, NULL)) == NULL)
		return NULL;
	tok = json_object_get(json_object_get(json_object_get(msg, "params"),
	    "_meta"), "progressToken");
	json_incref(tok);
	json_decref(msg);
	return tok;
}

/* ------------------------------------------------------------ events */

/* Queues "event: message / data: <json>" (steals msg).  mtx held. */
static void
queue_event(struct sse *s, json_t *msg, size_t max)
{
	char	*text;

	if (msg == NULL)
		return;
	text = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (text == NULL)
		return;
	if (s->out.len + strlen(text) + 32 <= max &&
	    buf_appendf(&s->out, "event: message\ndata: %s\n\n", text) == -1)
		log_warnx("sse: an event did not fit");
	free(text);
	pthread_cond_broadcast(&s->cond);
}

static void
sse_progress(void *arg, double elapsed, const char *line)
{
	struct sse	*s = arg;
	char		 msg[320];

	snprintf(msg, sizeof(msg), "%.0f s%s%s", elapsed, line[0] ? ": " : "",
	    line);
	pthread_mutex_lock(&s->mtx);
	queue_event(s, json_pack("{s:s, s:s, s:{s:O, s:f, s:s}}", "jsonrpc",
	    "2.0", "method", "notifications/progress", "params",
	    "progressToken", s->token, "progress", elapsed, "message", msg),
	    SSE_QUEUE_MAX);
	pthread_mutex_unlock(&s->mtx);
}

static void *
sse_main(void *arg)
{
	struct sse	*s = arg;
	json_t		*reply = NULL;

	mcp_handle(&s->ctx, s->pver, s->body, s->len, &reply);
	pthread_mutex_lock(&s->mtx);
	if (reply != NULL)
		queue_event(s, reply, SSE_OUT_MAX);
	s->finished = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mtx);
	return NULL;
}

/* ------------------------------------------------------------ response */

static ssize_t
sse_read(void *cls, uint64_t pos, char *dst, size_t max)
{
	struct sse	*s = cls;
	size_t		 n;

	(void)pos;
	pthread_mutex_lock(&s->mtx);
	while (s->out.len == 0 && !s->finished)
		pthread_cond_wait(&s->cond, &s->mtx);
	if (s->out.len == 0) {
		pthread_mutex_unlock(&s->mtx);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	n = s->out.len < max ? s->out.len : max;
	memcpy(dst, s->out.data, n);
	buf_consume(&s->out, n);
	pthread_mutex_unlock(&s->mtx);
	return (ssize_t)n;
}

static void
sse_free(void *cls)
{
	struct sse	*s = cls;
	uint64_t	 one = 1;

	/* Whatever is still running is no longer wanted. */
	if (write(s->io.abandon_fd, &one, sizeof(one)) == -1)
		log_warn("sse: eventfd");
	pthread_join(s->th, NULL);
	close(s->io.abandon_fd);
	close(s->io.hangup_fd);
	json_decref(s->token);
	buf_release(&s->out);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mtx);
	free(s->workspace);
	free(s->label);
	free(s->pver);
	free(s->hdr_method);
	free(s->hdr_name);
	free(s->body);
	free(s);
}

int
sse_serve(struct MHD_Connection *conn, const struct agent_ctx *ctx,
    const char *pver, const char *body, size_t len)
{
	const union MHD_ConnectionInfo *ci;
	struct MHD_Response	*resp;
	struct sse		*s;
	int			 e;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return MHD_NO;
	s->io.hangup_fd = s->io.abandon_fd = -1;
	buf_init(&s->out, SSE_OUT_MAX);
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci != NULL)
		s->io.hangup_fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0);
	s->io.abandon_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->io.progress = sse_progress;
	s->io.arg = s;
	if ((s->workspace = strdup(ctx->workspace)) == NULL ||
	    (s->label = strdup(ctx->label)) == NULL ||
	    (pver != NULL && (s->pver = strdup(pver)) == NULL) ||
	    (ctx->hdr_method != NULL &&
	    (s->hdr_method = strdup(ctx->hdr_method)) == NULL) ||
	    (ctx->hdr_name != NULL &&
	    (s->hdr_name = strdup(ctx->hdr_name)) == NULL) ||
	    (s->body = malloc(len + 1)) == NULL ||
	    (s->token = token_of(body, len)) == NULL ||
	    s->io.abandon_fd == -1 || s->io.hangup_fd == -1)
		goto fail;
	memcpy(s->body, body, len);
	s->body[len] = '\0';
	s->len = len;
	s->ctx = *ctx;
	s->ctx.workspace = s->workspace;
	s->ctx.label = s->label;
	s->ctx.hdr_method = s->hdr_method;
	s->ctx.hdr_name = s->hdr_name;
	s->ctx.session_out = NULL;	/* initialize never comes this way */
	s->ctx.io = &s->io;
	pthread_mutex_init(&s->mtx, NULL);
	pthread_cond_init(&s->cond, NULL);
	/* A comment first: the head goes out now, not with the first event. */
	(void)buf_appends(&s->out, ": vivarium-agent: running\n\n");
	if ((e = pthread_create(&s->th, NULL, sse_main, s)) != 0) {
		log_warnx("sse: cannot start a thread: %s", strerror(e));
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->mtx);
		goto fail;
	}
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
	    sse_read, s, sse_free);
	if (resp == NULL) {
		sse_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
	    "no-cache");
	return http_queue(conn, 200, resp);
fail:
	if (s->io.hangup_fd != -1)
		close(s->io.hangup_fd);
	if (s->io.abandon_fd != -1)
		close(s->io.abandon_fd);
	json_decref(s->token);
	buf_release(&s->out);
	free(s->workspace);
	free(s->label);
	free(s->pver);
	free(s->hdr_method);
	free(s->hdr_name);
	free(s->body);
	free(s);
	return MHD_NO;
}
