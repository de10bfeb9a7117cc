/*
 * spawn.c: run a child with a deadline and bounded output (see spawn.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "spawn.h"
#include "banned.h"

extern char **environ;

#define SPAWN_CHUNK		65536
/* Reads per descriptor before going back to poll and the clock. */
#define SPAWN_READS_PER_WAKE	16
/* After the main process is gone, read at most this much more per stream:
 * a descendant outside the group may be writing without end. */
#define SPAWN_DRAIN_MAX		(8u << 20)
/* After the main process is gone, how long to wait for the pipes' EOF (s). */
#define SPAWN_LINGER		0.2
/* Without a pidfd, how often to look at the child (ms). */
#define SPAWN_POLL_SLICE	10

/* What the child tells the parent when it cannot exec. */
enum spawn_stage { STAGE_CHDIR = 1, STAGE_DUP, STAGE_EXEC };
struct spawn_report {
	int	stage;
	int	err;
};

/* ---------------------------------------------------------------- streams */

int
spawn_stream_add(struct spawn_stream *s, const unsigned char *p, size_t n)
{
	size_t	 want, size, pos, first;
	unsigned char *d;

	if (s->observe != NULL && n > 0)
		s->observe(s->observe_arg, p, n);
	s->total += n;
	if (s->cap == 0 || n == 0)
		return 0;
	if (n >= s->cap) {
		/* Only the last cap bytes of this chunk survive. */
		p += n - s->cap;
		n = s->cap;
		s->len = 0;
		s->head = 0;
	}
	/* Grow while still linear (head is 0 until the buffer first fills). */
	if (s->len + n > s->size && s->size < s->cap) {
		want = s->len + n;
		size = s->size ? s->size : 4096;
		while (size < want && size < s->cap)
			size = size > s->cap / 2 ? s->cap : size * 2;
		if (size > s->cap)
			size = s->cap;
		if ((d = realloc(s->data, size + 1)) == NULL)
			return -1;
		s->data = d;
		s->size = size;
	}
	pos = (s->head + s->len) % s->size;
	first = s->size - pos < n ? s->size - pos : n;
	memcpy(s->data + pos, p, first);
	memcpy(s->data, p + first, n - first);
	if (s->len + n > s->size) {
		s->head = (s->head + (s->len + n - s->size)) % s->size;
		s->len = s->size;
	} else
		s->len += n;
	return 0;
}

const unsigned char *
spawn_stream_take(struct spawn_stream *s, size_t *lenp)
{
	unsigned char	*d;
	size_t		 first;

	*lenp = 0;
	if (s->data == NULL)
		return (const unsigned char *)"";
	if (s->head != 0) {
		if ((d = malloc(s->size + 1)) == NULL)
			return (const unsigned char *)"";
		first = s->size - s->head < s->len ? s->size - s->head : s->len;
		memcpy(d, s->data + s->head, first);
		memcpy(d + first, s->data, s->len - first);
		free(s->data);
		s->data = d;
		s->head = 0;
	}
	s->data[s->len] = '\0';
	*lenp = s->len;
	return s->data;
}

void
spawn_stream_release(struct spawn_stream *s)
{
	free(s->data);
	s->data = NULL;
	s->len = s->size = s->head = 0;
	s->total = 0;
}

void
spawn_release(struct spawn *sp)
{
	spawn_stream_release(&sp->out);
	spawn_stream_release(&sp->err);
}

/* ---------------------------------------------------------------- helpers */

static const char *
env_lookup(char *const *envp, const char *name)
{
	size_t	 n = strlen(name);

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/*
 * Found before forking (execvp may allocate, which the child of a threaded
 * program must not), so the child only calls execve.
 */
int
spawn_find(const char *prog, char *const *envp, const char *cwd, char *out,
    size_t outlen)
{
	const char	*path, *p, *e;
	char		 at[PATH_MAX];
	const char	*check;
	struct stat	 st;
	int		 err = ENOENT, n;
	size_t		 dl;

	if (*prog == '\0')
		return ENOENT;
	if (strchr(prog, '/') != NULL) {
		n = snprintf(out, outlen, "%s", prog);
		return n < 0 || (size_t)n >= outlen ? ENAMETOOLONG : 0;
	}
	path = env_lookup(envp != NULL ? envp : environ, "PATH");
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; ; p = e + 1) {
		e = strchr(p, ':');
		dl = e != NULL ? (size_t)(e - p) : strlen(p);
		/* POSIX: an empty entry is the current directory. */
		if (dl == 0)
			n = snprintf(out, outlen, "./%s", prog);
		else
			n = snprintf(out, outlen, "%.*s/%s", (int)dl, p, prog);
		if (n < 0 || (size_t)n >= outlen)
			goto next;
		/* A relative entry is relative to where the child will be. */
		check = out;
		if (out[0] != '/' && cwd != NULL) {
			n = snprintf(at, sizeof(at), "%s/%s", cwd, out);
			if (n < 0 || (size_t)n >= sizeof(at))
				goto next;
			check = at;
		}
		if (stat(check, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(check, X_OK) == 0)
				return 0;
			err = EACCES;
		}
next:
		if (e == NULL)
			break;
	}
	return err;
}

static void
set_nonblock(int fd)
{
	int	 fl = fcntl(fd, F_GETFL);

	if (fl != -1)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void
close_fd(int *fd)
{
	if (*fd != -1) {
		close(*fd);
		*fd = -1;
	}
}

/* ---------------------------------------------------------------- the child */

static void
child_fail(int fd, int stage)
{
	struct spawn_report r;
	ssize_t		 n;

	r.stage = stage;
	r.err = errno;
	do
		n = write(fd, &r, sizeof(r));
	while (n == -1 && errno == EINTR);
	_exit(127);
}

/* Makes fd the descriptor `to`, without close-on-exec. */
static int
child_dup(int fd, int to)
{
	if (fd == to)
		return fcntl(fd, F_SETFD, 0);
	return dup2(fd, to) == -1 ? -1 : 0;
}

#define SPAWN_MAX_FDS	8

/*
 * Between fork and exec: async-signal-safe calls only (no malloc, no stdio,
 * no locks), since another thread may have held any lock at fork time.
 * fds[i] becomes descriptor i; every other descriptor is closed at exec.
 */
static void __attribute__((noreturn))
child_exec(const char *path, char *const *argv, char *const *envp,
    const char *cwd, const int *fds_in, int nfds, int report)
{
	struct sigaction sa;
	sigset_t	 none;
	int		 sig, i, fds[SPAWN_MAX_FDS];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);	/* SIGKILL, SIGSTOP: EINVAL */
	setpgid(0, 0);
	/* Move sources out of the way of the targets first. */
	for (i = 0; i < nfds; i++) {
		fds[i] = fds_in[i];
		if (fds[i] < nfds && fds[i] != i &&
		    (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, nfds)) == -1)
			child_fail(report, STAGE_DUP);
	}
	for (i = 0; i < nfds; i++)
		if (child_dup(fds[i], i) == -1)
			child_fail(report, STAGE_DUP);
	/* Whatever the caller left open must not leak into the program. */
#ifdef SYS_close_range
	syscall(SYS_close_range, (unsigned int)nfds, ~0U,
	    4U /* CLOSE_RANGE_CLOEXEC */);
#endif
	if (cwd != NULL && chdir(cwd) == -1)
		child_fail(report, STAGE_CHDIR);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(path, argv, envp);
	child_fail(report, STAGE_EXEC);
	_exit(127);
}

/*
 * Forks and executes path with fds[] as its first descriptors.  Returns the
 * pid, or -1 with errbuf (and *exec_errno, *chdir_failed when the program
 * could not start; the child is reaped then).
 */
static pid_t
fork_exec(const char *path, char *const *argv, char *const *envp,
    const char *cwd, const int *fds, int nfds, int *exec_errno,
    int *chdir_failed, char *errbuf, size_t errlen)
{
	int		 rep[2], e, st;
	sigset_t	 all, old;
	struct spawn_report r;
	ssize_t		 n;
	pid_t		 pid;

	if (nfds > SPAWN_MAX_FDS) {
		snprintf(errbuf, errlen, "spawn: too many descriptors");
		return -1;
	}
	if (pipe2(rep, O_CLOEXEC) == -1) {
		snprintf(errbuf, errlen, "spawn: pipe: %s", strerror(errno));
		return -1;
	}
	/* No handler of ours may run in the child before it resets them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		child_exec(path, argv, envp != NULL ? envp : environ, cwd,
		    fds, nfds, rep[1]);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(rep[1]);
	if (pid == -1) {
		close(rep[0]);
		snprintf(errbuf, errlen, "spawn: fork: %s", strerror(e));
		return -1;
	}
	/* Both sides set the group, so neither order of events races. */
	setpgid(pid, pid);

	/* EOF: exec happened (close-on-exec); a report: it failed. */
	do
		n = read(rep[0], &r, sizeof(r));
	while (n == -1 && errno == EINTR);
	close(rep[0]);
	if (n == (ssize_t)sizeof(r)) {
		while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
			;
		*exec_errno = r.err;
		*chdir_failed = r.stage == STAGE_CHDIR;
		snprintf(errbuf, errlen, "%s: %s%s", r.stage == STAGE_CHDIR ?
		    (cwd != NULL ? cwd : "") : argv[0],
		    r.stage == STAGE_DUP ? "dup2: " : "", strerror(r.err));
		return -1;
	}
	return pid;
}

pid_t
spawn_detached(char *const *argv, char *const *envp, const int *fds,
    int nfds, char *errbuf, size_t errlen)
{
	char	 path[PATH_MAX];
	int	 e, ee = 0, cf = 0;

	if (argv == NULL || argv[0] == NULL) {
		snprintf(errbuf, errlen, "spawn: no program");
		return -1;
	}
	if ((e = spawn_find(argv[0], envp, NULL, path, sizeof(path))) != 0) {
		snprintf(errbuf, errlen, "%s: %s", argv[0], strerror(e));
		return -1;
	}
	return fork_exec(path, argv, envp, NULL, fds, nfds, &ee, &cf, errbuf,
	    errlen);
}

/* ------------------------------------------------- the fork+exec starter */

struct exec_state {
	int	 pidfd;
};

static int
exec_start(void *arg, struct spawn *sp, const int stdio[3], char *errbuf,
    size_t errlen)
{
	struct exec_state *x = arg;
	char		 path[PATH_MAX];
	int		 e;

	x->pidfd = -1;
	if (sp->argv == NULL || sp->argv[0] == NULL) {
		snprintf(errbuf, errlen, "spawn: no program");
		return -1;
	}
	if ((e = spawn_find(sp->argv[0], sp->envp, sp->cwd, path,
	    sizeof(path))) != 0) {
		sp->exec_errno = e;
		snprintf(errbuf, errlen, "%s: %s", sp->argv[0], strerror(e));
		return -1;
	}
	sp->pid = fork_exec(path, sp->argv, sp->envp, sp->cwd, stdio, 3,
	    &sp->exec_errno, &sp->chdir_failed, errbuf, errlen);
	if (sp->pid == -1)
		return -1;
#ifdef SYS_pidfd_open
	x->pidfd = (int)syscall(SYS_pidfd_open, sp->pid, 0);
#endif
	return 0;
}

static void
exec_watch(void *arg, int fds[2])
{
	fds[0] = ((struct exec_state *)arg)->pidfd;
	fds[1] = -1;
}

/* Has the child exited (without reaping it, so its pgid stays reserved)? */
static int
exec_gone(void *arg, struct spawn *sp)
{
	siginfo_t	 si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)sp->pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1)
		return errno == ECHILD;
	return si.si_pid == sp->pid;
}

static int
exec_reap(void *arg, struct spawn *sp)
{
	struct exec_state *x = arg;
	int		 st;

	while (waitpid(sp->pid, &st, 0) == -1) {
		if (errno != EINTR) {
			st = 0;
			break;
		}
	}
	close_fd(&x->pidfd);
	return st;
}

static const struct spawn_starter exec_starter = {
	exec_start, exec_watch, exec_gone, exec_reap,
};

/* ---------------------------------------------------------------- the parent */

/* Reads what is there; returns 1 on EOF or error (fd closed), else 0. */
static int
drain_fd(int *fd, struct spawn_stream *s, unsigned char *chunk, size_t max,
    size_t *taken)
{
	ssize_t	 n;

	while (*taken < max) {
		n = read(*fd, chunk, SPAWN_CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			close_fd(fd);
			return 1;
		}
		*taken += (size_t)n;
		spawn_stream_add(s, chunk, (size_t)n);
	}
	return 0;
}

static int
read_some(int *fd, struct spawn_stream *s, unsigned char *chunk)
{
	size_t	 taken = 0;

	return drain_fd(fd, s, chunk, (size_t)SPAWN_CHUNK * SPAWN_READS_PER_WAKE,
	    &taken);
}

static void
reap(struct spawn *sp, const struct spawn_starter *how, void *arg)
{
	int	 st;

	st = how->reap(arg, sp);
	sp->status = st;
	if (WIFEXITED(st)) {
		/* It finished on its own, even if just at the deadline. */
		sp->exited = 1;
		sp->timed_out = 0;
		sp->stopped = 0;
		sp->exit_code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st) && !sp->timed_out && !sp->stopped) {
		sp->signaled = 1;
		sp->signal = WTERMSIG(st);
	}
}

static void
spawn_reset_out(struct spawn *sp)
{
	sp->pid = -1;
	sp->status = 0;
	sp->exited = sp->signaled = sp->timed_out = sp->lingered = 0;
	sp->stopped = 0;
	sp->exit_code = -1;
	sp->signal = 0;
	sp->exec_errno = 0;
	sp->chdir_failed = 0;
	sp->duration = 0;
	spawn_stream_release(&sp->out);
	spawn_stream_release(&sp->err);
}

int
spawn_run(struct spawn *sp, char *errbuf, size_t errlen)
{
	const struct spawn_starter *how = sp->starter;
	struct exec_state xs = { -1 };
	void		*arg = sp->starter_arg;
	int		 outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int		 devnull = -1, stdio[3], wfd[2];
	int		 rc = -1, gone = 0;
	struct pollfd	 pfd[5];
	unsigned char	*chunk = NULL;
	double		 start, deadline = 0, left, end;
	size_t		 t1 = 0, t2 = 0;
	int		 ms, i;

	spawn_reset_out(sp);
	if (how == NULL) {
		how = &exec_starter;
		arg = &xs;
		if (sp->argv == NULL || sp->argv[0] == NULL) {
			snprintf(errbuf, errlen, "spawn: no program");
			return -1;
		}
	}
	if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1 ||
	    pipe2(outp, O_CLOEXEC) == -1 || pipe2(errp, O_CLOEXEC) == -1) {
		snprintf(errbuf, errlen, "spawn: pipe: %s", strerror(errno));
		goto fail;
	}
	set_nonblock(outp[0]);
	set_nonblock(errp[0]);

	stdio[0] = devnull;
	stdio[1] = outp[1];
	stdio[2] = errp[1];
	start = clock_mono();
	if (how->start(arg, sp, stdio, errbuf, errlen) == -1) {
		sp->exited = 0;
		goto fail;
	}
	close_fd(&outp[1]);
	close_fd(&errp[1]);
	close_fd(&devnull);

	if ((chunk = malloc(SPAWN_CHUNK)) == NULL) {
		/* Cannot read its output: do not let it run unwatched. */
		kill(-sp->pid, SIGKILL);
		reap(sp, how, arg);
		snprintf(errbuf, errlen, "spawn: %s", strerror(errno));
		goto fail;
	}
	how->watch(arg, wfd);
	if (sp->timeout > 0)
		deadline = start + sp->timeout;

	while (!gone) {
		ms = -1;
		if (sp->timeout > 0) {
			left = deadline - clock_mono();
			if (left <= 0) {
				/* The pid too, in case the group was never set. */
				kill(-sp->pid, SIGKILL);
				kill(sp->pid, SIGKILL);
				sp->timed_out = 1;
				break;
			}
			ms = left * 1000 > INT_MAX - 1 ? INT_MAX : (int)(left * 1000) + 1;
		}
		if (wfd[0] == -1 && wfd[1] == -1 &&
		    (ms == -1 || ms > SPAWN_POLL_SLICE))
			ms = SPAWN_POLL_SLICE;
		pfd[0].fd = outp[0];
		pfd[1].fd = errp[0];
		pfd[2].fd = wfd[0];
		pfd[3].fd = sp->stop_fd;
		pfd[4].fd = wfd[1];
		for (i = 0; i < 5; i++) {
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, 5, ms) == -1 && errno != EINTR) {
			/* Cannot wait properly: stop the child rather than hang. */
			kill(-sp->pid, SIGKILL);
			break;
		}
		if (pfd[0].revents != 0)
			read_some(&outp[0], &sp->out, chunk);
		if (pfd[1].revents != 0)
			read_some(&errp[0], &sp->err, chunk);
		if ((wfd[0] == -1 && wfd[1] == -1) || pfd[2].revents != 0 ||
		    pfd[4].revents != 0) {
			gone = how->gone(arg, sp);
			how->watch(arg, wfd);	/* may have closed one */
		}
		if (!gone && pfd[3].revents != 0) {
			/* Asked to stop: the same kill as the deadline's. */
			kill(-sp->pid, SIGKILL);
			kill(sp->pid, SIGKILL);
			sp->stopped = 1;
			break;
		}
	}
	/*
	 * The main process is gone (or timed out): what is left of its group
	 * goes too, while the zombie still reserves the group id.
	 */
	kill(-sp->pid, SIGKILL);
	reap(sp, how, arg);
	sp->duration = clock_mono() - start;
	/*
	 * Take what is in the pipes.  Members of the group may take a moment
	 * to die and close their ends, so wait briefly for EOF; a process
	 * outside the group may hold them forever, so not for long.
	 */
	end = clock_mono() + SPAWN_LINGER;
	for (;;) {
		if (outp[0] != -1)
			drain_fd(&outp[0], &sp->out, chunk, SPAWN_DRAIN_MAX, &t1);
		if (errp[0] != -1)
			drain_fd(&errp[0], &sp->err, chunk, SPAWN_DRAIN_MAX, &t2);
		if ((outp[0] == -1 && errp[0] == -1) ||
		    t1 >= SPAWN_DRAIN_MAX || t2 >= SPAWN_DRAIN_MAX ||
		    (left = end - clock_mono()) <= 0)
			break;
		pfd[0].fd = outp[0];
		pfd[1].fd = errp[0];
		pfd[0].events = pfd[1].events = POLLIN;
		pfd[0].revents = pfd[1].revents = 0;
		if (poll(pfd, 2, (int)(left * 1000) + 1) == -1 && errno != EINTR)
			break;
	}
	sp->lingered = outp[0] != -1 || errp[0] != -1;
	rc = 0;
fail:
	free(chunk);
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	close_fd(&devnull);
	return rc;
}
