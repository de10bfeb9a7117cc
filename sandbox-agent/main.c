/*
 * vivarium-agent: the MCP server that runs Python for a model, inside a
 * sandbox (or on a host for single-user use).  See docs/agent.md.
 */
#include <sys/prctl.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "warm.h"
#include "banned.h"

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "pycheck", no_argument, NULL, 'P' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void
usage(FILE *f)
{
	fprintf(f,
"usage: vivarium-agent [-hnvV] [--pycheck]\n"
"\n"
"An MCP server (streamable HTTP at /mcp, health at /health) with seven tools\n"
"over one workspace directory: run_python, job_status, list_files,\n"
"read_text_file, share_file, upload_link and workspace_link.\n"
"\n"
"Options:\n"
"  -n             check the configuration, print it and exit\n"
"  --pycheck      ask the runs' Python which modules it has, print the\n"
"                 answer, keep it in VIVARIUM_PYCHECK_CACHE when set, and\n"
"                 exit (1 when the runner or the data stack is missing)\n"
"  -v             verbose logging\n"
"  -h, --help     print this text and exit\n"
"  -V, --version  print the version and exit\n"
"\n"
"Configuration comes from the environment (defaults in brackets):\n"
"  VIVARIUM_WORKDIR            workspace directory [/workspace]\n"
"  VIVARIUM_HOST, VIVARIUM_PORT  TCP listener [127.0.0.1, 8000]; PORT=off:\n"
"                              none, PORT=0: any free port (logged);\n"
"                              HOST=0.0.0.0 (or ::, or an address of this\n"
"                              machine) listens beyond loopback: set a token\n"
"  VIVARIUM_AGENT_TOKEN        /mcp requests on TCP need Authorization:\n"
"                              Bearer <it> (32-128 printable characters;\n"
"                              link pages stay open) [none]\n"
"  VIVARIUM_AGENT_TOKEN_FILE   the same, read from this file\n"
"  VIVARIUM_SOCKET             also listen on this unix socket\n"
"  VIVARIUM_AGENT_SECRET       TCP requests but /health need Authorization:\n"
"                              Bearer <it> (32-128 printable characters;\n"
"                              a sandbox reached over a network) [none]\n"
"  VIVARIUM_AGENT_SECRET_FILE  the same, read from this file\n"
"  VIVARIUM_SOCKET_MODE        its permissions, octal [0600]\n"
"  VIVARIUM_MAX_TIMEOUT        upper bound for timeout_seconds [300]\n"
"  VIVARIUM_OUTPUT_LIMIT       characters kept per stream: the first quarter\n"
"                              and the tail [20000]\n"
"  VIVARIUM_MAX_IMAGES         PNGs returned per call, 0 = none [4]\n"
"  VIVARIUM_MAX_IMAGE_SIDE     longest side of returned PNGs, px [1280]\n"
"  VIVARIUM_MAX_IMAGE_BYTES    bytes per returned PNG: palette when faithful,\n"
"                              then smaller until it fits [25600]\n"
"  VIVARIUM_MAX_RESULT_IMAGE_BYTES  bytes of all PNGs of one call; an image\n"
"                              that cannot fit is left out, and named [102400]\n"
"  VIVARIUM_PERSIST_NAMESPACE  keep the Python namespace between calls [1]\n"
"  VIVARIUM_NAMESPACE_MAX_BYTES  cap on the stored namespace [268435456]\n"
"  VIVARIUM_STATE_SUMMARY      append the '--- state ---' footer [1]\n"
"  VIVARIUM_USER_HEADER        header naming the user; each user gets\n"
"                              users/<id>/ [unset: one shared workspace]\n"
"  VIVARIUM_ALLOWED_ORIGINS    comma-separated browser Origins allowed\n"
"                              besides loopback ones, or * [none]\n"
"  VIVARIUM_PYTHON             interpreter [python3]\n"
"  VIVARIUM_PYTHONPATH         where the vivarium runner package is\n"
"                              [python/ beside the bin/ holding this program]\n"
"  VIVARIUM_PYCHECK_CACHE      a file keeping the answer of the start-up\n"
"                              check of VIVARIUM_PYTHON's modules (the\n"
"                              image's, made at build) [none: ask at start]\n"
"  VIVARIUM_WARM               fork runs from a warm interpreter [1]\n"
"  VIVARIUM_WARM_IMPORTS       modules it imports first\n"
"                              [numpy,pandas,matplotlib,matplotlib.pyplot]\n"
"  VIVARIUM_SWEEP              containers only: after runs, kill every\n"
"                              process but the agent, PID 1 and the zygote;\n"
"                              refused as root or as PID 1 [0]\n"
"\n"
"File links (share_file, upload_link, workspace_link; docs/agent.md):\n"
"  VIVARIUM_PUBLIC_URL         the address browsers use for this agent\n"
"                              [http://HOST:PORT of the TCP listener]\n"
"  VIVARIUM_LINK_KEY_FILE      signing key, made on first start (0600)\n"
"                              [WORKDIR/.vivarium/link.key]; with\n"
"                              VIVARIUM_LINK_USER one user's key, read and\n"
"                              removed at start\n"
"  VIVARIUM_LINK_KEY, VIVARIUM_LINK_USER  one user's key, set by the\n"
"                              supervisor in its sandboxes\n"
"  VIVARIUM_DOWNLOAD_LIFETIME  how long share_file links last [24h]\n"
"  VIVARIUM_UPLOAD_LIFETIME    how long upload links last [1h]\n"
"  VIVARIUM_LINK_MAX_LIFETIME  no link lasts longer [7d]\n"
"  VIVARIUM_UPLOAD_MAX_BYTES   largest upload [2g]\n");
}

static void
print_config(const struct agent_config *c)
{
	printf("workdir            %s\n", c->workdir);
	if (c->port >= 0)
		printf("tcp                %s:%ld\n", c->host, c->port);
	else
		printf("tcp                off\n");
	if (c->port >= 0)
		printf("tcp secret         %s\n", c->secret_len > 0 ? "set: every "
		    "request but /health needs it" : "(none)");
	if (c->port >= 0)
		printf("tcp token          %s\n", c->token_len > 0 ? "set: /mcp "
		    "needs it" : "(none)");
	if (c->port >= 0 && c->secret_len == 0 && c->token_len == 0 &&
	    agent_config_exposed(c))
		printf("warning            %s\n", agent_exposed_warning);
	printf("socket             %s", c->socket ? c->socket : "(none)");
	if (c->socket)
		printf(" (mode %04o)", (unsigned int)c->socket_mode);
	printf("\n");
	printf("max_timeout        %ld s\n", c->max_timeout);
	printf("output_limit       %ld characters\n", c->output_limit);
	printf("max_images         %ld\n", c->max_images);
	printf("max_image_side     %ld px\n", c->max_image_side);
	printf("max_image_bytes    %ld bytes per image, %ld per result\n",
	    c->max_image_bytes, c->max_result_image_bytes);
	printf("file links         %s%s\n", c->link_user ? "signed for one "
	    "user (from the supervisor)" : c->link_key_file ? "served on the "
	    "TCP listener, key " : "off (no TCP listener, no key)",
	    c->link_user == NULL && c->link_key_file ? c->link_key_file : "");
	printf("persist_namespace  %d\n", c->persist_namespace);
	printf("namespace_max      %llu bytes\n", c->namespace_max_bytes);
	printf("state_summary      %d\n", c->state_summary);
	printf("user_header        %s\n", c->user_header ? c->user_header :
	    "(unset: one shared workspace)");
	printf("allowed_origins    %s\n", c->allowed_origins[0] ?
	    c->allowed_origins : "(loopback only)");
	printf("python             %s\n", c->python);
	printf("pythonpath         %s\n", c->pythonpath ? c->pythonpath :
	    "(none)");
	printf("warm               %d (imports %s)\n", c->warm,
	    c->warm_imports);
	printf("sweep              %d\n", c->sweep);
}

/* After the first signal: a second one ends the program at once. */
static void *
second_signal(void *arg)
{
	sigset_t	*set = arg;
	int		 sig;

	if (sigwait(set, &sig) == 0) {
		log_warnx("signal %d again: exiting without waiting", sig);
		_exit(128 + sig);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	struct agent_config	 cfg;
	struct confdiag		 diag;
	sigset_t		 set;
	pthread_t		 tid;
	int			 ch, check = 0, verbose = 0, sig, ask = 0;

	while ((ch = getopt_long(argc, argv, "hnvV", long_options, NULL)) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout);
			return 0;
		case 'n':
			check = 1;
			break;
		case 'P':
			ask = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'V':
			printf("vivarium-agent %s\n", VIVARIUM_VERSION);
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
	log_init("vivarium-agent", verbose);
	init_maybe();

	confdiag_init(&diag, NULL);
	if (agent_config_load(&cfg, &diag) == -1) {
		fprintf(stderr, "vivarium-agent: %d configuration problem(s):\n%s",
		    diag.count, buf_str(&diag.text));
		confdiag_release(&diag);
		agent_config_release(&cfg);
		return 1;
	}
	confdiag_release(&diag);
	if (check) {
		print_config(&cfg);
		printf("configuration OK\n");
		agent_config_release(&cfg);
		return 0;
	}
	if (ask) {
		int r = pycheck(&cfg);

		printf("%s\n", pycheck_modules());
		if (r == 1)
			printf("%s lacks the runner or the data stack\n",
			    cfg.python);
		agent_config_release(&cfg);
		return r == 0 ? 0 : 1;
	}
	/*
	 * Holding a user's link key or the agent secret: runs (the same
	 * uid) may not read them out of our memory through /proc/<pid>/mem
	 * or ptrace.  Runs are exec'd, which makes them dumpable again.
	 */
	if ((cfg.link_user != NULL || cfg.secret_len > 0)
	    && prctl(PR_SET_DUMPABLE, 0) == -1)
		log_warn("prctl(PR_SET_DUMPABLE)");

	/*
	 * Block the stop signals before any thread exists, so every thread
	 * inherits the mask and only sigwait below sees them.
	 */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	sweep_setup(cfg.sweep, warm_zygote_pid, warm_swept);
	{
		char err[512];

		if (tools_load(err, sizeof(err)) == -1) {
			log_warnx("%s", err);
			agent_config_release(&cfg);
			return 1;
		}
		if (agent_config_links(&cfg, err, sizeof(err)) == -1)
			log_warnx("file links are off: %s", err);
	}
	files_init(&cfg);
	pycheck(&cfg);
	tools_warm_start(&cfg);
	if (agent_http_start(&cfg) == -1) {
		agent_config_release(&cfg);
		return 1;
	}
	log_info("serving workspace %s%s (vivarium-agent %s)%s", cfg.workdir,
	    cfg.user_header ? " (per-user: users/<id>/)" : "", VIVARIUM_VERSION,
	    cfg.sweep ? "; leftover processes are killed after runs" : "");

	while (sigwait(&set, &sig) != 0)
		;
	log_info("signal %d: finishing requests in progress, then exiting "
	    "(send it again to exit now)", sig);
	if (pthread_create(&tid, NULL, second_signal, &set) == 0)
		pthread_detach(tid);
	/* Background jobs have no request to wait for: they are stopped. */
	jobs_shutdown(2);
	agent_http_stop((double)cfg.max_timeout + 10);
	log_info("stopped");
	agent_config_release(&cfg);
	return 0;
}
