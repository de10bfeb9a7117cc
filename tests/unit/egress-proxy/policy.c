/*
 * Unit tests for egress-proxy/policy.c: every denied range at its edges,
 * the operator allow list, the proxy's own addresses, and the literal
 * spellings getaddrinfo turns into loopback or link-local addresses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#define HOST_MAX	4096
#include "../../../egress-proxy/policy.c"

struct probe {
	const char	*addr;
	int		 denied;
};

/* The edges of every range in the issue: first and last address inside,
 * and the neighbours just outside (which are public unless another range
 * covers them). */
static const struct probe v4[] = {
	{ "0.0.0.0", 1 }, { "0.255.255.255", 1 }, { "1.0.0.0", 0 },
	{ "9.255.255.255", 0 }, { "10.0.0.0", 1 }, { "10.255.255.255", 1 },
	{ "11.0.0.0", 0 },
	{ "100.63.255.255", 0 }, { "100.64.0.0", 1 }, { "100.127.255.255", 1 },
	{ "100.128.0.0", 0 },
	{ "126.255.255.255", 0 }, { "127.0.0.0", 1 }, { "127.0.0.1", 1 },
	{ "127.255.255.255", 1 }, { "128.0.0.0", 0 },
	{ "169.253.255.255", 0 }, { "169.254.0.0", 1 },
	{ "169.254.169.254", 1 }, { "169.254.255.255", 1 },
	{ "169.255.0.0", 0 },
	{ "172.15.255.255", 0 }, { "172.16.0.0", 1 }, { "172.31.255.255", 1 },
	{ "172.32.0.0", 0 },
	{ "191.255.255.255", 0 }, { "192.0.0.0", 1 }, { "192.0.0.255", 1 },
	{ "192.0.1.0", 0 },
	{ "192.0.1.255", 0 }, { "192.0.2.0", 1 }, { "192.0.2.255", 1 },
	{ "192.0.3.0", 0 },
	{ "192.88.98.255", 0 }, { "192.88.99.0", 1 }, { "192.88.99.255", 1 },
	{ "192.88.100.0", 0 },
	{ "192.167.255.255", 0 }, { "192.168.0.0", 1 },
	{ "192.168.255.255", 1 }, { "192.169.0.0", 0 },
	{ "198.17.255.255", 0 }, { "198.18.0.0", 1 }, { "198.19.255.255", 1 },
	{ "198.20.0.0", 0 },
	{ "198.51.99.255", 0 }, { "198.51.100.0", 1 },
	{ "198.51.100.255", 1 }, { "198.51.101.0", 0 },
	{ "203.0.112.255", 0 }, { "203.0.113.0", 1 }, { "203.0.113.255", 1 },
	{ "203.0.114.0", 0 },
	{ "223.255.255.255", 0 }, { "224.0.0.0", 1 },
	{ "239.255.255.255", 1 }, { "240.0.0.0", 1 },
	{ "255.255.255.255", 1 },
	{ "8.8.8.8", 0 }, { "1.1.1.1", 0 }, { "93.184.216.34", 0 },
};

static const struct probe v6[] = {
	{ "::", 1 }, { "::1", 1 },
	/* IPv4-mapped: decoded and checked as IPv4 */
	{ "::ffff:0.0.0.0", 1 }, { "::ffff:127.0.0.1", 1 },
	{ "::ffff:10.1.2.3", 1 }, { "::ffff:169.254.169.254", 1 },
	{ "::ffff:8.8.8.8", 0 },
	/* IPv4-compatible: decoded, and never dialled even when public */
	{ "::2", 1 }, { "::127.0.0.1", 1 }, { "::169.254.169.254", 1 },
	{ "::8.8.8.8", 1 }, { "::255.255.255.255", 1 },
	/* Outside 2000::/3 nothing is global unicast: denied, listed or not. */
	{ "::1:0:0", 1 }, { "::1:0:0:0", 1 }, { "::fffe:ffff:ffff", 1 },
	{ "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "64:ff9b::", 1 },
	{ "64:ff9b::a9fe:a9fe", 1 }, { "64:ff9b::ffff:ffff", 1 },
	{ "64:ff9b::1:0:0", 1 },
	{ "64:ff9b:0:ffff:ffff:ffff:ffff:ffff", 1 }, { "64:ff9b:1::", 1 },
	{ "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", 1 }, { "64:ff9b:2::", 1 },
	{ "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "100::", 1 },
	{ "100::ffff:ffff:ffff:ffff", 1 }, { "100:0:0:1::", 1 },
	{ "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "2000::", 0 },
	{ "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0 }, { "2001::", 1 },
	{ "2001:0:a9fe:a9fe::1", 1 },
	{ "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "2001:200::", 0 },
	{ "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", 0 }, { "2001:db8::", 1 },
	{ "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "2001:db9::", 0 },
	{ "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0 }, { "2002::", 1 },
	{ "2002:a9fe:a9fe::1", 1 },
	{ "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "2003::", 0 },
	/* documentation 3fff::/20 (RFC 9637), at the top of 2000::/3 */
	{ "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0 }, { "3fff::", 1 },
	{ "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "3fff:1000::", 0 },
	{ "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0 }, { "4000::", 1 },
	{ "5f00::", 1 }, { "5f00:ffff::1", 1 }, { "8000::", 1 }, { "e000::1", 1 },
	{ "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "fc00::", 1 },
	{ "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "fe00::", 1 },
	{ "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "fe80::", 1 },
	{ "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "fec0::", 1 },
	{ "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1 }, { "ff00::", 1 },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1 },
	{ "2606:4700:4700::1111", 0 }, { "2a00:1450:4001::1", 0 },
};

static void
mkaddr(const char *s, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(s, ':') == NULL) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, s, &s4->sin_addr), 1);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, s, &s6->sin6_addr), 1);
	}
}

static const char *
classify(const struct egress_conf *conf, const char *s, uint16_t port)
{
	struct sockaddr_storage ss;

	mkaddr(s, port, &ss);
	return policy_classify(conf, &ss, port);
}

static void
run_probes(const struct probe *p, size_t n)
{
	struct egress_conf conf;
	const char	*why;
	size_t		 i;

	conf_defaults(&conf);
	for (i = 0; i < n; i++) {
		why = classify(&conf, p[i].addr, 443);
		if ((why != NULL) != p[i].denied)
			fail_msg("%s: expected %s, got %s", p[i].addr,
			    p[i].denied ? "denied" : "allowed",
			    why ? why : "allowed");
	}
}

static void
test_ipv4_ranges(void **state)
{
	run_probes(v4, sizeof(v4) / sizeof(v4[0]));
}

static void
test_ipv6_ranges(void **state)
{
	run_probes(v6, sizeof(v6) / sizeof(v6[0]));
}

static void
test_reasons_name_the_range(void **state)
{
	struct egress_conf conf;

	conf_defaults(&conf);
	assert_string_equal(classify(&conf, "169.254.169.254", 80),
	    "link-local 169.254.0.0/16");
	assert_string_equal(classify(&conf, "::ffff:10.0.0.1", 80),
	    "private 10.0.0.0/8");
	assert_string_equal(classify(&conf, "::8.8.8.8", 80),
	    "IPv4-compatible IPv6 address ::/96");
	assert_string_equal(classify(&conf, "64:ff9b::a9fe:a9fe", 80),
	    "NAT64 64:ff9b::/96");
	assert_string_equal(classify(&conf, "3fff::1", 80),
	    "documentation 3fff::/20");
	assert_string_equal(classify(&conf, "5f00::1", 80),
	    "SRv6 SIDs 5f00::/16");
	assert_string_equal(classify(&conf, "4000::1", 80),
	    "not IPv6 global unicast 2000::/3");
	assert_string_equal(classify(&conf, "fe00::1", 80),
	    "not IPv6 global unicast 2000::/3");
}

/* What is dialled is what was checked: a mapped address becomes IPv4. */
static void
test_mapped_is_rewritten(void **state)
{
	struct egress_conf conf;
	struct sockaddr_storage ss;
	char		 a[64];

	conf_defaults(&conf);
	mkaddr("::ffff:8.8.4.4", 443, &ss);
	assert_null(policy_classify(&conf, &ss, 443));
	assert_int_equal(ss.ss_family, AF_INET);
	assert_string_equal(sockaddr_str(&ss, a, sizeof(a)), "8.8.4.4");
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 443);
}

static void
test_allow_list(void **state)
{
	struct egress_conf conf;

	conf_defaults(&conf);
	assert_int_equal(cidr_parse("127.0.0.0/8", &conf.allow[0]), 0);
	assert_int_equal(cidr_parse("fd00:1::/32", &conf.allow[1]), 0);
	conf.nallow = 2;
	assert_null(classify(&conf, "127.0.0.1", 80));
	assert_null(classify(&conf, "127.255.255.255", 80));
	assert_null(classify(&conf, "::ffff:127.0.0.1", 80));
	assert_null(classify(&conf, "fd00:1:ffff::1", 80));
	assert_non_null(classify(&conf, "fd00:2::1", 80));
	assert_non_null(classify(&conf, "10.0.0.1", 80));
	assert_non_null(classify(&conf, "::1", 80));
	/* Nothing private is allowed without configuration. */
	conf.nallow = 0;
	assert_non_null(classify(&conf, "127.0.0.1", 80));

	/* Malformed lists are refused, including host bits past the prefix. */
	assert_int_equal(cidr_parse("10.1.2.3/8", &conf.allow[0]), -1);
	assert_int_equal(cidr_parse("10.0.0.0/33", &conf.allow[0]), -1);
	assert_int_equal(cidr_parse("10.0.0.0/", &conf.allow[0]), -1);
	assert_int_equal(cidr_parse("example.com/8", &conf.allow[0]), -1);
	assert_int_equal(cidr_parse("::/129", &conf.allow[0]), -1);
	assert_int_equal(cidr_parse("::1", &conf.allow[0]), 0);
	assert_int_equal(conf.allow[0].plen, 128);
}

/* An interface address for self_from: what getifaddrs would give. */
struct fakeif {
	struct ifaddrs		 ifa;
	struct sockaddr_storage	 addr, mask, peer;
	char			 name[16];
};

static struct ifaddrs *
fake_if(struct fakeif *f, const char *name, const char *addr, int plen,
    const char *peer, struct ifaddrs *next)
{
	uint8_t	*m;
	size_t	 n;
	int	 i;

	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	mkaddr(addr, 0, &f->addr);
	mkaddr(strchr(addr, ':') ? "::" : "0.0.0.0", 0, &f->mask);
	m = (uint8_t *)(uintptr_t)sa_bytes(&f->mask, &n);
	for (i = 0; i < plen; i++)
		m[i / 8] |= (uint8_t)(0x80 >> (i % 8));
	f->ifa.ifa_next = next;
	f->ifa.ifa_name = f->name;
	f->ifa.ifa_flags = IFF_UP;
	if (strcmp(name, "lo") == 0)
		f->ifa.ifa_flags |= IFF_LOOPBACK;
	f->ifa.ifa_addr = (struct sockaddr *)&f->addr;
	f->ifa.ifa_netmask = (struct sockaddr *)&f->mask;
	if (peer != NULL) {
		mkaddr(peer, 0, &f->peer);
		f->ifa.ifa_flags |= IFF_POINTOPOINT;
		f->ifa.ifa_dstaddr = (struct sockaddr *)&f->peer;
	}
	return &f->ifa;
}

/*
 * The interfaces of a proxy in a container that the supervisor connected
 * to two users' networks, one of them with IPv6, and of a pod on a public
 * IPv6 network with a point-to-point link to its node.
 */
static void
fake_interfaces(void)
{
	static struct fakeif f[9];
	struct ifaddrs	*l = NULL;

	l = fake_if(&f[0], "lo", "127.0.0.1", 8, NULL, l);
	l = fake_if(&f[1], "lo", "::1", 128, NULL, l);
	l = fake_if(&f[2], "eth0", "10.89.0.2", 24, NULL, l);	/* way out */
	l = fake_if(&f[3], "eth1", "10.89.3.254", 24, NULL, l);	/* alice */
	l = fake_if(&f[4], "eth1", "fd00:89:3::fe", 64, NULL, l);
	l = fake_if(&f[5], "eth1", "fe80::1", 64, NULL, l);
	l = fake_if(&f[6], "eth2", "192.168.7.254", 24, NULL, l);	/* bob */
	l = fake_if(&f[7], "eth3", "2a00:1450:4001::5", 64, NULL, l);
	l = fake_if(&f[8], "tun0", "203.0.113.9", 32, "8.8.4.4", l);
	assert_int_equal(self_from(l), 0);
}

/* The allow list, from a NULL-terminated list of CIDRs. */
static void
allow_list(struct egress_conf *conf, const char *const *cidrs)
{
	for (conf->nallow = 0; cidrs[conf->nallow] != NULL; conf->nallow++)
		assert_int_equal(cidr_parse(cidrs[conf->nallow],
		    &conf->allow[conf->nallow]), 0);
}
#define allow(conf, ...) \
	allow_list((conf), (const char *const[]){ __VA_ARGS__, NULL })

/*
 * The networks the proxy is on are refused before allow_cidrs is read:
 * an operator who allows 10.0.0.0/8 (or fd00::/8, or everything) for a
 * service on the LAN does not open the other users' sandbox networks, the
 * host behind their bridges, or the proxy's own addresses.
 */
static void
test_own_networks_before_allow(void **state)
{
	static const char *own[] = {
		"10.89.3.7", "10.89.3.1", "10.89.3.254", "10.89.0.1",
		"10.89.0.2", "192.168.7.3", "::ffff:10.89.3.7",
		"fd00:89:3::7", "fd00:89:3::fe", "fe80::99",
		"2a00:1450:4001::77", "2a00:1450:4001::5", "203.0.113.9",
		"8.8.4.4",
	};
	struct egress_conf conf;
	size_t		 i;

	conf_defaults(&conf);
	fake_interfaces();
	allow(&conf, "10.0.0.0/8", "192.168.0.0/16", "fd00::/8", "fe80::/10",
	    "0.0.0.0/0", "::/0");
	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		const char *why = classify(&conf, own[i], 443);

		if (why == NULL || strcmp(why, "a network the proxy is on "
		    "(a sandbox's, or its own)") != 0)
			fail_msg("%s: expected refused as a network the proxy "
			    "is on, got %s", own[i], why ? why : "allowed");
	}
	/* What the list opens beyond them stays open. */
	assert_null(classify(&conf, "10.1.2.3", 443));
	assert_null(classify(&conf, "10.89.4.7", 443));
	assert_null(classify(&conf, "192.168.8.1", 443));
	assert_null(classify(&conf, "fd00:89:4::7", 443));
	assert_null(classify(&conf, "2a00:1450:4002::1", 443));
	assert_null(classify(&conf, "8.8.8.8", 443));

	/* Without the list: the same, and private is private. */
	conf.nallow = 0;
	assert_string_equal(classify(&conf, "10.89.3.7", 443),
	    "a network the proxy is on (a sandbox's, or its own)");
	assert_string_equal(classify(&conf, "2a00:1450:4001::77", 443),
	    "a network the proxy is on (a sandbox's, or its own)");
	assert_string_equal(classify(&conf, "10.1.2.3", 443),
	    "private 10.0.0.0/8");
	assert_null(classify(&conf, "2a00:1450:4002::1", 443));

	/* A new reading replaces the old one: alice's network is gone. */
	{
		struct fakeif	 f;

		assert_int_equal(self_from(fake_if(&f, "eth0", "10.89.0.2",
		    24, NULL, NULL)), 0);
	}
	allow(&conf, "10.0.0.0/8");
	assert_null(classify(&conf, "10.89.3.7", 443));
	assert_non_null(classify(&conf, "10.89.0.1", 443));
	policy_free();
}

/*
 * Loopback is no network of the proxy's (inside its container it reaches
 * only the proxy), but only an allow-list entry inside loopback opens it:
 * 0.0.0.0/0 or ::/0 does not.
 */
static void
test_loopback_only_by_name(void **state)
{
	struct egress_conf conf;

	conf_defaults(&conf);
	fake_interfaces();
	allow(&conf, "0.0.0.0/0", "::/0", "120.0.0.0/5");
	assert_string_equal(classify(&conf, "127.0.0.1", 80),
	    "loopback 127.0.0.0/8");
	assert_string_equal(classify(&conf, "127.0.0.2", 80),
	    "loopback 127.0.0.0/8");
	assert_string_equal(classify(&conf, "::1", 80), "loopback ::1");
	assert_string_equal(classify(&conf, "::ffff:127.0.0.1", 80),
	    "loopback 127.0.0.0/8");
	assert_null(classify(&conf, "8.8.8.8", 80));
	allow(&conf, "127.0.0.0/8", "::1");
	assert_null(classify(&conf, "127.0.0.1", 80));
	assert_null(classify(&conf, "127.0.0.2", 80));
	assert_null(classify(&conf, "::1", 80));
	allow(&conf, "127.0.0.2/32");
	assert_null(classify(&conf, "127.0.0.2", 80));
	assert_non_null(classify(&conf, "127.0.0.1", 80));
	policy_free();
}

/*
 * IPv6-only networks reach IPv4 sites through NAT64: an operator who opens
 * 64:ff9b::/96 opens the public IPv4 addresses behind it, and nothing the
 * IPv4 rules refuse.
 */
static void
test_nat64_opened(void **state)
{
	struct egress_conf conf;

	conf_defaults(&conf);
	fake_interfaces();
	assert_string_equal(classify(&conf, "64:ff9b::808:808", 443),
	    "NAT64 64:ff9b::/96");
	allow(&conf, "64:ff9b::/96");
	assert_null(classify(&conf, "64:ff9b::808:808", 443));	/* 8.8.8.8 */
	assert_string_equal(classify(&conf, "64:ff9b::a59:307", 443),
	    "a network the proxy is on (a sandbox's, or its own)");
	assert_string_equal(classify(&conf, "64:ff9b::7f00:1", 443),
	    "loopback 127.0.0.0/8");
	assert_string_equal(classify(&conf, "64:ff9b::a9fe:a9fe", 443),
	    "link-local 169.254.0.0/16");
	assert_string_equal(classify(&conf, "64:ff9b::a01:203", 443),
	    "private 10.0.0.0/8");
	/* the IPv4 allow list applies to what is behind it */
	allow(&conf, "64:ff9b::/96", "10.0.0.0/8");
	assert_null(classify(&conf, "64:ff9b::a01:203", 443));
	assert_non_null(classify(&conf, "64:ff9b::a59:307", 443));
	policy_free();
}

/* The proxy never dials its own listener, whatever the allow list says. */
static void
test_own_addresses(void **state)
{
	struct egress_conf conf;
	struct sockaddr_storage l;

	conf_defaults(&conf);
	fake_interfaces();
	mkaddr("0.0.0.0", 3128, &l);
	policy_add_listener(&l);
	assert_string_equal(classify(&conf, "127.0.0.1", 80),
	    "loopback 127.0.0.0/8");
	allow(&conf, "127.0.0.0/8");
	assert_null(classify(&conf, "127.0.0.1", 80));
	assert_string_equal(classify(&conf, "127.0.0.1", 3128),
	    "the proxy's own listening socket");
	assert_string_equal(classify(&conf, "::ffff:127.0.0.1", 3128),
	    "the proxy's own listening socket");
	assert_string_equal(classify(&conf, "0.0.0.0", 3128),
	    "the proxy's own listening socket");
	assert_string_equal(classify(&conf, "10.89.3.254", 3128),
	    "the proxy's own listening socket");
	nlisteners = 0;
	policy_free();
}

/* The real interfaces, as the proxy reads them: every non-loopback
 * address of this machine is on a network the proxy is on. */
static void
test_real_interfaces(void **state)
{
	struct egress_conf conf;
	struct ifaddrs	*ifa, *i;
	struct sockaddr_storage ss;
	const uint8_t	*b;
	size_t		 n, len;
	int		 seen = 0;

	conf_defaults(&conf);
	allow(&conf, "0.0.0.0/0", "::/0");
	assert_int_equal(policy_refresh_self(), 0);
	assert_int_equal(getifaddrs(&ifa), 0);
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if ((len = sa_len(i->ifa_addr)) == 0)
			continue;
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, i->ifa_addr, len);
		b = sa_bytes(&ss, &n);
		if (is_loopback(ss.ss_family, b))
			continue;
		assert_non_null(policy_classify(&conf, &ss, 443));
		seen++;
	}
	freeifaddrs(ifa);
	print_message("%d interface addresses refused\n", seen);
	policy_free();
}

/* The host's addresses from a file: refused even inside the allow list,
 * re-read when the file is replaced, kept when it goes away. */
static void
test_host_addresses(void **state)
{
	struct egress_conf conf;
	char		 path[] = "/tmp/egress-hosts-XXXXXX", next[64];
	FILE		*f;
	int		 fd;

	conf_defaults(&conf);
	assert_int_equal(cidr_parse("0.0.0.0/0", &conf.allow[0]), 0);
	conf.nallow = 1;
	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(f = fdopen(fd, "w"));
	fputs("# host\n  8.8.8.8  \n2606:4700::/32\nbogus\n10.1.2.3/8\n", f);
	fclose(f);
	policy_set_host_file(path);
	assert_int_equal(policy_refresh_host(), 0);
	assert_string_equal(classify(&conf, "8.8.8.8", 443),
	    "an address of the proxy's host");
	assert_string_equal(classify(&conf, "::ffff:8.8.8.8", 443),
	    "an address of the proxy's host");
	assert_string_equal(classify(&conf, "2606:4700:1::1", 443),
	    "an address of the proxy's host");
	assert_null(classify(&conf, "8.8.4.4", 443));
	assert_null(classify(&conf, "10.0.0.1", 443));	/* its line was bad */

	snprintf(next, sizeof(next), "%s.new", path);
	assert_non_null(f = fopen(next, "w"));
	fputs("8.8.4.4\n", f);
	fclose(f);
	assert_int_equal(rename(next, path), 0);
	assert_int_equal(policy_refresh_host(), 0);
	assert_null(classify(&conf, "8.8.8.8", 443));
	assert_non_null(classify(&conf, "8.8.4.4", 443));

	/* A file that lists nothing (its writer failed) is not taken. */
	assert_non_null(f = fopen(next, "w"));
	fputs("# the host's addresses\nbogus\n", f);
	fclose(f);
	assert_int_equal(rename(next, path), 0);
	assert_int_equal(policy_refresh_host(), -1);
	assert_non_null(classify(&conf, "8.8.4.4", 443));
	assert_int_equal(policy_host_count(), 1);

	unlink(path);
	assert_int_equal(policy_refresh_host(), -1);
	assert_non_null(classify(&conf, "8.8.4.4", 443));
	policy_set_host_file(NULL);
	assert_int_equal(policy_refresh_host(), 0);
	policy_free();
}

/* At start the file must be there, readable, and list something: the
 * proxy does not run without it (main.c says how to write it). */
static void
test_host_file_at_start(void **state)
{
	char		 path[] = "/tmp/egress-hosts-XXXXXX", err[256];
	FILE		*f;
	int		 fd;

	assert_int_equal(policy_open_host("/nonexistent/host-addresses", err,
	    sizeof(err)), -1);
	assert_string_equal(err, "No such file or directory");

	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(f = fdopen(fd, "w"));
	fputs("# nothing yet\n\n", f);
	fclose(f);
	assert_int_equal(policy_open_host(path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "lists no address"));

	if (geteuid() != 0) {	/* root reads it anyway */
		assert_int_equal(chmod(path, 0), 0);
		assert_int_equal(policy_open_host(path, err, sizeof(err)), -1);
		assert_string_equal(err, "Permission denied");
		assert_int_equal(chmod(path, 0600), 0);
	}

	assert_non_null(f = fopen(path, "w"));
	fputs("192.0.2.1\n2001:db8::/32\n", f);
	fclose(f);
	assert_int_equal(policy_open_host(path, err, sizeof(err)), 0);
	assert_int_equal(policy_host_count(), 2);
	unlink(path);
	policy_set_host_file(NULL);
	policy_free();
}

/* n lines of host addresses 10.x.y.z, numbered from 1, then one more line
 * (or none); the file is renamed into place, as the supervisor does. */
static void
write_hosts(const char *path, int n, const char *last)
{
	char	 tmp[64];
	FILE	*f;
	int	 i;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	assert_non_null(f = fopen(tmp, "w"));
	for (i = 1; i <= n; i++)
		fprintf(f, "10.%d.%d.%d\n", i >> 16 & 255, i >> 8 & 255,
		    i & 255);
	if (last != NULL)
		fprintf(f, "%s\n", last);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
}

/* A host with hundreds of containers has hundreds of addresses (a veth's
 * link-local each): all of them are refused, the last as the first, and
 * a file past HOST_MAX is refused whole, keeping the list read before. */
static void
test_many_host_addresses(void **state)
{
	struct egress_conf conf;
	char		 path[] = "/tmp/egress-hosts-XXXXXX";
	int		 fd;

	conf_defaults(&conf);
	assert_int_equal(cidr_parse("0.0.0.0/0", &conf.allow[0]), 0);
	conf.nallow = 1;
	assert_true((fd = mkstemp(path)) >= 0);
	close(fd);
	write_hosts(path, 3000, "9.9.9.9");
	policy_set_host_file(path);
	assert_int_equal(policy_refresh_host(), 0);
	assert_int_equal(nhostnets, 3001);
	assert_string_equal(classify(&conf, "10.0.0.1", 443),
	    "an address of the proxy's host");
	assert_string_equal(classify(&conf, "10.0.1.44", 443),
	    "an address of the proxy's host");	/* line 300 */
	assert_string_equal(classify(&conf, "9.9.9.9", 443),
	    "an address of the proxy's host");
	assert_null(classify(&conf, "10.0.11.185", 443));	/* 3001 */

	write_hosts(path, HOST_MAX, "8.8.8.8");
	assert_int_equal(policy_refresh_host(), -1);
	assert_int_equal(nhostnets, 3001);
	assert_string_equal(classify(&conf, "9.9.9.9", 443),
	    "an address of the proxy's host");
	assert_null(classify(&conf, "8.8.8.8", 443));
	assert_int_equal(policy_refresh_host(), 0);	/* said once */

	write_hosts(path, HOST_MAX, NULL);	/* exactly at the limit */
	assert_int_equal(policy_refresh_host(), 0);
	assert_int_equal(nhostnets, HOST_MAX);
	assert_null(classify(&conf, "9.9.9.9", 443));

	unlink(path);
	policy_set_host_file(NULL);
	policy_free();
	assert_null(classify(&conf, "10.0.0.1", 443));
}

/*
 * Spellings that a host-string filter would miss.  They go through the same
 * path as the proxy: the authority parser, then getaddrinfo, then the
 * classifier on each address.
 */
static int
literal_denied(const char *authority)
{
	struct egress_conf conf;
	struct h1_req	 r;
	struct addrinfo	 hints, *res, *ai;
	struct sockaddr_storage ss;
	const char	*reason;
	int		 n = 0, denied = 0;

	conf_defaults(&conf);
	if (h1_parse_authority(authority, strlen(authority), 0, &r,
	    &reason) == -1)
		return 2;	/* refused by the parser */
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(r.host, NULL, &hints, &res) != 0)
		fail_msg("%s: getaddrinfo failed", authority);
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		n++;
		denied += policy_classify(&conf, &ss, r.port) != NULL;
	}
	freeaddrinfo(res);
	assert_true(n > 0);
	return denied == n;
}

static void
test_literal_forms(void **state)
{
	assert_int_equal(literal_denied("2130706433:443"), 1);
	assert_int_equal(literal_denied("0x7f.1:443"), 1);
	assert_int_equal(literal_denied("017700000001:443"), 1);
	assert_int_equal(literal_denied("127.1:443"), 1);
	assert_int_equal(literal_denied("0:443"), 1);
	assert_int_equal(literal_denied("[::ffff:127.0.0.1]:443"), 1);
	assert_int_equal(literal_denied("[::127.0.0.1]:443"), 1);
	assert_int_equal(literal_denied("[64:ff9b::a9fe:a9fe]:443"), 1);
	assert_int_equal(literal_denied("[2002:a9fe:a9fe::1]:443"), 1);
	assert_int_equal(literal_denied("[::ffff:a9fe:a9fe]:443"), 1);
	/* zone identifiers never get as far as the resolver */
	assert_int_equal(literal_denied("[fe80::1%25eth0]:443"), 2);
	assert_int_equal(literal_denied("[fe80::1%eth0]:443"), 2);
	/* and a public literal passes */
	assert_int_equal(literal_denied("8.8.8.8:443"), 0);
	assert_int_equal(literal_denied("[2606:4700:4700::1111]:443"), 0);
}

static void
test_ports(void **state)
{
	struct egress_conf conf;

	conf_defaults(&conf);
	assert_true(policy_port_allowed(&conf, 80));
	assert_true(policy_port_allowed(&conf, 443));
	assert_false(policy_port_allowed(&conf, 22));
	assert_false(policy_port_allowed(&conf, 8080));
	assert_int_equal(conf_parse_ports("443, 8443", &conf), 0);
	assert_false(policy_port_allowed(&conf, 80));
	assert_true(policy_port_allowed(&conf, 8443));
	assert_int_equal(conf_parse_ports("0", &conf), -1);
	assert_int_equal(conf_parse_ports("65536", &conf), -1);
	assert_int_equal(conf_parse_ports("+80", &conf), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_ranges),
		cmocka_unit_test(test_ipv6_ranges),
		cmocka_unit_test(test_reasons_name_the_range),
		cmocka_unit_test(test_mapped_is_rewritten),
		cmocka_unit_test(test_allow_list),
		cmocka_unit_test(test_own_networks_before_allow),
		cmocka_unit_test(test_loopback_only_by_name),
		cmocka_unit_test(test_nat64_opened),
		cmocka_unit_test(test_own_addresses),
		cmocka_unit_test(test_real_interfaces),
		cmocka_unit_test(test_host_addresses),
		cmocka_unit_test(test_host_file_at_start),
		cmocka_unit_test(test_many_host_addresses),
		cmocka_unit_test(test_literal_forms),
		cmocka_unit_test(test_ports),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
