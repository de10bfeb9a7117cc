/*
 * libFuzzer driver for egress-proxy/policy.c: the classifier and the host
 * address file.  Built by `make test-fuzz-egress` beside the parser's.
 *
 * The input is an address (4 or 16 bytes, by the first byte), then an
 * optional allow-list CIDR and the text of a host address file.  Besides
 * the sanitizers it checks the classifier's promises against rules written
 * out here on their own: an allowed IPv6 address is inside 2000::/3 (or
 * in the allow list); nothing allowed is in a special-purpose range the
 * list does not open; an IPv4-mapped address is checked and dialled as
 * the IPv4 address; an IPv4-compatible one is never allowed; every
 * address the host file lists is refused, allow list or not; so is every
 * address on a network of this machine's interfaces (the proxy's own
 * networks: its sandbox networks when it runs in its container), and
 * loopback is opened only by an allow-list entry inside loopback; an
 * opened NAT64 address (64:ff9b::/96) is held to the IPv4 rules too.
 */
#include <sys/socket.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const struct { int fam; const char *net; int plen; } never[] = {
	{ AF_INET, "0.0.0.0", 8 }, { AF_INET, "10.0.0.0", 8 },
	{ AF_INET, "100.64.0.0", 10 }, { AF_INET, "127.0.0.0", 8 },
	{ AF_INET, "169.254.0.0", 16 }, { AF_INET, "172.16.0.0", 12 },
	{ AF_INET, "192.168.0.0", 16 }, { AF_INET, "224.0.0.0", 3 },
	{ AF_INET6, "2001:db8::", 32 }, { AF_INET6, "2002::", 16 },
	{ AF_INET6, "3fff::", 20 }, { AF_INET6, "2001::", 23 },
};

static int
in_net(const uint8_t *a, int fam, const char *net, int plen)
{
	uint8_t	 n[16];
	int	 i;

	if (inet_pton(fam, net, n) != 1)
		abort();
	for (i = 0; i < plen; i++)
		if (((a[i / 8] ^ n[i / 8]) >> (7 - i % 8)) & 1)
			return 0;
	return 1;
}

static int
in_cidr(const uint8_t *a, int fam, const struct cidr *c)
{
	char	 s[64];

	if (c->family != fam)
		return 0;
	inet_ntop(fam, c->addr, s, sizeof(s));
	return in_net(a, fam, s, c->plen);
}

static char	 path[64];

/* The networks of this machine's interfaces, found here on their own. */
static struct { int fam; uint8_t addr[16], mask[16]; } nets[256];
static int	 nnets = -1;

static void
read_nets(void)
{
	struct ifaddrs	*ifa, *i;
	const uint8_t	*a, *m;
	int		 len;

	nnets = 0;
	if (getifaddrs(&ifa) == -1)
		abort();
	for (i = ifa; i != NULL && nnets < 256; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_netmask == NULL)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			a = (const uint8_t *)&((struct sockaddr_in *)(void *)
			    i->ifa_addr)->sin_addr;
			m = (const uint8_t *)&((struct sockaddr_in *)(void *)
			    i->ifa_netmask)->sin_addr;
			len = 4;
			if (a[0] == 127)
				continue;
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			a = ((struct sockaddr_in6 *)(void *)i->ifa_addr)->
			    sin6_addr.s6_addr;
			m = ((struct sockaddr_in6 *)(void *)i->ifa_netmask)->
			    sin6_addr.s6_addr;
			len = 16;
			if (in_net(a, AF_INET6, "::1", 128))
				continue;
		} else
			continue;
		nets[nnets].fam = i->ifa_addr->sa_family;
		memcpy(nets[nnets].addr, a, (size_t)len);
		memcpy(nets[nnets].mask, m, (size_t)len);
		nnets++;
	}
	freeifaddrs(ifa);
}

static int
on_own_net(const uint8_t *a, int fam)
{
	int	 i, j, n = fam == AF_INET6 ? 16 : 4, in;

	for (i = 0; i < nnets; i++) {
		if (nets[i].fam != fam)
			continue;
		for (in = 1, j = 0; j < n && in; j++)
			in = ((a[j] ^ nets[i].addr[j]) & nets[i].mask[j]) == 0;
		if (in)
			return 1;
	}
	return 0;
}

static void
unlink_path(void)
{
	unlink(path);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct egress_conf conf;
	struct sockaddr_storage ss, orig;
	const uint8_t	*a;
	char		 cidr[64], *nl;
	const char	*why, *rest;
	size_t		 alen, n;
	int		 fam, i, v4mapped, v4compat;
	FILE		*f;

	if (size < 1)
		return 0;
	fam = data[0] & 1 ? AF_INET6 : AF_INET;
	alen = fam == AF_INET6 ? 16 : 4;
	if (size < 1 + alen)
		return 0;
	conf_defaults(&conf);
	/* An allow-list entry when the first byte says so: text up to '\n'. */
	rest = (const char *)data + 1 + alen;
	n = size - 1 - alen;
	if ((data[0] & 2) && n > 0) {
		nl = memchr(rest, '\n', n);
		i = (int)(nl ? (size_t)(nl - rest) : n);
		if (i < (int)sizeof(cidr)) {
			memcpy(cidr, rest, (size_t)i);
			cidr[i] = '\0';
			if (cidr_parse(cidr, &conf.allow[0]) == 0)
				conf.nallow = 1;
		}
		rest += nl ? (size_t)(nl - rest) + 1 : n;
		n = size - (size_t)(rest - (const char *)data);
	}
	if (nnets == -1) {
		read_nets();
		if (policy_refresh_self() == -1)
			abort();
	}
	/* The rest is the host address file. */
	if (path[0] == '\0') {
		snprintf(path, sizeof(path), "/tmp/fuzz-hosts-%d", (int)getpid());
		atexit(unlink_path);	/* a crash leaves it: the last input */
	}
	if ((f = fopen(path, "w")) == NULL)
		abort();
	fwrite(rest, 1, n, f);
	fclose(f);
	policy_set_host_file(path);
	(void)policy_refresh_host();

	memset(&ss, 0, sizeof(ss));
	if (fam == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(443);
		memcpy(&s6->sin6_addr, data + 1, 16);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(443);
		memcpy(&s4->sin_addr, data + 1, 4);
	}
	orig = ss;
	a = data + 1;
	v4mapped = fam == AF_INET6 && in_net(a, AF_INET6, "::ffff:0:0", 96);
	v4compat = fam == AF_INET6 && in_net(a, AF_INET6, "::", 96) &&
	    !in_net(a, AF_INET6, "::", 127);
	why = policy_classify(&conf, &ss, 443);
	if (v4mapped) {
		/* Checked and dialled as the IPv4 address it carries. */
		if (ss.ss_family != AF_INET || memcmp(&((struct sockaddr_in *)
		    &ss)->sin_addr, a + 12, 4) != 0)
			abort();
		fam = AF_INET;
		a += 12;
	} else if (memcmp(&ss, &orig, sizeof(ss)) != 0)
		abort();	/* only a mapped address is rewritten */
	if (why != NULL)
		return 0;
	/* Allowed: hold it to the rules. */
	if (v4compat)
		abort();
	if (on_own_net(a, fam))
		abort();
	/* NAT64 64:ff9b::/96 opened: the IPv4 behind it holds to the rules
	 * (the one allow entry is IPv6, so it opens nothing IPv4). */
	if (fam == AF_INET6 && in_net(a, AF_INET6, "64:ff9b::", 96)) {
		for (i = 0; i < (int)(sizeof(never) / sizeof(never[0])); i++)
			if (never[i].fam == AF_INET &&
			    in_net(a + 12, AF_INET, never[i].net, never[i].plen))
				abort();
		if (on_own_net(a + 12, AF_INET))
			abort();
	}
	if ((fam == AF_INET ? a[0] == 127 : in_net(a, AF_INET6, "::1", 128)) &&
	    (conf.nallow == 0 || (fam == AF_INET ? conf.allow[0].plen < 8 :
	    conf.allow[0].plen < 128)))
		abort();	/* loopback, opened by no entry inside it */
	if (conf.nallow == 0 || !in_cidr(a, fam, &conf.allow[0])) {
		if (fam == AF_INET6 && !in_net(a, AF_INET6, "2000::", 3))
			abort();
		for (i = 0; i < (int)(sizeof(never) / sizeof(never[0])); i++)
			if (never[i].fam == fam &&
			    in_net(a, fam, never[i].net, never[i].plen))
				abort();
	}
	/*
	 * Nothing the host file lists: whole lines that parse as one address
	 * once their line end ("\n", "\r\n") is cut.  A CR inside a line
	 * does not end it ("8.8.8.8\r8.8" is one bad line, skipped).
	 */
	if ((f = fopen(path, "r")) != NULL) {
		char	 line[256];
		uint8_t	 h[16];
		size_t	 len;

		while (fgets(line, sizeof(line), f) != NULL) {
			len = strlen(line);
			while (len > 0 && (line[len - 1] == '\n' ||
			    line[len - 1] == '\r'))
				line[--len] = '\0';
			if (inet_pton(fam, line, h) == 1 &&
			    memcmp(h, a, fam == AF_INET6 ? 16 : 4) == 0)
				abort();
		}
		fclose(f);
	}
	return 0;
}
