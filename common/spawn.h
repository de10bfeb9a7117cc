/*
 * spawn.h: the one way vivarium programs run a child process.
 *
 * After git's run-command.c and libuv's process.c: the child leads its own
 * process group, signals are reset and unblocked in it, only
 * async-signal-safe calls happen between fork and exec, and a close-on-exec
 * pipe carries an exec (or chdir) failure back to the parent.  The parent
 * drains stdout and stderr with poll(2), keeps at most `cap` bytes of each
 * (the tail, in a ring), and enforces a deadline on CLOCK_MONOTONIC by
 * killing the whole group with SIGKILL; a caller's stop_fd polled in the
 * same loop kills it the same way at any moment (a cancelled call).
 *
 * When the main process exits, whatever is left of its group is killed and
 * the pipes are drained (waiting at most 0.2 s for their EOF), then closed:
 * a descendant that left the group (setsid) and keeps the pipes open cannot
 * hold the caller.  It is not killed (it is no longer reachable through the
 * group); it only loses its output.
 *
 *	struct spawn sp = SPAWN_INIT;
 *	sp.argv = argv; sp.cwd = dir; sp.timeout = 60; sp.out.cap = 1 << 16;
 *	if (spawn_run(&sp, errbuf, sizeof(errbuf)) == -1) ...
 *	... sp.exited, sp.exit_code, spawn_stream_take(&sp.out, &len) ...
 *	spawn_release(&sp);
 *
 * spawn_run is safe to call from several threads at once: every descriptor
 * it creates is close-on-exec, so one child never inherits another's pipes.
 * It waits only for its own pid, so SIGCHLD must not be set to SIG_IGN.
 *
 * A starter (struct spawn_starter) replaces fork+exec of argv with another
 * way to get the process, e.g. asking a fork server for it; the pipes, the
 * deadline, the group kill and the tails stay spawn_run's.
 */
#ifndef VIVARIUM_SPAWN_H
#define VIVARIUM_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* One output stream: the last `cap` bytes are kept, all are counted. */
struct spawn_stream {
	size_t		 cap;		/* in: bytes kept; 0 keeps nothing */
	/* in, optional: sees every byte read, in order, before it is kept */
	void		(*observe)(void *arg, const unsigned char *, size_t);
	void		*observe_arg;

	unsigned long long total;	/* out: bytes read */
	/* private: a linear buffer until it holds cap bytes, then a ring */
	unsigned char	*data;
	size_t		 len, size, head;
};

struct spawn;

/*
 * Another way to start the process.  Every hook gets starter_arg.
 */
struct spawn_starter {
	/*
	 * Starts the process with stdin, stdout and stderr on stdio[0..2]
	 * (borrowed: spawn_run closes its copies after) and sets sp->pid,
	 * which must lead its own process group by the time this returns.
	 * 0, or -1 with errbuf; set sp->exec_errno (and chdir_failed) when
	 * the program could not start, as the fork+exec path does.
	 */
	int	(*start)(void *arg, struct spawn *sp, const int stdio[3],
		    char *errbuf, size_t errlen);
	/* Up to two descriptors (-1: none) that poll readable when the
	 * process may have ended; with none spawn_run looks every 10 ms. */
	void	(*watch)(void *arg, int fds[2]);
	/* 1 when the process has ended, or has said that it ends now with
	 * its output all written and its ends of the pipes closed (the
	 * kernel's teardown of a large process takes milliseconds); its pid
	 * (and so its process group id) must stay reserved until reap. */
	int	(*gone)(void *arg, struct spawn *sp);
	/* Waits for the end and returns the raw wait status; frees what
	 * start took.  Called once for every successful start. */
	int	(*reap)(void *arg, struct spawn *sp);
};

struct spawn {
	/* in */
	char *const	*argv;		/* borrowed; argv[0] searched in PATH if it has no '/' */
	char *const	*envp;		/* borrowed; NULL passes the caller's environment */
	const char	*cwd;		/* borrowed; NULL keeps the caller's */
	double		 timeout;	/* seconds; <= 0 means none */
	struct spawn_stream out, err;	/* stdin is always /dev/null */

	/* out */
	pid_t		 pid;
	int		 status;	/* raw waitpid status */
	int		 exited;	/* exit_code is valid */
	int		 exit_code;
	int		 signaled;	/* killed by `signal`, not by our timeout */
	int		 signal;
	int		 timed_out;	/* we killed the group at the deadline */
	int		 lingered;	/* descendants still held the pipes at exit */
	int		 exec_errno;	/* the program could not be started */
	int		 chdir_failed;	/* ... because cwd could not be entered */
	double		 duration;	/* seconds from fork to reaping */

	/* in, optional: how to start it; NULL forks and executes argv */
	const struct spawn_starter *starter;
	void		*starter_arg;

	/*
	 * in, optional: when this descriptor polls readable (an eventfd
	 * written by whoever wants the run stopped) the group is killed as
	 * at the deadline and `stopped` is set.  -1: none.
	 */
	int		 stop_fd;
	/* out: we killed the group because stop_fd fired */
	int		 stopped;
};

#define SPAWN_STREAM_INIT	{ 0, NULL, NULL, 0, NULL, 0, 0, 0 }
#define SPAWN_INIT	{ NULL, NULL, NULL, 0, SPAWN_STREAM_INIT, \
			  SPAWN_STREAM_INIT, -1, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, \
			  NULL, NULL, -1, 0 }

/*
 * Runs the child to completion.  Returns 0 when it ran and was reaped
 * (whatever its exit), -1 otherwise with the reason in errbuf: when the
 * program could not be executed (not found, not executable, cwd missing)
 * exec_errno is set as well.
 */
int	spawn_run(struct spawn *, char *errbuf, size_t errlen);
/*
 * Starts argv (envp NULL: the caller's environment) in its own process
 * group with fds[i] as its descriptor i (at most 8), every other one closed
 * and signals reset, and returns at once: the pid, which the caller must
 * reap, or -1 with the reason in errbuf (the program could not start).
 */
pid_t	spawn_detached(char *const *argv, char *const *envp, const int *fds,
	    int nfds, char *errbuf, size_t errlen);
/* Frees the kept output; the struct can be run again. */
void	spawn_release(struct spawn *);

/*
 * The one PATH search: where prog (no '/': looked up in envp's PATH, the
 * caller's environment when envp is NULL, /usr/local/bin:/usr/bin:/bin
 * when unset) is, as the path to execute, in out.  An empty entry means
 * the current directory (POSIX), and it and any relative entry are checked
 * relative to cwd, where the child will run (NULL: the caller's).  A
 * regular executable file counts.  Returns 0 or an errno value (ENOENT,
 * EACCES when one was found but not executable, ENAMETOOLONG).
 */
int	spawn_find(const char *prog, char *const *envp, const char *cwd,
	    char *out, size_t outlen);

/*
 * The kept bytes of a stream in order, as one NUL-terminated block
 * (rearranging the ring in place).  Borrowed: valid until spawn_release.
 * Never NULL.
 */
const unsigned char *spawn_stream_take(struct spawn_stream *, size_t *lenp);

/* Appends to a stream as the reader does; for tests and for callers that
 * want the same tail keeping for other data. */
int	spawn_stream_add(struct spawn_stream *, const unsigned char *, size_t);
void	spawn_stream_release(struct spawn_stream *);

#endif
