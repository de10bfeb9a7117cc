/*
 * resolve.c: getaddrinfo off the event loop.
 *
 * Threads take names from per-client queues, call getaddrinfo and put the job on
 * a done list, then poke an eventfd the loop watches.  The loop owns the
 * connection; a job whose connection went away is only marked cancelled
 * (conn = NULL) and freed when it comes back, so no thread ever touches a
 * freed connection.  The threads see nothing but host names.
 */
#include <sys/eventfd.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netdb.h>

#include <arpa/inet.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "banned.h"

/*
 * Fairness.  A lookup that never answers holds its thread for as long as
 * the resolver library waits (seconds to minutes), so one sandbox asking
 * for names nobody answers could hold every thread and leave every other
 * sandbox's lookups queued until they time out.  Hence: each client (the
 * peer address) has its own queue and at most PER_CLIENT lookups running;
 * threads take the next job from the clients in turn (round robin), not
 * the oldest job of all; and when no thread is idle a new one is started,
 * up to MAX_THREADS, so a lookup of one client never waits behind another
 * client's stuck ones until MAX_THREADS / PER_CLIENT clients are all
 * stuck at once.  Threads beyond the configured number end after
 * IDLE_EXIT_S seconds without work.
 */
#define PER_CLIENT	4
#define MAX_THREADS	64
#define IDLE_EXIT_S	30

struct rclient {
	char			 key[INET6_ADDRSTRLEN];
	int			 running;
	int			 ready;		/* on the ready ring */
	struct resolve_job	*q, **qtail;	/* waiting, oldest first */
	struct rclient		*next;		/* all clients with jobs */
	struct rclient		*rnext;		/* the ready ring, FIFO */
};

static pthread_mutex_t	 mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 cond = PTHREAD_COND_INITIALIZER;
static struct rclient	*clients;
static struct rclient	*ready, **ready_tail = &ready;
static int		 nthreads, nidle, minthreads;
static int		 nsignalled;	/* idle threads woken, not yet running */
static pthread_attr_t	 tattr;
/* One per event loop thread: its finished jobs and its doorbell. */
struct rworker {
	int			 efd;
	struct resolve_job	*done;
	struct rworker		*next;	/* all of them, kept for the process */
};
static struct rworker	*rworkers;
static _Thread_local struct rworker *me;

static void	*resolver_main(void *);

/* With mtx held: puts a client with waiting jobs and room on the ring. */
static void
client_wake(struct rclient *rc)
{
	if (rc->ready || rc->q == NULL || rc->running >= PER_CLIENT)
		return;
	rc->ready = 1;
	rc->rnext = NULL;
	*ready_tail = rc;
	ready_tail = &rc->rnext;
}

/* With mtx held: forgets a client that has nothing left. */
static void
client_gc(struct rclient *rc)
{
	struct rclient	**pp;

	if (rc->running > 0 || rc->q != NULL || rc->ready)
		return;
	for (pp = &clients; *pp != NULL; pp = &(*pp)->next)
		if (*pp == rc) {
			*pp = rc->next;
			break;
		}
	free(rc);
}

/* With mtx held: the next job, from the client whose turn it is. */
static struct resolve_job *
job_next(void)
{
	struct rclient		*rc;
	struct resolve_job	*j;

	if ((rc = ready) == NULL)
		return NULL;
	if ((ready = rc->rnext) == NULL)
		ready_tail = &ready;
	rc->ready = 0;
	j = rc->q;
	if ((rc->q = j->next) == NULL)
		rc->qtail = &rc->q;
	j->next = NULL;
	j->queued = 0;
	rc->running++;
	client_wake(rc);	/* to the back of the ring, if it has more */
	return j;
}

/* With mtx held: hands a job back to its loop thread. */
static void
job_done(struct resolve_job *j)
{
	uint64_t	 one = 1;

	j->next = j->w->done;
	j->w->done = j;
	if (write(j->w->efd, &one, sizeof(one)) == -1 && errno != EAGAIN)
		log_warn("resolver: eventfd write");
}

/* With mtx held: one more thread, when all are busy and the cap allows. */
static void
thread_more(void)
{
	pthread_t	 t;
	sigset_t	 all, old;
	int		 rc;

	if (nidle > nsignalled || nthreads >= MAX_THREADS)
		return;
	/* Signals belong to the loop threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if ((rc = pthread_create(&t, &tattr, resolver_main, NULL)) == 0)
		nthreads++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0 && nthreads == 0) {
		errno = rc;
		log_warn("resolver: pthread_create");
	}
}

static void *
resolver_main(void *arg)
{
	struct resolve_job	*j;
	struct rclient		*rc;
	struct addrinfo		 hints;
	struct timespec		 until;
	int			 live, timedout;

	(void)arg;
	pthread_mutex_lock(&mtx);
	for (;;) {
		while ((j = job_next()) == NULL) {
			nidle++;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += IDLE_EXIT_S;
			timedout = pthread_cond_timedwait(&cond, &mtx,
			    &until) == ETIMEDOUT;
			/* Awake and about to look, signalled or not: one
			 * wake-up fewer to wait for (a signal that met a
			 * timeout must not be counted for ever). */
			if (nsignalled > 0)
				nsignalled--;
			nidle--;
			if (timedout && ready == NULL && nthreads > minthreads) {
				nthreads--;
				pthread_mutex_unlock(&mtx);
				return NULL;
			}
		}
		live = j->conn != NULL;
		pthread_mutex_unlock(&mtx);

		if (live) {
			memset(&hints, 0, sizeof(hints));
			hints.ai_family = AF_UNSPEC;
			hints.ai_socktype = SOCK_STREAM;
			hints.ai_protocol = IPPROTO_TCP;
			j->err = getaddrinfo(j->host, NULL, &hints, &j->res);
		}

		pthread_mutex_lock(&mtx);
		rc = j->client;
		j->client = NULL;
		rc->running--;
		client_wake(rc);
		client_gc(rc);
		job_done(j);
	}
	return NULL;
}

int
resolver_start(int n)
{
	int	 i;

	pthread_attr_init(&tattr);
	pthread_attr_setdetachstate(&tattr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&tattr, 256 * 1024);
	pthread_mutex_lock(&mtx);
	minthreads = n;
	for (i = 0; i < n; i++) {
		thread_more();
		if (nthreads != i + 1) {
			pthread_mutex_unlock(&mtx);
			return -1;
		}
	}
	pthread_mutex_unlock(&mtx);
	return 0;
}

int
resolver_register(void)
{
	struct rworker	*w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return -1;
	if ((w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		log_warn("eventfd");
		free(w);
		return -1;
	}
	/* Lives as long as the process: a worker thread may end while a
	 * lookup for it is still running. */
	pthread_mutex_lock(&mtx);
	w->next = rworkers;
	rworkers = w;
	pthread_mutex_unlock(&mtx);
	me = w;
	return w->efd;
}

int
resolver_submit(struct conn *c, const char *host, struct resolve_job **jobp)
{
	struct resolve_job	*j;
	struct rclient		*rc;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return -1;
	j->conn = c;
	j->w = me;
	snprintf(j->host, sizeof(j->host), "%s", host);
	pthread_mutex_lock(&mtx);
	for (rc = clients; rc != NULL; rc = rc->next)
		if (strcmp(rc->key, c->peer) == 0)
			break;
	if (rc == NULL) {
		if ((rc = calloc(1, sizeof(*rc))) == NULL) {
			pthread_mutex_unlock(&mtx);
			free(j);
			return -1;
		}
		snprintf(rc->key, sizeof(rc->key), "%s", c->peer);
		rc->qtail = &rc->q;
		rc->next = clients;
		clients = rc;
	}
	j->client = rc;
	j->queued = 1;
	*rc->qtail = j;
	rc->qtail = &j->next;
	client_wake(rc);
	if (rc->ready) {
		/* An idle thread takes it, or a new one does. */
		if (nidle > nsignalled) {
			nsignalled++;
			pthread_cond_signal(&cond);
		} else
			thread_more();
	}
	pthread_mutex_unlock(&mtx);
	*jobp = j;
	return 0;
}

void
resolver_cancel(struct resolve_job *j)
{
	struct resolve_job	**pp;
	struct rclient		*rc;

	pthread_mutex_lock(&mtx);
	j->conn = NULL;
	/* A job still waiting leaves its queue now (and comes back to the
	 * loop to be freed), so a client's abandoned lookups never sit in
	 * front of its next ones.  One a thread took finishes its lookup;
	 * the loop drops the result. */
	if (j->queued) {
		rc = j->client;
		for (pp = &rc->q; *pp != NULL; pp = &(*pp)->next)
			if (*pp == j) {
				*pp = j->next;
				break;
			}
		rc->qtail = &rc->q;
		while (*rc->qtail != NULL)
			rc->qtail = &(*rc->qtail)->next;
		j->queued = 0;
		j->client = NULL;
		if (rc->q == NULL && rc->ready) {
			struct rclient **rp;

			for (rp = &ready; *rp != NULL; rp = &(*rp)->rnext)
				if (*rp == rc) {
					*rp = rc->rnext;
					break;
				}
			ready_tail = &ready;
			while (*ready_tail != NULL)
				ready_tail = &(*ready_tail)->rnext;
			rc->ready = 0;
		}
		client_gc(rc);
		job_done(j);
	}
	pthread_mutex_unlock(&mtx);
}

struct resolve_job *
resolver_take(void)
{
	struct resolve_job	*list;
	uint64_t		 n;

	if (read(me->efd, &n, sizeof(n)) == -1 && errno != EAGAIN)
		log_warn("resolver: eventfd read");
	pthread_mutex_lock(&mtx);
	list = me->done;
	me->done = NULL;
	pthread_mutex_unlock(&mtx);
	return list;
}

void
resolve_job_free(struct resolve_job *j)
{
	if (j->res != NULL)
		freeaddrinfo(j->res);
	free(j);
}
