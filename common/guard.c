/*
 * guard.c: the connection guard of the HTTP daemons (http_guard, mhd.h).
 *
 * libmicrohttpd runs a thread per connection up to a fixed limit, and at
 * the limit it stops accepting: whoever holds the slots locks everyone
 * else out, /health included.  The guard keeps a list of the open
 * connections, oldest first, each in a class (idle, receiving, transfer,
 * working), and does three things with it:
 *
 *   - near the limit, a new connection makes room by shutting down the
 *     oldest connection that has earned nothing (guard_victim);
 *   - file-link transfers have caps of their own, in total, per client
 *     address and per link, below the daemon's (guard_admit), so link
 *     traffic alone never fills it: links travel in chat answers, and many
 *     people may hold one;
 *   - a watch thread, once a second, cuts a request whose head or body is
 *     slower than the deadline and a transfer slower than the floor
 *     (guard_check), reading what each connection moved from the kernel
 *     (TCP_INFO), so it counts sendfile() downloads as well; and a
 *     sendfile() download whose file shrank under it (http_guard_file),
 *     which libmicrohttpd would otherwise retry in a busy loop until the
 *     floor cut it: a run rewriting the file a user downloads is enough.
 *
 * Cutting is shutdown(2) under the guard's lock: the connection's thread
 * wakes, sees the error and closes it; the CLOSED notification, which
 * unlinks it, takes the same lock, so the fd is still that connection's.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <linux/tcp.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "mhd.h"
#include "sha256.h"
#include "banned.h"

enum guard_class {
	GC_IDLE,
	GC_RECEIVING,
	GC_TRANSFER,
	GC_WORKING,
};

static const char *const class_names[] = {
	"idle", "receiving", "transfer", "working",
};

struct guard_conn {
	struct guard_conn	*prev, *next;	/* oldest first */
	struct http_guard	*g;
	int			 fd;
	enum guard_class	 cls;
	int			 evicted;	/* shut down, not yet closed */
	int			 bearer;	/* proved a token: working for good */
	unsigned char		 addr[16];	/* IPv4 as ::ffff:a.b.c.d;
						 * zeros on a unix socket */
	unsigned char		 link[16];	/* transfer: the link's digest */
	double			 since;		/* entered its class */
	double			 started;	/* idle: a request's first
						 * bytes came (0: not yet) */
	double			 mark_at;	/* transfer: the window began */
	uint64_t		 mark;		/* idle: bytes received then;
						 * transfer: bytes moved then */
	int			 file_fd;	/* a dup of the file sent, -1 */
	uint64_t		 file_size;	/* what the answer says it is */
};

struct http_guard {
	pthread_mutex_t		 mtx;
	pthread_cond_t		 cond;
	pthread_t		 watch;
	int			 watching, quit;
	struct http_guard_limits lim;
	struct guard_conn	*head, *tail;
	unsigned		 open;
};

/* ------------------------------------------------------------ decisions */

/*
 * What the kernel says the connection moved: rx, the bytes received, and
 * moved, those received and those the client acknowledged.  -1 when it
 * cannot say (not TCP, or a kernel before 4.1).
 */
static int
tcp_bytes(int fd, uint64_t *rx, uint64_t *moved)
{
	struct tcp_info	 ti;
	socklen_t	 len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == -1 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) +
	    sizeof(ti.tcpi_bytes_received))
		return -1;
	*rx = ti.tcpi_bytes_received;
	*moved = ti.tcpi_bytes_acked + ti.tcpi_bytes_received;
	return 0;
}

/* The connection to shut down for a new one: see mhd.h.  NULL: none. */
static struct guard_conn *
guard_victim(const struct http_guard *g, const struct guard_conn *newest)
{
	static const enum guard_class order[] = {
		GC_IDLE, GC_RECEIVING, GC_TRANSFER,
	};
	struct guard_conn	*v;
	size_t			 i;

	if (g->open <= g->lim.soft)
		return NULL;
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		for (v = g->head; v != NULL; v = v->next)
			if (v != newest && v->cls == order[i] && !v->evicted &&
			    v->fd >= 0)
				return v;
	return NULL;
}

/* 0 when c may start a transfer of link; -1 with why when a cap is full. */
static int
guard_admit(const struct http_guard *g, const struct guard_conn *c,
    const unsigned char link[16], char *why, size_t whylen)
{
	const struct guard_conn	*v;
	unsigned		 all = 0, here = 0, same = 0;

	for (v = g->head; v != NULL; v = v->next) {
		if (v == c || v->cls != GC_TRANSFER || v->evicted)
			continue;
		all++;
		if (memcmp(v->addr, c->addr, sizeof(v->addr)) == 0)
			here++;
		if (memcmp(v->link, link, sizeof(v->link)) == 0)
			same++;
	}
	if (all >= g->lim.xfer_max)
		snprintf(why, whylen, "%u file transfers are under way, as "
		    "many as this server takes at once", all);
	else if (here >= g->lim.xfer_per_address)
		snprintf(why, whylen, "%u file transfers from your address are "
		    "under way, as many as one address may have", here);
	else if (same >= g->lim.xfer_per_link)
		snprintf(why, whylen, "%u transfers through this link are "
		    "under way, as many as one link may have", same);
	else
		return 0;
	return -1;
}

/*
 * 1 when c must be cut now, with why; the watch thread's rule for each
 * connection, given the time and, when have is set, what it moved.
 */
static int
guard_check(const struct http_guard *g, struct guard_conn *c, double now,
    int have, uint64_t rx, uint64_t moved, char *why, size_t whylen)
{
	const struct http_guard_limits	*l = &g->lim;
	double				 span;

	if (c->evicted)
		return 0;
	switch (c->cls) {
	case GC_IDLE:
		if (l->deadline == 0 || !have)
			return 0;
		if (c->started == 0 && rx > c->mark)
			c->started = now;
		if (c->started == 0 || now - c->started <= l->deadline)
			return 0;
		snprintf(why, whylen, "a request's head was not in within %us",
		    l->deadline);
		return 1;
	case GC_RECEIVING:
		if (l->deadline == 0 || now - c->since <= l->deadline)
			return 0;
		snprintf(why, whylen, "a request's body was not in within %us",
		    l->deadline);
		return 1;
	case GC_TRANSFER:
		if (l->min_rate == 0 || l->grace == 0 || !have)
			return 0;
		span = now - c->mark_at;
		if (span < l->grace)
			return 0;
		if ((double)(moved - c->mark) < (double)l->min_rate * span) {
			snprintf(why, whylen, "a file transfer moved %llu bytes "
			    "in %.0fs, under the floor of %llu bytes/s",
			    (unsigned long long)(moved - c->mark), span,
			    l->min_rate);
			return 1;
		}
		/* Kept pace: the next window starts. */
		c->mark_at = now;
		c->mark = moved;
		return 0;
	case GC_WORKING:
		break;
	}
	return 0;
}

/* Into a class: its clocks restart (the caller holds the lock). */
static void
guard_enter(struct guard_conn *c, enum guard_class cls, double now)
{
	uint64_t rx = 0, moved = 0;

	(void)tcp_bytes(c->fd, &rx, &moved);
	c->cls = cls;
	c->since = now;
	c->started = 0;
	c->mark_at = now;
	c->mark = cls == GC_IDLE ? rx : moved;
}

/* ------------------------------------------------------------ the watch */

static void
addr_str(const unsigned char a[16], char *out, size_t len)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0,
	    0, 0xff, 0xff };
	static const unsigned char zero[16];

	if (memcmp(a, zero, 16) == 0)
		snprintf(out, len, "a local socket");
	else if (memcmp(a, mapped, 12) == 0)
		inet_ntop(AF_INET, a + 12, out, (socklen_t)len);
	else
		inet_ntop(AF_INET6, a, out, (socklen_t)len);
}

static void
guard_cut(struct guard_conn *c, const char *why)
{
	char a[INET6_ADDRSTRLEN];

	addr_str(c->addr, a, sizeof(a));
	log_info("closed a connection from %s (%s): %s", a,
	    class_names[c->cls], why);
	(void)shutdown(c->fd, SHUT_RDWR);
	c->evicted = 1;
}

/* The file a download is sent from is now shorter than its answer said. */
static int
guard_file_shrank(const struct guard_conn *c)
{
	struct stat st;

	return c->file_fd != -1 && fstat(c->file_fd, &st) == 0 &&
	    (uint64_t)st.st_size < c->file_size;
}

static void
guard_file_drop(struct guard_conn *c)
{
	if (c->file_fd != -1)
		close(c->file_fd);
	c->file_fd = -1;
}

static void *
guard_watch(void *arg)
{
	struct http_guard	*g = arg;
	struct guard_conn	*c;
	struct timespec		 ts;
	uint64_t		 rx, moved;
	char			 why[160];
	double			 now;
	int			 have;

	pthread_mutex_lock(&g->mtx);
	while (!g->quit) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&g->cond, &g->mtx, &ts);
		if (g->quit)
			break;
		now = clock_mono();
		for (c = g->head; c != NULL; c = c->next) {
			if (!c->evicted && c->fd >= 0 && guard_file_shrank(c)) {
				guard_cut(c, "the file it was sending shrank "
				    "(rewritten while it was downloaded)");
				continue;
			}
			if (c->cls == GC_WORKING || c->evicted || c->fd < 0)
				continue;
			have = tcp_bytes(c->fd, &rx, &moved) == 0;
			if (guard_check(g, c, now, have, rx, moved, why,
			    sizeof(why)))
				guard_cut(c, why);
		}
	}
	pthread_mutex_unlock(&g->mtx);
	return NULL;
}

/* ------------------------------------------------------------ the API */

struct http_guard *
http_guard_new(const struct http_guard_limits *lim)
{
	struct http_guard	*g;
	pthread_condattr_t	 ca;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	g->lim = *lim;
	pthread_mutex_init(&g->mtx, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (lim->deadline > 0 || lim->min_rate > 0) {
		if (pthread_create(&g->watch, NULL, guard_watch, g) != 0) {
			http_guard_free(g);
			return NULL;
		}
		g->watching = 1;
	}
	return g;
}

void
http_guard_free(struct http_guard *g)
{
	if (g == NULL)
		return;
	if (g->watching) {
		pthread_mutex_lock(&g->mtx);
		g->quit = 1;
		pthread_cond_signal(&g->cond);
		pthread_mutex_unlock(&g->mtx);
		pthread_join(g->watch, NULL);
	}
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->mtx);
	free(g);
}

/* The client's address, IPv4 mapped into IPv6; zeros when there is none. */
static void
conn_addr(struct MHD_Connection *conn, unsigned char out[16])
{
	const union MHD_ConnectionInfo	*ci;
	const struct sockaddr		*sa;

	memset(out, 0, 16);
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci == NULL || (sa = ci->client_addr) == NULL)
		return;
	if (sa->sa_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)(const void *)sa)
		    ->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6)
		memcpy(out, &((const struct sockaddr_in6 *)(const void *)sa)
		    ->sin6_addr, 16);
}

void
http_guard_notify(void *cls, struct MHD_Connection *conn,
    void **socket_context, enum MHD_ConnectionNotificationCode code)
{
	struct http_guard	*g = cls;
	struct guard_conn	*c, *v;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		if ((c = calloc(1, sizeof(*c))) == NULL)
			return;	/* unguarded: it just cannot be evicted */
		ci = MHD_get_connection_info(conn,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		c->fd = ci != NULL ? ci->connect_fd : -1;
		c->file_fd = -1;
		c->g = g;
		conn_addr(conn, c->addr);
		pthread_mutex_lock(&g->mtx);
		guard_enter(c, GC_IDLE, clock_mono());
		c->prev = g->tail;
		if (g->tail != NULL)
			g->tail->next = c;
		else
			g->head = c;
		g->tail = c;
		g->open++;
		if ((v = guard_victim(g, c)) != NULL)
			guard_cut(v, "room for a new connection");
		pthread_mutex_unlock(&g->mtx);
		*socket_context = c;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || (c = *socket_context) == NULL)
		return;
	pthread_mutex_lock(&g->mtx);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		g->head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	else
		g->tail = c->prev;
	g->open--;
	guard_file_drop(c);
	pthread_mutex_unlock(&g->mtx);
	*socket_context = NULL;
	free(c);
}

static struct guard_conn *
conn_guarded(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;

	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci != NULL ? ci->socket_context : NULL;
}

static void
conn_enter(struct MHD_Connection *conn, enum guard_class cls)
{
	struct guard_conn *c;

	/* Idle to idle too: a request answered without a class of its own
	 * (/health, a refusal) restarts the head deadline's clock. */
	if ((c = conn_guarded(conn)) == NULL || (c->cls == cls &&
	    cls == GC_WORKING))
		return;
	pthread_mutex_lock(&c->g->mtx);
	guard_enter(c, cls, clock_mono());
	pthread_mutex_unlock(&c->g->mtx);
}

void
http_guard_trust(struct MHD_Connection *conn, unsigned timeout_s)
{
	conn_enter(conn, GC_WORKING);
	if (timeout_s > 0)
		MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
		    timeout_s);
}

void
http_guard_receiving(struct MHD_Connection *conn)
{
	conn_enter(conn, GC_RECEIVING);
}

void
http_guard_bearer(struct MHD_Connection *conn, unsigned timeout_s)
{
	struct guard_conn *c;

	http_guard_trust(conn, timeout_s);
	if ((c = conn_guarded(conn)) != NULL)
		c->bearer = 1;	/* only this connection's thread reads it */
}

void
http_guard_untrust(struct MHD_Connection *conn)
{
	struct guard_conn *c;

	if ((c = conn_guarded(conn)) == NULL)
		return;
	if (c->file_fd != -1) {
		pthread_mutex_lock(&c->g->mtx);
		guard_file_drop(c);
		pthread_mutex_unlock(&c->g->mtx);
	}
	conn_enter(conn, c->bearer ? GC_WORKING : GC_IDLE);
}

void
http_guard_file(struct MHD_Connection *conn, int fd, uint64_t size)
{
	struct guard_conn	*c;
	int			 dfd;

	if ((c = conn_guarded(conn)) == NULL ||
	    (dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) == -1)
		return;		/* unwatched: the floor still cuts it */
	pthread_mutex_lock(&c->g->mtx);
	guard_file_drop(c);
	c->file_fd = dfd;
	c->file_size = size;
	pthread_mutex_unlock(&c->g->mtx);
}

int
http_guard_transfer(struct MHD_Connection *conn, const void *link,
    size_t linklen, char *why, size_t whylen)
{
	struct guard_conn	*c;
	struct sha256		 h;
	unsigned char		 d[SHA256_LEN];
	int			 r;

	if ((c = conn_guarded(conn)) == NULL)
		return 0;
	sha256_init(&h);
	sha256_update(&h, link, linklen);
	sha256_final(&h, d);
	pthread_mutex_lock(&c->g->mtx);
	if ((r = guard_admit(c->g, c, d, why, whylen)) == 0) {
		memcpy(c->link, d, sizeof(c->link));
		guard_enter(c, GC_TRANSFER, clock_mono());
	}
	pthread_mutex_unlock(&c->g->mtx);
	/* Silence for two windows: closed even where the floor cannot be
	 * read (no TCP_INFO); where it can, the floor comes first. */
	if (r == 0 && c->g->lim.grace > 0)
		MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
		    2 * c->g->lim.grace);
	return r;
}
