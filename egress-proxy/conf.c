/*
 * conf.c: vivarium-egress settings: defaults, then the YAML file, then
 * VIVARIUM_EGRESS_* variables.  Every problem is collected and reported in
 * one run.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <sched.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "banned.h"

/* CPUs this process may run on (taskset, cgroup cpusets), not the
 * machine's: a proxy pinned to one core runs one loop. */
static long
usable_cpus(void)
{
	cpu_set_t	 set;
	long		 n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
	    (n = CPU_COUNT(&set)) > 0)
		return n;
	return sysconf(_SC_NPROCESSORS_ONLN);
}

void
conf_defaults(struct egress_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->ports[0] = 80;
	c->ports[1] = 443;
	c->nports = 2;
	c->header_timeout = 10;
	c->connect_timeout = 10;
	c->idle_timeout = 300;
	c->max_conns = 4096;
	c->max_per_client = 256;
	c->max_header_bytes = 16384;
	c->resolver_threads = 4;
	c->workers = usable_cpus() > 1 ? 2 : 1;
}

static void
listen_release(struct egress_conf *c)
{
	int	 i;

	for (i = 0; i < c->nlisten; i++)
		free(c->listen[i]);
	c->nlisten = 0;
}

void
conf_release(struct egress_conf *c)
{
	listen_release(c);
	free(c->host_addresses);
	c->host_addresses = NULL;
}

static int
set_host_addresses(struct egress_conf *c, const char *path)
{
	char	*p;

	if (path[0] != '/' || (p = strdup(path)) == NULL)
		return -1;
	free(c->host_addresses);
	c->host_addresses = p;
	return 0;
}

int
cidr_parse(const char *s, struct cidr *out)
{
	char		 a[INET6_ADDRSTRLEN + 1];
	const char	*slash = strchr(s, '/');
	size_t		 n = slash != NULL ? (size_t)(slash - s) : strlen(s);
	long		 plen;
	int		 max, i;

	memset(out, 0, sizeof(*out));
	if (n == 0 || n >= sizeof(a))
		return -1;
	memcpy(a, s, n);
	a[n] = '\0';
	if (inet_pton(AF_INET, a, out->addr) == 1) {
		out->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, a, out->addr) == 1) {
		out->family = AF_INET6;
		max = 128;
	} else
		return -1;
	plen = max;
	if (slash != NULL && config_parse_long(slash + 1, 0, max, &plen) == -1)
		return -1;
	out->plen = (int)plen;
	/* Host bits must be zero: "10.1.2.3/8" is probably a mistake. */
	for (i = 0; i < max; i++)
		if (i >= plen && (out->addr[i / 8] & (0x80 >> (i % 8))))
			return -1;
	return 0;
}

/* Splits a comma-separated list, calling fn on each trimmed item. */
static int
each_item(const char *list, int (*fn)(const char *, void *), void *arg)
{
	char		 item[128];
	const char	*p = list, *e;
	size_t		 n;
	int		 rc = 0;

	while (*p != '\0') {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		for (e = p; *e != '\0' && *e != ','; e++)
			;
		n = (size_t)(e - p);
		while (n > 0 && p[n - 1] == ' ')
			n--;
		if (n >= sizeof(item))
			return -1;
		memcpy(item, p, n);
		item[n] = '\0';
		if (fn(item, arg) == -1)
			rc = -1;
		p = e;
	}
	return rc;
}

static int
add_port(const char *s, void *arg)
{
	struct egress_conf *c = arg;
	long		 v;

	if (config_parse_long(s, 1, 65535, &v) == -1 ||
	    c->nports == EGRESS_MAX_PORTS)
		return -1;
	c->ports[c->nports++] = (uint16_t)v;
	return 0;
}

int
conf_parse_ports(const char *s, struct egress_conf *c)
{
	c->nports = 0;
	if (each_item(s, add_port, c) == -1 || c->nports == 0)
		return -1;
	return 0;
}

static int
add_cidr(const char *s, void *arg)
{
	struct egress_conf *c = arg;

	if (c->nallow == EGRESS_MAX_ALLOW ||
	    cidr_parse(s, &c->allow[c->nallow]) == -1)
		return -1;
	c->nallow++;
	return 0;
}

static int
add_listen(const char *s, void *arg)
{
	struct egress_conf *c = arg;

	if (c->nlisten == EGRESS_MAX_LISTEN || strchr(s, ':') == NULL)
		return -1;
	if ((c->listen[c->nlisten] = strdup(s)) == NULL)
		return -1;
	c->nlisten++;
	return 0;
}

/* ------------------------------------------------------------ YAML */

/* A scalar or a sequence of scalars, each handed to fn. */
static void
yaml_list(const struct ynode *n, const char *what,
    int (*fn)(const char *, void *), struct egress_conf *c,
    struct confdiag *d)
{
	const struct ynode *e;

	if (n->type == YNODE_SCALAR) {
		if (fn(n->value, c) == -1)
			confdiag_add(d, n->line, "%s: bad value '%s'", what,
			    n->value);
		return;
	}
	if (n->type != YNODE_SEQ) {
		confdiag_add(d, n->line, "%s: expected a list", what);
		return;
	}
	for (e = n->child; e != NULL; e = e->next) {
		if (e->type != YNODE_SCALAR)
			confdiag_add(d, e->line, "%s: expected a scalar", what);
		else if (fn(e->value, c) == -1)
			confdiag_add(d, e->line, "%s: bad value '%s'", what,
			    e->value);
	}
}

static void
yaml_long(const struct ynode *n, const char *what, long min, long max,
    long *out, struct confdiag *d)
{
	if (n->type != YNODE_SCALAR ||
	    config_parse_long(n->value, min, max, out) == -1)
		confdiag_add(d, n->line, "%s: expected a whole number from "
		    "%ld to %ld", what, min, max);
}

struct key {
	const char	*name;
	long		 min, max;
	size_t		 off;
};

#define K(n, lo, hi, f) { n, lo, hi, offsetof(struct egress_conf, f) }

static const struct key timeout_keys[] = {
	K("header", 1, 3600, header_timeout),
	K("connect", 1, 600, connect_timeout),
	K("idle", 1, 86400, idle_timeout),
};
static const struct key limit_keys[] = {
	K("connections", 1, 1000000, max_conns),
	K("per_client", 1, 1000000, max_per_client),
	K("header_bytes", 1024, 1048576, max_header_bytes),
};

static void
yaml_map(const struct ynode *map, const char *section,
    const struct key *keys, size_t nkeys, struct egress_conf *c,
    struct confdiag *d)
{
	const struct ynode *e;
	char		 what[64];
	size_t		 i;

	if (map->type != YNODE_MAP) {
		confdiag_add(d, map->line, "%s: expected a mapping", section);
		return;
	}
	for (e = map->child; e != NULL; e = e->next) {
		for (i = 0; i < nkeys; i++)
			if (strcmp(e->key, keys[i].name) == 0)
				break;
		snprintf(what, sizeof(what), "%s.%s", section, e->key);
		if (i == nkeys) {
			confdiag_add(d, e->line, "unknown key '%s'", what);
			continue;
		}
		yaml_long(e, what, keys[i].min, keys[i].max,
		    (long *)(void *)((char *)c + keys[i].off), d);
	}
}

static void
conf_yaml(struct egress_conf *c, const struct ynode *root, struct confdiag *d)
{
	const struct ynode *e;
	int		 b;

	if (root->type != YNODE_MAP) {
		confdiag_add(d, root->line, "expected a mapping at the top");
		return;
	}
	for (e = root->child; e != NULL; e = e->next) {
		if (strcmp(e->key, "listen") == 0)
			yaml_list(e, "listen", add_listen, c, d);
		else if (strcmp(e->key, "allow_ports") == 0) {
			c->nports = 0;
			yaml_list(e, "allow_ports", add_port, c, d);
		} else if (strcmp(e->key, "allow_cidrs") == 0)
			yaml_list(e, "allow_cidrs", add_cidr, c, d);
		else if (strcmp(e->key, "host_addresses") == 0) {
			if (e->type != YNODE_SCALAR ||
			    set_host_addresses(c, e->value) == -1)
				confdiag_add(d, e->line, "host_addresses: "
				    "expected an absolute path");
		} else if (strcmp(e->key, "timeouts") == 0)
			yaml_map(e, "timeouts", timeout_keys, 3, c, d);
		else if (strcmp(e->key, "limits") == 0)
			yaml_map(e, "limits", limit_keys, 3, c, d);
		else if (strcmp(e->key, "resolver_threads") == 0)
			yaml_long(e, "resolver_threads", 1, 64,
			    &c->resolver_threads, d);
		else if (strcmp(e->key, "workers") == 0)
			yaml_long(e, "workers", 1, 64, &c->workers, d);
		else if (strcmp(e->key, "verbose") == 0) {
			if (e->type != YNODE_SCALAR ||
			    config_parse_bool(e->value, &b) == -1)
				confdiag_add(d, e->line,
				    "verbose: expected yes or no");
			else
				c->verbose = b;
		} else
			confdiag_add(d, e->line, "unknown key '%s'", e->key);
	}
}

/* ------------------------------------------------------------ environment */

static void
env_list(const char *name, int (*fn)(const char *, void *),
    struct egress_conf *c, int *count, struct confdiag *d)
{
	const char	*v = config_env_str(name, NULL);

	if (v == NULL)
		return;
	*count = 0;	/* the variable replaces the file's list */
	if (each_item(v, fn, c) == -1)
		confdiag_add(d, 0, "%s: bad value '%s'", name, v);
}

int
conf_load(struct egress_conf *c, const char *path, struct confdiag *d)
{
	struct confdiag	 envd, *env = &envd;
	struct ynode	*root;
	const char	*v;
	int		 i;

	if (path != NULL) {
		if ((root = yconf_load(path, d)) != NULL) {
			conf_yaml(c, root, d);
			yconf_free(root);
		}
	}

	/* Variables are named in their own messages, without the file. */
	confdiag_init(env, NULL);
	if (config_env_str("VIVARIUM_EGRESS_LISTEN", NULL) != NULL)
		listen_release(c);
	env_list("VIVARIUM_EGRESS_LISTEN", add_listen, c, &i, env);
	env_list("VIVARIUM_EGRESS_PORTS", add_port, c, &c->nports, env);
	env_list("VIVARIUM_EGRESS_ALLOW_CIDRS", add_cidr, c, &c->nallow, env);
	if ((v = config_env_str("VIVARIUM_EGRESS_HOST_ADDRESSES", NULL)) != NULL &&
	    set_host_addresses(c, v) == -1)
		confdiag_add(env, 0, "VIVARIUM_EGRESS_HOST_ADDRESSES: expected "
		    "an absolute path, not '%s'", v);
	config_env_long(env, "VIVARIUM_EGRESS_HEADER_TIMEOUT",
	    c->header_timeout, 1, 3600, &c->header_timeout);
	config_env_long(env, "VIVARIUM_EGRESS_CONNECT_TIMEOUT",
	    c->connect_timeout, 1, 600, &c->connect_timeout);
	config_env_long(env, "VIVARIUM_EGRESS_IDLE_TIMEOUT",
	    c->idle_timeout, 1, 86400, &c->idle_timeout);
	config_env_long(env, "VIVARIUM_EGRESS_MAX_CONNECTIONS",
	    c->max_conns, 1, 1000000, &c->max_conns);
	config_env_long(env, "VIVARIUM_EGRESS_MAX_PER_CLIENT",
	    c->max_per_client, 1, 1000000, &c->max_per_client);
	config_env_long(env, "VIVARIUM_EGRESS_MAX_HEADER_BYTES",
	    c->max_header_bytes, 1024, 1048576, &c->max_header_bytes);
	config_env_long(env, "VIVARIUM_EGRESS_RESOLVER_THREADS",
	    c->resolver_threads, 1, 64, &c->resolver_threads);
	config_env_long(env, "VIVARIUM_EGRESS_WORKERS", c->workers, 1, 64,
	    &c->workers);
	config_env_bool(env, "VIVARIUM_EGRESS_VERBOSE", c->verbose,
	    &c->verbose);
	if (env->count > 0) {
		(void)buf_appends(&d->text, buf_str(&env->text));
		d->count += env->count;
	}
	confdiag_release(env);

	if (c->nlisten == 0)
		add_listen("0.0.0.0:3128", c);
	if (c->nports == 0)
		confdiag_add(d, 0, "allow_ports: at least one port is needed");
	return d->count > 0 ? -1 : 0;
}
