/*
 * backend_podman.c: the Podman backend (backend.h).  The work is in
 * backend_podman_objects.c (a user's network, volume and container) and
 * podman.c (the libpod client); this maps the supervisor's operations onto them
 * and holds the start-up checks that only make sense for Podman.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "log.h"
#include "backend.h"
#include "podman.h"
#include "banned.h"

struct pstate {
	const struct conf	*conf;
	struct podman		*podman;	/* owned */
	/* The configured image's id, looked up once (configured_image). */
	char			 image_id[80];
	int			 image_looked;
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
		if (user == NULL || user_id_valid(user, strlen(user)) == -1)
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

/* ---------------------------------------------------------------- ctl */

/* The container, the network or the volume: anything of the user's. */
static int
pm_exists(struct backend *b, const char *user, struct berr *e)
{
	struct names	 n;
	json_t		*ins = NULL;
	int		 r;

	(void)sandbox_names(st(b)->conf, user, &n);
	if (podman_container_inspect(st(b)->podman, n.container, &ins, e) == -1)
		return -1;
	if (ins != NULL) {
		json_decref(ins);
		return 1;
	}
	if ((r = podman_network_exists(st(b)->podman, n.network, e)) != 0)
		return r;
	return podman_volume_exists(st(b)->podman, n.volume, e);
}

/*
 * The id of the image the config names now, looked up once (list asks
 * for every user); NULL when Podman does not have it.
 */
static const char *
configured_image(struct pstate *s)
{
	struct berr	 e;

	if (!s->image_looked && podman_image_id(s->podman, s->conf->image,
	    s->image_id, sizeof(s->image_id), &e) == -1)
		s->image_id[0] = '\0';
	s->image_looked = 1;
	return s->image_id[0] != '\0' ? s->image_id : NULL;
}

/*
 * What list and status say of a sandbox's image, into u: whether it is
 * the one the config names now ("current", or "old": the sandbox moves to
 * the new one at its next start) and its age (image_label words them).
 */
static void
image_note(struct pstate *s, json_t *u)
{
	struct berr	 e;
	const char	*id = json_string_value(json_object_get(u, "image_id"));
	long long	 built;
	int		 current;

	if (id == NULL || sandbox_image_info(s->conf, s->podman, id,
	    configured_image(s), &current, &built, &e) == -1)
		return;
	json_object_set_new(u, "image_current", json_boolean(current));
	if (built >= 0)
		json_object_set_new(u, "image_age_seconds",
		    json_integer((json_int_t)(time(NULL) - built)));
}

/* Podman's own objects: container, network, volume, limits, quota. */
static json_t *
pm_describe(struct backend *b, const char *user, struct buf *text,
    struct berr *e)
{
	struct pstate		*s = st(b);
	struct names		 n;
	json_t			*ins = NULL, *out, *note;
	const struct limits	*l;
	const char		*state, *ids;
	unsigned long long	 mem = 0;
	int			 net, vol, running, enforced, quota;
	long			 idle;
	char			 ms[32], ws[32], is[32], why[512], qwhy[512];
	char			 img[48], ds[32], name[NAME_MAX_BYTES + 8];
	long long		 disk;
	struct berr		 le;

	(void)sandbox_names(s->conf, user, &n);
	if (podman_container_inspect(s->podman, n.container, &ins, e) == -1)
		return NULL;
	if ((net = podman_network_exists(s->podman, n.network, e)) == -1
	    || (vol = podman_volume_exists(s->podman, n.volume, e)) == -1) {
		json_decref(ins);
		return NULL;
	}
	state = ins ? podman_ctr_state_name(podman_ctr_state(ins)) : "missing";
	running = ins != NULL && podman_ctr_state(ins) == CTR_RUNNING;
	if (running)
		(void)podman_container_memory(s->podman, n.container, &mem, &le);
	idle = backend_idle(s->conf, user);
	l = conf_limits(s->conf, user);
	enforced = podman_limits_enforced(s->podman, why, sizeof(why), &le);
	quota = sandbox_quota_usable(s->conf, s->podman, qwhy, sizeof(qwhy));
	ids = ins == NULL ? NULL : json_string_value(json_object_get(
	    json_object_get(json_object_get(ins, "Config"), "Labels"),
	    SANDBOX_IDS_LABEL));
	note = json_object();
	if (ins != NULL)
		json_object_set(note, "image_id", json_object_get(ins, "Image"));
	image_note(s, note);
	image_label(note, img, sizeof(img));
	disk = sandbox_disk_used(s->conf, user);
	if (names_get(s->conf, user, name, sizeof(name)) == 0)
		json_object_set_new(note, "name", json_string(name));
	out = json_pack("{s:s, s:s, s:s, s:s?, s:b, s:b, s:s, s:s?,"
	    " s:{s:I, s:f, s:I, s:I}}",
	    "user", user, "state", state, "container", n.container,
	    "image", ins ? json_string_value(json_object_get(ins, "ImageName"))
	    : NULL, "network", net, "volume", vol, "socket", n.sock,
	    "host_ids", ids,
	    "limits", "memory_bytes", (json_int_t)l->memory,
	    "cpus", (double)l->cpus_milli / 1000.0, "pids", (json_int_t)l->pids,
	    "workspace_bytes", (json_int_t)l->workspace);
	if (running) {
		struct agent_addr a;

		agent_addr_unix(&a, n.sock);
		json_object_set_new(out, "memory_bytes",
		    json_integer((json_int_t)mem));
		json_object_set_new(out, "agent_answers",
		    json_boolean(agent_probe(&a, 2000) == 0));
	}
	if (idle >= 0)
		json_object_set_new(out, "idle_seconds", json_integer(idle));
	json_object_del(note, "image_id");
	json_object_update(out, note);
	json_decref(note);
	if (disk >= 0)
		json_object_set_new(out, "disk_used_bytes",
		    json_integer((json_int_t)disk));
	if (enforced == 0) {
		json_object_set_new(out, "limits_enforced", json_false());
		json_object_set_new(out, "limits_warning", json_string(why));
	} else if (enforced == 1)
		json_object_set_new(out, "limits_enforced", json_true());
	if (quota != -1)
		json_object_set_new(out, "quota_enforced", json_boolean(quota));
	if (quota == 0 && qwhy[0] != '\0')
		json_object_set_new(out, "quota_warning", json_string(qwhy));
	json_decref(ins);
	if (text == NULL)
		return out;
	short_time(idle, is, sizeof(is));
	short_size(l->workspace, ws, sizeof(ws));
	if (json_object_get(out, "name") != NULL)
		(void)buf_appendf(text, "name:      %s\n", json_string_value(
		    json_object_get(out, "name")));
	(void)buf_appendf(text, "user:      %s\ncontainer: %s (%s)\n"
	    "network:   %s%s\nvolume:    %s%s\nsocket:    %s\nlimits:    %s "
	    "memory, %.2f CPUs, %ld pids, %s workspace\n", user, n.container,
	    state, n.network, net ? "" : " (missing)", n.volume,
	    vol ? "" : " (missing)", n.sock,
	    (short_size(l->memory, ms, sizeof(ms)), ms),
	    (double)l->cpus_milli / 1000.0, l->pids, ws);
	if (ids != NULL)
		(void)buf_appendf(text, "host ids:  %s\n", strcmp(ids,
		    "shared") == 0 ? "shared with every sandbox (no user "
		    "namespace)" : ids);
	if (running) {
		short_size(mem, ms, sizeof(ms));
		(void)buf_appendf(text, "memory:    %s in use\nagent:     %s\n",
		    ms, json_is_true(json_object_get(out, "agent_answers"))
		    ? "answering" : "not answering");
	}
	(void)buf_appendf(text, "idle:      %s\n", is);
	if (strcmp(img, "-") != 0)
		(void)buf_appendf(text, "image:     %s, %s\n", img,
		    strncmp(img, "OLD", 3) == 0 ? "older than the configured "
		    "one: made again from it at the next start"
		    : "the configured one");
	if (disk >= 0)
		(void)buf_appendf(text, "disk:      %s used of %s\n",
		    (short_size((unsigned long long)disk, ds, sizeof(ds)), ds),
		    ws);
	if (enforced == 0)
		(void)buf_appendf(text, "WARNING:   limits are NOT enforced: "
		    "%s\n", why);
	if (quota == 0 && qwhy[0] != '\0')
		(void)buf_appendf(text, "WARNING:   the workspace quota is NOT "
		    "enforced: %s\n", qwhy);
	return out;
}

/*
 * Users from every labelled object: containers, networks, volumes (a user
 * removed without --purge has only the volume left), in Podman's words
 * for the state ("exited").
 */
static json_t *
pm_users(struct backend *b, struct berr *e)
{
	struct pstate	*s = st(b);
	struct backend_info info;
	json_t		*users, *list = NULL, *o, *u;
	const char	*id, *st;
	size_t		 i;
	long long	 disk;
	long		 idle;
	int		 k;
	int		(*lists[])(struct podman *, json_t **, struct berr *) = {
	    podman_container_list, podman_network_list, podman_volume_list };

	users = json_object();
	for (k = 0; k < 3; k++) {
		if (lists[k](s->podman, &list, e) == -1) {
			json_decref(users);
			return NULL;
		}
		json_array_foreach(list, i, o) {
			if ((id = sandbox_label_user(o)) == NULL
			    || user_id_valid(id, strlen(id)) == -1)
				continue;
			if (json_object_get(users, id) == NULL)
				json_object_set_new(users, id, json_pack(
				    "{s:s, s:s}", "user", id, "state", "missing"));
			if (k == 0) {
				st = json_string_value(json_object_get(o,
				    "State"));
				json_object_set_new(json_object_get(users, id),
				    "state", json_string(st ? st : "unknown"));
				if (json_is_string(json_object_get(o, "ImageID")))
					json_object_set(json_object_get(users,
					    id), "image_id", json_object_get(o,
					    "ImageID"));
			}
		}
		json_decref(list);
		list = NULL;
	}
	json_object_foreach(users, id, u) {
		st = json_string_value(json_object_get(u, "state"));
		if (strcmp(st, "running") == 0
		    && pm_inspect(b, id, &info, e) == 0 && info.memory_known)
			json_object_set_new(u, "memory_bytes",
			    json_integer((json_int_t)info.memory_bytes));
		if ((idle = backend_idle(s->conf, id)) >= 0)
			json_object_set_new(u, "idle_seconds",
			    json_integer(idle));
		if ((disk = sandbox_disk_used(s->conf, id)) >= 0)
			json_object_set_new(u, "disk_used_bytes",
			    json_integer((json_int_t)disk));
		image_note(s, u);
	}
	return users;
}

/*
 * The lines of b that hold match (all when NULL), each after prefix, with
 * anything a terminal would act on shown as '?'.
 */
static void
print_lines(const struct buf *b, const char *prefix, const char *match)
{
	const char	*p = b->data, *end = b->data + b->len, *nl;
	size_t		 i, n;

	while (p != NULL && p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (n > 0 && (match == NULL || memmem(p, n, match,
		    strlen(match)) != NULL)) {
			fputs(prefix, stdout);
			for (i = 0; i < n; i++)
				putchar((unsigned char)p[i] < 0x20 && p[i] != '\t'
				    ? '?' : p[i] == 0x7f ? '?' : p[i]);
			putchar('\n');
		}
		p = nl != NULL ? nl + 1 : NULL;
	}
}

/* What the user's sandbox logged (its agent's run lines) and the egress
 * proxy's lines for the sandbox's address. */
/*
 * The sandbox's log (its last 500 lines) and the egress proxy's lines for
 * its address, onto standard output; a log that cannot be read is said on
 * standard error.  0; 1 when the sandbox's log could not be read; -1 with
 * e (404: no container).
 */
static int
pm_logs(struct backend *b, const char *user, struct berr *e)
{
	struct pstate	*s = st(b);
	struct names	 n;
	struct buf	 out = BUF_INIT(16u << 20);
	json_t		*ins;
	const char	*ip;
	char		 match[80];
	int		 r;

	(void)sandbox_names(s->conf, user, &n);
	if (podman_container_inspect(s->podman, n.container, &ins, e) == -1)
		return -1;
	if (ins == NULL) {
		berr_set(e, 404, "no sandbox (container %s)", n.container);
		return -1;
	}
	ip = json_string_value(json_object_get(json_object_get(json_object_get(
	    json_object_get(ins, "NetworkSettings"), "Networks"), n.network),
	    "IPAddress"));
	snprintf(match, sizeof(match), "client=%s:", ip != NULL ? ip : "");
	r = podman_container_logs(s->podman, n.container, 500, &out, e);
	if (r == 0)
		print_lines(&out, "sandbox  ", NULL);
	else
		fprintf(stderr, "vivariumctl: %s: %s\n", n.container, e->msg);
	out.len = 0;
	if (s->conf->egress_container == NULL)
		printf("egress   (no egress proxy configured)\n");
	else if (ip == NULL || *ip == '\0')
		printf("egress   (the sandbox is not running: its address, "
		    "and so its lines in the proxy's log, are not known)\n");
	else if (podman_container_logs(s->podman, s->conf->egress_container,
	    20000, &out, e) == 0)
		print_lines(&out, "egress   ", match);
	else
		fprintf(stderr, "vivariumctl: %s: %s\n",
		    s->conf->egress_container, e->msg);
	json_decref(ins);
	buf_release(&out);
	return r == 0 ? 0 : 1;
}

static int
pm_doctor(struct backend *b, const char *fetch, int json, struct berr *e)
{
	return doctor_run(st(b)->conf, st(b)->podman, fetch, json) == 0 ? 0
	    : 1;
}

/*
 * "/." : the entries are relative, running container or not.  Podman's
 * archive endpoint reads the volume through the container, so one that
 * is gone (removed without --purge) is said apart from no volume at all.
 */
static int
pm_export(struct backend *b, const char *user, int out, struct berr *e)
{
	struct names	 n;
	int		 r;

	(void)sandbox_names(st(b)->conf, user, &n);
	if ((r = podman_volume_exists(st(b)->podman, n.volume, e)) != 1) {
		if (r == 0)
			berr_set(e, 404, "no workspace volume %s", n.volume);
		return -1;
	}
	if (podman_archive_get(st(b)->podman, n.container, "/workspace/.",
	    out, e) == 0)
		return 0;
	if (e->status == 404)
		berr_set(e, 410, "container %s is gone but its workspace is "
		    "kept; `vivariumctl add-user %s` makes it again, then "
		    "export", n.container, user);
	return -1;
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

static const struct backend podman_ops = {
	.name = "podman",
	.objects = "network, volume and container",
	.storage = "workspace volume",
	.check = pm_check,
	.ensure = pm_ensure,
	.stop = pm_stop,
	.remove = pm_remove,
	.registered = pm_registered,
	.inspect = pm_inspect,
	.list = pm_list,
	.export_ws = pm_export,
	.import_ws = pm_import,
	.exists = pm_exists,
	.describe = pm_describe,
	.users = pm_users,
	.logs = pm_logs,
	.doctor = pm_doctor,
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
