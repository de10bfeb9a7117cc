/*
 * init.c: when the agent is started as PID 1, a tiny init in front of it.
 *
 * Podman runs the sandbox with --init (catatonit), but a Kubernetes Pod
 * has no such option, nor has `podman kube play`: the image's entrypoint
 * is PID 1 of the container.  PID 1 inherits every orphan, and the sweep's
 * kill(-1) spares only PID 1 and the caller, so the agent refuses to sweep
 * as PID 1 (sweep.c).  Rather than refuse, PID 1 forks: the child is the
 * agent, the parent stays PID 1 and does what catatonit does: reaps every
 * child that ends and passes the stop signals on to the agent, and exits
 * with its status.  Until the fork no thread exists.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "banned.h"

/* What PID 1 holds but never uses: wiped, so /proc/1/environ shows neither. */
static void
wipe_env(const char *name)
{
	char	*v = getenv(name);

	if (v != NULL)
		explicit_bzero(v, strlen(v));
}

void
init_maybe(void)
{
	sigset_t	 all, old;
	pid_t		 agent, w;
	int		 sig, status;

	if (getpid() != 1)
		return;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	if ((agent = fork()) == -1) {
		/* Carry on as PID 1; VIVARIUM_SWEEP=1 will say why not. */
		log_warn("init: fork");
		sigprocmask(SIG_SETMASK, &old, NULL);
		return;
	}
	if (agent == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return;
	}
	wipe_env("VIVARIUM_AGENT_SECRET");
	wipe_env("VIVARIUM_LINK_KEY");
	/*
	 * Every signal is blocked, so even those PID 1 would otherwise never
	 * see (no handler) are queued for sigwait: SIGCHLD to reap, the rest
	 * for the agent.
	 */
	for (;;) {
		if (sigwait(&all, &sig) != 0)
			continue;
		if (sig != SIGCHLD) {
			if (sig != SIGWINCH && sig != SIGURG)
				(void)kill(agent, sig);
			continue;
		}
		while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
			if (w != agent)
				continue;	/* an orphan, reaped */
			if (WIFEXITED(status))
				_exit(WEXITSTATUS(status));
			_exit(128 + WTERMSIG(status));
		}
	}
}
