/*
 * sweep.c: after the last run in flight ends, stop every process the runs
 * left behind (VIVARIUM_SWEEP, containers only; see docs/agent.md).
 *
 * A run's process group is killed at its end, but a child that called
 * setsid() has left the group and outlives it: a fork bomb made that way
 * holds every PID of the container and the agent cannot even accept a
 * connection.  So when no run is in progress, any process besides the
 * agent, PID 1 (the container's init) and the warm zygote with its waiters
 * and spare is a leftover;
 * if there are any, one kill(-1, SIGKILL) stops them all.  The kernel walks
 * the process list for kill(-1) under its tasklist lock and a fork racing
 * with it fails, so a bomb cannot outrun it; it skips the caller and PID 1
 * of the caller's PID namespace.  The zygote dies too (it is ours to
 * signal); the warm machinery forgets it and starts another on the next
 * run, which runs cold meanwhile.
 *
 * kill(-1) reaches every process the caller may signal, so this must only
 * ever run in a container of its own: hence an explicit setting, and a
 * refusal as root (which may signal everything) and as PID 1.
 *
 * The lock is held for the whole sweep: a run that starts meanwhile waits
 * in sweep_run_begin, so the kill can never hit a run.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "log.h"
#include "banned.h"

/* Kill rounds at most, when processes remain after one. */
#define SWEEP_ROUNDS		5
/* How long leftovers get to end by themselves first (a waiter exiting, a
 * group member still dying from the run's own kill), in ms. */
#define SWEEP_GRACE_MS		200
/* How long one round waits for the killed to be gone, in ms. */
#define SWEEP_SETTLE_MS		1000

static pthread_mutex_t sw_lock = PTHREAD_MUTEX_INITIALIZER;
static int		 sw_enabled;
static unsigned int	 sw_inflight;
static pid_t		(*sw_keep)(void);	/* the zygote's pid, or -1 */
static void		(*sw_killed)(void);	/* after a kill: forget it */

/* Tests point these elsewhere. */
static const char	*sweep_proc = "/proc";
static int		(*sweep_kill)(pid_t, int) = kill;

int
sweep_refused(char *why, size_t whylen)
{
	if (getpid() == 1) {
		snprintf(why, whylen, "the agent is PID 1 here; run it under an "
		    "init (podman run --init) so kill(-1) spares PID 1 and the "
		    "agent alike");
		return 1;
	}
	if (getuid() == 0 || geteuid() == 0) {
		snprintf(why, whylen, "the agent runs as root, and kill(-1) as "
		    "root reaches every process it can see, outside the "
		    "sandbox too if the PID namespace is shared; run it as an "
		    "unprivileged user (the image's 1000)");
		return 1;
	}
	return 0;
}

void
sweep_setup(int enabled, pid_t (*keep)(void), void (*killed)(void))
{
	pthread_mutex_lock(&sw_lock);
	sw_enabled = enabled;
	sw_keep = keep;
	sw_killed = killed;
	pthread_mutex_unlock(&sw_lock);
}


/* Reads /proc/<pid>/status into text: 0, or -1 when it is gone. */
static int
proc_status(const char *pid, char *text, size_t len)
{
	char	 path[64];
	ssize_t	 n;
	int	 fd;

	snprintf(path, sizeof(path), "%s/%s/status", sweep_proc, pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, text, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	return 0;
}

static long
status_ppid(const char *text)
{
	const char	*p;
	long		 ppid;

	if ((p = strstr(text, "\nPPid:\t")) == NULL ||
	    sscanf(p + 7, "%ld", &ppid) != 1)
		return -1;
	return ppid;
}

/*
 * Whether /proc/<pid> is a live leftover we may signal: 1, or 0 when it is
 * gone, a zombie (already dead, waiting to be reaped), not ours to kill
 * (kill(2): our real or effective uid is its real or saved uid), or a child
 * or grandchild of `keep`.  The zygote's children are its waiters: they
 * never run the user's code (a run closes the zygote's sockets before it
 * starts, and orphans go to PID 1, never to the zygote) and exit by
 * themselves once the agent has reaped their run; waiting for that would
 * cost every warm run a few milliseconds.  A waiter's live child, when no
 * run is in flight, is the spare waiting for the next run: it has run
 * nothing yet (a run is over, a zombie, by the time the agent sweeps).
 */
static int
stray_alive(const char *pid, pid_t keep)
{
	char		 text[2048], ptext[2048], parent[24], *p;
	unsigned long	 ruid, euid, suid;
	long		 ppid;
	int		 state = 0;

	if (proc_status(pid, text, sizeof(text)) == -1)
		return 0;
	if ((p = strstr(text, "\nState:\t")) != NULL)
		state = p[8];
	if (state == 'Z' || state == 'X' || state == 'x')
		return 0;
	if (keep > 0 && (ppid = status_ppid(text)) > 1) {
		if (ppid == (long)keep)
			return 0;
		snprintf(parent, sizeof(parent), "%ld", ppid);
		if (proc_status(parent, ptext, sizeof(ptext)) == 0 &&
		    status_ppid(ptext) == (long)keep)
			return 0;
	}
	if ((p = strstr(text, "\nUid:\t")) == NULL ||
	    sscanf(p + 6, "%lu %lu %lu", &ruid, &euid, &suid) != 3)
		return 1;	/* unreadable: count it, to be safe */
	return ruid == getuid() || suid == getuid() ||
	    ruid == geteuid() || suid == geteuid();
}

/* How many leftovers exist now: live processes but us, 1 and `keep`. */
static int
strays_count(pid_t keep)
{
	DIR		*d;
	struct dirent	*de;
	const char	*s;
	long		 pid;
	int		 n = 0;

	if ((d = opendir(sweep_proc)) == NULL) {
		log_warn("sweep: %s", sweep_proc);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		for (s = de->d_name; isdigit((unsigned char)*s); s++)
			;
		if (*s != '\0' || s == de->d_name)
			continue;
		pid = strtol(de->d_name, NULL, 10);
		if (pid == 1 || pid == (long)getpid() || pid == (long)keep)
			continue;
		if (stray_alive(de->d_name, keep))
			n++;
	}
	closedir(d);
	return n;
}

/* Polls until no leftover is alive or ms have passed; the last count. */
static int
strays_wait(pid_t keep, long ms)
{
	long	 waited = 0, step = 1;
	int	 n;

	while ((n = strays_count(keep)) > 0 && waited < ms) {
		if (step > ms - waited)
			step = ms - waited;
		clock_sleep_ms(step);
		waited += step;
		if (step < 32)
			step *= 2;
	}
	return n;
}

/* With sw_lock held and no run in flight: 0, or how many were killed. */
static int
sweep_now(void)
{
	pid_t	 keep = sw_keep != NULL ? sw_keep() : -1;
	int	 round, n, total = 0;

	n = strays_wait(keep, SWEEP_GRACE_MS);
	for (round = 0; n > 0 && round < SWEEP_ROUNDS; round++) {
		if (sweep_kill(-1, SIGKILL) == -1 && errno != ESRCH) {
			log_warn("sweep: kill(-1)");
			break;
		}
		total += n;
		if (keep != -1 && sw_killed != NULL) {
			/* The zygote was killed too: reap it through warm.c. */
			sw_killed();
			keep = -1;
		}
		/* Our other children, if any (no run is in flight). */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		n = strays_wait(keep, SWEEP_SETTLE_MS);
	}
	if (total > 0) {
		if (n > 0)
			log_warnx("sweep: killed %d stray process(es) left by "
			    "runs; %d still alive after %d rounds", total, n,
			    round);
		else
			log_info("sweep: killed %d stray process(es) left by "
			    "runs", total);
	}
	return total;
}

void
sweep_run_begin(void)
{
	pthread_mutex_lock(&sw_lock);
	sw_inflight++;
	pthread_mutex_unlock(&sw_lock);
}

int
sweep_run_end(void)
{
	int	 killed = 0;

	pthread_mutex_lock(&sw_lock);
	if (sw_inflight > 0)
		sw_inflight--;
	if (sw_enabled && sw_inflight == 0)
		killed = sweep_now();
	pthread_mutex_unlock(&sw_lock);
	return killed;
}
