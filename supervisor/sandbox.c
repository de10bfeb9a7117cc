/*
 * sandbox.c: one user's Podman objects (network, volume, container, runtime
 * directory), shared by the supervisor and vivariumctl.  Nothing here keeps
 * state: Podman is asked every time, so both programs see the same truth.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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

#define AGENT_SOCK_IN	"/run/vivarium/agent.sock"
#define USERS_DIR	"users"		/* <state_dir>/users/<user>: run dirs */

int
sandbox_names(const struct conf *c, const char *user, struct names *n)
{
	if (route_user_valid(user, strlen(user)) == -1)
		return -1;
	snprintf(n->container, sizeof(n->container), "vivarium-%s", user);
	snprintf(n->network, sizeof(n->network), "vivarium-%s", user);
	snprintf(n->volume, sizeof(n->volume), "vivarium-%s-workspace", user);
	/* A namespace of their own: a user named "token" is not the file. */
	snprintf(n->rundir, sizeof(n->rundir), "%s/" USERS_DIR "/%s",
	    c->state_dir, user);
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
	/*
	 * No DNS: on an internal network aardvark-dns still resolves outside
	 * names by asking the host's resolvers, a way out that bypasses the
	 * proxy.  Internal without DNS also has no gateway, so the host is
	 * out of reach too.  The sandbox finds the proxy by address.
	 */
	return json_pack("{s:s, s:s, s:s, s:b, s:b, s:{s:s}, s:o}",
	    "name", n.network, "driver", "bridge", "network_interface", br,
	    "internal", 1, "dns_enabled", 0,
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

int
sandbox_proxy_ip_of(const json_t *net, char *dst, size_t len)
{
	const json_t	*sn;
	const char	*cidr, *slash;
	char		 addr[INET_ADDRSTRLEN];
	struct in_addr	 in;
	uint32_t	 a, mask;
	size_t		 i;
	long		 bits;
	char		*end;

	json_array_foreach(json_object_get(net, "subnets"), i, sn) {
		cidr = json_string_value(json_object_get(sn, "subnet"));
		if (cidr == NULL || (slash = strchr(cidr, '/')) == NULL
		    || (size_t)(slash - cidr) >= sizeof(addr))
			continue;
		memcpy(addr, cidr, (size_t)(slash - cidr));
		addr[slash - cidr] = '\0';
		errno = 0;
		bits = strtol(slash + 1, &end, 10);
		/* At least two hosts besides network and broadcast. */
		if (*end != '\0' || errno != 0 || bits < 1 || bits > 29
		    || inet_pton(AF_INET, addr, &in) != 1)
			continue;
		mask = ~0U << (32 - bits);
		a = (ntohl(in.s_addr) | ~mask) - 1;
		in.s_addr = htonl(a);
		if (inet_ntop(AF_INET, &in, dst, (socklen_t)len) == NULL)
			return -1;
		return 0;
	}
	return -1;
}

/*
 * What the agent needs to make file links: this user's key (never the
 * master key: a sandbox can only sign links to its own workspace), where
 * browsers reach the supervisor, and the lifetimes.  Without a loaded key
 * (vivariumctl before the supervisor ever started) links stay off.
 */
static void
link_env(const struct conf *c, const char *user, json_t *env)
{
	char	 hex[LINK_KEY_HEX + 1], n[32];

	if (link_user_key_hex(&c->link_keys, user, hex) == -1)
		return;
	json_object_set_new(env, "VIVARIUM_LINK_USER", json_string(user));
	json_object_set_new(env, "VIVARIUM_LINK_KEY", json_string(hex));
	json_object_set_new(env, "VIVARIUM_PUBLIC_URL",
	    json_string(c->public_url));
#define SETN(name, v) \
	snprintf(n, sizeof(n), "%lld", (long long)(v)); \
	json_object_set_new(env, name, json_string(n))
	SETN("VIVARIUM_DOWNLOAD_LIFETIME", c->download_lifetime);
	SETN("VIVARIUM_UPLOAD_LIFETIME", c->upload_lifetime);
	SETN("VIVARIUM_LINK_MAX_LIFETIME", c->link_max_lifetime);
	SETN("VIVARIUM_UPLOAD_MAX_BYTES", c->upload_max);
#undef SETN
	memset(hex, 0, sizeof(hex));
}

json_t *
sandbox_env(const struct conf *c, const char *user, const char *proxy_ip)
{
	json_t	*env;
	char	 url[INET_ADDRSTRLEN + 32];
	size_t	 i;

	env = json_object();
	for (i = 0; i < c->nenv; i++)
		json_object_set_new(env, c->env[i].key,
		    json_string(c->env[i].value));
	/* Ours come last: sandbox.env cannot undo them. */
	json_object_set_new(env, "VIVARIUM_SOCKET", json_string(AGENT_SOCK_IN));
	/* The socket only: nothing in the sandbox listens on TCP. */
	json_object_set_new(env, "VIVARIUM_PORT", json_string("off"));
	if (proxy_ip != NULL) {
		snprintf(url, sizeof(url), "http://%s:%ld", proxy_ip,
		    c->egress_port);
		json_object_set_new(env, "http_proxy", json_string(url));
		json_object_set_new(env, "https_proxy", json_string(url));
		json_object_set_new(env, "HTTP_PROXY", json_string(url));
		json_object_set_new(env, "HTTPS_PROXY", json_string(url));
		/* Nothing is local but the proxy: everything goes to it. */
		json_object_set_new(env, "no_proxy", json_string(""));
		json_object_set_new(env, "NO_PROXY", json_string(""));
	}
	link_env(c, user, env);
	return env;
}

json_t *
sandbox_container_spec(const struct conf *c, const char *user,
    const char *proxy_ip)
{
	const struct limits	*l = conf_limits(c, user);
	struct names		 n;
	json_t			*spec, *env;
	char			 tmpsz[64];

	(void)sandbox_names(c, user, &n);
	env = sandbox_env(c, user, proxy_ip);
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
	/* Not the host's proxy variables (containers.conf http_proxy=true). */
	if (spec != NULL)
		json_object_set_new(spec, "httpproxy", json_false());
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
	if (mkdirat(sfd, USERS_DIR, 0755) == -1 && errno != EEXIST) {
		perr_set(e, 500, "cannot create %s/" USERS_DIR ": %s",
		    c->state_dir, strerror(errno));
		goto fail;
	}
	if ((ufd = openat(sfd, USERS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || fstat(ufd, &st) == -1) {
		perr_set(e, 500, "%s/" USERS_DIR " is not a directory (%s): "
		    "refusing to use it", c->state_dir, entry_kind(sfd,
		    USERS_DIR));
		goto fail;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		perr_set(e, 500, "%s/" USERS_DIR " belongs to uid %u or is "
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

/* Whether the container inspected mounts n's run directory at
 * /run/vivarium (one made before users/ existed mounts <state_dir>/<user>). */
static int
rundir_mounted(const json_t *ins, const struct names *n)
{
	const json_t	*m;
	size_t		 i;

	json_array_foreach(json_object_get(ins, "Mounts"), i, m) {
		const char *dst = json_string_value(json_object_get(m,
		    "Destination"));
		const char *src = json_string_value(json_object_get(m, "Source"));

		if (dst != NULL && strcmp(dst, "/run/vivarium") == 0)
			return src != NULL && strcmp(src, n->rundir) == 0;
	}
	return 0;
}

/*
 * A network made by an older vivarium with DNS on: its DNS server answers
 * outside names.  Replaced when nothing of ours runs on it (the stopped
 * container goes too, the workspace volume stays); otherwise said plainly.
 * 1: removed, 0: kept, -1: error.
 */
static int
network_replace(const struct conf *c, struct podman *p, const struct names *n,
    struct perr *e)
{
	json_t		*ins;
	enum ctr_state	 st;
	struct perr	 e2;

	if (podman_container_inspect(p, n->container, &ins, e) == -1)
		return -1;
	st = podman_ctr_state(ins);
	json_decref(ins);
	if (st == CTR_RUNNING || st == CTR_PAUSED || st == CTR_TRANSIENT) {
		log_warnx("%s: the network was made with DNS on (an older "
		    "vivarium), so the sandbox can resolve outside names; it is "
		    "replaced when %s next starts (`vivariumctl stop` and "
		    "`start` do it now)", n->network, n->container);
		return 0;
	}
	if (st != CTR_MISSING) {
		log_info("%s: removing the stopped container to replace its "
		    "network, made with DNS on (the workspace volume stays)",
		    n->container);
		if (podman_container_remove(p, n->container, e) == -1
		    && e->status != 404)
			return -1;
	}
	if (c->egress_container != NULL)
		(void)podman_network_disconnect(p, n->network,
		    c->egress_container, &e2);
	if (podman_network_remove(p, n->network, &e2) == -1) {
		if (e2.status == 0) {
			*e = e2;
			return -1;
		}
		log_warnx("%s: the network was made with DNS on (an older "
		    "vivarium), so the sandbox can resolve outside names, and "
		    "it cannot be replaced: %s; disconnect what else is on it, "
		    "or `vivariumctl remove-user` the user", n->network,
		    e2.msg);
		return 0;
	}
	log_info("%s: replacing a network made with DNS on (an older "
	    "vivarium)", n->network);
	return 1;
}

static int
network_ensure(const struct conf *c, struct podman *p, const char *user,
    const struct names *n, int *made, struct perr *e)
{
	json_t	*spec, *net;
	int	 r, dns;

	*made = 0;
	if (podman_network_inspect(p, n->network, &net, e) == -1)
		return -1;
	if (net != NULL) {
		dns = json_is_true(json_object_get(net, "dns_enabled"));
		json_decref(net);
		if (!dns)
			return 0;
		if ((r = network_replace(c, p, n, e)) <= 0)
			return r;
	}
	spec = sandbox_network_spec(c, p, user);
	r = podman_network_create(p, spec, e);
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

/*
 * Puts the proxy container on the user's network at ip, the address the
 * sandbox's proxy variables name.  Already there at that address: done;
 * at another (connected by an older vivarium): moved.
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
 * A stopped container made with other settings (an older vivarium: no
 * VIVARIUM_PORT=off, a proxy by name; or the proxy's address changed with
 * a new network) is removed, to be made again on the same volume.
 * 1: current, 0: removed, -1: error.
 */
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
	if (stale == NULL && !rundir_mounted(ins, n))
		stale = "the run directory, now under " USERS_DIR "/";
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
 * NULL: its run directory is from before users/ (its socket is not where
 * we look), or its links are signed with another key or for another
 * address (the key file was replaced, public_url changed), so its new
 * links would never open.  Stopped, it is made again on the same volume.
 */
static const char *
running_stale(const struct conf *c, const char *user, const json_t *ins,
    const struct names *n)
{
	static char	 why[128];
	const char	*k;
	json_t		*links;

	if (!rundir_mounted(ins, n))
		return "its run directory moved under " USERS_DIR "/";
	if ((links = json_object()) == NULL)
		return NULL;
	link_env(c, user, links);
	k = env_stale(ins, links);
	if (k != NULL)
		snprintf(why, sizeof(why), "its file links are signed with "
		    "another key or for another address (%s)", k);
	json_decref(links);
	return k != NULL ? why : NULL;
}

int
sandbox_create(const struct conf *c, struct podman *p, const char *user,
    struct perr *e)
{
	struct names	 n;
	json_t		*spec;
	char		 ip[INET_ADDRSTRLEN];
	int		 made, r;

	if (sandbox_names(c, user, &n) == -1) {
		perr_set(e, 400, "\"%s\": %s", user, route_user_rule);
		return -1;
	}
	if (podman_version(p, e) == -1)
		return -1;
	if (network_ensure(c, p, user, &n, &made, e) == -1)
		return -1;
	if (proxy_ip(c, p, &n, ip, sizeof(ip), e) == -1)
		return -1;
	if (made && egress_connect(c, p, &n, ip, e) == -1)
		return -1;
	if (volume_ensure(p, user, &n, e) == -1)
		return -1;
	if (rundir_make(c, &n, e) == -1)
		return -1;
	spec = sandbox_container_spec(c, user, ip[0] != '\0' ? ip : NULL);
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
	int		 tries = 0, redo = 0, made, r;

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
	/* Running, but not as we would make it: stopped here, it is made
	 * again below on the same volume. */
	if (st == CTR_RUNNING && ins != NULL &&
	    (stale = running_stale(c, user, ins, &n)) != NULL && redo++ < 3) {
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
		if (network_ensure(c, p, user, &n, &made, e) == -1)
			return -1;
		if (proxy_ip(c, p, &n, ip, sizeof(ip), e) == -1)
			return -1;
		if (made && egress_connect(c, p, &n, ip, e) == -1)
			return -1;
		/* Made by an older vivarium, or removed with its network. */
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
