/*
 * relay_http.c: the HTTP exchange of a plain (absolute-form) request:
 * the request head rewritten for the origin and its body passed on, the
 * response head rewritten for the client and its body passed on as
 * framed, keep-alive between exchanges and the one retry of a request a
 * stale kept-alive upstream dropped.
 *
 * relay.c owns the connection: its sockets, the bytes queued each way,
 * the upstream's dialling, timeouts and the end.  This file only decides
 * what the bytes of an exchange mean.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "banned.h"

static _Thread_local struct h1_req req;	/* the request being dispatched */

static void	finish_exchange(struct conn *);

/* ------------------------------------------------------------ retry */

/*
 * A kept-alive upstream may close just as a request reaches it (its idle
 * timer fired while the request was on its way), and a client can't tell
 * that from a failure of the request itself.  Such a request goes once
 * more, on a fresh connection, when relay_http_parse kept it in resend: it was
 * sent on a reused upstream, it is safe to send twice, and it is held
 * whole.  The fresh connection goes to the address that served the last
 * exchange (then the rest of the same list), all of them checked by the
 * policy when the name was resolved: nothing is resolved again, nothing
 * unchecked is dialled.  err is 0 for an EOF, else the errno of the failed
 * read or write.  Returns 0 when the request is on its way again, -1 when
 * the caller must fail as before.
 */
int
relay_http_retry(struct conn *c, int err)
{
	char		 host[sizeof(c->cur_host)];
	uint16_t	 port = c->cur_port;

	if (c->resend.len == 0 || c->nexti == 0 ||
	    (err != 0 && err != EPIPE && err != ECONNRESET))
		return -1;
	memcpy(host, c->cur_host, sizeof(host));
	relay_close_upstream(c);
	memcpy(c->cur_host, host, sizeof(host));
	c->cur_port = port;
	/* The request moves to the new upstream's queue; resend is left
	 * empty, so a second failure is final. */
	c->dir[DIR_UP].q = c->resend;
	buf_init(&c->resend, QUEUE_MAX);
	c->retries++;
	c->nexti--;
	c->deadline = now_ms() + (uint64_t)c->conf->connect_timeout * 1000;
	relay_dial_next(c, 0);
	return 0;
}

/*
 * Methods whose request the proxy sends twice: GET, HEAD and OPTIONS, safe
 * (RFC 9110 9.2.1) and so idempotent (9.2.2); relay_http_parse adds "without a
 * body".  PUT and DELETE are idempotent as well, but they change the
 * origin's state and the proxy cannot know whether the first copy was acted
 * on: that choice stays with the client, which gets the 502.  TRACE is
 * left out as nothing depends on it.
 */
static int
method_retryable(const char *m, size_t n)
{
	return (n == 3 && memcmp(m, "GET", 3) == 0) ||
	    (n == 4 && memcmp(m, "HEAD", 4) == 0) ||
	    (n == 7 && memcmp(m, "OPTIONS", 7) == 0);
}

/* ------------------------------------------------------------ requests */

void
relay_http_parse(struct conn *c)
{
	struct buf	 head = BUF_INIT(QUEUE_MAX);
	char		 msg[96];
	size_t		 rest;
	long		 k;
	int		 rc, reuse, sent, err;

	if (c->dir[DIR_DOWN].q.len > 0)
		return;	/* conn_event parses once the last response is out */
	rc = h1_parse_request(c->in.data ? c->in.data : "", c->in.len,
	    (size_t)c->conf->max_header_bytes, &req);
	if (rc == H1_NEED_MORE)
		return;
	if (rc == H1_ERROR) {
		conn_fail(c, req.status, req.reason);
		return;
	}
	c->nreq++;
	snprintf(c->target, sizeof(c->target), req.host_v6 ? "[%s]:%u" :
	    "%s:%u", req.host, req.port);
	if (!policy_port_allowed(c->conf, req.port)) {
		snprintf(msg, sizeof(msg), "port %u is not allowed", req.port);
		conn_fail(c, 403, msg);
		return;
	}
	rest = c->in.len - req.head_len;
	if (req.connect) {
		c->connect_method = 1;
		relay_close_upstream(c);
		/* Early bytes are held for the tunnel, never parsed. */
		if (buf_append(&c->dir[DIR_UP].q, c->in.data + req.head_len,
		    rest) == -1) {
			conn_fail(c, 400, "too much data before the tunnel");
			return;
		}
		buf_release(&c->in);
		relay_begin_upstream(c, req.host, req.port);
		return;
	}

	/* Plain HTTP: the same host and port keep their upstream, any other
	 * target is checked from scratch and dialled anew. */
	reuse = c->ev[SIDE_UPSTREAM].fd >= 0 && c->up_connected &&
	    c->cur_port == req.port &&
	    strcmp(c->cur_host, req.host) == 0;
	if (!reuse)
		relay_close_upstream(c);
	if (h1_rewrite_request(c->in.data, &req, &head) == -1) {
		buf_release(&head);
		/* Too large, or too many fields with our Host and
		 * Connection lines. */
		conn_fail(c, 431, "request head too large");
		return;
	}
	if (req.chunked)
		body_init(&c->reqbody, BODY_CHUNKED, 0);
	else if (req.content_length > 0)
		body_init(&c->reqbody, BODY_LENGTH, req.content_length);
	else
		body_init(&c->reqbody, BODY_NONE, 0);
	c->head_request = req.method.len == 4 &&
	    memcmp(c->in.data, "HEAD", 4) == 0;
	c->want_close = req.close;
	c->req_done = c->resp_done = c->resp_head_done = 0;
	c->resp_sent = 0;
	k = body_feed(&c->reqbody, c->in.data + req.head_len, rest);
	if (k < 0) {
		buf_release(&head);
		conn_fail(c, 400, "malformed chunked body");
		return;
	}
	if (buf_append(&head, c->in.data + req.head_len, (size_t)k) == -1) {
		buf_release(&head);
		conn_fail(c, 502, "upstream write failed");
		return;
	}
	sent = relay_put(c, DIR_UP, head.data, head.len);
	err = errno;
	/* Kept for retry_stale: only what a reused upstream carries, and
	 * only a request with no body, so all of it is in hand. */
	buf_release(&c->resend);
	if (reuse && c->reqbody.mode == BODY_NONE &&
	    method_retryable(c->in.data + req.method.off, req.method.len)) {
		c->resend = head;
		buf_init(&head, QUEUE_MAX);
	}
	buf_release(&head);
	buf_consume(&c->in, req.head_len + (size_t)k);
	c->req_done = c->reqbody.done;
	if (sent == -1) {
		/* A stale upstream refused the write: it reports its end
		 * next (epoll says HUP on a reset socket), and the retry is
		 * made from upstream_readable, on the old socket's own
		 * event rather than in the middle of the client's. */
		if (c->resend.len == 0 || (err != EPIPE && err != ECONNRESET)) {
			conn_fail(c, 502, "upstream write failed");
			return;
		}
	}
	if (reuse) {
		c->state = ST_HTTP;
		c->deadline = 0;
		c->last_io = now_ms();
		relay_update_masks(c);
		return;
	}
	relay_begin_upstream(c, req.host, req.port);
}

/* Both halves of an exchange are over: close, or wait for the next one. */
static void
finish_exchange(struct conn *c)
{
	if (c->want_close) {
		relay_close_upstream(c);
		c->state = ST_CLOSING;
		c->deadline = now_ms() + CLOSING_GRACE;
		relay_update_masks(c);
		return;
	}
	c->state = ST_HEAD;
	c->resp_sent = 0;	/* the next request's response has not begun */
	c->deadline = now_ms() + (uint64_t)c->conf->header_timeout * 1000;
	relay_update_masks(c);
	if (c->in.len > 0)
		relay_http_parse(c);
}

/* Response bytes after the head. */
static void
feed_response(struct conn *c, const char *p, size_t n)
{
	long	 k;

	if ((k = body_feed(&c->respbody, p, n)) < 0) {
		relay_set_reason(c, "allow", "malformed response body");
		conn_free(c);
		return;
	}
	if (relay_put(c, DIR_DOWN, p, (size_t)k) == -1) {
		relay_set_reason(c, "allow", "client write failed");
		conn_free(c);
		return;
	}
	if ((size_t)k < n) {
		/* More than the response framed: this upstream is confused. */
		c->want_close = 1;
		relay_close_upstream(c);
	}
	if (c->respbody.done) {
		c->resp_done = 1;
		if (!c->req_done)
			c->want_close = 1;
		finish_exchange(c);
	}
}

/*
 * Forwards the response head at the start of uin with its hop-by-hop
 * fields dropped, saying "Connection: close" when close is set.  0, or -1
 * when the connection was failed or freed.
 */
static int
send_head(struct conn *c, const struct h1_resp *resp, int close)
{
	/* The head was at most RESP_HEAD_MAX and only loses fields, but for
	 * the one Connection line the proxy may add. */
	struct buf	 out = BUF_INIT(RESP_HEAD_MAX + 64);

	if (h1_rewrite_response(c->uin.data, resp, close, &out) == -1) {
		/* Too large, or already at the field limit without room for
		 * our Connection line. */
		buf_release(&out);
		conn_fail(c, 502, "response head from upstream too large to forward");
		return -1;
	}
	if (relay_put(c, DIR_DOWN, out.data, out.len) == -1) {
		buf_release(&out);
		conn_free(c);
		return -1;
	}
	buf_release(&out);
	buf_consume(&c->uin, resp->head_len);
	return 0;
}

static void
response_head(struct conn *c)
{
	struct h1_resp resp;
	struct body	 probe;
	long		 k;
	int		 rc;

	for (;;) {
		rc = h1_parse_response(c->uin.data ? c->uin.data : "",
		    c->uin.len, RESP_HEAD_MAX, &resp);
		if (rc == H1_NEED_MORE)
			return;
		if (rc == H1_ERROR || resp.status == 101) {
			conn_fail(c, 502, "malformed response from upstream");
			return;
		}
		if (resp.status >= 200)
			break;
		/* 1xx: forwarded, the final response follows. */
		if (send_head(c, &resp, 0) == -1)
			return;
	}
	c->resp_head_done = 1;
	if (c->head_request || resp.status == 204 || resp.status == 304)
		body_init(&c->respbody, BODY_NONE, 0);
	else if (resp.chunked)
		body_init(&c->respbody, BODY_CHUNKED, 0);
	else if (resp.content_length >= 0)
		body_init(&c->respbody, BODY_LENGTH, resp.content_length);
	else {
		body_init(&c->respbody, BODY_EOF, 0);
		c->want_close = 1;
	}
	if (resp.close)
		c->want_close = 1;
	/* A response that comes before the request is all sent ends the
	 * connection (the rest of the request cannot be told from a next
	 * one), and so do bytes beyond the response already here.  Both are
	 * known now, so the head can tell the client. */
	if (!c->req_done)
		c->want_close = 1;
	probe = c->respbody;
	k = body_feed(&probe, c->uin.data + resp.head_len,
	    c->uin.len - resp.head_len);
	if (k >= 0 && (size_t)k < c->uin.len - resp.head_len)
		c->want_close = 1;
	if (send_head(c, &resp, c->want_close) == -1)
		return;
	if (c->respbody.done) {
		if (c->uin.len > 0)
			relay_close_upstream(c);
		c->resp_done = 1;
		finish_exchange(c);
		return;
	}
	if (c->uin.len > 0) {
		struct buf rest = c->uin;

		c->uin.data = NULL;
		c->uin.len = c->uin.cap = 0;
		feed_response(c, rest.data, rest.len);
		free(rest.data);
	} else
		buf_release(&c->uin);
}

/* ------------------------------------------------------------ bytes */

void
relay_http_request(struct conn *c, const char *p, size_t n)
{
	long	 k;

	if ((k = body_feed(&c->reqbody, p, n)) < 0) {
		conn_fail(c, 400, "malformed chunked body");
		return;
	}
	if (relay_put(c, DIR_UP, p, (size_t)k) == -1 ||
	    buf_append(&c->in, p + k, n - (size_t)k) == -1) {
		conn_free(c);
		return;
	}
	if (c->reqbody.done) {
		c->req_done = 1;
		if (c->resp_done)
			finish_exchange(c);
	}
}

void
relay_http_response(struct conn *c, const char *p, size_t n)
{
	if (n == 0) {
		c->dir[DIR_DOWN].eof = 1;
		if (c->resp_head_done && c->respbody.mode == BODY_EOF) {
			c->resp_done = 1;
			c->want_close = 1;
			finish_exchange(c);
		} else if (relay_http_retry(c, 0) == 0)
			return;
		else if (c->resp_sent == 0)
			conn_fail(c, 502,
			    "upstream closed without a complete response");
		else {
			relay_set_reason(c, c->verdict, "upstream closed early");
			conn_free(c);
		}
		return;
	}
	/* The response has begun: the request is not sent again. */
	buf_release(&c->resend);
	if (c->resp_head_done) {
		feed_response(c, p, n);
		return;
	}
	if (buf_append(&c->uin, p, n) == -1) {
		conn_fail(c, 502, "response head too large");
		return;
	}
	response_head(c);
}
