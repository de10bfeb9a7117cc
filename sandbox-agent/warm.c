/*
 * warm.c: the agent's side of the warm fork server (see warm.h and
 * docs/runner-contract.md, "Warm starts").
 *
 * The zygote is a child of the agent on a SOCK_SEQPACKET control socket
 * (its descriptor 3).  Runs never wait for a fork: the agent keeps one
 * *spare* asked for ahead of time.  Asking is one "spare" message carrying
 * one end of two new sockets, the request socket and the status socket; the
 * zygote forks a waiter, which forks the spare run, says "p<pid>" on the
 * status socket and waits for the spare to end.  To use it, the agent sends
 * the spare the cwd ("c..."), the environment ("E...", see send_env) and
 * "r" with the run's stdin, stdout and stderr; the spare answers "k" (or
 * "f<errno>" when the cwd cannot be entered), the agent says "g" and only
 * then does the code run.  Its last act is "x<exit code>" on the request
 * socket, once its output is all written: the agent answers then, while the
 * kernel still tears the process down.  When it has ended the waiter
 * answers "s<raw wait status>" and keeps the zombie (so its process group
 * id stays reserved) until the agent closes the status socket.  A run's
 * end asks for the next spare.
 * A spare is told first ("w...") the workspace of the last run (or the one
 * warm_hint named), whose namespace it restores while it waits
 * (_runner.prepare); a run elsewhere, or after the store changed, restores
 * its own.
 */
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fdpass.h"
#include "hash.h"
#include "log.h"
#include "warm.h"
#include "banned.h"

/* How long reaping waits for the waiter's status after the kill (s). */
#define WARM_REAP_WAIT		10.0
/*
 * How long after a run ends its successor's spare is asked for.  Making
 * a spare takes a core for 25-35 ms (the zygote's fork, the rehearsal);
 * at once, it met the run's answer on its way out (the agent, the
 * supervisor's relay, the client), which then waited for a core at
 * each hop: a warm print(1) took 12-15 ms instead of 8-9, and the relay
 * added 1.9 ms instead of 0.6 (make bench-supervisor, (b)).
 */
#define WARM_SPARE_DELAY	0.010
#define WARM_ENV_MSG		32768	/* the largest "E" message */
/* After this many failed starts in a row, try again only this often (s). */
#define WARM_MAX_FAILS		3
#define WARM_RETRY_AFTER	60.0

/* Tests shorten these. */
static double	 warm_ready_wait = WARM_READY_WAIT;
static double	 warm_reply_timeout = WARM_REPLY_TIMEOUT;

static pthread_mutex_t wz_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pid_t		 pid;		/* -1: none */
	int		 ctl;		/* control socket, or -1 */
	int		 ready;
	double		 started;
	int		 fails;		/* failed starts in a row */
	double		 next_try;
	uint64_t	 key;		/* of the interpreter and environment */
	unsigned int	 gen;		/* counts zygote starts */
	/* The spare asked for ahead of time: its request and status
	 * sockets, -1 when none.  Its pid is read when it is taken. */
	int		 spare_req;
	int		 spare_st;
	/* The workspace the next run is likely in: the last run's. */
	char		 hint[4096];
	/* When spare_timer asks for the next spare (0: not due), and for
	 * which zygote; the timer thread, from the first run to warm_stop. */
	double		 spare_due;
	unsigned int	 spare_due_gen;
	int		 timer;
	int		 timer_quit;
	pthread_t	 timer_th;
} wz = { .pid = -1, .ctl = -1, .spare_req = -1, .spare_st = -1 };
static pthread_cond_t	spare_cv = PTHREAD_COND_INITIALIZER;

/* A hash of the interpreter and the environment it was started with,
 * each string with its NUL. */
static uint64_t
zygote_key(const char *python, char *const *envp)
{
	uint64_t	 h = hash_bytes(HASH_INIT, python, strlen(python) + 1);

	for (; envp != NULL && *envp != NULL; envp++)
		h = hash_bytes(h, *envp, strlen(*envp) + 1);
	return h;
}

static void
close_fd(int *fd)
{
	if (*fd != -1) {
		close(*fd);
		*fd = -1;
	}
}

/* ---------------------------------------------------------- the zygote */

/* With wz_lock held: closing its sockets makes the spare exit unused. */
static void
spare_drop(void)
{
	close_fd(&wz.spare_req);
	close_fd(&wz.spare_st);
}

static int	send_bytes(int, char, const char *, size_t);

/* With wz_lock held; a path too long for the hint leaves none. */
static void
warm_hint_locked(const char *workspace)
{
	size_t	 n = workspace != NULL ? strlen(workspace) : 0;

	if (n == 0 || n >= sizeof(wz.hint))
		n = 0;
	memcpy(wz.hint, workspace != NULL ? workspace : "", n);
	wz.hint[n] = '\0';
}

void
warm_hint(const char *workspace)
{
	pthread_mutex_lock(&wz_lock);
	warm_hint_locked(workspace);
	pthread_mutex_unlock(&wz_lock);
}

/*
 * With wz_lock held: asks the zygote for a spare unless there is one.  A
 * zygote still importing takes the request when it is ready.  Never blocks:
 * a stopped zygote fills its socket and the spare fails when taken.
 */
static int
spare_request(void)
{
	int		 req[2] = { -1, -1 }, st[2] = { -1, -1 }, fds[2];

	if (wz.spare_req != -1)
		return 0;
	if (wz.ctl == -1)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, req) == -1 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st) == -1)
		goto fail;
	fds[0] = req[1];
	fds[1] = st[1];
	if (fdpass_sendv(wz.ctl, "spare", 5, fds, 2, MSG_DONTWAIT) == -1)
		goto fail;
	close(req[1]);
	close(st[1]);
	/* Queued for the spare: it reads it once born.  Only a hint. */
	if (wz.hint[0] != '\0')
		(void)send_bytes(req[0], 'w', wz.hint, strlen(wz.hint));
	wz.spare_req = req[0];
	wz.spare_st = st[0];
	return 0;
fail:
	log_debug("warm: cannot ask for a spare: %s", strerror(errno));
	close_fd(&req[0]);
	close_fd(&req[1]);
	close_fd(&st[0]);
	close_fd(&st[1]);
	return -1;
}

/* With wz_lock held. */
static void
zygote_stop(void)
{
	spare_drop();
	close_fd(&wz.ctl);
	if (wz.pid > 0) {
		/* Ours and not reaped yet: the pid cannot be anyone else's. */
		kill(wz.pid, SIGKILL);
		while (waitpid(wz.pid, NULL, 0) == -1 && errno == EINTR)
			;
	}
	wz.pid = -1;
	wz.ready = 0;
}

static void
zygote_failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* With wz_lock held: logs, stops it and backs off after repeated failures. */
static void
zygote_failed(const char *fmt, ...)
{
	char	 why[512];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	zygote_stop();
	wz.fails++;
	if (wz.fails >= WARM_MAX_FAILS) {
		wz.next_try = clock_mono() + WARM_RETRY_AFTER;
		log_warnx("warm: %s; runs start cold (%d failures in a row, "
		    "next try in %.0f s)", why, wz.fails, WARM_RETRY_AFTER);
	} else
		log_warnx("warm: %s; this run starts cold, the next one "
		    "starts a new zygote", why);
}

/* With wz_lock held. */
static int
zygote_start(const char *python, char *const *envp)
{
	char	*argv[5], err[512];
	int	 sv[2], fds[4], devnull;

	argv[0] = (char *)(uintptr_t)python;
	argv[1] = (char *)(uintptr_t)"-P";
	argv[2] = (char *)(uintptr_t)"-m";
	argv[3] = (char *)(uintptr_t)"vivarium._zygote";
	argv[4] = NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		zygote_failed("socketpair: %s", strerror(errno));
		return -1;
	}
	if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1) {
		close(sv[0]);
		close(sv[1]);
		zygote_failed("/dev/null: %s", strerror(errno));
		return -1;
	}
	/* stdout to /dev/null, as a pipe would be: not a tty, block-buffered. */
	fds[0] = devnull;
	fds[1] = devnull;
	fds[2] = 2;
	fds[3] = sv[1];
	wz.pid = spawn_detached(argv, envp, fds, 4, err, sizeof(err));
	close(devnull);
	close(sv[1]);
	if (wz.pid == -1) {
		close(sv[0]);
		zygote_failed("cannot start the zygote: %s", err);
		return -1;
	}
	wz.ctl = sv[0];
	wz.ready = 0;
	wz.gen++;
	wz.started = clock_mono();
	log_debug("warm: zygote started, pid %d", (int)wz.pid);
	/* Made as soon as its imports are done: the first run need not wait. */
	spare_request();
	return 0;
}

int
warm_ready(const char *python, char *const *envp, double wait)
{
	struct pollfd	 pfd;
	char		 msg[16];
	double		 left, until = clock_mono() + (wait > 0 ? wait : 0);
	ssize_t		 n;
	int		 rc = -1;

	uint64_t	 key = zygote_key(python, envp);

	pthread_mutex_lock(&wz_lock);
	if (wz.pid != -1 && wz.key != key) {
		/* Another interpreter or environment: that zygote won't do. */
		zygote_stop();
		wz.fails = 0;
	}
	if (wz.pid == -1 && wz.key != key)
		wz.fails = 0;
	wz.key = key;
	if (wz.pid != -1 && wz.ready) {
		/* Anything on the control socket now is its end (EOF). */
		pfd.fd = wz.ctl;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) > 0) {
			log_warnx("warm: the zygote (pid %d) has gone; starting "
			    "a new one", (int)wz.pid);
			zygote_stop();
		}
	}
	if (wz.pid == -1) {
		if (wz.fails >= WARM_MAX_FAILS && clock_mono() < wz.next_try)
			goto out;
		if (zygote_start(python, envp) == -1)
			goto out;
	}
	while (!wz.ready) {
		left = wz.started + warm_ready_wait - clock_mono();
		if (left <= 0) {
			zygote_failed("the zygote was not ready after %.0f s",
			    warm_ready_wait);
			goto out;
		}
		if (until - clock_mono() < left)
			left = until - clock_mono();
		if (left < 0)
			left = 0;
		pfd.fd = wz.ctl;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)(left * 1000)) == -1) {
			if (errno == EINTR)
				continue;
			zygote_failed("poll: %s", strerror(errno));
			goto out;
		}
		if (pfd.revents == 0) {
			if (clock_mono() >= until)
				goto out;	/* still importing: run cold */
			continue;
		}
		n = recv(wz.ctl, msg, sizeof(msg), MSG_DONTWAIT);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n == 5 && memcmp(msg, "ready", 5) == 0) {
			wz.ready = 1;
			wz.fails = 0;
			log_debug("warm: zygote %d ready after %.2f s",
			    (int)wz.pid, clock_mono() - wz.started);
			break;
		}
		zygote_failed("the zygote %s before it was ready (see its "
		    "messages above)", n == 0 ? "exited" : "misbehaved");
		goto out;
	}
	rc = 0;
out:
	pthread_mutex_unlock(&wz_lock);
	return rc;
}

void
warm_broken(const struct warm_run *w, const char *why)
{
	pthread_mutex_lock(&wz_lock);
	if (w->gen == wz.gen && wz.pid != -1)
		zygote_failed("%s", why);
	else
		log_warnx("warm: %s; this run starts cold", why);
	pthread_mutex_unlock(&wz_lock);
}

void
warm_stop(void)
{
	int	 timer;

	pthread_mutex_lock(&wz_lock);
	zygote_stop();
	wz.fails = 0;
	wz.spare_due = 0;
	if ((timer = wz.timer)) {
		wz.timer_quit = 1;
		pthread_cond_signal(&spare_cv);
	}
	pthread_mutex_unlock(&wz_lock);
	if (timer) {
		pthread_join(wz.timer_th, NULL);
		pthread_mutex_lock(&wz_lock);
		wz.timer = wz.timer_quit = 0;
		pthread_mutex_unlock(&wz_lock);
	}
}

void
warm_swept(void)
{
	pthread_mutex_lock(&wz_lock);
	if (wz.pid != -1) {
		log_debug("warm: zygote %d killed by a sweep; the next run "
		    "starts another", (int)wz.pid);
		zygote_stop();
	}
	pthread_mutex_unlock(&wz_lock);
}

pid_t
warm_zygote_pid(void)
{
	pid_t	 pid;

	pthread_mutex_lock(&wz_lock);
	pid = wz.pid;
	pthread_mutex_unlock(&wz_lock);
	return pid;
}

/* ------------------------------------------------------------- one run */

static int
set_timeout(int fd, double s)
{
	struct timeval	 tv;

	tv.tv_sec = (time_t)s;
	tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1)
		return -1;
	return 0;
}

/* One tagged message on the run socket. */
static int
send_bytes(int fd, char tag, const char *s, size_t len)
{
	struct iovec	 iov[2];
	struct msghdr	 mh;
	ssize_t		 n;

	iov[0].iov_base = &tag;
	iov[0].iov_len = 1;
	iov[1].iov_base = (void *)(uintptr_t)(s != NULL ? s : "");
	iov[1].iov_len = s != NULL ? len : 0;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	return n == -1 ? -1 : 0;
}

static int
send_msg(int fd, char tag, const char *s)
{
	return send_bytes(fd, tag, s, s != NULL ? strlen(s) : 0);
}

/* "r" on the request socket, with the run's stdin, stdout and stderr. */
static int
send_stdio(int fd, const int stdio[3])
{
	return fdpass_sendv(fd, "r", 1, stdio, 3, 0) == -1 ? -1 : 0;
}

/* A number after the tag: 0, or -1 when it is not one. */
static int
parse_num(const char *s, size_t n, long *out)
{
	char	 tmp[24], *end;

	if (n == 0 || n >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	*out = strtol(tmp, &end, 10);
	return errno != 0 || *end != '\0' || end == tmp ? -1 : 0;
}

static ssize_t
recv_msg(int fd, char *buf, size_t len)
{
	ssize_t	 n;

	do
		n = recv(fd, buf, len, 0);
	while (n == -1 && errno == EINTR);
	return n;
}

/* How using a spare ended. */
enum spare_end {
	SPARE_OK,
	SPARE_CWD,		/* the cwd cannot be entered: the caller's */
	SPARE_DEAD,		/* it went away before it took the run */
	SPARE_BROKEN,		/* the zygote's fault: go cold, replace it */
};

/*
 * The environment in one "E" message, each NAME=value ended by a NUL: one
 * message is one receive (and one buffer) in the spare, where one per
 * variable cost ~50 of each.  One too large for a message goes as an
 * "e" message per variable.
 */
static int
send_env(int fd, char *const *envp)
{
	char	 buf[WARM_ENV_MSG];
	char *const *e;
	size_t	 len = 0, n;

	for (e = envp; e != NULL && *e != NULL; e++) {
		n = strlen(*e) + 1;
		if (n > sizeof(buf) - len)
			break;
		memcpy(buf + len, *e, n);
		len += n;
	}
	if (e == NULL || *e == NULL)
		return send_bytes(fd, 'E', buf, len);
	for (e = envp; *e != NULL; e++)
		if (send_msg(fd, 'e', *e) == -1)
			return -1;
	return 0;
}

/* Hands the run to one spare; on SPARE_OK sp->pid runs the code. */
static enum spare_end
spare_use(struct warm_run *w, int req, struct spawn *sp, const int stdio[3],
    char *errbuf, size_t errlen)
{
	char		 msg[32];
	ssize_t		 n;
	pid_t		 pid = -1;
	long		 v;

	if (set_timeout(w->sock, warm_reply_timeout) == -1 ||
	    set_timeout(req, warm_reply_timeout) == -1 ||
	    (n = recv_msg(w->sock, msg, sizeof(msg))) == -1)
		goto io;
	if (n < 2 || msg[0] != 'p' || parse_num(msg + 1, (size_t)n - 1, &v) == -1 ||
	    v <= 1 || v > INT32_MAX) {
		snprintf(errbuf, errlen, "%s from the zygote",
		    n == 0 ? "no answer (it went away)" : "a bad answer");
		return SPARE_BROKEN;
	}
	pid = (pid_t)v;
	if (pid == getpid() || getpgid(pid) != pid) {
		snprintf(errbuf, errlen, "a bad pid (%d) from the zygote",
		    (int)pid);
		return SPARE_BROKEN;
	}
	if (send_msg(req, 'c', sp->cwd != NULL ? sp->cwd : ".") == -1)
		goto io;
	if (send_env(req, sp->envp) == -1)
		goto io;
	if (send_stdio(req, stdio) == -1 ||
	    (n = recv_msg(req, msg, sizeof(msg))) == -1)
		goto io;
	if (n > 1 && msg[0] == 'f' && parse_num(msg + 1, (size_t)n - 1, &v) == 0) {
		/* As the fork+exec path reports a cwd it cannot enter. */
		sp->exec_errno = (int)v;
		sp->chdir_failed = 1;
		snprintf(errbuf, errlen, "%s: %s", sp->cwd ? sp->cwd : "",
		    strerror((int)v));
		return SPARE_CWD;
	}
	if (n == 0) {
		snprintf(errbuf, errlen, "the spare %d went away", (int)pid);
		return SPARE_DEAD;
	}
	if (n != 1 || msg[0] != 'k') {
		snprintf(errbuf, errlen, "a bad answer from the spare");
		return SPARE_BROKEN;
	}
	/* Committed: from here on the code runs. */
	if (send_msg(req, 'g', NULL) == -1)
		goto io;
	sp->pid = pid;
	set_timeout(w->sock, 0);
	return SPARE_OK;
io:
	if (errno == EPIPE || errno == ECONNRESET) {
		snprintf(errbuf, errlen, "the spare %d went away", (int)pid);
		return SPARE_DEAD;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		snprintf(errbuf, errlen, "the zygote did not answer in time");
	else
		snprintf(errbuf, errlen, "the spare's socket: %s",
		    strerror(errno));
	return SPARE_BROKEN;
}

/*
 * Asks for the spare of the next run.  Not while a run runs: forking the
 * zygote (page tables of ~80 MB) and the new spare's first page faults
 * would take one of the two cores from the run, and on these machines a
 * page fault costs ~15 us.  Calls come seconds apart; the spare, with
 * its rehearsal (_zygote.py), is ready in 25-35 ms.
 */
static void
spare_next(const struct warm_run *w)
{
	pthread_mutex_lock(&wz_lock);
	if (wz.gen == w->gen && wz.ready)
		spare_request();
	pthread_mutex_unlock(&wz_lock);
}

/* Asks for the spares spare_later scheduled, when they are due. */
static void *
spare_timer(void *arg)
{
	struct timespec	 ts;
	double		 left;

	(void)arg;
	pthread_mutex_lock(&wz_lock);
	while (!wz.timer_quit) {
		if (wz.spare_due == 0) {
			pthread_cond_wait(&spare_cv, &wz_lock);
			continue;
		}
		if ((left = wz.spare_due - clock_mono()) > 0) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (time_t)left;
			ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			(void)pthread_cond_clockwait(&spare_cv, &wz_lock,
			    CLOCK_MONOTONIC, &ts);
			continue;
		}
		wz.spare_due = 0;
		if (wz.gen == wz.spare_due_gen && wz.ready)
			spare_request();
	}
	pthread_mutex_unlock(&wz_lock);
	return NULL;
}

/*
 * The next run's spare, WARM_SPARE_DELAY from now, once this run's answer
 * is on its way; at once if the timer cannot run.  A run that starts
 * before then makes its own (warm_start) and cancels this one.
 */
static void
spare_later(const struct warm_run *w)
{
	int		 ok;

	pthread_mutex_lock(&wz_lock);
	if (!wz.timer)
		wz.timer = pthread_create(&wz.timer_th, NULL, spare_timer,
		    NULL) == 0;
	if ((ok = wz.timer)) {
		wz.spare_due = clock_mono() + WARM_SPARE_DELAY;
		wz.spare_due_gen = w->gen;
		pthread_cond_signal(&spare_cv);
	}
	pthread_mutex_unlock(&wz_lock);
	if (!ok)
		spare_next(w);
}

static int
warm_start(void *arg, struct spawn *sp, const int stdio[3], char *errbuf,
    size_t errlen)
{
	struct warm_run	*w = arg;
	enum spare_end	 end = SPARE_BROKEN;
	int		 req = -1, tries, fresh;

	w->sock = w->req = -1;
	w->have_status = w->lost = w->failed = 0;
	/* A spare killed while it waited costs one more, made now. */
	for (tries = 0; tries < 2; tries++) {
		pthread_mutex_lock(&wz_lock);
		warm_hint_locked(sp->cwd);
		w->gen = wz.gen;
		fresh = wz.spare_req == -1;
		if (wz.ctl == -1 || !wz.ready)
			errno = ENOTCONN;
		if (wz.ctl == -1 || !wz.ready || spare_request() == -1) {
			pthread_mutex_unlock(&wz_lock);
			snprintf(errbuf, errlen, "the zygote took no request: %s",
			    strerror(errno));
			end = SPARE_BROKEN;
			break;
		}
		req = wz.spare_req;
		w->sock = wz.spare_st;
		wz.spare_req = wz.spare_st = -1;
		wz.spare_due = 0;	/* this run's end asks for the next */
		pthread_mutex_unlock(&wz_lock);

		end = spare_use(w, req, sp, stdio, errbuf, errlen);
		if (end == SPARE_OK) {
			w->req = req;	/* where the run says its end */
			break;
		}
		/* Closing makes a spare that never got "g" exit unused. */
		close_fd(&req);
		close_fd(&w->sock);
		if (end != SPARE_DEAD || fresh)
			break;
		log_warnx("warm: %s; trying another", errbuf);
	}
	/* The next run's spare: at once if this one never ran, else when it
	 * has ended (see warm_reap). */
	if (end != SPARE_OK)
		spare_next(w);
	if (end == SPARE_OK)
		return 0;
	if (end == SPARE_DEAD)
		end = SPARE_BROKEN;
	w->failed = end == SPARE_BROKEN;
	return -1;
}

static void
warm_watch(void *arg, int fds[2])
{
	fds[0] = ((struct warm_run *)arg)->sock;
	fds[1] = ((struct warm_run *)arg)->req;
}

/*
 * Reads what the run said on its request socket: 1 when it said its end,
 * "x<exit code>", after writing all its output and closing its stdout and
 * stderr (_zygote._exit).  Its group is killed then, and the run answered
 * while the kernel still tears the process down.  Anything else is
 * ignored; EOF (its code closed the socket) leaves the waiter's status.
 */
static int
read_end(struct warm_run *w)
{
	char	 msg[32];
	ssize_t	 n;
	long	 v;
	int	 i;

	for (i = 0; i < 8 && w->req != -1; i++) {
		n = recv(w->req, msg, sizeof(msg), MSG_DONTWAIT);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			close_fd(&w->req);
			return 0;
		}
		if (n > 1 && msg[0] == 'x' &&
		    parse_num(msg + 1, (size_t)n - 1, &v) == 0 &&
		    v >= 0 && v <= 255) {
			w->status = (int)v << 8;	/* as exit(v) */
			w->have_status = 1;
			close_fd(&w->req);
			return 1;
		}
	}
	return 0;
}

/* Reads the status message if there is one: 1 when the run is over. */
static int
read_status(struct warm_run *w, int flags)
{
	char	 msg[32];
	ssize_t	 n;
	long	 v;

	if (w->have_status || w->lost)
		return 1;
	do
		n = recv(w->sock, msg, sizeof(msg), flags);
	while (n == -1 && errno == EINTR);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n > 1 && msg[0] == 's' &&
	    parse_num(msg + 1, (size_t)n - 1, &v) == 0 && v >= 0 &&
	    v <= 0xffff) {
		w->status = (int)v;
		w->have_status = 1;
	} else
		w->lost = 1;
	return 1;
}

static int
warm_gone(void *arg, struct spawn *sp)
{
	return read_end(arg) || read_status(arg, MSG_DONTWAIT);
}

static int
warm_reap(void *arg, struct spawn *sp)
{
	struct warm_run	*w = arg;
	struct pollfd	 pfd;
	double		 end = clock_mono() + WARM_REAP_WAIT, left;

	while (!read_status(w, MSG_DONTWAIT)) {
		if ((left = end - clock_mono()) <= 0) {
			w->lost = 1;
			break;
		}
		pfd.fd = w->sock;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)(left * 1000) + 1) == -1 &&
		    errno != EINTR) {
			w->lost = 1;
			break;
		}
	}
	/* Lets the waiter reap it: its pid may be reused from now on (the
	 * group was killed before reap). */
	close_fd(&w->sock);
	close_fd(&w->req);
	spare_later(w);
	if (w->have_status)
		return w->status;
	log_warnx("warm: run %d: its waiter went away without its status; "
	    "reported as killed", (int)sp->pid);
	return SIGKILL;		/* the raw status of a SIGKILL */
}

const struct spawn_starter warm_starter = {
	warm_start, warm_watch, warm_gone, warm_reap,
};
