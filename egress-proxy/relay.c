/*
 * relay.c: one client connection, from its first byte to its log line.
 *
 *	HEAD ──parse──▶ RESOLVE ──classify──▶ CONNECT ──▶ TUNNEL   (CONNECT)
 *	  ▲                                      └──────▶ HTTP     (absolute-form)
 *	  └──────────── next request on a kept-alive connection ◀──┘
 *	any state ──error──▶ CLOSING (short reply, flush, drain, close)
 *
 * Data is read into one shared scratch buffer and written straight on; only
 * what the other side cannot take yet is kept per connection, and reading
 * from a side stops while its bytes are queued.  An idle tunnel therefore
 * holds no buffers at all.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "banned.h"

#ifndef SPLICE_AFTER
#define SPLICE_AFTER	(256 * 1024)
#endif
#ifndef SPLICE_CHUNK
#define SPLICE_CHUNK	(1024 * 1024)	/* pipe size asked for */
#endif
#ifndef SPLICE_ROOM
#define SPLICE_ROOM	(64 * 1024)	/* read on while less is in the pipe */
#endif
#define EARLY_MAX	(64 * 1024)	/* held from a client before its tunnel */

/* Each worker thread has its own connections and scratch space. */
_Thread_local struct conn *conn_list;
_Atomic long	 conn_count;
static _Thread_local struct conn *graveyard;
static _Thread_local char scratch[64 * 1024];
/* Connection log lines of this loop turn, written together. */
static _Thread_local char logbuf[32 * 1024];
static _Thread_local size_t loglen;

static void	conn_event(struct ev *, uint32_t);

/* ------------------------------------------------------------ helpers */

void
relay_set_reason(struct conn *c, const char *verdict, const char *reason)
{
	c->verdict = verdict;
	snprintf(c->reason, sizeof(c->reason), "%s", reason);
}

void
relay_close_upstream(struct conn *c)
{
	struct linger	 l = { 1, 0 };

	/* A client that reset its connection gets its upstream reset too:
	 * the tunnel passes the abort on, and the proxy keeps no TIME_WAIT
	 * for a connection nobody is left to finish. */
	if (c->ev[SIDE_UPSTREAM].fd >= 0 && c->client_reset && c->up_connected)
		(void)setsockopt(c->ev[SIDE_UPSTREAM].fd, SOL_SOCKET,
		    SO_LINGER, &l, sizeof(l));
	if (c->ev[SIDE_UPSTREAM].fd >= 0)
		ev_close(&c->ev[SIDE_UPSTREAM]);
	c->up_connected = 0;
	c->dir[DIR_DOWN].eof = 0;
	c->dir[DIR_UP].shut = 0;
	c->cur_host[0] = '\0';
	c->cur_port = 0;
	buf_release(&c->dir[DIR_UP].q);
	buf_release(&c->uin);
}

/* send(2) without SIGPIPE: bytes written, 0 when the socket is full, -1. */
static ssize_t
xsend(int fd, const char *p, size_t n)
{
	ssize_t	 w;

	do
		w = send(fd, p, n, MSG_NOSIGNAL);
	while (w == -1 && errno == EINTR);
	if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return w;
}

static ssize_t
xrecv(int fd, char *p, size_t n)
{
	ssize_t	 r;

	do
		r = recv(fd, p, n, 0);
	while (r == -1 && errno == EINTR);
	return r;
}

/* The socket a direction reads from, and the one it writes to (egress.h:
 * direction d reads side d and writes the other side). */
static int
src_fd(const struct conn *c, int d)
{
	return c->ev[d].fd;
}

static int
dst_fd(const struct conn *c, int d)
{
	return c->ev[1 - d].fd;
}

/* Counts bytes delivered in direction d. */
static void
delivered(struct conn *c, int d, size_t n)
{
	c->dir[d].bytes += (unsigned long long)n;
	if (d == DIR_DOWN)
		c->resp_sent += n > 0;
}

/*
 * Sends in direction d, queueing what does not fit.  Nothing is sent to an
 * upstream that is not connected yet, and nothing overtakes queued bytes.
 */
int
relay_put(struct conn *c, int d, const char *p, size_t n)
{
	struct buf	*q = &c->dir[d].q;
	int		 fd = dst_fd(c, d);
	ssize_t		 w;

	if (n == 0)
		return 0;
	if (q->len == 0 && fd >= 0 && (d == DIR_DOWN || c->up_connected)) {
		if ((w = xsend(fd, p, n)) == -1)
			return -1;
		delivered(c, d, (size_t)w);
		p += w;
		n -= (size_t)w;
	}
	if (n > 0 && buf_append(q, p, n) == -1)
		return -1;
	return 0;
}

/* Writes the bytes queued in direction d; 0, or -1 when the socket failed. */
static int
flush(struct conn *c, int d)
{
	struct buf	*q = &c->dir[d].q;
	int		 fd = dst_fd(c, d);
	ssize_t		 w;

	if (q->len == 0 || fd < 0)
		return 0;
	if ((w = xsend(fd, q->data, q->len)) == -1)
		return -1;
	delivered(c, d, (size_t)w);
	buf_consume(q, (size_t)w);
	if (q->len == 0)
		buf_release(q);	/* idle connections keep no storage */
	return 0;
}

/* ------------------------------------------------------------ splice */

static void
close_pipes(struct conn *c)
{
	int	 d;

	for (d = 0; d < 2; d++) {
		struct dir *x = &c->dir[d];

		if (x->pipe[0] >= 0) {
			close(x->pipe[0]);
			close(x->pipe[1]);
		}
		x->pipe[0] = x->pipe[1] = -1;
		x->pend = 0;
		x->pfull = 0;
	}
}

/*
 * Decides whether a tunnel direction moves by splice.  Only a direction
 * that has carried a fair amount pays for the pipe, so idle and chatty
 * tunnels hold no extra descriptors.  Without descriptors to spare it just
 * keeps copying.
 */
static int
use_splice(struct conn *c, int d)
{
	struct dir	*x = &c->dir[d];

	if (x->pipe[0] >= 0)
		return 1;
	if (x->bytes < SPLICE_AFTER || x->q.len > 0)
		return 0;
	if (pipe2(x->pipe, O_NONBLOCK | O_CLOEXEC) == -1) {
		x->pipe[0] = x->pipe[1] = -1;
		return 0;
	}
	/* A bigger pipe keeps more in flight between the two sockets. */
	(void)fcntl(x->pipe[1], F_SETPIPE_SZ, SPLICE_CHUNK);
	return 1;
}

/* Empties a pipe into its destination as far as it will take; 0 or -1. */
static int
splice_flush(struct conn *c, int d)
{
	struct dir	*x = &c->dir[d];
	int		 dst = dst_fd(c, d);
	ssize_t		 w;

	while (x->pend > 0) {
		w = splice(x->pipe[0], NULL, dst, NULL, x->pend,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (w == -1) {
			if (errno == EAGAIN)
				return 0;
			if (errno == EINTR)
				continue;
			return -1;
		}
		x->pend -= (size_t)w;
		x->pfull = 0;
		x->bytes += (unsigned long long)w;
	}
	return 0;
}

/* Moves what the source has into the pipe and on.  Returns 1 at end of
 * stream, 0, or -1 on error. */
static int
splice_move(struct conn *c, int d)
{
	struct dir	*x = &c->dir[d];
	ssize_t		 n;

	do
		n = splice(src_fd(c, d), NULL, x->pipe[1], NULL, SPLICE_CHUNK,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	while (n == -1 && errno == EINTR);
	if (n == 0)
		return 1;
	if (n == -1) {
		if (errno != EAGAIN)
			return -1;
		/* Nothing to read, or a pipe full of small pieces: with
		 * bytes pending, assume the latter and stop reading until
		 * the pipe drains, rather than spin on a readable socket. */
		if (x->pend > 0)
			x->pfull = 1;
		return 0;
	}
	x->pend += (size_t)n;
	return splice_flush(c, d);
}

void
relay_update_masks(struct conn *c)
{
	uint32_t	 m[2] = { 0, 0 };	/* by side */
	int		 busy[2], d;

	switch (c->state) {
	case ST_HEAD:
		/* The next request waits until the last response is out:
		 * a refusal then has the client side to itself. */
		if (c->dir[DIR_DOWN].q.len == 0)
			m[SIDE_CLIENT] = EPOLLIN;
		/* A kept upstream that speaks is dropped. */
		m[SIDE_UPSTREAM] = EPOLLIN;
		break;
	case ST_RESOLVE:
	case ST_CONNECT:
		/* A CONNECT client's early bytes are read and held (a bounded
		 * amount); keeping its mask as it was saves two epoll_ctl
		 * calls per tunnel. */
		if (c->connect_method && !c->dir[DIR_UP].eof &&
		    c->dir[DIR_UP].q.len < EARLY_MAX)
			m[SIDE_CLIENT] = EPOLLIN;
		if (c->state == ST_CONNECT)
			m[SIDE_UPSTREAM] = EPOLLOUT;
		break;
	case ST_TUNNEL:
		/* With a pipe, keep reading while it has room, so both
		 * sockets stay busy; without one, while nothing is queued. */
		for (d = 0; d < 2; d++) {
			const struct dir *x = &c->dir[d];

			if (!x->eof && x->q.len == 0 && x->pend < SPLICE_ROOM &&
			    !x->pfull)
				m[d] |= EPOLLIN;		/* its source */
			if (x->pend > 0)
				m[1 - d] |= EPOLLOUT;	/* its destination */
		}
		break;
	case ST_HTTP:
		/* Each half of the exchange reads until it is complete. */
		busy[DIR_UP] = !c->req_done;
		busy[DIR_DOWN] = !c->resp_done;
		for (d = 0; d < 2; d++)
			if (busy[d] && !c->dir[d].eof && c->dir[d].q.len == 0)
				m[d] |= EPOLLIN;
		break;
	case ST_CLOSING:
		if (c->dir[DIR_DOWN].q.len == 0)
			m[SIDE_CLIENT] = EPOLLIN;
		break;
	}
	if (c->dir[DIR_DOWN].q.len > 0)
		m[SIDE_CLIENT] |= EPOLLOUT;
	if (c->dir[DIR_UP].q.len > 0 && c->up_connected)
		m[SIDE_UPSTREAM] |= EPOLLOUT;
	ev_set(&c->ev[SIDE_CLIENT], m[SIDE_CLIENT]);
	if (c->ev[SIDE_UPSTREAM].fd >= 0)
		ev_set(&c->ev[SIDE_UPSTREAM], m[SIDE_UPSTREAM]);
}

/* ------------------------------------------------------------ life cycle */

struct conn *
conn_new(const struct egress_conf *conf, int fd,
    const struct sockaddr_storage *peer)
{
	struct conn	*c;
	char		 a[INET6_ADDRSTRLEN];
	uint16_t	 port;
	int		 d;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->conf = conf;
	for (d = 0; d < 2; d++) {
		c->ev[d].cb = conn_event;
		c->ev[d].ptr = c;
		c->dir[d].pipe[0] = c->dir[d].pipe[1] = -1;
		buf_init(&c->dir[d].q, QUEUE_MAX);
	}
	c->ev[SIDE_CLIENT].fd = fd;
	c->ev[SIDE_UPSTREAM].fd = -1;
	buf_init(&c->in, (size_t)conf->max_header_bytes);
	buf_init(&c->uin, RESP_HEAD_MAX);
	buf_init(&c->resend, QUEUE_MAX);
	port = peer->ss_family == AF_INET6 ?
	    ntohs(((const struct sockaddr_in6 *)peer)->sin6_port) :
	    ntohs(((const struct sockaddr_in *)peer)->sin_port);
	sockaddr_str(peer, a, sizeof(a));
	snprintf(c->peer, sizeof(c->peer), "%s", a);
	(void)labels_find(peer, c->user, sizeof(c->user));
	snprintf(c->client, sizeof(c->client),
	    peer->ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, port);
	snprintf(c->target, sizeof(c->target), "-");
	snprintf(c->addr, sizeof(c->addr), "-");
	relay_set_reason(c, "none", "no request");
	c->started = c->last_io = now_ms();
	c->state = ST_HEAD;
	c->deadline = c->started + (uint64_t)conf->header_timeout * 1000;

	c->next = conn_list;
	if (conn_list != NULL)
		conn_list->prev = c;
	conn_list = c;
	conn_count++;
	relay_update_masks(c);
	return c;
}

/* Closes the sockets now; the memory goes at the end of the loop turn, as
 * other events of the same epoll batch may still point at it. */
void
conn_free(struct conn *c)
{
	char		 line[1536], retries[32] = "", user[LABEL_MAX + 8] = "";
	int		 n;

	if (c->state == ST_DEAD)
		return;
	/* Only the rare connection that retried a request says so: every
	 * other line keeps its usual fields. */
	if (c->retries > 0)
		snprintf(retries, sizeof(retries), " retries=%d", c->retries);
	/* Whose sandbox, when the supervisor said (labels.c): after
	 * client=, which vivariumctl logs matches on. */
	if (c->user[0] != '\0')
		snprintf(user, sizeof(user), " user=%s", c->user);
	n = snprintf(line, sizeof(line), "vivarium-egress: client=%s%s "
	    "target=%s addr=%s verdict=%s reason=\"%s\" requests=%d up=%llu "
	    "down=%llu ms=%llu%s\n", c->client, user, c->target, c->addr,
	    c->verdict,
	    c->reason, c->nreq, c->dir[DIR_UP].bytes, c->dir[DIR_DOWN].bytes,
	    (unsigned long long)(now_ms() - c->started), retries);
	if (n >= (int)sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (n > 0) {
		if (loglen + (size_t)n > sizeof(logbuf))
			conn_log_flush();
		memcpy(logbuf + loglen, line, (size_t)n);
		loglen += (size_t)n;
	}
	c->state = ST_DEAD;
	if (c->job != NULL) {
		resolver_cancel(c->job);
		c->job = NULL;
	}
	relay_close_upstream(c);
	close_pipes(c);
	ev_close(&c->ev[SIDE_CLIENT]);
	buf_release(&c->in);
	buf_release(&c->dir[DIR_DOWN].q);
	buf_release(&c->resend);
	if (c->release != NULL)
		c->release(c->cc);
	c->release = NULL;
	c->cc = NULL;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		conn_list = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	conn_count--;
	c->next = graveyard;
	graveyard = c;
}

void
conn_log_flush(void)
{
	size_t	 off = 0;
	ssize_t	 w;

	fflush(stderr);		/* lines log.c has pending come first */
	while (off < loglen) {
		w = write(STDERR_FILENO, logbuf + off, loglen - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			break;	/* nowhere to log to: drop, keep serving */
		off += (size_t)w;
	}
	loglen = 0;
}

void
conn_reap(void)
{
	struct conn	*c;

	while ((c = graveyard) != NULL) {
		graveyard = c->next;
		free(c);
	}
}

static const char *
status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default:  return "Error";
	}
}

void
conn_fail(struct conn *c, int status, const char *reason)
{
	const char	*verdict;
	char		 body[256];
	int		 n;

	if (c->state == ST_DEAD)
		return;
	verdict = status == 403 ? "deny" : status == 400 || status == 431 ?
	    "bad-request" : status == 408 ? "timeout" : status == 503 ?
	    "busy" : "upstream-error";
	relay_set_reason(c, verdict, reason);
	relay_close_upstream(c);
	if (c->job != NULL) {
		/* A lookup still queued gives its client's turn back. */
		resolver_cancel(c->job);
		c->job = NULL;
	}
	/* Once a tunnel is up or a response has started, the client can
	 * only be told by closing.  resp_sent counts the current request's
	 * response only (finish_exchange starts it again), so a refusal of
	 * a kept-alive connection's next request is answered like a first
	 * request's. */
	if (c->state == ST_TUNNEL || c->resp_sent > 0) {
		conn_free(c);
		return;
	}
	n = snprintf(body, sizeof(body), "vivarium-egress: %s\n", reason);
	/* Between requests the queue holds whole earlier responses, which
	 * go first; otherwise only this request's unsent start, dropped. */
	if (c->state != ST_HEAD)
		buf_reset(&c->dir[DIR_DOWN].q);
	if (buf_appendf(&c->dir[DIR_DOWN].q, "HTTP/1.1 %d %s\r\nContent-Type: "
	    "text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
	    status, status_text(status), n, body) == -1 ||
	    flush(c, DIR_DOWN) == -1) {
		conn_free(c);
		return;
	}
	c->state = ST_CLOSING;
	c->deadline = now_ms() + CLOSING_GRACE;
	relay_update_masks(c);
}

/* ------------------------------------------------------------ upstream */

static void
on_connected(struct conn *c)
{
	int	 one = 1;

	c->up_connected = 1;
	c->verdict = "allow";
	setsockopt(c->ev[SIDE_UPSTREAM].fd, IPPROTO_TCP, TCP_NODELAY, &one,
	    sizeof(one));
	if (c->connect_method) {
		static const char ok[] =
		    "HTTP/1.1 200 Connection established\r\n\r\n";

		snprintf(c->reason, sizeof(c->reason), "tunnel");
		c->state = ST_TUNNEL;
		c->deadline = 0;
		if (relay_put(c, DIR_DOWN, ok, sizeof(ok) - 1) == -1) {
			conn_free(c);
			return;
		}
		c->resp_sent = 0;	/* the 200 is ours, not the origin's */
	} else {
		snprintf(c->reason, sizeof(c->reason), "forwarded");
		c->state = ST_HTTP;
		c->deadline = 0;
	}
	c->last_io = now_ms();
	/* Bytes the client sent early (a TLS hello after CONNECT, or the
	 * request head and body) were queued: send them now. */
	if (flush(c, DIR_UP) == -1) {
		conn_fail(c, 502, "upstream write failed");
		return;
	}
	relay_update_masks(c);
}

/* Dials the next allowed address; the checked sockaddr, nothing else. */
void
relay_dial_next(struct conn *c, int lasterr)
{
	struct sockaddr_storage *ss;
	socklen_t	 len;
	int		 fd, err = lasterr;
	char		 why[160], a[INET6_ADDRSTRLEN];

	while (c->nexti < c->naddrs) {
		ss = &c->addrs[c->nexti++];
		sockaddr_str(ss, c->addr, sizeof(c->addr));
		len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		    sizeof(struct sockaddr_in);
		fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
		if (fd == -1) {
			err = errno;
			break;	/* out of descriptors: another address won't help */
		}
		if (connect(fd, (struct sockaddr *)ss, len) == 0 ||
		    errno == EINPROGRESS) {
			c->ev[SIDE_UPSTREAM].fd = fd;
			c->ev[SIDE_UPSTREAM].reg = 0;
			c->ev[SIDE_UPSTREAM].mask = 0;
			c->state = ST_CONNECT;
			if (errno != EINPROGRESS) {
				on_connected(c);
				return;
			}
			relay_update_masks(c);
			return;
		}
		err = errno;
		close(fd);
	}
	snprintf(why, sizeof(why), "cannot connect to %s port %u: %s",
	    sockaddr_str(&c->addrs[c->naddrs ? c->nexti - 1 : 0], a, sizeof(a)),
	    c->cur_port, strerror(err));
	conn_fail(c, 502, why);
}

static void
connect_done(struct conn *c, uint32_t events)
{
	int		 err = 0;
	socklen_t	 len = sizeof(err);

	/* Writable without an error or hangup is connected; only a failure
	 * needs SO_ERROR to say why. */
	if ((events & (EPOLLERR | EPOLLHUP)) == 0 && (events & EPOLLOUT)) {
		on_connected(c);
		return;
	}
	if (getsockopt(c->ev[SIDE_UPSTREAM].fd, SOL_SOCKET, SO_ERROR, &err,
	    &len) == -1)
		err = errno;
	else if (err == 0 && (events & (EPOLLERR | EPOLLHUP)))
		err = ECONNREFUSED;
	if (err == 0) {
		on_connected(c);
		return;
	}
	ev_close(&c->ev[SIDE_UPSTREAM]);
	relay_dial_next(c, err);
}

/* Keeps the addresses that pass the policy; refuses when none does. */
static void
use_addresses(struct conn *c, const struct addrinfo *res)
{
	const struct addrinfo *ai;
	struct sockaddr_storage ss;
	const char	*why, *first = NULL;
	char		 a[INET6_ADDRSTRLEN], fa[INET6_ADDRSTRLEN] = "";
	char		 msg[400];
	int		 i, dup;

	c->naddrs = c->nexti = 0;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(ss) ||
		    (ai->ai_family != AF_INET && ai->ai_family != AF_INET6))
			continue;
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		if (ss.ss_family == AF_INET)
			((struct sockaddr_in *)&ss)->sin_port = htons(c->cur_port);
		else
			((struct sockaddr_in6 *)&ss)->sin6_port =
			    htons(c->cur_port);
		if ((why = policy_classify(c->conf, &ss, c->cur_port)) != NULL) {
			if (first == NULL) {
				first = why;
				sockaddr_str(&ss, fa, sizeof(fa));
			}
			continue;
		}
		for (dup = 0, i = 0; i < c->naddrs; i++)
			if (memcmp(&c->addrs[i], &ss, sizeof(ss)) == 0)
				dup = 1;
		if (!dup && c->naddrs < EGRESS_MAX_ADDRS)
			c->addrs[c->naddrs++] = ss;
	}
	if (c->naddrs == 0) {
		if (first == NULL) {
			conn_fail(c, 502, "no usable address");
			return;
		}
		snprintf(c->addr, sizeof(c->addr), "%s", fa);
		if (strcmp(c->cur_host, fa) == 0)
			snprintf(msg, sizeof(msg), "%s is not allowed (%s)",
			    fa, first);
		else
			snprintf(msg, sizeof(msg), "%s resolves to %s (%s)",
			    c->cur_host, fa, first);
		conn_fail(c, 403, msg);
		return;
	}
	sockaddr_str(&c->addrs[0], a, sizeof(a));
	snprintf(c->addr, sizeof(c->addr), "%s", a);
	relay_dial_next(c, 0);
}

void
conn_resolved(struct resolve_job *j)
{
	struct conn	*c = j->conn;
	char		 msg[400];

	c->job = NULL;
	if (c->state != ST_RESOLVE)
		return;
	if (j->err != 0) {
		snprintf(msg, sizeof(msg), "cannot resolve %s: %s",
		    c->cur_host, gai_strerror(j->err));
		conn_fail(c, 502, msg);
		return;
	}
	use_addresses(c, j->res);
}

void
relay_begin_upstream(struct conn *c, const char *host, uint16_t port)
{
	struct addrinfo	 hints, *res = NULL;

	snprintf(c->cur_host, sizeof(c->cur_host), "%s", host);
	c->cur_port = port;
	c->state = ST_RESOLVE;
	c->deadline = now_ms() + (uint64_t)c->conf->connect_timeout * 1000;
	/* Literal addresses need no lookup; names go to the pool. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(host, NULL, &hints, &res) == 0) {
		use_addresses(c, res);
		freeaddrinfo(res);
		return;
	}
	if (resolver_submit(c, host, &c->job) == -1) {
		conn_fail(c, 502, "resolver unavailable");
		return;
	}
	relay_update_masks(c);
}

/* ------------------------------------------------------------ events */

/* The source of direction d failed: a client's reset is passed on as one
 * (relay_close_upstream), an upstream's failure is logged. */
static void
tunnel_error(struct conn *c, int d)
{
	if (d == DIR_UP)
		c->client_reset = errno == ECONNRESET;
	else
		relay_set_reason(c, c->verdict, "upstream connection failed");
	conn_free(c);
}

/*
 * Moves what the source of tunnel direction d has to its destination: by
 * splice once the direction is bulk, else through scratch.  Bytes for an
 * upstream that is gone are dropped; the end of the source is noted, and
 * tunnel_shutdowns passes it on.
 */
static void
tunnel_read(struct conn *c, int d)
{
	ssize_t	 n;
	int	 rc = 0;

	c->last_io = now_ms();
	if (dst_fd(c, d) >= 0 && use_splice(c, d))
		rc = splice_move(c, d);
	else if ((n = xrecv(src_fd(c, d), scratch, sizeof(scratch))) == -1)
		rc = errno == EAGAIN ? 0 : -1;
	else if (n == 0)
		rc = 1;
	else if (dst_fd(c, d) >= 0 &&
	    relay_put(c, d, scratch, (size_t)n) == -1) {
		conn_free(c);
		return;
	}
	if (rc == 1)
		c->dir[d].eof = 1;
	else if (rc == -1)
		tunnel_error(c, d);
}

static void
client_readable(struct conn *c)
{
	ssize_t	 n;
	size_t	 room;

	switch (c->state) {
	case ST_HEAD:
		room = c->in.max - c->in.len;
		if (room == 0) {
			conn_fail(c, 431, "request head too large");
			return;
		}
		if (room > sizeof(scratch))
			room = sizeof(scratch);
		if ((n = xrecv(c->ev[SIDE_CLIENT].fd, scratch, room)) == -1) {
			if (errno != EAGAIN)
				conn_free(c);
			return;
		}
		if (n == 0) {
			if (c->in.len > 0)
				relay_set_reason(c, c->verdict, "client closed mid-request");
			conn_free(c);
			return;
		}
		if (buf_append(&c->in, scratch, (size_t)n) == -1) {
			conn_fail(c, 431, "request head too large");
			return;
		}
		relay_http_parse(c);
		return;
	case ST_TUNNEL:
		tunnel_read(c, DIR_UP);
		return;
	case ST_HTTP:
		n = xrecv(c->ev[SIDE_CLIENT].fd, scratch, sizeof(scratch));
		if (n == -1) {
			if (errno != EAGAIN)
				conn_free(c);
			return;
		}
		c->last_io = now_ms();
		if (n == 0) {
			c->dir[DIR_UP].eof = 1;
			relay_set_reason(c, c->verdict, "client closed mid-request");
			conn_free(c);
			return;
		}
		relay_http_request(c, scratch, (size_t)n);
		return;
	case ST_RESOLVE:
	case ST_CONNECT:
		/* After CONNECT, before the tunnel: held for the upstream,
		 * never parsed (update_masks bounds how much). */
		if (!c->connect_method || c->dir[DIR_UP].q.len >= EARLY_MAX)
			return;
		room = EARLY_MAX - c->dir[DIR_UP].q.len;
		if (room > sizeof(scratch))
			room = sizeof(scratch);
		if ((n = xrecv(c->ev[SIDE_CLIENT].fd, scratch, room)) == -1) {
			if (errno != EAGAIN) {
				relay_set_reason(c, c->verdict, "client connection error");
				conn_free(c);
			}
			return;
		}
		if (n == 0) {
			c->dir[DIR_UP].eof = 1;	/* passed on once the tunnel is up */
			return;
		}
		if (buf_append(&c->dir[DIR_UP].q, scratch, (size_t)n) == -1) {
			conn_fail(c, 400, "too much data before the tunnel");
			return;
		}
		return;
	case ST_CLOSING:
		n = xrecv(c->ev[SIDE_CLIENT].fd, scratch, sizeof(scratch));
		if (n == 0 || (n == -1 && errno != EAGAIN))
			conn_free(c);
		return;
	default:
		return;
	}
}

static void
upstream_readable(struct conn *c)
{
	ssize_t	 n;

	if (c->state == ST_TUNNEL) {
		tunnel_read(c, DIR_DOWN);
		return;
	}
	if ((n = xrecv(c->ev[SIDE_UPSTREAM].fd, scratch,
	    sizeof(scratch))) == -1) {
		if (errno == EAGAIN)
			return;
		if (c->state == ST_HEAD) {
			/* A kept-alive upstream reset between requests: the
			 * client loses nothing but that upstream. */
			relay_close_upstream(c);
			return;
		}
		if (c->state == ST_HTTP && relay_http_retry(c, errno) == 0)
			return;
		if (c->state == ST_HTTP && c->resp_sent == 0)
			conn_fail(c, 502, "upstream connection failed");
		else {
			relay_set_reason(c, c->verdict, "upstream connection failed");
			conn_free(c);
		}
		return;
	}
	c->last_io = now_ms();
	switch (c->state) {
	case ST_HEAD:
		/* A kept-alive upstream closed or spoke out of turn. */
		relay_close_upstream(c);
		return;
	case ST_HTTP:
		relay_http_response(c, scratch, (size_t)n);
		return;
	default:
		return;
	}
}

/* Tunnel half-closes: pass each EOF on once the bytes before it are out. */
static void
tunnel_shutdowns(struct conn *c)
{
	int	 d;

	for (d = 0; d < 2; d++) {
		struct dir	*x = &c->dir[d];

		if (x->eof && x->q.len == 0 && x->pend == 0 && !x->shut &&
		    dst_fd(c, d) >= 0) {
			shutdown(dst_fd(c, d), SHUT_WR);
			x->shut = 1;
		}
	}
	if (c->dir[DIR_UP].shut && c->dir[DIR_DOWN].shut) {
		relay_set_reason(c, "allow", "tunnel closed");
		conn_free(c);
	}
}

/* The callback of both sides' evs. */
static void
conn_event(struct ev *ev, uint32_t events)
{
	struct conn	*c = ev->ptr;

	if (c->state == ST_DEAD)
		return;
	if (ev == &c->ev[SIDE_CLIENT]) {
		if (events & EPOLLERR) {
			c->client_reset = 1;
			relay_set_reason(c, c->verdict, "client connection error");
			conn_free(c);
			return;
		}
		if ((events & EPOLLOUT) && (flush(c, DIR_DOWN) == -1 ||
		    splice_flush(c, DIR_DOWN) == -1)) {
			conn_free(c);
			return;
		}
		/* A pipelined request waited for the response before it. */
		if ((events & EPOLLOUT) && c->state == ST_HEAD &&
		    c->dir[DIR_DOWN].q.len == 0 && c->in.len > 0) {
			relay_http_parse(c);
			if (c->state == ST_DEAD)
				return;
			events &= ~(uint32_t)EPOLLIN;	/* next turn, with its mask */
		}
		/* HUP: the client's FIN came and our side is shut too (or
		 * it reset); nothing more can pass, and level-triggered
		 * HUP would otherwise repeat forever. */
		if ((events & EPOLLHUP) && (c->dir[DIR_UP].eof ||
		    c->state == ST_RESOLVE || c->state == ST_CONNECT)) {
			conn_free(c);
			return;
		}
		if (events & (EPOLLIN | EPOLLHUP))
			client_readable(c);
		if (c->state == ST_CLOSING && c->dir[DIR_DOWN].q.len == 0 &&
		    !c->dir[DIR_DOWN].shut) {
			shutdown(c->ev[SIDE_CLIENT].fd, SHUT_WR);
			c->dir[DIR_DOWN].shut = 1;
		}
	} else {
		if (c->state == ST_CONNECT) {
			connect_done(c, events);
			return;
		}
		if ((events & EPOLLOUT) && (flush(c, DIR_UP) == -1 ||
		    splice_flush(c, DIR_UP) == -1)) {
			if (c->state == ST_HTTP &&
			    relay_http_retry(c, errno) == 0)
				return;
			if (c->state == ST_HTTP && c->resp_sent == 0)
				conn_fail(c, 502, "upstream write failed");
			else
				conn_free(c);
			return;
		}
		if ((events & EPOLLHUP) && c->dir[DIR_DOWN].eof &&
		    c->state == ST_TUNNEL) {
			ev_close(&c->ev[SIDE_UPSTREAM]);
			c->dir[DIR_UP].shut = 1;
		} else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			upstream_readable(c);
	}
	if (c->state == ST_DEAD)
		return;
	if (c->state == ST_TUNNEL)
		tunnel_shutdowns(c);
	if (c->state != ST_DEAD)
		relay_update_masks(c);
}

void
conn_tick(struct conn *c, uint64_t now)
{
	uint64_t	 idle = (uint64_t)c->conf->idle_timeout * 1000;

	switch (c->state) {
	case ST_HEAD:
		if (now < c->deadline)
			return;
		if (c->in.len == 0 && c->nreq > 0) {
			conn_free(c);	/* an idle kept-alive connection */
			return;
		}
		conn_fail(c, 408, "request head not received in time");
		return;
	case ST_RESOLVE:
	case ST_CONNECT:
		if (now >= c->deadline)
			conn_fail(c, 504, c->state == ST_RESOLVE ?
			    "timed out resolving the host" :
			    "timed out connecting to the host");
		return;
	case ST_TUNNEL:
	case ST_HTTP:
		if (now - c->last_io < idle)
			return;
		if (c->state == ST_HTTP && c->resp_sent == 0)
			conn_fail(c, 504, "upstream did not answer in time");
		else {
			relay_set_reason(c, c->verdict, "idle timeout");
			conn_free(c);
		}
		return;
	case ST_CLOSING:
		if (now >= c->deadline)
			conn_free(c);
		return;
	}
}
