/*
 * podman.h: a small client for Podman's libpod REST API over its unix
 * socket (libcurl), shared by vivarium-supervisor and vivariumctl.
 *
 * Every call returns 0 on success and -1 on failure; a failure fills the
 * caller's struct berr (backend.h) with the HTTP status (0 when Podman
 * could not be reached at all) and a sentence a person can act on, built
 * from Podman's error body ({"cause", "message", "response"}) or from
 * curl's error text.
 * Calls are safe from several threads at once: each uses its own handle.
 */
#ifndef VIVARIUM_PODMAN_H
#define VIVARIUM_PODMAN_H

#include <sys/types.h>

#include <jansson.h>

#define PODMAN_API	"/v4.0.0/libpod"

struct berr;

struct podman {
	char	*socket;	/* owned */
	long	 timeout_ms;	/* per request */
	/* Learned from /version on first contact (0 until then). */
	int	 major, minor, patch;
	char	 version[32];
	/* Learned from /info on first need (-1 until then). */
	int	 rootless;
	/*
	 * Rootless: the first host uid and gid of the user's subordinate
	 * ranges (its namespace's ids 1..sub_size), 0 when it has none.
	 */
	unsigned long	 sub_uid, sub_gid, sub_size;
	/* Called after every failed call (may be NULL): metrics. */
	void	(*on_error)(const struct berr *);
};

/* What a container's State.Status says, folded to what we act on. */
enum ctr_state {
	CTR_MISSING,
	CTR_CREATED,
	CTR_RUNNING,
	CTR_STOPPED,	/* exited, stopped, configured */
	CTR_PAUSED,
	CTR_TRANSIENT,	/* stopping, removing: look again shortly */
	CTR_OTHER,
};

/* Returns a new client, or NULL (ENOMEM).  socket is copied. */
struct podman	*podman_new(const char *socket, long timeout_ms);
void		 podman_free(struct podman *);

/*
 * One request: body (borrowed, may be NULL) is sent as JSON; *reply gets a
 * new reference to the decoded JSON answer when the caller wants it and the
 * answer is JSON.  *status gets the HTTP status.  2xx and 304 are success;
 * anything else is returned as -1 with err filled.
 */
int	podman_call(struct podman *, const char *method, const char *path,
	    json_t *body, json_t **reply, long *status, struct berr *);

/* Reads the version if not known yet; 0 or -1. */
int	podman_version(struct podman *, struct berr *);
/* Nonzero when the service is at least major.minor (version must be known). */
int	podman_at_least(const struct podman *, int major, int minor);
/* The value for the bridge "isolate" option that this Podman accepts. */
const char *podman_isolate_value(const struct podman *);

/* Objects.  *_exists returns 1, 0, or -1 with err. */
int	podman_network_exists(struct podman *, const char *name, struct berr *);
int	podman_network_create(struct podman *, json_t *spec, struct berr *);
int	podman_network_remove(struct podman *, const char *name, struct berr *);
/* ip: a static address on the network, or NULL for Podman's choice. */
int	podman_network_connect(struct podman *, const char *network,
	    const char *container, const char *alias, const char *ip,
	    struct berr *);
int	podman_network_disconnect(struct podman *, const char *network,
	    const char *container, struct berr *);
/* *out gets a new reference to the inspect JSON, or NULL when missing. */
int	podman_network_inspect(struct podman *, const char *name, json_t **out,
	    struct berr *);
int	podman_volume_exists(struct podman *, const char *name, struct berr *);
/* *out gets a new reference to the inspect JSON, or NULL when missing. */
int	podman_volume_inspect(struct podman *, const char *name, json_t **out,
	    struct berr *);
int	podman_volume_create(struct podman *, json_t *spec, struct berr *);
int	podman_volume_remove(struct podman *, const char *name, struct berr *);
int	podman_container_create(struct podman *, json_t *spec, struct berr *);
int	podman_container_start(struct podman *, const char *name, struct berr *);
int	podman_container_stop(struct podman *, const char *name, int timeout,
	    struct berr *);
int	podman_container_remove(struct podman *, const char *name, struct berr *);
/* *out gets a new reference to the inspect JSON, or NULL when missing. */
int	podman_container_inspect(struct podman *, const char *name, json_t **out,
	    struct berr *);
/*
 * The image a reference names: its full id into id (64 hex digits).
 * 0, or -1 with e (404 when no image carries that name).
 */
int	podman_image_id(struct podman *, const char *ref, char *id, size_t len,
	    struct berr *);
/* Removes an image no container uses (409 while one does: kept). */
int	podman_image_remove(struct podman *, const char *id, struct berr *);
/* State of a container from its inspect JSON (borrowed; NULL: missing). */
enum ctr_state	 podman_ctr_state(const json_t *inspect);
const char	*podman_ctr_state_name(enum ctr_state);
/* *out: new reference to an array, objects labelled io.vivarium.managed=true. */
int	podman_container_list(struct podman *, json_t **out, struct berr *);
int	podman_network_list(struct podman *, json_t **out, struct berr *);
int	podman_volume_list(struct podman *, json_t **out, struct berr *);
/* The last tail lines of a container's output, appended to out as text. */
struct buf;
int	podman_container_logs(struct podman *, const char *name, int tail,
	    struct buf *out, struct berr *);
/* Memory in use by a running container, in bytes; -1 with err. */
int	podman_container_memory(struct podman *, const char *name,
	    unsigned long long *bytes, struct berr *);

/*
 * A path in a container as a tar stream (GET .../archive), written to fd
 * out; and a tar stream from source, unpacked into a path of a container
 * (PUT .../archive; Podman gives the files to the container's user).  Both
 * work on stopped containers and read-only roots, and reach volumes
 * mounted there.  No overall timeout: only a minute of silence ends them.
 * source fills dst with up to len bytes and returns how many, 0 at the end,
 * -1 to abort (its message in e->msg of the failed call is the caller's to
 * give: podman_archive_put then says only that the upload was aborted).
 */
typedef ssize_t	(*podman_source)(void *arg, char *dst, size_t len);
int	podman_archive_get(struct podman *, const char *name, const char *path,
	    int out, struct berr *);
int	podman_archive_put(struct podman *, const char *name, const char *path,
	    podman_source source, void *arg, struct berr *);

/*
 * Whether this Podman enforces memory, CPU and PID limits: 1 yes, 0 no
 * (why says so, for a loud warning: rootless on cgroup v1, where Podman
 * ignores them, or rootless on v2 without the controllers delegated),
 * -1 when /info could not be read (err).
 */
int	podman_limits_enforced(struct podman *, char *why, size_t whylen,
	    struct berr *);

/*
 * 1 when the service runs rootless (its containers are already in the
 * user's namespace: no per-sandbox id ranges, no loop mounts), 0 rootful,
 * -1 when /info could not be read (err).  Asked once per client.
 */
int	podman_rootless(struct podman *, struct berr *);
/*
 * 1 when the service's OCI runtime is gVisor's runsc (its /info names a
 * runsc binary or reports a runsc version), 0 when it is another, whose
 * path goes to name; -1 when /info could not be read (err).
 */
int	podman_runtime_runsc(struct podman *, char *name, size_t namelen,
	    struct berr *);
/* True when the error says the object already exists / the name is taken. */
int	podman_err_exists(const struct berr *);

#endif
