/*
 * forward.c: a minimal HTTP/1.1 client for the agent: its unix socket on
 * this host (Podman), or host:port with the sandbox's secret (a cluster's
 * Pods, where a socket does not cross the nodes).
 *
 * Connections are kept alive and reused (the caller keeps idle ones per
 * sandbox), which spares a connect and a new agent thread per request.  The
 * body is handed on piece by piece as it arrives, so an SSE stream reaches
 * the client event by event.
 *
 * Whatever answers on the socket is untrusted: code in the sandbox can
 * replace the agent.  So its reply is read by the same strict parser as
 * the egress proxy's (common/http1.c), and anything that parser refuses, or
 * that could be framed two ways, is refused here: the caller answers 502.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "buf.h"
#include "fdpass.h"
#include "http1.h"
#include "proof.h"
#include "supervisor.h"
#include "banned.h"

#define HEAD_MAX	16384	/* of a request head we send */
/* A Pod that is gone may leave its address silent, not refused. */
#define TCP_CONNECT_MS	5000
/* The agent answers a challenge at once, whatever it is running. */
#define PROOF_MS	10000

static int
wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd	 p = { .fd = fd, .events = ev };
	int		 r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r == -1 && errno == EINTR);
	if (r == 0)
		errno = ETIMEDOUT;
	return r > 0 ? 0 : -1;
}

/*
 * Waits for the agent's answer, and for the client's closing: a client
 * that went away (LibreChat's request aborted) must not leave a run going
 * in the sandbox for nobody, so the wait ends with ECONNRESET and the
 * caller closes the agent connection, which the agent notices.
 */
static int
wait_agent(struct agent_conn *c)
{
	struct pollfd	 p[2];
	int		 r, n = 1;

	p[0].fd = c->fd;
	p[0].events = POLLIN;
	p[0].revents = 0;
	if (c->client_fd != -1) {
		p[1].fd = c->client_fd;
		p[1].events = POLLRDHUP;	/* a pipelined byte is not one */
		p[1].revents = 0;
		n = 2;
	}
	do
		r = poll(p, (nfds_t)n, c->timeout_ms);
	while (r == -1 && errno == EINTR);
	if (r == 0)
		errno = ETIMEDOUT;
	if (r <= 0)
		return -1;
	if (n == 2 && p[1].revents != 0 && p[0].revents == 0) {
		c->client_gone = 1;
		errno = ECONNRESET;
		return -1;
	}
	return 0;
}

static int
write_all(int fd, const char *p, size_t n, int timeout_ms)
{
	ssize_t	 w;

	while (n > 0) {
		w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w == -1 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_fd(fd, POLLOUT, timeout_ms) == -1)
				return -1;
			continue;
		}
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One recv of at most n bytes, waiting as wait_agent does; 0 at EOF, -1. */
static ssize_t
recv_wait(struct agent_conn *c, char *dst, size_t n)
{
	ssize_t	 r;

	for (;;) {
		r = recv(c->fd, dst, n, MSG_DONTWAIT);
		if (r >= 0)
			return r;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -1;
		if (wait_agent(c) == -1)
			return -1;
	}
}

/* Reads more into rbuf; returns bytes read, 0 at EOF, -1 on error. */
static ssize_t
fill(struct agent_conn *c)
{
	ssize_t	 r;

	if (c->rpos > 0 && c->rpos == c->rlen)
		c->rpos = c->rlen = 0;
	if (c->rpos > 0 && c->rlen == sizeof(c->rbuf)) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	if (c->rlen == sizeof(c->rbuf)) {
		errno = EMSGSIZE;
		return -1;
	}
	r = recv_wait(c, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen);
	if (r > 0)
		c->rlen += (size_t)r;
	return r;
}

/*
 * The agent's first byte, when the request let it hand over a file: the
 * mark with its descriptor goes to c->passed_fd; any other byte is the
 * start of its HTTP answer and stays in rbuf for parse_head.
 */
static int
take_fd(struct agent_conn *c, char *err, size_t errlen)
{
	char	 b;
	int	 fd, r;

	while ((r = fdpass_recv(c->fd, &b, &fd)) == -1 && errno == EAGAIN)
		if (wait_agent(c) == -1)
			break;
	if (r == 1 && fd != -1) {
		c->passed = 1;
		c->passed_fd = fd;
		return 0;
	}
	if (r == 1) {
		c->rbuf[0] = b;
		c->rpos = 0;
		c->rlen = 1;
		return 0;
	}
	if (r == 0)
		snprintf(err, errlen, "the sandbox closed the connection "
		    "without answering");
	else if (errno == EBADMSG)
		snprintf(err, errlen, "the sandbox sent a malformed reply: "
		    "descriptors where none belong");
	else
		snprintf(err, errlen, "the sandbox did not answer (%s)",
		    strerror(errno));
	return -1;
}

/* Copies a field's value (truncated to len) into dst. */
static void
copy_value(char *dst, size_t len, const char *buf, struct h1_span v)
{
	snprintf(dst, len, "%.*s", (int)v.len, buf + v.off);
}

/*
 * Reads and parses the reply head.  The head has to fit in rbuf, which
 * bounds it; the bytes after it (the body's start) stay in rbuf.
 */
static int
parse_head(struct agent_conn *c, char *err, size_t errlen)
{
	static const struct {
		const char	*name;
		size_t		 off, len;
	} copied[] = {
#define F(name, m) { name, offsetof(struct agent_head, m), \
	    sizeof(((struct agent_head *)0)->m) }
		F("Content-Type", content_type),
		F("Mcp-Session-Id", session_id),
		F("MCP-Protocol-Version", protocol_version),
		F("Cache-Control", cache_control),
		F(PROOF_ANSWER, proof),
#undef F
	};
	static _Thread_local struct h1_resp resp;	/* 2 KB of spans */
	struct agent_head	*h = &c->head;
	struct h1_span	 v;
	ssize_t			 got;
	size_t			 i;
	int			 rc;

	/* The head is parsed from the start of rbuf. */
	if (c->rpos > 0) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	while ((rc = h1_parse_response(c->rbuf, c->rlen, sizeof(c->rbuf),
	    &resp)) == H1_NEED_MORE) {
		if ((got = fill(c)) > 0)
			continue;
		if (c->rlen == 0)
			snprintf(err, errlen, "the sandbox closed the connection "
			    "without answering (%s)", got == 0 ?
			    "end of file" : strerror(errno));
		else
			snprintf(err, errlen, "the sandbox's reply ended inside "
			    "its headers (%s)", got == 0 ? "end of file" :
			    strerror(errno));
		return -1;
	}
	if (rc == H1_ERROR || resp.status > 599 || resp.ambiguous != NULL) {
		snprintf(err, errlen, "the sandbox sent a malformed reply: %s",
		    rc == H1_ERROR ? resp.reason : resp.status > 599 ?
		    "malformed status line" : resp.ambiguous);
		return -1;
	}
	/*
	 * Our secret refused: a server-side fault (the Pod has another
	 * sandbox's secret, or the master key changed), never the client's.
	 * Relayed as it is, LibreChat would read the 401 as "sign in".
	 */
	if (c->secret_sent && resp.status == 401) {
		snprintf(err, errlen, "the sandbox's agent refused the "
		    "supervisor's secret (401): the sandbox was made with "
		    "another secret; remove it so that it is made again");
		c->stale = 1;
		return -1;
	}
	h->status = resp.status;
	h->chunked = resp.chunked;
	h->content_length = resp.content_length;
	for (i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
		rc = h1_field_find(c->rbuf, resp.fields, resp.nfields,
		    copied[i].name, &v);
		if (rc > 1) {
			snprintf(err, errlen, "the sandbox sent a malformed "
			    "reply: duplicate %s", copied[i].name);
			return -1;
		}
		if (rc == 1)
			copy_value((char *)h + copied[i].off, copied[i].len,
			    c->rbuf, v);
	}
	c->rpos = resp.head_len;
	c->keepalive = !resp.close;
	if (h->status == 204 || h->status == 304 || h->status < 200)
		body_init(&c->body, BODY_NONE, 0);
	else if (h->chunked)
		body_init(&c->body, BODY_CHUNKED, 0);
	else if (h->content_length >= 0)
		body_init(&c->body, BODY_LENGTH, h->content_length);
	else {
		body_init(&c->body, BODY_EOF, 0);
		c->keepalive = 0;	/* the body ends at EOF */
	}
	c->done = c->body.done;
	return 0;
}

/*
 * The socket lives in a directory the sandbox can write to, so code in the
 * sandbox can swap agent.sock for a symlink to any socket on the host (say,
 * another user's agent).  connect() follows symlinks, so the file is opened
 * first without following one, checked to be a socket, and connected
 * through /proc/self/fd: the very inode that was checked.
 */
static int
unix_connect(const char *path, int *connect_failed)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	int			 fd = -1, pfd, e;

	if ((pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			*connect_failed = 1;
		return -1;
	}
	if (fstat(pfd, &st) == -1)
		goto fail;
	if (!S_ISSOCK(st.st_mode)) {
		errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTSOCK;
		goto fail;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d", pfd);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		goto fail;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		if (errno == ECONNREFUSED || errno == ENOENT)
			*connect_failed = 1;
		goto fail;
	}
	close(pfd);
	return fd;
fail:
	e = errno;
	if (fd != -1)
		close(fd);
	close(pfd);
	errno = e;
	return -1;
}

void
agent_addr_unix(struct agent_addr *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->kind = AGENT_UNIX;
	snprintf(a->path, sizeof(a->path), "%s", path);
}

void
agent_addr_tcp(struct agent_addr *a, const char *host, int port,
    const char *secret)
{
	memset(a, 0, sizeof(*a));
	a->kind = AGENT_TCP;
	snprintf(a->host, sizeof(a->host), "%s", host);
	a->port = port;
	snprintf(a->secret, sizeof(a->secret), "%s", secret);
}

const char *
agent_addr_str(const struct agent_addr *a, char *dst, size_t len)
{
	/* Fits: a name of sizeof(host) and a port, or a path of ours. */
	if (a->kind == AGENT_TCP && strchr(a->host, ':') != NULL &&
	    a->host[0] != '[')
		(void)snprintf(dst, len, "[%s]:%d", a->host, a->port);
	else if (a->kind == AGENT_TCP)
		(void)snprintf(dst, len, "%s:%d", a->host, a->port);
	else
		(void)snprintf(dst, len, "%s", a->path);
	return dst;
}

/*
 * The secret goes into a header line: anything but printable ASCII
 * without spaces could end that line and start another.  (The backend
 * derives hex digits; this is the check that survives a bug there.)
 */
static int
secret_sendable(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s > '~')
			return 0;
	return 1;
}

/*
 * TCP to an IPv4 or IPv6 literal (a Pod's IP; "[v6]" taken too), never a
 * name: resolving here would put DNS between the backend's answer and the
 * connection.  Non-blocking connect bounded by TCP_CONNECT_MS (or the
 * request's timeout, when shorter).  Refused, unreachable or silent counts
 * as nobody listening, so the caller asks the backend again.
 */
static int
tcp_connect(const struct agent_addr *a, int timeout_ms, int *connect_failed,
    char *err, size_t errlen)
{
	struct addrinfo	 hints, *res = NULL;
	char		 host[sizeof(a->host)], port[16], where[AGENT_ADDR_STRLEN];
	socklen_t	 sl = sizeof(int);
	size_t		 hl = strlen(a->host);
	int		 fd = -1, rc, one = 1, soerr = 0, wait_ms;

	agent_addr_str(a, where, sizeof(where));
	if (a->host[0] == '[' && hl > 2 && a->host[hl - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)(hl - 2), a->host + 1);
	else
		snprintf(host, sizeof(host), "%s", a->host);
	if (a->port < 1 || a->port > 65535) {
		snprintf(err, errlen, "cannot connect to the sandbox's agent at "
		    "%s: not a TCP port", where);
		errno = EINVAL;
		return -1;
	}
	if (!secret_sendable(a->secret)) {
		snprintf(err, errlen, "cannot connect to the sandbox's agent at "
		    "%s: %s", where, a->secret[0] == '\0' ? "no secret to send "
		    "(a TCP agent is never reached without one)" : "the secret "
		    "holds a character a header may not");
		errno = EINVAL;
		return -1;
	}
	snprintf(port, sizeof(port), "%d", a->port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "cannot connect to the sandbox's agent at "
		    "%s: not an IPv4 or IPv6 address (%s)", where,
		    gai_strerror(rc));
		errno = EINVAL;
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (fd == -1)
		goto fail;
	/* Requests are small and answered at once: no Nagle delay. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, res->ai_addr, res->ai_addrlen) == -1) {
		if (errno != EINPROGRESS)
			goto fail;
		wait_ms = timeout_ms >= 0 && timeout_ms < TCP_CONNECT_MS ?
		    timeout_ms : TCP_CONNECT_MS;
		if (wait_fd(fd, POLLOUT, wait_ms) == -1)
			goto fail;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1)
			goto fail;
		if (soerr != 0) {
			errno = soerr;
			goto fail;
		}
	}
	freeaddrinfo(res);
	return fd;
fail:
	rc = errno;
	if (rc == ECONNREFUSED || rc == ETIMEDOUT || rc == EHOSTUNREACH ||
	    rc == ENETUNREACH || rc == EHOSTDOWN)
		*connect_failed = 1;
	snprintf(err, errlen, "cannot connect to the sandbox's agent at %s: "
	    "%s", where, rc == ETIMEDOUT ? "no answer to the connection" :
	    strerror(rc));
	if (fd != -1)
		close(fd);
	freeaddrinfo(res);
	errno = rc;
	return -1;
}

/* A connection to the agent at a, or -1 with errno and a reason in err. */
static int
addr_connect(const struct agent_addr *a, int timeout_ms, int *connect_failed,
    char *err, size_t errlen)
{
	int	 fd;

	if (a->kind == AGENT_TCP)
		return tcp_connect(a, timeout_ms, connect_failed, err, errlen);
	if ((fd = unix_connect(a->path, connect_failed)) == -1)
		snprintf(err, errlen, "cannot connect to the sandbox's agent at "
		    "%s: %s", a->path, strerror(errno));
	return fd;
}

/*
 * A TCP agent's address is the cluster's hint, good until its Pod goes and
 * the address is given to another: before anything of the user's (the
 * secret first) goes out on a new connection, whoever answers proves that
 * it holds the sandbox's secret, for the address we dialled (common/proof.h).
 * 0, the connection ready for the request; or -1 with err, and c->stale
 * set unless the client went away: what answers there is not the sandbox's
 * agent (or not any more), so the caller asks the backend again.
 */
static int
prove(struct agent_conn *c, const struct agent_addr *a, char *err,
    size_t errlen)
{
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof(ss);
	char			 nonce[PROOF_NONCE_HEX + 1], addr[PROOF_ADDR_MAX];
	char			 where[AGENT_ADDR_STRLEN], head[256], tmp[512];
	const char		*why;
	ssize_t			 r;
	int			 n, port, timeout_ms = c->timeout_ms;

	agent_addr_str(a, where, sizeof(where));
	if (proof_nonce(nonce) == -1 || getpeername(c->fd, (struct sockaddr *)
	    &ss, &sl) == -1 || proof_addr((struct sockaddr *)&ss, addr,
	    &port) == -1) {
		snprintf(err, errlen, "cannot challenge the sandbox's agent at "
		    "%s: %s", where, strerror(errno));
		return -1;
	}
	/* Bounded even for a GET stream, which may wait for ever after. */
	if (c->timeout_ms < 0 || c->timeout_ms > PROOF_MS)
		c->timeout_ms = PROOF_MS;
	n = snprintf(head, sizeof(head), "GET /health HTTP/1.1\r\nHost: "
	    "sandbox\r\n" PROOF_CHALLENGE ": %s\r\n\r\n", nonce);
	if (write_all(c->fd, head, (size_t)n, c->timeout_ms) == -1) {
		snprintf(err, errlen, "cannot challenge the sandbox's agent at "
		    "%s: %s", where, strerror(errno));
		goto stale;
	}
	if (parse_head(c, tmp, sizeof(tmp)) == -1) {
		snprintf(err, errlen, "no proof from the sandbox's agent at %s: "
		    "%s", where, tmp);
		goto stale;
	}
	while ((r = agent_read(c, tmp, sizeof(tmp))) > 0)
		;
	if (c->head.status != 200 || !proof_ok(a->secret, strlen(a->secret),
	    nonce, addr, port, c->head.proof)) {
		why = c->head.status != 200 ? "it answered the challenge with "
		    "an error" : c->head.proof[0] == '\0' ? "it gave no proof"
		    : "its proof is wrong";
		snprintf(err, errlen, "what answers at %s is not this sandbox's "
		    "agent: %s (%d); nothing was sent to it", where, why,
		    c->head.status);
		goto stale;
	}
	if (r < 0 || !agent_reusable(c)) {
		snprintf(err, errlen, "the sandbox's agent at %s did not keep "
		    "the connection after its proof", where);
		goto stale;
	}
	memset(&c->head, 0, sizeof(c->head));
	memset(&c->body, 0, sizeof(c->body));
	c->rpos = c->rlen = 0;
	c->done = c->keepalive = 0;
	c->timeout_ms = timeout_ms;
	return 0;
stale:
	c->timeout_ms = timeout_ms;
	if (!c->client_gone)
		c->stale = 1;
	return -1;
}

/*
 * Sends the request on c->fd; 0 or -1 (errno).  Only the headers of
 * agent_req go on, never the client's own Authorization (LibreChat's
 * token is the supervisor's business); a TCP agent gets its sandbox's
 * secret instead, on every request.
 */
static int
send_request(struct agent_conn *c, const struct agent_addr *a,
    const struct agent_req *r, int timeout_ms)
{
	struct buf	 req = BUF_INIT(HEAD_MAX + 4096);
	int		 ret = -1;

	(void)buf_appendf(&req, "%s %s HTTP/1.1\r\nHost: sandbox\r\n",
	    r->method, r->path);
	if (r->chunked)
		(void)buf_appends(&req, "Transfer-Encoding: chunked\r\n");
	else if (r->body_len > 0 || strcmp(r->method, "POST") == 0)
		(void)buf_appendf(&req, "Content-Length: %zu\r\n", r->body_len);
#define HDR(name, v) \
	if ((v) != NULL) \
		(void)buf_appendf(&req, name ": %s\r\n", (v))
	HDR("Content-Type", r->content_type);
	HDR("Accept", r->accept);
	HDR("Mcp-Session-Id", r->session_id);
	HDR("MCP-Protocol-Version", r->protocol_version);
	HDR("Mcp-Method", r->mcp_method);
	HDR("Mcp-Name", r->mcp_name);
	HDR("Last-Event-ID", r->last_event_id);
#undef HDR
	if (a->kind == AGENT_TCP) {
		(void)buf_appendf(&req, "Authorization: Bearer %s\r\n",
		    a->secret);
		c->secret_sent = 1;
	}
	if (buf_append(&req, "\r\n", 2) == -1) {
		errno = EMSGSIZE;
		goto done;
	}
	if (write_all(c->fd, req.data, req.len, timeout_ms) == -1
	    || (r->body_len > 0
	    && write_all(c->fd, r->body, r->body_len, timeout_ms) == -1))
		goto done;
	ret = 0;
done:
	buf_release(&req);
	return ret;
}

int
agent_open(struct agent_conn *c, const struct agent_addr *a,
    const struct agent_req *r,
    int reuse_fd, int timeout_ms, int *connect_failed, char *err,
    size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->timeout_ms = timeout_ms;
	c->client_fd = r->client_fd != NULL ? *r->client_fd : -1;
	*connect_failed = 0;
	if (reuse_fd != -1 && r->want_fd) {
		/* A file comes first on a fresh connection only. */
		close(reuse_fd);
		reuse_fd = -1;
	}
	if (reuse_fd != -1) {
		/*
		 * A kept connection the agent may have closed meanwhile: if
		 * it takes the request but answers nothing at all, the agent
		 * never saw it; go on with a fresh connection.
		 */
		ssize_t got = -1;

		c->fd = reuse_fd;
		if (send_request(c, a, r, timeout_ms) == 0
		    && ((got = fill(c)) > 0
		    || (got == -1 && errno == ETIMEDOUT)))
			goto head;	/* a timeout is the agent's answer */
		close(c->fd);
		c->fd = -1;
		if (c->client_gone) {
			snprintf(err, errlen, "the client closed its connection");
			goto fail;
		}
		memset(c, 0, sizeof(*c));
		c->fd = -1;
		c->timeout_ms = timeout_ms;
		c->client_fd = r->client_fd != NULL ? *r->client_fd : -1;
	}
	if ((c->fd = addr_connect(a, timeout_ms, connect_failed, err,
	    errlen)) == -1)
		goto fail;
	if (a->kind == AGENT_TCP && prove(c, a, err, errlen) == -1)
		goto fail;
	if (send_request(c, a, r, timeout_ms) == -1) {
		snprintf(err, errlen, "cannot send the request to the sandbox: "
		    "%s", strerror(errno));
		goto fail;
	}
	if (r->want_fd && a->kind == AGENT_UNIX && take_fd(c, err, errlen)
	    == -1)
		goto fail;
head:
	if (parse_head(c, err, errlen) == -1)
		goto fail;
	return 0;
fail:
	if (c->stale)
		*connect_failed = 1;
	agent_close(c);
	return -1;
}

int
agent_stream_open(struct agent_conn *c, const struct agent_addr *a,
    const struct agent_req *r, int timeout_ms, int *stale, char *err,
    size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->timeout_ms = timeout_ms;
	c->client_fd = r->client_fd != NULL ? *r->client_fd : -1;
	*stale = 0;
	if ((c->fd = addr_connect(a, timeout_ms, stale, err, errlen)) == -1)
		return -1;
	if (a->kind == AGENT_TCP && prove(c, a, err, errlen) == -1) {
		*stale = 1;
		agent_close(c);
		return -1;
	}
	if (send_request(c, a, r, timeout_ms) == -1) {
		snprintf(err, errlen, "cannot send to the sandbox: %s",
		    strerror(errno));
		agent_close(c);
		return -1;
	}
	if (r->want_fd && a->kind == AGENT_UNIX && (take_fd(c, err, errlen)
	    == -1 || (!c->passed && parse_head(c, err, errlen) == -1))) {
		agent_close(c);
		return -1;
	}
	return 0;
}

int
agent_stream_write(struct agent_conn *c, const char *p, size_t n)
{
	char		 size[32];
	struct iovec	 iov[3];
	struct msghdr	 msg;
	ssize_t		 w;
	size_t		 i = 0;
	int		 k;

	if (n == 0)
		return 0;
	/* One chunk, head and tail with it, in as few sends as the socket takes. */
	k = snprintf(size, sizeof(size), "%zx\r\n", n);
	iov[0].iov_base = size;
	iov[0].iov_len = (size_t)k;
	iov[1].iov_base = (void *)(uintptr_t)p;
	iov[1].iov_len = n;
	iov[2].iov_base = (void *)(uintptr_t)"\r\n";
	iov[2].iov_len = 2;
	while (i < 3) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov + i;
		msg.msg_iovlen = 3 - i;
		w = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w == -1 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_fd(c->fd, POLLOUT, c->timeout_ms) == -1)
				return -1;
			continue;
		}
		if (w <= 0)
			return -1;
		for (; i < 3 && (size_t)w >= iov[i].iov_len; i++)
			w -= (ssize_t)iov[i].iov_len;
		if (i < 3) {
			iov[i].iov_base = (char *)iov[i].iov_base + w;
			iov[i].iov_len -= (size_t)w;
		}
	}
	return 0;
}

int
agent_stream_close(struct agent_conn *c, char *err, size_t errlen)
{
	if (write_all(c->fd, "0\r\n\r\n", 5, c->timeout_ms) == -1) {
		snprintf(err, errlen, "cannot send to the sandbox: %s",
		    strerror(errno));
		return -1;
	}
	return parse_head(c, err, errlen);
}

int
agent_reusable(const struct agent_conn *c)
{
	return c->fd != -1 && c->done && c->keepalive && c->rpos == c->rlen;
}

ssize_t
agent_read(struct agent_conn *c, char *dst, size_t max)
{
	unsigned long long raw;
	size_t		 off, len;
	ssize_t		 r = -1;
	long		 k;

	if (max == 0)
		return c->done ? 0 : -1;	/* no caller asks for nothing */
	while (!c->done) {
		raw = body_raw(&c->body);
		if (c->rpos == c->rlen && raw >= sizeof(c->rbuf) &&
		    max >= sizeof(c->rbuf)) {
			/* A large piece of a file: straight into dst, no copy. */
			if (max > raw)
				max = (size_t)raw;
			if ((r = recv_wait(c, dst, max)) <= 0)
				break;
			(void)body_feed(&c->body, dst, (size_t)r);
			c->done = c->body.done;
			return r;
		}
		if (c->rpos == c->rlen && (r = fill(c)) <= 0)
			break;
		k = body_next(&c->body, c->rbuf + c->rpos, c->rlen - c->rpos,
		    max, &off, &len);
		if (k < 0)
			return -1;	/* the strict decoder refused it */
		memcpy(dst, c->rbuf + c->rpos + off, len);
		c->rpos += (size_t)k;
		c->done = c->body.done;
		if (len > 0)
			return (ssize_t)len;
	}
	if (c->done)
		return 0;
	if (c->body.mode == BODY_EOF && r == 0) {
		/* The body ends when the agent closes. */
		c->done = 1;
		return 0;
	}
	return -1;	/* EOF inside a body is an error */
}

void
agent_close(struct agent_conn *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	if (c->passed)
		close(c->passed_fd);
	c->passed = 0;
}

/*
 * What the agent has in progress, from its /health ("ok requests=N
 * runs=M"): 0 with both counts; 1 when it answers 200 without them (an
 * older agent's bare "ok": busy, as far as anyone knows); -1 when it does
 * not answer, or not 200.
 */
int
agent_busy(const struct agent_addr *a, int timeout_ms, int *requests,
    int *runs)
{
	struct agent_conn	 c;
	struct agent_req	 r = { .method = "GET", .path = "/health" };
	char			 err[256], body[128];
	size_t			 len = 0;
	ssize_t			 n;
	int			 cf;

	if (agent_open(&c, a, &r, -1, timeout_ms, &cf, err, sizeof(err)) == -1)
		return -1;
	if (c.head.status != 200) {
		agent_close(&c);
		return -1;
	}
	while (len < sizeof(body) - 1 && (n = agent_read(&c, body + len,
	    sizeof(body) - 1 - len)) > 0)
		len += (size_t)n;
	body[len] = '\0';
	agent_close(&c);
	if (sscanf(body, "ok requests=%d runs=%d", requests, runs) != 2
	    || *requests < 0 || *runs < 0)
		return 1;
	return 0;
}

int
agent_probe(const struct agent_addr *a, int timeout_ms)
{
	int	 requests, runs;

	return agent_busy(a, timeout_ms, &requests, &runs) == -1 ? -1 : 0;
}
