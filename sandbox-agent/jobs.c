/*
 * jobs.c: every run_python call runs as a job, in a thread of its own.
 *
 * A foreground call starts a job and waits for it while watching its
 * client: the connection closing, a notifications/cancelled naming it
 * (cancel.c) or the agent stopping makes it stop the job, which kills the
 * run's process group at once through spawn's stop_fd.  While it waits, a
 * client that asked for progress is told once a second how long the run
 * has taken and what it printed last.
 *
 * A background job (run_python(background=true)) is the same job put in a
 * table under an unguessable id, where job_status finds it from any later
 * connection: LibreChat's sessions are short, and a run that takes minutes
 * must not depend on one.  A finished job's result is kept until it is
 * read, or for JOB_KEEP_S.
 *
 * Every job takes the workspace lock (workspace.c) before it runs, so jobs
 * and foreground runs of one workspace are queued together, one at a time.
 */
#include <sys/eventfd.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "agent.h"
#include "log.h"
#include "run.h"
#include "banned.h"

/* Output kept for job_status while a job runs (bytes, the tail). */
#define JOB_TAIL_MAX	4096
/* The last line shown in progress notifications (bytes). */
#define JOB_LINE_MAX	200

struct job {
	pthread_mutex_t	 mtx;
	pthread_cond_t	 cond;
	int		 refs;		/* under mtx */

	char		 id[JOB_ID_LEN + 1];	/* "" until registered */
	char		*workspace;	/* owned */
	char		*label;		/* owned */
	char		*code;		/* owned */
	struct run_limits lim;		/* strings borrowed from the config */
	struct run_request rq;
	long		 asked_s;	/* timeout_seconds as asked */

	int		 stop_fd;	/* eventfd: written once to stop */
	int		 done_fd;	/* eventfd: written once when done */
	double		 created;	/* monotonic */

	/* under mtx */
	int		 done;
	int		 stop_asked;
	char		 stop_why[128];
	double		 finished;	/* monotonic, when done */
	unsigned char	 tail[JOB_TAIL_MAX];
	size_t		 tail_len;
	unsigned long long out_total;
	char		 line[JOB_LINE_MAX + 1], last[JOB_LINE_MAX + 1];
	size_t		 line_len;

	/* written by the job's thread before done, read after */
	int		 rc;
	char		 errbuf[512];
	struct run_result res;

	struct job	*next;		/* in the table, under table_mtx */
};

static pthread_mutex_t	 table_mtx = PTHREAD_MUTEX_INITIALIZER;
/* Jobs started and not done, foreground and background (jobs_running). */
static int		 running;
static struct job	*table;
static int		 ntable;

static void
efd_signal(int fd)
{
	uint64_t one = 1;

	while (write(fd, &one, sizeof(one)) == -1 && errno == EINTR)
		;
}

/* ------------------------------------------------------------ output */

/*
 * Sees every byte the run prints (from the run's thread): keeps a short
 * tail for job_status and the last line for progress notifications.
 */
static void
job_observe(void *arg, int stream, const unsigned char *p, size_t n)
{
	struct job	*j = arg;
	size_t		 i, keep;

	(void)stream;
	pthread_mutex_lock(&j->mtx);
	j->out_total += n;
	if (n >= JOB_TAIL_MAX) {
		memcpy(j->tail, p + n - JOB_TAIL_MAX, JOB_TAIL_MAX);
		j->tail_len = JOB_TAIL_MAX;
	} else {
		if (j->tail_len + n > JOB_TAIL_MAX) {
			keep = JOB_TAIL_MAX - n;
			memmove(j->tail, j->tail + j->tail_len - keep, keep);
			j->tail_len = keep;
		}
		memcpy(j->tail + j->tail_len, p, n);
		j->tail_len += n;
	}
	for (i = 0; i < n; i++) {
		if (p[i] == '\n' || p[i] == '\r') {
			if (j->line_len > 0) {
				memcpy(j->last, j->line, j->line_len);
				j->last[j->line_len] = '\0';
			}
			j->line_len = 0;
		} else if (j->line_len < JOB_LINE_MAX)
			j->line[j->line_len++] = (char)p[i];
	}
	pthread_mutex_unlock(&j->mtx);
}

/*
 * Copies p into out as valid UTF-8 (bad bytes become '?'), NUL-terminated;
 * a character cut at the start (the tail began inside it) is dropped.
 */
static void
utf8_clean(const unsigned char *p, size_t n, char *out, size_t outlen)
{
	size_t	 i = 0, o = 0;
	int	 k;

	while (i < n && i < 3 && (p[i] & 0xc0) == 0x80)
		i++;
	while (i < n && o + 5 < outlen) {
		if (p[i] == 0) {
			i++;
			continue;
		}
		if ((k = utf8_seq(p + i, n - i)) <= 0) {
			out[o++] = '?';
			i++;
			continue;
		}
		memcpy(out + o, p + i, (size_t)k);
		o += (size_t)k;
		i += (size_t)k;
	}
	out[o] = '\0';
}

void
job_last_line(struct job *j, char *out, size_t outlen)
{
	unsigned char	 tmp[JOB_LINE_MAX + 1];
	size_t		 n;

	pthread_mutex_lock(&j->mtx);
	if (j->line_len > 0) {
		n = j->line_len;
		memcpy(tmp, j->line, n);
	} else {
		n = strlen(j->last);
		memcpy(tmp, j->last, n);
	}
	pthread_mutex_unlock(&j->mtx);
	utf8_clean(tmp, n, out, outlen);
}

void
job_output_so_far(struct job *j, char *out, size_t outlen,
    unsigned long long *total)
{
	unsigned char	 tmp[JOB_TAIL_MAX];
	size_t		 n;

	pthread_mutex_lock(&j->mtx);
	n = j->tail_len;
	memcpy(tmp, j->tail, n);
	*total = j->out_total;
	pthread_mutex_unlock(&j->mtx);
	utf8_clean(tmp, n, out, outlen);
}

/* ------------------------------------------------------------ life */

struct job *
job_new(const struct run_limits *lim, const char *code, size_t code_len,
    long timeout_s, long asked_s, int fresh, const char *workspace,
    const char *label)
{
	struct job	*j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	j->stop_fd = j->done_fd = -1;
	run_result_init(&j->res);
	if ((j->workspace = strdup(workspace)) == NULL ||
	    (j->label = strdup(label)) == NULL ||
	    (j->code = malloc(code_len + 1)) == NULL ||
	    (j->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1 ||
	    (j->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1)
		goto fail;
	memcpy(j->code, code, code_len);
	j->code[code_len] = '\0';
	pthread_mutex_init(&j->mtx, NULL);
	pthread_cond_init(&j->cond, NULL);
	j->refs = 1;
	j->lim = *lim;
	j->rq.code = j->code;
	j->rq.code_len = code_len;
	j->rq.timeout_s = timeout_s;
	j->rq.fresh = fresh;
	j->rq.workspace = j->workspace;
	j->rq.stop_fd = j->stop_fd;
	j->rq.observe = job_observe;
	j->rq.observe_arg = j;
	j->asked_s = asked_s;
	j->created = clock_mono();
	return j;
fail:
	if (j->stop_fd != -1)
		close(j->stop_fd);
	if (j->done_fd != -1)
		close(j->done_fd);
	free(j->code);
	free(j->label);
	free(j->workspace);
	free(j);
	return NULL;
}

static void
job_ref(struct job *j)
{
	pthread_mutex_lock(&j->mtx);
	j->refs++;
	pthread_mutex_unlock(&j->mtx);
}

void
job_unref(struct job *j)
{
	int	 last;

	if (j == NULL)
		return;
	pthread_mutex_lock(&j->mtx);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->mtx);
	if (!last)
		return;
	run_result_release(&j->res);
	close(j->stop_fd);
	close(j->done_fd);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->mtx);
	free(j->code);
	free(j->label);
	free(j->workspace);
	free(j);
}

static void *
job_main(void *arg)
{
	struct job	*j = arg;
	struct wslock	*lock;
	int		 swept = 0, stop;

	if ((lock = wslock_acquire(j->workspace)) == NULL) {
		j->rc = -1;
		snprintf(j->errbuf, sizeof(j->errbuf), "out of memory");
		goto done;
	}
	pthread_mutex_lock(&j->mtx);
	stop = j->stop_asked;
	pthread_mutex_unlock(&j->mtx);
	if (stop) {
		/* Stopped while it waited for an earlier run: never started. */
		j->rc = 0;
		j->res.stopped = 1;
		j->res.duration = 0;
		run_result_note(&j->res, "It was stopped before it started "
		    "(it was waiting for an earlier run in this workspace).");
	} else {
		sweep_run_begin();
		j->rc = run_python(&j->lim, &j->rq, &j->res, j->errbuf,
		    sizeof(j->errbuf));
		swept = sweep_run_end();
	}
	wslock_release(lock);
	if (j->rc == 0 && swept > 0)
		run_result_note(&j->res, "%d stray background process%s left "
		    "running in the sandbox %s stopped after the run; nothing "
		    "a run starts outlives it.", swept, swept == 1 ? "" : "es",
		    swept == 1 ? "was" : "were");
done:
	pthread_mutex_lock(&j->mtx);
	if (j->rc == 0 && j->res.stopped && j->stop_why[0])
		run_result_note(&j->res, "Stopped: %s.", j->stop_why);
	j->done = 1;
	j->finished = clock_mono();
	__atomic_sub_fetch(&running, 1, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->mtx);
	efd_signal(j->done_fd);
	job_unref(j);
	return NULL;
}

int
job_start(struct job *j, char *err, size_t errlen)
{
	pthread_attr_t	 attr;
	pthread_t	 th;
	int		 e;

	job_ref(j);			/* the thread's */
	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	e = pthread_create(&th, &attr, job_main, j);
	pthread_attr_destroy(&attr);
	if (e != 0) {
		__atomic_sub_fetch(&running, 1, __ATOMIC_SEQ_CST);
		job_unref(j);
		snprintf(err, errlen, "cannot start a thread for the run: %s",
		    strerror(e));
		return -1;
	}
	return 0;
}

int
job_stop(struct job *j, const char *why)
{
	int	 first;

	pthread_mutex_lock(&j->mtx);
	first = !j->stop_asked && !j->done;
	if (first) {
		j->stop_asked = 1;
		snprintf(j->stop_why, sizeof(j->stop_why), "%s", why);
	}
	pthread_mutex_unlock(&j->mtx);
	if (first)
		efd_signal(j->stop_fd);
	return first;
}

int
job_stop_asked(struct job *j)
{
	int	 s;

	pthread_mutex_lock(&j->mtx);
	s = j->stop_asked;
	pthread_mutex_unlock(&j->mtx);
	return s;
}

int
job_done(struct job *j)
{
	int	 d;

	pthread_mutex_lock(&j->mtx);
	d = j->done;
	pthread_mutex_unlock(&j->mtx);
	return d;
}

double
job_elapsed(struct job *j)
{
	double	 end;

	pthread_mutex_lock(&j->mtx);
	end = j->done ? j->finished : clock_mono();
	pthread_mutex_unlock(&j->mtx);
	return end - j->created;
}

int
job_wait(struct job *j, double seconds, const struct call_io *io)
{
	struct pollfd	 pfd[3];
	double		 end = clock_mono() + seconds, left;
	int		 n, ms;

	for (;;) {
		if (job_done(j))
			return JOB_WAIT_DONE;
		n = 0;
		pfd[n].fd = j->done_fd;
		pfd[n++].events = POLLIN;
		if (io != NULL && io->hangup_fd != -1) {
			/* Only the peer's closing: a pipelined byte is not one. */
			pfd[n].fd = io->hangup_fd;
			pfd[n++].events = POLLRDHUP;
		}
		if (io != NULL && io->abandon_fd != -1) {
			pfd[n].fd = io->abandon_fd;
			pfd[n++].events = POLLIN;
		}
		ms = -1;
		if (seconds >= 0) {
			if ((left = end - clock_mono()) <= 0)
				return JOB_WAIT_TIMEOUT;
			ms = (int)(left * 1000) + 1;
		}
		if (poll(pfd, (nfds_t)n, ms) == -1 && errno != EINTR) {
			log_warn("job: poll");
			return JOB_WAIT_HANGUP;
		}
		if (n > 1 && pfd[1].revents != 0)
			return JOB_WAIT_HANGUP;
		if (n > 2 && pfd[2].revents != 0)
			return JOB_WAIT_HANGUP;
	}
}

const struct run_result *
job_result(struct job *j, int *rc, const char **errbuf)
{
	if (!job_done(j))
		return NULL;
	*rc = j->rc;
	*errbuf = j->errbuf;
	return &j->res;
}

const struct run_request *
job_request(struct job *j, long *asked_s)
{
	*asked_s = j->asked_s;
	return &j->rq;
}

const char *
job_id(struct job *j)
{
	return j->id;
}

/* ------------------------------------------------------------ the table */

/* Drops finished jobs nobody collected within JOB_KEEP_S.  table_mtx held. */
static void
table_expire(void)
{
	struct job	**pp, *j;
	double		 now = clock_mono();
	int		 old;

	for (pp = &table; (j = *pp) != NULL;) {
		pthread_mutex_lock(&j->mtx);
		old = j->done && now - j->finished > JOB_KEEP_S;
		pthread_mutex_unlock(&j->mtx);
		if (!old) {
			pp = &j->next;
			continue;
		}
		log_info("job %s: %s: result not collected within %d s; "
		    "dropped", j->id, j->label, JOB_KEEP_S);
		*pp = j->next;
		ntable--;
		job_unref(j);
	}
}

static int
random_id(char *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char	 r[JOB_ID_LEN / 2];
	size_t		 i;

	if (getentropy(r, sizeof(r)) == -1)
		return -1;
	for (i = 0; i < sizeof(r); i++) {
		out[2 * i] = hex[r[i] >> 4];
		out[2 * i + 1] = hex[r[i] & 15];
	}
	out[JOB_ID_LEN] = '\0';
	return 0;
}

/*
 * The refusal when the workspace of j has n jobs, its cap: what each is
 * doing, so the caller can collect or stop one.  table_mtx held.
 */
static void
refuse_workspace(const struct job *j, int n, char *err, size_t errlen)
{
	struct job	*o;
	size_t		 len;
	double		 now = clock_mono();
	int		 done;

	snprintf(err, errlen, "%s already has %d background jobs running or "
	    "waiting to be collected, the most one user may keep (this server "
	    "keeps %d in all, for every user):", j->label, n, JOBS_MAX);
	for (o = table; o != NULL; o = o->next) {
		if (strcmp(o->workspace, j->workspace) != 0)
			continue;
		pthread_mutex_lock(&o->mtx);
		done = o->done;
		pthread_mutex_unlock(&o->mtx);
		len = strlen(err);
		if (done)
			snprintf(err + len, errlen - len, " %s (done, not "
			    "collected)", o->id);
		else
			snprintf(err + len, errlen - len, " %s (running for "
			    "%.0f s)", o->id, now - o->created);
	}
	len = strlen(err);
	snprintf(err + len, errlen - len, ". Collect a finished one with "
	    "job_status(job_id), or stop one with job_status(job_id, "
	    "stop=true), then start this again.");
}

int
job_register(struct job *j, int per_workspace, char *err, size_t errlen)
{
	struct job	*o;
	int		 mine = 0;

	pthread_mutex_lock(&table_mtx);
	table_expire();
	for (o = table; o != NULL; o = o->next)
		if (strcmp(o->workspace, j->workspace) == 0)
			mine++;
	/* A user at its own cap hears so, even when the table is full too. */
	if (per_workspace < JOBS_MAX && mine >= per_workspace) {
		refuse_workspace(j, mine, err, errlen);
		pthread_mutex_unlock(&table_mtx);
		return -1;
	}
	if (ntable >= JOBS_MAX) {
		pthread_mutex_unlock(&table_mtx);
		snprintf(err, errlen, "%d background jobs are running or wait "
		    "to be collected, the most this server keeps; collect "
		    "finished ones with job_status first", JOBS_MAX);
		return -1;
	}
	if (random_id(j->id) == -1) {
		pthread_mutex_unlock(&table_mtx);
		snprintf(err, errlen, "no randomness for a job id: %s",
		    strerror(errno));
		return -1;
	}
	job_ref(j);
	j->next = table;
	table = j;
	ntable++;
	pthread_mutex_unlock(&table_mtx);
	return 0;
}

struct job *
job_find(const char *workspace, const char *id)
{
	struct job	*j;

	pthread_mutex_lock(&table_mtx);
	table_expire();
	for (j = table; j != NULL; j = j->next)
		if (strcmp(j->id, id) == 0 && strcmp(j->workspace,
		    workspace) == 0)
			break;
	if (j != NULL)
		job_ref(j);
	pthread_mutex_unlock(&table_mtx);
	return j;
}

struct job *
job_busy(const char *workspace)
{
	struct job	*j, *oldest = NULL;

	pthread_mutex_lock(&table_mtx);
	for (j = table; j != NULL; j = j->next)
		if (strcmp(j->workspace, workspace) == 0 && !job_done(j) &&
		    (oldest == NULL || j->created < oldest->created))
			oldest = j;
	if (oldest != NULL)
		job_ref(oldest);
	pthread_mutex_unlock(&table_mtx);
	return oldest;
}

void
job_forget(struct job *j)
{
	struct job	**pp;

	pthread_mutex_lock(&table_mtx);
	for (pp = &table; *pp != NULL; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			ntable--;
			pthread_mutex_unlock(&table_mtx);
			job_unref(j);
			return;
		}
	pthread_mutex_unlock(&table_mtx);
}

int
jobs_running(void)
{
	return __atomic_load_n(&running, __ATOMIC_SEQ_CST);
}

void
jobs_shutdown(double grace)
{
	struct job	*j;
	double		 end = clock_mono() + grace;
	int		 busy;

	pthread_mutex_lock(&table_mtx);
	for (j = table; j != NULL; j = j->next)
		job_stop(j, "the agent is shutting down");
	pthread_mutex_unlock(&table_mtx);
	do {
		busy = 0;
		pthread_mutex_lock(&table_mtx);
		for (j = table; j != NULL; j = j->next)
			if (!job_done(j))
				busy++;
		pthread_mutex_unlock(&table_mtx);
		if (busy > 0)
			clock_sleep_ms(50);
	} while (busy > 0 && clock_mono() < end);
}
