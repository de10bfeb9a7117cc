/*
 * backend_podman_spec.c: what one user's Podman objects are to be, as the JSON
 * bodies sent to Podman (network, volume, container) and the environment the
 * sandbox gets, in Podman's shape: the names, labels and environment themselves
 * are sbenv.c's, which the Kubernetes backend and the quadlets share.  Pure: no
 * Podman, no files, no clock; backend_podman_objects.c makes the objects.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "supervisor.h"
#include "hash.h"
#include "banned.h"

int
sandbox_names(const struct conf *c, const char *user, struct names *n)
{
	struct sbenv_names	 sn;

	if (sbenv_names(user, &sn) == -1)
		return -1;
	snprintf(n->container, sizeof(n->container), "%s", sn.sandbox);
	snprintf(n->network, sizeof(n->network), "%s", sn.sandbox);
	snprintf(n->volume, sizeof(n->volume), "%s", sn.workspace);
	/* A namespace of their own: a user named "token" is not the file. */
	snprintf(n->rundir, sizeof(n->rundir), "%s/" SANDBOX_USERS_DIR "/%s",
	    c->state_dir, user);
	snprintf(n->sock, sizeof(n->sock), "%s/agent.sock", n->rundir);
	return 0;
}

static json_t *
labels(const char *user)
{
	return sbenv_label_object(0, user);
}

/* The environment as Podman takes it: an object (new reference). */
static json_t *
env_object(const struct sbenv *e, json_t *o)
{
	size_t	 i;

	if (o == NULL)
		return NULL;
	for (i = 0; i < e->n; i++)
		json_object_set_new(o, e->v[i].name,
		    json_string(e->v[i].value));
	return o;
}

const char *
sandbox_label_user(const json_t *obj)
{
	const json_t	*l = json_object_get(obj, "Labels");

	if (l == NULL)
		l = json_object_get(obj, "labels");
	return json_string_value(json_object_get(l, SBENV_LABEL_USER));
}

/*
 * The bridge's name on the host, derived from the user id.  Podman would
 * pick "podmanN", the first N free in its own records, and a second Podman
 * storage on the same host (tests, another operator) picking the same name
 * would put two networks on one bridge.  15 characters at most (IFNAMSIZ).
 */
void
sandbox_bridge_name(const char *user, char *dst, size_t len)
{
	uint64_t	 h = hash_bytes(HASH_INIT, user, strlen(user));

	snprintf(dst, len, "viv%012llx", (unsigned long long)(h >> 16));
}

json_t *
sandbox_network_spec(const struct conf *c, const char *user,
    const char *isolate)
{
	struct names	 n;
	char		 br[16];

	(void)sandbox_names(c, user, &n);
	sandbox_bridge_name(user, br, sizeof(br));
	/*
	 * No DNS: on an internal network aardvark-dns still resolves outside
	 * names by asking the host's resolvers, a way out that bypasses the
	 * proxy.  Internal without DNS also has no gateway, so the host is
	 * out of reach too.  The sandbox finds the proxy by address.
	 */
	return json_pack("{s:s, s:s, s:s, s:b, s:b, s:{s:s}, s:o}",
	    "name", n.network, "driver", "bridge", "network_interface", br,
	    "internal", 1, "dns_enabled", 0,
	    "options", "isolate", isolate,
	    "labels", labels(user));
}

/*
 * With an image, Podman's local driver loop-mounts it at every start, so
 * the workspace is a filesystem of the quota's size (quota.c).  nosuid,
 * nodev: nothing on it is the host's business; discard gives the blocks
 * of deleted files back to the host.
 */
json_t *
sandbox_volume_spec(const char *user, const struct sandbox_host *h)
{
	struct sbenv_names	 n;
	json_t			*spec;

	if (sbenv_names(user, &n) == -1)
		return NULL;
	spec = json_pack("{s:s, s:o}", "Name", n.workspace, "Labels",
	    labels(user));
	if (spec != NULL && h->image != NULL)
		json_object_set_new(spec, "Options", json_pack(
		    "{s:s, s:s, s:s}", "type", "ext4", "device", h->image,
		    "o", "loop,nosuid,nodev,discard"));
	return spec;
}

void
sandbox_ids_label(const struct conf *c, const struct sandbox_host *h,
    char *dst, size_t len)
{
	if (h->slot != 0)
		snprintf(dst, len, "%lu+%d", idmap_host_id(c, h->slot, 0),
		    UID_RANGE);
	else if (h->rootless && h->sub_size != 0)
		snprintf(dst, len, "sub:%lu+%lu", h->sub_uid, h->sub_size);
	else
		snprintf(dst, len, "shared");
}

/*
 * The sandbox's own user namespace: its ids 0..size-1 are ids base.. of
 * Podman's namespace (rootful: the host's ids of the slot, so no two
 * sandboxes share a host uid; rootless: the user's subordinate ids, so
 * no id of the sandbox is the supervisor's).  /dev/shm as a
 * tmpfs of the container's own (Podman's default size), not the one
 * Podman mounts on the host: 4.3.1 unmounts a userns container's mounts
 * from conmon's mount namespace, and where the host's mounts are private
 * its /dev/shm would stay mounted and the container could not be removed
 * once it had exited by itself.
 */
void
spec_userns(json_t *spec, json_int_t base, json_int_t size)
{
	json_object_set_new(spec, "userns", json_pack("{s:s}", "nsmode",
	    "private"));
	json_object_set_new(spec, "idmappings", json_pack(
	    "{s:[{s:I, s:I, s:I}], s:[{s:I, s:I, s:I}]}",
	    "UIDMap", "container_id", (json_int_t)0, "host_id", base,
	    "size", size,
	    "GIDMap", "container_id", (json_int_t)0, "host_id", base,
	    "size", size));
}

static void
userns_spec(json_int_t base, json_int_t size, json_t *spec)
{
	spec_userns(spec, base, size);
	json_object_set_new(spec, "ipcns", json_pack("{s:s}", "nsmode",
	    "private"));
	json_array_append_new(json_object_get(spec, "mounts"), json_pack(
	    "{s:s, s:s, s:s, s:[s, s, s, s, s]}", "destination", "/dev/shm",
	    "type", "tmpfs", "source", "tmpfs", "options", "rw", "nosuid",
	    "nodev", "noexec", "size=64m"));
}

/*
 * Rootless Podman with no subordinate range that holds the sandbox user:
 * keep-id maps the sandbox user onto the supervisor's own uid, so that
 * the supervisor can make its socket directory and reach the socket.  An
 * escape then lands as the supervisor (backend_podman.c says so at start).
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
 * The file-link variables alone (sbenv_links), with the key in a file of
 * the run directory, added to env.
 */
void
sandbox_link_env_file(const struct conf *c, const char *user, json_t *env)
{
	struct sbenv	 e = SBENV_INIT;

	if (sbenv_links(&e, c, user, SBENV_KEY_FILE) == 0)
		(void)env_object(&e, env);
	sbenv_release(&e);
}

/* The agent on its socket, the link key in a file. */
static json_t *
env_of(const struct conf *c, const char *user, const char *proxy_ip,
    const char *socket_mode)
{
	struct sbenv_how	 how = { .proxy = proxy_ip,
	    .proxy_port = c->egress_port, .key = SBENV_KEY_FILE,
	    .socket_mode = socket_mode };
	struct sbenv		 e;
	json_t			*env;

	if (sbenv_make(c, user, &how, &e) == -1)
		return NULL;
	env = env_object(&e, json_object());
	sbenv_release(&e);
	return env;
}

json_t *
sandbox_env(const struct conf *c, const char *user, const char *proxy_ip)
{
	return env_of(c, user, proxy_ip, NULL);
}

/*
 * Under gVisor the pids cgroup counts gVisor's own host threads, not the
 * sandbox's processes: its Sentry and gofer are about 70 at rest, and on
 * the ptrace platform every task of the sandbox adds a stub and Sentry
 * threads (100 sleeping children took the count from 72 to 938).  At the
 * limit the Sentry cannot make a thread and the whole sandbox dies
 * ("error initializing first thread: resource temporarily unavailable",
 * which a matplotlib import reached at 128), so the limit is scaled: the
 * sandbox's pids count still bounds it, roughly.
 */
#define RUNSC_PIDS_BASE		256
#define RUNSC_PIDS_PER_TASK	10

long long
sandbox_pids_limit(const struct conf *c, const struct limits *l)
{
	if (!c->runsc)
		return l->pids;
	return RUNSC_PIDS_BASE + RUNSC_PIDS_PER_TASK * (long long)l->pids;
}

json_t *
sandbox_container_spec(const struct conf *c, const char *user,
    const char *proxy_ip, const struct sandbox_host *h)
{
	const struct limits	*l = conf_limits(c, user);
	struct names		 n;
	json_t			*spec, *env;
	char			 tmpsz[64], ids[64];

	if (sandbox_names(c, user, &n) == -1)
		return NULL;
	/*
	 * Rootless in the subordinate range, the agent is not the supervisor:
	 * its socket lets the group in, which the run directory's default
	 * ACL (backend_podman_objects.c) turns into the supervisor's entry.
	 */
	if ((env = env_of(c, user, proxy_ip, h->slot == 0 && h->rootless
	    && h->sub_size != 0 ? "0660" : NULL)) == NULL)
		return NULL;
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
		"pids", "limit", (json_int_t)sandbox_pids_limit(c, l),
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
	if (spec == NULL)
		return NULL;
	/* Not the host's proxy variables (containers.conf http_proxy=true). */
	json_object_set_new(spec, "httpproxy", json_false());
	/*
	 * Not a volume for an image's VOLUME (an image an operator derived
	 * from ours may declare one): Podman would make an anonymous volume
	 * for each, which no removal of the container takes with it (4.3.1
	 * ignores v=true on DELETE), so each re-create would leave one
	 * behind.  The directory stays as the image has it, read-only as the
	 * rest: /workspace and /tmp are the sandbox's only writable places.
	 */
	json_object_set_new(spec, "image_volume_mode", json_string("ignore"));
	/* What it runs as, for backend_podman_objects.c to see it change. */
	sandbox_ids_label(c, h, ids, sizeof(ids));
	json_object_set_new(json_object_get(spec, "labels"), SANDBOX_IDS_LABEL,
	    json_string(ids));
	if (h->slot != 0)
		userns_spec((json_int_t)idmap_host_id(c, h->slot, 0),
		    UID_RANGE, spec);
	else if (h->rootless && h->sub_size != 0)
		userns_spec(1, (json_int_t)h->sub_size, spec);
	else if (h->rootless)
		userns_keep_id(c, spec);
	return spec;
}

