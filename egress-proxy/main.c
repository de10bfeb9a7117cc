/*
 * main.c: vivarium-egress command line.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "banned.h"

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void
usage(FILE *f)
{
	fprintf(f,
"usage: vivarium-egress [-hnvV] [-f config.yaml]\n"
"\n"
"Forward proxy for sandboxes: CONNECT and absolute-form http:// requests to\n"
"public addresses only.  Every address a name resolves to is checked and\n"
"only a checked address is dialled.\n"
"\n"
"Options:\n"
"  -f FILE        YAML configuration (default: $VIVARIUM_EGRESS_CONFIG, else\n"
"                 none)\n"
"  -n             check the configuration, print it and exit\n"
"  -v             verbose logging\n"
"  -h, --help     print this text and exit\n"
"  -V, --version  print the version and exit\n"
"\n"
"Environment (overrides the file): VIVARIUM_EGRESS_LISTEN, _PORTS,\n"
"_ALLOW_CIDRS (comma-separated lists), _HEADER_TIMEOUT, _CONNECT_TIMEOUT,\n"
"_IDLE_TIMEOUT (seconds), _MAX_CONNECTIONS, _MAX_PER_CLIENT,\n"
"_MAX_HEADER_BYTES, _RESOLVER_THREADS, _WORKERS, _VERBOSE, _HOST_ADDRESSES,\n"
"_USER_LABELS.\n"
"\n"
"host_addresses (required): a file of the host's addresses, one address or\n"
"CIDR a line, always refused (a proxy in a container cannot see them);\n"
"vivarium-egress-hosts DIR writes DIR/host-addresses.  Without the file\n"
"the proxy does not start, unless host_addresses is none.\n"
"\n"
"user_labels (optional): a file of \"ADDRESS LABEL\" lines naming whose\n"
"sandbox each client address is (the supervisor writes it); a listed\n"
"client's log lines say user=LABEL.  Only for the log: a missing or bad\n"
"file means lines without it.  See docs/egress.md.\n");
}

/*
 * Reads the host address file once, for -n and before serving: a proxy
 * whose list is missing would dial the host, so it does not run.
 */
static int
host_check(const struct egress_conf *c)
{
	char	 err[256];

	if (c->host_addresses == NULL)
		return 0;	/* none, said so */
	if (policy_open_host(c->host_addresses, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr,
"vivarium-egress: host_addresses %s: %s\n"
"  The proxy refuses every address listed there (the host's own, which it\n"
"  cannot see from a container) and does not run without the list.  Write\n"
"  it, one address or CIDR a line (vivarium-egress-hosts DIR writes\n"
"  DIR/host-addresses from the host's interfaces; the supervisor does with\n"
"  egress: manage), or set host_addresses: none\n"
"  (VIVARIUM_EGRESS_HOST_ADDRESSES=none) to run without one.\n",
	    c->host_addresses, err);
	return -1;
}

static void
conf_print(const struct egress_conf *c)
{
	char	 a[64];
	int	 i;

	for (i = 0; i < c->nlisten; i++)
		printf("listen %s\n", c->listen[i]);
	printf("allow_ports");
	for (i = 0; i < c->nports; i++)
		printf(" %u", c->ports[i]);
	printf("\nallow_cidrs");
	for (i = 0; i < c->nallow; i++) {
		struct sockaddr_storage ss;

		memset(&ss, 0, sizeof(ss));
		ss.ss_family = (sa_family_t)c->allow[i].family;
		if (c->allow[i].family == AF_INET)
			memcpy(&((struct sockaddr_in *)&ss)->sin_addr,
			    c->allow[i].addr, 4);
		else
			memcpy(&((struct sockaddr_in6 *)&ss)->sin6_addr,
			    c->allow[i].addr, 16);
		printf(" %s/%d", sockaddr_str(&ss, a, sizeof(a)),
		    c->allow[i].plen);
	}
	printf("\ntimeouts header=%lds connect=%lds idle=%lds\n",
	    c->header_timeout, c->connect_timeout, c->idle_timeout);
	printf("limits connections=%ld per_client=%ld header_bytes=%ld\n",
	    c->max_conns, c->max_per_client, c->max_header_bytes);
	printf("resolver_threads %ld\nworkers %ld\n", c->resolver_threads,
	    c->workers);
	if (c->host_addresses != NULL)
		printf("host_addresses %s (%zu listed)\n", c->host_addresses,
		    policy_host_count());
	else
		printf("host_addresses none (the host's addresses are not "
		    "refused)\n");
	if (c->user_labels != NULL)
		printf("user_labels %s (%zu listed)\n", c->user_labels,
		    labels_count());
	else
		printf("user_labels none\n");
}

int
main(int argc, char *argv[])
{
	struct egress_conf conf;
	struct confdiag	 diag;
	const char	*path;
	int		 ch, check = 0, verbose = 0, rc;

	log_init("vivarium-egress", 0);
	path = config_env_str("VIVARIUM_EGRESS_CONFIG", NULL);
	while ((ch = getopt_long(argc, argv, "f:hnvV", long_options, NULL)) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout);
			return 0;
		case 'f':
			path = optarg;
			break;
		case 'n':
			check = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'V':
			printf("vivarium-egress %s\n", VIVARIUM_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	conf_defaults(&conf);
	confdiag_init(&diag, path);
	if (conf_load(&conf, path, &diag) == -1) {
		fprintf(stderr, "%s", buf_str(&diag.text));
		fprintf(stderr, "vivarium-egress: %d configuration error(s)\n",
		    diag.count);
		confdiag_release(&diag);
		conf_release(&conf);
		return 1;
	}
	confdiag_release(&diag);
	if (host_check(&conf) == -1) {
		fprintf(stderr, "vivarium-egress: 1 configuration error(s)\n");
		policy_free();
		conf_release(&conf);
		return 1;
	}
	/* Read (and a bad file said) before serving; never a refusal. */
	labels_open(conf.user_labels);
	if (check) {
		conf_print(&conf);
		printf("configuration OK\n");
		labels_free();
		policy_free();
		conf_release(&conf);
		return 0;
	}
	log_setverbose(verbose || conf.verbose);
	rc = loop_run(&conf);
	labels_free();
	policy_free();		/* again, for the ways out of loop_run */
	conf_release(&conf);
	return rc == 0 ? 0 : 1;
}
