/*
 * sandbox.c: one user's Podman objects (network, volume, container, runtime
 * directory) made, adopted, checked and removed, shared by the supervisor
 * and vivariumctl; what each object is to be comes from spec.c.  Nothing
 * here keeps state: Podman is asked every time, so both programs see the
 * same truth.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "supervisor.h"
#include "banned.h"

/* ---------------------------------------------------------------- helpers */

/* sandbox_names, or a 400 saying what a user id may be. */
static int
user_names(const struct conf *c, const char *user, struct names *n,
    struct perr *e)
{
	if (sandbox_names(c, user, n) == -1) {
		perr_set(e, 400, "\"%s\": %s", user, route_user_rule);
		return -1;
	}
	return 0;
}

/* What an entry that could not be opened as a directory is, for errors. */
static const char *
entry_kind(int dfd, const char *name)
{
	struct stat	 st;
	int		 saved = errno;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return strerror(saved);
	if (S_ISLNK(st.st_mode))
		return "a symbolic link";
	if (S_ISREG(st.st_mode))
		return "a file";
	if (!S_ISDIR(st.st_mode))
		return "not a regular file";
	return strerror(saved);
}

/*
 * The directory bind-mounted at /run/vivarium, owned by the sandbox user:
 * <state_dir>/users/<user>.  Made and handed over through descriptors
 * (mkdirat, openat with O_NOFOLLOW, fchown), never by path, so neither a
 * symlink planted at users/ or users/<user> nor a rename racing with us
 * makes the supervisor chown or mount anything else; an entry that is not
 * the directory expected (a file, a link, another owner's directory) is
 * refused, not repaired.
 */
static int
rundir_make(const struct conf *c, const struct names *n, struct perr *e)
{
	const char	*user = strrchr(n->rundir, '/') + 1;
	unsigned int	 uid, gid;
	struct stat	 st;
	char		 extra;
	int		 sfd = -1, ufd = -1, rfd = -1, numeric, r = -1;

	numeric = sscanf(c->sandbox_user, "%u:%u%c", &uid, &gid, &extra) == 2;
	if (mkdir(c->state_dir, 0755) == -1 && errno != EEXIST) {
		perr_set(e, 500, "cannot create the state directory %s: %s",
		    c->state_dir, strerror(errno));
		goto fail;
	}
	if ((sfd = open(c->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
	    == -1) {
		perr_set(e, 500, "cannot open the state directory %s: %s",
		    c->state_dir, strerror(errno));
		goto fail;
	}
	if (mkdirat(sfd, SANDBOX_USERS_DIR, 0755) == -1 && errno != EEXIST) {
		perr_set(e, 500, "cannot create %s/" SANDBOX_USERS_DIR ": %s",
		    c->state_dir, strerror(errno));
		goto fail;
	}
	if ((ufd = openat(sfd, SANDBOX_USERS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || fstat(ufd, &st) == -1) {
		perr_set(e, 500, "%s/" SANDBOX_USERS_DIR " is not a directory (%s): "
		    "refusing to use it", c->state_dir, entry_kind(sfd,
		    SANDBOX_USERS_DIR));
		goto fail;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		perr_set(e, 500, "%s/" SANDBOX_USERS_DIR " belongs to uid %u or is "
		    "writable by others: refusing to use it", c->state_dir,
		    (unsigned)st.st_uid);
		goto fail;
	}
	if (mkdirat(ufd, user, 0700) == -1 && errno != EEXIST) {
		perr_set(e, 500, "cannot create %s: %s", n->rundir,
		    strerror(errno));
		goto fail;
	}
	if ((rfd = openat(ufd, user, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || fstat(rfd, &st) == -1) {
		perr_set(e, 500, "%s is not a directory (%s): refusing to use "
		    "it", n->rundir, entry_kind(ufd, user));
		goto fail;
	}
	/* Ours (new), or already the sandbox user's (made before). */
	if (st.st_uid != geteuid() && !(numeric && st.st_uid == uid)) {
		perr_set(e, 500, "%s belongs to uid %u, neither the supervisor "
		    "nor the sandbox user: refusing to use it", n->rundir,
		    (unsigned)st.st_uid);
		goto fail;
	}
	if (numeric) {
		if (geteuid() == 0 && fchown(rfd, uid, gid) == -1) {
			perr_set(e, 500, "cannot hand %s to the sandbox user: %s",
			    n->rundir, strerror(errno));
			goto fail;
		}
		if (fchmod(rfd, 0700) == -1) {
			perr_set(e, 500, "cannot set the mode of %s: %s",
			    n->rundir, strerror(errno));
			goto fail;
		}
	} else if (fchmod(rfd, 0777) == -1) {
		perr_set(e, 500, "cannot open up %s: %s", n->rundir,
		    strerror(errno));
		goto fail;
	}
	r = 0;
fail:
	if (rfd != -1)
		close(rfd);
	if (ufd != -1)
		close(ufd);
	if (sfd != -1)
		close(sfd);
	return r;
}

/*
 * Makes the object called name from spec (new reference, released here)
 * unless it exists; one that appears meanwhile (another caller) is fine.
 * *made: whether this call made it.  0, or -1 with e.
 */
static int
object_ensure(struct podman *p, const char *name,
    int (*exists_fn)(struct podman *, const char *, struct perr *),
    int (*create_fn)(struct podman *, json_t *, struct perr *), json_t *spec,
    int *made, struct perr *e)
{
	int	 r;

	*made = 0;
	if ((r = exists_fn(p, name, e)) != 0) {
		json_decref(spec);
		return r == 1 ? 0 : -1;
	}
	r = create_fn(p, spec, e);
	json_decref(spec);
	if (r == -1 && !perr_exists(e))
		return -1;
	*made = r == 0;
	return 0;
}

/* The proxy's address on the user's network into dst, or "" without one. */
static int
proxy_ip(const struct conf *c, struct podman *p, const struct names *n,
    char *dst, size_t len, struct perr *e)
{
	json_t	*net;
	int	 r;

	dst[0] = '\0';
	if (c->egress_container == NULL)
		return 0;
	if (podman_network_inspect(p, n->network, &net, e) == -1)
		return -1;
	if (net == NULL) {
		perr_set(e, 404, "the network %s is gone", n->network);
		return -1;
	}
	r = sandbox_proxy_ip_of(net, dst, len);
	json_decref(net);
	if (r == -1) {
		perr_set(e, 500, "the network %s has no IPv4 subnet with room "
		    "for the egress proxy", n->network);
		return -1;
	}
	return 0;
}

static int
volume_ensure(struct podman *p, const char *user, const struct names *n,
    struct perr *e)
{
	int	 made;

	return object_ensure(p, n->volume, podman_volume_exists,
	    podman_volume_create, sandbox_volume_spec(user), &made, e);
}

/*
 * Puts the proxy container on the user's network at ip, the address the
 * sandbox's proxy variables name.  Already there at that address: done;
 * at another (connected by hand): moved.
 */
static int
egress_connect(const struct conf *c, struct podman *p, const struct names *n,
    const char *ip, struct perr *e)
{
	json_t		*ins;
	const char	*cur;
	int		 same;

	if (c->egress_container == NULL)
		return 0;
	if (podman_network_connect(p, n->network, c->egress_container,
	    c->egress_alias, ip, e) == 0)
		return 0;
	if (strstr(e->msg, "already connected") != NULL) {
		if (podman_container_inspect(p, c->egress_container, &ins, e)
		    == -1)
			return -1;
		cur = json_string_value(json_object_get(json_object_get(
		    json_object_get(json_object_get(ins, "NetworkSettings"),
		    "Networks"), n->network), "IPAddress"));
		same = cur != NULL && strcmp(cur, ip) == 0;
		if (!same)
			log_info("%s: moving the egress proxy from %s to its "
			    "fixed address %s", n->network,
			    cur != NULL ? cur : "(unknown)", ip);
		json_decref(ins);
		if (same)
			return 0;
		if (podman_network_disconnect(p, n->network,
		    c->egress_container, e) == -1)
			return -1;
		if (podman_network_connect(p, n->network, c->egress_container,
		    c->egress_alias, ip, e) == 0)
			return 0;
	}
	if (e->status == 404)
		snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg),
		    " (is the egress proxy container \"%s\" running?)",
		    c->egress_container);
	return -1;
}

/*
 * The user's network there, the proxy's address on it in ip ("" without a
 * proxy), and on a network made just now the proxy connected at it.
 */
static int
network_up(const struct conf *c, struct podman *p, const char *user,
    const struct names *n, char *ip, size_t iplen, struct perr *e)
{
	int	 made;

	if (object_ensure(p, n->network, podman_network_exists,
	    podman_network_create, sandbox_network_spec(c, user,
	    podman_isolate_value(p)), &made, e) == -1
	    || proxy_ip(c, p, n, ip, iplen, e) == -1)
		return -1;
	if (made && egress_connect(c, p, n, ip, e) == -1)
		return -1;
	return 0;
}

/* The first variable of want that the inspected container lacks, or NULL. */
static const char *
env_stale(const json_t *ins, json_t *want)
{
	json_t		*have, *v;
	const char	*k;
	char		 kv[1024];
	size_t		 i;
	int		 found;

	have = json_object_get(json_object_get(ins, "Config"), "Env");
	json_object_foreach(want, k, v) {
		snprintf(kv, sizeof(kv), "%s=%s", k, json_string_value(v));
		found = 0;
		for (i = 0; i < json_array_size(have) && !found; i++)
			found = json_string_value(json_array_get(have, i)) != NULL
			    && strcmp(json_string_value(json_array_get(have, i)),
			    kv) == 0;
		if (!found)
			return k;
	}
	return NULL;
}

/*
 * A stopped container made with other settings (sandbox.env or the link
 * settings changed, or the proxy's address changed with a new network) is
 * removed, to be made again on the same volume.
 * 1: current, 0: removed, -1: error.
 */
static int
ctr_current(const struct conf *c, struct podman *p, const char *user,
    const struct names *n, const char *ip, struct perr *e)
{
	json_t		*ins, *want;
	const char	*stale;

	if (podman_container_inspect(p, n->container, &ins, e) == -1)
		return -1;
	if (ins == NULL)
		return 0;
	want = sandbox_env(c, user, ip[0] != '\0' ? ip : NULL);
	stale = env_stale(ins, want);
	if (stale != NULL)
		log_info("%s: made with other settings (%s); making it again "
		    "on the same workspace volume", n->container, stale);
	json_decref(want);
	json_decref(ins);
	if (stale == NULL)
		return 1;
	if (podman_container_remove(p, n->container, e) == -1
	    && e->status != 404)
		return -1;
	return 0;
}

/*
 * Why a running container is not as this supervisor would make it, or
 * NULL: its links are signed with another key or for another address (the
 * key file was replaced, public_url changed), so its new links would never
 * open.  Stopped, it is made again on the same volume.
 */
static const char *
running_stale(const struct conf *c, const char *user, const json_t *ins)
{
	static char	 why[128];
	const char	*k;
	json_t		*links;

	if ((links = json_object()) == NULL)
		return NULL;
	sandbox_link_env(c, user, links);
	k = env_stale(ins, links);
	if (k != NULL)
		snprintf(why, sizeof(why), "its file links are signed with "
		    "another key or for another address (%s)", k);
	json_decref(links);
	return k != NULL ? why : NULL;
}

/*
 * Rootless Podman maps the container's uids onto the host user's
 * subordinate range, so the sandbox user (1000) would be a host uid the
 * supervisor can neither hand the socket directory to (chown needs root)
 * nor connect to the agent's 0600 socket of.  keep-id maps the sandbox user
 * onto the supervisor's own uid instead: the directory and the socket are
 * the supervisor's, 0700 and 0600 as with rootful Podman, and every other
 * uid of the container stays in the subordinate range.
 */
static void
userns_keep_id(const struct conf *c, json_t *spec)
{
	unsigned int	 uid, gid;
	char		 extra, v[64];

	if (sscanf(c->sandbox_user, "%u:%u%c", &uid, &gid, &extra) != 2)
		return;
	snprintf(v, sizeof(v), "uid=%u,gid=%u", uid, gid);
	json_object_set_new(spec, "userns", json_pack("{s:s, s:s}", "nsmode",
	    "keep-id", "value", v));
}

int
sandbox_create(const struct conf *c, struct podman *p, const char *user,
    struct perr *e)
{
	struct names	 n;
	json_t		*spec;
	char		 ip[INET_ADDRSTRLEN];
	int		 rootless, r;

	if (user_names(c, user, &n, e) == -1)
		return -1;
	if (podman_version(p, e) == -1)
		return -1;
	if (network_up(c, p, user, &n, ip, sizeof(ip), e) == -1)
		return -1;
	if (volume_ensure(p, user, &n, e) == -1)
		return -1;
	if (rundir_make(c, &n, e) == -1)
		return -1;
	if ((rootless = podman_rootless(p, e)) == -1)
		return -1;
	spec = sandbox_container_spec(c, user, ip[0] != '\0' ? ip : NULL);
	if (spec != NULL && rootless)
		userns_keep_id(c, spec);
	r = podman_container_create(p, spec, e);
	json_decref(spec);
	if (r == -1 && perr_exists(e))
		return 0;	/* someone else made it: fine, it is ours */
	if (r == -1 && e->status == 500 && (strstr(e->msg, "image not known")
	    || strstr(e->msg, "no such image"))) {
		snprintf(e->msg, sizeof(e->msg), "the sandbox image %s is not "
		    "in Podman's storage (create does not pull): build it with "
		    "`make image` or set image: in the config", c->image);
	}
	return r;
}

/* Polls the agent until it answers, watching the container meanwhile. */
static int
wait_ready(const struct conf *c, struct podman *p, const struct names *n,
    struct perr *e)
{
	double	 deadline = clock_mono() + (double)c->ready_timeout;
	double	 next_look = clock_mono() + 1.0;
	json_t	*ins;
	enum ctr_state st;

	for (;;) {
		if (agent_probe(n->sock, 2000) == 0)
			return 0;
		if (clock_mono() > deadline) {
			perr_set(e, 504, "the sandbox %s did not answer on %s in "
			    "time; see `podman logs` for it", n->container,
			    n->sock);
			return -1;
		}
		if (clock_mono() > next_look) {
			/* A container that exited will never answer. */
			next_look = clock_mono() + 1.0;
			if (podman_container_inspect(p, n->container, &ins, e) == -1)
				return -1;
			st = podman_ctr_state(ins);
			if (st != CTR_RUNNING) {
				char code[32];
				snprintf(code, sizeof(code), "%lld",
				    (long long)json_integer_value(json_object_get(
				    json_object_get(ins, "State"), "ExitCode")));
				json_decref(ins);
				perr_set(e, 500, "the sandbox %s stopped while "
				    "starting (exit code %s); see `podman logs` "
				    "for it", n->container, code);
				return -1;
			}
			json_decref(ins);
		}
		clock_sleep_ms(5);
	}
}

int
sandbox_ensure(const struct conf *c, struct podman *p, const char *user,
    int *created, struct perr *e)
{
	struct names	 n;
	json_t		*ins = NULL;
	enum ctr_state	 st;
	const char	*stale;
	char		 ip[INET_ADDRSTRLEN];
	int		 tries = 0, redo = 0, r;

	*created = 0;
	if (user_names(c, user, &n, e) == -1)
		return -1;
	if (podman_version(p, e) == -1)
		return -1;
again:
	if (podman_container_inspect(p, n.container, &ins, e) == -1)
		return -1;
	st = podman_ctr_state(ins);
	/* Running, but not as we would make it: stopped here, it is made
	 * again below on the same volume. */
	if (st == CTR_RUNNING && ins != NULL &&
	    (stale = running_stale(c, user, ins)) != NULL && redo++ < 3) {
		json_decref(ins);
		log_info("%s: %s; making it again on the same workspace volume",
		    n.container, stale);
		if (podman_container_stop(p, n.container, (int)c->stop_timeout,
		    e) == -1 && e->status != 404)
			return -1;
		goto again;
	}
	json_decref(ins);
	ins = NULL;
	switch (st) {
	case CTR_RUNNING:
		return wait_ready(c, p, &n, e);
	case CTR_TRANSIENT:
		if (++tries > 50) {
			perr_set(e, 503, "the sandbox %s is stuck %s; try again "
			    "later", n.container, "stopping or being removed");
			return -1;
		}
		clock_sleep_ms(100);
		goto again;
	case CTR_CREATED:
		/* Never started (a crash between create and start): redo. */
		log_info("%s: removing a container stuck in \"created\"",
		    n.container);
		if (podman_container_remove(p, n.container, e) == -1
		    && e->status != 404)
			return -1;
		/* FALLTHROUGH */
	case CTR_MISSING:
		if (sandbox_create(c, p, user, e) == -1)
			return -1;
		*created = 1;
		break;
	case CTR_PAUSED: {
		char path[256];
		snprintf(path, sizeof(path), PODMAN_API "/containers/%s/unpause",
		    n.container);
		if (podman_call(p, "POST", path, NULL, NULL, NULL, e) == -1)
			return -1;
		return wait_ready(c, p, &n, e);
	}
	case CTR_STOPPED:
	case CTR_OTHER:
		/* Its network may have gone (podman network rm -f). */
		if (network_up(c, p, user, &n, ip, sizeof(ip), e) == -1)
			return -1;
		/* Made with other settings, or removed with its network. */
		if ((r = ctr_current(c, p, user, &n, ip, e)) == -1)
			return -1;
		if (r == 0 && redo++ < 3)
			goto again;
		if (rundir_make(c, &n, e) == -1)
			return -1;
		break;
	}
	/* A socket left by the previous run would answer ECONNREFUSED. */
	(void)unlink(n.sock);
	if (podman_container_start(p, n.container, e) == -1) {
		if (e->status == 404 && tries++ < 3)
			goto again;	/* removed under us */
		return -1;
	}
	/*
	 * The proxy may have been recreated since the network was made, and
	 * a new proxy container is on no user network: connect it at every
	 * start ("already connected" is fine).
	 */
	if (proxy_ip(c, p, &n, ip, sizeof(ip), e) == -1
	    || egress_connect(c, p, &n, ip, e) == -1)
		log_warnx("%s: the egress proxy is not connected: %s",
		    n.container, e->msg);
	return wait_ready(c, p, &n, e);
}

int
sandbox_stop(const struct conf *c, struct podman *p, const char *user,
    struct perr *e)
{
	struct names	 n;

	if (user_names(c, user, &n, e) == -1)
		return -1;
	if (podman_container_stop(p, n.container, (int)c->stop_timeout, e) == -1
	    && e->status != 404)
		return -1;
	return 0;
}

int
sandbox_remove(const struct conf *c, struct podman *p, const char *user,
    int purge, struct perr *e)
{
	struct names	 n;

	if (user_names(c, user, &n, e) == -1)
		return -1;
	if (podman_container_remove(p, n.container, e) == -1 && e->status != 404)
		return -1;
	/* Not by force: that would take the egress proxy with it. */
	if (c->egress_container != NULL
	    && podman_network_disconnect(p, n.network, c->egress_container, e)
	    == -1 && e->status == 0)
		return -1;
	if (podman_network_remove(p, n.network, e) == -1 && e->status != 404)
		return -1;
	if (purge && podman_volume_remove(p, n.volume, e) == -1
	    && e->status != 404)
		return -1;
	(void)unlink(n.sock);
	(void)rmdir(n.rundir);
	return 0;
}
