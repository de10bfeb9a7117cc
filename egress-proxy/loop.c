/*
 * loop.c: the epoll loop, the listeners, connection caps and timers.
 *
 * Level-triggered epoll over non-blocking sockets; each socket's owner
 * (the listeners and the resolver here, connections in relay.c) decides
 * which events it wants and gets them through its ev's callback (ev.c).
 * Deadlines are checked on a 100 ms tick by a walk over all connections,
 * which costs little at the scale of one household and keeps the timer
 * code obvious.
 */
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "hash.h"
#include "banned.h"

#define TICK_MS		100
#define SELF_REFRESH_MS	30000	/* a backstop: address changes are followed (policy.c) */
#define HOST_REFRESH_MS	2000	/* a stat(2) of the host address file */
#define LABELS_REFRESH_MS 1000	/* and of the user labels file */
#define BACKOFF_MS	200	/* listeners rest this long when out of fds */
#define CC_BUCKETS	1024

/*
 * Several workers may run this loop, each in its own thread with its own
 * epoll set and its own connections; they share the listening sockets
 * (EPOLLEXCLUSIVE wakes one of them per connection), the per-client counts
 * and the total.
 */
static volatile sig_atomic_t quit;
static int	 listen_fds[EGRESS_MAX_LISTEN];
static int	 nlisten_fds;
static _Atomic uint64_t last_emfile;
static pthread_mutex_t cc_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t started;	/* every worker set up */

static _Thread_local const struct egress_conf *wconf;	/* this worker's */
static _Thread_local struct ev listeners[EGRESS_MAX_LISTEN];
static _Thread_local int reserve_fd = -1;
static _Thread_local uint64_t paused_until;

struct clientcount {
	struct clientcount *next;
	int		 family;
	uint8_t		 addr[16];
	long		 n;
	unsigned	 bucket;
};
static struct clientcount *cc_table[CC_BUCKETS];

/* ------------------------------------------------------------ per client */

/* Finds or makes the count for a client and takes one slot, unless the
 * client is at max.  Returns NULL when refused (*busy set) or on ENOMEM. */
static struct clientcount *
clientcount_take(const struct sockaddr_storage *ss, long max, int *busy)
{
	struct clientcount *cc;
	const uint8_t	*b;
	size_t		 n;
	uint64_t	 h;

	if (ss->ss_family == AF_INET6) {
		b = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
		n = 16;
	} else {
		b = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
		n = 4;
	}
	h = hash_bytes(HASH_INIT, b, n) % CC_BUCKETS;
	*busy = 0;
	pthread_mutex_lock(&cc_mtx);
	for (cc = cc_table[h]; cc != NULL; cc = cc->next)
		if (cc->family == ss->ss_family && memcmp(cc->addr, b, n) == 0)
			break;
	if (cc == NULL && (cc = calloc(1, sizeof(*cc))) != NULL) {
		cc->family = ss->ss_family;
		memcpy(cc->addr, b, n);
		cc->bucket = h;
		cc->next = cc_table[h];
		cc_table[h] = cc;
	}
	if (cc != NULL && cc->n >= max) {
		*busy = 1;
		cc = NULL;
	} else if (cc != NULL)
		cc->n++;
	pthread_mutex_unlock(&cc_mtx);
	return cc;
}

static void
clientcount_release(struct clientcount *cc)
{
	struct clientcount **pp;

	pthread_mutex_lock(&cc_mtx);
	if (--cc->n <= 0) {
		for (pp = &cc_table[cc->bucket]; *pp != NULL; pp = &(*pp)->next)
			if (*pp == cc) {
				*pp = cc->next;
				break;
			}
		free(cc);
	}
	pthread_mutex_unlock(&cc_mtx);
}

/* ------------------------------------------------------------ listeners */

static int
listen_on(const char *spec)
{
	struct addrinfo	 hints, *res = NULL;
	struct sockaddr_storage ss;
	char		 host[256], port[8];
	long		 p;
	int		 fd = -1, one = 1, rc;

	/* conf.c checked it with the same parser. */
	if (config_parse_hostport(spec, host, sizeof(host), &p) == -1)
		goto bad;
	snprintf(port, sizeof(port), "%ld", p);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res)) != 0) {
		log_warnx("listen %s: %s", spec, gai_strerror(rc));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1) {
		log_warn("socket");
		goto fail;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Accepted sockets inherit TCP_NODELAY: one system call less per
	 * connection. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (res->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) == -1) {
		log_warn("bind %s", spec);
		goto fail;
	}
	if (listen(fd, 1024) == -1) {
		log_warn("listen %s", spec);
		goto fail;
	}
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, res->ai_addr, res->ai_addrlen);
	policy_add_listener(&ss);
	freeaddrinfo(res);
	listen_fds[nlisten_fds++] = fd;
	log_info("listening on %s", spec);
	return 0;
bad:
	log_warnx("listen %s: expected host:port or [v6]:port", spec);
	return -1;
fail:
	if (fd != -1)
		close(fd);
	freeaddrinfo(res);
	return -1;
}

/* EPOLLEXCLUSIVE cannot be modified, only added and deleted. */
static void
listeners_pause(int pause)
{
	struct epoll_event e;
	int	 i;

	for (i = 0; i < nlisten_fds; i++) {
		struct ev *l = &listeners[i];

		if (pause && l->reg) {
			epoll_ctl(ev_epfd, EPOLL_CTL_DEL, l->fd, NULL);
			l->reg = 0;
		} else if (!pause && !l->reg) {
			memset(&e, 0, sizeof(e));
			e.events = EPOLLIN | EPOLLEXCLUSIVE;
			e.data.ptr = l;
			if (epoll_ctl(ev_epfd, EPOLL_CTL_ADD, l->fd, &e) == -1)
				log_warn("epoll_ctl listener");
			else
				l->reg = 1;
		}
	}
}

/* A refusal for a connection we cannot take: best effort, no waiting. */
static void
refuse(int fd, const char *why)
{
	char	 msg[256];
	int	 n;

	n = snprintf(msg, sizeof(msg), "HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Type: text/plain\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\nvivarium-egress: %s\n",
	    strlen(why) + 18, why);
	if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == -1)
		log_debug("refuse: %s", strerror(errno));
	close(fd);
}

/* The listeners' callback. */
static void
accept_some(struct ev *l, uint32_t events)
{
	const struct egress_conf *conf = wconf;
	struct sockaddr_storage ss;
	struct clientcount *cc;
	struct conn	*c;
	socklen_t	 len;
	char		 a[INET6_ADDRSTRLEN], user[LABEL_MAX + 8];
	int		 fd, i, busy;

	for (i = 0; i < 64; i++) {
		len = sizeof(ss);
		fd = accept4(l->fd, (struct sockaddr *)&ss, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EAGAIN || errno == EINTR ||
			    errno == ECONNABORTED)
				return;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/*
				 * Out of descriptors.  Level-triggered epoll
				 * would report the listener forever: spend the
				 * reserve descriptor to take one connection off
				 * the queue and close it, then rest the
				 * listeners a moment.
				 */
				if (now_ms() - last_emfile >= 10000) {
					last_emfile = now_ms();
					log_warn("accept (shedding connections "
					    "until descriptors free up)");
				}
				if (reserve_fd != -1) {
					close(reserve_fd);
					fd = accept4(l->fd, NULL, NULL, 0);
					if (fd != -1)
						close(fd);
					reserve_fd = open("/dev/null",
					    O_RDONLY | O_CLOEXEC);
				}
				listeners_pause(1);
				paused_until = now_ms() + BACKOFF_MS;
				return;
			}
			log_warn("accept");
			return;
		}
		if (conn_count >= conf->max_conns) {
			refuse(fd, "too many connections");
			continue;
		}
		if ((cc = clientcount_take(&ss, conf->max_per_client,
		    &busy)) == NULL) {
			if (busy) {
				memcpy(user, " user=", 6);
				if (labels_find(&ss, user + 6,
				    sizeof(user) - 6) == 0)
					user[0] = '\0';
				log_info("client=%s%s verdict=busy reason=\"too "
				    "many connections from this client\"",
				    sockaddr_str(&ss, a, sizeof(a)), user);
				refuse(fd, "too many connections from this "
				    "client");
			} else
				close(fd);
			continue;
		}
		if ((c = conn_new(conf, fd, &ss)) == NULL) {
			clientcount_release(cc);
			close(fd);
			continue;
		}
		c->cc = cc;
		c->release = clientcount_release;
		/* Clients send their request right after connecting, and a
		 * connection waiting in the accept queue usually has it
		 * already: read now rather than after another epoll_wait. */
		c->ev[SIDE_CLIENT].cb(&c->ev[SIDE_CLIENT], EPOLLIN);
	}
}

/* ------------------------------------------------------------ the loop */

static void
on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

/* The resolver's callback: its finished lookups. */
static void
resolver_ready(struct ev *ev, uint32_t events)
{
	struct resolve_job *j, *jn;

	for (j = resolver_take(); j != NULL; j = jn) {
		jn = j->next;
		if (j->conn != NULL)
			conn_resolved(j);
		resolve_job_free(j);
	}
}

struct worker_arg {
	const struct egress_conf *conf;
	int		 id;
	int		 rc;
};

static void *
worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	const struct egress_conf *conf = wa->conf;
	struct epoll_event evs[256];
	struct ev	 rev;
	struct conn	*c, *next;
	uint64_t	 now, next_tick = 0, next_self, next_host, next_labels;
	int		 i, n;

	wa->rc = -1;
	wconf = conf;
	memset(&rev, 0, sizeof(rev));
	rev.cb = resolver_ready;
	rev.fd = -1;
	if ((ev_epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		log_warn("epoll_create1");
	else if ((rev.fd = resolver_register()) != -1)
		ev_set(&rev, EPOLLIN);
	reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/*
	 * No worker accepts before every worker has its descriptors: the
	 * first one's clients could otherwise use them all up (a small
	 * RLIMIT_NOFILE), and the last worker to start, the main thread,
	 * would fail and take the proxy down with it.
	 */
	pthread_barrier_wait(&started);
	if (ev_epfd == -1 || rev.fd == -1)
		return NULL;
	/* Every thread runs (the listening
	 * lines come before the threads, which may yet fail to start). */
	if (wa->id == 0)
		log_info("ready: %u workers", (unsigned)conf->workers);
	for (i = 0; i < nlisten_fds; i++) {
		listeners[i].cb = accept_some;
		listeners[i].fd = listen_fds[i];
		listeners[i].reg = 0;
	}
	listeners_pause(0);
	next_self = now_ms() + SELF_REFRESH_MS;
	next_host = now_ms() + HOST_REFRESH_MS;
	next_labels = now_ms() + LABELS_REFRESH_MS;

	while (!quit) {
		n = epoll_wait(ev_epfd, evs, 256, TICK_MS);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			log_warn("epoll_wait");
			break;
		}
		ev_dispatch(evs, n);
		now = now_ms();
		if (now >= next_tick) {
			for (c = conn_list; c != NULL; c = next) {
				next = c->next;
				conn_tick(c, now);
			}
			next_tick = now + TICK_MS;
			if (paused_until != 0 && now >= paused_until) {
				paused_until = 0;
				if (reserve_fd == -1)
					reserve_fd = open("/dev/null",
					    O_RDONLY | O_CLOEXEC);
				listeners_pause(0);
			}
			if (wa->id == 0 && now >= next_self) {
				policy_refresh_self();
				next_self = now + SELF_REFRESH_MS;
			}
			if (wa->id == 0 && now >= next_host) {
				policy_refresh_host();
				next_host = now + HOST_REFRESH_MS;
			}
			if (wa->id == 0 && now >= next_labels) {
				labels_refresh();
				next_labels = now + LABELS_REFRESH_MS;
			}
		}
		conn_reap();
		conn_log_flush();
	}
	for (c = conn_list; c != NULL; c = next) {
		next = c->next;
		snprintf(c->reason, sizeof(c->reason), "proxy shutting down");
		conn_free(c);
	}
	conn_reap();
	conn_log_flush();
	if (reserve_fd != -1)
		close(reserve_fd);
	close(ev_epfd);
	ev_epfd = -1;
	wa->rc = 0;
	return NULL;
}

int
loop_run(const struct egress_conf *conf)
{
	struct worker_arg *wa;
	struct sigaction sa;
	pthread_t	*t;
	sigset_t	 all, old;
	int		 i, rc = 0, nw = (int)conf->workers;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	/* The host file was read by main (policy_open_host). */
	if (policy_watch_self() == -1) {
		log_warn("cannot follow the proxy's own addresses (netlink)");
		return -1;
	}
	if (conf->host_addresses == NULL)
		log_warnx("host_addresses: none: the host's addresses are not "
		    "refused, only the proxy's own and its networks'");
	for (i = 0; i < conf->nlisten; i++)
		if (listen_on(conf->listen[i]) == -1)
			return -1;
	if (resolver_start((int)conf->resolver_threads) == -1)
		return -1;
	if ((wa = calloc((size_t)nw, sizeof(*wa))) == NULL ||
	    (t = calloc((size_t)nw, sizeof(*t))) == NULL)
		fatal("calloc");
	if ((errno = pthread_barrier_init(&started, NULL, (unsigned)nw)) != 0)
		fatal("pthread_barrier_init");
	/* Extra workers leave the signals to this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 1; i < nw; i++) {
		wa[i].conf = conf;
		wa[i].id = i;
		if ((errno = pthread_create(&t[i], NULL, worker_main,
		    &wa[i])) != 0)
			fatal("pthread_create");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	wa[0].conf = conf;
	wa[0].id = 0;
	worker_main(&wa[0]);
	quit = 1;
	for (i = 1; i < nw; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < nw; i++)
		if (wa[i].rc != 0)
			rc = -1;
	log_info("shut down");
	pthread_barrier_destroy(&started);
	policy_free();		/* the workers that classify have all ended */
	free(wa);
	free(t);
	return rc;
}
