/*
 * backend_podman_objects.c: one user's Podman objects (network, volume,
 * container, runtime directory) made, adopted, checked and removed, shared by
 * the supervisor and vivariumctl; what each object is to be comes from
 * backend_podman_spec.c.  Nothing here keeps state: Podman is asked every time,
 * so both programs see the same truth.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "backend.h"
#include "podman.h"
#include "banned.h"

/* ---------------------------------------------------------------- helpers */

/* sandbox_names, or a 400 saying what a user id may be. */
static int
user_names(const struct conf *c, const char *user, struct names *n,
    struct berr *e)
{
	if (sandbox_names(c, user, n) == -1) {
		berr_set(e, 400, "\"%s\": %s", user, user_id_rule);
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
 * The sandbox user's ids as the host sees them: uid:gid of sandbox.user,
 * moved into the slot's range when the sandbox has a user namespace.
 * 0, or -1 when sandbox.user is a name (the host cannot know its ids).
 */
static int
host_ids(const struct conf *c, const struct sandbox_host *h,
    unsigned long *uid, unsigned long *gid)
{
	unsigned int	 u, g;
	char		 extra;

	if (sscanf(c->sandbox_user, "%u:%u%c", &u, &g, &extra) != 2)
		return -1;
	if (h->slot != 0) {
		*uid = idmap_host_id(c, h->slot, u);
		*gid = idmap_host_id(c, h->slot, g);
	} else if (h->rootless && h->sub_size != 0) {
		/* Container id n is the namespace's n + 1: sub_uid + n. */
		*uid = h->sub_uid + u;
		*gid = h->sub_gid + g;
	} else {
		*uid = u;
		*gid = g;
	}
	return 0;
}

/*
 * A POSIX ACL as the kernel takes it in system.posix_acl_access and
 * system.posix_acl_default (little-endian; entries sorted by tag, then
 * id): the owner rwx, one more user with perm, nobody else.  Set by
 * descriptor, so no library is needed.
 */
#define ACL_XATTR_VERSION	2
#define ACL_TAG_USER_OBJ	0x01
#define ACL_TAG_USER		0x02
#define ACL_TAG_GROUP_OBJ	0x04
#define ACL_TAG_MASK		0x10
#define ACL_TAG_OTHER		0x20

static int
acl_set(int fd, const char *xattr, unsigned long uid, unsigned int perm)
{
	static const uint16_t tags[] = { ACL_TAG_USER_OBJ, ACL_TAG_USER,
	    ACL_TAG_GROUP_OBJ, ACL_TAG_MASK, ACL_TAG_OTHER };
	const uint16_t	 perms[] = { 7, (uint16_t)perm, 0, 7, 0 };
	unsigned char	 b[4 + 5 * 8], *q = b + 4;
	uint32_t	 v;
	uint16_t	 t;
	size_t		 i;

	v = htole32(ACL_XATTR_VERSION);
	memcpy(b, &v, 4);
	for (i = 0; i < 5; i++, q += 8) {
		t = htole16(tags[i]);
		memcpy(q, &t, 2);
		t = htole16(perms[i]);
		memcpy(q + 2, &t, 2);
		v = htole32(tags[i] == ACL_TAG_USER ? (uint32_t)uid :
		    UINT32_MAX);
		memcpy(q + 4, &v, 4);
	}
	return fsetxattr(fd, xattr, b, sizeof(b), 0);
}

/*
 * The state directory, 0700: what is in it (the link key, the slots, the
 * workspace images, the agents' sockets) is no other host account's
 * business.  A descriptor, or -1 with e.
 */
static int
state_dir_open(const struct conf *c, struct berr *e)
{
	struct stat	 st;
	int		 sfd;

	if (mkdir(c->state_dir, 0700) == -1 && errno != EEXIST) {
		berr_set(e, 500, "cannot create the state directory %s: %s",
		    c->state_dir, strerror(errno));
		return -1;
	}
	if ((sfd = open(c->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
	    == -1) {
		berr_set(e, 500, "cannot open the state directory %s: %s",
		    c->state_dir, strerror(errno));
		return -1;
	}
	if (fstat(sfd, &st) == 0 && st.st_uid == geteuid()
	    && (st.st_mode & 077) != 0) {
		log_info("%s: making the state directory 0700 (it was %04o)",
		    c->state_dir, (unsigned)(st.st_mode & 07777));
		if (fchmod(sfd, 0700) == -1)
			log_warn("%s: fchmod", c->state_dir);
	}
	return sfd;
}

/*
 * The user's link key, for the agent to read and remove as it starts
 * (backend_podman_spec.c, sandbox_link_env_file): made anew at every start,
 * whatever the sandbox left under that name (unlinked first, then O_EXCL).  As
 * root with a numeric sandbox.user (gid not -1) ours with the sandbox's group,
 * 0640; otherwise 0644, in a directory under the 0700 state directory.
 */
static int
rundir_key(const struct conf *c, const char *user, const struct names *n,
    int rfd, long gid, struct berr *e)
{
	char	 hex[LINK_KEY_HEX + 2];
	ssize_t	 w;
	int	 fd, root = geteuid() == 0 && gid != -1;

	if (unlinkat(rfd, SANDBOX_LINK_KEY, 0) == -1 && errno != ENOENT) {
		berr_set(e, 500, "cannot remove %s/" SANDBOX_LINK_KEY ": %s",
		    n->rundir, strerror(errno));
		return -1;
	}
	if (link_user_key_hex(&c->link_keys, user, hex) == -1)
		return 0;	/* links are off */
	hex[LINK_KEY_HEX] = '\n';
	if ((fd = openat(rfd, SANDBOX_LINK_KEY, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1) {
		explicit_bzero(hex, sizeof(hex));
		berr_set(e, 500, "cannot create %s/" SANDBOX_LINK_KEY ": %s",
		    n->rundir, strerror(errno));
		return -1;
	}
	w = write(fd, hex, LINK_KEY_HEX + 1);
	explicit_bzero(hex, sizeof(hex));
	if (w != LINK_KEY_HEX + 1
	    || (root && fchown(fd, 0, (gid_t)gid) == -1)
	    || fchmod(fd, root ? 0640 : 0644) == -1) {
		berr_set(e, 500, "cannot write %s/" SANDBOX_LINK_KEY ": %s",
		    n->rundir, w == -1 || w == LINK_KEY_HEX + 1 ?
		    strerror(errno) : "short write");
		close(fd);
		(void)unlinkat(rfd, SANDBOX_LINK_KEY, 0);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * The directory bind-mounted at /run/vivarium: <state_dir>/users/<user>.
 * Made and handed over through descriptors (mkdirat, openat with
 * O_NOFOLLOW, fchown), never by path, so neither a symlink planted at
 * users/ or users/<user> nor a rename racing with us makes the supervisor
 * chown or mount anything else; an entry that is not the directory
 * expected (a file, a link, another owner's directory) is refused, not
 * repaired.
 *
 * As root it stays ours, with the sandbox's group: 0730 while the agent
 * starts (it makes its socket), then rundir_seal makes it 0750, so the
 * sandbox cannot write a byte more into the host's filesystem there, nor
 * chmod it back.  Rootless with a subordinate range, it stays ours,
 * 0700, and the sandbox's host uid gets an ACL entry (rwx while the
 * agent starts, r-x after).  Rootless with keep-id the sandbox user is
 * us; with a named sandbox.user it is open to everyone.
 */
static int
rundir_make(const struct conf *c, const struct names *n,
    const struct sandbox_host *h, struct berr *e)
{
	const char	*user = strrchr(n->rundir, '/') + 1;
	unsigned long	 uid = 0, gid = 0;
	struct stat	 st;
	int		 sfd = -1, ufd = -1, rfd = -1, numeric, r = -1;

	numeric = host_ids(c, h, &uid, &gid) == 0;
	if ((sfd = state_dir_open(c, e)) == -1)
		goto fail;
	if (mkdirat(sfd, SANDBOX_USERS_DIR, 0755) == -1 && errno != EEXIST) {
		berr_set(e, 500, "cannot create %s/" SANDBOX_USERS_DIR ": %s",
		    c->state_dir, strerror(errno));
		goto fail;
	}
	if ((ufd = openat(sfd, SANDBOX_USERS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || fstat(ufd, &st) == -1) {
		berr_set(e, 500, "%s/" SANDBOX_USERS_DIR " is not a directory (%s): "
		    "refusing to use it", c->state_dir, entry_kind(sfd,
		    SANDBOX_USERS_DIR));
		goto fail;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		berr_set(e, 500, "%s/" SANDBOX_USERS_DIR " belongs to uid %u or is "
		    "writable by others: refusing to use it", c->state_dir,
		    (unsigned)st.st_uid);
		goto fail;
	}
	if (mkdirat(ufd, user, 0700) == -1 && errno != EEXIST) {
		berr_set(e, 500, "cannot create %s: %s", n->rundir,
		    strerror(errno));
		goto fail;
	}
	if ((rfd = openat(ufd, user, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || fstat(rfd, &st) == -1) {
		berr_set(e, 500, "%s is not a directory (%s): refusing to use "
		    "it", n->rundir, entry_kind(ufd, user));
		goto fail;
	}
	/* Ours (new), or already the sandbox user's (made before). */
	if (st.st_uid != geteuid() && !(numeric && st.st_uid == uid)) {
		berr_set(e, 500, "%s belongs to uid %u, neither the supervisor "
		    "nor the sandbox user: refusing to use it", n->rundir,
		    (unsigned)st.st_uid);
		goto fail;
	}
	if (numeric && geteuid() == 0) {
		if (fchown(rfd, 0, (gid_t)gid) == -1) {
			berr_set(e, 500, "cannot give %s to the sandbox's group: "
			    "%s", n->rundir, strerror(errno));
			goto fail;
		}
		if (fchmod(rfd, 0730) == -1) {
			berr_set(e, 500, "cannot set the mode of %s: %s",
			    n->rundir, strerror(errno));
			goto fail;
		}
	} else if (numeric && h->rootless && h->sub_size != 0) {
		/*
		 * Rootless, the sandbox user is a subordinate id we cannot
		 * chown to: it gets an ACL entry instead, and what it makes
		 * there (its socket, 0660) gets one for us by default.
		 */
		if (fchmod(rfd, 0700) == -1
		    || acl_set(rfd, "system.posix_acl_access", uid, 7) == -1
		    || acl_set(rfd, "system.posix_acl_default", geteuid(), 7)
		    == -1) {
			berr_set(e, 500, "cannot give %s to the sandbox user "
			    "(host uid %lu) with an ACL: %s (the file system "
			    "needs POSIX ACLs)", n->rundir, uid,
			    strerror(errno));
			goto fail;
		}
	} else if (numeric) {
		if (fchmod(rfd, 0700) == -1) {
			berr_set(e, 500, "cannot set the mode of %s: %s",
			    n->rundir, strerror(errno));
			goto fail;
		}
	} else if (fchmod(rfd, 0777) == -1) {
		berr_set(e, 500, "cannot open up %s: %s", n->rundir,
		    strerror(errno));
		goto fail;
	}
	r = rundir_key(c, user, n, rfd, numeric ? (long)gid : -1, e);
fail:
	if (rfd != -1)
		close(rfd);
	if (ufd != -1)
		close(ufd);
	if (sfd != -1)
		close(sfd);
	return r;
}

/* Once the agent listens: no more entries in its run directory (it may
 * still list it).  As root by the mode; rootless in the subordinate
 * range by the sandbox's ACL entry, r-x. */
static void
rundir_seal(const struct conf *c, const struct names *n,
    const struct sandbox_host *h)
{
	unsigned long	 uid, gid;
	int		 fd, acl;

	acl = h->rootless && h->sub_size != 0 && host_ids(c, h, &uid, &gid)
	    == 0;
	if (geteuid() != 0 && !acl)
		return;
	if ((fd = open(n->rundir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		log_warn("%s", n->rundir);
		return;
	}
	if (geteuid() == 0 && fchmod(fd, 0750) == -1)
		log_warn("%s: fchmod", n->rundir);
	else if (geteuid() != 0 && acl_set(fd, "system.posix_acl_access",
	    uid, 5) == -1)
		log_warn("%s: setting its ACL", n->rundir);
	close(fd);
}

/*
 * Rootless: the part of the user's subordinate ranges a sandbox gets
 * (Podman's namespace ids 1..size), when it holds the sandbox user; -1
 * when not (no ranges, too small, or sandbox.user a name): keep-id then.
 */
int
sandbox_rootless_ids(const struct conf *c, const struct podman *p,
    unsigned long *uid, unsigned long *gid, unsigned long *size)
{
	unsigned int	 u, g;
	char		 extra;

	*size = p->sub_size < ROOTLESS_IDS ? p->sub_size : ROOTLESS_IDS;
	*uid = p->sub_uid;
	*gid = p->sub_gid;
	if (sscanf(c->sandbox_user, "%u:%u%c", &u, &g, &extra) != 2
	    || u >= *size || g >= *size) {
		*size = 0;
		return -1;
	}
	return 0;
}

/*
 * Which ids and which workspace this host can give the user.  Both need
 * rootful Podman: rootless, every sandbox is already inside the
 * operator's own user namespace (no ranges to hand out) and Podman
 * cannot loop-mount.  The slot is made when create; img holds the image's
 * path.  0, or -1 with e.
 */
static int
host_find(const struct conf *c, struct podman *p, const char *user,
    int create, struct sandbox_host *h, char *img, size_t imglen,
    struct berr *e)
{
	int	 rootless;

	memset(h, 0, sizeof(*h));
	if ((rootless = podman_rootless(p, e)) == -1)
		return -1;
	if (rootless) {
		h->rootless = 1;
		if (sandbox_rootless_ids(c, p, &h->sub_uid, &h->sub_gid,
		    &h->sub_size) == -1)
			h->sub_size = 0;
		return 0;
	}
	if (c->uid_base != 0 && idmap_slot(c, user, create, &h->slot, e) == -1)
		return -1;
	if (sandbox_quota_usable(c, p, NULL, 0) == 1) {
		quota_image_path(c, user, img, imglen);
		h->image = img;
	}
	return 0;
}

int
sandbox_quota_usable(const struct conf *c, struct podman *p, char *why,
    size_t len)
{
	static int	 tools = -1;	/* mkfs.ext4 found; asked once */
	static char	 tools_why[256];
	struct berr	 e;
	int		 rootless;

	if (why != NULL)
		why[0] = '\0';
	if (c->limits.workspace == 0)
		return 0;
	if ((rootless = podman_rootless(p, &e)) == -1) {
		if (why != NULL)
			snprintf(why, len, "cannot ask Podman: %s", e.msg);
		return -1;
	}
	if (rootless) {
		if (why != NULL)
			snprintf(why, len, "Podman is rootless: it cannot "
			    "loop-mount a workspace image, so workspaces have no "
			    "quota and one sandbox can fill the disk they are on");
		return 0;
	}
	if (tools == -1)
		tools = quota_tools(tools_why, sizeof(tools_why));
	if (!tools && why != NULL)
		snprintf(why, len, "%s, so workspaces have no quota and one "
		    "sandbox can fill the disk they are on", tools_why);
	return tools;
}

/*
 * Makes the object called name from spec (new reference, released here)
 * unless it exists; one that appears meanwhile (another caller) is fine.
 * *made: whether this call made it.  0, or -1 with e.
 */
static int
object_ensure(struct podman *p, const char *name,
    int (*exists_fn)(struct podman *, const char *, struct berr *),
    int (*create_fn)(struct podman *, json_t *, struct berr *), json_t *spec,
    int *made, struct berr *e)
{
	int	 r;

	*made = 0;
	if ((r = exists_fn(p, name, e)) != 0) {
		json_decref(spec);
		return r == 1 ? 0 : -1;
	}
	r = create_fn(p, spec, e);
	json_decref(spec);
	if (r == -1 && !podman_err_exists(e))
		return -1;
	*made = r == 0;
	return 0;
}

/* The proxy's address on the user's network into dst, or "" without one. */
static int
proxy_ip(const struct conf *c, struct podman *p, const struct names *n,
    char *dst, size_t len, struct berr *e)
{
	json_t	*net;
	int	 r;

	dst[0] = '\0';
	if (c->egress_container == NULL)
		return 0;
	if (podman_network_inspect(p, n->network, &net, e) == -1)
		return -1;
	if (net == NULL) {
		berr_set(e, 404, "the network %s is gone", n->network);
		return -1;
	}
	r = sandbox_proxy_ip_of(net, dst, len);
	json_decref(net);
	if (r == -1) {
		berr_set(e, 500, "the network %s has no IPv4 subnet with room "
		    "for the egress proxy", n->network);
		return -1;
	}
	return 0;
}

/*
 * The workspace volume; with a quota, on an image made for it first (an
 * image kept from before, when only the volume went, is used again).  A
 * volume made without one (quotas came later, or could not be enforced
 * then) keeps its files and has no limit: said at every start.
 */
static int
volume_ensure(const struct conf *c, struct podman *p, const char *user,
    const struct names *n, const struct sandbox_host *h, struct berr *e)
{
	json_t		*spec, *vol;
	unsigned long	 uid = 0, gid = 0;
	char		 path[STATE_DIR_MAX + USER_ID_MAX + 32];
	int		 r;

	if (podman_volume_inspect(p, n->volume, &vol, e) == -1)
		return -1;
	if (vol != NULL) {
		if (h->image != NULL && json_object_get(json_object_get(vol,
		    "Options"), "device") == NULL)
			log_warnx("%s: made without a quota, it has no size "
			    "limit; to give it one, `vivariumctl export` the "
			    "user, `remove-user --purge`, then `import`",
			    n->volume);
		json_decref(vol);
		return 0;
	}
	if (h->image != NULL) {
		(void)host_ids(c, h, &uid, &gid);
		if (quota_image_ensure(c, user, conf_limits(c, user)->workspace,
		    uid, gid, path, sizeof(path), e) == -1)
			return -1;
	}
	spec = sandbox_volume_spec(user, h);
	r = podman_volume_create(p, spec, e);
	json_decref(spec);
	if (r == -1 && !podman_err_exists(e))
		return -1;
	return 0;
}

/*
 * Puts the proxy container on the user's network at ip, the address the
 * sandbox's proxy variables name.  Already there at that address: done;
 * at another (connected by hand): moved.
 */
static int
egress_connect(const struct conf *c, struct podman *p, const struct names *n,
    const char *ip, struct berr *e)
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
    const struct names *n, char *ip, size_t iplen, struct berr *e)
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

/* Why the container runs as other host ids than h gives, or NULL. */
static const char *
ids_stale(const struct conf *c, const struct sandbox_host *h,
    const json_t *ins, int running)
{
	const char	*have;
	char		 want[64];

	sandbox_ids_label(c, h, want, sizeof(want));
	have = json_string_value(json_object_get(json_object_get(
	    json_object_get(ins, "Config"), "Labels"), SANDBOX_IDS_LABEL));
	if (have != NULL && strcmp(have, want) == 0)
		return NULL;
	/* Made before ids were: a running one is left to its next start. */
	if (have == NULL && running)
		return NULL;
	return h->slot != 0 ? "it has no user namespace of its own, or "
	    "another one" : "it has a user namespace this host cannot give";
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
 * Why the container is not of the image the config names now (the image
 * was rebuilt, or image: changed), or NULL; old gets the image it has.
 * An image that cannot be looked up leaves the container as it is: it
 * still runs, and making it again would fail.
 */
static const char *
image_stale(const struct conf *c, struct podman *p, const json_t *ins,
    char *old, size_t oldlen)
{
	struct berr	 e;
	const char	*have;
	char		 want[80];

	old[0] = '\0';
	have = json_string_value(json_object_get(ins, "Image"));
	if (have == NULL || podman_image_id(p, c->image, want, sizeof(want),
	    &e) == -1)
		return NULL;
	if (strcmp(have, want) == 0)
		return NULL;
	snprintf(old, oldlen, "%s", have);
	return "the image changed";
}

/*
 * Removes an image that nothing names any more (a rebuild took its tag)
 * once no container uses it; one still named, or still used, is kept.
 */
void
image_drop_unnamed(struct podman *p, const char *id)
{
	json_t		*ins;
	struct berr	 e;
	char		 path[128];

	snprintf(path, sizeof(path), PODMAN_API "/images/%s/json", id);
	if (podman_call(p, "GET", path, NULL, &ins, NULL, &e) == -1)
		return;
	if (json_array_size(json_object_get(ins, "RepoTags")) == 0
	    && podman_image_remove(p, id, &e) == 0)
		log_info("removed the image %.12s: no name and no sandbox left",
		    id);
	json_decref(ins);
}

/*
 * A stopped container made with other settings (sandbox.env or the link
 * settings changed, the proxy's address changed with a new network, or
 * the image was rebuilt) is removed, to be made again on the same volume.
 * ins is its inspection, the one sandbox_ensure just made.  1: current,
 * 0: removed, -1: error.
 */
static int
ctr_current(const struct conf *c, struct podman *p, const char *user,
    const struct names *n, const struct sandbox_host *h, const char *ip,
    const json_t *ins, struct berr *e)
{
	json_t		*want;
	const char	*stale, *image;
	char		 old[80];

	if (ins == NULL)
		return 0;
	want = sandbox_env(c, user, ip[0] != '\0' ? ip : NULL);
	image = image_stale(c, p, ins, old, sizeof(old));
	if ((stale = ids_stale(c, h, ins, 0)) == NULL
	    && (stale = env_stale(ins, want)) == NULL)
		stale = image;
	if (stale != NULL)
		log_info("%s: made with other settings (%s); making it again "
		    "on the same workspace volume", n->container, stale);
	json_decref(want);
	if (stale == NULL)
		return 1;
	if (podman_container_remove(p, n->container, e) == -1
	    && e->status != 404)
		return -1;
	if (old[0] != '\0')
		image_drop_unnamed(p, old);
	return 0;
}

/*
 * Why a running container is not as this supervisor would make it, or
 * NULL: its links are signed with another key or for another address (the
 * key file was replaced, public_url changed), so its new links would never
 * open.  Stopped, it is made again on the same volume.
 */
static const char *
running_stale(const struct conf *c, const char *user,
    const struct sandbox_host *h, const json_t *ins)
{
	static char	 why[128];
	const char	*k;
	json_t		*links;

	if ((k = ids_stale(c, h, ins, 1)) != NULL)
		return k;
	if ((links = json_object()) == NULL)
		return NULL;
	sandbox_link_env_file(c, user, links);
	k = env_stale(ins, links);
	if (k != NULL)
		snprintf(why, sizeof(why), "its file links are signed with "
		    "another key or for another address (%s)", k);
	json_decref(links);
	return k != NULL ? why : NULL;
}

int
sandbox_create(const struct conf *c, struct podman *p, const char *user,
    struct berr *e)
{
	struct names		 n;
	struct sandbox_host	 h;
	json_t			*spec;
	char			 ip[INET_ADDRSTRLEN];
	char			 img[STATE_DIR_MAX + USER_ID_MAX + 32];
	int			 r;

	if (user_names(c, user, &n, e) == -1)
		return -1;
	if (podman_version(p, e) == -1)
		return -1;
	if (host_find(c, p, user, 1, &h, img, sizeof(img), e) == -1)
		return -1;
	if (network_up(c, p, user, &n, ip, sizeof(ip), e) == -1)
		return -1;
	if (volume_ensure(c, p, user, &n, &h, e) == -1)
		return -1;
	if (rundir_make(c, &n, &h, e) == -1)
		return -1;
	spec = sandbox_container_spec(c, user, ip[0] != '\0' ? ip : NULL, &h);
	r = podman_container_create(p, spec, e);
	json_decref(spec);
	if (r == -1 && podman_err_exists(e))
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
    const struct sandbox_host *h, struct berr *e)
{
	double	 deadline = clock_mono() + (double)c->ready_timeout;
	double	 next_look = clock_mono() + 1.0;
	json_t	*ins;
	enum ctr_state st;
	struct agent_addr a;

	agent_addr_unix(&a, n->sock);
	for (;;) {
		if (agent_probe(&a, 2000) == 0) {
			rundir_seal(c, n, h);
			return 0;
		}
		if (clock_mono() > deadline) {
			berr_set(e, 504, "the sandbox %s did not answer on %s in "
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
				berr_set(e, 500, "the sandbox %s stopped while "
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
    int *created, struct berr *e)
{
	struct names		 n;
	struct sandbox_host	 h;
	json_t			*ins = NULL;
	enum ctr_state		 st;
	const char		*stale;
	char			 ip[INET_ADDRSTRLEN];
	char			 img[STATE_DIR_MAX + USER_ID_MAX + 32];
	int			 tries = 0, redo = 0, r;

	*created = 0;
	if (user_names(c, user, &n, e) == -1)
		return -1;
	if (podman_version(p, e) == -1)
		return -1;
	if (host_find(c, p, user, 1, &h, img, sizeof(img), e) == -1)
		return -1;
again:
	if (podman_container_inspect(p, n.container, &ins, e) == -1)
		return -1;
	st = podman_ctr_state(ins);
	/* Running, but not as we would make it: stopped here, it is made
	 * again below on the same volume. */
	if (st == CTR_RUNNING && ins != NULL &&
	    (stale = running_stale(c, user, &h, ins)) != NULL && redo++ < 3) {
		json_decref(ins);
		log_info("%s: %s; making it again on the same workspace volume",
		    n.container, stale);
		if (podman_container_stop(p, n.container, (int)c->stop_timeout,
		    e) == -1 && e->status != 404)
			return -1;
		goto again;
	}
	/* Kept for a stopped one (ctr_current); a resume need not ask twice. */
	if (st != CTR_STOPPED && st != CTR_OTHER) {
		json_decref(ins);
		ins = NULL;
	}
	switch (st) {
	case CTR_RUNNING:
		return wait_ready(c, p, &n, &h, e);
	case CTR_TRANSIENT:
		if (++tries > 50) {
			berr_set(e, 503, "the sandbox %s is stuck %s; try again "
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
		return wait_ready(c, p, &n, &h, e);
	}
	case CTR_STOPPED:
	case CTR_OTHER:
		/* Its network may have gone (podman network rm -f). */
		if (network_up(c, p, user, &n, ip, sizeof(ip), e) == -1) {
			json_decref(ins);
			return -1;
		}
		/* Made with other settings, or removed with its network. */
		r = ctr_current(c, p, user, &n, &h, ip, ins, e);
		json_decref(ins);
		ins = NULL;
		if (r == -1)
			return -1;
		if (r == 0 && redo++ < 3)
			goto again;
		if (rundir_make(c, &n, &h, e) == -1)
			return -1;
		break;
	}
	/* A socket left by the previous run would answer ECONNREFUSED. */
	(void)unlink(n.sock);
	if (podman_container_start(p, n.container, e) == -1) {
		if (e->status == 404 && tries++ < 3)
			goto again;	/* removed under us */
		if (strstr(e->msg, "is already mounted") != NULL)
			snprintf(e->msg + strlen(e->msg), sizeof(e->msg) -
			    strlen(e->msg), " (Podman 4.3.1 leaves the workspace "
			    "of a sandbox with a user namespace mounted when the "
			    "host's mounts are private, as without systemd: "
			    "`mount --make-rshared /` once at boot fixes it; see "
			    "docs/supervisor.md)");
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
	return wait_ready(c, p, &n, &h, e);
}

/* RFC 3339 as Podman writes it ("2026-11-30T10:11:12.5Z", or an offset)
 * to seconds since the epoch; -1 when it is not that. */
static long long
rfc3339(const char *s)
{
	struct tm	 tm;
	const char	*rest;
	int		 h = 0, m = 0;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || (rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return -1;
	while (*rest == '.' || (*rest >= '0' && *rest <= '9'))
		rest++;
	if ((*rest == '+' || *rest == '-') && sscanf(rest + 1, "%d:%d", &h,
	    &m) == 2)
		return (long long)timegm(&tm) - (*rest == '+' ? 1 : -1) *
		    (h * 3600LL + m * 60LL);
	return (long long)timegm(&tm);
}

int
sandbox_image_info(const struct conf *c, struct podman *p, const char *id,
    const char *want, int *current, long long *built, struct berr *e)
{
	json_t	*ins;
	char	 have[80], path[128];

	*current = 0;
	*built = -1;
	if (id == NULL || strlen(id) > 64) {
		berr_set(e, 400, "not an image id");
		return -1;
	}
	if (want == NULL && podman_image_id(p, c->image, have, sizeof(have),
	    e) == 0)
		want = have;
	*current = want != NULL && strcmp(want, id) == 0;
	snprintf(path, sizeof(path), PODMAN_API "/images/%s/json", id);
	if (podman_call(p, "GET", path, NULL, &ins, NULL, e) == -1)
		return -1;
	*built = rfc3339(json_string_value(json_object_get(ins, "Created")));
	json_decref(ins);
	return 0;
}

long long
sandbox_disk_used(const struct conf *c, const char *user)
{
	struct stat	 st;
	char		 img[STATE_DIR_MAX + USER_ID_MAX + 32];

	quota_image_path(c, user, img, sizeof(img));
	if (stat(img, &st) == -1)
		return -1;
	return (long long)st.st_blocks * 512;
}

int
sandbox_egress_reconnect(const struct conf *c, struct podman *p,
    struct berr *e)
{
	struct names	 n;
	struct berr	 one;
	json_t		*nets, *net, *ins;
	const char	*user;
	char		 ip[INET_ADDRSTRLEN];
	size_t		 i;
	int		 r = 0, running;

	if (c->egress_container == NULL)
		return 0;
	if (podman_network_list(p, &nets, e) == -1)
		return -1;
	json_array_foreach(nets, i, net) {
		if ((user = sandbox_label_user(net)) == NULL
		    || sandbox_names(c, user, &n) == -1)
			continue;
		/* A stopped sandbox gets it at its start (sandbox_ensure). */
		if (podman_container_inspect(p, n.container, &ins, &one) == -1)
			continue;
		running = podman_ctr_state(ins) == CTR_RUNNING;
		json_decref(ins);
		if (!running)
			continue;
		if (proxy_ip(c, p, &n, ip, sizeof(ip), &one) == -1
		    || egress_connect(c, p, &n, ip, &one) == -1) {
			log_warnx("%s: the egress proxy is not connected: %s",
			    n.network, one.msg);
			if (r == 0)
				*e = one;
			r = -1;
		} else
			log_debug("%s: the egress proxy is on it at %s",
			    n.network, ip);
	}
	json_decref(nets);
	return r;
}

int
sandbox_stop(const struct conf *c, struct podman *p, const char *user,
    struct berr *e)
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
    int purge, struct berr *e)
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
	/* The files are gone: so may be the ids they belonged to. */
	if (purge) {
		quota_image_remove(c, user);
		if (c->uid_base != 0 && idmap_release(c, user) == -1)
			log_warnx("%s: cannot give its id slot back", user);
	}
	(void)unlink(n.sock);
	(void)rmdir(n.rundir);
	return 0;
}
