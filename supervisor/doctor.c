/*
 * doctor.c: `vivariumctl doctor`, every check an operator needs before
 * trusting a service they will not look at for months, each with its fix
 * in one line.  It only looks (and, with --fetch, sends one request
 * through the egress proxy); it never changes anything.  Podman backend.
 *
 * Each check ends as ok, WARN (works, but not as it should: limits not
 * enforced, an old image) or FAIL (something users will see fail: no
 * image, no way out, links nobody can open).  The exit status is 1 when
 * one failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "backend.h"
#include "podman.h"
#include "banned.h"

#define IMAGE_OLD_DAYS	30

enum verdict { D_OK, D_WARN, D_FAIL, D_INFO };

struct doctor {
	const struct conf	*c;
	struct podman		*p;
	int			 json;
	json_t			*out;	/* --json: the checks */
	int			 failed;
};

static const char *const vname[] = { "ok", "WARN", "FAIL", "info" };

/* One finding: what, its verdict, and for WARN and FAIL how to fix it. */
static void __attribute__((format(printf, 5, 6)))
say(struct doctor *d, enum verdict v, const char *check, const char *fix,
    const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (v == D_FAIL)
		d->failed = 1;
	if (d->json) {
		json_array_append_new(d->out, json_pack("{s:s, s:s, s:s, s:s?}",
		    "check", check, "verdict", vname[v], "detail", msg,
		    "fix", v == D_OK || v == D_INFO ? NULL : fix));
		return;
	}
	printf("%-5s %-10s %s\n", vname[v], check, msg);
	if (fix != NULL && (v == D_WARN || v == D_FAIL))
		printf("%-5s %-10s fix: %s\n", "", "", fix);
}

static int
is_loopback(const char *h)
{
	return strncmp(h, "127.", 4) == 0 || strcmp(h, "::1") == 0
	    || strcmp(h, "[::1]") == 0 || strcasecmp(h, "localhost") == 0;
}

/* The host of an http(s) URL into dst. */
static void
url_host(const char *url, char *dst, size_t len)
{
	const char	*h = strstr(url, "://");
	size_t		 n;

	dst[0] = '\0';
	if (h == NULL)
		return;
	h += 3;
	n = *h == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/");
	if (n < len) {
		memcpy(dst, h, n);
		dst[n] = '\0';
	}
}

static void
check_token(struct doctor *d)
{
	struct stat	 st;
	char		 fix[512];

	if (d->c->token_file == NULL && strcmp(d->c->token, CTL_NO_TOKEN) == 0) {
		say(d, D_FAIL, "token", "make one: (umask 077; openssl rand -hex "
		    "32 >/etc/vivarium/token), and name it in token_file:",
		    "no token is configured: the supervisor does not start "
		    "without one");
		return;
	}
	if (d->c->token_file == NULL) {
		say(d, D_WARN, "token", "keep it in a file of mode 0600 and name "
		    "it in token_file:", "the token is in the config file or "
		    "the environment, not in a file of its own");
		return;
	}
	if (stat(d->c->token_file, &st) == -1) {
		say(d, D_FAIL, "token", "check token_file: in the config",
		    "%s: %s", d->c->token_file, strerror(errno));
		return;
	}
	snprintf(fix, sizeof(fix), "chmod 600 %s", d->c->token_file);
	if ((st.st_mode & 077) != 0)
		say(d, D_FAIL, "token", fix, "%s is mode %04o: other accounts "
		    "of this host can read the token", d->c->token_file,
		    (unsigned)(st.st_mode & 07777));
	else
		say(d, D_OK, "token", NULL, "%s, mode %04o", d->c->token_file,
		    (unsigned)(st.st_mode & 07777));
}

static int
check_podman(struct doctor *d)
{
	struct berr	 e;
	char		 fix[512];

	snprintf(fix, sizeof(fix), "start Podman's API service: systemctl "
	    "enable --now podman.socket (or set podman: socket: to where it "
	    "listens; now %s)", d->c->podman_socket);
	if (podman_version(d->p, &e) == -1) {
		say(d, D_FAIL, "podman", fix, "%s", e.msg);
		return -1;
	}
	say(d, D_OK, "podman", NULL, "Podman %s at %s", d->p->version,
	    d->c->podman_socket);
	/* Podman 5 runs init: true with catatonit, which Debian only
	 * recommends. */
	if (podman_at_least(d->p, 5, 0) && access("/usr/libexec/podman/catatonit",
	    X_OK) == -1 && access("/usr/bin/catatonit", X_OK) == -1)
		say(d, D_FAIL, "podman", "apt-get install catatonit",
		    "Podman %s needs catatonit for the sandboxes' init, and it "
		    "is not installed", d->p->version);
	return 0;
}

static void
check_image(struct doctor *d)
{
	struct berr	 e;
	long long	 built;
	long		 days;
	int		 current;
	char		 id[80];

	if (podman_image_id(d->p, d->c->image, id, sizeof(id), &e) == -1) {
		say(d, D_FAIL, "image", "build it: make image (from the "
		    "source tree), or set image: to one Podman has",
		    "%s", e.msg);
		return;
	}
	(void)sandbox_image_info(d->c, d->p, id, id, &current, &built, &e);
	if (built < 0) {
		say(d, D_OK, "image", NULL, "%s (%.12s), build time unknown",
		    d->c->image, id);
		return;
	}
	days = (long)((time(NULL) - built) / 86400);
	if (days > IMAGE_OLD_DAYS)
		say(d, D_WARN, "image", "make image-update (Debian's packages "
		    "as they are today; no tracked file changes)",
		    "%s is %ld days old: it misses Debian's security updates "
		    "since", d->c->image, days);
	else
		say(d, D_OK, "image", NULL, "%s (%.12s), built %ld day%s ago",
		    d->c->image, id, days, days == 1 ? "" : "s");
}

/* The proxy's address on its own network, into dst. */
static int
proxy_addr(struct doctor *d, const json_t *ins, char *dst, size_t len)
{
	json_t		*nets, *n;
	const char	*k, *ip;

	nets = json_object_get(json_object_get(ins, "NetworkSettings"),
	    "Networks");
	if (d->c->egress_manage && (n = json_object_get(nets,
	    d->c->egress_network)) != NULL && (ip = json_string_value(
	    json_object_get(n, "IPAddress"))) != NULL && *ip != '\0') {
		snprintf(dst, len, "%s", ip);
		return 0;
	}
	json_object_foreach(nets, k, n) {
		ip = json_string_value(json_object_get(n, "IPAddress"));
		if (ip != NULL && *ip != '\0') {
			snprintf(dst, len, "%s", ip);
			return 0;
		}
	}
	return -1;
}

static size_t
discard(char *ptr, size_t size, size_t n, void *arg)
{
	(void)ptr;
	(void)arg;
	return size * n;
}

/* One GET of url through the proxy at ip:port, as a sandbox would. */
static void
check_fetch(struct doctor *d, const char *ip, const char *url)
{
	CURL		*h;
	CURLcode	 rc;
	char		 proxy[96], err[CURL_ERROR_SIZE];
	long		 status = 0;

	if ((h = curl_easy_init()) == NULL)
		return;
	snprintf(proxy, sizeof(proxy), "http://%s:%ld", ip, d->c->egress_port);
	err[0] = '\0';
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROXY, proxy);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "");
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (rc == CURLE_OK && status >= 200 && status < 400)
		say(d, D_OK, "fetch", NULL, "%s through the proxy: HTTP %ld",
		    url, status);
	else if (rc == CURLE_OK)
		say(d, D_FAIL, "fetch", "a 403 is the proxy's refusal: allow "
		    "the port (allow_ports) or, for a private address, "
		    "allow_cidrs in the proxy's config", "%s through the "
		    "proxy: HTTP %ld", url, status);
	else
		say(d, D_FAIL, "fetch", "see podman logs for the proxy, and "
		    "check this host's own way out", "%s through the proxy "
		    "at %s: %s", url, proxy, err[0] ? err :
		    curl_easy_strerror(rc));
}

static void
check_egress(struct doctor *d, const char *fetch)
{
	struct berr	 e;
	struct stat	 st;
	json_t		*ins;
	char		 ip[64], path[STATE_DIR_MAX + 48];
	enum ctr_state	 s;

	if (d->c->egress_container == NULL) {
		say(d, D_FAIL, "egress", "add egress: {manage: yes} to the "
		    "config (docs/egress.md)", "no egress proxy is configured: "
		    "sandboxes have no internet access");
		return;
	}
	if (podman_container_inspect(d->p, d->c->egress_container, &ins, &e)
	    == -1) {
		say(d, D_FAIL, "egress", "see the message", "%s", e.msg);
		return;
	}
	s = podman_ctr_state(ins);
	if (s != CTR_RUNNING) {
		say(d, D_FAIL, "egress", d->c->egress_manage ? "the supervisor "
		    "starts it at its next look; if it does not, its log says "
		    "why (journalctl -u vivarium-supervisor)" : "start it, or "
		    "let the supervisor keep it: egress: {manage: yes}",
		    "the proxy container %s is %s: sandboxes have no internet "
		    "access", d->c->egress_container, podman_ctr_state_name(s));
		json_decref(ins);
		return;
	}
	say(d, D_OK, "egress", NULL, "the proxy %s runs%s",
	    d->c->egress_container, d->c->egress_manage ? ", kept by the "
	    "supervisor" : "");
	if (d->c->egress_manage) {
		snprintf(path, sizeof(path), "%s/egress/host-addresses",
		    d->c->state_dir);
		errno = 0;
		if (stat(path, &st) == -1 || st.st_size == 0)
			say(d, D_FAIL, "egress", "start the supervisor: it "
			    "writes the list", "%s: %s", path, errno ?
			    strerror(errno) : "empty");
		else
			say(d, D_OK, "egress", NULL, "this host's addresses, "
			    "refused by the proxy, in %s (%ld s old)", path,
			    (long)(time(NULL) - st.st_mtime));
	}
	if (fetch == NULL)
		say(d, D_INFO, "fetch", NULL, "not tried: --fetch URL sends one "
		    "request through the proxy, as a sandbox would");
	else if (proxy_addr(d, ins, ip, sizeof(ip)) == -1)
		say(d, D_FAIL, "fetch", "see podman inspect for the proxy",
		    "the proxy has no address to reach it at");
	else
		check_fetch(d, ip, fetch);
	json_decref(ins);
}

static void
check_links(struct doctor *d)
{
	char	 host[256];

	url_host(d->c->public_url, host, sizeof(host));
	if (!is_loopback(d->c->listen_host) && is_loopback(host))
		say(d, D_FAIL, "links", "set links: public_url to the address "
		    "people's browsers use (https://... behind a reverse "
		    "proxy: docs/operating.md)", "file links point at %s, "
		    "this machine's loopback, but the supervisor listens on "
		    "%s: nobody else can open them", d->c->public_url,
		    d->c->listen_host);
	else
		say(d, D_OK, "links", NULL, "file links point at %s",
		    d->c->public_url);
}

static void
check_limits(struct doctor *d)
{
	struct berr	 e;
	char		 why[512];
	int		 r;

	r = podman_limits_enforced(d->p, why, sizeof(why), &e);
	if (r == 0)
		say(d, D_WARN, "limits", "see docs/supervisor.md (cgroups)",
		    "sandbox limits are NOT enforced: %s", why);
	else if (r == 1)
		say(d, D_OK, "limits", NULL, "memory, CPU and pids limits are "
		    "enforced");
	r = sandbox_quota_usable(d->c, d->p, why, sizeof(why));
	if (r == 0 && why[0] != '\0')
		say(d, D_WARN, "quota", "see docs/supervisor.md (quotas)",
		    "workspace quotas are NOT enforced: %s", why);
	else if (r == 1)
		say(d, D_OK, "quota", NULL, "each workspace is limited to its "
		    "quota (%llu MiB by default)", d->c->limits.workspace >> 20);
}

/*
 * Free space where the workspaces live against what they may still grow
 * by: each user's quota less what their image holds already.
 */
static void
check_disk(struct doctor *d)
{
	struct berr	 e;
	struct statvfs	 vfs;
	json_t		*vols, *v;
	unsigned long long free_b, grow = 0, quota;
	long long	 used;
	const char	*u;
	size_t		 i, n = 0;

	if (statvfs(d->c->state_dir, &vfs) == -1) {
		say(d, D_WARN, "disk", "check state_dir:", "%s: %s",
		    d->c->state_dir, strerror(errno));
		return;
	}
	free_b = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	if (podman_volume_list(d->p, &vols, &e) == 0) {
		json_array_foreach(vols, i, v) {
			if ((u = sandbox_label_user(v)) == NULL)
				continue;
			n++;
			quota = conf_limits(d->c, u)->workspace;
			used = sandbox_disk_used(d->c, u);
			if (used >= 0 && (unsigned long long)used < quota)
				grow += quota - (unsigned long long)used;
		}
		json_decref(vols);
	}
	if (grow > free_b)
		say(d, D_WARN, "disk", "free space, or lower limits.workspace",
		    "%s has %llu MiB free, but the %zu workspaces may still "
		    "grow by %llu MiB", d->c->state_dir, free_b >> 20, n,
		    grow >> 20);
	else
		say(d, D_OK, "disk", NULL, "%s has %llu MiB free; the %zu "
		    "workspaces may grow by %llu MiB", d->c->state_dir,
		    free_b >> 20, n, grow >> 20);
}

/* What LibreChat must have, as make run prints it (supervisor/paste.sh). */
static void
check_librechat(struct doctor *d)
{
	char	 host[300];

	snprintf(host, sizeof(host), strcmp(d->c->listen_host, "0.0.0.0") == 0
	    ? "<this host, as LibreChat reaches it>" : "%s",
	    d->c->listen_host);
	say(d, D_INFO, "librechat", NULL, "librechat.yaml: mcpServers: "
	    "vivarium: {type: streamable-http, url: http://%s:%d/mcp, "
	    "headers: {Authorization: \"Bearer ${VIVARIUM_TOKEN}\", %s: "
	    "\"{{LIBRECHAT_USER_ID}}\", %s: \"{{LIBRECHAT_USER_EMAIL}}\"}}; "
	    "VIVARIUM_TOKEN in LibreChat's .env from %s; restart LibreChat "
	    "after editing", host, d->c->listen_port, d->c->user_header,
	    d->c->user_name_header, d->c->token_file != NULL ?
	    d->c->token_file : "the supervisor's token");
}

int
doctor_run(const struct conf *c, struct podman *p, const char *fetch,
    int json)
{
	struct doctor	 d = { .c = c, .p = p, .json = json };

	if (json)
		d.out = json_array();
	say(&d, D_OK, "config", NULL, "%s", c->path != NULL ? c->path :
	    "built-in defaults (no config file)");
	check_token(&d);
	if (check_podman(&d) == 0) {
		check_image(&d);
		check_egress(&d, fetch);
		check_limits(&d);
		check_disk(&d);
	}
	check_links(&d);
	check_librechat(&d);
	if (json) {
		json_dumpf(d.out, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(d.out);
	} else
		printf("%s\n", d.failed ? "doctor: something above FAILED" :
		    "doctor: nothing failed");
	return d.failed ? 1 : 0;
}
