/*
 * main.c: vivarium-supervisor, the multi-tenant front, as a daemon:
 * options and the config, the backend and the pool, the signals, the HTTP
 * front started (front.c serves the requests), the reaper thread that
 * stops idle sandboxes, and the shutdown.
 */
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "config.h"
#include "log.h"
#include "backend.h"
#include "banned.h"

#define DEFAULT_CONF	"/etc/vivarium/supervisor.yaml"

static struct conf	 conf;
static struct backend	*backend;
static volatile int	 quitting;
static pthread_mutex_t	 reaper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 reaper_cond = PTHREAD_COND_INITIALIZER;
static int		 adopted;

/* ---------------------------------------------------------------- start */

static int
host_is_loopback(const char *h)
{
	return strncmp(h, "127.", 4) == 0 || strcmp(h, "::1") == 0
	    || strcmp(h, "[::1]") == 0 || strcasecmp(h, "localhost") == 0;
}

/* Whether an http(s) URL names this machine's loopback. */
static int
url_is_loopback(const char *url)
{
	const char	*h = strstr(url, "://");
	char		 host[256];
	size_t		 n;

	if (h == NULL)
		return 0;
	h += 3;
	if (*h == '[')
		n = strcspn(h, "]") + 1;
	else
		n = strcspn(h, ":/");
	if (n >= sizeof(host))
		return 0;
	memcpy(host, h, n);
	host[n] = '\0';
	return host_is_loopback(host);
}

/* ---------------------------------------------------------------- reaper */

/* Stops idle sandboxes, retries adoption while Podman was down, and
 * lets the backend keep what it keeps (the egress proxy). */
static void *
reaper(void *arg)
{
	struct timespec	 ts;
	long		 tick;

	tick = reaper_tick(&conf);
	pthread_mutex_lock(&reaper_lock);
	while (!quitting) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += tick;
		pthread_cond_timedwait(&reaper_cond, &reaper_lock, &ts);
		if (quitting)
			break;
		pthread_mutex_unlock(&reaper_lock);
		if (!adopted && pool_adopt() == 0)
			adopted = 1;
		pool_reap();
		if (backend->tick != NULL)
			backend->tick(backend);
		pthread_mutex_lock(&reaper_lock);
	}
	pthread_mutex_unlock(&reaper_lock);
	return NULL;
}

/* The backend's engine failed a call: counted when it is its fault. */
static void
backend_error_hook(const struct berr *e)
{
	if (e->status == 0 || e->status >= 500)
		metrics_backend_error();
}

/* The backend's start-up findings, logged. */
static void
say(int level, const char *msg)
{
	if (level > 0)
		log_warnx("%s", msg);
	else
		log_info("%s", msg);
}

/* ---------------------------------------------------------------- main */

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void
usage(FILE *f)
{
	fprintf(f,
"usage: vivarium-supervisor [-hnvV] [-f config.yaml]\n"
"\n"
"The multi-tenant MCP front: routes each user's requests to that user's\n"
"sandbox, which it starts and stops through Podman.\n"
"\n"
"Options:\n"
"  -f FILE        configuration (default %s when it exists;\n"
"                 not root: also $XDG_CONFIG_HOME/vivarium/supervisor.yaml)\n"
"  -n             check the configuration, print it and exit\n"
"  -v             verbose logging\n"
"  -h, --help     print this text and exit\n"
"  -V, --version  print the version and exit\n"
"\n"
"Environment (overrides the file): VIVARIUM_SUPERVISOR_LISTEN,\n"
"VIVARIUM_SUPERVISOR_TOKEN, VIVARIUM_PODMAN_SOCKET, VIVARIUM_SANDBOX_IMAGE,\n"
"VIVARIUM_STATE_DIR, VIVARIUM_PROVISIONING, VIVARIUM_IDLE_STOP_AFTER,\n"
"VIVARIUM_PUBLIC_URL, VIVARIUM_LINK_KEY_FILE.  See docs/supervisor.md.\n",
	    DEFAULT_CONF);
}

int
main(int argc, char **argv)
{
	struct confdiag		 diag;
	struct berr		 e;
	pthread_t		 rt;
	sigset_t		 set;
	const char		*path = NULL;
	char			 defconf[PATH_MAX], err[512];
	int			 ch, check = 0, verbose = 0, sig, r;

	log_init("vivarium-supervisor", 0);
	while ((ch = getopt_long(argc, argv, "f:hnvV", long_options, NULL)) != -1) {
		switch (ch) {
		case 'f': path = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'n': check = 1; break;
		case 'v': verbose++; break;
		case 'V':
			printf("vivarium-supervisor %s\n", VIVARIUM_VERSION);
			return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (path == NULL)
		path = conf_default_path(defconf, sizeof(defconf));
	log_setverbose(verbose);

	confdiag_init(&diag, path);
	if (conf_load(&conf, path, &diag) == -1) {
		fputs(buf_str(&diag.text), stderr);
		fprintf(stderr, "vivarium-supervisor: %d error(s) in the "
		    "configuration\n", diag.count);
		confdiag_release(&diag);
		conf_release(&conf);
		return 1;
	}
	confdiag_release(&diag);
	if (check) {
		conf_print_summary(&conf, path);
		conf_release(&conf);
		return 0;
	}

	if (conf_link_keys(&conf, err, sizeof(err)) == -1)
		fatalx("%s", err);
	files_init(&conf);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
	if ((backend = backend_new(&conf, backend_error_hook)) == NULL)
		fatal("backend_new");
	metrics_backend(backend->name);
	pool_init(&conf, backend);
	if ((r = backend->check(backend, say, &e)) == -2)
		fatalx("%s", e.msg);
	if (r == -1)
		log_warnx("%s; sandboxes will be started once it is back", e.msg);
	else if (pool_adopt() == 0)
		adopted = 1;

	/* Signals are taken by sigwait below, in this thread only. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (front_start(&conf, err, sizeof(err)) == -1)
		fatalx("%s", err);
	log_info("listening on http://%s:%d/ (MCP at /mcp and /u/<user>/mcp), "
	    "provisioning %s, idle stop after %lds", conf.listen_host,
	    conf.listen_port, conf_provisioning_name(conf.provisioning),
	    conf.idle_stop_after);
	log_info("file links are made for %s (links: public_url)",
	    conf.public_url);
	if (!host_is_loopback(conf.listen_host) && url_is_loopback(conf.public_url))
		log_warnx("WARNING: file links point at %s, this machine's "
		    "loopback, but the supervisor listens on %s: browsers on "
		    "other machines cannot open them; set links: public_url "
		    "to the address people use (docs/supervisor.md)",
		    conf.public_url, conf.listen_host);
	if (pthread_create(&rt, NULL, reaper, NULL) != 0)
		fatalx("cannot start the reaper thread");

	while (sigwait(&set, &sig) == 0 && sig != SIGINT && sig != SIGTERM)
		;
	log_info("shutting down");
	pthread_mutex_lock(&reaper_lock);
	quitting = 1;
	pthread_cond_signal(&reaper_cond);
	pthread_mutex_unlock(&reaper_lock);
	pthread_join(rt, NULL);
	front_stop();
	pool_shutdown();
	backend->free(backend);
	conf_release(&conf);
	curl_global_cleanup();
	return 0;
}
