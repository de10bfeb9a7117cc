/*
 * backend.h: where the supervisor's sandboxes run, seen from pool.c and main.c.
 * One struct of operations named for what the supervisor needs, and an opaque
 * state pointer: Podman (backend_podman.c, over backend_podman_objects.c and
 * podman.c) is one implementation, Kubernetes (backend_kube.c, over kspec.c and
 * kube.c) the other.  Every operation is safe from several threads at once for
 * different users; pool.c serialises the calls for one user.
 *
 * Errors use struct berr (common/berr.h): status 0 when the backend cannot
 * be reached at all (pool.c answers 503), else an HTTP-like status and a
 * sentence a person can act on; cause is the engine's short reason, when
 * it sent one.
 */
#ifndef VIVARIUM_BACKEND_H
#define VIVARIUM_BACKEND_H

#include <sys/types.h>

#include "berr.h"
#include "supervisor.h"

/* What a user's sandbox is, folded to what the supervisor acts on. */
enum backend_state {
	BK_MISSING,
	BK_CREATED,	/* made, never started */
	BK_RUNNING,
	BK_STOPPED,
	BK_OTHER,	/* paused, in transition, unknown */
};

struct backend_sandbox {
	char			 user[USER_ID_MAX + 1];
	enum backend_state	 state;
};

/* What inspect finds; the memory in use only when running. */
struct backend_info {
	enum backend_state	 state;
	int			 memory_known;
	unsigned long long	 memory_bytes;
};

/* Start-up checks report through this: level 0 information, 1 warning. */
typedef void	(*backend_say)(int level, const char *msg);
/* say, formatted (for the implementations' check). */
void	backend_sayf(backend_say, int level, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* A tar stream's source for import: bytes into dst, 0 at the end, -1. */
typedef ssize_t	(*backend_source)(void *arg, char *dst, size_t len);

struct backend {
	const char	*name;		/* "podman" */
	/* What vivariumctl add-user and remove-user tell a person of. */
	const char	*objects;	/* "network, volume and container" */
	const char	*storage;	/* "workspace volume" */
	void		*state;		/* the implementation's */

	/*
	 * Start-up: reaches the backend and checks what it enforces (limits,
	 * quotas, host ids, the runtime asked for), each finding said.  0;
	 * -1 when it cannot be reached now (err; sandboxes start once it is
	 * back); -2 when this configuration must not run here (err.msg).
	 */
	int	(*check)(struct backend *, backend_say, struct berr *err);
	/*
	 * Brings the user's sandbox, its storage and its network policy to
	 * "running and answering", creating what is missing; *created says
	 * whether a sandbox was made, *addr how to reach its agent.  0 or -1.
	 */
	int	(*ensure)(struct backend *, const char *user, int *created,
		    struct agent_addr *addr, struct berr *err);
	/* Stops the sandbox, keeping it and its storage; 0 or -1. */
	int	(*stop)(struct backend *, const char *user, struct berr *err);
	/* Removes the sandbox and its network; its storage too when purge. */
	int	(*remove)(struct backend *, const char *user, int purge,
		    struct berr *err);
	/* Provisioning manual: was the user added by the operator?  1, 0, -1. */
	int	(*registered)(struct backend *, const char *user,
		    struct berr *err);
	int	(*inspect)(struct backend *, const char *user,
		    struct backend_info *out, struct berr *err);
	/*
	 * The managed sandboxes (adopt on restart), a new array of *n into
	 * *out (free()).  One that never started, left by a crash between
	 * create and start, is removed rather than listed.  0 or -1.
	 */
	int	(*list)(struct backend *, struct backend_sandbox **out,
		    size_t *n, struct berr *err);
	/*
	 * The user's workspace as a tar stream written to fd out (export),
	 * and a tar stream from source unpacked into it (import), running
	 * or stopped.  0 or -1; export: status 404 when the user has no
	 * storage, 410 when the sandbox is gone but its storage kept.
	 */
	int	(*export_ws)(struct backend *, const char *user, int out,
		    struct berr *err);
	int	(*import_ws)(struct backend *, const char *user,
		    backend_source source, void *arg, struct berr *err);
	/* Anything of the user's there, sandbox or storage: 1, 0, -1. */
	int	(*exists)(struct backend *, const char *user, struct berr *err);
	/*
	 * What vivariumctl status shows of a user exists found: a new JSON
	 * object with "state" ("running" when the sandbox runs) and what the
	 * backend knows (names, addresses, limits), or NULL with err.  text
	 * (may be NULL) gets the same for a person, when the backend has a
	 * layout of its own; left empty, the fields are shown one a line.
	 */
	json_t	*(*describe)(struct backend *, const char *user,
		    struct buf *text, struct berr *err);
	/*
	 * What vivariumctl list shows: a new JSON object, user id to an
	 * object with "user", "state" and what the backend knows
	 * (memory_bytes, disk_used_bytes, image_current, image_age_seconds),
	 * every user with a sandbox or storage; NULL with err.
	 */
	json_t	*(*users)(struct backend *, struct berr *err);
	/*
	 * vivariumctl logs and doctor, which read the engine itself: the
	 * sandbox's log and the egress proxy's lines for it, the checks
	 * (JSON when json), on standard output.  0; 1 when something could
	 * not be read or a check failed (said); -1 with err: 404 no sandbox,
	 * 501 the backend has none (the sentence says what to use instead).
	 */
	int	(*logs)(struct backend *, const char *user, struct berr *err);
	int	(*doctor)(struct backend *, const char *fetch, int json,
		    struct berr *err);
	/*
	 * Why the backend does not do the vivariumctl command named (a
	 * sentence saying what to use instead), or NULL when it does.  NULL
	 * op: it does them all.
	 */
	const char *(*refuses)(struct backend *, const char *command);
	/* The user's sandbox as it is named to people (logs), into dst. */
	void	(*label)(struct backend *, const char *user, char *dst,
		    size_t len);
	/*
	 * Upkeep at every reaper tick (30 s at most) and once after check:
	 * Podman keeps the egress proxy it manages.  NULL: nothing to do.
	 */
	void	(*tick)(struct backend *);
	/* A request for the user began or ended (vivariumctl's idle time). */
	void	(*used)(struct backend *, const char *user);
	void	(*free)(struct backend *);
};

/* users (struct backend) from list and inspect, each in the state inspect
 * finds ("running", "stopped", ...) with its memory when known. */
json_t	*backend_users(struct backend *, struct berr *);
/* Seconds since the supervisor last served the user (the mtime of its
 * run directory, which used touches), or -1. */
long	backend_idle(const struct conf *, const char *user);
/* For people: 1.5G, 300M, 12K; 40s, 5m, 3h ("-" when s < 0). */
void	short_size(unsigned long long b, char *dst, size_t len);
void	short_time(long s, char *dst, size_t len);
/* A user's image for people, from image_current and image_age_seconds as
 * users() and describe() give them: "current 3h", "OLD ?", or "-". */
void	image_label(const json_t *u, char *dst, size_t len);

/*
 * The backend conf->backend names, or NULL (errno).  on_error (may be
 * NULL) is told of every failed call to the engine behind it (metrics).
 */
struct backend	*backend_new(const struct conf *,
		    void (*on_error)(const struct berr *));
/* The implementations, which backend_new (backend.c) calls. */
struct backend	*podman_backend(const struct conf *,
		    void (*on_error)(const struct berr *));
struct backend	*kube_backend(const struct conf *,
		    void (*on_error)(const struct berr *));

#endif
