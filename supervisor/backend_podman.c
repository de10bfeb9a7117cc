/*
 * backend_podman.c: the Podman backend (backend.h).  The work is in
 * sandbox.c (a user's network, volume and container) and podman.c (the
 * libpod client); this maps the supervisor's operations onto them and
 * holds the start-up checks that only make sense for Podman.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "backend.h"
#include "podman.h"
#include "banned.h"

struct pstate {
	const struct conf	*conf;
	struct podman		*podman;	/* owned */
};

static struct pstate *
st(struct backend *b)
{
	return b->state;
}

static enum backend_state
fold(enum ctr_state s)
{
	switch (s) {
	case CTR_MISSING:
		return BK_MISSING;
	case CTR_CREATED:
		return BK_CREATED;
	case CTR_RUNNING:
		return BK_RUNNING;
	case CTR_STOPPED:
		return BK_STOPPED;
	default:
		return BK_OTHER;
	}
}

/*
 * The way out: kept here when managed, else only looked at.  What would
 * leave sandboxes without internet, and nobody told, is said loudly.
 */
static void
egress_check(const struct conf *c, struct podman *p, backend_say say)
{
	struct berr	 e;
	json_t		*ins;
	int		 replaced;
	enum ctr_state	 st;

	if (c->egress_container == NULL) {
		backend_sayf(say, 1, "WARNING: no egress proxy is configured "
		    "(egress:), so sandboxes have no internet access; "
		    "egress: {manage: yes} makes one (docs/egress.md)");
		return;
	}
	/* Before the proxy starts, which reads it. */
	if (egress_labels_note(c, NULL, NULL, &e) == -1)
		backend_sayf(say, 1, "WARNING: the egress proxy's log lines will "
		    "name no user: %s", e.msg);
	if (c->egress_manage) {
		if (egress_keep(c, p, &replaced, &e) == -1) {
			backend_sayf(say, 1, "WARNING: the egress proxy is NOT "
			    "running, so sandboxes have no internet access: %s "
			    "(tried again every %ld s)", e.msg,
			    reaper_tick(c));
			return;
		}
		backend_sayf(say, 0, "egress proxy %s runs from %s, refusing "
		    "this host's addresses (%s/egress/host-addresses)",
		    c->egress_container, c->egress_image != NULL ?
		    c->egress_image : c->image, c->state_dir);
		if (sandbox_egress_reconnect(c, p, &e) == -1)
			backend_sayf(say, 1, "WARNING: %s", e.msg);
		return;
	}
	if (podman_container_inspect(p, c->egress_container, &ins, &e) == -1)
		return;
	st = podman_ctr_state(ins);
	json_decref(ins);
	if (st != CTR_RUNNING)
		backend_sayf(say, 1, "WARNING: the egress proxy container %s is "
		    "%s, so sandboxes have no internet access until it runs",
		    c->egress_container, podman_ctr_state_name(st));
}

static void
pm_tick(struct backend *b)
{
	const struct conf	*c = st(b)->conf;
	struct berr		 e;
	int			 replaced;

	/* A user's name may have come or changed since. */
	if (c->egress_container != NULL
	    && egress_labels_note(c, NULL, NULL, &e) == -1)
		log_warnx("%s", e.msg);
	if (!c->egress_manage)
		return;
	if (egress_keep(c, st(b)->podman, &replaced, &e) == -1) {
		log_warnx("the egress proxy is NOT running: %s", e.msg);
		return;
	}
	if (replaced && sandbox_egress_reconnect(c, st(b)->podman, &e) == -1)
		log_warnx("%s", e.msg);
}

/*
 * What an escape from a rootless sandbox lands as, said plainly: one of
 * this user's subordinate ids, shared by every sandbox (one range for
 * all), or with no range to use the supervisor itself.
 */
static void
rootless_say(const struct conf *c, struct podman *p, backend_say say)
{
	unsigned long	 uid, gid, size;
	unsigned int	 u, g;

	if (sandbox_rootless_ids(c, p, &uid, &gid, &size) == 0
	    && sscanf(c->sandbox_user, "%u:%u", &u, &g) == 2) {
		backend_sayf(say, 1, "WARNING: every sandbox runs as the same "
		    "host uid %lu (sandbox user %s, one of this user's "
		    "subordinate ids, not the supervisor's): rootless Podman "
		    "has one id range for all of them, so an escape from one "
		    "sandbox can reach the others' processes and run "
		    "directories", uid + u, c->sandbox_user);
		return;
	}
	backend_sayf(say, 1, "WARNING: every sandbox runs as the supervisor's "
	    "own host uid %u (keep-id): %s, so an escape from a sandbox lands "
	    "as the supervisor, with its token, link keys, every user's socket "
	    "and the Podman socket.  Give this user a subordinate range "
	    "(/etc/subuid, /etc/subgid) of at least %s ids", (unsigned)geteuid(),
	    p->sub_size == 0 ? "this user has no subordinate ids" :
	    "sandbox.user is a name or outside this user's subordinate range",
	    "65536");
}

static int
pm_check(struct backend *b, backend_say say, struct berr *e)
{
	const struct conf	*c = st(b)->conf;
	struct podman		*p = st(b)->podman;
	char			 why[512], ociname[256];

	if (podman_version(p, e) == -1)
		return -1;
	backend_sayf(say, 0, "Podman %s at %s", p->version, c->podman_socket);
	if (podman_limits_enforced(p, why, sizeof(why), e) == 0)
		backend_sayf(say, 1, "WARNING: sandbox limits are NOT enforced: %s", why);
	if (sandbox_quota_usable(c, p, why, sizeof(why)) == 0 && why[0] != '\0')
		backend_sayf(say, 1, "WARNING: workspace quotas are NOT enforced: %s",
		    why);
	if (podman_rootless(p, e) == 1)
		rootless_say(c, p, say);
	else if (c->uid_base == 0)
		backend_sayf(say, 1, "WARNING: every sandbox runs as the same host uid "
		    "(%s): uid_base is 0", c->sandbox_user);
	egress_check(c, p, say);
	if (!c->runsc)
		return 0;
	/*
	 * runsc 20221219 cannot start in a user namespace of Podman's ("error
	 * setting up chroot: error converting mounts: operation not
	 * permitted"); it puts its Sentry in one of its own (nobody) instead.
	 */
	if (c->uid_base != 0) {
		berr_set(e, 400, "sandbox.runtime: runsc needs uid_base: 0 "
		    "(gVisor cannot start in a Podman user namespace; "
		    "docs/supervisor.md, gVisor)");
		return -2;
	}
	/* Asked for gVisor, never silently without it. */
	if (podman_runtime_runsc(p, ociname, sizeof(ociname), e) == 0) {
		berr_set(e, 400, "sandbox.runtime is runsc but the Podman service "
		    "at %s runs %s: start it with --runtime deploy/vivarium-runsc "
		    "(docs/supervisor.md, gVisor)", c->podman_socket, ociname);
		return -2;
	}
	backend_sayf(say, 0, "sandboxes run under gVisor (%s)", ociname);
	return 0;
}

/*
 * The sandbox's address on its network, noted for the egress proxy's log
 * lines (egress.c, user labels) at each start: it may have changed.  Only
 * for the log, so a failure is said and nothing more.
 */
static void
label_note(const struct conf *c, struct podman *p, const char *user,
    const struct names *n)
{
	struct berr	 e;
	json_t		*ins, *net;
	const char	*ip;

	if (c->egress_container == NULL)
		return;
	if (podman_container_inspect(p, n->container, &ins, &e) == -1) {
		log_warnx("%s: %s", n->container, e.msg);
		return;
	}
	net = json_object_get(json_object_get(json_object_get(ins,
	    "NetworkSettings"), "Networks"), n->network);
	ip = json_string_value(json_object_get(net, "IPAddress"));
	if (ip == NULL || *ip == '\0')
		ip = json_string_value(json_object_get(net,
		    "GlobalIPv6Address"));
	if (ip != NULL && *ip != '\0'
	    && egress_labels_note(c, user, ip, &e) == -1)
		log_warnx("%s", e.msg);
	json_decref(ins);
}

static int
pm_ensure(struct backend *b, const char *user, int *created,
    struct agent_addr *addr, struct berr *e)
{
	struct names	 n;

	if (sandbox_ensure(st(b)->conf, st(b)->podman, user, created, e) == -1)
		return -1;
	(void)sandbox_names(st(b)->conf, user, &n);
	agent_addr_unix(addr, n.sock);
	label_note(st(b)->conf, st(b)->podman, user, &n);
	return 0;
}

static int
pm_stop(struct backend *b, const char *user, struct berr *e)
{
	return sandbox_stop(st(b)->conf, st(b)->podman, user, e);
}

static int
pm_remove(struct backend *b, const char *user, int purge, struct berr *e)
{
	struct berr	 le;

	if (sandbox_remove(st(b)->conf, st(b)->podman, user, purge, e) == -1)
		return -1;
	if (st(b)->conf->egress_container != NULL
	    && egress_labels_note(st(b)->conf, user, NULL, &le) == -1)
		log_warnx("%s", le.msg);
	return 0;
}

/* vivariumctl add-user makes the network: that registers a user. */
static int
pm_registered(struct backend *b, const char *user, struct berr *e)
{
	struct names	 n;

	(void)sandbox_names(st(b)->conf, user, &n);
	return podman_network_exists(st(b)->podman, n.network, e);
}

static int
pm_inspect(struct backend *b, const char *user, struct backend_info *out,
    struct berr *e)
{
	struct names	 n;
	json_t		*ins = NULL;

	memset(out, 0, sizeof(*out));
	(void)sandbox_names(st(b)->conf, user, &n);
	if (podman_container_inspect(st(b)->podman, n.container, &ins, e) == -1)
		return -1;
	out->state = fold(podman_ctr_state(ins));
	json_decref(ins);
	if (out->state == BK_RUNNING && podman_container_memory(st(b)->podman,
	    n.container, &out->memory_bytes, e) == 0)
		out->memory_known = 1;
	return 0;
}

static int
pm_list(struct backend *b, struct backend_sandbox **out, size_t *nout,
    struct berr *e)
{
	json_t		*list = NULL, *c;
	struct backend_sandbox *v;
	struct names	 n;
	const char	*user, *state;
	size_t		 i, k = 0;

	*out = NULL;
	*nout = 0;
	if (podman_container_list(st(b)->podman, &list, e) == -1)
		return -1;
	if ((v = calloc(json_array_size(list) + 1, sizeof(*v))) == NULL) {
		json_decref(list);
		berr_set(e, 500, "out of memory");
		return -1;
	}
	json_array_foreach(list, i, c) {
		user = sandbox_label_user(c);
		state = json_string_value(json_object_get(c, "State"));
		if (user == NULL || route_user_valid(user, strlen(user)) == -1)
			continue;
		if (state != NULL && strcmp(state, "created") == 0) {
			/* Never started: a crash between create and start. */
			(void)sandbox_names(st(b)->conf, user, &n);
			log_info("%s: removing a container stuck in \"created\"",
			    n.container);
			if (podman_container_remove(st(b)->podman, n.container,
			    e) == -1)
				log_warnx("%s", e->msg);
			continue;
		}
		snprintf(v[k].user, sizeof(v[k].user), "%s", user);
		v[k].state = state != NULL && strcmp(state, "running") == 0
		    ? BK_RUNNING : BK_STOPPED;
		k++;
	}
	json_decref(list);
	*out = v;
	*nout = k;
	return 0;
}

/* "/." : the entries are relative, running container or not. */
static int
pm_export(struct backend *b, const char *user, int out, struct berr *e)
{
	struct names	 n;

	(void)sandbox_names(st(b)->conf, user, &n);
	return podman_archive_get(st(b)->podman, n.container, "/workspace/.",
	    out, e);
}

static int
pm_import(struct backend *b, const char *user, backend_source source,
    void *arg, struct berr *e)
{
	struct names	 n;

	(void)sandbox_names(st(b)->conf, user, &n);
	return podman_archive_put(st(b)->podman, n.container, "/workspace",
	    source, arg, e);
}

static void
pm_label(struct backend *b, const char *user, char *dst, size_t len)
{
	struct names	 n;

	(void)sandbox_names(st(b)->conf, user, &n);
	snprintf(dst, len, "%s", n.container);
}

/* vivariumctl reads the idle time from the run directory's mtime. */
static void
pm_used(struct backend *b, const char *user)
{
	struct names	 n;

	(void)sandbox_names(st(b)->conf, user, &n);
	(void)utimensat(AT_FDCWD, n.rundir, NULL, 0);
}

static void
pm_free(struct backend *b)
{
	if (b == NULL)
		return;
	podman_free(st(b)->podman);
	free(b->state);
	free(b);
}

/* No describe: vivariumctl status shows Podman's own objects (ctl.c). */
static const struct backend podman_ops = {
	.name = "podman",
	.check = pm_check,
	.ensure = pm_ensure,
	.stop = pm_stop,
	.remove = pm_remove,
	.registered = pm_registered,
	.inspect = pm_inspect,
	.list = pm_list,
	.export_ws = pm_export,
	.import_ws = pm_import,
	.label = pm_label,
	.tick = pm_tick,
	.used = pm_used,
	.free = pm_free,
};

struct backend *
podman_backend(const struct conf *c, void (*on_error)(const struct berr *))
{
	struct backend	*b;
	struct pstate	*s;

	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL
	    || (s->podman = podman_new(c->podman_socket, c->podman_timeout_ms))
	    == NULL) {
		free(s);
		free(b);
		return NULL;
	}
	s->conf = c;
	s->podman->on_error = on_error;
	*b = podman_ops;
	b->state = s;
	return b;
}
