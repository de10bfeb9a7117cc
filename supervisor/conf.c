/*
 * conf.c: the supervisor's configuration: built-in defaults, then the YAML
 * file, then environment overrides.  Every problem is collected so that one
 * run reports all of them as "file:line: message".
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "http.h"
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

/* "host:port", "[v6]:port" or ":port". */
static int
parse_listen(const char *s, char **host, int *port)
{
	const char	*colon;
	char		 h[256];
	long		 p;
	size_t		 hl;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (end == NULL || end[1] != ':')
			return -1;
		hl = (size_t)(end - s - 1);
		if (hl == 0 || hl >= sizeof(h))
			return -1;
		memcpy(h, s + 1, hl);
		colon = end + 1;
	} else {
		if ((colon = strrchr(s, ':')) == NULL)
			return -1;
		hl = (size_t)(colon - s);
		if (hl >= sizeof(h))
			return -1;
		memcpy(h, s, hl);
	}
	h[hl] = '\0';
	if (config_parse_long(colon + 1, 1, 65535, &p) == -1)
		return -1;
	set_str(host, hl == 0 ? "0.0.0.0" : h);
	*port = (int)p;
	return 0;
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
	c->egress_port = 3128;
	c->max_connections = 1024;
	c->max_per_address = 256;
	c->auth_timeout = 10;
	c->download_lifetime = 86400;
	c->upload_lifetime = 3600;
	c->link_max_lifetime = 7 * 86400;
	c->upload_max = 2ULL << 30;
}

void
conf_release(struct conf *c)
{
	size_t	 i;

	free(c->path);
	free(c->listen_host);
	free(c->token);
	free(c->user_header);
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
	free(c->public_url);
	free(c->link_key_file);
	/* Wipes the link key with the rest. */
	memset(c, 0, sizeof(*c));
}

/* ---------------------------------------------------------------- YAML */

/* The scalar value of n, or NULL with a diagnostic. */
static const char *
scalar(struct confdiag *d, const struct ynode *n)
{
	if (n->type != YNODE_SCALAR) {
		confdiag_add(d, n->line, "%s: expected a single value, not %s",
		    n->key, yconf_type_name(n->type));
		return NULL;
	}
	return n->value;
}

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

static void
y_str(struct confdiag *d, const struct ynode *n, char **dst, int allow_empty)
{
	const char	*v;

	if ((v = scalar(d, n)) == NULL)
		return;
	if (!allow_empty && *v == '\0') {
		confdiag_add(d, n->line, "%s: must not be empty", n->key);
		return;
	}
	set_str(dst, v);
}

static void
y_duration(struct confdiag *d, const struct ynode *n, long min, long max,
    long *dst)
{
	const char	*v;
	long		 x;

	if ((v = scalar(d, n)) == NULL)
		return;
	if (config_parse_duration(v, max, &x) == -1 || x < min)
		confdiag_add(d, n->line, "%s: \"%s\" is not a duration from %lds "
		    "to %lds (write e.g. 30s, 15m, 2h, or plain seconds)", n->key,
		    v, min, max);
	else
		*dst = x;
}

static void
y_size(struct confdiag *d, const struct ynode *n, unsigned long long min,
    unsigned long long max, unsigned long long *dst)
{
	const char		*v;
	unsigned long long	 x;

	if ((v = scalar(d, n)) == NULL)
		return;
	if (config_parse_size(v, max, &x) == -1 || x < min)
		confdiag_add(d, n->line, "%s: \"%s\" is not a size from %llu to "
		    "%llu bytes (write e.g. 512m, 2g)", n->key, v, min, max);
	else
		*dst = x;
}

static void
y_long(struct confdiag *d, const struct ynode *n, long min, long max,
    long *dst)
{
	const char	*v;
	long		 x;

	if ((v = scalar(d, n)) == NULL)
		return;
	if (config_parse_long(v, min, max, &x) == -1)
		confdiag_add(d, n->line, "%s: \"%s\" is not a whole number from "
		    "%ld to %ld", n->key, v, min, max);
	else
		*dst = x;
}

static void
unknown(struct confdiag *d, const struct ynode *n, const char *where,
    const char *known)
{
	confdiag_add(d, n->line, "unknown key \"%s\"%s%s (known: %s)", n->key,
	    where ? " in " : "", where ? where : "", known);
}

/* "uid:gid", both inside one sandbox's namespace of UID_RANGE ids. */
static int
sandbox_user_in_range(const char *user)
{
	unsigned int	 uid, gid;
	char		 extra;

	return sscanf(user, "%u:%u%c", &uid, &gid, &extra) == 2
	    && uid < UID_RANGE && gid < UID_RANGE;
}

static void
y_limits(struct confdiag *d, const struct ynode *map, struct limits *l)
{
	const struct ynode	*n;
	const char		*v;

	for (n = map->child; n != NULL; n = n->next) {
		if (strcmp(n->key, "memory") == 0)
			y_size(d, n, 16ULL << 20, 1ULL << 50, &l->memory);
		else if (strcmp(n->key, "cpus") == 0) {
			if ((v = scalar(d, n)) != NULL
			    && parse_cpus(v, &l->cpus_milli) == -1)
				confdiag_add(d, n->line, "cpus: \"%s\" is not a "
				    "number of CPUs from 0.01 to 1024 (e.g. 2 "
				    "or 0.5)", v);
		} else if (strcmp(n->key, "pids") == 0)
			y_long(d, n, 16, 1L << 22, &l->pids);
		else if (strcmp(n->key, "workspace") == 0)
			y_size(d, n, 16ULL << 20, 1ULL << 44, &l->workspace);
		else
			unknown(d, n, map->key, "memory, cpus, pids, workspace");
	}
}

static void
y_users(struct confdiag *d, const struct ynode *map, struct conf *c)
{
	const struct ynode	*n;
	struct user_conf	*u;
	size_t			 count = 0;

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
		if (route_user_valid(id, strlen(id)) == -1) {
			confdiag_add(d, n->line, "users: \"%s\" is not a valid "
			    "user id: %s", id, route_user_rule);
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
		y_limits(d, n, &u->limits);
	}
}

static void
y_env(struct confdiag *d, const struct ynode *map, struct conf *c)
{
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
y_origins(struct confdiag *d, const struct ynode *n, struct conf *c)
{
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
	if (http_origins_check(c->origins, err, sizeof(err)) == -1)
		confdiag_add(d, n->line, "allowed_origins: %s", err);
}

static void
y_read_token_file(struct confdiag *d, const struct ynode *n, struct conf *c)
{
	FILE	*f;
	char	 line[1024];
	size_t	 len;

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
}

static void
conf_file(struct conf *c, const struct ynode *root, struct confdiag *d)
{
	const struct ynode	*n, *m;
	const char		*v;
	unsigned long long	 sz;

	if (!is_map(d, root))
		return;
	for (n = root->child; n != NULL; n = n->next) {
		const char *k = n->key;

		if (strcmp(k, "listen") == 0) {
			if ((v = scalar(d, n)) != NULL
			    && parse_listen(v, &c->listen_host,
			    &c->listen_port) == -1)
				confdiag_add(d, n->line, "listen: \"%s\" is not "
				    "host:port (e.g. 127.0.0.1:8787)", v);
		} else if (strcmp(k, "token") == 0)
			y_str(d, n, &c->token, 0);
		else if (strcmp(k, "token_file") == 0)
			y_read_token_file(d, n, c);
		else if (strcmp(k, "user_header") == 0)
			y_str(d, n, &c->user_header, 0);
		else if (strcmp(k, "allowed_origins") == 0)
			y_origins(d, n, c);
		else if (strcmp(k, "podman") == 0) {
			if (!is_map(d, n))
				continue;
			for (m = n->child; m != NULL; m = m->next) {
				if (strcmp(m->key, "socket") == 0)
					y_str(d, m, &c->podman_socket, 0);
				else if (strcmp(m->key, "timeout") == 0) {
					long t = 0;
					y_duration(d, m, 1, 3600, &t);
					if (t > 0)
						c->podman_timeout_ms = t * 1000;
				} else
					unknown(d, m, "podman", "socket, timeout");
			}
		} else if (strcmp(k, "state_dir") == 0)
			y_str(d, n, &c->state_dir, 0);
		else if (strcmp(k, "image") == 0)
			y_str(d, n, &c->image, 0);
		else if (strcmp(k, "provisioning") == 0) {
			if ((v = scalar(d, n)) != NULL
			    && parse_provisioning(v, &c->provisioning) == -1)
				confdiag_add(d, n->line, "provisioning: \"%s\": "
				    "expected auto, allowlist or manual", v);
		} else if (strcmp(k, "idle_stop_after") == 0)
			y_duration(d, n, 0, 365L * 86400, &c->idle_stop_after);
		else if (strcmp(k, "ready_timeout") == 0)
			y_duration(d, n, 1, 600, &c->ready_timeout);
		else if (strcmp(k, "agent_timeout") == 0)
			y_duration(d, n, 1, 86400, &c->agent_timeout);
		else if (strcmp(k, "max_body") == 0) {
			sz = c->max_body;
			y_size(d, n, 1024, 1ULL << 30, &sz);
			c->max_body = (size_t)sz;
		} else if (strcmp(k, "max_response") == 0) {
			sz = c->max_response;
			y_size(d, n, 1024, 1ULL << 32, &sz);
			c->max_response = (size_t)sz;
		} else if (strcmp(k, "max_connections") == 0)
			y_long(d, n, 4, 65536, &c->max_connections);
		else if (strcmp(k, "max_connections_per_address") == 0)
			y_long(d, n, 1, 65536, &c->max_per_address);
		else if (strcmp(k, "auth_timeout") == 0)
			y_duration(d, n, 1, 600, &c->auth_timeout);
		else if (strcmp(k, "limits") == 0) {
			if (is_map(d, n))
				y_limits(d, n, &c->limits);
		} else if (strcmp(k, "sandbox") == 0) {
			if (!is_map(d, n))
				continue;
			for (m = n->child; m != NULL; m = m->next) {
				if (strcmp(m->key, "user") == 0)
					y_str(d, m, &c->sandbox_user, 0);
				else if (strcmp(m->key, "tmp_size") == 0)
					y_size(d, m, 1 << 20, 1ULL << 40,
					    &c->tmp_size);
				else if (strcmp(m->key, "stop_timeout") == 0)
					y_duration(d, m, 0, 600,
					    &c->stop_timeout);
				else if (strcmp(m->key, "env") == 0)
					y_env(d, m, c);
				else if (strcmp(m->key, "uid_base") == 0)
					y_long(d, m, 0, UID_BASE_MAX,
					    &c->uid_base);
				else
					unknown(d, m, "sandbox", "user, tmp_size, "
					    "stop_timeout, env, uid_base");
			}
		} else if (strcmp(k, "users") == 0)
			y_users(d, n, c);
		else if (strcmp(k, "egress") == 0) {
			if (!is_map(d, n))
				continue;
			for (m = n->child; m != NULL; m = m->next) {
				if (strcmp(m->key, "container") == 0)
					y_str(d, m, &c->egress_container, 0);
				else if (strcmp(m->key, "port") == 0)
					y_long(d, m, 1, 65535, &c->egress_port);
				else if (strcmp(m->key, "url") == 0)
					confdiag_add(d, m->line, "egress: url is "
					    "no longer used: sandboxes have no "
					    "DNS and reach the proxy at a fixed "
					    "address on their own network; give "
					    "only its port (port: 3128, the "
					    "default)");
				else if (strcmp(m->key, "alias") == 0)
					y_str(d, m, &c->egress_alias, 0);
				else
					unknown(d, m, "egress",
					    "container, port, alias");
			}
		} else if (strcmp(k, "links") == 0) {
			if (!is_map(d, n))
				continue;
			for (m = n->child; m != NULL; m = m->next) {
				if (strcmp(m->key, "public_url") == 0)
					y_str(d, m, &c->public_url, 0);
				else if (strcmp(m->key, "key_file") == 0)
					y_str(d, m, &c->link_key_file, 0);
				else if (strcmp(m->key, "download_lifetime") == 0)
					y_duration(d, m, 60, 365L * 86400,
					    &c->download_lifetime);
				else if (strcmp(m->key, "upload_lifetime") == 0)
					y_duration(d, m, 60, 365L * 86400,
					    &c->upload_lifetime);
				else if (strcmp(m->key, "max_lifetime") == 0)
					y_duration(d, m, 60, 365L * 86400,
					    &c->link_max_lifetime);
				else if (strcmp(m->key, "upload_max") == 0)
					y_size(d, m, 1024, 1ULL << 40,
					    &c->upload_max);
				else
					unknown(d, m, "links", "public_url, "
					    "key_file, download_lifetime, "
					    "upload_lifetime, max_lifetime, "
					    "upload_max");
			}
		} else
			unknown(d, n, NULL, "listen, token, token_file, "
			    "user_header, allowed_origins, podman, state_dir, "
			    "image, provisioning, idle_stop_after, "
			    "ready_timeout, agent_timeout, max_body, "
			    "max_response, max_connections, "
			    "max_connections_per_address, auth_timeout, limits, "
			    "sandbox, users, egress, links");
	}
}

/* ---------------------------------------------------------------- env */

static void
conf_env(struct conf *c, struct confdiag *d)
{
	const char	*v;
	long		 x;

	if ((v = config_env_str("VIVARIUM_SUPERVISOR_LISTEN", NULL)) != NULL
	    && parse_listen(v, &c->listen_host, &c->listen_port) == -1)
		confdiag_add(d, 0, "VIVARIUM_SUPERVISOR_LISTEN=\"%s\": expected "
		    "host:port", v);
	if ((v = config_env_str("VIVARIUM_SUPERVISOR_TOKEN", NULL)) != NULL)
		set_str(&c->token, v);
	if ((v = config_env_str("VIVARIUM_PODMAN_SOCKET", NULL)) != NULL)
		set_str(&c->podman_socket, v);
	if ((v = config_env_str("VIVARIUM_SANDBOX_IMAGE", NULL)) != NULL)
		set_str(&c->image, v);
	if ((v = config_env_str("VIVARIUM_STATE_DIR", NULL)) != NULL)
		set_str(&c->state_dir, v);
	if ((v = config_env_str("VIVARIUM_PROVISIONING", NULL)) != NULL
	    && parse_provisioning(v, &c->provisioning) == -1)
		confdiag_add(d, 0, "VIVARIUM_PROVISIONING=\"%s\": expected auto, "
		    "allowlist or manual", v);
	if ((v = config_env_str("VIVARIUM_PUBLIC_URL", NULL)) != NULL)
		set_str(&c->public_url, v);
	if ((v = config_env_str("VIVARIUM_LINK_KEY_FILE", NULL)) != NULL)
		set_str(&c->link_key_file, v);
	if ((v = config_env_str("VIVARIUM_IDLE_STOP_AFTER", NULL)) != NULL) {
		if (config_parse_duration(v, 365L * 86400, &x) == -1)
			confdiag_add(d, 0, "VIVARIUM_IDLE_STOP_AFTER=\"%s\": "
			    "expected a duration (30s, 15m, 2h)", v);
		else
			c->idle_stop_after = x;
	}
}

/* ---------------------------------------------------------------- load */

int
conf_load(struct conf *c, const char *path, struct confdiag *d)
{
	struct confdiag	 envd;
	struct ynode	*root;
	size_t		 i;

	conf_defaults(c);
	if (path != NULL) {
		c->path = xstrdup(path);
		if ((root = yconf_load(path, d)) != NULL) {
			conf_file(c, root, d);
			yconf_free(root);
		}
	}
	confdiag_init(&envd, NULL);
	conf_env(c, &envd);
	if (envd.count > 0) {
		d->count += envd.count;
		(void)buf_append(&d->text, envd.text.data, envd.text.len);
	}
	confdiag_release(&envd);

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
