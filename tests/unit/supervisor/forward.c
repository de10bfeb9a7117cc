/*
 * Unit tests for supervisor/forward.c: the relay's HTTP client for the
 * agent's unix socket and for a TCP agent with its secret.  A scripted
 * server plays the agent: SSE in chunks with a pause between them (the
 * first event must arrive before the second is even sent), Content-Length
 * bodies, bodies ending at EOF, broken chunking, a socket nobody listens
 * on; on loopback TCP (IPv4 and IPv6) the secret on every request, a 401
 * that is the supervisor's fault, refusals before connecting, and a
 * connect that gets no answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../supervisor/endpoint.c"
#include "../../../supervisor/forward.c"

/* One reply, as pieces written with a pause (ms) before each. */
struct piece {
	int		 pause_ms;
	const char	*data;
};

static void	msleep_(int);

/* How a TCP server answers the challenge on a new connection. */
enum prove {
	PROVE_GOOD,		/* as the agent holding the secret */
	PROVE_WRONG_SECRET,	/* another sandbox's agent */
	PROVE_RELAYED,		/* the real agent's answer, for its address */
	PROVE_NONE,		/* 200 without a proof: not an agent of ours */
	PROVE_REFUSE,		/* 401 */
	PROVE_SILENT,		/* accepts and says nothing */
};

static struct {
	int			 fd;
	char			 path[108];
	int			 port;		/* TCP: the one bound */
	pthread_t		 thread;
	const struct piece	*script;
	enum prove		 prove;
	char			 challenge[1024];	/* TCP: the first request */
	char			 request[8192];
} srv;

static const char secret[] = "0123456789abcdef0123456789abcdef"
    "0123456789abcdef0123456789abcdef";

/*
 * On a TCP connection: reads the challenge and answers it as srv.prove
 * says.  0 when the request may follow on the connection, else -1.
 */
static int
answer_challenge(int c)
{
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof(ss);
	char			 addr[PROOF_ADDR_MAX], proof[PROOF_HEX + 1];
	char			 reply[512], nonce[PROOF_NONCE_HEX + 1];
	const char		*p;
	size_t			 n = 0;
	ssize_t			 r;
	int			 port;

	while (n < sizeof(srv.challenge) - 1 && strstr(srv.challenge,
	    "\r\n\r\n") == NULL) {
		if ((r = read(c, srv.challenge + n, 1)) <= 0)
			return -1;
		n += (size_t)r;
		srv.challenge[n] = '\0';
	}
	if (srv.prove == PROVE_SILENT) {
		msleep_(1500);
		return -1;
	}
	p = strstr(srv.challenge, PROOF_CHALLENGE ": ");
	snprintf(nonce, sizeof(nonce), "%s", p != NULL ? p +
	    strlen(PROOF_CHALLENGE ": ") : "");
	getsockname(c, (struct sockaddr *)&ss, &sl);
	proof_addr((struct sockaddr *)&ss, addr, &port);
	if (srv.prove == PROVE_RELAYED)
		snprintf(addr, sizeof(addr), "10.1.2.3");
	proof_make(srv.prove == PROVE_WRONG_SECRET ? "another sandbox's secret"
	    " of forty characters" : secret, srv.prove == PROVE_WRONG_SECRET
	    ? 44 : strlen(secret), nonce, addr, port, proof);
	if (srv.prove == PROVE_REFUSE)
		snprintf(reply, sizeof(reply), "HTTP/1.1 401 Unauthorized\r\n"
		    "Content-Length: 2\r\n\r\nno");
	else
		snprintf(reply, sizeof(reply), "HTTP/1.1 200 OK\r\n%s%s%s"
		    "Content-Length: 3\r\n\r\nok\n", srv.prove == PROVE_NONE ?
		    "" : PROOF_ANSWER ": ", srv.prove == PROVE_NONE ? "" : proof,
		    srv.prove == PROVE_NONE ? "" : "\r\n");
	r = write(c, reply, strlen(reply));
	(void)r;
	return srv.prove == PROVE_GOOD || srv.prove == PROVE_RELAYED
	    || srv.prove == PROVE_WRONG_SECRET || srv.prove == PROVE_NONE
	    ? 0 : -1;
}

/* A unix agent address for path (one per thread: servers run beside). */
static const struct agent_addr *
ua(const char *path)
{
	static _Thread_local struct agent_addr a;

	agent_addr_unix(&a, path);
	return &a;
}

static void
msleep_(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void *
srv_main(void *arg)
{
	const struct piece	*p;
	size_t			 n = 0;
	ssize_t			 r;
	int			 c;

	(void)arg;
	if ((c = accept(srv.fd, NULL, NULL)) == -1)
		return NULL;
	if (srv.port != 0 && answer_challenge(c) == -1) {
		close(c);
		return NULL;
	}
	/* Read the head and whatever body came with it. */
	while (n < sizeof(srv.request) - 1) {
		r = read(c, srv.request + n, sizeof(srv.request) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		srv.request[n] = '\0';
		{
			char *h = strstr(srv.request, "\r\n\r\n");
			char *cl = strstr(srv.request, "Content-Length: ");
			size_t want = cl ? strtoul(cl + 16, NULL, 10) : 0;
			/* A chunked body ends with its last chunk. */
			if (h != NULL && strstr(srv.request,
			    "Transfer-Encoding: chunked") != NULL) {
				if (strstr(h, "\r\n0\r\n\r\n") != NULL)
					break;
				continue;
			}
			if (h != NULL && n >= (size_t)(h + 4 - srv.request) + want)
				break;
		}
	}
	for (p = srv.script; p->data != NULL; p++) {
		msleep_(p->pause_ms);
		r = write(c, p->data, strlen(p->data));
		(void)r;
	}
	close(c);
	return NULL;
}

/* Listens on a fresh socket and serves one connection with fn. */
static void
srv_listen(void *(*fn)(void *))
{
	struct sockaddr_un sun;

	snprintf(srv.path, sizeof(srv.path), "/tmp/fakeagent.%d.sock",
	    (int)getpid());
	unlink(srv.path);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, srv.path, strlen(srv.path) + 1);
	srv.fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(srv.fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(srv.fd, 4), 0);
	pthread_create(&srv.thread, NULL, fn, NULL);
}

static void
srv_start(const struct piece *script)
{
	srv.port = 0;
	memset(&srv.request, 0, sizeof(srv.request));
	srv.script = script;
	srv_listen(srv_main);
}

static void
srv_stop(void)
{
	pthread_join(srv.thread, NULL);
	close(srv.fd);
	unlink(srv.path);
}

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Reads the whole body; returns its length or -1. */
static ssize_t
read_all(struct agent_conn *c, char *dst, size_t max)
{
	size_t	 n = 0;
	ssize_t	 r;

	while ((r = agent_read(c, dst + n, max - n - 1)) > 0)
		n += (size_t)r;
	dst[n] = '\0';
	return r < 0 ? -1 : (ssize_t)n;
}

static void
test_sse_streams(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		    "Mcp-Session-Id: s-123\r\nMCP-Protocol-Version: 2025-06-18\r\n"
		    "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n" },
		{ 0, "1c\r\nevent: message\ndata: {\"a\"}\n\n\r\n" },
		{ 400, "1c\r\nevent: message\ndata: {\"b\"}\n\n\r\n" },
		{ 0, "0\r\n\r\n" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .content_type = "application/json", .accept = "text/event-stream",
	    .session_id = "s-123", .protocol_version = "2025-06-18",
	    .body = "{\"jsonrpc\":\"2.0\"}", .body_len = 17 };
	struct agent_conn	 c;
	char			 err[256], buf[256];
	int			 cf;
	ssize_t			 n;
	double			 t0;

	srv_start(script);
	t0 = now_ms();
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
	    sizeof(err)), 0);
	assert_int_equal(c.head.status, 200);
	assert_string_equal(c.head.content_type, "text/event-stream");
	assert_string_equal(c.head.session_id, "s-123");
	assert_string_equal(c.head.protocol_version, "2025-06-18");
	assert_string_equal(c.head.cache_control, "no-cache");
	n = agent_read(&c, buf, sizeof(buf) - 1);
	assert_int_equal(n, 28);
	/* The first event came before the server even sent the second. */
	assert_true(now_ms() - t0 < 300);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "{\"a\"}"));
	n = read_all(&c, buf, sizeof(buf));
	assert_int_equal(n, 28);
	assert_non_null(strstr(buf, "{\"b\"}"));
	assert_true(now_ms() - t0 >= 390);
	agent_close(&c);
	srv_stop();
	/* What the agent received: the MCP headers and the body. */
	assert_non_null(strstr(srv.request, "POST /mcp HTTP/1.1\r\n"));
	assert_non_null(strstr(srv.request, "Mcp-Session-Id: s-123\r\n"));
	assert_non_null(strstr(srv.request, "MCP-Protocol-Version: 2025-06-18\r\n"));
	assert_non_null(strstr(srv.request, "Content-Length: 17\r\n"));
	assert_non_null(strstr(srv.request, "\r\n\r\n{\"jsonrpc\":\"2.0\"}"));
}

static void
test_content_length_in_pieces(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\n"
		    "Content-Type: application/json\r\n\r\n{\"x\"" },
		{ 50, ":1234}" },
		{ 0, "TRAILING GARBAGE" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "DELETE", .path = "/mcp" };
	struct agent_conn	 c;
	char			 err[256], buf[256];
	int			 cf;

	srv_start(script);
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
	    sizeof(err)), 0);
	assert_int_equal(c.head.status, 404);
	assert_int_equal(read_all(&c, buf, sizeof(buf)), 10);
	assert_string_equal(buf, "{\"x\":1234}");
	agent_close(&c);
	srv_stop();
}

/* A large Content-Length body: read straight into the caller's buffer. */
static void
test_large_body_direct(void **state)
{
	static char		 reply[70000];
	static struct piece	 script[] = { { 0, reply }, { 0, NULL } };
	struct agent_req	 r = { .method = "GET", .path = "/_files/raw" };
	struct agent_conn	 c;
	char			 err[256], *buf;
	size_t			 body = 60000, n = 0;
	ssize_t			 got;
	int			 cf;

	n = (size_t)snprintf(reply, sizeof(reply), "HTTP/1.1 200 OK\r\n"
	    "Content-Length: %zu\r\n\r\n", body);
	memset(reply + n, 'y', body);
	reply[n + body] = '\0';
	memcpy(reply + n + body - 3, "END", 3);
	assert_non_null(buf = malloc(body + 1));
	srv_start(script);
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
	    sizeof(err)), 0);
	n = 0;
	while ((got = agent_read(&c, buf + n, body + 1 - n)) > 0)
		n += (size_t)got;
	assert_int_equal(got, 0);
	assert_int_equal(n, body);
	assert_memory_equal(buf + body - 3, "END", 3);
	assert_true(agent_reusable(&c) || !c.keepalive);
	agent_close(&c);
	srv_stop();
	free(buf);
}

/* An upload streamed to the agent: chunked as it comes, then the answer. */
static void
test_stream_upload(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "POST",
				    .path = "/_files/upload?name=a.csv",
				    .chunked = 1 };
	struct agent_conn	 c;
	char			 err[256], buf[64], big[3000], want[4096],
				 got[4096], *p, *end;
	size_t			 n = 0, k;
	int			 k2;

	memset(big, 'x', sizeof(big));
	srv_start(script);
	assert_int_equal(agent_stream_open(&c, ua(srv.path), &r, 5000, &k2,
	    err, sizeof(err)), 0);
	assert_int_equal(agent_stream_write(&c, "hello", 5), 0);
	assert_int_equal(agent_stream_write(&c, "", 0), 0);	/* no chunk */
	assert_int_equal(agent_stream_write(&c, big, sizeof(big)), 0);
	assert_int_equal(agent_stream_write(&c, "world", 5), 0);
	assert_int_equal(agent_stream_close(&c, err, sizeof(err)), 0);
	assert_int_equal(c.head.status, 201);
	assert_int_equal(read_all(&c, buf, sizeof(buf)), 2);
	agent_close(&c);
	srv_stop();

	/* The agent saw one head and the pieces, in order, as chunks. */
	assert_non_null(strstr(srv.request, "POST /_files/upload?name=a.csv "
	    "HTTP/1.1\r\n"));
	assert_null(strstr(srv.request, "Content-Length"));
	p = strstr(srv.request, "\r\n\r\n") + 4;
	for (;;) {
		k = strtoul(p, &end, 16);
		assert_true(end != p && end[0] == '\r' && end[1] == '\n');
		if (k == 0)
			break;
		memcpy(got + n, end + 2, k);
		n += k;
		p = end + 2 + k;
		assert_memory_equal(p, "\r\n", 2);
		p += 2;
	}
	snprintf(want, sizeof(want), "hello%.*sworld", (int)sizeof(big), big);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(got, want, n);
}

static void
test_body_until_eof_and_empty(void **state)
{
	static const struct piece eof[] = {
		{ 0, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello " },
		{ 20, "world" },
		{ 0, NULL } };
	static const struct piece empty[] = {
		{ 0, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	char			 err[256], buf[256];
	int			 cf;

	srv_start(eof);
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
	    sizeof(err)), 0);
	assert_int_equal(read_all(&c, buf, sizeof(buf)), 11);
	assert_string_equal(buf, "hello world");
	assert_false(agent_reusable(&c));	/* ended by EOF */
	agent_close(&c);
	srv_stop();

	srv_start(empty);
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
	    sizeof(err)), 0);
	assert_int_equal(c.head.status, 202);
	assert_int_equal(agent_read(&c, buf, sizeof(buf)), 0);
	agent_close(&c);
	srv_stop();
}

static void
test_broken_replies(void **state)
{
	static const struct piece cut[] = {
		{ 0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "100\r\nonly a little" },
		{ 0, NULL } };
	static const struct piece junk[] = {
		{ 0, "SSH-2.0-OpenSSH\r\n\r\n" }, { 0, NULL } };
	static const struct piece nothing[] = { { 0, NULL } };
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	char			 err[256], buf[1024];
	int			 cf;

	srv_start(cut);
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
	    sizeof(err)), 0);
	assert_int_equal(read_all(&c, buf, sizeof(buf)), -1);
	agent_close(&c);
	srv_stop();

	srv_start(junk);
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "malformed status line"));
	assert_int_equal(cf, 0);
	srv_stop();

	srv_start(nothing);
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "closed the connection"));
	srv_stop();
}

/*
 * Replies the old line reader (sscanf, strtoll, strcasestr) took, each
 * read one way here and another by some other reader.  A sandbox can put
 * anything on the socket, so each is refused before the head is passed on:
 * agent_open fails, and the caller answers 502 with err.
 */
static void
test_strict_heads(void **state)
{
	static const struct {
		const char	*reply;
		const char	*why;
	} cases[] = {
		{ "HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\nhello world!",
		    "malformed Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
		    "Content-Length: 5\r\n\r\nhello", "duplicate Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		    "both Content-Length and Transfer-Encoding" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
		    "5\r\nhello\r\n0\r\n\r\n", "unsupported Transfer-Encoding" },
		{ "HTTP/1.1 200garbage\r\nContent-Length: 2\r\n\r\nok",
		    "malformed status line" },
		{ "HTTP/1.12 200 OK\r\nContent-Length: 2\r\n\r\nok",
		    "malformed status line" },
		{ "HTTP/1.1 +200 OK\r\nContent-Length: 2\r\n\r\nok",
		    "malformed status line" },
		{ "HTTP/1.1 700 Odd\r\nContent-Length: 2\r\n\r\nok",
		    "malformed status line" },
		{ "HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
		    "bare CR, bare LF or NUL" },
		{ "HTTP/1.1 200 OK\r\nX-No-Colon\r\nContent-Length: 2\r\n\r\nok",
		    "malformed header field name" },
		{ "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok",
		    "whitespace before colon" },
		{ "HTTP/1.1 200 OK\r\nMcp-Session-Id: a\r\nMcp-Session-Id: b\r\n"
		    "Content-Length: 2\r\n\r\nok", "duplicate Mcp-Session-Id" },
	};
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	struct piece		 script[2] = { { 0, NULL }, { 0, NULL } };
	char			 err[256];
	size_t			 i;
	int			 cf, wrong = 0;

	/* Every case is tried, so a failure lists all the wrong ones. */
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		script[0].data = cases[i].reply;
		srv_start(script);
		err[0] = '\0';
		if (agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
		    sizeof(err)) == 0) {
			agent_close(&c);
			srv_stop();
			print_message("accepted (%s): %.40s\n", cases[i].why,
			    cases[i].reply);
			wrong++;
			continue;
		}
		srv_stop();
		if (strstr(err, "malformed reply") == NULL ||
		    strstr(err, cases[i].why) == NULL || cf != 0) {
			/* cf: "nobody listens" would be retried, not 502 */
			print_message("err \"%s\", not \"%s\"\n", err,
			    cases[i].why);
			wrong++;
		}
	}
	assert_int_equal(wrong, 0);
}

/* Chunk framing that strtoll and a line reader let through: the body
 * read fails (the reply is cut off) instead of passing on a guess. */
static void
test_strict_chunks(void **state)
{
	static const char *const bodies[] = {
		"0x2\r\nok\r\n0\r\n\r\n",	/* strtoll's 0x prefix */
		" 2\r\nok\r\n0\r\n\r\n",	/* its leading blanks */
		"+2\r\nok\r\n0\r\n\r\n",	/* its sign */
		"2zz\r\nok\r\n0\r\n\r\n",	/* junk after the digits */
		"2\nok\r\n0\r\n\r\n",		/* a bare LF */
		"2\r\nok\r\n0\r\nbad trailer\r\n\r\n",
		"2\r\nok\r\n0\r\n\r",		/* cut in the last line */
	};
	static char		 reply[512];
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	struct piece		 script[2] = { { 0, reply }, { 0, NULL } };
	char			 err[256], buf[256];
	size_t			 i;
	int			 cf, wrong = 0;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		snprintf(reply, sizeof(reply), "HTTP/1.1 200 OK\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n%s", bodies[i]);
		srv_start(script);
		assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf,
		    err, sizeof(err)), 0);
		if (read_all(&c, buf, sizeof(buf)) != -1 ||
		    agent_reusable(&c)) {
			print_message("chunked body accepted: %.12s\n",
			    bodies[i]);
			wrong++;
		}
		agent_close(&c);
		srv_stop();
	}
	assert_int_equal(wrong, 0);
	/* The same framing done right still reads, with an extension and a
	 * trailer, one byte a write. */
	{
		static const char	 good[] = "HTTP/1.1 200 OK\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n2;x=y\r\nok\r\n"
		    "3\r\n!!!\r\n0\r\nX-T: 1\r\n\r\n";
		static char		 bytes[sizeof(good)][2];
		static struct piece	 slow[sizeof(good)];

		for (i = 0; i + 1 < sizeof(good); i++) {
			bytes[i][0] = good[i];
			slow[i].pause_ms = 0;
			slow[i].data = bytes[i];
		}
		slow[i].data = NULL;
		srv_start(slow);
		assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf,
		    err, sizeof(err)), 0);
		assert_int_equal(read_all(&c, buf, sizeof(buf)), 5);
		assert_string_equal(buf, "ok!!!");
		agent_close(&c);
		srv_stop();
	}
}

static void
test_nobody_listening(void **state)
{
	struct agent_req	 r = { .method = "POST", .path = "/mcp" };
	struct agent_conn	 c;
	char			 err[256];
	int			 cf, fd;
	struct sockaddr_un	 sun;
	const char		*stale = "/tmp/fakeagent.stale.sock";

	assert_int_equal(agent_open(&c, ua("/nonexistent/agent.sock"), &r, -1,
	    1000, &cf, err, sizeof(err)), -1);
	assert_int_equal(cf, 1);
	assert_non_null(strstr(err, "/nonexistent/agent.sock"));
	/* A socket file left by a dead agent: ECONNREFUSED, also "look". */
	unlink(stale);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, stale, strlen(stale) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	assert_int_equal(agent_open(&c, ua(stale), &r, -1, 1000, &cf, err,
	    sizeof(err)), -1);
	assert_int_equal(cf, 1);
	assert_int_equal(agent_probe(ua(stale), 1000), -1);
	unlink(stale);
}

/*
 * /health: agent_busy reads the counts of a current agent, and tells an
 * older agent's bare "ok" (1) from no answer (-1); agent_probe takes
 * either 200.
 */
static void
test_health(void **state)
{
	static const struct piece counts[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n"
		    "ok requests=2 runs=1" },
		{ 0, NULL } };
	static const struct piece bare[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" },
		{ 0, NULL } };
	static const struct piece down[] = {
		{ 0, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 20\r\n"
		    "\r\nok requests=0 runs=0" },
		{ 0, NULL } };
	int	 requests = -1, runs = -1;

	srv_start(counts);
	assert_int_equal(agent_busy(ua(srv.path), 2000, &requests, &runs), 0);
	assert_int_equal(requests, 2);
	assert_int_equal(runs, 1);
	srv_stop();
	assert_non_null(strstr(srv.request, "GET /health HTTP/1.1\r\n"));
	srv_start(counts);
	assert_int_equal(agent_probe(ua(srv.path), 2000), 0);
	srv_stop();
	srv_start(bare);
	assert_int_equal(agent_busy(ua(srv.path), 2000, &requests, &runs), 1);
	srv_stop();
	srv_start(bare);
	assert_int_equal(agent_probe(ua(srv.path), 2000), 0);
	srv_stop();
	srv_start(down);
	assert_int_equal(agent_busy(ua(srv.path), 2000, &requests, &runs), -1);
	srv_stop();
	srv_start(down);
	assert_int_equal(agent_probe(ua(srv.path), 2000), -1);
	srv_stop();
}

/* Code in a sandbox can swap agent.sock for a symlink to another socket
 * on the host: the supervisor must not follow it. */
static void
test_symlink_refused(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	char			 err[256], link[128], buf[64];
	int			 cf;

	srv_start(script);
	snprintf(link, sizeof(link), "/tmp/fakeagent.%d.link", (int)getpid());
	unlink(link);
	assert_int_equal(symlink(srv.path, link), 0);
	assert_int_equal(agent_open(&c, ua(link), &r, -1, 1000, &cf, err,
	    sizeof(err)), -1);
	assert_int_equal(cf, 0);
	assert_int_equal(agent_probe(ua(link), 1000), -1);
	unlink(link);
	/* A plain file is no socket either. */
	assert_int_equal(agent_open(&c, ua("/etc/hostname"), &r, -1, 1000, &cf,
	    err, sizeof(err)), -1);
	/* The real path still works (and lets the server finish). */
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 1000, &cf, err,
	    sizeof(err)), 0);
	assert_int_equal(read_all(&c, buf, sizeof(buf)), 2);
	agent_close(&c);
	srv_stop();
}

/* A kept connection the agent closed meanwhile: a fresh one is used. */
static void *
closer_main(void *arg)
{
	msleep_(300);
	close(*(int *)arg);
	return NULL;
}

/* An agent that reads the request, never answers, and notes when its
 * connection closes (what makes the real agent stop the run). */
static double	 eof_at_ms;

static void *
silent_main(void *arg)
{
	char	 b[4096];
	int	 c;

	(void)arg;
	if ((c = accept(srv.fd, NULL, NULL)) == -1)
		return NULL;
	while (read(c, b, sizeof(b)) > 0)
		;
	eof_at_ms = now_ms();
	close(c);
	return NULL;
}

/*
 * The client (LibreChat) goes away while the agent is still working: the
 * wait ends at once, not at the agent timeout, and the agent connection
 * is closed, so the agent sees it.
 */
static void
test_client_gone_closes_agent(void **state)
{
	struct agent_conn	 c;
	int			 pair[2], cf;
	char			 err[256];
	double			 t0, closed_at;
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };

	eof_at_ms = 0;
	srv_listen(silent_main);

	/* pair[0] stands for the client's connection to the supervisor. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
	r.client_fd = &pair[0];
	t0 = now_ms();
	{
		pthread_t	 closer;

		/* The client hangs up 300 ms in. */
		assert_int_equal(pthread_create(&closer, NULL, closer_main,
		    &pair[1]), 0);
		assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 20000, &cf,
		    err, sizeof(err)), -1);
		pthread_join(closer, NULL);
	}
	closed_at = now_ms();
	assert_true(c.client_gone);
	assert_true(closed_at - t0 < 2000);
	assert_true(closed_at - t0 >= 250);
	srv_stop();
	assert_true(eof_at_ms > 0);
	assert_true(eof_at_ms - t0 < 2500);
	close(pair[0]);
}

static void
test_stale_kept_connection(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	char			 err[256], buf[64];
	int			 cf, sp[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	close(sp[1]);
	srv_start(script);
	assert_int_equal(agent_open(&c, ua(srv.path), &r, sp[0], 5000, &cf, err,
	    sizeof(err)), 0);
	assert_int_equal(read_all(&c, buf, sizeof(buf)), 2);
	assert_string_equal(buf, "ok");
	/* HTTP/1.1 with a length, read to the end: fit for reuse. */
	assert_true(agent_reusable(&c));
	agent_close(&c);
	srv_stop();
}

/* ------------------------------------------------------------ TCP */

/* Listens on loopback TCP (family AF_INET or AF_INET6), port 0; 0 or -1
 * when this machine has no such loopback. */
static int
srv_listen_tcp(int family, int backlog, void *(*fn)(void *))
{
	struct sockaddr_storage	 ss;
	socklen_t		 sl;
	int			 one = 1;

	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sl = sizeof(*s4);
	}
	srv.path[0] = '\0';
	if ((srv.fd = socket(family, SOCK_STREAM, 0)) == -1)
		return -1;
	setsockopt(srv.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(srv.fd, (struct sockaddr *)&ss, sl) == -1) {
		close(srv.fd);
		return -1;
	}
	assert_int_equal(listen(srv.fd, backlog), 0);
	sl = sizeof(ss);
	assert_int_equal(getsockname(srv.fd, (struct sockaddr *)&ss, &sl), 0);
	srv.port = ntohs(family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&ss)->sin6_port :
	    ((struct sockaddr_in *)&ss)->sin_port);
	if (fn != NULL)
		pthread_create(&srv.thread, NULL, fn, NULL);
	return 0;
}

static int
srv_start_tcp(int family, const struct piece *script)
{
	memset(&srv.request, 0, sizeof(srv.request));
	memset(&srv.challenge, 0, sizeof(srv.challenge));
	srv.prove = PROVE_GOOD;
	srv.script = script;
	return srv_listen_tcp(family, 4, srv_main);
}

static const struct agent_addr *
ta(const char *host, int port, const char *sec)
{
	static _Thread_local struct agent_addr a;

	agent_addr_tcp(&a, host, port, sec);
	return &a;
}

/* How often needle is in hay. */
static int
count(const char *hay, const char *needle)
{
	int	 n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

static void
test_tcp_sends_secret(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		    "Content-Length: 11\r\n\r\n{\"ok\":true}" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .content_type = "application/json", .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	char			 err[256], buf[64], want[256];
	int			 cf;

	(void)state;
	assert_int_equal(srv_start_tcp(AF_INET, script), 0);
	assert_int_equal(agent_open(&c, ta("127.0.0.1", srv.port, secret), &r,
	    -1, 5000, &cf, err, sizeof(err)), 0);
	assert_int_equal(c.head.status, 200);
	assert_int_equal(read_all(&c, buf, sizeof(buf)), 11);
	assert_string_equal(buf, "{\"ok\":true}");
	agent_close(&c);
	srv_stop();
	snprintf(want, sizeof(want), "\r\nAuthorization: Bearer %s\r\n", secret);
	assert_non_null(strstr(srv.request, want));
	/* Once, and nothing else that authorizes. */
	assert_int_equal(count(srv.request, "Authorization"), 1);
	assert_non_null(strstr(srv.request, "\r\n\r\n{}"));
}

/* The same over IPv6, bare and in brackets; skipped without ::1. */
static void
test_tcp_ipv6(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "GET", .path = "/health" };
	struct agent_conn	 c;
	char			 err[256], buf[64], s[AGENT_ADDR_STRLEN];
	const char		*hosts[] = { "::1", "[::1]" };
	size_t			 i;
	int			 cf;

	(void)state;
	for (i = 0; i < 2; i++) {
		if (srv_start_tcp(AF_INET6, script) == -1)
			skip();
		snprintf(buf, sizeof(buf), "[::1]:%d", srv.port);
		assert_string_equal(agent_addr_str(ta(hosts[i], srv.port,
		    secret), s, sizeof(s)), buf);
		assert_int_equal(agent_open(&c, ta(hosts[i], srv.port, secret),
		    &r, -1, 5000, &cf, err, sizeof(err)), 0);
		assert_int_equal(c.head.status, 200);
		agent_close(&c);
		srv_stop();
		assert_non_null(strstr(srv.request, secret));
	}
}

/* Two requests on one kept connection: the secret goes with both. */
static struct {
	char	 first[4096], second[4096];
} kept;

static void *
srv_two_requests(void *arg)
{
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	    "\r\nok";
	char	*dst[2] = { kept.first, kept.second };
	ssize_t	 r;
	size_t	 n;
	int	 c, i;

	(void)arg;
	if ((c = accept(srv.fd, NULL, NULL)) == -1)
		return NULL;
	srv.prove = PROVE_GOOD;
	memset(&srv.challenge, 0, sizeof(srv.challenge));
	if (answer_challenge(c) == -1) {
		close(c);
		return NULL;
	}
	for (i = 0; i < 2; i++) {
		n = 0;
		while (n < sizeof(kept.first) - 1 && strstr(dst[i],
		    "\r\n\r\n") == NULL) {
			if ((r = read(c, dst[i] + n, sizeof(kept.first) - 1 -
			    n)) <= 0)
				break;
			n += (size_t)r;
			dst[i][n] = '\0';
		}
		r = write(c, reply, sizeof(reply) - 1);
		(void)r;
	}
	close(c);
	return NULL;
}

static void
test_tcp_secret_on_kept_connection(void **state)
{
	struct agent_req	 r = { .method = "GET", .path = "/mcp" };
	struct agent_conn	 c;
	char			 err[256], buf[64];
	int			 cf, fd;

	(void)state;
	memset(&kept, 0, sizeof(kept));
	assert_int_equal(srv_listen_tcp(AF_INET, 4, srv_two_requests), 0);
	assert_int_equal(agent_open(&c, ta("127.0.0.1", srv.port, secret), &r,
	    -1, 5000, &cf, err, sizeof(err)), 0);
	assert_int_equal(read_all(&c, buf, sizeof(buf)), 2);
	assert_true(agent_reusable(&c));
	fd = c.fd;
	assert_int_equal(agent_open(&c, ta("127.0.0.1", srv.port, secret), &r,
	    fd, 5000, &cf, err, sizeof(err)), 0);
	assert_int_equal(c.fd, fd);		/* the same connection */
	assert_int_equal(read_all(&c, buf, sizeof(buf)), 2);
	agent_close(&c);
	srv_stop();
	assert_non_null(strstr(kept.first, secret));
	assert_non_null(strstr(kept.second, secret));
}

/* The probe and a streamed upload carry it too. */
static void
test_tcp_probe_and_stream(void **state)
{
	static const struct piece ok[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" },
		{ 0, NULL } };
	static const struct piece created[] = {
		{ 0, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok" },
		{ 0, NULL } };
	static const struct piece refused[] = {
		{ 0, "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n"
		    "Content-Length: 2\r\n\r\nno" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "POST",
	    .path = "/_files/upload?name=a.csv", .chunked = 1 };
	struct agent_conn	 c;
	char			 err[256];
	int			 cf;

	(void)state;
	assert_int_equal(srv_start_tcp(AF_INET, ok), 0);
	assert_int_equal(agent_probe(ta("127.0.0.1", srv.port, secret), 2000),
	    0);
	srv_stop();
	assert_non_null(strstr(srv.request, "GET /health HTTP/1.1\r\n"));
	assert_non_null(strstr(srv.request, secret));

	/* A probe answered 401 is a failed probe. */
	assert_int_equal(srv_start_tcp(AF_INET, refused), 0);
	assert_int_equal(agent_probe(ta("127.0.0.1", srv.port, secret), 2000),
	    -1);
	srv_stop();

	assert_int_equal(srv_start_tcp(AF_INET, created), 0);
	assert_int_equal(agent_stream_open(&c, ta("127.0.0.1", srv.port,
	    secret), &r, 5000, &cf, err, sizeof(err)), 0);
	assert_int_equal(agent_stream_write(&c, "hello", 5), 0);
	assert_int_equal(agent_stream_close(&c, err, sizeof(err)), 0);
	assert_int_equal(c.head.status, 201);
	agent_close(&c);
	srv_stop();
	assert_non_null(strstr(srv.request, secret));
	assert_non_null(strstr(srv.request, "Transfer-Encoding: chunked"));

	/* An upload whose answer is 401: an error here, not relayed. */
	assert_int_equal(srv_start_tcp(AF_INET, refused), 0);
	assert_int_equal(agent_stream_open(&c, ta("127.0.0.1", srv.port,
	    secret), &r, 5000, &cf, err, sizeof(err)), 0);
	assert_int_equal(agent_stream_close(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "refused the supervisor's secret"));
	agent_close(&c);
	srv_stop();
}

/*
 * A new TCP connection is challenged first, without the secret; the
 * request (and the secret with it) follows only a right answer, on the
 * same connection.
 */
static void
test_tcp_proof_first(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{\"user\":\"data\"}", .body_len = 15 };
	struct agent_conn	 c;
	char			 err[256], buf[64];
	int			 cf;

	(void)state;
	assert_int_equal(srv_start_tcp(AF_INET, script), 0);
	assert_int_equal(agent_open(&c, ta("127.0.0.1", srv.port, secret), &r,
	    -1, 5000, &cf, err, sizeof(err)), 0);
	assert_int_equal(c.head.status, 200);
	assert_int_equal(read_all(&c, buf, sizeof(buf)), 2);
	agent_close(&c);
	srv_stop();
	assert_non_null(strstr(srv.challenge, "GET /health HTTP/1.1\r\n"));
	assert_non_null(strstr(srv.challenge, PROOF_CHALLENGE ": "));
	assert_null(strstr(srv.challenge, secret));
	assert_null(strstr(srv.challenge, "Authorization"));
	assert_non_null(strstr(srv.request, "POST /mcp HTTP/1.1\r\n"));
	assert_non_null(strstr(srv.request, secret));
}

/*
 * Whatever cannot prove it holds the secret gets nothing: not the
 * request, not the secret; the caller is told to look again (cf).  A
 * proof made for another address (the real agent's, relayed) is no proof.
 * The probe and a streamed upload are held to the same.
 */
static void
test_tcp_proof_refused(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" },
		{ 0, NULL } };
	static const struct {
		enum prove	 how;
		const char	*why;
	} bad[] = {
		{ PROVE_WRONG_SECRET, "its proof is wrong" },
		{ PROVE_RELAYED, "its proof is wrong" },
		{ PROVE_NONE, "it gave no proof" },
		{ PROVE_REFUSE, "answered the challenge with an error" },
		{ PROVE_SILENT, "no proof from" },
	};
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	char			 err[256];
	size_t			 i;
	int			 cf, mode;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (mode = 0; mode < 3; mode++) {
			assert_int_equal(srv_start_tcp(AF_INET, script), 0);
			srv.prove = bad[i].how;
			cf = 0;
			if (mode == 0) {
				assert_int_equal(agent_open(&c, ta("127.0.0.1",
				    srv.port, secret), &r, -1, 1000, &cf, err,
				    sizeof(err)), -1);
				assert_int_equal(cf, 1);
				if (strstr(err, bad[i].why) == NULL)
					fail_msg("%d: %s", bad[i].how, err);
				assert_null(strstr(err, secret));
			} else if (mode == 1) {
				assert_int_equal(agent_stream_open(&c,
				    ta("127.0.0.1", srv.port, secret), &r, 1000,
				    &cf, err, sizeof(err)), -1);
				assert_int_equal(cf, 1);
			} else
				assert_int_equal(agent_probe(ta("127.0.0.1",
				    srv.port, secret), 1000), -1);
			srv_stop();
			assert_non_null(strstr(srv.challenge, PROOF_CHALLENGE));
			assert_null(strstr(srv.challenge, secret));
			if (srv.request[0] != '\0' && (strstr(srv.request,
			    secret) != NULL || strstr(srv.request, "/mcp")
			    != NULL))
				fail_msg("%d/%d: sent after a failed proof: %s",
				    bad[i].how, mode, srv.request);
		}
}

/*
 * A 401 from a TCP agent is the supervisor's fault (a stale secret):
 * an error, so the client gets a 502 and never LibreChat's "sign in".
 * From a unix agent, which checks nothing, it stays what it was.
 */
static void
test_tcp_401_is_ours(void **state)
{
	static const struct piece script[] = {
		{ 0, "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n"
		    "Content-Length: 2\r\n\r\nno" },
		{ 0, NULL } };
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	char			 err[256];
	int			 cf;

	(void)state;
	assert_int_equal(srv_start_tcp(AF_INET, script), 0);
	assert_int_equal(agent_open(&c, ta("127.0.0.1", srv.port, secret), &r,
	    -1, 5000, &cf, err, sizeof(err)), -1);
	/* Not its agent any more, whatever holds the secret: look again. */
	assert_int_equal(cf, 1);
	assert_non_null(strstr(err, "refused the supervisor's secret"));
	assert_null(strstr(err, secret));
	srv_stop();

	srv_start(script);
	assert_int_equal(agent_open(&c, ua(srv.path), &r, -1, 5000, &cf, err,
	    sizeof(err)), 0);
	assert_int_equal(c.head.status, 401);
	agent_close(&c);
	srv_stop();
}

/* Refused before any connection: no secret, one that could break the
 * head, a name instead of an address, a port out of range. */
static void
test_tcp_refused_before_connecting(void **state)
{
	static const struct {
		const char	*host;
		int		 port;
		const char	*secret;
		const char	*why;
	} bad[] = {
		{ "127.0.0.1", 8700, "", "no secret" },
		{ "127.0.0.1", 8700, "abc\r\nX-Evil: 1", "a header may not" },
		{ "127.0.0.1", 8700, "has space", "a header may not" },
		{ "localhost", 8700, secret, "not an IPv4 or IPv6 address" },
		{ "vivarium-alice.default.svc", 8700, secret, "not an IPv4" },
		{ "127.0.0.1:8700", 8700, secret, "not an IPv4" },
		{ "", 8700, secret, "not an IPv4" },
		{ "127.0.0.1", 0, secret, "not a TCP port" },
		{ "127.0.0.1", 65536, secret, "not a TCP port" },
	};
	struct agent_req	 r = { .method = "GET", .path = "/health" };
	struct agent_conn	 c;
	char			 err[256];
	size_t			 i;
	int			 cf;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const struct agent_addr *a = ta(bad[i].host, bad[i].port,
		    bad[i].secret);

		cf = -1;
		assert_int_equal(agent_open(&c, a, &r, -1, 1000, &cf, err,
		    sizeof(err)), -1);
		assert_int_equal(cf, 0);
		if (strstr(err, bad[i].why) == NULL)
			fail_msg("%s: %s", bad[i].host, err);
		assert_int_equal(agent_stream_open(&c, a, &r, 1000, &cf, err,
		    sizeof(err)), -1);
		assert_int_equal(agent_probe(a, 1000), -1);
	}
}

/* A port nobody listens on: refused, which asks the backend again. */
static void
test_tcp_nobody_listening(void **state)
{
	struct agent_req	 r = { .method = "GET", .path = "/health" };
	struct agent_conn	 c;
	char			 err[256], want[64];
	int			 cf, port;

	(void)state;
	assert_int_equal(srv_listen_tcp(AF_INET, 1, NULL), 0);
	port = srv.port;
	close(srv.fd);
	assert_int_equal(agent_open(&c, ta("127.0.0.1", port, secret), &r, -1,
	    1000, &cf, err, sizeof(err)), -1);
	assert_int_equal(cf, 1);
	snprintf(want, sizeof(want), "127.0.0.1:%d", port);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "refused"));
	assert_int_equal(agent_probe(ta("127.0.0.1", port, secret), 1000), -1);
}

/*
 * A connect nobody answers (a Pod gone without a trace) ends at the
 * timeout and counts as nobody listening.  A listener whose accept queue
 * is full drops further SYNs, which is exactly that silence.
 */
static void
test_tcp_connect_timeout(void **state)
{
	struct agent_req	 r = { .method = "GET", .path = "/health" };
	struct agent_conn	 c;
	struct sockaddr_in	 sin;
	char			 err[256];
	int			 cf, fill[4], i, n = 0;
	double			 t0;

	(void)state;
	assert_int_equal(srv_listen_tcp(AF_INET, 0, NULL), 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((unsigned short)srv.port);
	for (i = 0; i < 4; i++) {
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		(void)connect(fill[i], (struct sockaddr *)&sin, sizeof(sin));
		n++;
	}
	msleep_(100);
	t0 = now_ms();
	assert_int_equal(agent_open(&c, ta("127.0.0.1", srv.port, secret), &r,
	    -1, 400, &cf, err, sizeof(err)), -1);
	assert_true(now_ms() - t0 >= 350);
	assert_true(now_ms() - t0 < 3000);
	assert_int_equal(cf, 1);
	assert_non_null(strstr(err, "no answer to the connection"));
	for (i = 0; i < n; i++)
		close(fill[i]);
	close(srv.fd);
}

/* The address as messages show it. */
static void
test_addr_str(void **state)
{
	char	 s[AGENT_ADDR_STRLEN];

	(void)state;
	assert_string_equal(agent_addr_str(ta("10.1.2.3", 8700, secret), s,
	    sizeof(s)), "10.1.2.3:8700");
	assert_string_equal(agent_addr_str(ta("fd00::12", 8700, secret), s,
	    sizeof(s)), "[fd00::12]:8700");
	assert_string_equal(agent_addr_str(ua("/x/n.sock"), s, sizeof(s)),
	    "/x/n.sock");
	/* Never the secret. */
	assert_null(strstr(agent_addr_str(ta("10.1.2.3", 8700, secret), s,
	    sizeof(s)), "0123"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sse_streams),
		cmocka_unit_test(test_content_length_in_pieces),
		cmocka_unit_test(test_body_until_eof_and_empty),
		cmocka_unit_test(test_stream_upload),
		cmocka_unit_test(test_large_body_direct),
		cmocka_unit_test(test_broken_replies),
		cmocka_unit_test(test_strict_heads),
		cmocka_unit_test(test_strict_chunks),
		cmocka_unit_test(test_nobody_listening),
		cmocka_unit_test(test_health),
		cmocka_unit_test(test_stale_kept_connection),
		cmocka_unit_test(test_symlink_refused),
		cmocka_unit_test(test_client_gone_closes_agent),
		cmocka_unit_test(test_tcp_sends_secret),
		cmocka_unit_test(test_tcp_ipv6),
		cmocka_unit_test(test_tcp_secret_on_kept_connection),
		cmocka_unit_test(test_tcp_probe_and_stream),
		cmocka_unit_test(test_tcp_proof_first),
		cmocka_unit_test(test_tcp_proof_refused),
		cmocka_unit_test(test_tcp_401_is_ours),
		cmocka_unit_test(test_tcp_refused_before_connecting),
		cmocka_unit_test(test_tcp_nobody_listening),
		cmocka_unit_test(test_tcp_connect_timeout),
		cmocka_unit_test(test_addr_str),
	};

	signal(SIGPIPE, SIG_IGN);	/* the server writes after the client left */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
