/*
 * pool.c: the supervisor's table of per-user sandboxes.
 *
 * One entry (struct pool_entry: what the supervisor knows of a user's
 * sandbox, whichever backend runs it) per user seen.  At most one thread works on a user's sandbox at
 * a time (the busy flag); the others wait on the condition variable, so 20
 * concurrent first requests create one container and all use it.  Requests
 * in flight are counted so that the idle reaper never stops a sandbox that
 * is serving a call or holding a stream open.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "backend.h"
#include "banned.h"

#define POOL_IDLE_MAX	16

struct pool_entry {
	char		 user[USER_ID_MAX + 1];
	char		 label[USER_ID_MAX + 32];	/* for logs */
	struct agent_addr addr;		/* from the last ensure */
	enum sb_state	 state;
	int		 busy;		/* a thread is starting or stopping it */
	int		 inflight;	/* requests being served */
	unsigned	 gen;		/* bumped by every successful ensure */
	int		 recheck;	/* adopted running: ensure it once */
	time_t		 last_used;	/* CLOCK_MONOTONIC seconds */
	int		 idle_fds[POOL_IDLE_MAX];	/* kept agent connections */
	int		 nidle;
	struct pool_entry	*next;
};

static void	 conns_drop(struct pool_entry *);

static pthread_mutex_t	 lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 cond = PTHREAD_COND_INITIALIZER;
static struct pool_entry	*sandboxes;
static const struct conf *conf;
static struct backend	*backend;

/* Whole seconds are what idle times are kept in. */
static time_t
mono_now(void)
{
	return (time_t)clock_mono();
}

const char *
pool_state_name(enum sb_state s)
{
	static const char *names[SB_NSTATES] = { "unknown", "starting",
	    "ready", "stopping", "stopped", "failed" };

	return names[s];
}

int
pool_init(const struct conf *c, struct backend *b)
{
	conf = c;
	backend = b;
	return 0;
}

/* Called with lock held. */
static struct pool_entry *
find(const char *user, int add)
{
	struct pool_entry	*sb;

	for (sb = sandboxes; sb != NULL; sb = sb->next)
		if (strcmp(sb->user, user) == 0)
			return sb;
	if (!add || (sb = calloc(1, sizeof(*sb))) == NULL)
		return NULL;
	snprintf(sb->user, sizeof(sb->user), "%s", user);
	backend->label(backend, user, sb->label, sizeof(sb->label));
	sb->state = SB_UNKNOWN;
	sb->last_used = mono_now();
	sb->next = sandboxes;
	sandboxes = sb;
	return sb;
}

int
pool_adopt(void)
{
	struct backend_sandbox *list;
	struct berr	 e;
	struct pool_entry	*sb;
	size_t		 i, n;
	int		 adopted = 0;

	if (backend->list(backend, &list, &n, &e) == -1) {
		log_warnx("cannot list sandboxes to adopt: %s", e.msg);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (user_id_valid(list[i].user, strlen(list[i].user)) == -1)
			continue;
		pthread_mutex_lock(&lock);
		if ((sb = find(list[i].user, 1)) != NULL) {
			/*
			 * Running, but made by an earlier start: the first
			 * request checks it as this one would make it (its
			 * link key and public URL may have changed).
			 */
			if (list[i].state == BK_RUNNING) {
				sb->state = SB_READY;
				sb->recheck = 1;
			} else
				sb->state = SB_STOPPED;
			/*
			 * Generation 0 means "none" to pool_acquire: an adopted
			 * sandbox that died would never be looked at again.
			 */
			if (sb->gen == 0)
				sb->gen = 1;
			sb->last_used = mono_now();
			adopted++;
		}
		pthread_mutex_unlock(&lock);
	}
	free(list);
	log_info("adopted %d sandbox(es)", adopted);
	return 0;
}

/* May this user get a new container?  1, 0 (refused, msg set), -1. */
static int
may_create(const char *user, struct berr *err)
{
	struct berr	 e;
	int		 r;

	switch (conf->provisioning) {
	case PROV_AUTO:
		return 1;
	case PROV_ALLOWLIST:
		if (conf_user_listed(conf, user))
			return 1;
		snprintf(err->msg, sizeof(err->msg), "user \"%s\" has no "
		    "sandbox here: this supervisor only serves the users listed "
		    "in its configuration (provisioning: allowlist)", user);
		return 0;
	case PROV_MANUAL:
		/* vivariumctl add-user registers the user. */
		if ((r = backend->registered(backend, user, &e)) == 1)
			return 1;
		if (r == -1) {
			snprintf(err->msg, sizeof(err->msg), "%s", e.msg);
			err->status = e.status == 0 ? 503 : 500;
			return -1;
		}
		snprintf(err->msg, sizeof(err->msg), "user \"%s\" has no "
		    "sandbox here and this supervisor does not create them "
		    "(provisioning: manual): ask the operator to run "
		    "`vivariumctl add-user %s`", user, user);
		return 0;
	}
	return 0;
}

struct pool_entry *
pool_acquire(const char *user, unsigned stale_gen, struct berr *err)
{
	struct pool_entry	*sb;
	struct berr	 e;
	double		 t0;
	struct agent_addr addr;
	int		 created = 0, allow, r;

	memset(&addr, 0, sizeof(addr));
	memset(err, 0, sizeof(*err));
	pthread_mutex_lock(&lock);
	if ((sb = find(user, 1)) == NULL) {
		pthread_mutex_unlock(&lock);
		err->status = 500;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return NULL;
	}
	for (;;) {
		if (sb->busy) {
			pthread_cond_wait(&cond, &lock);
			continue;
		}
		if (sb->state == SB_READY && !sb->recheck && (stale_gen == 0
		    || sb->gen != stale_gen)) {
			sb->inflight++;
			sb->last_used = mono_now();
			pthread_mutex_unlock(&lock);
			backend->used(backend, sb->user);
			return sb;
		}
		break;
	}
	sb->busy = 1;
	sb->state = SB_STARTING;
	conns_drop(sb);
	pthread_mutex_unlock(&lock);

	t0 = clock_mono();
	if (conf->provisioning != PROV_AUTO
	    && (allow = may_create(user, err)) != 1) {
		/* A sandbox made earlier (e.g. by vivariumctl) still counts. */
		struct backend_info info;
		if (allow == 0 && backend->inspect(backend, user, &info, &e) == 0
		    && info.state != BK_MISSING)
			allow = 1;
	} else
		allow = 1;
	if (allow == 1) {
		r = backend->ensure(backend, user, &created, &addr, &e);
		if (r == -1) {
			snprintf(err->msg, sizeof(err->msg), "%s", e.msg);
			err->status = e.status == 0 ? 503 : e.status == 504 ? 504
			    : e.status == 400 ? 400 : 500;
			if (e.status == 0)
				snprintf(err->msg, sizeof(err->msg), "the sandbox "
				    "for \"%s\" cannot be started right now: "
				    "%.380s", user, e.msg);
		}
	} else {
		r = -1;
		if (err->status == 0)
			err->status = 400;
	}

	pthread_mutex_lock(&lock);
	sb->busy = 0;
	if (r == 0) {
		sb->state = SB_READY;
		/* Only when it changed: requests read it without the lock. */
		if (memcmp(&sb->addr, &addr, sizeof(addr)) != 0)
			sb->addr = addr;
		sb->recheck = 0;
		sb->gen++;
		if (sb->gen == 0)
			sb->gen = 1;
		sb->inflight++;
		sb->last_used = mono_now();
	} else
		sb->state = SB_FAILED;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	if (r == 0) {
		backend->used(backend, sb->user);
		if (created)
			metrics_spawn(clock_mono() - t0);
		log_info("%s: ready in %.0f ms%s", sb->label,
		    (clock_mono() - t0) * 1000, created ? " (created)" : "");
		return sb;
	}
	log_warnx("%s: %s", user, err->msg);
	return NULL;
}

void
pool_release(struct pool_entry *sb)
{
	pthread_mutex_lock(&lock);
	sb->inflight--;
	sb->last_used = mono_now();
	pthread_mutex_unlock(&lock);
	backend->used(backend, sb->user);
}

int
pool_conn_take(struct pool_entry *sb)
{
	int	 fd = -1;

	pthread_mutex_lock(&lock);
	if (sb->nidle > 0)
		fd = sb->idle_fds[--sb->nidle];
	pthread_mutex_unlock(&lock);
	return fd;
}

void
pool_conn_put(struct pool_entry *sb, int fd)
{
	pthread_mutex_lock(&lock);
	if (sb->state == SB_READY && sb->nidle < POOL_IDLE_MAX) {
		sb->idle_fds[sb->nidle++] = fd;
		fd = -1;
	}
	pthread_mutex_unlock(&lock);
	if (fd != -1)
		close(fd);
}

/* Called with lock held: the sandbox stopped or went away. */
static void
conns_drop(struct pool_entry *sb)
{
	while (sb->nidle > 0)
		close(sb->idle_fds[--sb->nidle]);
}

const struct agent_addr *
pool_addr(const struct pool_entry *sb)
{
	return &sb->addr;
}

unsigned
pool_gen(const struct pool_entry *sb)
{
	return sb->gen;
}

void
pool_reap(void)
{
	struct pool_entry	*sb;
	struct berr	 e;
	time_t		 now;
	int		 r;

	if (conf->idle_stop_after <= 0)
		return;
	pthread_mutex_lock(&lock);
	for (;;) {
		now = mono_now();
		for (sb = sandboxes; sb != NULL; sb = sb->next)
			if (sb->state == SB_READY && !sb->busy
			    && sb->inflight == 0
			    && now - sb->last_used >= conf->idle_stop_after)
				break;
		if (sb == NULL)
			break;
		sb->busy = 1;
		sb->state = SB_STOPPING;
		conns_drop(sb);
		pthread_mutex_unlock(&lock);
		log_info("%s: idle for %lds, stopping", sb->label,
		    (long)(now - sb->last_used));
		r = backend->stop(backend, sb->user, &e);
		if (r == -1)
			log_warnx("%s: %s", sb->label, e.msg);
		pthread_mutex_lock(&lock);
		sb->busy = 0;
		/* Unknown after a failed stop: the next request looks. */
		sb->state = r == 0 ? SB_STOPPED : SB_UNKNOWN;
		pthread_cond_broadcast(&cond);
	}
	pthread_mutex_unlock(&lock);
}

void
pool_count_states(long counts[SB_NSTATES])
{
	struct pool_entry	*sb;

	memset(counts, 0, sizeof(long) * SB_NSTATES);
	pthread_mutex_lock(&lock);
	for (sb = sandboxes; sb != NULL; sb = sb->next)
		counts[sb->state]++;
	pthread_mutex_unlock(&lock);
}

void
pool_shutdown(void)
{
	struct pool_entry	*sb, *next;

	pthread_mutex_lock(&lock);
	for (sb = sandboxes; sb != NULL; sb = next) {
		next = sb->next;
		conns_drop(sb);
		free(sb);
	}
	sandboxes = NULL;
	pthread_mutex_unlock(&lock);
}
