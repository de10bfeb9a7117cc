/*
 * resolve.c: getaddrinfo off the event loop.
 *
 * A few threads take names from a queue, call getaddrinfo and put the job on
 * a done list, then poke an eventfd the loop watches.  The loop owns the
 * connection; a job whose connection went away is only marked cancelled
 * (conn = NULL) and freed when it comes back, so no thread ever touches a
 * freed connection.  The threads see nothing but host names.
 */
#include <sys/eventfd.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netdb.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "banned.h"

static pthread_mutex_t	 mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 cond = PTHREAD_COND_INITIALIZER;
static struct resolve_job *todo, **todo_tail = &todo;
/* One per event loop thread: its finished jobs and its doorbell. */
struct rworker {
	int			 efd;
	struct resolve_job	*done;
	struct rworker		*next;	/* all of them, kept for the process */
};
static struct rworker	*rworkers;
static _Thread_local struct rworker *me;

static void *
resolver_main(void *arg)
{
	struct resolve_job	*j;
	struct addrinfo		 hints;
	uint64_t		 one = 1;
	int			 live;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mtx);
		while (todo == NULL)
			pthread_cond_wait(&cond, &mtx);
		j = todo;
		todo = j->next;
		if (todo == NULL)
			todo_tail = &todo;
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
		j->next = j->w->done;
		j->w->done = j;
		pthread_mutex_unlock(&mtx);
		if (write(j->w->efd, &one, sizeof(one)) == -1 && errno != EAGAIN)
			log_warn("resolver: eventfd write");
	}
	return NULL;
}

int
resolver_start(int nthreads)
{
	pthread_attr_t	 attr;
	pthread_t	 t;
	sigset_t	 all, old;
	int		 i, rc;

	/* Signals belong to the loop thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (i = 0; i < nthreads; i++)
		if ((rc = pthread_create(&t, &attr, resolver_main, NULL)) != 0) {
			errno = rc;
			log_warn("pthread_create");
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			return -1;
		}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
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

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return -1;
	j->conn = c;
	j->w = me;
	snprintf(j->host, sizeof(j->host), "%s", host);
	pthread_mutex_lock(&mtx);
	*todo_tail = j;
	todo_tail = &j->next;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&mtx);
	*jobp = j;
	return 0;
}

void
resolver_cancel(struct resolve_job *j)
{
	/* A worker that already took the job finishes its lookup; the
	 * loop drops the result. */
	pthread_mutex_lock(&mtx);
	j->conn = NULL;
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
