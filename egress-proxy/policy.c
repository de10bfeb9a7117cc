/*
 * policy.c: which resolved addresses may be dialled.
 *
 * The check runs on the sockaddr that will be passed to connect(2), never
 * on a host string: getaddrinfo accepts "0x7f.1", "2130706433" and friends,
 * so only the parsed address tells the truth.  IPv4 inside IPv6 (mapped
 * ::ffff:a.b.c.d and the deprecated compatible ::a.b.c.d) is decoded and
 * checked as the IPv4 address it reaches.
 *
 * The order of the checks is the policy (policy_classify): first what no
 * configuration may open (the proxy's listeners, the host's addresses, the
 * networks the proxy is on), then the operator's allow_cidrs, then the
 * ranges that are never public.  An operator who allows 10.0.0.0/8 for a
 * service on the LAN opens the LAN, not every user's sandbox network.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <sys/stat.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "banned.h"

struct range {
	int		 family;
	uint8_t		 addr[16];
	int		 plen;
	const char	*reason;
};

#define V4(a, b, c, d)	{ a, b, c, d }

/*
 * Special-purpose ranges that are never public (IANA registries, RFC 6890
 * and its updates: RFC 9637's 3fff::/20, RFC 9602's 5f00::/16).  For IPv6
 * this list is not the rule but the reasons: only 2000::/3 is global
 * unicast (global6 below), so an IPv6 range IANA assigns tomorrow outside
 * it is refused without an entry here; the entries outside 2000::/3 only
 * name what a refused address is.
 */
static const struct range deny[] = {
	{ AF_INET, V4(0, 0, 0, 0), 8, "\"this\" network 0.0.0.0/8" },
	{ AF_INET, V4(10, 0, 0, 0), 8, "private 10.0.0.0/8" },
	{ AF_INET, V4(100, 64, 0, 0), 10, "carrier-grade NAT 100.64.0.0/10" },
	{ AF_INET, V4(127, 0, 0, 0), 8, "loopback 127.0.0.0/8" },
	{ AF_INET, V4(169, 254, 0, 0), 16, "link-local 169.254.0.0/16" },
	{ AF_INET, V4(172, 16, 0, 0), 12, "private 172.16.0.0/12" },
	{ AF_INET, V4(192, 0, 0, 0), 24, "IETF protocol assignments 192.0.0.0/24" },
	{ AF_INET, V4(192, 0, 2, 0), 24, "documentation 192.0.2.0/24" },
	{ AF_INET, V4(192, 88, 99, 0), 24, "6to4 relay anycast 192.88.99.0/24" },
	{ AF_INET, V4(192, 168, 0, 0), 16, "private 192.168.0.0/16" },
	{ AF_INET, V4(198, 18, 0, 0), 15, "benchmarking 198.18.0.0/15" },
	{ AF_INET, V4(198, 51, 100, 0), 24, "documentation 198.51.100.0/24" },
	{ AF_INET, V4(203, 0, 113, 0), 24, "documentation 203.0.113.0/24" },
	{ AF_INET, V4(224, 0, 0, 0), 4, "multicast 224.0.0.0/4" },
	{ AF_INET, V4(240, 0, 0, 0), 4, "reserved 240.0.0.0/4" },

	{ AF_INET6, { 0 }, 128, "unspecified ::/128" },
	{ AF_INET6, { [15] = 1 }, 128, "loopback ::1" },
	{ AF_INET6, { 0, 0x64, 0xff, 0x9b }, 96, "NAT64 64:ff9b::/96" },
	{ AF_INET6, { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, "NAT64 64:ff9b:1::/48" },
	{ AF_INET6, { 0x01, 0x00 }, 64, "discard-only 100::/64" },
	{ AF_INET6, { 0x20, 0x01, 0x0d, 0xb8 }, 32, "documentation 2001:db8::/32" },
	{ AF_INET6, { 0x20, 0x01 }, 23, "IETF protocol assignments 2001::/23" },
	{ AF_INET6, { 0x20, 0x02 }, 16, "6to4 2002::/16" },
	{ AF_INET6, { 0x3f, 0xff }, 20, "documentation 3fff::/20" },
	{ AF_INET6, { 0x5f, 0x00 }, 16, "SRv6 SIDs 5f00::/16" },
	{ AF_INET6, { 0xfc }, 7, "unique local fc00::/7" },
	{ AF_INET6, { 0xfe, 0x80 }, 10, "link-local fe80::/10" },
	{ AF_INET6, { 0xfe, 0xc0 }, 10, "site-local fec0::/10" },
	{ AF_INET6, { 0xff }, 8, "multicast ff00::/8" },
};

/* The only IPv6 addresses that may be public (RFC 4291 2.4, IANA's IPv6
 * address space registry): everything else is reserved, local or special. */
static const struct range global6 = {
	AF_INET6, { 0x20 }, 3, "not IPv6 global unicast 2000::/3"
};

/*
 * The proxy's own addresses: interfaces, and the listening sockets.  No
 * fixed count: a proxy run on the host sees every sandbox's veth.
 */
static struct sockaddr_storage *self;
static size_t nself;
static pthread_rwlock_t self_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct sockaddr_storage listeners[EGRESS_MAX_LISTEN];
static int nlisteners;

/*
 * The networks the proxy is on: each interface address with its prefix.
 * The supervisor connects the proxy to every user's network, so these are
 * the sandbox networks (and the proxy's way out, and a pod's network), and
 * a sandbox must reach none of them, whatever allow_cidrs says: not
 * another user's sandbox, not the host behind a bridge, not the proxy.
 * Loopback addresses are the exception (allow_opens): inside the
 * proxy's namespace they reach only the proxy itself, and they are never
 * public, so the deny list has them.  Kept under self_lock.
 */
static struct cidr *ownnets;
static size_t nownnets;

/*
 * Address changes, from the kernel (NETLINK_ROUTE): the supervisor
 * connects the proxy to a new user's network just before that user's
 * sandbox starts, and the proxy must know the network by then, not at its
 * next periodic reading.  The kernel queues the notice before the new
 * address can be used, so a classifier that finds the socket empty knows
 * its list is current (self_fresh).  -1 when not watching (the unit tests).
 */
static int nlfd = -1;
static pthread_mutex_t nl_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The host's addresses.  In a container the proxy sees its own interfaces
 * only, yet the host behind it answers on its public address too; whoever
 * starts the proxy lists the host's addresses in a file (the supervisor
 * does, from the host's interfaces), which is read at start and again
 * whenever it changes, so an address the host gains later is refused as
 * well.  Kept under self_lock.  A host with many containers has as
 * many addresses (an IPv6 link-local for each veth, one or two for each
 * network's bridge), so the list grows as needed; HOST_MAX only bounds
 * what a runaway file can cost, and past it the file is refused whole
 * (the list read last is kept) rather than read in part.
 */
#ifndef HOST_MAX		/* the unit test sets a smaller one */
#define HOST_MAX	(1 << 20)
#endif
static struct cidr *hostnets;
static size_t nhostnets;
static const char *hostfile;
static struct stat hostfile_st;		/* of the version read */

static int
prefix_match(const uint8_t *a, const uint8_t *net, int plen)
{
	int	 full = plen / 8, rest = plen % 8;

	if (memcmp(a, net, (size_t)full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	return ((a[full] ^ net[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* Address bytes of a v4 or v6 sockaddr, and their count. */
static const uint8_t *
sockaddr_bytes(const struct sockaddr *sa, size_t *n)
{
	if (sa->sa_family == AF_INET) {
		*n = 4;
		return (const uint8_t *)&((const struct sockaddr_in *)
		    (const void *)sa)->sin_addr;
	}
	if (sa->sa_family == AF_INET6) {
		*n = 16;
		return ((const struct sockaddr_in6 *)(const void *)sa)->
		    sin6_addr.s6_addr;
	}
	*n = 0;
	return NULL;
}

static const uint8_t *
sa_bytes(const struct sockaddr_storage *ss, size_t *n)
{
	return sockaddr_bytes((const struct sockaddr *)ss, n);
}

static uint16_t
sa_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static int
cidr_contains(const struct cidr *c, const struct sockaddr_storage *ss)
{
	const uint8_t	*b;
	size_t		 n;

	if (c->family != ss->ss_family || (b = sa_bytes(ss, &n)) == NULL)
		return 0;
	return prefix_match(b, c->addr, c->plen);
}

static int
same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	const uint8_t	*x, *y;
	size_t		 nx, ny;

	if (a->ss_family != b->ss_family)
		return 0;
	x = sa_bytes(a, &nx);
	y = sa_bytes(b, &ny);
	return x != NULL && y != NULL && nx == ny && memcmp(x, y, nx) == 0;
}

static int
is_unspecified(const struct sockaddr_storage *ss)
{
	const uint8_t	*b;
	size_t		 n, i;

	if ((b = sa_bytes(ss, &n)) == NULL)
		return 0;
	for (i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

/* Whether ss lies in one of a list of networks kept under self_lock (the
 * host's, the proxy's own): the list and its count by address, as a
 * reading may replace both. */
static int
in_nets(struct cidr *const *nets, const size_t *n,
    const struct sockaddr_storage *ss)
{
	size_t	 i;
	int	 found = 0;

	pthread_rwlock_rdlock(&self_lock);
	for (i = 0; i < *n && !found; i++)
		found = cidr_contains(&(*nets)[i], ss);
	pthread_rwlock_unlock(&self_lock);
	return found;
}

static int
is_host(const struct sockaddr_storage *ss)
{
	return in_nets(&hostnets, &nhostnets, ss);
}

static int
is_self(const struct sockaddr_storage *ss)
{
	size_t	 i;
	int	 found = 0;

	pthread_rwlock_rdlock(&self_lock);
	for (i = 0; i < nself && !found; i++)
		found = same_addr(&self[i], ss);
	pthread_rwlock_unlock(&self_lock);
	return found;
}

static int
is_own_net(const struct sockaddr_storage *ss)
{
	return in_nets(&ownnets, &nownnets, ss);
}

static int
is_loopback(int family, const uint8_t *a)
{
	static const uint8_t one[16] = { [15] = 1 };

	if (family == AF_INET)
		return a[0] == 127;
	return family == AF_INET6 && memcmp(a, one, 16) == 0;
}

/*
 * Whether allow-list entry c opens address a.  Loopback only by an entry
 * inside loopback (127.0.0.0/8 or narrower, ::1): 0.0.0.0/0, which an
 * operator may write to mean "the internet and the LAN", does not open
 * the proxy's own namespace.  The tests, which run the proxy on the host
 * with origins on loopback, name it.
 */
static int
allow_opens(const struct cidr *c, const struct sockaddr_storage *a)
{
	const uint8_t	*b;
	size_t		 n;

	if (!cidr_contains(c, a) || (b = sa_bytes(a, &n)) == NULL)
		return 0;
	if (!is_loopback(a->ss_family, b))
		return 1;
	return c->family == AF_INET ? c->plen >= 8 : c->plen == 128;
}

/* A connection to the proxy's own listening socket would loop. */
static int
is_listener(const struct sockaddr_storage *ss, uint16_t port)
{
	int	 i;

	for (i = 0; i < nlisteners; i++) {
		if (sa_port(&listeners[i]) != port)
			continue;
		if (same_addr(&listeners[i], ss))
			return 1;
		/* A wildcard listener answers on every local address. */
		if (is_unspecified(&listeners[i]) &&
		    (is_self(ss) || is_unspecified(ss)))
			return 1;
	}
	return 0;
}

/*
 * IPv4 carried in IPv6.  Mapped addresses (::ffff:a.b.c.d) reach the IPv4
 * host through a dual-stack socket; the sockaddr is rewritten to the plain
 * IPv4 form so the dial matches the check.  Returns 1 for mapped, 2 for
 * compatible (::a.b.c.d, deprecated, never dialled), 0 otherwise.
 */
static int
unwrap_v4(struct sockaddr_storage *ss, struct sockaddr_storage *v4out)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t zero[12];
	const struct sockaddr_in6 *s6;
	struct sockaddr_in *s4;
	const uint8_t	*b;
	int		 kind;

	if (ss->ss_family != AF_INET6)
		return 0;
	s6 = (const struct sockaddr_in6 *)ss;
	b = s6->sin6_addr.s6_addr;
	if (memcmp(b, mapped, 12) == 0)
		kind = 1;
	else if (memcmp(b, zero, 12) == 0 &&
	    !(b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] <= 1))
		kind = 2;	/* ::/128 and ::1 are checked as IPv6 */
	else
		return 0;
	memset(v4out, 0, sizeof(*v4out));
	s4 = (struct sockaddr_in *)v4out;
	s4->sin_family = AF_INET;
	s4->sin_port = s6->sin6_port;
	memcpy(&s4->sin_addr, b + 12, 4);
	return kind;
}

static void self_fresh(void);

/*
 * An address in the NAT64 well-known prefix 64:ff9b::/96 (RFC 6052)
 * reaches, through a translator, the IPv4 address in its last 32 bits.
 * IPv6-only networks (a cluster's) reach IPv4-only sites that way, and an
 * operator may open the prefix in allow_cidrs for it; the IPv4 address
 * behind it is then held to every rule as well, so that the prefix is no
 * way around them.  NULL when ss is no such address or its IPv4 passes.
 * (The local-use prefix 64:ff9b:1::/48 may embed the address anywhere:
 * opening it opens what it translates to.)
 */
static const char *
nat64_check(const struct egress_conf *conf, const struct sockaddr_storage *ss,
    uint16_t port)
{
	static const uint8_t wkp[12] = { 0, 0x64, 0xff, 0x9b };
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	struct sockaddr_storage v4;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&v4;

	if (ss->ss_family != AF_INET6 ||
	    memcmp(s6->sin6_addr.s6_addr, wkp, sizeof(wkp)) != 0)
		return NULL;
	memset(&v4, 0, sizeof(v4));
	s4->sin_family = AF_INET;
	s4->sin_port = s6->sin6_port;
	memcpy(&s4->sin_addr, s6->sin6_addr.s6_addr + 12, 4);
	return policy_classify(conf, &v4, port);
}

const char *
policy_classify(const struct egress_conf *conf, struct sockaddr_storage *ss,
    uint16_t port)
{
	struct sockaddr_storage v4;
	const uint8_t	*b;
	size_t		 n, i;
	int		 kind;

	if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)
		return "not an internet address";
	kind = unwrap_v4(ss, &v4);
	if (kind == 1)
		*ss = v4;	/* dial the IPv4 address that was checked */
	const struct sockaddr_storage *chk = kind ? &v4 : ss;

	/* What no configuration opens.  The listener: a loop. */
	if (is_listener(chk, port))
		return "the proxy's own listening socket";
	/* The host: an operator opening the LAN does not mean the machine
	 * the sandboxes run on. */
	if (is_host(chk))
		return "an address of the proxy's host";
	/* The networks the proxy is on: the other users' sandboxes, and the
	 * proxy's own addresses, public ones included. */
	self_fresh();
	if (is_own_net(chk))
		return "a network the proxy is on (a sandbox's, or its own)";
	/* Then the operator's exceptions, then what is never public. */
	for (i = 0; i < (size_t)conf->nallow; i++)
		if (allow_opens(&conf->allow[i], chk))
			return kind == 2 ?
			    "IPv4-compatible IPv6 address ::/96" :
			    nat64_check(conf, chk, port);
	b = sa_bytes(chk, &n);
	for (i = 0; i < sizeof(deny) / sizeof(deny[0]); i++)
		if (deny[i].family == chk->ss_family &&
		    prefix_match(b, deny[i].addr, deny[i].plen))
			return deny[i].reason;
	/* Allowed only inside 2000::/3, then only past the list above. */
	if (chk->ss_family == AF_INET6 &&
	    !prefix_match(b, global6.addr, global6.plen))
		return global6.reason;
	if (kind == 2)
		return "IPv4-compatible IPv6 address ::/96";
	return NULL;
}

int
policy_port_allowed(const struct egress_conf *conf, uint16_t port)
{
	int	 i;

	for (i = 0; i < conf->nports; i++)
		if (conf->ports[i] == port)
			return 1;
	return 0;
}

void
policy_add_listener(const struct sockaddr_storage *ss)
{
	if (nlisteners < EGRESS_MAX_LISTEN)
		listeners[nlisteners++] = *ss;
}

void
policy_set_host_file(const char *path)
{
	hostfile = path;
	memset(&hostfile_st, 0, sizeof(hostfile_st));
}

/*
 * Room for element n of an array of *cap elements of size sz: the array,
 * moved and grown if need be, or NULL (the old one untouched) when out of
 * memory.
 */
static void *
grow(void *arr, size_t *cap, size_t n, size_t sz)
{
	void	*p;
	size_t	 ncap;

	if (n < *cap)
		return arr;
	ncap = *cap == 0 ? 64 : *cap * 2;
	if ((p = reallocarray(arr, ncap, sz)) == NULL)
		return NULL;
	*cap = ncap;
	return p;
}

/*
 * Reads the host address file: one address or CIDR a line, '#' comments;
 * a bad line is logged and skipped.  At start (err not NULL) a file that
 * cannot be read, holds more than HOST_MAX addresses or none at all is an
 * error told in err: the proxy does not run without the list.  Later the
 * file is read again only when it changed (another inode, size or
 * modification time: writers replace it by rename), and such a file is
 * logged and the list read last kept: a writer that failed halfway, or
 * listed nothing, must not empty it.  0, or -1 when the file was not taken.
 */
static int
host_read(char *err, size_t errsz)
{
	struct cidr	*nets = NULL, *more, *old;
	struct stat	 st;
	FILE		*f;
	char		 line[256], *p, *e, why[160];
	size_t		 n = 0, cap = 0;
	int		 lineno = 0;

	if (stat(hostfile, &st) == -1) {
		if (err != NULL)
			snprintf(err, errsz, "%s", strerror(errno));
		else if (hostfile_st.st_ino != 1) {	/* once per outage */
			log_warn("host addresses %s (the list read last is "
			    "kept)", hostfile);
			hostfile_st.st_ino = 1;
		}
		return -1;
	}
	if (err == NULL && st.st_ino == hostfile_st.st_ino &&
	    st.st_dev == hostfile_st.st_dev &&
	    st.st_size == hostfile_st.st_size &&
	    st.st_mtim.tv_sec == hostfile_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == hostfile_st.st_mtim.tv_nsec)
		return 0;
	if ((f = fopen(hostfile, "re")) == NULL) {
		if (err != NULL)
			snprintf(err, errsz, "%s", strerror(errno));
		else
			log_warn("host addresses %s (the list read last is "
			    "kept)", hostfile);
		return -1;
	}
	if (fstat(fileno(f), &st) == -1)
		memset(&st, 0, sizeof(st));
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if ((e = strchr(line, '#')) != NULL)
			*e = '\0';
		for (p = line; *p == ' ' || *p == '\t'; p++)
			;
		for (e = p + strlen(p); e > p && (e[-1] == '\n' ||
		    e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = '\0';
		if (*p == '\0')
			continue;
		if (n == HOST_MAX) {
			snprintf(why, sizeof(why), "line %d: more than %d "
			    "addresses", lineno, HOST_MAX);
			goto refused;
		}
		if ((more = grow(nets, &cap, n, sizeof(*nets))) == NULL) {
			snprintf(why, sizeof(why), "%s", strerror(errno));
			goto refused;
		}
		nets = more;
		if (cidr_parse(p, &nets[n]) == -1) {
			log_warnx("%s:%d: not an address or CIDR: '%s'",
			    hostfile, lineno, p);
			continue;
		}
		n++;
	}
	if (ferror(f)) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
		goto refused;
	}
	if (n == 0) {
		snprintf(why, sizeof(why), "it lists no address (a host has "
		    "some: its writer failed?)");
		goto refused;
	}
	fclose(f);
	pthread_rwlock_wrlock(&self_lock);
	old = hostnets;
	hostnets = nets;
	nhostnets = n;
	hostfile_st = st;
	pthread_rwlock_unlock(&self_lock);
	free(old);
	log_info("host addresses: %zu from %s", n, hostfile);
	return 0;
refused:
	fclose(f);
	free(nets);
	if (err != NULL)
		snprintf(err, errsz, "%s", why);
	else
		log_warnx("host addresses %s: %s: file not taken, the list "
		    "read last is kept", hostfile, why);
	hostfile_st = st;	/* said once, until the file changes again */
	return -1;
}

int
policy_open_host(const char *path, char *err, size_t errsz)
{
	policy_set_host_file(path);
	return host_read(err, errsz);
}

int
policy_refresh_host(void)
{
	if (hostfile == NULL)
		return 0;
	return host_read(NULL, 0);
}

size_t
policy_host_count(void)
{
	size_t	 n;

	pthread_rwlock_rdlock(&self_lock);
	n = nhostnets;
	pthread_rwlock_unlock(&self_lock);
	return n;
}

/* The prefix length of a netmask (its leading one bits). */
static int
mask_len(const struct sockaddr *mask, int max)
{
	const uint8_t	*b;
	size_t		 n, i;
	int		 len = 0, bit;

	if (mask == NULL || mask->sa_family != (max == 32 ? AF_INET : AF_INET6))
		return max;
	b = sockaddr_bytes(mask, &n);
	for (i = 0; i < n; i++)
		for (bit = 7; bit >= 0; bit--) {
			if (!(b[i] >> bit & 1))
				return len;
			len++;
		}
	return len;
}

/* The network of address sa with a prefix of plen bits, into *c. */
static void
cidr_of(const struct sockaddr *sa, int plen, struct cidr *c)
{
	const uint8_t	*b;
	size_t		 n;
	int		 i;

	b = sockaddr_bytes(sa, &n);
	memset(c, 0, sizeof(*c));
	c->family = sa->sa_family;
	memcpy(c->addr, b, n);
	c->plen = plen;
	for (i = plen; i < (int)n * 8; i++)
		c->addr[i / 8] &= (uint8_t)~(0x80 >> (i % 8));
}

static size_t
sa_len(const struct sockaddr *sa)
{
	if (sa == NULL)
		return 0;
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

/*
 * The proxy's addresses and networks from a list of interfaces (what
 * getifaddrs gives; the unit tests make their own): each address, the
 * network its prefix spans, and a point-to-point link's far end (a pod's
 * peer is its node).  Loopback addresses give no network (see ownnets).
 * Replaces both lists, or keeps them and returns -1 when out of memory.
 */
static int
self_from(const struct ifaddrs *ifa)
{
	struct sockaddr_storage *addrs = NULL, *more, *old;
	struct cidr	*nets = NULL, *morenets, *oldnets;
	const struct ifaddrs *i;
	const uint8_t	*b;
	size_t		 len, n = 0, cap = 0, nn = 0, ncap = 0, bl;
	int		 max;

	for (i = ifa; i != NULL; i = i->ifa_next) {
		if ((len = sa_len(i->ifa_addr)) == 0)
			continue;
		if ((more = grow(addrs, &cap, n, sizeof(*addrs))) == NULL)
			goto fail;
		addrs = more;
		/* Room for two: the network and a far end. */
		if ((morenets = grow(nets, &ncap, nn + 1,
		    sizeof(*nets))) == NULL)
			goto fail;
		nets = morenets;
		memset(&addrs[n], 0, sizeof(addrs[n]));
		memcpy(&addrs[n], i->ifa_addr, len);
		b = sa_bytes(&addrs[n], &bl);
		n++;
		if (is_loopback(i->ifa_addr->sa_family, b))
			continue;
		max = i->ifa_addr->sa_family == AF_INET ? 32 : 128;
		cidr_of(i->ifa_addr, mask_len(i->ifa_netmask, max),
		    &nets[nn++]);
		if ((i->ifa_flags & IFF_POINTOPOINT) &&
		    sa_len(i->ifa_dstaddr) != 0 &&
		    i->ifa_dstaddr->sa_family == i->ifa_addr->sa_family)
			cidr_of(i->ifa_dstaddr, max, &nets[nn++]);
	}
	pthread_rwlock_wrlock(&self_lock);
	old = self;
	self = addrs;
	nself = n;
	oldnets = ownnets;
	ownnets = nets;
	nownnets = nn;
	pthread_rwlock_unlock(&self_lock);
	free(old);
	free(oldnets);
	return 0;
fail:
	log_warn("own addresses");
	free(addrs);
	free(nets);
	return -1;	/* the lists read last stay */
}

int
policy_refresh_self(void)
{
	struct ifaddrs	*ifa;
	int		 rc;

	if (getifaddrs(&ifa) == -1) {
		log_warn("getifaddrs");
		return -1;
	}
	rc = self_from(ifa);
	freeifaddrs(ifa);
	return rc;
}

int
policy_watch_self(void)
{
	struct sockaddr_nl sa;
	int		 fd;

	if ((fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    NETLINK_ROUTE)) == -1)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	sa.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		close(fd);
		return -1;
	}
	nlfd = fd;
	/* Read after subscribing: a change in between is in the queue. */
	return policy_refresh_self();
}

/*
 * Makes the lists of own addresses current: when the kernel told of an
 * address change (or its notices overflowed), reads the interfaces again.
 * Under nl_lock, so a thread that finds the queue empty while another
 * reads waits for that reading.
 */
static void
self_fresh(void)
{
	char	 msg[8192];
	ssize_t	 r;
	int	 changed = 0;

	if (nlfd == -1)
		return;
	pthread_mutex_lock(&nl_lock);
	for (;;) {
		r = recv(nlfd, msg, sizeof(msg), MSG_DONTWAIT);
		if (r > 0 || (r == -1 && errno == ENOBUFS))
			changed = 1;	/* ENOBUFS: notices were lost */
		else if (r == -1 && errno == EINTR)
			continue;
		else
			break;	/* EAGAIN: all told */
	}
	if (changed)
		(void)policy_refresh_self();
	pthread_mutex_unlock(&nl_lock);
}

/* At exit, for leak checkers: no worker may classify after this. */
void
policy_free(void)
{
	pthread_rwlock_wrlock(&self_lock);
	free(self);
	self = NULL;
	nself = 0;
	free(ownnets);
	ownnets = NULL;
	nownnets = 0;
	free(hostnets);
	hostnets = NULL;
	nhostnets = 0;
	pthread_rwlock_unlock(&self_lock);
	if (nlfd != -1) {
		close(nlfd);
		nlfd = -1;
	}
}

const char *
sockaddr_str(const struct sockaddr_storage *ss, char *out, size_t outsz)
{
	const void	*a;

	if (ss->ss_family == AF_INET)
		a = &((const struct sockaddr_in *)ss)->sin_addr;
	else if (ss->ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	else
		a = NULL;
	if (a == NULL || inet_ntop(ss->ss_family, a, out, (socklen_t)outsz) == NULL)
		snprintf(out, outsz, "?");
	return out;
}
