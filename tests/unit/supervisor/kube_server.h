/*
 * kube_server.h: a tiny HTTP server on 127.0.0.1 that answers as a
 * Kubernetes API server would, from a script, for kube.c's unit tests
 * (the full fake, with TLS and a kubelet, is tests/k8s/).
 *
 *	struct kfake_route r[] = {
 *		{ "GET", "/version", 200, "{\"gitVersion\":\"v1.29.0\"}", 0 },
 *		{ NULL } };
 *	port = kfake_start(r);  ...  kfake_stop();
 *
 * The first route whose method matches and whose prefix starts the
 * target answers; a route with once set answers one request only, so a
 * script can say "404, then 200".  A body is sent as it is, which for a
 * watch is its newline-delimited events; the connection then closes
 * (a body starting "CUT:" is cut short of the length it announced).
 * Unmatched requests get a 599.  Every request is kept (kfake_req).
 */
#ifndef KUBE_SERVER_H
#define KUBE_SERVER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

struct kfake_route {
	const char	*method;
	const char	*prefix;
	int		 status;
	const char	*body;
	int		 once;
	int		 used;
};

struct kfake_request {
	char	method[16];
	char	target[1024];
	char	authorization[512];
	char	body[16384];
};

#define KFAKE_MAX	64

static struct {
	int			 fd;
	pthread_t		 thread;
	struct kfake_route	*routes;
	struct kfake_request	 req[KFAKE_MAX];
	int			 nreq;
	pthread_mutex_t		 lock;
} kfake = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static void
kfake_header(const char *head, const char *name, char *dst, size_t len)
{
	const char	*p = head;
	size_t		 nl = strlen(name), n;

	dst[0] = '\0';
	while ((p = strstr(p, "\r\n")) != NULL) {
		p += 2;
		if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			p += nl + 1;
			while (*p == ' ')
				p++;
			n = strcspn(p, "\r\n");
			snprintf(dst, len, "%.*s", (int)n, p);
			return;
		}
	}
}

static void
kfake_serve(int c)
{
	char			 buf[32768], cl[32];
	struct kfake_request	 q;
	struct kfake_route	*r;
	size_t			 got = 0, want;
	ssize_t			 n;
	char			*end, out[256];
	int			 status = 599, cut;
	const char		*body = "{\"kind\":\"Status\",\"code\":599}";

	memset(&q, 0, sizeof(q));
	while ((end = memmem(buf, got, "\r\n\r\n", 4)) == NULL) {
		if (got == sizeof(buf) - 1
		    || (n = read(c, buf + got, sizeof(buf) - 1 - got)) <= 0)
			return;
		got += (size_t)n;
		buf[got] = '\0';
	}
	*end = '\0';
	sscanf(buf, "%15s %1023s", q.method, q.target);
	kfake_header(buf, "Authorization", q.authorization,
	    sizeof(q.authorization));
	kfake_header(buf, "Content-Length", cl, sizeof(cl));
	want = (size_t)strtoul(cl, NULL, 10);
	got -= (size_t)(end + 4 - buf);
	memmove(q.body, end + 4, got < sizeof(q.body) ? got : 0);
	while (got < want && got < sizeof(q.body) - 1
	    && (n = read(c, q.body + got, sizeof(q.body) - 1 - got)) > 0)
		got += (size_t)n;
	pthread_mutex_lock(&kfake.lock);
	if (kfake.nreq < KFAKE_MAX)
		kfake.req[kfake.nreq++] = q;
	for (r = kfake.routes; r->method != NULL; r++) {
		if (strcmp(r->method, q.method) != 0 || (r->once && r->used)
		    || strncmp(q.target, r->prefix, strlen(r->prefix)) != 0)
			continue;
		r->used = 1;
		status = r->status;
		body = r->body;
		break;
	}
	pthread_mutex_unlock(&kfake.lock);
	/* "CUT:": the stream is reset before the length it announced. */
	if ((cut = strncmp(body, "CUT:", 4) == 0))
		body += 4;
	snprintf(out, sizeof(out), "HTTP/1.1 %d X\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\nConnection: close"
	    "\r\n\r\n", status, strlen(body) + (cut ? 100 : 0));
	if (write(c, out, strlen(out)) < 0 || write(c, body, strlen(body)) < 0)
		return;
}

static void *
kfake_loop(void *arg)
{
	int	 c;

	(void)arg;
	while ((c = accept(kfake.fd, NULL, NULL)) != -1) {
		kfake_serve(c);
		close(c);
	}
	return NULL;
}

/* Starts serving routes; the port. */
static int
kfake_start(struct kfake_route *routes)
{
	struct sockaddr_in	 sin;
	socklen_t		 sl = sizeof(sin);
	struct kfake_route	*r;

	for (r = routes; r->method != NULL; r++)
		r->used = 0;
	kfake.routes = routes;
	kfake.nreq = 0;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((kfake.fd = socket(AF_INET, SOCK_STREAM, 0)) == -1
	    || bind(kfake.fd, (struct sockaddr *)&sin, sizeof(sin)) == -1
	    || listen(kfake.fd, 16) == -1
	    || getsockname(kfake.fd, (struct sockaddr *)&sin, &sl) == -1
	    || pthread_create(&kfake.thread, NULL, kfake_loop, NULL) != 0)
		abort();
	return ntohs(sin.sin_port);
}

static void
kfake_stop(void)
{
	shutdown(kfake.fd, SHUT_RDWR);
	close(kfake.fd);
	pthread_join(kfake.thread, NULL);
	kfake.fd = -1;
}

/* The i-th request served (copied). */
static struct kfake_request
kfake_req(int i)
{
	struct kfake_request	 q;

	pthread_mutex_lock(&kfake.lock);
	q = kfake.req[i < kfake.nreq ? i : 0];
	pthread_mutex_unlock(&kfake.lock);
	return q;
}

static int
kfake_count(void)
{
	int	 n;

	pthread_mutex_lock(&kfake.lock);
	n = kfake.nreq;
	pthread_mutex_unlock(&kfake.lock);
	return n;
}

#endif
