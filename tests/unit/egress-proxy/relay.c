/*
 * Unit tests for egress-proxy/relay.c and relay_http.c without the event
 * loop: loop.c is not even linked.  The test makes its own epoll set
 * (ev.c's ev_epfd) and calls each ready ev's callback, as loop.c would;
 * the client and the origin are real sockets on loopback.
 *
 * A refused request answered in full, a CONNECT tunnel carrying bytes both
 * ways with each side's half-close passed on, a bulk direction moved by
 * splice, and a plain HTTP exchange rewritten both ways and kept alive.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../egress-proxy/egress.h"

static struct egress_conf conf;
static int	 origin = -1;		/* listening on 127.0.0.1:oport */
static uint16_t	 oport;

/* One turn of what loop.c does: wait up to ms, dispatch, reap. */
static void
turn(int ms)
{
	struct epoll_event evs[16];
	int		 n;

	if ((n = epoll_wait(ev_epfd, evs, 16, ms)) > 0)
		ev_dispatch(evs, n);
	conn_reap();
	conn_log_flush();
}

/* A connection for one end of a fresh socketpair; *peer is the client. */
static struct conn *
client(int *peer)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct conn	*c;
	int		 sp[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
	    sp), 0);
	memset(&ss, 0, sizeof(ss));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(40000);
	inet_pton(AF_INET, "10.1.2.3", &sin->sin_addr);
	assert_non_null(c = conn_new(&conf, sp[0], &ss));
	*peer = sp[1];
	return c;
}

static void
send_all(int fd, const char *s, size_t n)
{
	assert_int_equal(send(fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Reads until want bytes came or ms passed, turning the relay meanwhile;
 * returns what came (NUL-terminated, static). */
static const char *
recv_some(int fd, size_t want, int ms)
{
	static char	 b[8192];
	size_t		 n = 0;
	ssize_t		 r;
	int		 i;

	for (i = 0; i < ms / 10 && n < want && n < sizeof(b) - 1; i++) {
		turn(10);
		while (n < sizeof(b) - 1 &&
		    (r = recv(fd, b + n, sizeof(b) - 1 - n, MSG_DONTWAIT)) > 0)
			n += (size_t)r;
	}
	b[n] = '\0';
	return b;
}

/* Waits for the relay's connection to the origin. */
static int
accept_origin(void)
{
	int	 i, fd = -1;

	for (i = 0; i < 200 && fd == -1; i++) {
		turn(10);
		fd = accept4(origin, NULL, NULL, SOCK_NONBLOCK);
	}
	assert_true(fd >= 0);
	return fd;
}

/* True when fd reads EOF within ms. */
static int
eof_within(int fd, int ms)
{
	char	 b[64];
	int	 i;

	for (i = 0; i < ms / 10; i++) {
		turn(10);
		if (recv(fd, b, sizeof(b), MSG_DONTWAIT) == 0)
			return 1;
	}
	return 0;
}

static int
setup(void **state)
{
	struct sockaddr_in sin;
	socklen_t	 len = sizeof(sin);
	char		 ports[16];

	signal(SIGPIPE, SIG_IGN);
	assert_true((ev_epfd = epoll_create1(EPOLL_CLOEXEC)) >= 0);
	origin = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(origin, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(origin, 8), 0);
	getsockname(origin, (struct sockaddr *)&sin, &len);
	oport = ntohs(sin.sin_port);
	conf_defaults(&conf);
	snprintf(ports, sizeof(ports), "%u", oport);
	assert_int_equal(conf_parse_ports(ports, &conf), 0);
	assert_int_equal(cidr_parse("127.0.0.0/8", &conf.allow[0]), 0);
	conf.nallow = 1;
	return 0;
}

static int
teardown(void **state)
{
	close(origin);
	close(ev_epfd);
	conf_release(&conf);
	return 0;
}

/* A port the configuration does not open: a whole 403, then the close. */
static void
test_refused(void **state)
{
	struct conn	*c;
	const char	*got;
	char		 req[128];
	int		 peer;

	c = client(&peer);
	snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/ HTTP/1.1\r\n"
	    "Host: x\r\n\r\n", oport == 65535 ? 1 : oport + 1);
	send_all(peer, req, strlen(req));
	c->ev[SIDE_CLIENT].cb(&c->ev[SIDE_CLIENT], EPOLLIN);
	got = recv_some(peer, 4096, 300);
	assert_non_null(strstr(got, "HTTP/1.1 403 Forbidden\r\n"));
	assert_non_null(strstr(got, "is not allowed"));
	assert_non_null(strstr(got, "Connection: close\r\n"));
	shutdown(peer, SHUT_WR);
	assert_true(eof_within(peer, 500));
	close(peer);
	turn(0);
	assert_int_equal(conn_count, 0);
}

/*
 * CONNECT: early bytes held for the tunnel, bytes both ways, each side's
 * end passed on only when its own bytes are out, and the connection gone
 * once both directions are shut.
 */
static void
test_tunnel_half_close(void **state)
{
	struct conn	*c;
	const char	*got;
	char		 req[128];
	int		 peer, up;

	c = client(&peer);
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n"
	    "early", oport);
	send_all(peer, req, strlen(req));
	c->ev[SIDE_CLIENT].cb(&c->ev[SIDE_CLIENT], EPOLLIN);
	up = accept_origin();
	assert_string_equal(recv_some(peer, 39, 1000),
	    "HTTP/1.1 200 Connection established\r\n\r\n");
	assert_string_equal(recv_some(up, 5, 1000), "early");

	send_all(peer, "ping", 4);
	assert_string_equal(recv_some(up, 4, 1000), "ping");
	send_all(up, "pong", 4);
	assert_string_equal(recv_some(peer, 4, 1000), "pong");

	/* The client is done sending; the origin still answers. */
	shutdown(peer, SHUT_WR);
	assert_true(eof_within(up, 1000));
	assert_true(c->dir[DIR_UP].eof && c->dir[DIR_UP].shut);
	assert_false(c->dir[DIR_DOWN].shut);
	send_all(up, "after", 5);
	got = recv_some(peer, 5, 1000);
	assert_string_equal(got, "after");
	assert_int_equal(c->dir[DIR_UP].bytes, 9);	/* early, ping */
	assert_int_equal(c->dir[DIR_DOWN].bytes, 39 + 9);

	shutdown(up, SHUT_WR);
	assert_true(eof_within(peer, 1000));
	close(up);
	close(peer);
	turn(0);
	assert_int_equal(conn_count, 0);
}

/* The bulk test's bytes: position p carries pat(p). */
static unsigned char
pat(size_t p)
{
	return (unsigned char)(p * 7 + p / 251);
}

/* A direction that carries a lot moves by splice, the other one not. */
static void
test_tunnel_bulk(void **state)
{
	enum { TOTAL = 4 << 20 };
	static unsigned char out[65536], in[65536];
	struct conn	*c;
	char		 req[128];
	size_t		 sent = 0, recvd = 0, bad = 0, n, i;
	ssize_t		 r;
	int		 peer, up, spliced = 0, k;

	c = client(&peer);
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n",
	    oport);
	send_all(peer, req, strlen(req));
	c->ev[SIDE_CLIENT].cb(&c->ev[SIDE_CLIENT], EPOLLIN);
	up = accept_origin();
	assert_non_null(strstr(recv_some(peer, 39, 1000), " 200 "));
	for (k = 0; k < 20000 && recvd < TOTAL; k++) {
		n = TOTAL - sent < sizeof(out) ? TOTAL - sent : sizeof(out);
		for (i = 0; i < n; i++)
			out[i] = pat(sent + i);
		if (n > 0 && (r = send(up, out, n, MSG_DONTWAIT)) > 0)
			sent += (size_t)r;
		turn(1);
		spliced |= c->dir[DIR_DOWN].pipe[0] >= 0;
		while ((r = recv(peer, in, sizeof(in), MSG_DONTWAIT)) > 0) {
			for (i = 0; i < (size_t)r; i++)
				bad += in[i] != pat(recvd + i);
			recvd += (size_t)r;
		}
	}
	assert_int_equal(recvd, TOTAL);
	assert_int_equal(bad, 0);
	assert_true(spliced);
	assert_true(c->dir[DIR_UP].pipe[0] < 0);
	close(up);
	close(peer);
	for (k = 0; k < 50 && conn_count > 0; k++)
		turn(10);
	assert_int_equal(conn_count, 0);
}

/* Plain HTTP: the head rewritten each way, the body as framed, and the
 * connection kept for the next request. */
static void
test_http_exchange(void **state)
{
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	    "Keep-Alive: timeout=5\r\nProxy-Agent: o\r\n\r\nok";
	struct conn	*c;
	const char	*got;
	char		 req[256], want[128];
	int		 peer, up;

	c = client(&peer);
	snprintf(req, sizeof(req), "GET http://127.0.0.1:%u/x?y HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%u\r\nProxy-Authorization: Basic eA==\r\n"
	    "Connection: keep-alive\r\nAccept: */*\r\n\r\n", oport, oport);
	send_all(peer, req, strlen(req));
	c->ev[SIDE_CLIENT].cb(&c->ev[SIDE_CLIENT], EPOLLIN);
	up = accept_origin();
	snprintf(want, sizeof(want), "GET /x?y HTTP/1.1\r\nHost: 127.0.0.1:%u"
	    "\r\nAccept: */*\r\n\r\n", oport);
	assert_string_equal(recv_some(up, strlen(want), 1000), want);
	send_all(up, resp, sizeof(resp) - 1);
	got = recv_some(peer, 40, 1000);
	assert_string_equal(got, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	    "\r\nok");
	/* Both halves done: waiting for the next request, upstream kept. */
	assert_true(c->req_done && c->resp_done);
	assert_true(c->ev[SIDE_UPSTREAM].fd >= 0);
	assert_int_equal(c->nreq, 1);
	close(up);
	close(peer);
	for (up = 0; up < 50 && conn_count > 0; up++)
		turn(10);
	assert_int_equal(conn_count, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_tunnel_half_close),
		cmocka_unit_test(test_tunnel_bulk),
		cmocka_unit_test(test_http_exchange),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
