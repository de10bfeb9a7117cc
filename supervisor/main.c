/*
 * main.c: vivarium-supervisor, the multi-tenant front.
 *
 * LibreChat sends MCP to /mcp (user in a header) or /u/<user>/mcp; the
 * supervisor checks the token, Origin and user id, finds or creates the
 * user's sandbox through Podman, and relays the request to the agent on the
 * sandbox's unix socket, streaming the answer back as it comes.
 *
 * libmicrohttpd runs a thread per connection: provisioning and relaying
 * block, and the number of connections LibreChat keeps is small.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>

#include "buf.h"
#include "config.h"
#include "jsonrpc.h"
#include "log.h"
#include "mhd.h"
#include "origin.h"
#include "backend.h"
#include "banned.h"

#define DEFAULT_CONF	"/etc/vivarium/supervisor.yaml"

static struct conf	 conf;
static struct backend	*backend;
static volatile int	 quitting;
static pthread_mutex_t	 reaper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 reaper_cond = PTHREAD_COND_INITIALIZER;
static int		 adopted;

/* ---------------------------------------------------------------- replies */

static enum MHD_Result
reply_error(struct MHD_Connection *conn, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Errors go out as a JSON-RPC error object: MCP clients show its message,
 * and a person reading the body with curl sees the same sentence.
 */
static enum MHD_Result
reply_error(struct MHD_Connection *conn, int status, const char *fmt, ...)
{
	struct MHD_Response	*resp;
	json_t			*j;
	va_list			 ap;

	/* jsonrpc_verror makes the message UTF-8: it may quote a URL. */
	va_start(ap, fmt);
	j = jsonrpc_verror(NULL, -32000, fmt, ap);
	va_end(ap);
	resp = j != NULL ? http_response_json(j) : NULL;
	json_decref(j);
	if (resp == NULL)
		return MHD_NO;
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		    "Bearer realm=\"vivarium\"");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
		    "GET, POST, DELETE");
	metrics_request(status);
	return http_queue(conn, (unsigned)status, resp);
}

static enum MHD_Result
reply_health(struct MHD_Connection *conn)
{
	json_t		*j;
	enum MHD_Result	 r;

	j = json_pack("{s:s, s:s}", "status", "ok", "version", VIVARIUM_VERSION);
	metrics_request(200);
	r = http_reply_json(conn, 200, j);
	json_decref(j);
	return r;
}

static enum MHD_Result
reply_metrics(struct MHD_Connection *conn)
{
	struct buf		 b = BUF_INIT(1 << 20);
	struct MHD_Response	*resp;
	char			*s;
	size_t			 len;

	metrics_request(200);	/* counted before rendering: includes itself */
	metrics_render(&b);
	s = buf_detach(&b, &len);
	resp = MHD_create_response_from_buffer(len, s, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "text/plain; version=0.0.4");
	return http_queue(conn, 200, resp);
}

/* ---------------------------------------------------------------- relay */

struct relay {
	struct agent_conn	 agent;
	struct sandbox		*sb;
	size_t			 sent;
};

static ssize_t
relay_read(void *cls, uint64_t pos, char *dst, size_t max)
{
	struct relay	*r = cls;
	char		 where[AGENT_ADDR_STRLEN];
	ssize_t		 n;

	n = agent_read(&r->agent, dst, max);
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n < 0 && r->agent.client_gone) {
		/* Closing the agent connection (relay_free) stops the run. */
		log_info("%s: the client went away after %zu bytes of the "
		    "reply", agent_addr_str(pool_addr(r->sb), where, sizeof(where)), r->sent);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	if (n < 0) {
		log_warnx("%s: the sandbox's reply broke off after %zu bytes",
		    agent_addr_str(pool_addr(r->sb), where, sizeof(where)), r->sent);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	r->sent += (size_t)n;
	if (r->sent > conf.max_response) {
		log_warnx("%s: reply over the %llu-byte cap, cut off",
		    agent_addr_str(pool_addr(r->sb), where, sizeof(where)), conf.max_response);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	return n;
}

static void
relay_free(void *cls)
{
	struct relay	*r = cls;

	if (agent_reusable(&r->agent)) {
		pool_conn_put(r->sb, r->agent.fd);
		r->agent.fd = -1;
	}
	agent_close(&r->agent);
	pool_release(r->sb);
	free(r);
}

static enum MHD_Result
relay(struct MHD_Connection *conn, const char *method, const char *user,
    const char *body, size_t body_len)
{
	const union MHD_ConnectionInfo *ci;
	struct agent_req	 ar;
	struct pool_err		 perr;
	struct relay		*r;
	struct MHD_Response	*resp;
	struct sandbox		*sb;
	const struct agent_head	*h;
	char			 err[512];
	int			 cf, attempt, timeout, cfd = -1;

	memset(&ar, 0, sizeof(ar));
	ar.method = method;
	ar.path = "/mcp";
	ar.content_type = http_header(conn, "Content-Type");
	ar.accept = http_header(conn, "Accept");
	ar.session_id = http_header(conn, "Mcp-Session-Id");
	ar.protocol_version = http_header(conn, "MCP-Protocol-Version");
	/* 2026-07-28: the agent checks them against the body. */
	ar.mcp_method = http_header(conn, "Mcp-Method");
	ar.mcp_name = http_header(conn, "Mcp-Name");
	ar.last_event_id = http_header(conn, "Last-Event-ID");
	ar.body = body;
	ar.body_len = body_len;
	/* The client's closing stops the wait, and so the run (forward.c). */
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci != NULL) {
		cfd = ci->connect_fd;
		ar.client_fd = &cfd;
	}
	/* A GET is a stream the server may keep open as long as it likes. */
	timeout = strcmp(method, "GET") == 0 ? -1
	    : (int)(conf.agent_timeout * 1000);

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return MHD_NO;
	if ((sb = pool_acquire(user, 0, &perr)) == NULL) {
		free(r);
		return reply_error(conn, perr.http, "%s", perr.msg);
	}
	for (attempt = 0;; attempt++) {
		if (agent_open(&r->agent, pool_addr(sb), &ar,
		    pool_conn_take(sb), timeout, &cf, err, sizeof(err)) == 0)
			break;
		if (r->agent.client_gone) {
			/* Nobody to answer; the agent saw its connection close. */
			log_info("%s: the client went away before the sandbox "
			    "answered", user);
			pool_release(sb);
			free(r);
			return MHD_NO;
		}
		if (!cf || attempt > 0) {
			pool_release(sb);
			free(r);
			return reply_error(conn, 502, "the sandbox for \"%s\" did "
			    "not answer: %s", user, err);
		}
		/* Nobody listens: it died, was removed or stopped.  Look. */
		{
			unsigned gen = pool_gen(sb);
			pool_release(sb);
			if ((sb = pool_acquire(user, gen, &perr)) == NULL) {
				free(r);
				return reply_error(conn, perr.http, "%s",
				    perr.msg);
			}
		}
	}
	r->sb = sb;
	h = &r->agent.head;
	resp = MHD_create_response_from_callback(
	    h->content_length >= 0 ? (uint64_t)h->content_length
	    : MHD_SIZE_UNKNOWN, 32 * 1024, relay_read, r, relay_free);
	if (resp == NULL) {
		relay_free(r);
		return MHD_NO;
	}
	if (h->content_type[0])
		MHD_add_response_header(resp, "Content-Type", h->content_type);
	if (h->session_id[0])
		MHD_add_response_header(resp, "Mcp-Session-Id", h->session_id);
	if (h->protocol_version[0])
		MHD_add_response_header(resp, "MCP-Protocol-Version",
		    h->protocol_version);
	if (h->cache_control[0])
		MHD_add_response_header(resp, "Cache-Control", h->cache_control);
	metrics_request(h->status);
	return http_queue(conn, (unsigned)h->status, resp);
}

/* ---------------------------------------------------------------- access */

/* The user a request is for: from the path or the configured header. */
static int
request_user(struct MHD_Connection *conn, enum route rt, const char *purl,
    size_t plen, char *out, size_t outlen, char *why, size_t whylen)
{
	const char	*u, *h;
	size_t		 len;
	int		 refused;

	/* Ambiguity is refused, never resolved: a header sent twice or cut
	 * by a NUL, or a path and a header naming two users. */
	h = http_header_strict(conn, conf.user_header, &refused, why, whylen);
	if (refused)
		return -1;
	if (rt == ROUTE_USER_MCP) {
		u = purl;
		len = plen;
		if (h != NULL && (strlen(h) != len || memcmp(h, u, len) != 0)) {
			snprintf(why, whylen, "the path names user \"%.*s\" but "
			    "the %s header names \"%.80s\": send one of them, "
			    "or both the same", len > 80 ? 80 : (int)len, u,
			    conf.user_header, h);
			return -1;
		}
	} else {
		u = h;
		if (u == NULL || *u == '\0') {
			snprintf(why, whylen, "missing %s header: the supervisor "
			    "needs to know whose sandbox to use (LibreChat: "
			    "headers: %s: \"{{LIBRECHAT_USER_ID}}\"), or use "
			    "/u/<user>/mcp", conf.user_header, conf.user_header);
			return -1;
		}
		len = strlen(u);
	}
	if (route_user_valid(u, len) == -1) {
		snprintf(why, whylen, "invalid user id \"%.*s\": %s",
		    len > 80 ? 80 : (int)len, u, route_user_rule);
		return -1;
	}
	if (len >= outlen)
		return -1;
	memcpy(out, u, len);
	out[len] = '\0';
	return 0;
}

static enum MHD_Result
access_handler(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct http_request	*req;
	enum route		 rt;
	const char		*purl, *origin, *auth, *name;
	size_t			 plen;
	char			 user[USER_ID_MAX + 1], why[512];
	int			 refused;

	/* File links carry their own authority: no token, any Origin. */
	if (files_match(url))
		return (enum MHD_Result)files_access(conn, url, method,
		    upload_data, upload_data_size, con_cls);
	rt = route_match(url, &purl, &plen);
	if (*con_cls == NULL) {
		/* First call, headers only: every check before any body. */
		switch (rt) {
		case ROUTE_NONE:
			return reply_error(conn, 404, "no such endpoint %.100s: "
			    "MCP is at /mcp or /u/<user>/mcp", url);
		case ROUTE_HEALTH:
			return reply_health(conn);
		case ROUTE_METRICS:
			return reply_metrics(conn);
		case ROUTE_MCP:
		case ROUTE_USER_MCP:
			break;
		}
		origin = http_header_strict(conn, "Origin", &refused, why,
		    sizeof(why));
		if (refused)
			return reply_error(conn, 400, "%s", why);
		if (!origin_allowed(conf.origins, origin))
			return reply_error(conn, 403, "Origin %.200s is not "
			    "allowed (allowed_origins in the supervisor's "
			    "config)", origin);
		/* A malformed Authorization is a 400, not a 401: LibreChat
		 * reads 401 as "OAuth needed". */
		auth = http_header_strict(conn, "Authorization", &refused, why,
		    sizeof(why));
		if (refused)
			return reply_error(conn, 400, "%s", why);
		if (!route_token_ok(auth, conf.token))
			return reply_error(conn, 401, "%s", auth == NULL
			    ? "missing Authorization: Bearer <token> header"
			    : "wrong token in the Authorization header");
		/*
		 * Past the token: the connection may stay as long as a relayed
		 * run (MHD checks this right after our reader returns, so a
		 * run that stays silent for longer would be cut off), and is
		 * never evicted to make room.
		 */
		http_guard_bearer(conn, (unsigned)(conf.agent_timeout + 60));
		if (request_user(conn, rt, purl, plen, user, sizeof(user), why,
		    sizeof(why)) == -1)
			return reply_error(conn, 400, "%s", why);
		if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0
		    && strcmp(method, "DELETE") != 0)
			return reply_error(conn, 405, "method %.20s is not "
			    "allowed on the MCP endpoint (GET, POST, DELETE)",
			    method);
	}
	switch (http_collect(conn, con_cls, upload_data, upload_data_size,
	    conf.max_body, &req)) {
	case HTTP_COLLECT_MORE:
		return MHD_YES;
	case HTTP_COLLECT_ANSWERED:
		metrics_request(413);
		return req->ret;
	case HTTP_COLLECT_FAILED:
		return MHD_NO;
	case HTTP_COLLECT_DONE:
		break;
	}
	if (request_user(conn, rt, purl, plen, user, sizeof(user), why,
	    sizeof(why)) == -1)
		return reply_error(conn, 400, "%s", why);
	/* Who the user is, for people (vivariumctl list): never routed on. */
	if ((name = http_header(conn, conf.user_name_header)) != NULL)
		(void)names_record(&conf, user, name);
	return relay(conn, method, user, req->body.data ? req->body.data : "",
	    req->body.len);
}

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
	struct MHD_Daemon	*d;
	struct http_guard	*guard;
	struct berr		 e;
	pthread_t		 rt;
	sigset_t		 set;
	const char		*path = NULL;
	char			 defconf[PATH_MAX];
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
		if (conf.backend == BACKEND_KUBERNETES)
			printf("configuration OK%s%s: listen %s:%d, kubernetes "
			    "namespace %s, image %s, provisioning %s\n",
			    path ? " in " : "", path ? path : "",
			    conf.listen_host, conf.listen_port,
			    conf.kube.namespace, conf.kube.image != NULL
			    ? conf.kube.image : conf.image,
			    conf_provisioning_name(conf.provisioning));
		else
			printf("configuration OK%s%s: listen %s:%d, podman %s, "
			    "image %s, provisioning %s\n", path ? " in " : "",
			    path ? path : "", conf.listen_host,
			    conf.listen_port, conf.podman_socket, conf.image,
			    conf_provisioning_name(conf.provisioning));
		conf_release(&conf);
		return 0;
	}

	{
		char err[512];

		if (conf_link_keys(&conf, err, sizeof(err)) == -1)
			fatalx("%s", err);
	}
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

	{
		struct sockaddr_storage	 ss;
		struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_PASSIVE,
		    .ai_socktype = SOCK_STREAM }, *ai;
		char port[16];
		int gai;

		snprintf(port, sizeof(port), "%d", conf.listen_port);
		if ((gai = getaddrinfo(conf.listen_host, port, &hints, &ai)) != 0)
			fatalx("listen address %s: %s", conf.listen_host,
			    gai_strerror(gai));
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		struct http_guard_limits lim = {
			/* Room is made while a few slots are still free, so
			 * the new connection that triggers it is taken. */
			.soft = (unsigned)(conf.max_connections > 32 ?
			    conf.max_connections - 16 :
			    conf.max_connections / 2),
			/* A head, once begun, as long as silence before it. */
			.deadline = (unsigned)conf.auth_timeout,
			.xfer_max = (unsigned)conf.link_max_transfers,
			.xfer_per_address = (unsigned)conf.link_max_per_address,
			.xfer_per_link = (unsigned)conf.link_max_per_link,
			.min_rate = conf.link_min_rate,
			.grace = (unsigned)conf.link_rate_grace,
		};

		guard = http_guard_new(&lim);
		if (guard == NULL)
			fatal("http_guard_new");
		/*
		 * poll(), not select(): a select() daemon refuses descriptors
		 * past FD_SETSIZE, so about 1,100 idle connections locked
		 * everyone out.  Before the token a connection gets
		 * auth_timeout of silence, and the oldest of them makes room
		 * when the total nears max_connections; link transfers have
		 * caps below it and a floor rate (http_guard).
		 */
		d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION
		    | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG
		    | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		    (uint16_t)conf.listen_port, NULL, NULL, access_handler, NULL,
		    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		    MHD_OPTION_CONNECTION_LIMIT, (unsigned)conf.max_connections,
		    MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		    (unsigned)(conf.max_per_address < conf.max_connections ?
		    conf.max_per_address : conf.max_connections),
		    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)conf.auth_timeout,
		    /* Room for 128 KiB sends of a relayed file (the default
		     * pool of 32 KiB holds the head and little more). */
		    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(192 * 1024),
		    MHD_OPTION_NOTIFY_CONNECTION, http_guard_notify, guard,
		    MHD_OPTION_NOTIFY_COMPLETED, http_request_completed, NULL,
		    MHD_OPTION_END);
		freeaddrinfo(ai);
	}
	if (d == NULL)
		fatalx("cannot listen on %s:%d (in use, or not an address of "
		    "this machine?)", conf.listen_host, conf.listen_port);
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
	MHD_stop_daemon(d);
	http_guard_free(guard);
	pool_shutdown();
	backend->free(backend);
	conf_release(&conf);
	curl_global_cleanup();
	return 0;
}
