/*
 * load.c: loopback load generator and origin for bench/egress/run.py.
 * Every address it touches is 127.0.0.1; every run is bounded in time or
 * in count.
 *
 *   egress-load origin ECHO_PORT SOURCE_PORT
 *	echo server (answers every byte) and a source that sends the number
 *	of bytes the client asks for ("N\n") and closes.
 *   egress-load rate PROXY_PORT|0 ECHO_PORT CLIENTS SECONDS
 *	CLIENTS concurrent connections driven by one epoll thread, each in a
 *	loop: connect, CONNECT through the proxy (or straight to the echo
 *	server when PROXY_PORT is 0), one byte round trip, abortive close.
 *	Prints "rate <tunnels/s> <count> <errors> <own CPU s> <p50 us>
 *	<p99 us>" (latency of one whole tunnel, connect to echo).
 *   egress-load bulk PROXY_PORT|0 SOURCE_PORT BYTES
 *	one connection pulls BYTES through.  Prints "bulk <MB/s> <bytes>
 *	<own CPU s>".
 *   egress-load idle PROXY_PORT ECHO_PORT N SECONDS
 *	opens N tunnels, proves each with a round trip, prints "ready N",
 *	then holds them for SECONDS (or until stdin closes).
 */
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "banned.h"

static double
now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
raise_nofile(void)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int
dial(int port)
{
	struct sockaddr_in sin;
	int		 fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Abortive close: no TIME_WAIT piles up on the client side. */
static void
drop(int fd)
{
	struct linger	 l = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static int
writeall(int fd, const char *p, size_t n)
{
	ssize_t	 w;

	while (n > 0) {
		if ((w = write(fd, p, n)) <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Connects and, through a proxy, sets up a tunnel to 127.0.0.1:port. */
static int
tunnel(int proxy, int port)
{
	char	 buf[512];
	size_t	 got = 0;
	ssize_t	 r;
	int	 fd, n;

	if (proxy == 0)
		return dial(port);
	if ((fd = dial(proxy)) == -1)
		return -1;
	n = snprintf(buf, sizeof(buf), "CONNECT 127.0.0.1:%d HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\n\r\n", port, port);
	if (writeall(fd, buf, (size_t)n) == -1)
		goto fail;
	/* The origin never speaks first, so the reply head is all there is
	 * to read until we send. */
	for (;;) {
		if (got >= sizeof(buf) - 1 ||
		    (r = read(fd, buf + got, sizeof(buf) - 1 - got)) <= 0)
			goto fail;
		got += (size_t)r;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL)
			break;
	}
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0 &&
	    strncmp(buf, "HTTP/1.0 200", 12) != 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* ------------------------------------------------------------ origin */

struct oconn {
	int		 fd;
	int		 source;
	unsigned long long left;	/* source: bytes still to send */
	char		 line[32];
	size_t		 linelen;
};

static int
listen_port(int port)
{
	struct sockaddr_in sin;
	int		 fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 4096) == -1) {
		perror("origin: bind/listen");
		exit(1);
	}
	return fd;
}

static int
origin(int echo_port, int source_port)
{
	static char	 data[256 * 1024];
	struct epoll_event ev, evs[256];
	struct oconn	*c;
	int		 ep, le, ls, i, n, fd, one = 1;
	ssize_t		 r, w;

	raise_nofile();
	memset(data, 'x', sizeof(data));
	ep = epoll_create1(0);
	le = listen_port(echo_port);
	ls = listen_port(source_port);
	ev.events = EPOLLIN;
	ev.data.ptr = &le;
	epoll_ctl(ep, EPOLL_CTL_ADD, le, &ev);
	ev.data.ptr = &ls;
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	printf("origin ready\n");
	fflush(stdout);
	for (;;) {
		n = epoll_wait(ep, evs, 256, 1000);
		if (getppid() == 1)
			return 0;	/* the driver went away */
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &le || evs[i].data.ptr == &ls) {
				int l = *(int *)evs[i].data.ptr;

				while ((fd = accept4(l, NULL, NULL,
				    SOCK_NONBLOCK | SOCK_CLOEXEC)) != -1) {
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY,
					    &one, sizeof(one));
					c = calloc(1, sizeof(*c));
					c->fd = fd;
					c->source = l == ls;
					ev.events = EPOLLIN;
					ev.data.ptr = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			c = evs[i].data.ptr;
			if (c->source && c->left > 0 && (evs[i].events & EPOLLOUT)) {
				size_t k = c->left < sizeof(data) ?
				    (size_t)c->left : sizeof(data);

				w = write(c->fd, data, k);
				if (w > 0)
					c->left -= (unsigned long long)w;
				if (c->left == 0 || (w == -1 && errno != EAGAIN))
					goto done;
				continue;
			}
			r = read(c->fd, data + sizeof(data) / 2,
			    sizeof(data) / 2);
			if (r == 0 || (r == -1 && errno != EAGAIN))
				goto done;
			if (r < 0)
				continue;
			if (!c->source) {
				/* small echoes; a full socket just drops it */
				if (write(c->fd, data + sizeof(data) / 2,
				    (size_t)r) == -1 && errno != EAGAIN)
					goto done;
				continue;
			}
			if (c->linelen + (size_t)r >= sizeof(c->line))
				goto done;
			memcpy(c->line + c->linelen, data + sizeof(data) / 2,
			    (size_t)r);
			c->linelen += (size_t)r;
			c->line[c->linelen] = '\0';
			if (strchr(c->line, '\n') != NULL) {
				c->left = strtoull(c->line, NULL, 10);
				ev.events = EPOLLOUT;
				ev.data.ptr = c;
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
			}
			continue;
done:
			close(c->fd);
			free(c);
		}
	}
}

/* ------------------------------------------------------------ rate */

/*
 * One thread, one epoll set, CLIENTS connections in flight, each a small
 * state machine (connect, CONNECT head, reply head, one byte each way,
 * abortive close, start over).  Sockets are registered once, edge-triggered
 * for both directions, so the generator spends no epoll_ctl per step and no
 * thread switches: on its own core it stays far ahead of the proxy.
 */
enum { R_CONNECTING, R_HEAD, R_ECHO };

struct rslot {
	int		 fd;
	int		 st;
	size_t		 got;
	double		 t0;
	char		 buf[256];
};

#define LAT_BUCKETS	100000		/* microseconds; the last one is "more" */

static int	 r_proxy, r_port, r_ep;
static long	 r_count, r_errors;
static unsigned	*r_lat;

static int
rate_open(struct rslot *s)
{
	struct sockaddr_in sin;
	struct epoll_event ev;
	int		 one = 1;

	s->st = R_CONNECTING;
	s->got = 0;
	s->t0 = now();
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd == -1)
		return -1;
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)(r_proxy ? r_proxy : r_port));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s->fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 &&
	    errno != EINPROGRESS) {
		close(s->fd);
		s->fd = -1;
		return -1;
	}
	ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
	ev.data.ptr = s;
	if (epoll_ctl(r_ep, EPOLL_CTL_ADD, s->fd, &ev) == -1) {
		close(s->fd);
		s->fd = -1;
		return -1;
	}
	return 0;
}

/* Drives one connection as far as it goes; 1 when a tunnel completed,
 * 0 when it waits, -1 on failure.  The caller reopens the slot. */
static int
rate_step(struct rslot *s)
{
	char	 req[128];
	ssize_t	 r;
	int	 n, err = 0;
	socklen_t len = sizeof(err);

	for (;;) {
		switch (s->st) {
		case R_CONNECTING:
			if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err,
			    &len) == -1 || err != 0)
				return -1;
			if (r_proxy) {
				n = snprintf(req, sizeof(req), "CONNECT "
				    "127.0.0.1:%d HTTP/1.1\r\nHost: "
				    "127.0.0.1:%d\r\n\r\n", r_port, r_port);
				r = write(s->fd, req, (size_t)n);
				if (r == -1 && errno == EAGAIN)
					return 0;	/* not connected yet */
				if (r != n)
					return -1;
				s->st = R_HEAD;
			} else {
				r = write(s->fd, "x", 1);
				if (r == -1 && errno == EAGAIN)
					return 0;
				if (r != 1)
					return -1;
				s->st = R_ECHO;
			}
			break;
		case R_HEAD:
			r = read(s->fd, s->buf + s->got,
			    sizeof(s->buf) - 1 - s->got);
			if (r == -1 && errno == EAGAIN)
				return 0;
			if (r <= 0)
				return -1;
			s->got += (size_t)r;
			s->buf[s->got] = '\0';
			if (strstr(s->buf, "\r\n\r\n") == NULL) {
				if (s->got >= sizeof(s->buf) - 1)
					return -1;
				break;
			}
			if (strncmp(s->buf, "HTTP/1.1 200", 12) != 0 &&
			    strncmp(s->buf, "HTTP/1.0 200", 12) != 0)
				return -1;
			if (write(s->fd, "x", 1) != 1)
				return -1;
			s->st = R_ECHO;
			break;
		case R_ECHO:
			r = read(s->fd, s->buf, 1);
			if (r == -1 && errno == EAGAIN)
				return 0;
			if (r != 1)
				return -1;
			return 1;
		}
	}
}

static int
rate(int proxy, int port, int clients, double secs)
{
	struct epoll_event evs[256];
	struct rusage	 ru;
	struct rslot	*slots, *s;
	double		 start, end, t, cpu;
	long		 seen, p50 = -1, p99 = -1;
	int		 i, n, rc;

	if (clients < 1 || clients > 4096 || secs <= 0 || secs > 60)
		return 2;
	raise_nofile();
	r_proxy = proxy;
	r_port = port;
	if ((r_ep = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    (slots = calloc((size_t)clients, sizeof(*slots))) == NULL ||
	    (r_lat = calloc(LAT_BUCKETS, sizeof(*r_lat))) == NULL)
		return 2;
	start = now();
	end = start + secs;
	for (i = 0; i < clients; i++)
		if (rate_open(&slots[i]) == -1)
			r_errors++;
	while ((t = now()) < end) {
		n = epoll_wait(r_ep, evs, 256, 50);
		for (i = 0; i < n; i++) {
			s = evs[i].data.ptr;
			if (s->fd == -1)
				continue;
			if ((rc = rate_step(s)) == 0)
				continue;
			if (rc == 1) {
				long us = (long)((now() - s->t0) * 1e6);

				r_lat[us < LAT_BUCKETS ? us : LAT_BUCKETS - 1]++;
				r_count++;
			} else
				r_errors++;
			drop(s->fd);	/* also leaves the epoll set */
			if (rate_open(s) == -1)
				r_errors++;
		}
		/* Slots that could not even open a socket try again. */
		for (i = 0; i < clients; i++)
			if (slots[i].fd == -1 && rate_open(&slots[i]) == -1)
				r_errors++;
		if (r_errors > 1000000)
			break;
	}
	t = now() - start;
	for (i = 0; i < clients; i++)
		if (slots[i].fd != -1)
			drop(slots[i].fd);
	for (seen = 0, i = 0; i < LAT_BUCKETS; i++) {
		seen += r_lat[i];
		if (p50 < 0 && seen * 2 >= r_count)
			p50 = i;
		if (p99 < 0 && seen * 100 >= r_count * 99)
			p99 = i;
	}
	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	/* rate <tunnels/s> <count> <errors> <cpu s> <p50 us> <p99 us> */
	printf("rate %.0f %ld %ld %.3f %ld %ld\n", (double)r_count / t, r_count,
	    r_errors, cpu, p50, p99);
	free(slots);
	free(r_lat);
	close(r_ep);
	return 0;
}

/* ------------------------------------------------------------ bulk */

static int
bulk(int proxy, int port, unsigned long long bytes)
{
	static char	 buf[256 * 1024];
	struct rusage	 ru;
	unsigned long long got = 0;
	double		 start, t;
	ssize_t		 r;
	int		 fd, n;

	if (bytes > (16ULL << 30))
		return 2;
	start = now();
	if ((fd = tunnel(proxy, port)) == -1) {
		perror("bulk: connect");
		return 1;
	}
	n = snprintf(buf, sizeof(buf), "%llu\n", bytes);
	if (writeall(fd, buf, (size_t)n) == -1)
		return 1;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		got += (unsigned long long)r;
	t = now() - start;
	close(fd);
	getrusage(RUSAGE_SELF, &ru);
	/* bulk <MB/s> <bytes> <own CPU s> */
	printf("bulk %.1f %llu %.3f\n", (double)got / t / 1e6, got,
	    (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	return got == bytes ? 0 : 1;
}

/* ------------------------------------------------------------ idle */

static int
idle(int proxy, int port, int n, double secs)
{
	struct pollfd	 p;
	int		*fds, i, ok = 0;
	char		 b[8];

	if (n < 1 || n > 100000 || secs > 600)
		return 2;
	raise_nofile();
	fds = calloc((size_t)n, sizeof(int));
	for (i = 0; i < n; i++) {
		if ((fds[i] = tunnel(proxy, port)) == -1)
			break;
		/* one round trip: the echo server's reply proves the tunnel */
		if (write(fds[i], "x", 1) != 1 || read(fds[i], b, 1) != 1) {
			close(fds[i]);
			break;
		}
		ok++;
	}
	printf("ready %d\n", ok);
	fflush(stdout);
	p.fd = 0;
	p.events = POLLIN;
	poll(&p, 1, (int)(secs * 1000));
	for (i = 0; i < ok; i++)
		close(fds[i]);
	free(fds);
	return ok == n ? 0 : 1;
}

int
main(int argc, char *argv[])
{
	if (argc == 4 && strcmp(argv[1], "origin") == 0)
		return origin(atoi(argv[2]), atoi(argv[3]));
	if (argc == 6 && strcmp(argv[1], "rate") == 0)
		return rate(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
		    atof(argv[5]));
	if (argc == 5 && strcmp(argv[1], "bulk") == 0)
		return bulk(atoi(argv[2]), atoi(argv[3]),
		    strtoull(argv[4], NULL, 10));
	if (argc == 6 && strcmp(argv[1], "idle") == 0)
		return idle(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
		    atof(argv[5]));
	fprintf(stderr, "usage: egress-load origin|rate|bulk|idle ...\n");
	return 2;
}
