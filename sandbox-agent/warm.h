/*
 * warm.h: runs forked from a warm interpreter (python/vivarium/_zygote.py;
 * docs/runner-contract.md, "Warm starts").  One zygote per agent, started
 * with the agent, and one spare run forked from it ahead of time; runs for
 * different workspaces differ only in cwd and environment.  Whenever the zygote is not ready or misbehaves, the caller
 * runs cold: nothing here may cost a run its result.
 */
#ifndef VIVARIUM_WARM_H
#define VIVARIUM_WARM_H

#include <sys/types.h>

#include "spawn.h"

/* A zygote not ready this long after its start is broken (s). */
#define WARM_READY_WAIT		30.0
/* How long a spare (or the zygote making it) may take to answer (s). */
#define WARM_REPLY_TIMEOUT	5.0

/* One run's state for warm_starter (spawn.starter_arg). */
struct warm_run {
	int		 sock;		/* the waiter's status socket, or -1 */
	int		 req;		/* the run's request socket, or -1 */
	int		 status;	/* raw wait status, when have_status */
	int		 have_status;
	int		 lost;		/* the waiter went away without a status */
	int		 failed;	/* the start failed through the zygote's fault */
	unsigned int	 gen;		/* which zygote made the spare */
};

#define WARM_RUN_INIT	{ -1, -1, 0, 0, 0, 0, 0 }

/* Starts sp through the zygote (sp->envp and sp->cwd are the run's). */
extern const struct spawn_starter warm_starter;

/*
 * Makes sure the zygote runs, starting it with `python -P -m
 * vivarium._zygote` and envp when needed (or when it was started with
 * another interpreter or environment), and waits at most `wait` seconds for
 * its imports.  0: ready; -1: run cold (a failure is logged).  Runs pass 0:
 * while a new zygote imports, they run cold rather than wait.
 */
int	warm_ready(const char *python, char *const *envp, double wait);
/* The workspace the first run is likely in (one shared workspace): its
 * spare restores that namespace ahead.  Each run's cwd replaces it. */
void	warm_hint(const char *workspace);
/* A start failed through the zygote: stop it (unless another has replaced
 * it meanwhile); the next run starts another. */
void	warm_broken(const struct warm_run *, const char *why);
/* Stops the zygote (tests; the agent's exit closes its socket anyway). */
void	warm_stop(void);
/* A sweep (sweep.c) killed the zygote with everything else: reap it and
 * start another on the next run, which runs cold meanwhile; not a failure. */
void	warm_swept(void);
/* The zygote's pid, or -1 (tests). */
pid_t	warm_zygote_pid(void);

#endif
