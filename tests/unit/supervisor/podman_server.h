/*
 * podman_server.h: a tiny HTTP server on a unix socket that answers with
 * recorded Podman replies (the .http files in tests/data/podman/), for unit tests.
 *
 *	struct fake_route routes[] = {
 *		{ "GET", "/v4.0.0/libpod/version", "version.http" },
 *		{ NULL, NULL, NULL } };
 *	fake_start(routes);  ...  fake_stop();
 *
 * A route matches on the method and a prefix of the request target; the
 * first match wins.  A route whose file is "CLOSE" closes the connection
 * without answering.  Unmatched requests get a 599, which no client code
 * expects.  The last request is kept for assertions (fake_last).
 */
#ifndef PODMAN_SERVER_H
#define PODMAN_SERVER_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef PODMAN_DATA
#define PODMAN_DATA	"tests/data/podman"
#endif

struct fake_route {
	const char	*method;
	const char	*prefix;
	const char	*file;
};

struct fake_request {
	char	method[16];
	char	target[1024];
	char	content_type[128];
	char	body[16384];
	int	count;		/* requests served so far */
};

static struct {
	int			 fd;
	pthread_t		 thread;
	char			 path[108];
	const struct fake_route	*routes;
	struct fake_request	 last;
	pthread_mutex_t		 lock;
} fake = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static char *
fake_slurp(const char *name, size_t *len)
{
	char	 path[512], *p;
	FILE	*f;
	long	 n;

	snprintf(path, sizeof(path), "%s/%s", PODMAN_DATA, name);
	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "fake podman: cannot open %s\n", path);
		abort();
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = calloc(1, (size_t)n + 1);
	if (fread(p, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	*len = (size_t)n;
	return p;
}

/* Sends a recorded reply with its real Content-Length. */
static void
fake_send_file(int c, const char *name)
{
	char	*raw, *body, *line, *next, out[8192];
	size_t	 len, o = 0, blen;
	ssize_t	 w;

	raw = fake_slurp(name, &len);
	body = strstr(raw, "\r\n\r\n");
	if (body != NULL) {
		*body = '\0';
		body += 4;
	} else
		body = raw + len;
	blen = strlen(body);
	for (line = raw; line != NULL && *line; line = next) {
		next = strstr(line, "\r\n");
		if (next != NULL) {
			*next = '\0';
			next += 2;
		}
		if (strncasecmp(line, "Content-Length:", 15) == 0
		    || strncasecmp(line, "Transfer-Encoding:", 18) == 0)
			continue;
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s\r\n", line);
	}
	o += (size_t)snprintf(out + o, sizeof(out) - o,
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", blen);
	/* send, not write: a client that hung up must not SIGPIPE the test. */
	w = send(c, out, o, MSG_NOSIGNAL);
	w = send(c, body, blen, MSG_NOSIGNAL);
	(void)w;
	free(raw);
}

static void
fake_serve(int c)
{
	char			 req[32768], *hend, *cl;
	size_t			 n = 0, want;
	ssize_t			 r;
	const struct fake_route	*rt;
	struct fake_request	 q;

	memset(&q, 0, sizeof(q));
	for (;;) {
		r = read(c, req + n, sizeof(req) - 1 - n);
		if (r <= 0)
			return;
		n += (size_t)r;
		req[n] = '\0';
		if ((hend = strstr(req, "\r\n\r\n")) == NULL)
			continue;
		want = 0;
		if ((cl = strcasestr(req, "\r\nContent-Length:")) != NULL
		    && cl < hend)
			want = strtoul(cl + 17, NULL, 10);
		if (n >= (size_t)(hend + 4 - req) + want)
			break;
	}
	sscanf(req, "%15s %1023s", q.method, q.target);
	if ((cl = strcasestr(req, "\r\nContent-Type:")) != NULL && cl < hend)
		sscanf(cl + 15, " %127[^\r]", q.content_type);
	snprintf(q.body, sizeof(q.body), "%s", hend + 4);
	pthread_mutex_lock(&fake.lock);
	q.count = fake.last.count + 1;
	fake.last = q;
	pthread_mutex_unlock(&fake.lock);
	for (rt = fake.routes; rt->method != NULL; rt++)
		if (strcmp(rt->method, q.method) == 0
		    && strncmp(rt->prefix, q.target, strlen(rt->prefix)) == 0)
			break;
	if (rt->method == NULL) {
		const char *nf = "HTTP/1.1 599 Unrouted\r\nContent-Length: 0\r\n"
		    "Connection: close\r\n\r\n";
		fprintf(stderr, "fake podman: no route for %s %s\n", q.method,
		    q.target);
		r = send(c, nf, strlen(nf), MSG_NOSIGNAL);
		return;
	}
	if (strcmp(rt->file, "CLOSE") == 0)
		return;
	fake_send_file(c, rt->file);
}

static void *
fake_loop(void *arg)
{
	int	 c;

	(void)arg;
	while ((c = accept(fake.fd, NULL, NULL)) != -1) {
		fake_serve(c);
		close(c);
	}
	return NULL;
}

static const char *
fake_start(const struct fake_route *routes)
{
	struct sockaddr_un	 sun;

	fake.routes = routes;
	memset(&fake.last, 0, sizeof(fake.last));
	snprintf(fake.path, sizeof(fake.path), "/tmp/fakepodman.%d.sock",
	    (int)getpid());
	unlink(fake.path);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, fake.path, strlen(fake.path) + 1);
	if ((fake.fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1
	    || bind(fake.fd, (struct sockaddr *)&sun, sizeof(sun)) == -1
	    || listen(fake.fd, 16) == -1) {
		perror("fake podman");
		abort();
	}
	pthread_create(&fake.thread, NULL, fake_loop, NULL);
	return fake.path;
}

static void
fake_stop(void)
{
	shutdown(fake.fd, SHUT_RDWR);
	close(fake.fd);
	pthread_join(fake.thread, NULL);
	fake.fd = -1;
	unlink(fake.path);
}

static struct fake_request
fake_last(void)
{
	struct fake_request	 q;

	pthread_mutex_lock(&fake.lock);
	q = fake.last;
	pthread_mutex_unlock(&fake.lock);
	return q;
}

#endif
