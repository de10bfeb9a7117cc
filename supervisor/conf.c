/*
 * conf.c: the supervisor's configuration: built-in defaults, then the YAML
 * file, then environment overrides.  Every problem is collected so that one
 * run reports all of them as "file:line: message".  The keys are the table
 * conf_keys (common/conftab.c reads it): a new setting is a line there.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "origin.h"
#include "supervisor.h"
#include "banned.h"

#define DEF_IMAGE	"localhost/vivarium-sandbox:" VIVARIUM_VERSION

static char *
xstrdup(const char *s)
{
	char	*p = strdup(s);

	if (p == NULL) {
		fputs("out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static void
set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = xstrdup(v);
}

/* "2", "1.5", "0.25": CPUs as thousandths. */
static int
parse_cpus(const char *s, long *milli)
{
	long	 whole = 0, frac = 0, scale = 100;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	while (isdigit((unsigned char)*p)) {
		whole = whole * 10 + (*p++ - '0');
		if (whole > 1024)
			return -1;
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p)) {
			if (scale == 0)
				return -1;
			frac += (*p++ - '0') * scale;
			scale /= 10;
		}
	}
	if (*p != '\0' || whole * 1000 + frac < 10)
		return -1;
	*milli = whole * 1000 + frac;
	return 0;
}

static int
parse_provisioning(const char *s, enum provisioning *p)
{
	if (strcmp(s, "auto") == 0)
		*p = PROV_AUTO;
	else if (strcmp(s, "allowlist") == 0)
		*p = PROV_ALLOWLIST;
	else if (strcmp(s, "manual") == 0)
		*p = PROV_MANUAL;
	else
		return -1;
	return 0;
}

const char *
conf_provisioning_name(enum provisioning p)
{
	switch (p) {
	case PROV_AUTO:		return "auto";
	case PROV_ALLOWLIST:	return "allowlist";
	case PROV_MANUAL:	return "manual";
	}
	return "?";
}

void
conf_print_summary(const struct conf *c, const char *path)
{
	printf("configuration OK%s%s: listen %s:%d, ", path ? " in " : "",
	    path ? path : "", c->listen_host, c->listen_port);
	if (c->backend == BACKEND_KUBERNETES)
		printf("kubernetes namespace %s, image %s", c->kube.namespace,
		    c->kube.image != NULL ? c->kube.image : c->image);
	else
		printf("podman %s, image %s", c->podman_socket, c->image);
	printf(", provisioning %s\n", conf_provisioning_name(c->provisioning));
}

static void
conf_defaults(struct conf *c)
{
	const char	*xdg = getenv("XDG_RUNTIME_DIR");
	char		 path[512];

	memset(c, 0, sizeof(*c));
	c->listen_host = xstrdup("127.0.0.1");
	c->listen_port = 8787;
	c->user_header = xstrdup("X-User-ID");
	c->user_name_header = xstrdup("X-User-Name");
	c->origins = xstrdup("");
	if (geteuid() != 0 && xdg != NULL && *xdg != '\0') {
		snprintf(path, sizeof(path), "%s/podman/podman.sock", xdg);
		c->podman_socket = xstrdup(path);
		snprintf(path, sizeof(path), "%s/vivarium", xdg);
		c->state_dir = xstrdup(path);
	} else {
		c->podman_socket = xstrdup("/run/podman/podman.sock");
		c->state_dir = xstrdup("/var/lib/vivarium");
	}
	c->podman_timeout_ms = 30000;
	c->image = xstrdup(DEF_IMAGE);
	c->sandbox_user = xstrdup("1000:1000");
	c->tmp_size = 256ULL << 20;
	c->provisioning = PROV_AUTO;
	c->idle_stop_after = 15 * 60;
	c->ready_timeout = 30;
	c->stop_timeout = 5;
	c->agent_timeout = 900;
	c->max_body = 4u << 20;
	c->max_response = 64u << 20;
	c->limits.memory = 2ULL << 30;
	c->limits.cpus_milli = 2000;
	c->limits.pids = 128;
	c->limits.workspace = 5ULL << 30;
	c->uid_base = DEF_UID_BASE;
	c->egress_alias = xstrdup("egress");
	c->egress_network = xstrdup("vivarium-egress");
	c->egress_bridge = xstrdup("vivegress0");
	c->egress_port = 3128;
	c->max_connections = 1024;
	c->max_per_address = 256;
	c->auth_timeout = 10;
	c->download_lifetime = 86400;
	c->upload_lifetime = 3600;
	c->link_max_lifetime = 7 * 86400;
	c->upload_max = 2ULL << 30;
	c->link_max_transfers = 128;
	c->link_max_per_address = 32;
	c->link_max_per_link = 8;
	c->link_min_rate = 1024;
	c->link_rate_grace = 0;	/* auto: below */
	c->kube.agent_port = 8700;
	c->kube.uid_base = KUBE_UID_BASE;
	c->kube.user_namespace = KUBE_USERNS_AUTO;
	c->kube.ephemeral_storage = 1ULL << 30;
	c->kube.egress_proxy = xstrdup("vivarium-egress:3128");
	c->kube.egress_selector = xstrdup("app.kubernetes.io/name=vivarium-egress");
	c->kube.supervisor_selector =
	    xstrdup("app.kubernetes.io/name=vivarium-supervisor");
}

void
conf_release(struct conf *c)
{
	size_t	 i;

	free(c->path);
	free(c->listen_host);
	free(c->token);
	free(c->token_file);
	free(c->user_header);
	free(c->user_name_header);
	free(c->origins);
	free(c->podman_socket);
	free(c->state_dir);
	free(c->image);
	free(c->sandbox_user);
	free(c->users);
	for (i = 0; i < c->nenv; i++) {
		free(c->env[i].key);
		free(c->env[i].value);
	}
	free(c->env);
	free(c->egress_container);
	free(c->egress_alias);
	free(c->egress_image);
	free(c->egress_config);
	free(c->egress_network);
	free(c->egress_bridge);
	free(c->egress_host_extra);
	free(c->public_url);
	free(c->link_key_file);
	free(c->kube.kubeconfig);
	free(c->kube.namespace);
	free(c->kube.image);
	free(c->kube.runtime_class);
	free(c->kube.storage_class);
	free(c->kube.egress_proxy);
	free(c->kube.egress_host);
	free(c->kube.egress_selector);
	free(c->kube.supervisor_selector);
	/* Wipes the link key with the rest. */
	memset(c, 0, sizeof(*c));
}

/* ---------------------------------------------------------------- the table */

/* 1 for a mapping; 0 for an empty value ("users:" with only comments
 * under it: nothing to read) or, with a diagnostic, anything else. */
static int
is_map(struct confdiag *d, const struct ynode *n)
{
	if (n->type == YNODE_MAP)
		return 1;
	if (n->type == YNODE_SCALAR && n->value[0] == '\0')
		return 0;
	confdiag_add(d, n->line, "%s: expected a mapping (key: value lines), "
	    "not %s", n->key, yconf_type_name(n->type));
	return 0;
}

static int
parse_listen(void *base, const char *v)
{
	struct conf	*c = base;
	char		 h[256];
	long		 port;

	if (config_parse_hostport(v, h, sizeof(h), &port) == -1)
		return -1;
	set_str(&c->listen_host, h[0] == '\0' ? "0.0.0.0" : h);
	c->listen_port = (int)port;
	return 0;
}

static int
parse_prov(void *base, const char *v)
{
	return parse_provisioning(v, &((struct conf *)base)->provisioning);
}

static int
parse_limit_cpus(void *base, const char *v)
{
	return parse_cpus(v, &((struct limits *)base)->cpus_milli);
}

static int
parse_podman_timeout(void *base, const char *v)
{
	long	 t;

	if (config_parse_duration(v, 3600, &t) == -1 || t < 1)
		return -1;
	((struct conf *)base)->podman_timeout_ms = t * 1000;
	return 0;
}

/*
 * runc: whatever the Podman service runs (runc, crun), not checked.
 * runsc: gVisor, which the service must run (main.c checks /info): Podman
 * 4.3 ignores a container's own runtime, so this cannot be asked per
 * sandbox, only verified.
 */
static int
parse_sandbox_runtime(void *base, const char *v)
{
	if (strcmp(v, "runc") != 0 && strcmp(v, "runsc") != 0)
		return -1;
	((struct conf *)base)->runsc = strcmp(v, "runsc") == 0;
	return 0;
}

/* The sandboxes' backend (backend.h). */
static int
parse_backend(void *base, const char *v)
{
	if (strcmp(v, "podman") == 0)
		((struct conf *)base)->backend = BACKEND_PODMAN;
	else if (strcmp(v, "kubernetes") == 0)
		((struct conf *)base)->backend = BACKEND_KUBERNETES;
	else
		return -1;
	return 0;
}

/*
 * kubernetes.egress_proxy: the proxy's Service as "name:port" (or an
 * address), which the supervisor resolves itself: sandboxes have no DNS.
 */
static int
parse_kube_egress(void *base, const char *v)
{
	struct conf	*c = base;
	const char	*colon = strrchr(v, ':'), *whole = v;
	long		 port;
	char		 host[256];
	size_t		 hl;

	if (colon == NULL || config_parse_long(colon + 1, 1, 65535, &port)
	    == -1)
		return -1;
	hl = (size_t)(colon - v);
	/* "[v6]:port": the brackets are not part of the address. */
	if (hl >= 2 && v[0] == '[' && v[hl - 1] == ']') {
		v++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host) || memchr(v, ' ', hl) != NULL)
		return -1;
	memcpy(host, v, hl);
	host[hl] = '\0';
	/* whole may be the value being replaced (conf_load's default). */
	if (whole != c->kube.egress_proxy)
		set_str(&c->kube.egress_proxy, whole);
	set_str(&c->kube.egress_host, host);
	c->kube.egress_port = port;
	return 0;
}

/* A label's name part, or a value: [A-Za-z0-9._-], alphanumeric at both
 * ends, at most 63 (value may be empty). */
static int
label_word(const char *s, size_t n, int empty_ok)
{
	size_t	 i;

	if (n == 0)
		return empty_ok ? 0 : -1;
	if (n > 63 || !isalnum((unsigned char)s[0])
	    || !isalnum((unsigned char)s[n - 1]))
		return -1;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("._-", s[i]) == NULL)
			return -1;
	return 0;
}

/* "prefix/name" or "name"; the prefix a DNS subdomain of 253 at most. */
static int
label_key(const char *s, size_t n)
{
	const char	*slash = memchr(s, '/', n);
	size_t		 i, pl;

	if (slash == NULL)
		return label_word(s, n, 0);
	pl = (size_t)(slash - s);
	if (pl == 0 || pl > 253)
		return -1;
	for (i = 0; i < pl; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i])
		    || s[i] == '-' || s[i] == '.'))
			return -1;
	return label_word(slash + 1, n - pl - 1, 0);
}

json_t *
conf_match_labels(const char *sel)
{
	const char	*p = sel, *item, *eq;
	size_t		 n;
	json_t		*m;
	char		 k[320], v[64];

	if ((m = json_object()) == NULL)
		return NULL;
	while (config_list_next(&p, &item, &n)) {
		if ((eq = memchr(item, '=', n)) == NULL
		    || label_key(item, (size_t)(eq - item)) == -1
		    || label_word(eq + 1, n - (size_t)(eq - item) - 1, 1) == -1)
			goto bad;
		snprintf(k, sizeof(k), "%.*s", (int)(eq - item), item);
		snprintf(v, sizeof(v), "%.*s", (int)(n - (size_t)(eq - item) - 1),
		    eq + 1);
		json_object_set_new(m, k, json_string(v));
	}
	if (json_object_size(m) > 0)
		return m;
bad:
	json_decref(m);
	return NULL;
}

static int
parse_selector(char **dst, const char *v)
{
	json_t	*m;

	if ((m = conf_match_labels(v)) == NULL)
		return -1;
	json_decref(m);
	set_str(dst, v);
	return 0;
}

static int
parse_egress_selector(void *base, const char *v)
{
	return parse_selector(&((struct conf *)base)->kube.egress_selector, v);
}

static int
parse_supervisor_selector(void *base, const char *v)
{
	return parse_selector(&((struct conf *)base)->kube.supervisor_selector,
	    v);
}

/* DNS-1123 names into *dst: namespaces (labels, max 63, no dots), runtime
 * and storage classes (subdomains, max 253). */
static int
set_dns_name(char **dst, const char *v, size_t max, int dots)
{
	size_t	 i, n = strlen(v);

	if (n == 0 || n > max || !isalnum((unsigned char)v[0])
	    || !isalnum((unsigned char)v[n - 1]))
		return -1;
	for (i = 0; i < n; i++)
		if (!(islower((unsigned char)v[i]) || isdigit((unsigned char)v[i])
		    || v[i] == '-' || (dots && v[i] == '.')))
			return -1;
	set_str(dst, v);
	return 0;
}

static int
parse_kube_namespace(void *base, const char *v)
{
	return set_dns_name(&((struct conf *)base)->kube.namespace, v, 63, 0);
}

static int
parse_runtime_class(void *base, const char *v)
{
	return set_dns_name(&((struct conf *)base)->kube.runtime_class, v, 253,
	    1);
}

static int
parse_user_namespace(void *base, const char *v)
{
	enum kube_userns	*u = &((struct conf *)base)->kube.user_namespace;

	if (strcmp(v, "auto") == 0)
		*u = KUBE_USERNS_AUTO;
	else if (strcmp(v, "true") == 0)
		*u = KUBE_USERNS_ON;
	else if (strcmp(v, "false") == 0)
		*u = KUBE_USERNS_OFF;
	else
		return -1;
	return 0;
}

static int
parse_storage_class(void *base, const char *v)
{
	return set_dns_name(&((struct conf *)base)->kube.storage_class, v, 253,
	    1);
}

static void
node_egress_url(void *base, const struct ynode *n, struct confdiag *d)
{
	confdiag_add(d, n->line, "egress: url is no longer used: sandboxes "
	    "have no DNS and reach the proxy at a fixed address on their own "
	    "network; give only its port (port: 3128, the default)");
}

static void	node_users(void *, const struct ynode *, struct confdiag *);
static void	node_env(void *, const struct ynode *, struct confdiag *);
static void	node_origins(void *, const struct ynode *, struct confdiag *);
static void	node_token_file(void *, const struct ynode *, struct confdiag *);

#define C(f)		offsetof(struct conf, f)
#define L(f)		offsetof(struct limits, f)
#define DAY		86400LL
#define YEAR		(365 * DAY)
#define V		CONF_VALUE

/* "uid:gid", both inside one sandbox's namespace of UID_RANGE ids. */
static int
sandbox_user_in_range(const char *user)
{
	unsigned int	 uid, gid;
	char		 extra;

	return sscanf(user, "%u:%u%c", &uid, &gid, &extra) == 2
	    && uid < UID_RANGE && gid < UID_RANGE;
}

/* Into struct limits: the defaults (limits:) and each user's overrides. */
static const struct conf_key limit_keys[] = {
	V("memory", NULL, CONF_SIZE, L(memory), 16LL << 20, 1LL << 50),
	CONF_PARSED("cpus", NULL, parse_limit_cpus,
	    "a number of CPUs from 0.01 to 1024 (e.g. 2 or 0.5)"),
	V("pids", NULL, CONF_LONG, L(pids), 16, 1L << 22),
	V("workspace", NULL, CONF_SIZE, L(workspace), 16LL << 20, 1LL << 44),
};

static const struct conf_key podman_keys[] = {
	V("socket", "VIVARIUM_PODMAN_SOCKET", CONF_STR, C(podman_socket), 0, 0),
	CONF_PARSED("timeout", NULL, parse_podman_timeout,
	    "a duration from 1s to 3600s (e.g. 10s, 2m)"),
};

static const struct conf_key sandbox_keys[] = {
	V("user", NULL, CONF_STR, C(sandbox_user), 0, 0),
	V("tmp_size", NULL, CONF_SIZE, C(tmp_size), 1 << 20, 1LL << 40),
	V("stop_timeout", NULL, CONF_DURATION, C(stop_timeout), 0, 600),
	CONF_NODE_FN("env", node_env),
	V("uid_base", NULL, CONF_LONG, C(uid_base), 0, UID_BASE_MAX),
	CONF_PARSED("runtime", NULL, parse_sandbox_runtime, "runc or runsc"),
};

/* egress: host_extra: what hosts.sh took, checked the same way. */
static int
parse_host_extra(void *base, const char *v)
{
	struct conf	*c = base;
	const char	*p;

	for (p = v; *p != '\0'; p++)
		if (strchr("0123456789abcdefABCDEF.:/, ", *p) == NULL)
			return -1;
	set_str(&c->egress_host_extra, v);
	return 0;
}

static const struct conf_key egress_keys[] = {
	V("container", NULL, CONF_STR, C(egress_container), 0, 0),
	V("port", NULL, CONF_LONG, C(egress_port), 1, 65535),
	V("alias", NULL, CONF_STR, C(egress_alias), 0, 0),
	CONF_NODE_FN("url", node_egress_url),
	V("manage", NULL, CONF_BOOL, C(egress_manage), 0, 0),
	V("image", NULL, CONF_STR, C(egress_image), 0, 0),
	V("config", NULL, CONF_STR, C(egress_config), 0, 0),
	V("network", NULL, CONF_STR, C(egress_network), 0, 0),
	V("bridge", NULL, CONF_STR, C(egress_bridge), 0, 0),
	CONF_PARSED("host_extra", NULL, parse_host_extra,
	    "addresses or CIDRs of this host on no interface, comma-separated"),
};

static const struct conf_key links_keys[] = {
	V("public_url", "VIVARIUM_PUBLIC_URL", CONF_STR, C(public_url), 0, 0),
	V("key_file", "VIVARIUM_LINK_KEY_FILE", CONF_STR, C(link_key_file),
	    0, 0),
	V("download_lifetime", NULL, CONF_DURATION, C(download_lifetime), 60,
	    YEAR),
	V("upload_lifetime", NULL, CONF_DURATION, C(upload_lifetime), 60,
	    YEAR),
	V("max_lifetime", NULL, CONF_DURATION, C(link_max_lifetime), 60, YEAR),
	V("upload_max", NULL, CONF_SIZE, C(upload_max), 1024, 1LL << 40),
	V("max_transfers", NULL, CONF_LONG, C(link_max_transfers), 1, 65536),
	V("max_transfers_per_address", NULL, CONF_LONG,
	    C(link_max_per_address), 1, 65536),
	V("max_transfers_per_link", NULL, CONF_LONG, C(link_max_per_link), 1,
	    65536),
	V("min_rate", NULL, CONF_SIZE, C(link_min_rate), 0, 1LL << 30),
	V("rate_grace", NULL, CONF_DURATION, C(link_rate_grace), 5, 3600),
};

#define K(f)		offsetof(struct conf, kube.f)
#define DNS_NAME	"a DNS name: lowercase letters, digits, '-' and '.'"

static const struct conf_key kube_keys[] = {
	V("kubeconfig", "VIVARIUM_KUBECONFIG", CONF_STR, K(kubeconfig), 0, 0),
	CONF_PARSED("namespace", "VIVARIUM_KUBE_NAMESPACE",
	    parse_kube_namespace, "a namespace's name: at most 63 lowercase "
	    "letters, digits and '-'"),
	V("image", NULL, CONF_STR, K(image), 0, 0),
	CONF_PARSED("runtime_class", NULL, parse_runtime_class, DNS_NAME),
	CONF_PARSED("storage_class", NULL, parse_storage_class, DNS_NAME),
	V("agent_port", NULL, CONF_LONG, K(agent_port), 1, 65535),
	/* Below 2^31 with room for many slots: runAsUser is an int64 but
	 * the API server takes at most 2^31-1 (a kernel's ids are 32 bits). */
	V("uid_base", NULL, CONF_LONG, K(uid_base), 1000, KUBE_UID_BASE_MAX),
	CONF_PARSED("user_namespace", NULL, parse_user_namespace,
	    "one of auto, true or false"),
	V("ephemeral_storage", NULL, CONF_SIZE, K(ephemeral_storage),
	    16LL << 20, 1LL << 44),
	CONF_PARSED("egress_proxy", NULL, parse_kube_egress,
	    "the egress proxy's Service as name:port (e.g. vivarium-egress:3128)"),
	CONF_PARSED("egress_selector", NULL, parse_egress_selector,
	    "a label selector key=value[,key=value] (e.g. "
	    "app.kubernetes.io/name=vivarium-egress)"),
	CONF_PARSED("supervisor_selector", NULL, parse_supervisor_selector,
	    "a label selector key=value[,key=value] (e.g. "
	    "app.kubernetes.io/name=vivarium-supervisor)"),
};

/* Every setting: its YAML key, its variable, where it goes, its range. */
static const struct conf_key conf_keys[] = {
	CONF_PARSED("listen", "VIVARIUM_SUPERVISOR_LISTEN", parse_listen,
	    "host:port with an address (e.g. 127.0.0.1:8787)"),
	V("token", "VIVARIUM_SUPERVISOR_TOKEN", CONF_STR, C(token), 0, 0),
	CONF_NODE_FN("token_file", node_token_file),
	V("user_header", NULL, CONF_STR, C(user_header), 0, 0),
	V("user_name_header", NULL, CONF_STR, C(user_name_header), 0, 0),
	CONF_NODE_FN("allowed_origins", node_origins),
	CONF_PARSED("backend", NULL, parse_backend, "podman or kubernetes"),
	CONF_SECTION_OF("podman", 0, podman_keys),
	CONF_SECTION_OF("kubernetes", 0, kube_keys),
	V("state_dir", "VIVARIUM_STATE_DIR", CONF_STR, C(state_dir), 0, 0),
	V("image", "VIVARIUM_SANDBOX_IMAGE", CONF_STR, C(image), 0, 0),
	CONF_PARSED("provisioning", "VIVARIUM_PROVISIONING", parse_prov,
	    "one of auto, allowlist or manual"),
	V("idle_stop_after", "VIVARIUM_IDLE_STOP_AFTER", CONF_DURATION,
	    C(idle_stop_after), 0, YEAR),
	V("ready_timeout", NULL, CONF_DURATION, C(ready_timeout), 1, 600),
	V("agent_timeout", NULL, CONF_DURATION, C(agent_timeout), 1, DAY),
	V("max_body", NULL, CONF_SIZE, C(max_body), 1024, 1LL << 30),
	V("max_response", NULL, CONF_SIZE, C(max_response), 1024, 1LL << 32),
	V("max_connections", NULL, CONF_LONG, C(max_connections), 4, 65536),
	V("max_connections_per_address", NULL, CONF_LONG, C(max_per_address),
	    1, 65536),
	V("auth_timeout", NULL, CONF_DURATION, C(auth_timeout), 1, 600),
	CONF_SECTION_OF("limits", C(limits), limit_keys),
	CONF_SECTION_OF("sandbox", 0, sandbox_keys),
	CONF_NODE_FN("users", node_users),
	CONF_SECTION_OF("egress", 0, egress_keys),
	CONF_SECTION_OF("links", 0, links_keys),
};

/* ---------------------------------------------------------------- nodes */

static void
node_users(void *base, const struct ynode *map, struct confdiag *d)
{
	struct conf		*c = base;
	const struct ynode	*n;
	struct user_conf	*u;
	size_t			 count = 0;
	char			 where[128];

	if (map->type == YNODE_SEQ) {
		/* A plain list of ids: the allowlist without overrides. */
		for (n = map->child; n != NULL; n = n->next)
			count++;
	} else if (is_map(d, map)) {
		for (n = map->child; n != NULL; n = n->next)
			count++;
	} else
		return;
	if ((c->users = calloc(count ? count : 1, sizeof(*c->users))) == NULL) {
		confdiag_add(d, map->line, "out of memory");
		return;
	}
	for (n = map->child; n != NULL; n = n->next) {
		const char *id = map->type == YNODE_SEQ ? n->value : n->key;

		if (map->type == YNODE_SEQ && n->type != YNODE_SCALAR) {
			confdiag_add(d, n->line, "users: each entry must be a "
			    "user id");
			continue;
		}
		if (user_id_valid(id, strlen(id)) == -1) {
			confdiag_add(d, n->line, "users: \"%s\" is not a valid "
			    "user id: %s", id, user_id_rule);
			continue;
		}
		u = &c->users[c->nusers++];
		snprintf(u->id, sizeof(u->id), "%s", id);
		u->limits = c->limits;	/* defaults; see conf_load's fixup */
		u->limits.memory = 0;
		u->limits.cpus_milli = 0;
		u->limits.pids = 0;
		u->limits.workspace = 0;
		if (map->type == YNODE_SEQ)
			continue;
		if (n->type == YNODE_SCALAR && n->value[0] == '\0')
			continue;	/* "alice:" with nothing after it */
		if (n->type != YNODE_MAP) {
			confdiag_add(d, n->line, "users: %s: expected limits "
			    "(memory, cpus, pids, workspace) or nothing", id);
			continue;
		}
		snprintf(where, sizeof(where), "users.%s", id);
		config_section(CONF_KEYS(limit_keys), &u->limits, n, where, d);
	}
}

static void
node_env(void *base, const struct ynode *map, struct confdiag *d)
{
	struct conf		*c = base;
	const struct ynode	*n;
	size_t			 count = 0;

	if (!is_map(d, map))
		return;
	for (n = map->child; n != NULL; n = n->next)
		count++;
	if ((c->env = calloc(count ? count : 1, sizeof(*c->env))) == NULL) {
		confdiag_add(d, map->line, "out of memory");
		return;
	}
	for (n = map->child; n != NULL; n = n->next) {
		const char *p;

		if (n->type != YNODE_SCALAR) {
			confdiag_add(d, n->line, "env: %s: expected a value",
			    n->key);
			continue;
		}
		for (p = n->key; *p != '\0'; p++)
			if (!(isalnum((unsigned char)*p) || *p == '_'))
				break;
		if (*p != '\0' || n->key[0] == '\0'
		    || isdigit((unsigned char)n->key[0])) {
			confdiag_add(d, n->line, "env: \"%s\" is not a variable "
			    "name (letters, digits, _)", n->key);
			continue;
		}
		c->env[c->nenv].key = xstrdup(n->key);
		c->env[c->nenv].value = xstrdup(n->value);
		c->nenv++;
	}
}

static void
node_origins(void *base, const struct ynode *n, struct confdiag *d)
{
	struct conf		*c = base;
	struct buf		 b = BUF_INIT(64 * 1024);
	const struct ynode	*e;
	char			 err[256];

	if (n->type == YNODE_SCALAR) {
		set_str(&c->origins, n->value);
	} else if (n->type == YNODE_SEQ) {
		for (e = n->child; e != NULL; e = e->next) {
			if (e->type != YNODE_SCALAR) {
				confdiag_add(d, e->line, "allowed_origins: each "
				    "entry must be an origin");
				continue;
			}
			if (b.len > 0)
				(void)buf_append(&b, ",", 1);
			(void)buf_appends(&b, e->value);
		}
		set_str(&c->origins, buf_str(&b));
		buf_release(&b);
	} else {
		confdiag_add(d, n->line, "allowed_origins: expected a list");
		return;
	}
	if (origins_check(c->origins, err, sizeof(err)) == -1)
		confdiag_add(d, n->line, "allowed_origins: %s", err);
}

static void
node_token_file(void *base, const struct ynode *n, struct confdiag *d)
{
	struct conf	*c = base;
	FILE		*f;
	char		 line[1024];
	size_t		 len;

	if (n->type != YNODE_SCALAR) {
		confdiag_add(d, n->line, "token_file: expected a path");
		return;
	}
	if ((f = fopen(n->value, "r")) == NULL) {
		confdiag_add(d, n->line, "token_file: cannot open %s: %s",
		    n->value, strerror(errno));
		return;
	}
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	fclose(f);
	len = strcspn(line, "\r\n");
	line[len] = '\0';
	if (len == 0) {
		confdiag_add(d, n->line, "token_file: %s is empty", n->value);
		return;
	}
	set_str(&c->token, line);
	set_str(&c->token_file, n->value);
}

/* ---------------------------------------------------------------- load */

#define SA_NAMESPACE	"/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/*
 * What only the kubernetes backend needs: its namespace (the in-cluster
 * one, where the supervisor's own Pod runs, else "default").
 */
static void
kube_conf_check(struct conf *c, struct confdiag *d)
{
	FILE	*f;
	char	 line[128];

	if (c->kube.namespace == NULL && (f = fopen(SA_NAMESPACE, "r"))
	    != NULL) {
		if (fgets(line, sizeof(line), f) != NULL) {
			line[strcspn(line, "\r\n")] = '\0';
			if (parse_kube_namespace(c, line) == -1)
				confdiag_add(d, 0, "kubernetes: the namespace in "
				    "%s, \"%s\", is not a namespace's name",
				    SA_NAMESPACE, line);
		}
		fclose(f);
	}
	if (c->kube.namespace == NULL)
		c->kube.namespace = xstrdup("default");
}

int
conf_load(struct conf *c, const char *path, struct confdiag *d)
{
	size_t		 i;

	conf_defaults(c);
	if (path != NULL)
		c->path = xstrdup(path);
	config_load(CONF_KEYS(conf_keys), c, path, d);

	/* Overrides left at 0 take the defaults. */
	for (i = 0; i < c->nusers; i++) {
		struct limits *l = &c->users[i].limits;
		if (l->memory == 0)
			l->memory = c->limits.memory;
		if (l->cpus_milli == 0)
			l->cpus_milli = c->limits.cpus_milli;
		if (l->pids == 0)
			l->pids = c->limits.pids;
		if (l->workspace == 0)
			l->workspace = c->limits.workspace;
	}
	if (c->token == NULL || c->token[0] == '\0')
		confdiag_add(d, 0, "no token: set token or token_file in the "
		    "config file, or VIVARIUM_SUPERVISOR_TOKEN");
	else if (strlen(c->token) < 16)
		confdiag_add(d, 0, "the token is too short (%zu characters): use "
		    "at least 16, e.g. from `openssl rand -hex 32`",
		    strlen(c->token));
	if (c->state_dir[0] != '/')
		confdiag_add(d, 0, "state_dir: \"%s\" must be an absolute path",
		    c->state_dir);
	if (c->uid_base != 0 && !sandbox_user_in_range(c->sandbox_user))
		confdiag_add(d, 0, "sandbox: user \"%s\" must be numeric "
		    "uid:gid below %d when uid_base gives each sandbox a user "
		    "namespace (or set uid_base: 0)", c->sandbox_user,
		    UID_RANGE);
	/* Sized buffers hold <state_dir>/<user>/agent.sock. */
	if (strlen(c->state_dir) > STATE_DIR_MAX)
		confdiag_add(d, 0, "state_dir: \"%s\" is too long (at most %d "
		    "characters)", c->state_dir, STATE_DIR_MAX);
	if (c->public_url != NULL) {
		size_t n;

		if (strncmp(c->public_url, "http://", 7) != 0 &&
		    strncmp(c->public_url, "https://", 8) != 0)
			confdiag_add(d, 0, "links: public_url \"%s\": expected "
			    "the address people's browsers use, http://host:port "
			    "or https://... (a reverse proxy in front)",
			    c->public_url);
		while ((n = strlen(c->public_url)) > 0 &&
		    c->public_url[n - 1] == '/')
			c->public_url[n - 1] = '\0';
	} else {
		char url[300];

		snprintf(url, sizeof(url), strchr(c->listen_host, ':') ?
		    "http://[%s]:%d" : "http://%s:%d",
		    strcmp(c->listen_host, "0.0.0.0") == 0 ? "127.0.0.1" :
		    c->listen_host, c->listen_port);
		c->public_url = xstrdup(url);
	}
	if (c->link_key_file == NULL) {
		char kf[STATE_DIR_MAX + 32];

		/* Not a user id: those have no '.', so no sandbox gets it. */
		snprintf(kf, sizeof(kf), "%s/link.key", c->state_dir);
		c->link_key_file = xstrdup(kf);
	}
	if (c->download_lifetime > c->link_max_lifetime ||
	    c->upload_lifetime > c->link_max_lifetime)
		confdiag_add(d, 0, "links: download_lifetime and upload_lifetime "
		    "may not be longer than max_lifetime");
	/* Link traffic alone must never fill the daemon (docs/supervisor.md,
	 * "Link traffic"). */
	if (c->link_max_transfers > c->max_connections - 32)
		confdiag_add(d, 0, "links: max_transfers (%ld) must leave room "
		    "for /mcp and /health: at most max_connections - 32 (%ld)",
		    c->link_max_transfers, c->max_connections - 32);
	if (c->link_max_per_address >= c->max_per_address)
		confdiag_add(d, 0, "links: max_transfers_per_address (%ld) must "
		    "be below max_connections_per_address (%ld), so an address "
		    "that holds links (a reverse proxy) still reaches /mcp",
		    c->link_max_per_address, c->max_per_address);
	/* Not given: a minute, and always past a sandbox's start. */
	if (c->link_rate_grace == 0)
		c->link_rate_grace = c->ready_timeout + 30 > 60 ?
		    c->ready_timeout + 30 : 60;
	if (c->link_min_rate > 0 && c->link_rate_grace <= c->ready_timeout)
		confdiag_add(d, 0, "links: rate_grace (%lds) must be longer than "
		    "ready_timeout (%lds): a download's first window includes "
		    "starting the sandbox", c->link_rate_grace,
		    c->ready_timeout);
	if (c->kube.egress_host == NULL
	    && parse_kube_egress(c, c->kube.egress_proxy) == -1)
		confdiag_add(d, 0, "kubernetes: egress_proxy \"%s\" is not "
		    "name:port", c->kube.egress_proxy);
	if (c->backend == BACKEND_KUBERNETES)
		kube_conf_check(c, d);
	if (c->egress_manage) {
		if (c->egress_container == NULL)
			c->egress_container = xstrdup("vivarium-egress");
		if (strlen(c->egress_bridge) > 15)
			confdiag_add(d, 0, "egress: bridge \"%s\" is longer than "
			    "15 characters (a network interface's name)",
			    c->egress_bridge);
		if (c->egress_config != NULL && c->egress_config[0] != '/')
			confdiag_add(d, 0, "egress: config \"%s\" must be an "
			    "absolute path", c->egress_config);
		if (c->backend == BACKEND_KUBERNETES)
			confdiag_add(d, 0, "egress: manage is for the Podman "
			    "backend; on Kubernetes the proxy is a Deployment "
			    "(deploy/kubernetes/)");
	}
	if (c->provisioning == PROV_ALLOWLIST && c->nusers == 0)
		confdiag_add(d, 0, "provisioning is allowlist but no users are "
		    "listed under users:");
	return d->count > 0 ? -1 : 0;
}

const char *
conf_default_path(char *dst, size_t len)
{
	const char	*xdg, *home;
	int		 r;

	if (access("/etc/vivarium/supervisor.yaml", F_OK) == 0) {
		snprintf(dst, len, "/etc/vivarium/supervisor.yaml");
		return dst;
	}
	if (geteuid() == 0)
		return NULL;
	if ((xdg = getenv("XDG_CONFIG_HOME")) != NULL && xdg[0] == '/')
		r = snprintf(dst, len, "%s/vivarium/supervisor.yaml", xdg);
	else if ((home = getenv("HOME")) != NULL && home[0] == '/')
		r = snprintf(dst, len, "%s/.config/vivarium/supervisor.yaml",
		    home);
	else
		return NULL;
	if (r < 0 || (size_t)r >= len || access(dst, F_OK) == -1)
		return NULL;
	return dst;
}

int
conf_link_keys(struct conf *c, char *err, size_t errlen)
{
	/* The default key lives in state_dir, which may not exist yet. */
	(void)mkdir(c->state_dir, 0700);
	return link_keys_load(&c->link_keys, c->link_key_file, err, errlen);
}

long
reaper_tick(const struct conf *c)
{
	long	 tick = c->idle_stop_after / 10;

	if (tick < 1)
		tick = 1;
	return tick > 30 ? 30 : tick;
}

const struct limits *
conf_limits(const struct conf *c, const char *user)
{
	size_t	 i;

	for (i = 0; i < c->nusers; i++)
		if (strcmp(c->users[i].id, user) == 0)
			return &c->users[i].limits;
	return &c->limits;
}

int
conf_user_listed(const struct conf *c, const char *user)
{
	size_t	 i;

	for (i = 0; i < c->nusers; i++)
		if (strcmp(c->users[i].id, user) == 0)
			return 1;
	return 0;
}
