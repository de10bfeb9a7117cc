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

enum {
	ST_HEAD, ST_RESOLVE, ST_CONNECT, ST_TUNNEL, ST_HTTP, ST_CLOSING,
	ST_DEAD,
};

#define QUEUE_MAX	(1024 * 1024)
#define RESP_HEAD_MAX	(64 * 1024)
#define CLOSING_GRACE	2000	/* ms to flush a reply and drain */
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
static _Thread_local struct http_req req;	/* the request being dispatched */
/* Connection log lines of this loop turn, written together. */
static _Thread_local char logbuf[32 * 1024];
static _Thread_local size_t loglen;

static void	try_parse(struct conn *);
static void	finish_exchange(struct conn *);

/* ------------------------------------------------------------ helpers */

static void
set_reason(struct conn *c, const char *verdict, const char *reason)
{
	c->verdict = verdict;
	snprintf(c->reason, sizeof(c->reason), "%s", reason);
}

static void
close_upstream(struct conn *c)
{
	struct linger	 l = { 1, 0 };

	/* A client that reset its connection gets its upstream reset too:
	 * the tunnel passes the abort on, and the proxy keeps no TIME_WAIT
	 * for a connection nobody is left to finish. */
	if (c->uev.fd >= 0 && c->client_reset && c->up_connected)
		(void)setsockopt(c->uev.fd, SOL_SOCKET, SO_LINGER, &l,
		    sizeof(l));
	if (c->uev.fd >= 0)
		ev_close(&c->uev);
	c->up_connected = 0;
	c->up_eof = 0;
	c->up_shut = 0;
	c->cur_host[0] = '\0';
	c->cur_port = 0;
	buf_release(&c->to_up);
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

/*
 * Sends to one side, queueing what does not fit.  Nothing is sent to an
 * upstream that is not connected yet, and nothing overtakes queued bytes.
 */
static int
put(struct conn *c, int up, const char *p, size_t n)
{
	struct buf	*q = up ? &c->to_up : &c->to_client;
	int		 fd = up ? c->uev.fd : c->cev.fd;
	ssize_t		 w;

	if (n == 0)
		return 0;
	if (q->len == 0 && fd >= 0 && (!up || c->up_connected)) {
		if ((w = xsend(fd, p, n)) == -1)
			return -1;
		if (up)
			c->bytes_up += (unsigned long long)w;
		else {
			c->bytes_down += (unsigned long long)w;
			c->resp_sent += w > 0;
		}
		p += w;
		n -= (size_t)w;
	}
	if (n > 0 && buf_append(q, p, n) == -1)
		return -1;
	return 0;
}

/* Writes queued bytes; 0, or -1 when the socket failed. */
static int
flush(struct conn *c, int up)
{
	struct buf	*q = up ? &c->to_up : &c->to_client;
	int		 fd = up ? c->uev.fd : c->cev.fd;
	ssize_t		 w;

	if (q->len == 0 || fd < 0)
		return 0;
	if ((w = xsend(fd, q->data, q->len)) == -1)
		return -1;
	if (up)
		c->bytes_up += (unsigned long long)w;
	else {
		c->bytes_down += (unsigned long long)w;
		c->resp_sent += w > 0;
	}
	buf_consume(q, (size_t)w);
	if (q->len == 0)
		buf_release(q);	/* idle connections keep no storage */
	return 0;
}

/* ------------------------------------------------------------ splice */

static void
close_pipes(struct conn *c)
{
	int	*p[2] = { c->pup, c->pdown };
	int	 i;

	for (i = 0; i < 2; i++) {
		if (p[i][0] >= 0) {
			close(p[i][0]);
			close(p[i][1]);
		}
		p[i][0] = p[i][1] = -1;
	}
	c->pend_up = c->pend_down = 0;
	c->pfull_up = c->pfull_down = 0;
}

/*
 * Decides whether a tunnel direction moves by splice.  Only a direction
 * that has carried a fair amount pays for the pipe, so idle and chatty
 * tunnels hold no extra descriptors.  Without descriptors to spare it just
 * keeps copying.
 */
static int
use_splice(struct conn *c, int up)
{
	int	*p = up ? c->pup : c->pdown;

	if (p[0] >= 0)
		return 1;
	if ((up ? c->bytes_up : c->bytes_down) < SPLICE_AFTER ||
	    (up ? c->to_up.len : c->to_client.len) > 0)
		return 0;
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) == -1) {
		p[0] = p[1] = -1;
		return 0;
	}
	/* A bigger pipe keeps more in flight between the two sockets. */
	(void)fcntl(p[1], F_SETPIPE_SZ, SPLICE_CHUNK);
	return 1;
}

/* Empties a pipe into its destination as far as it will take; 0 or -1. */
static int
splice_flush(struct conn *c, int up)
{
	int	*p = up ? c->pup : c->pdown;
	size_t	*pend = up ? &c->pend_up : &c->pend_down;
	int	 dst = up ? c->uev.fd : c->cev.fd;
	ssize_t	 w;

	while (*pend > 0) {
		w = splice(p[0], NULL, dst, NULL, *pend,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (w == -1) {
			if (errno == EAGAIN)
				return 0;
			if (errno == EINTR)
				continue;
			return -1;
		}
		*pend -= (size_t)w;
		*(up ? &c->pfull_up : &c->pfull_down) = 0;
		if (up)
			c->bytes_up += (unsigned long long)w;
		else
			c->bytes_down += (unsigned long long)w;
	}
	return 0;
}

/* Moves what the source has into the pipe and on.  Returns 1 at end of
 * stream, 0, or -1 on error. */
static int
splice_move(struct conn *c, int up)
{
	int	*p = up ? c->pup : c->pdown;
	size_t	*pend = up ? &c->pend_up : &c->pend_down;
	int	 src = up ? c->cev.fd : c->uev.fd;
	ssize_t	 n;

	do
		n = splice(src, NULL, p[1], NULL, SPLICE_CHUNK,
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
		if (*pend > 0)
			*(up ? &c->pfull_up : &c->pfull_down) = 1;
		return 0;
	}
	*pend += (size_t)n;
	return splice_flush(c, up);
}

static void
update_masks(struct conn *c)
{
	uint32_t	 cm = 0, um = 0;

	switch (c->state) {
	case ST_HEAD:
		/* The next request waits until the last response is out:
		 * a refusal then has the client side to itself. */
		if (c->to_client.len == 0)
			cm = EPOLLIN;
		um = EPOLLIN;	/* a kept upstream that speaks is dropped */
		break;
	case ST_RESOLVE:
	case ST_CONNECT:
		/* A CONNECT client's early bytes are read and held (a bounded
		 * amount); keeping its mask as it was saves two epoll_ctl
		 * calls per tunnel. */
		if (c->connect_method && !c->client_eof &&
		    c->to_up.len < EARLY_MAX)
			cm = EPOLLIN;
		if (c->state == ST_CONNECT)
			um = EPOLLOUT;
		break;
	case ST_TUNNEL:
		/* With a pipe, keep reading while it has room, so both
		 * sockets stay busy; without one, while nothing is queued. */
		if (!c->client_eof && c->to_up.len == 0 &&
		    c->pend_up < SPLICE_ROOM && !c->pfull_up)
			cm |= EPOLLIN;
		if (!c->up_eof && c->to_client.len == 0 &&
		    c->pend_down < SPLICE_ROOM && !c->pfull_down)
			um |= EPOLLIN;
		if (c->pend_down > 0)
			cm |= EPOLLOUT;
		if (c->pend_up > 0)
			um |= EPOLLOUT;
		break;
	case ST_HTTP:
		if (!c->req_done && !c->client_eof && c->to_up.len == 0)
			cm |= EPOLLIN;
		if (!c->resp_done && !c->up_eof && c->to_client.len == 0)
			um |= EPOLLIN;
		break;
	case ST_CLOSING:
		if (c->to_client.len == 0)
			cm = EPOLLIN;
		break;
	}
	if (c->to_client.len > 0)
		cm |= EPOLLOUT;
	if (c->to_up.len > 0 && c->up_connected)
		um |= EPOLLOUT;
	ev_set(&c->cev, cm);
	if (c->uev.fd >= 0)
		ev_set(&c->uev, um);
}

/* ------------------------------------------------------------ life cycle */

struct conn *
conn_new(const struct egress_conf *conf, int fd,
    const struct sockaddr_storage *peer)
{
	struct conn	*c;
	char		 a[INET6_ADDRSTRLEN];
	uint16_t	 port;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->conf = conf;
	c->cev.kind = EV_CLIENT;
	c->cev.fd = fd;
	c->cev.ptr = c;
	c->uev.kind = EV_UPSTREAM;
	c->uev.fd = -1;
	c->uev.ptr = c;
	c->pup[0] = c->pup[1] = c->pdown[0] = c->pdown[1] = -1;
	buf_init(&c->in, (size_t)conf->max_header_bytes);
	buf_init(&c->uin, RESP_HEAD_MAX);
	buf_init(&c->to_up, QUEUE_MAX);
	buf_init(&c->to_client, QUEUE_MAX);
	buf_init(&c->resend, QUEUE_MAX);
	port = peer->ss_family == AF_INET6 ?
	    ntohs(((const struct sockaddr_in6 *)peer)->sin6_port) :
	    ntohs(((const struct sockaddr_in *)peer)->sin_port);
	sockaddr_str(peer, a, sizeof(a));
	snprintf(c->peer, sizeof(c->peer), "%s", a);
	snprintf(c->client, sizeof(c->client),
	    peer->ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, port);
	snprintf(c->target, sizeof(c->target), "-");
	snprintf(c->addr, sizeof(c->addr), "-");
	set_reason(c, "none", "no request");
	c->started = c->last_io = now_ms();
	c->state = ST_HEAD;
	c->deadline = c->started + (uint64_t)conf->header_timeout * 1000;

	c->next = conn_list;
	if (conn_list != NULL)
		conn_list->prev = c;
	conn_list = c;
	conn_count++;
	update_masks(c);
	return c;
}

/* Closes the sockets now; the memory goes at the end of the loop turn, as
 * other events of the same epoll batch may still point at it. */
void
conn_free(struct conn *c)
{
	char		 line[1024], retries[32] = "";
	int		 n;

	if (c->state == ST_DEAD)
		return;
	/* Only the rare connection that retried a request says so: every
	 * other line keeps its usual fields. */
	if (c->retries > 0)
		snprintf(retries, sizeof(retries), " retries=%d", c->retries);
	n = snprintf(line, sizeof(line), "vivarium-egress: client=%s "
	    "target=%s addr=%s verdict=%s reason=\"%s\" requests=%d up=%llu "
	    "down=%llu ms=%llu%s\n", c->client, c->target, c->addr, c->verdict,
	    c->reason, c->nreq, c->bytes_up, c->bytes_down,
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
	close_upstream(c);
	close_pipes(c);
	ev_close(&c->cev);
	buf_release(&c->in);
	buf_release(&c->to_client);
	buf_release(&c->resend);
	if (c->cc != NULL)
		clientcount_release(c->cc);
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
	set_reason(c, verdict, reason);
	close_upstream(c);
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
		buf_reset(&c->to_client);
	if (buf_appendf(&c->to_client, "HTTP/1.1 %d %s\r\nContent-Type: "
	    "text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
	    status, status_text(status), n, body) == -1 || flush(c, 0) == -1) {
		conn_free(c);
		return;
	}
	c->state = ST_CLOSING;
	c->deadline = now_ms() + CLOSING_GRACE;
	update_masks(c);
}

/* ------------------------------------------------------------ upstream */

static void
on_connected(struct conn *c)
{
	int	 one = 1;

	c->up_connected = 1;
	c->verdict = "allow";
	setsockopt(c->uev.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->connect_method) {
		static const char ok[] =
		    "HTTP/1.1 200 Connection established\r\n\r\n";

		snprintf(c->reason, sizeof(c->reason), "tunnel");
		c->state = ST_TUNNEL;
		c->deadline = 0;
		if (put(c, 0, ok, sizeof(ok) - 1) == -1) {
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
	if (flush(c, 1) == -1) {
		conn_fail(c, 502, "upstream write failed");
		return;
	}
	update_masks(c);
}

/* Dials the next allowed address; the checked sockaddr, nothing else. */
static void
dial_next(struct conn *c, int lasterr)
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
			c->uev.fd = fd;
			c->uev.reg = 0;
			c->uev.mask = 0;
			c->state = ST_CONNECT;
			if (errno != EINPROGRESS) {
				on_connected(c);
				return;
			}
			update_masks(c);
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
	if (getsockopt(c->uev.fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	else if (err == 0 && (events & (EPOLLERR | EPOLLHUP)))
		err = ECONNREFUSED;
	if (err == 0) {
		on_connected(c);
		return;
	}
	ev_close(&c->uev);
	dial_next(c, err);
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
	dial_next(c, 0);
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

static void
begin_upstream(struct conn *c, const char *host, uint16_t port)
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
	update_masks(c);
}

/*
 * A kept-alive upstream may close just as a request reaches it (its idle
 * timer fired while the request was on its way), and a client can't tell
 * that from a failure of the request itself.  Such a request goes once
 * more, on a fresh connection, when try_parse kept it in resend: it was
 * sent on a reused upstream, it is safe to send twice, and it is held
 * whole.  The fresh connection goes to the address that served the last
 * exchange (then the rest of the same list), all of them checked by the
 * policy when the name was resolved: nothing is resolved again, nothing
 * unchecked is dialled.  err is 0 for an EOF, else the errno of the failed
 * read or write.  Returns 0 when the request is on its way again, -1 when
 * the caller must fail as before.
 */
static int
retry_stale(struct conn *c, int err)
{
	char		 host[sizeof(c->cur_host)];
	uint16_t	 port = c->cur_port;

	if (c->resend.len == 0 || c->nexti == 0 ||
	    (err != 0 && err != EPIPE && err != ECONNRESET))
		return -1;
	memcpy(host, c->cur_host, sizeof(host));
	close_upstream(c);
	memcpy(c->cur_host, host, sizeof(host));
	c->cur_port = port;
	/* The request moves to the new upstream's queue; resend is left
	 * empty, so a second failure is final. */
	c->to_up = c->resend;
	buf_init(&c->resend, QUEUE_MAX);
	c->retries++;
	c->nexti--;
	c->deadline = now_ms() + (uint64_t)c->conf->connect_timeout * 1000;
	dial_next(c, 0);
	return 0;
}

/*
 * Methods whose request the proxy sends twice: GET, HEAD and OPTIONS, safe
 * (RFC 9110 9.2.1) and so idempotent (9.2.2); try_parse adds "without a
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

static void
try_parse(struct conn *c)
{
	struct buf	 head = BUF_INIT(QUEUE_MAX);
	char		 msg[96];
	size_t		 rest;
	long		 k;
	int		 rc, reuse, sent, err;

	if (c->to_client.len > 0)
		return;	/* conn_event parses once the last response is out */
	rc = http_parse_request(c->in.data ? c->in.data : "", c->in.len,
	    (size_t)c->conf->max_header_bytes, &req);
	if (rc == HTTP_NEED_MORE)
		return;
	if (rc == HTTP_ERROR) {
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
		close_upstream(c);
		/* Early bytes are held for the tunnel, never parsed. */
		if (buf_append(&c->to_up, c->in.data + req.head_len, rest) == -1) {
			conn_fail(c, 400, "too much data before the tunnel");
			return;
		}
		buf_release(&c->in);
		begin_upstream(c, req.host, req.port);
		return;
	}

	/* Plain HTTP: the same host and port keep their upstream, any other
	 * target is checked from scratch and dialled anew. */
	reuse = c->uev.fd >= 0 && c->up_connected && c->cur_port == req.port &&
	    strcmp(c->cur_host, req.host) == 0;
	if (!reuse)
		close_upstream(c);
	if (http_rewrite_request(c->in.data, &req, &head) == -1) {
		buf_release(&head);
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
	sent = put(c, 1, head.data, head.len);
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
		update_masks(c);
		return;
	}
	begin_upstream(c, req.host, req.port);
}

/* Both halves of an exchange are over: close, or wait for the next one. */
static void
finish_exchange(struct conn *c)
{
	if (c->want_close) {
		close_upstream(c);
		c->state = ST_CLOSING;
		c->deadline = now_ms() + CLOSING_GRACE;
		update_masks(c);
		return;
	}
	c->state = ST_HEAD;
	c->resp_sent = 0;	/* the next request's response has not begun */
	c->deadline = now_ms() + (uint64_t)c->conf->header_timeout * 1000;
	update_masks(c);
	if (c->in.len > 0)
		try_parse(c);
}

/* Response bytes after the head. */
static void
feed_response(struct conn *c, const char *p, size_t n)
{
	long	 k;

	if ((k = body_feed(&c->respbody, p, n)) < 0) {
		set_reason(c, "allow", "malformed response body");
		conn_free(c);
		return;
	}
	if (put(c, 0, p, (size_t)k) == -1) {
		set_reason(c, "allow", "client write failed");
		conn_free(c);
		return;
	}
	if ((size_t)k < n) {
		/* More than the response framed: this upstream is confused. */
		c->want_close = 1;
		close_upstream(c);
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
send_head(struct conn *c, const struct http_resp *resp, int close)
{
	/* The head was at most RESP_HEAD_MAX and only loses fields, but for
	 * the one Connection line the proxy may add. */
	struct buf	 out = BUF_INIT(RESP_HEAD_MAX + 64);

	if (http_rewrite_response(c->uin.data, resp, close, &out) == -1) {
		buf_release(&out);
		conn_fail(c, 502, "malformed response from upstream");
		return -1;
	}
	if (put(c, 0, out.data, out.len) == -1) {
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
	struct http_resp resp;
	struct body	 probe;
	long		 k;
	int		 rc;

	for (;;) {
		rc = http_parse_response(c->uin.data ? c->uin.data : "",
		    c->uin.len, RESP_HEAD_MAX, &resp);
		if (rc == HTTP_NEED_MORE)
			return;
		if (rc == HTTP_ERROR || resp.status == 101) {
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
			close_upstream(c);
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

/* ------------------------------------------------------------ events */

static void
client_readable(struct conn *c)
{
	ssize_t	 n;
	size_t	 room;
	long	 k;

	switch (c->state) {
	case ST_HEAD:
		room = c->in.max - c->in.len;
		if (room == 0) {
			conn_fail(c, 431, "request head too large");
			return;
		}
		if (room > sizeof(scratch))
			room = sizeof(scratch);
		if ((n = xrecv(c->cev.fd, scratch, room)) == -1) {
			if (errno != EAGAIN)
				conn_free(c);
			return;
		}
		if (n == 0) {
			if (c->in.len > 0)
				set_reason(c, c->verdict, "client closed mid-request");
			conn_free(c);
			return;
		}
		if (buf_append(&c->in, scratch, (size_t)n) == -1) {
			conn_fail(c, 431, "request head too large");
			return;
		}
		try_parse(c);
		return;
	case ST_TUNNEL:
		c->last_io = now_ms();
		if (c->uev.fd >= 0 && use_splice(c, 1)) {
			int rc = splice_move(c, 1);

			if (rc == -1) {
				c->client_reset = errno == ECONNRESET;
				conn_free(c);
			}
			else if (rc == 1)
				c->client_eof = 1;
			return;
		}
		if ((n = xrecv(c->cev.fd, scratch, sizeof(scratch))) == -1) {
			if (errno != EAGAIN) {
				c->client_reset = errno == ECONNRESET;
				conn_free(c);
			}
			return;
		}
		if (n == 0) {
			c->client_eof = 1;
			break;
		}
		if (c->uev.fd < 0)
			break;	/* the upstream is gone: nothing to deliver to */
		if (put(c, 1, scratch, (size_t)n) == -1) {
			conn_free(c);
			return;
		}
		break;
	case ST_HTTP:
		if ((n = xrecv(c->cev.fd, scratch, sizeof(scratch))) == -1) {
			if (errno != EAGAIN)
				conn_free(c);
			return;
		}
		c->last_io = now_ms();
		if (n == 0) {
			c->client_eof = 1;
			set_reason(c, c->verdict, "client closed mid-request");
			conn_free(c);
			return;
		}
		if ((k = body_feed(&c->reqbody, scratch, (size_t)n)) < 0) {
			conn_fail(c, 400, "malformed chunked body");
			return;
		}
		if (put(c, 1, scratch, (size_t)k) == -1 ||
		    buf_append(&c->in, scratch + k, (size_t)(n - k)) == -1) {
			conn_free(c);
			return;
		}
		if (c->reqbody.done) {
			c->req_done = 1;
			if (c->resp_done)
				finish_exchange(c);
		}
		return;
	case ST_RESOLVE:
	case ST_CONNECT:
		/* After CONNECT, before the tunnel: held for the upstream,
		 * never parsed (update_masks bounds how much). */
		if (!c->connect_method || c->to_up.len >= EARLY_MAX)
			return;
		room = EARLY_MAX - c->to_up.len;
		if (room > sizeof(scratch))
			room = sizeof(scratch);
		if ((n = xrecv(c->cev.fd, scratch, room)) == -1) {
			if (errno != EAGAIN) {
				set_reason(c, c->verdict, "client connection error");
				conn_free(c);
			}
			return;
		}
		if (n == 0) {
			c->client_eof = 1;	/* passed on once the tunnel is up */
			return;
		}
		if (buf_append(&c->to_up, scratch, (size_t)n) == -1) {
			conn_fail(c, 400, "too much data before the tunnel");
			return;
		}
		return;
	case ST_CLOSING:
		n = xrecv(c->cev.fd, scratch, sizeof(scratch));
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
	int	 rc;

	if (c->state == ST_TUNNEL && use_splice(c, 0)) {
		c->last_io = now_ms();
		if ((rc = splice_move(c, 0)) == -1)
			conn_free(c);
		else if (rc == 1)
			c->up_eof = 1;
		return;
	}
	if ((n = xrecv(c->uev.fd, scratch, sizeof(scratch))) == -1) {
		if (errno == EAGAIN)
			return;
		if (c->state == ST_HEAD) {
			/* A kept-alive upstream reset between requests: the
			 * client loses nothing but that upstream. */
			close_upstream(c);
			return;
		}
		if (c->state == ST_HTTP && retry_stale(c, errno) == 0)
			return;
		if (c->state == ST_HTTP && c->resp_sent == 0)
			conn_fail(c, 502, "upstream connection failed");
		else {
			set_reason(c, c->verdict, "upstream connection failed");
			conn_free(c);
		}
		return;
	}
	c->last_io = now_ms();
	switch (c->state) {
	case ST_HEAD:
		/* A kept-alive upstream closed or spoke out of turn. */
		close_upstream(c);
		return;
	case ST_TUNNEL:
		if (n == 0) {
			c->up_eof = 1;
			return;
		}
		if (put(c, 0, scratch, (size_t)n) == -1)
			conn_free(c);
		return;
	case ST_HTTP:
		if (n == 0) {
			c->up_eof = 1;
			if (c->resp_head_done && c->respbody.mode == BODY_EOF) {
				c->resp_done = 1;
				c->want_close = 1;
				finish_exchange(c);
			} else if (retry_stale(c, 0) == 0)
				return;
			else if (c->resp_sent == 0)
				conn_fail(c, 502,
				    "upstream closed without a complete response");
			else {
				set_reason(c, c->verdict, "upstream closed early");
				conn_free(c);
			}
			return;
		}
		/* The response has begun: the request is not sent again. */
		buf_release(&c->resend);
		if (c->resp_head_done) {
			feed_response(c, scratch, (size_t)n);
			return;
		}
		if (buf_append(&c->uin, scratch, (size_t)n) == -1) {
			conn_fail(c, 502, "response head too large");
			return;
		}
		response_head(c);
		return;
	default:
		return;
	}
}

/* Tunnel half-closes: pass each EOF on once the bytes before it are out. */
static void
tunnel_shutdowns(struct conn *c)
{
	if (c->client_eof && c->to_up.len == 0 && c->pend_up == 0 &&
	    !c->up_shut && c->uev.fd >= 0) {
		shutdown(c->uev.fd, SHUT_WR);
		c->up_shut = 1;
	}
	if (c->up_eof && c->to_client.len == 0 && c->pend_down == 0 &&
	    !c->client_shut) {
		shutdown(c->cev.fd, SHUT_WR);
		c->client_shut = 1;
	}
	if (c->up_shut && c->client_shut) {
		set_reason(c, "allow", "tunnel closed");
		conn_free(c);
	}
}

void
conn_event(struct conn *c, struct ev *ev, uint32_t events)
{
	if (c->state == ST_DEAD)
		return;
	if (ev == &c->cev) {
		if (events & EPOLLERR) {
			c->client_reset = 1;
			set_reason(c, c->verdict, "client connection error");
			conn_free(c);
			return;
		}
		if ((events & EPOLLOUT) && (flush(c, 0) == -1 ||
		    splice_flush(c, 0) == -1)) {
			conn_free(c);
			return;
		}
		/* A pipelined request waited for the response before it. */
		if ((events & EPOLLOUT) && c->state == ST_HEAD &&
		    c->to_client.len == 0 && c->in.len > 0) {
			try_parse(c);
			if (c->state == ST_DEAD)
				return;
			events &= ~(uint32_t)EPOLLIN;	/* next turn, with its mask */
		}
		/* HUP: the client's FIN came and our side is shut too (or
		 * it reset); nothing more can pass, and level-triggered
		 * HUP would otherwise repeat forever. */
		if ((events & EPOLLHUP) && (c->client_eof ||
		    c->state == ST_RESOLVE || c->state == ST_CONNECT)) {
			conn_free(c);
			return;
		}
		if (events & (EPOLLIN | EPOLLHUP))
			client_readable(c);
		if (c->state == ST_CLOSING && c->to_client.len == 0 &&
		    !c->client_shut) {
			shutdown(c->cev.fd, SHUT_WR);
			c->client_shut = 1;
		}
	} else {
		if (c->state == ST_CONNECT) {
			connect_done(c, events);
			return;
		}
		if ((events & EPOLLOUT) && (flush(c, 1) == -1 ||
		    splice_flush(c, 1) == -1)) {
			if (c->state == ST_HTTP && retry_stale(c, errno) == 0)
				return;
			if (c->state == ST_HTTP && c->resp_sent == 0)
				conn_fail(c, 502, "upstream write failed");
			else
				conn_free(c);
			return;
		}
		if ((events & EPOLLHUP) && c->up_eof && c->state == ST_TUNNEL) {
			ev_close(&c->uev);
			c->up_shut = 1;
		} else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			upstream_readable(c);
	}
	if (c->state == ST_DEAD)
		return;
	if (c->state == ST_TUNNEL)
		tunnel_shutdowns(c);
	if (c->state != ST_DEAD)
		update_masks(c);
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
			set_reason(c, c->verdict, "idle timeout");
			conn_free(c);
		}
		return;
	case ST_CLOSING:
		if (now >= c->deadline)
			conn_free(c);
		return;
	}
}
