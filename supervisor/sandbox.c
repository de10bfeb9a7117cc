/*
 * sandbox.c: one user's Podman objects (network, volume, container, runtime
 * directory), shared by the supervisor and vivariumctl.  Nothing here keeps
 * state: Podman is asked every time, so both programs see the same truth.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "supervisor.h"
#include "banned.h"

#define AGENT_SOCK_IN	"/run/vivarium/agent.sock"

int
sandbox_names(const struct conf *c, const char *user, struct names *n)
{
	if (route_user_valid(user, strlen(user)) == -1)
		return -1;
	snprintf(n->container, sizeof(n->container), "vivarium-%s", user);
	snprintf(n->network, sizeof(n->network), "vivarium-%s", user);
	snprintf(n->volume, sizeof(n->volume), "vivarium-%s-workspace", user);
	snprintf(n->rundir, sizeof(n->rundir), "%s/%s", c->state_dir, user);
	snprintf(n->sock, sizeof(n->sock), "%s/agent.sock", n->rundir);
	return 0;
}

static json_t *
labels(const char *user)
{
	return json_pack("{s:s, s:s}", "io.vivarium.managed", "true",
	    "io.vivarium.user", user);
}

const char *
sandbox_label_user(const json_t *obj)
{
	const json_t	*l = json_object_get(obj, "Labels");

	if (l == NULL)
		l = json_object_get(obj, "labels");
	return json_string_value(json_object_get(l, "io.vivarium.user"));
}

/*
 * The bridge's name on the host, derived from the user id.  Podman would
 * pick "podmanN", the first N free in its own records, and a second Podman
 * storage on the same host (tests, another operator) picking the same name
 * would put two networks on one bridge.  15 characters at most (IFNAMSIZ).
 */
static void
bridge_name(const char *user, char *dst, size_t len)
{
	uint64_t	 h = 0xcbf29ce484222325ULL;	/* FNV-1a */
	const char	*p;

	for (p = user; *p != '\0'; p++) {
		h ^= (unsigned char)*p;
		h *= 0x100000001b3ULL;
	}
	snprintf(dst, len, "viv%012llx", (unsigned long long)(h >> 16));
}

json_t *
sandbox_network_spec(const struct conf *c, struct podman *p, const char *user)
{
	struct names	 n;
	char		 br[16];

	(void)sandbox_names(c, user, &n);
	bridge_name(user, br, sizeof(br));
	/* The JSON API defaults dns_enabled to false, unlike the CLI. */
	return json_pack("{s:s, s:s, s:s, s:b, s:b, s:{s:s}, s:o}",
	    "name", n.network, "driver", "bridge", "network_interface", br,
	    "internal", 1, "dns_enabled", 1,
	    "options", "isolate", podman_isolate_value(p),
	    "labels", labels(user));
}

json_t *
sandbox_volume_spec(const char *user)
{
	char	 name[USER_ID_MAX + 32];

	snprintf(name, sizeof(name), "vivarium-%s-workspace", user);
	return json_pack("{s:s, s:o}", "Name", name, "Labels", labels(user));
}

json_t *
sandbox_container_spec(const struct conf *c, const char *user)
{
	const struct limits	*l = conf_limits(c, user);
	struct names		 n;
	json_t			*spec, *env;
	char			 tmpsz[64];
	size_t			 i;

	(void)sandbox_names(c, user, &n);
	env = json_pack("{s:s}", "VIVARIUM_SOCKET", AGENT_SOCK_IN);
	for (i = 0; i < c->nenv; i++)
		json_object_set_new(env, c->env[i].key,
		    json_string(c->env[i].value));
	if (c->egress_url != NULL) {
		json_object_set_new(env, "http_proxy", json_string(c->egress_url));
		json_object_set_new(env, "https_proxy", json_string(c->egress_url));
		json_object_set_new(env, "HTTP_PROXY", json_string(c->egress_url));
		json_object_set_new(env, "HTTPS_PROXY", json_string(c->egress_url));
		json_object_set_new(env, "no_proxy", json_string("localhost,127.0.0.1"));
	}
	snprintf(tmpsz, sizeof(tmpsz), "size=%llu", c->tmp_size);
	spec = json_pack(
	    "{s:s, s:s, s:o, s:o, s:s, s:s, s:b, s:b, s:[s], s:b,"
	    " s:{s:{s:I}, s:{s:I, s:I}, s:{s:I}},"
	    " s:[{s:s, s:I, s:I}, {s:s, s:I, s:I}],"
	    " s:{s:s}, s:{s:{s:[s]}},"
	    " s:[{s:s, s:s, s:s, s:[s, s, s, s]}, {s:s, s:s, s:s, s:[s]}],"
	    " s:[{s:s, s:s}], s:I}",
	    "name", n.container,
	    "image", c->image,
	    "labels", labels(user),
	    "env", env,
	    "user", c->sandbox_user,
	    "work_dir", "/workspace",
	    "read_only_filesystem", 1,
	    "no_new_privileges", 1,
	    "cap_drop", "ALL",
	    "init", 1,
	    "resource_limits",
		"memory", "limit", (json_int_t)l->memory,
		"cpu", "quota", (json_int_t)l->cpus_milli * 100,
		    "period", (json_int_t)100000,
		"pids", "limit", (json_int_t)l->pids,
	    /* Podman's default rlimits exceed many hosts' hard limits. */
	    "r_limits",
		"type", "nofile", "soft", (json_int_t)4096, "hard", (json_int_t)4096,
		"type", "nproc", "soft", (json_int_t)1024, "hard", (json_int_t)1024,
	    "netns", "nsmode", "bridge",
	    "Networks", n.network, "aliases", "sandbox",
	    "mounts",
		"destination", "/tmp", "type", "tmpfs", "source", "tmpfs",
		"options", "rw", "nosuid", "nodev", tmpsz,
		"destination", "/run/vivarium", "type", "bind",
		"source", n.rundir, "options", "rw",
	    "volumes", "Name", n.volume, "Dest", "/workspace",
	    "stop_timeout", (json_int_t)c->stop_timeout);
	return spec;
}

/* ---------------------------------------------------------------- helpers */

static void perr_set(struct perr *, long, const char *, ...)
    __attribute__((format(printf, 3, 4)));

static void
perr_set(struct perr *e, long status, const char *fmt, ...)
{
	va_list	 ap;

	memset(e, 0, sizeof(*e));
	e->status = status;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

static void
msleep(long ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static double
now_s(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The directory bind-mounted at /run/vivarium, owned by the sandbox user. */
static int
rundir_make(const struct conf *c, const struct names *n, struct perr *e)
{
	unsigned int	 uid, gid;
	char		 extra;

	if (mkdir(c->state_dir, 0755) == -1 && errno != EEXIST) {
		perr_set(e, 500, "cannot create the state directory %s: %s",
		    c->state_dir, strerror(errno));
		return -1;
	}
	if (mkdir(n->rundir, 0700) == -1 && errno != EEXIST) {
		perr_set(e, 500, "cannot create %s: %s", n->rundir,
		    strerror(errno));
		return -1;
	}
	if (sscanf(c->sandbox_user, "%u:%u%c", &uid, &gid, &extra) == 2) {
		if (geteuid() == 0 && chown(n->rundir, uid, gid) == -1) {
			perr_set(e, 500, "cannot hand %s to the sandbox user: %s",
			    n->rundir, strerror(errno));
			return -1;
		}
	} else if (chmod(n->rundir, 0777) == -1) {
		perr_set(e, 500, "cannot open up %s: %s", n->rundir,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static int
network_ensure(const struct conf *c, struct podman *p, const char *user,
    const struct names *n, int *made, struct perr *e)
{
	json_t	*spec;
	int	 r;

	*made = 0;
	if ((r = podman_network_exists(p, n->network, e)) == -1)
		return -1;
	if (r == 1)
		return 0;
	spec = sandbox_network_spec(c, p, user);
	r = podman_network_create(p, spec, e);
	json_decref(spec);
	if (r == -1 && !perr_exists(e))
		return -1;
	*made = r == 0;
	return 0;
}

static int
volume_ensure(struct podman *p, const char *user, const struct names *n,
    struct perr *e)
{
	json_t	*spec;
	int	 r;

	if ((r = podman_volume_exists(p, n->volume, e)) == -1)
		return -1;
	if (r == 1)
		return 0;
	spec = sandbox_volume_spec(user);
	r = podman_volume_create(p, spec, e);
	json_decref(spec);
	if (r == -1 && !perr_exists(e))
		return -1;
	return 0;
}

static int
egress_connect(const struct conf *c, struct podman *p, const struct names *n,
    struct perr *e)
{
	if (c->egress_container == NULL)
		return 0;
	if (podman_network_connect(p, n->network, c->egress_container,
	    c->egress_alias, e) == 0)
		return 0;
	if (perr_exists(e) || strstr(e->msg, "already connected") != NULL)
		return 0;
	if (e->status == 404)
		snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg),
		    " (is the egress proxy container \"%s\" running?)",
		    c->egress_container);
	return -1;
}

int
sandbox_create(const struct conf *c, struct podman *p, const char *user,
    struct perr *e)
{
	struct names	 n;
	json_t		*spec;
	int		 made, r;

	if (sandbox_names(c, user, &n) == -1) {
		perr_set(e, 400, "\"%s\": %s", user, route_user_rule);
		return -1;
	}
	if (podman_version(p, e) == -1)
		return -1;
	if (network_ensure(c, p, user, &n, &made, e) == -1)
		return -1;
	if (made && egress_connect(c, p, &n, e) == -1)
		return -1;
	if (volume_ensure(p, user, &n, e) == -1)
		return -1;
	if (rundir_make(c, &n, e) == -1)
		return -1;
	spec = sandbox_container_spec(c, user);
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
	double	 deadline = now_s() + (double)c->ready_timeout;
	double	 next_look = now_s() + 1.0;
	json_t	*ins;
	enum ctr_state st;

	for (;;) {
		if (agent_probe(n->sock, 2000) == 0)
			return 0;
		if (now_s() > deadline) {
			perr_set(e, 504, "the sandbox %s did not answer on %s in "
			    "time; see `podman logs` for it", n->container,
			    n->sock);
			return -1;
		}
		if (now_s() > next_look) {
			/* A container that exited will never answer. */
			next_look = now_s() + 1.0;
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
		msleep(5);
	}
}

int
sandbox_ensure(const struct conf *c, struct podman *p, const char *user,
    int allow_create, int *created, struct perr *e)
{
	struct names	 n;
	json_t		*ins = NULL;
	enum ctr_state	 st;
	int		 tries = 0, made;

	*created = 0;
	if (sandbox_names(c, user, &n) == -1) {
		perr_set(e, 400, "\"%s\": %s", user, route_user_rule);
		return -1;
	}
	if (podman_version(p, e) == -1)
		return -1;
again:
	if (podman_container_inspect(p, n.container, &ins, e) == -1)
		return -1;
	st = podman_ctr_state(ins);
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
		msleep(100);
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
		if (!allow_create) {
			perr_set(e, 403, "no sandbox exists for user \"%s\" and "
			    "this supervisor does not create them: ask the "
			    "operator to run `vivariumctl add-user %s`", user,
			    user);
			return -1;
		}
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
		if (network_ensure(c, p, user, &n, &made, e) == -1)
			return -1;
		if (made && egress_connect(c, p, &n, e) == -1)
			return -1;
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
	if (egress_connect(c, p, &n, e) == -1)
		log_warnx("%s: the egress proxy is not connected: %s",
		    n.container, e->msg);
	return wait_ready(c, p, &n, e);
}

int
sandbox_stop(const struct conf *c, struct podman *p, const char *user,
    struct perr *e)
{
	struct names	 n;

	if (sandbox_names(c, user, &n) == -1) {
		perr_set(e, 400, "\"%s\": %s", user, route_user_rule);
		return -1;
	}
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

	if (sandbox_names(c, user, &n) == -1) {
		perr_set(e, 400, "\"%s\": %s", user, route_user_rule);
		return -1;
	}
	if (podman_container_remove(p, n.container, e) == -1 && e->status != 404)
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
