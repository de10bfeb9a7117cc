/*
 * egress.c: the egress proxy's container, made and kept by the supervisor
 * when the config says egress: manage: yes (Podman backend), so that one
 * service brings everything back after a reboot, on any Podman:
 *
 *   - the proxy's network (egress: network, a normal bridge named egress:
 *     bridge): its way out, made when missing, refused when internal;
 *   - the list of this host's addresses, which the proxy refuses and
 *     without which it does not start: <state_dir>/egress/host-addresses,
 *     every interface's addresses (getifaddrs) and egress: host_extra,
 *     written aside and renamed when it changed, at start and at every
 *     look; on disk, so a reboot does not empty it;
 *   - beside it, user-labels: whose sandbox each address on the users'
 *     networks is, for the proxy's log lines (user=LABEL);
 *   - the container, from egress: image (default: the sandbox image),
 *     hardened as docs/egress.md says, labelled with a hash of what it is
 *     made of (its spec, the image's id, the proxy's config file): one
 *     made otherwise (the image was rebuilt, the config edited) is
 *     replaced, and the new one put back on every user's network; one that
 *     stopped is started again.
 *
 * The container has no restart policy: each restart of a container with a
 * user namespace leaks a network namespace in Podman 4.3.1, so a proxy
 * that cannot start would leak one a second.  The supervisor looks again
 * at every reaper tick (30 s at most) instead, tries a proxy that exits at
 * start again later and later, and says each time what the proxy said.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "sha256.h"
#include "backend.h"
#include "podman.h"
#include "text.h"
#include "banned.h"

#define EGRESS_DIR		"egress"
#define EGRESS_HOSTS		"host-addresses"
#define EGRESS_LABELS		"user-labels"
#define LABELS_MAX		4096	/* the proxy takes no more */
#define LABELS_FILE_MAX		(1u << 20)
#define EGRESS_SPEC_LABEL	"io.vivarium.egress-spec"
#define EGRESS_MEMORY		(512LL << 20)
#define EGRESS_PIDS		256
#define EGRESS_PIDS_RUNSC	2048	/* gVisor's own threads count too */
#define EGRESS_NOFILE		16384
#define EGRESS_CONF_IN		"/etc/vivarium/egress.yaml"
#define EGRESS_HOSTS_IN		"/run/vivarium-host"

static const char *
egress_image(const struct conf *c)
{
	return c->egress_image != NULL ? c->egress_image : c->image;
}

/* ------------------------------------------------------------ host list */

/*
 * The list as the proxy reads it: a comment, then one address or CIDR a
 * line.  0, or -1 with e.
 */
int
egress_host_list(const struct conf *c, struct buf *out, struct berr *e)
{
	struct ifaddrs	*ifs, *i;
	const void	*a;
	char		 s[INET6_ADDRSTRLEN], *extra, *tok, *save = NULL;
	size_t		 n = 0;
	int		 r = 0;

	if (getifaddrs(&ifs) == -1) {
		berr_set(e, 500, "cannot list this host's addresses: %s",
		    strerror(errno));
		return -1;
	}
	r |= buf_appends(out, "# this host's addresses, written by "
	    "vivarium-supervisor (egress: manage)\n");
	for (i = ifs; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			a = &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
		else if (i->ifa_addr->sa_family == AF_INET6)
			a = &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
		else
			continue;
		if (inet_ntop(i->ifa_addr->sa_family, a, s, sizeof(s)) == NULL)
			continue;
		r |= buf_appendf(out, "%s\n", s);
		n++;
	}
	freeifaddrs(ifs);
	if (c->egress_host_extra != NULL) {
		if ((extra = strdup(c->egress_host_extra)) == NULL)
			r = -1;
		for (tok = extra != NULL ? strtok_r(extra, ", ", &save) : NULL;
		    tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
			r |= buf_appendf(out, "%s\n", tok);
			n++;
		}
		free(extra);
	}
	if (r != 0) {
		berr_set(e, 500, "out of memory");
		return -1;
	}
	/* Loopback at least: none means the listing failed. */
	if (n == 0) {
		berr_set(e, 500, "this host lists no address of its own");
		return -1;
	}
	return 0;
}

/* <state_dir>/egress into dst. */
static void
hosts_dir(const struct conf *c, char *dst, size_t len)
{
	snprintf(dst, len, "%s/" EGRESS_DIR, c->state_dir);
}

/*
 * Writes the list when it changed: aside, then renamed, so the proxy
 * never reads half of it.  The directory 0755 and the file 0644: the
 * proxy runs as another uid.  0, or -1 with e.
 */
int
egress_write_hosts(const struct conf *c, struct berr *e)
{
	struct buf	 now = BUF_INIT(1u << 20), had = BUF_INIT(1u << 20);
	char		 dir[STATE_DIR_MAX + 16], path[STATE_DIR_MAX + 48];
	char		 tmp[STATE_DIR_MAX + 64], chunk[4096];
	ssize_t		 n;
	int		 fd, r = -1;

	hosts_dir(c, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/" EGRESS_HOSTS, dir);
	snprintf(tmp, sizeof(tmp), "%s/." EGRESS_HOSTS ".%ld", dir,
	    (long)getpid());
	if (egress_host_list(c, &now, e) == -1)
		goto out;
	(void)mkdir(c->state_dir, 0700);
	if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
		berr_set(e, 500, "cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	(void)chmod(dir, 0755);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
		while ((n = read(fd, chunk, sizeof(chunk))) > 0)
			if (buf_append(&had, chunk, (size_t)n) == -1)
				break;
		close(fd);
		if (had.len == now.len && memcmp(had.data, now.data,
		    now.len) == 0) {
			r = 0;
			goto out;
		}
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0644)) == -1) {
		berr_set(e, 500, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (write(fd, now.data, now.len) != (ssize_t)now.len ||
	    fchmod(fd, 0644) == -1 || close(fd) == -1) {
		berr_set(e, 500, "cannot write %s: %s", tmp, strerror(errno));
		(void)unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) == -1) {
		berr_set(e, 500, "cannot rename %s: %s", tmp, strerror(errno));
		(void)unlink(tmp);
		goto out;
	}
	log_info("%s: this host's addresses for the egress proxy, written",
	    path);
	r = 0;
out:
	buf_release(&now);
	buf_release(&had);
	return r;
}

/* ------------------------------------------------------------ user labels */

/*
 * <state_dir>/egress/user-labels: one line per sandbox address, "ADDRESS
 * LABEL", LABEL the user's recorded name made safe for a log line and the
 * id ("alice@example.org/665f0c..."), or the id alone.  The proxy puts
 * user=LABEL in the log lines of a client at that address, so that an
 * operator can tell whose sandbox fetched what, also after it stopped.
 *
 * The file is the only record: vivariumctl starts sandboxes too, and a
 * supervisor that restarts must keep the lines of the sandboxes that still
 * run.  So each change reads it, edits it and writes it back (aside, then
 * renamed) under an flock of its directory, which also keeps this
 * process's threads apart.  One line per user, the last noted last; a
 * line whose address another user now has goes, and past LABELS_MAX the
 * oldest go.  A stopped sandbox's line stays: harmless, and its past log
 * lines keep their name.
 */

struct label_entry {
	char	 addr[INET6_ADDRSTRLEN];
	char	 user[USER_ID_MAX + 1];
};

void
egress_label(const char *name, const char *user, char *dst, size_t len)
{
	const unsigned char	*s = (const unsigned char *)(name != NULL ?
				    name : "");
	size_t			 n = strlen((const char *)s), o = 0;
	int			 k;

	/* The name: spaces become '_'; what could break or forge a log line
	 * (controls, quotes, backslashes, invisible characters, bytes that
	 * are not UTF-8) goes; LABEL_NAME_MAX bytes at most, whole
	 * characters only. */
	while (n > 0 && o < len) {
		if ((k = utf8_seq(s, n)) <= 0) {
			s++, n--;
			continue;
		}
		if (o + (size_t)k > LABEL_NAME_MAX || o + (size_t)k >= len)
			break;
		if (k == 1 && (*s == ' ' || *s == '\t'))
			dst[o++] = '_';
		else if (k == 1 && (*s < ' ' || *s == 0x7f || *s == '"' ||
		    *s == '\'' || *s == '\\'))
			;
		else if (k > 1 && unicode_invisible(utf8_code(s, k)))
			;
		else {
			memcpy(dst + o, s, (size_t)k);
			o += (size_t)k;
		}
		s += k, n -= (size_t)k;
	}
	if (o > 0)
		snprintf(dst + o, len - o, "/%s", user);
	else
		snprintf(dst, len, "%s", user);
}

/* An address in the one spelling inet_ntop gives it ("fd00:0::1" is
 * "fd00::1"), so that the proxy never finds one address listed twice
 * (which would leave it no labels at all); 0, or -1 when it is none. */
static int
addr_canon(const char *in, char *out, size_t len)
{
	unsigned char	 bin[16];
	int		 af = strchr(in, ':') != NULL ? AF_INET6 : AF_INET;

	if (inet_pton(af, in, bin) != 1 || inet_ntop(af, bin, out,
	    (socklen_t)len) == NULL)
		return -1;
	return 0;
}

/*
 * The entries of the file as it is (text, len bytes) into v (room for
 * LABELS_MAX); lines that are not "ADDRESS LABEL" with a user id at the
 * label's end go, and of two lines with one address or one user the
 * earlier goes.  The count.
 */
static size_t
labels_read(const char *text, size_t len, struct label_entry *v)
{
	const char	*p = text, *end = text + len, *nl, *sp, *id;
	char		 a[INET6_ADDRSTRLEN];
	size_t		 ll, n = 0, i, j;

	for (; p < end && n < LABELS_MAX; p = nl != NULL ? nl + 1 : end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		ll = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (ll == 0 || *p == '#' || (sp = memchr(p, ' ', ll)) == NULL
		    || (size_t)(sp - p) >= sizeof(a))
			continue;
		memcpy(a, p, (size_t)(sp - p));
		a[sp - p] = '\0';
		/* The id: the label's part after its last '/'. */
		for (id = p + ll; id > sp + 1 && id[-1] != '/'; id--)
			;
		if (addr_canon(a, v[n].addr, sizeof(v[n].addr)) == -1 ||
		    user_id_valid(id, (size_t)(p + ll - id)) == -1)
			continue;
		memcpy(v[n].user, id, (size_t)(p + ll - id));
		v[n].user[p + ll - id] = '\0';
		n++;
	}
	for (i = j = 0; i < n; i++) {
		size_t	 k;

		for (k = i + 1; k < n; k++)
			if (strcmp(v[i].addr, v[k].addr) == 0 ||
			    strcmp(v[i].user, v[k].user) == 0)
				break;
		if (k == n)
			v[j++] = v[i];
	}
	return j;
}

int
egress_labels_note(const struct conf *c, const char *user, const char *addr,
    struct berr *e)
{
	struct label_entry *v = NULL;
	struct buf	 had = BUF_INIT(LABELS_FILE_MAX), now = BUF_INIT(
			    LABELS_FILE_MAX);
	char		 dir[STATE_DIR_MAX + 16], path[STATE_DIR_MAX + 48];
	char		 tmp[STATE_DIR_MAX + 64], chunk[4096];
	char		 name[NAME_MAX_BYTES + 8], a[INET6_ADDRSTRLEN];
	char		 label[LABEL_NAME_MAX + USER_ID_MAX + 8];
	size_t		 n, i, j, first;
	ssize_t		 r;
	int		 dfd = -1, fd, rc = -1;

	if (addr != NULL && (user == NULL || addr_canon(addr, a,
	    sizeof(a)) == -1)) {
		berr_set(e, 500, "%s: not an address: %s", user != NULL ? user
		    : "-", addr);
		return -1;
	}
	if (addr != NULL)
		addr = a;
	hosts_dir(c, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/" EGRESS_LABELS, dir);
	snprintf(tmp, sizeof(tmp), "%s/." EGRESS_LABELS ".%ld", dir,
	    (long)getpid());
	(void)mkdir(c->state_dir, 0700);
	if ((mkdir(dir, 0755) == -1 && errno != EEXIST) ||
	    (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    flock(dfd, LOCK_EX) == -1) {
		berr_set(e, 500, "%s: %s", dir, strerror(errno));
		goto out;
	}
	/* One more than the file can hold: the new one. */
	if ((v = calloc(LABELS_MAX + 1, sizeof(*v))) == NULL) {
		berr_set(e, 500, "out of memory");
		goto out;
	}
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
		while ((r = read(fd, chunk, sizeof(chunk))) > 0)
			if (buf_append(&had, chunk, (size_t)r) == -1)
				break;
		close(fd);
	}
	n = labels_read(had.data != NULL ? had.data : "", had.len, v);
	/* This user's line, and any other at its address, go; the user's
	 * comes back at the end. */
	if (user != NULL) {
		for (i = j = 0; i < n; i++)
			if (strcmp(v[i].user, user) != 0 && (addr == NULL ||
			    strcmp(v[i].addr, addr) != 0))
				v[j++] = v[i];
		n = j;
		if (addr != NULL) {
			snprintf(v[n].addr, sizeof(v[n].addr), "%s", addr);
			snprintf(v[n].user, sizeof(v[n].user), "%s", user);
			n++;
		}
	}
	first = n > LABELS_MAX ? n - LABELS_MAX : 0;
	if (buf_appends(&now, "# whose sandbox each address is, for the egress "
	    "proxy's log; written by vivarium-supervisor\n") == -1)
		goto nomem;
	for (i = first; i < n; i++) {
		egress_label(names_get(c, v[i].user, name, sizeof(name)) == 0 ?
		    name : NULL, v[i].user, label, sizeof(label));
		if (buf_appendf(&now, "%s %s\n", v[i].addr, label) == -1)
			goto nomem;
	}
	if (had.len == now.len && memcmp(had.data, now.data, now.len) == 0) {
		rc = 0;
		goto out;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0644)) == -1) {
		berr_set(e, 500, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	r = write(fd, now.data, now.len);
	if (close(fd) == -1 || r != (ssize_t)now.len ||
	    rename(tmp, path) == -1) {
		berr_set(e, 500, "cannot write %s: %s", path, strerror(errno));
		(void)unlink(tmp);
		goto out;
	}
	rc = 0;
	goto out;
nomem:
	berr_set(e, 500, "out of memory");
out:
	if (dfd != -1)
		close(dfd);	/* and the lock with it */
	free(v);
	buf_release(&had);
	buf_release(&now);
	return rc;
}

/* ------------------------------------------------------------ the spec */

/*
 * What the proxy's container is to be (a new reference), for the image
 * whose id is image_id.  rootful: with ids of its own (slot 0 of
 * uid_base, which no sandbox gets) and no /dev/shm.
 */
json_t *
egress_container_spec(const struct conf *c, int rootful)
{
	json_t		*spec, *env;
	struct rlimit	 rl;
	char		 dir[STATE_DIR_MAX + 16], listen[32];
	json_int_t	 base, nofile = EGRESS_NOFILE;

	/* No more than this host allows: a limit past its hard one is a
	 * proxy that never starts. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY
	    && (json_int_t)rl.rlim_max < nofile)
		nofile = (json_int_t)rl.rlim_max;

	hosts_dir(c, dir, sizeof(dir));
	snprintf(listen, sizeof(listen), "0.0.0.0:%ld", c->egress_port);
	env = json_pack("{s:s, s:s, s:s}", "VIVARIUM_EGRESS_LISTEN", listen,
	    "VIVARIUM_EGRESS_HOST_ADDRESSES", EGRESS_HOSTS_IN "/" EGRESS_HOSTS,
	    "VIVARIUM_EGRESS_USER_LABELS", EGRESS_HOSTS_IN "/" EGRESS_LABELS);
	spec = json_pack(
	    "{s:s, s:s, s:{s:s, s:s}, s:[s], s:[], s:o, s:s, s:s, s:b, s:b,"
	    " s:[s], s:b, s:{s:{s:I, s:I}, s:{s:I}},"
	    " s:[{s:s, s:I, s:I}, {s:s, s:I, s:I}],"
	    " s:{s:s}, s:{s:{s:[s]}},"
	    " s:[{s:s, s:s, s:s, s:[s]}], s:I, s:s}",
	    "name", c->egress_container,
	    "image", egress_image(c),
	    "labels", "io.vivarium.managed", "true", "io.vivarium.role",
		"egress",
	    "entrypoint", "/usr/local/bin/vivarium-egress",
	    "command",
	    "env", env,
	    "user", "1000:1000",
	    "work_dir", "/",
	    "read_only_filesystem", 1,
	    "no_new_privileges", 1,
	    "cap_drop", "ALL",
	    "init", 1,
	    "resource_limits",
		"memory", "limit", (json_int_t)EGRESS_MEMORY,
		    "swap", (json_int_t)EGRESS_MEMORY,
		"pids", "limit", (json_int_t)(c->runsc ? EGRESS_PIDS_RUNSC : EGRESS_PIDS),
	    "r_limits",
		"type", "nofile", "soft", nofile, "hard", nofile,
		"type", "nproc", "soft", (json_int_t)4096,
		    "hard", (json_int_t)4096,
	    "netns", "nsmode", "bridge",
	    "Networks", c->egress_network, "aliases", "egress",
	    "mounts",
		"destination", EGRESS_HOSTS_IN, "type", "bind",
		"source", dir, "options", "ro",
	    "stop_timeout", (json_int_t)5,
	    "image_volume_mode", "ignore");
	if (spec == NULL)
		return NULL;
	json_object_set_new(spec, "httpproxy", json_false());
	if (c->egress_config != NULL) {
		json_object_set_new(env, "VIVARIUM_EGRESS_CONFIG",
		    json_string(EGRESS_CONF_IN));
		json_array_append_new(json_object_get(spec, "mounts"), json_pack(
		    "{s:s, s:s, s:s, s:[s]}", "destination", EGRESS_CONF_IN,
		    "type", "bind", "source", c->egress_config, "options",
		    "ro"));
	}
	if (rootful && c->uid_base != 0) {
		base = (json_int_t)idmap_host_id(c, 0, 0);
		spec_userns(spec, base, (json_int_t)UID_RANGE);
		json_object_set_new(spec, "ipcns", json_pack("{s:s}", "nsmode",
		    "none"));
	}
	return spec;
}

/*
 * The label that says what the container was made of: the spec, the
 * image's id and the config file's bytes, hashed.  0, or -1 with e.
 */
static int
spec_hash(const struct conf *c, const json_t *spec, const char *image_id,
    char *dst, size_t len, struct berr *e)
{
	struct sha256	 h;
	unsigned char	 md[SHA256_LEN], chunk[4096];
	char		*s;
	ssize_t		 n;
	size_t		 i;
	int		 fd;

	if ((s = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS)) == NULL) {
		berr_set(e, 500, "out of memory");
		return -1;
	}
	sha256_init(&h);
	sha256_update(&h, s, strlen(s));
	sha256_update(&h, image_id, strlen(image_id));
	free(s);
	if (c->egress_config != NULL) {
		if ((fd = open(c->egress_config, O_RDONLY | O_CLOEXEC)) == -1) {
			berr_set(e, 500, "egress: config %s: %s",
			    c->egress_config, strerror(errno));
			return -1;
		}
		while ((n = read(fd, chunk, sizeof(chunk))) > 0)
			sha256_update(&h, chunk, (size_t)n);
		close(fd);
	}
	sha256_final(&h, md);
	for (i = 0; i < 16 && 2 * i + 2 < len; i++)
		snprintf(dst + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* ------------------------------------------------------------ keeping it */

/* Its way out: a normal bridge network, made when missing. */
static int
network_ensure(const struct conf *c, struct podman *p, struct berr *e)
{
	json_t	*net, *spec;
	int	 r;

	if (podman_network_inspect(p, c->egress_network, &net, e) == -1)
		return -1;
	if (net != NULL) {
		r = json_is_true(json_object_get(net, "internal"));
		json_decref(net);
		if (r) {
			berr_set(e, 500, "the network %s is internal, and the "
			    "egress proxy needs a way out: remove it (podman "
			    "network rm %s) or name another in egress: network",
			    c->egress_network, c->egress_network);
			return -1;
		}
		return 0;
	}
	/* DNS off: the proxy resolves through the host's resolvers. */
	spec = json_pack("{s:s, s:s, s:s, s:b, s:b, s:{s:s, s:s}}",
	    "name", c->egress_network, "driver", "bridge",
	    "network_interface", c->egress_bridge, "internal", 0,
	    "dns_enabled", 0, "labels", "io.vivarium.managed", "true",
	    "io.vivarium.role", "egress");
	r = podman_network_create(p, spec, e);
	json_decref(spec);
	if (r == -1 && !podman_err_exists(e))
		return -1;
	if (r == 0)
		log_info("made the network %s (bridge %s) for the egress proxy",
		    c->egress_network, c->egress_bridge);
	return 0;
}

/*
 * After a start: the proxy says "ready" once every thread of it runs (up
 * to 10 s), or an error with what it said before it exited.
 */
static int
started_ok(const struct conf *c, struct podman *p, struct berr *e)
{
	struct buf	 logs = BUF_INIT(1u << 16);
	struct berr	 le;
	json_t		*ins;
	long long	 code = 0;
	int		 i, ready = 0;
	enum ctr_state	 st = CTR_RUNNING;

	for (i = 0; i < 100 && !ready; i++) {
		clock_sleep_ms(100);
		if (podman_container_inspect(p, c->egress_container, &ins, e)
		    == -1)
			return -1;
		st = podman_ctr_state(ins);
		code = json_integer_value(json_object_get(json_object_get(ins,
		    "State"), "ExitCode"));
		json_decref(ins);
		if (st != CTR_RUNNING)
			break;
		logs.len = 0;
		if (podman_container_logs(p, c->egress_container, 20, &logs,
		    &le) == 0 && buf_append(&logs, "", 1) == 0)
			ready = strstr(logs.data, "ready:") != NULL;
	}
	if (st == CTR_RUNNING) {
		if (!ready)
			log_warnx("%s: the egress proxy runs but has not said "
			    "it is ready after 10 s", c->egress_container);
		buf_release(&logs);
		return 0;
	}
	logs.len = 0;
	(void)podman_container_logs(p, c->egress_container, 5, &logs, &le);
	while (logs.len > 0 && (logs.data[logs.len - 1] == '\n'
	    || logs.data[logs.len - 1] == '\0'))
		logs.len--;
	/* Its lines on one of ours, and nothing else a terminal acts on. */
	for (i = 0; i < (int)logs.len; i++)
		if (logs.data[i] == '\n')
			logs.data[i] = '|';
		else if ((unsigned char)logs.data[i] < 0x20)
			logs.data[i] = ' ';
	berr_set(e, 500, "the egress proxy %s exited at start (code %lld): "
	    "%.*s", c->egress_container, code, (int)(logs.len > 300 ? 300 :
	    logs.len), logs.len > 300 ? logs.data + logs.len - 300 :
	    logs.len > 0 ? logs.data : "(no output; podman logs has more)");
	buf_release(&logs);
	return -1;
}

static int
create_start(const struct conf *c, struct podman *p, json_t *spec,
    struct berr *e)
{
	if (podman_container_create(p, spec, e) == -1) {
		if (e->status == 500 && (strstr(e->msg, "image not known")
		    || strstr(e->msg, "no such image")))
			berr_set(e, 500, "the egress proxy's image %s is not in "
			    "Podman's storage: build it (make image) or set "
			    "egress: image", egress_image(c));
		return -1;
	}
	if (podman_container_start(p, c->egress_container, e) == -1)
		return -1;
	return started_ok(c, p, e);
}

/*
 * A proxy that exits at start is not started again at every look: the
 * same spec is tried again after 30 s, then 60 s, ... up to 30 minutes
 * (each start of a container with a user namespace may leak a network
 * namespace in Podman 4.3.1), and at once when the spec changes (the
 * config was fixed, the image rebuilt).  Only the reaper's thread calls
 * egress_keep once the supervisor runs (check runs before it starts).
 */
static struct {
	char		 hash[40];	/* the spec that failed; "": none */
	struct berr	 why;
	double		 retry_at;
	double		 backoff;
} failed;

static void
fail_note(const char *hash, const struct berr *e)
{
	if (strcmp(failed.hash, hash) == 0)
		failed.backoff = failed.backoff * 2 > 1800 ? 1800 :
		    failed.backoff * 2;
	else
		failed.backoff = 30;
	snprintf(failed.hash, sizeof(failed.hash), "%s", hash);
	failed.why = *e;
	failed.retry_at = clock_mono() + failed.backoff;
}

/* Still waiting to try that spec again: 1 with e saying so. */
static int
fail_wait(const char *hash, struct berr *e)
{
	double	 left = failed.retry_at - clock_mono();

	if (strcmp(failed.hash, hash) != 0 || left <= 0)
		return 0;
	*e = failed.why;
	snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg),
	    " (tried again in %.0f s, or at once when the config or the image "
	    "changes)", left);
	return 1;
}

int
egress_keep(const struct conf *c, struct podman *p, int *replaced,
    struct berr *e)
{
	json_t		*spec = NULL, *ins = NULL;
	const char	*have, *was;
	char		 image_id[80], hash[40], old[80] = "";
	enum ctr_state	 st;
	int		 rootful, r = -1;

	*replaced = 0;
	if (!c->egress_manage)
		return 0;
	if (egress_write_hosts(c, e) == -1)
		return -1;
	if ((rootful = podman_rootless(p, e)) == -1)
		return -1;
	rootful = !rootful;
	if (podman_image_id(p, egress_image(c), image_id, sizeof(image_id), e)
	    == -1) {
		if (e->status == 404)
			berr_set(e, 404, "the egress proxy's image %s is not in "
			    "Podman's storage: build it (make image) or set "
			    "egress: image", egress_image(c));
		return -1;
	}
	if (network_ensure(c, p, e) == -1)
		return -1;
	if ((spec = egress_container_spec(c, rootful)) == NULL) {
		berr_set(e, 500, "out of memory");
		return -1;
	}
	if (spec_hash(c, spec, image_id, hash, sizeof(hash), e) == -1)
		goto out;
	json_object_set_new(json_object_get(spec, "labels"), EGRESS_SPEC_LABEL,
	    json_string(hash));
	if (podman_container_inspect(p, c->egress_container, &ins, e) == -1)
		goto out;
	st = podman_ctr_state(ins);
	have = json_string_value(json_object_get(json_object_get(
	    json_object_get(ins, "Config"), "Labels"), EGRESS_SPEC_LABEL));
	if (st != CTR_MISSING && (have == NULL || strcmp(have, hash) != 0)) {
		log_info("%s: made from another image or with other settings; "
		    "making it again", c->egress_container);
		if ((was = json_string_value(json_object_get(ins, "Image")))
		    != NULL && strcmp(was, image_id) != 0)
			snprintf(old, sizeof(old), "%s", was);
		if (podman_container_remove(p, c->egress_container, e) == -1
		    && e->status != 404)
			goto out;
		st = CTR_MISSING;
		*replaced = 1;
	}
	if (st != CTR_RUNNING && st != CTR_TRANSIENT && fail_wait(hash, e))
		goto out;
	switch (st) {
	case CTR_MISSING:
		if (create_start(c, p, spec, e) == -1) {
			fail_note(hash, e);
			goto out;
		}
		log_info("%s: the egress proxy runs (image %s)",
		    c->egress_container, egress_image(c));
		*replaced = 1;
		break;
	case CTR_RUNNING:
	case CTR_TRANSIENT:
		break;
	default:
		log_warnx("%s: the egress proxy was %s; starting it again",
		    c->egress_container, podman_ctr_state_name(st));
		if (podman_container_start(p, c->egress_container, e) == -1
		    || started_ok(c, p, e) == -1) {
			fail_note(hash, e);
			goto out;
		}
		break;
	}
	failed.hash[0] = '\0';
	/* The image it left, when nothing names it and no sandbox uses it. */
	if (old[0] != '\0')
		image_drop_unnamed(p, old);
	r = 0;
out:
	json_decref(ins);
	json_decref(spec);
	return r;
}
