/*
 * conf.c: vivarium-egress settings: defaults, then the YAML file, then
 * VIVARIUM_EGRESS_* variables.  Every problem is collected and reported in
 * one run.  The keys are the table conf_keys (common/conftab.c reads it).
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <sched.h>

#include <limits.h>
#include <stddef.h>
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
listen_release(void *arg)
{
	struct egress_conf *c = arg;
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
	free(c->user_labels);
	c->user_labels = NULL;
}

/* An absolute path, or "none": the proxy runs without the list only when
 * told so in words (conf_load). */
static int
set_host_addresses(void *arg, const char *path)
{
	struct egress_conf *c = arg;
	char		*p = NULL;

	c->host_addresses_given = 1;
	if (strcmp(path, "none") != 0 &&
	    (path[0] != '/' || (p = strdup(path)) == NULL))
		return -1;
	free(c->host_addresses);
	c->host_addresses = p;
	c->host_addresses_none = p == NULL;
	return 0;
}

/* An absolute path: labels only name who is behind an address in the
 * log, so a file that is missing later is no error (labels.c). */
static int
set_user_labels(void *arg, const char *path)
{
	struct egress_conf *c = arg;
	char		*p;

	if (path[0] != '/' || (p = strdup(path)) == NULL)
		return -1;
	free(c->user_labels);
	c->user_labels = p;
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

static int
add_port(void *arg, const char *s)
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
	if (config_list_each(s, c, add_port) == -1 || c->nports == 0)
		return -1;
	return 0;
}

static int
add_cidr(void *arg, const char *s)
{
	struct egress_conf *c = arg;

	if (c->nallow == EGRESS_MAX_ALLOW ||
	    cidr_parse(s, &c->allow[c->nallow]) == -1)
		return -1;
	c->nallow++;
	return 0;
}

static int
add_listen(void *arg, const char *s)
{
	struct egress_conf *c = arg;
	char		 host[256];
	long		 port;

	if (c->nlisten == EGRESS_MAX_LISTEN ||
	    config_parse_hostport(s, host, sizeof(host), &port) == -1)
		return -1;
	if ((c->listen[c->nlisten] = strdup(s)) == NULL)
		return -1;
	c->nlisten++;
	return 0;
}

static void
ports_reset(void *arg)
{
	((struct egress_conf *)arg)->nports = 0;
}

static void
cidrs_reset(void *arg)
{
	((struct egress_conf *)arg)->nallow = 0;
}

/* ------------------------------------------------------------ the table */

#define E(f)	offsetof(struct egress_conf, f)
#define STR_(x)	#x
#define STR(x)	STR_(x)
#define V	CONF_VALUE
#define LIST(n, e, add, reset_fn, what) \
	{ .name = (n), .env = (e), .type = CONF_LIST, .parse = (add), \
	  .reset = (reset_fn), .desc = (what) }

static const struct conf_key timeout_keys[] = {
	V("header", "VIVARIUM_EGRESS_HEADER_TIMEOUT", CONF_LONG,
	    E(header_timeout), 1, 3600),
	V("connect", "VIVARIUM_EGRESS_CONNECT_TIMEOUT", CONF_LONG,
	    E(connect_timeout), 1, 600),
	V("idle", "VIVARIUM_EGRESS_IDLE_TIMEOUT", CONF_LONG, E(idle_timeout),
	    1, 86400),
};

static const struct conf_key limit_keys[] = {
	V("connections", "VIVARIUM_EGRESS_MAX_CONNECTIONS", CONF_LONG,
	    E(max_conns), 1, 1000000),
	V("per_client", "VIVARIUM_EGRESS_MAX_PER_CLIENT", CONF_LONG,
	    E(max_per_client), 1, 1000000),
	V("header_bytes", "VIVARIUM_EGRESS_MAX_HEADER_BYTES", CONF_LONG,
	    E(max_header_bytes), 1024, 1048576),
};

/* Every setting: its YAML key, its variable, where it goes.  The
 * variables of a list replace the file's list. */
static const struct conf_key conf_keys[] = {
	LIST("listen", "VIVARIUM_EGRESS_LISTEN", add_listen, listen_release,
	    "host:port with an address (e.g. 0.0.0.0:3128 or [::]:3128; up "
	    "to " STR(EGRESS_MAX_LISTEN) " of them)"),
	LIST("allow_ports", "VIVARIUM_EGRESS_PORTS", add_port, ports_reset,
	    "a port from 1 to 65535 (up to " STR(EGRESS_MAX_PORTS) " of them)"),
	LIST("allow_cidrs", "VIVARIUM_EGRESS_ALLOW_CIDRS", add_cidr,
	    cidrs_reset, "an address block with no host bits (e.g. "
	    "10.0.0.0/8 or fd00::/8; up to " STR(EGRESS_MAX_ALLOW) " of them)"),
	CONF_PARSED("host_addresses", "VIVARIUM_EGRESS_HOST_ADDRESSES",
	    set_host_addresses, "an absolute path or none"),
	CONF_PARSED("user_labels", "VIVARIUM_EGRESS_USER_LABELS",
	    set_user_labels, "an absolute path"),
	CONF_SECTION_OF("timeouts", 0, timeout_keys),
	CONF_SECTION_OF("limits", 0, limit_keys),
	V("resolver_threads", "VIVARIUM_EGRESS_RESOLVER_THREADS", CONF_LONG,
	    E(resolver_threads), 1, 64),
	V("workers", "VIVARIUM_EGRESS_WORKERS", CONF_LONG, E(workers), 1, 64),
	V("verbose", "VIVARIUM_EGRESS_VERBOSE", CONF_BOOL, E(verbose), 0, 0),
};

int
conf_load(struct egress_conf *c, const char *path, struct confdiag *d)
{
	config_load(CONF_KEYS(conf_keys), c, path, d);
	if (c->nlisten == 0)
		add_listen(c, "0.0.0.0:3128");
	if (c->nports == 0)
		confdiag_add(d, 0, "allow_ports: at least one port is needed");
	/* Fail closed: a proxy in a container cannot see the host's
	 * addresses, and without the list it would dial them. */
	if (!c->host_addresses_given)
		confdiag_add(d, 0, "host_addresses is not set: the proxy refuses "
		    "the host's own addresses only from that list; name a file "
		    "of them (one address or CIDR a line, written by "
		    "vivarium-egress-hosts, or by the supervisor with egress: manage), or set "
		    "host_addresses: none (VIVARIUM_EGRESS_HOST_ADDRESSES=none) "
		    "to run without one (docs/egress.md)");
	return d->count > 0 ? -1 : 0;
}
