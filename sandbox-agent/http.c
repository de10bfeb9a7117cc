/*
 * http.c: the agent's listeners and its one access handler.
 *
 * libmicrohttpd runs in thread-per-connection mode.  A run_python request
 * blocks its connection's thread for as long as the code runs (up to
 * VIVARIUM_MAX_TIMEOUT), so a fixed pool would let a few long runs starve
 * /health, tools/list and list_files; with a thread per connection every
 * other connection keeps being served, and per-workspace serialisation is
 * a lock (workspace.c), not a property of the thread model.  The number of
 * connections, hence threads, is capped.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "bearer.h"
#include "fileweb.h"
#include "jsonrpc.h"
#include "clock.h"
#include "log.h"
#include "mhd.h"
#include "origin.h"
#include "proof.h"
#include "banned.h"

#define MAX_CONNECTIONS		256
#define IDLE_TIMEOUT_S		300
#define FIRST_REQUEST_S		10	/* silence allowed before a request */
/* A request's head, once begun, and then its body must be in within this
 * (http_guard): a client sending them slowly holds a slot no longer. */
#define REQUEST_DEADLINE_S	30
/* File links on an open TCP listener: caps and the floor (http_guard). */
#define LINK_MAX_TRANSFERS	64
#define LINK_PER_ADDRESS	16
#define LINK_PER_LINK		8
#define LINK_MIN_RATE		1024	/* bytes a second ... */
#define LINK_RATE_GRACE		60	/* ... over each window of seconds */

static struct MHD_Daemon	*tcp_daemon, *unix_daemon;
static const struct agent_config *conf;
static dev_t			 sock_dev;
static ino_t			 sock_ino;
/* Requests between their first byte and their answer's last: what a stop waits for. */
static int			 active;

/* An HTTP-level refusal on /mcp, worded as a JSON-RPC error for MCP clients. */
static enum MHD_Result
mcp_refuse(struct MHD_Connection *conn, unsigned int status, const char *msg)
{
	json_t		*e;
	enum MHD_Result	 ret;

	e = jsonrpc_error(NULL, status == 400 ? RPC_INVALID_REQUEST : -32000,
	    "%s", msg);
	if (e == NULL)
		return MHD_NO;
	ret = http_reply_json(conn, status, e);
	json_decref(e);
	return ret;
}

/*
 * VIVARIUM_AGENT_SECRET: on TCP every request but /health carries it as
 * Authorization: Bearer; VIVARIUM_AGENT_TOKEN: every /mcp request does.
 * Sent twice or cut by a NUL is as wrong as a wrong one.  Answers 401 and
 * returns 1 when refused.  Neither the value nor what was sent is ever
 * logged.
 */
static int
bearer_refused(struct MHD_Connection *conn, const char *url, int token,
    enum MHD_Result *ret)
{
	struct MHD_Response	*resp;
	const char		*auth;
	char			 why[256];
	json_t			*e;
	int			 refused;

	auth = http_header_strict(conn, "Authorization", &refused, why,
	    sizeof(why));
	if (!refused && (token ? bearer_ok(auth, conf->token, conf->token_len) :
	    bearer_ok(auth, conf->secret, conf->secret_len)))
		return 0;
	log_warnx("refused a request for %.200s on TCP: %s", url,
	    refused ? why : auth == NULL ? "no Authorization header" : token ?
	    "not the agent token (VIVARIUM_AGENT_TOKEN)" :
	    "not the agent secret (VIVARIUM_AGENT_SECRET)");
	e = jsonrpc_error(NULL, -32000, "%s", token ? "Unauthorized: this "
	    "agent needs Authorization: Bearer <its VIVARIUM_AGENT_TOKEN> on "
	    "/mcp" : "Unauthorized: this agent needs Authorization: Bearer "
	    "<its VIVARIUM_AGENT_SECRET> on every request but /health");
	resp = e != NULL ? http_response_json(e) : NULL;
	json_decref(e);
	if (resp == NULL) {
		*ret = MHD_NO;
		return 1;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
	    "Bearer");
	*ret = http_queue(conn, MHD_HTTP_UNAUTHORIZED, resp);
	return 1;
}

/*
 * /health on TCP with a secret: open to all (the kubelet's readiness
 * probe), and for a PROOF_CHALLENGE the answer that we hold the secret,
 * for the address this connection came to (common/proof.h).  The
 * supervisor sends nothing of the user's before it checked that answer.
 */
static enum MHD_Result
health_proof(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;
	struct sockaddr_storage	 ss;
	struct MHD_Response	*resp;
	socklen_t		 sl = sizeof(ss);
	const char		*nonce;
	char			 why[256], addr[PROOF_ADDR_MAX];
	char			 answer[PROOF_HEX + 1];
	int			 refused, port;

	nonce = http_header_strict(conn, PROOF_CHALLENGE, &refused, why,
	    sizeof(why));
	if (!refused && nonce == NULL)
		return http_reply_text(conn, 200, "ok");
	if (refused || !proof_nonce_valid(nonce))
		return http_reply_text(conn, 400, "Bad Request: "
		    PROOF_CHALLENGE " must be one nonce of 32 lowercase hex "
		    "digits");
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci == NULL || getsockname(ci->connect_fd, (struct sockaddr *)&ss,
	    &sl) == -1 || proof_addr((struct sockaddr *)&ss, addr,
	    &port) == -1) {
		log_warnx("cannot prove the agent secret: this connection's "
		    "address is unknown");
		return http_reply_text(conn, 500, "no address to prove for");
	}
	proof_make(conf->secret, conf->secret_len, nonce, addr, port, answer);
	if ((resp = http_response_text("ok\n")) == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, PROOF_ANSWER, answer);
	return http_queue(conn, 200, resp);
}

/*
 * Checks done before reading a POST body; answers and returns 1 on refusal.
 * Content-Type is not checked: the body must parse as JSON either way, and
 * browsers' cross-site "simple" requests are stopped by the Origin check.
 */
static int
mcp_precheck(struct MHD_Connection *conn, enum MHD_Result *ret)
{
	const char	*id;
	char		 msg[512], why[256];
	int		 refused;

	if (conf->user_header == NULL)
		return 0;
	/* Sent twice, or cut short by a NUL: refused, never guessed at. */
	id = http_header_strict(conn, conf->user_header, &refused, why,
	    sizeof(why));
	if (refused) {
		snprintf(msg, sizeof(msg), "Bad Request: %s", why);
		*ret = mcp_refuse(conn, 400, msg);
		return 1;
	}
	if (id == NULL) {
		snprintf(msg, sizeof(msg), "Bad Request: the %s header is "
		    "required (it names the user whose workspace to use)",
		    conf->user_header);
		*ret = mcp_refuse(conn, 400, msg);
		return 1;
	}
	if (!workspace_user_id_valid(id)) {
		snprintf(msg, sizeof(msg), "Bad Request: the %s header must be "
		    "a safe user id: 1 to 64 letters, digits, '-', '_' or '.', "
		    "not starting with '.'", conf->user_header);
		*ret = mcp_refuse(conn, 400, msg);
		return 1;
	}
	return 0;
}

static enum MHD_Result
mcp_post(struct MHD_Connection *conn, const struct http_request *req)
{
	const union MHD_ConnectionInfo *ci;
	struct agent_ctx	 ctx;
	struct call_io		 io;
	struct MHD_Response	*resp;
	char			 ws[4096], label[128], err[512];
	char			 session[MCP_SESSION_SIZE] = "";
	const char		*id = NULL;
	json_t			*reply;
	unsigned int		 status;

	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = conf;
	ctx.client = mcp_session_client(http_header(conn, "Mcp-Session-Id"));
	ctx.session_out = session;
	ctx.hdr_method = http_header(conn, "Mcp-Method");
	ctx.hdr_name = http_header(conn, "Mcp-Name");
	ctx.workspace = conf->workdir;
	ctx.label = "workspace";
	if (conf->user_header != NULL) {
		id = http_header(conn, conf->user_header);
		if (workspace_user_dir(conf->workdir, id, ws, sizeof(ws), err,
		    sizeof(err)) == -1) {
			log_warnx("user %s: %s", id, err);
			return mcp_refuse(conn, 500, err);
		}
		snprintf(label, sizeof(label), "user %s", id);
		ctx.workspace = ws;
		ctx.label = label;
		ctx.user = id;
	}
	/*
	 * A tools/call with a progressToken is answered as an SSE stream,
	 * whose 200 goes out before the call runs: a 2026-07-28 request with
	 * headers that disagree with its body gets its 400 first.
	 */
	if (sse_wanted(http_header(conn, "Accept"), buf_str(&req->body),
	    req->body.len) && (status = mcp_refused(&ctx,
	    http_header(conn, "MCP-Protocol-Version"), buf_str(&req->body),
	    req->body.len, &reply)) != 0) {
		resp = reply != NULL ? http_response_json(reply) : NULL;
		json_decref(reply);
		return http_queue(conn, status, resp);
	}
	if (sse_wanted(http_header(conn, "Accept"), buf_str(&req->body),
	    req->body.len))
		return (enum MHD_Result)sse_serve(conn, &ctx,
		    http_header(conn, "MCP-Protocol-Version"),
		    buf_str(&req->body), req->body.len);
	/*
	 * This thread blocks in the call; the connection is watched for the
	 * client's closing, which stops a run like a cancel does.
	 */
	memset(&io, 0, sizeof(io));
	io.hangup_fd = io.abandon_fd = -1;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci != NULL)
		io.hangup_fd = ci->connect_fd;
	ctx.io = &io;
	status = mcp_handle(&ctx, http_header(conn, "MCP-Protocol-Version"),
	    buf_str(&req->body), req->body.len, &reply);
	if (reply == NULL)
		return http_reply_empty(conn, status == 202 ? 202 : 500, NULL);
	resp = http_response_json(reply);
	json_decref(reply);
	if (resp != NULL && session[0] != '\0')
		MHD_add_response_header(resp, "Mcp-Session-Id", session);
	return http_queue(conn, status, resp);
}

static enum MHD_Result
agent_access(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct http_request	*req;
	enum MHD_Result		 ret;
	enum http_collect	 hc;
	const char		*origin;
	int			 on_unix = cls != NULL, fresh = *con_cls == NULL;
	/*
	 * The unix socket, or TCP guarded by a secret: only the supervisor
	 * gets in, so both serve what it relays (/_files/), not link pages.
	 */
	int			 internal = on_unix || conf->secret_len > 0;

	if (strcmp(url, "/health") == 0) {
		if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
			return http_reply_empty(conn,
			    MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD");
		/*
		 * On the unix socket, what is in progress too, for vivariumctl
		 * upgrade, which remakes only an idle sandbox: the requests
		 * other than this one, and the runs (background jobs too).
		 */
		if (on_unix)
			return http_reply_text(conn, 200, "ok requests=%d runs=%d",
			    __atomic_load_n(&active, __ATOMIC_SEQ_CST),
			    jobs_running());
		if (conf->secret_len == 0
		    || http_header(conn, PROOF_CHALLENGE) == NULL)
			return http_reply_text(conn, 200, "ok");
		/*
		 * Answered once the request is in, not from its first call:
		 * MHD closes a connection answered that early, and the
		 * supervisor's request is to follow on this one.
		 */
		hc = http_collect(conn, con_cls, upload_data, upload_data_size,
		    0, &req);
		if (fresh && *con_cls != NULL)
			__atomic_add_fetch(&active, 1, __ATOMIC_SEQ_CST);
		return hc == HTTP_COLLECT_DONE ? health_proof(conn) :
		    hc == HTTP_COLLECT_ANSWERED ? req->ret :
		    hc == HTTP_COLLECT_FAILED ? MHD_NO : MHD_YES;
	}
	/* Every call of a request: a later one must not skip the check. */
	if (!on_unix && conf->secret_len > 0 && bearer_refused(conn, url, 0,
	    &ret))
		return ret;
	/* The standalone agent's token: on all but /health and link pages,
	 * which carry their own signature. */
	if (!on_unix && conf->token_len > 0 && !fileweb_match(url) &&
	    bearer_refused(conn, url, 1, &ret))
		return ret;
	/*
	 * Only the supervisor gets here on an internal listener, and only a
	 * token holder past the check above: the request is never cut, and
	 * may stay idle up to IDLE_TIMEOUT_S after.
	 */
	if (internal || (conf->token_len > 0 && !fileweb_match(url)))
		http_guard_trust(conn, IDLE_TIMEOUT_S);
	/*
	 * File links: their pages on an open TCP listener, the raw file
	 * endpoints the supervisor relays them to on the internal ones.
	 */
	if ((!internal && fileweb_match(url)) || (internal && conf->user_header
	    == NULL && strncmp(url, "/_files/", 8) == 0)) {
		ret = internal ? (enum MHD_Result)files_internal(conn,
		    on_unix, conf->workdir, url, method, upload_data,
		    upload_data_size, con_cls) :
		    (enum MHD_Result)files_serve_links(conn, url, method,
		    upload_data, upload_data_size, con_cls);
		if (fresh && *con_cls != NULL)
			__atomic_add_fetch(&active, 1, __ATOMIC_SEQ_CST);
		return ret;
	}
	if (strcmp(url, "/mcp") != 0 && strcmp(url, "/mcp/") != 0)
		return http_reply_text(conn, 404, "not found: the MCP endpoint "
		    "is /mcp, the health check /health");

	if (*con_cls == NULL) {
		/* DNS-rebinding protection: any Host, but only known Origins. */
		origin = http_header(conn, "Origin");
		if (!origin_allowed(conf->allowed_origins, origin)) {
			log_warnx("refused a request from Origin %.200s (not in "
			    "VIVARIUM_ALLOWED_ORIGINS)", origin);
			return mcp_refuse(conn, 403, "Forbidden: this Origin is "
			    "not allowed (see VIVARIUM_ALLOWED_ORIGINS)");
		}
		if (strcmp(method, "POST") != 0) {
			/*
			 * No standalone SSE stream (GET) and no sessions
			 * (DELETE): 405.  POSTs that ask for progress are
			 * answered with a stream of their own (sse.c).
			 */
			struct MHD_Response *r;

			r = http_response_text("only POST is served on /mcp (no "
			    "standalone SSE stream, no sessions)\n");
			if (r != NULL)
				MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
				    "POST");
			return http_queue(conn, MHD_HTTP_METHOD_NOT_ALLOWED, r);
		}
		if (mcp_precheck(conn, &ret))
			return ret;
	}
	if (*con_cls == NULL) {
		enum http_collect c;

		/* Its body must come within REQUEST_DEADLINE_S. */
		if (!internal && conf->token_len == 0)
			http_guard_receiving(conn);
		c = http_collect(conn, con_cls, upload_data, upload_data_size,
		    AGENT_MAX_BODY, &req);
		if (*con_cls != NULL)
			__atomic_add_fetch(&active, 1, __ATOMIC_SEQ_CST);
		return c == HTTP_COLLECT_ANSWERED ? req->ret :
		    c == HTTP_COLLECT_FAILED ? MHD_NO : MHD_YES;
	}
	switch (http_collect(conn, con_cls, upload_data, upload_data_size,
	    AGENT_MAX_BODY, &req)) {
	case HTTP_COLLECT_MORE:
		return MHD_YES;
	case HTTP_COLLECT_ANSWERED:
		return req->ret;
	case HTTP_COLLECT_FAILED:
		return MHD_NO;
	case HTTP_COLLECT_DONE:
		break;
	}
	/* The body is in: a run may take its time, and is never cut. */
	http_guard_trust(conn, IDLE_TIMEOUT_S);
	return mcp_post(conn, req);
}

static void
agent_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode why)
{
	if (*con_cls != NULL)
		__atomic_sub_fetch(&active, 1, __ATOMIC_SEQ_CST);
	/* Idle again (http_guard_untrust): may make room. */
	http_request_completed(cls, conn, con_cls, why);
}

static void
mhd_logger(void *cls, const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_warnx("http: %s", line);
}

/* ------------------------------------------------------------ listeners */

static int
listen_tcp(const char *host, long port)
{
	struct addrinfo	 hints, *res = NULL, *ai;
	char		 pstr[32], addr[INET6_ADDRSTRLEN];
	struct sockaddr_storage ss;
	socklen_t	 sl = sizeof(ss);
	int		 fd = -1, one = 1, rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(pstr, sizeof(pstr), "%ld", port);
	if ((rc = getaddrinfo(host, pstr, &hints, &res)) != 0) {
		log_warnx("VIVARIUM_HOST=%s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd == -1)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, 128) == 0)
			break;
		log_warn("listen on %s port %ld", host, port);
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1)
		return -1;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof(addr));
			log_info("listening on http://[%s]:%d/mcp", addr,
			    ntohs(s6->sin6_port));
			files_listening(addr, ntohs(s6->sin6_port));
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof(addr));
			log_info("listening on http://%s:%d/mcp", addr,
			    ntohs(s4->sin_port));
			files_listening(addr, ntohs(s4->sin_port));
		}
	}
	return fd;
}

/*
 * The unix socket: by default only its owner may connect (mode 0600, or
 * VIVARIUM_SOCKET_MODE), set through the umask so there is no moment with a
 * wider mode.  A socket file left by a
 * dead agent is replaced; a live one, or any other file, is not.
 */
static int
listen_unix(const char *path)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	mode_t			 old;
	int			 fd = -1, probe;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("VIVARIUM_SOCKET: path too long");
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_warnx("VIVARIUM_SOCKET=%s exists and is not a "
			    "socket; not replacing it", path);
			return -1;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe != -1 && connect(probe, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0) {
			close(probe);
			log_warnx("VIVARIUM_SOCKET=%s: another process is "
			    "listening on it", path);
			return -1;
		}
		if (probe != -1)
			close(probe);
		if (unlink(path) == -1 && errno != ENOENT) {
			log_warn("VIVARIUM_SOCKET=%s: removing the stale socket",
			    path);
			return -1;
		}
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		log_warn("socket");
		return -1;
	}
	old = umask(~conf->socket_mode & 0777);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		log_warn("VIVARIUM_SOCKET=%s: bind", path);
		close(fd);
		return -1;
	}
	umask(old);
	if (listen(fd, 128) == -1 || stat(path, &st) == -1) {
		log_warn("VIVARIUM_SOCKET=%s: listen", path);
		close(fd);
		unlink(path);
		return -1;
	}
	sock_dev = st.st_dev;
	sock_ino = st.st_ino;
	log_info("listening on unix:%s (path /mcp, mode %04o)", path,
	    (unsigned int)conf->socket_mode);
	return fd;
}

static struct MHD_Daemon *
daemon_start(int fd, int is_unix)
{
	/* The access handler's cls: non-NULL on the unix socket. */
	static int unix_mark;

	static const struct http_guard_limits lim = {
		.soft = MAX_CONNECTIONS - 16,
		.deadline = REQUEST_DEADLINE_S,
		.xfer_max = LINK_MAX_TRANSFERS,
		.xfer_per_address = LINK_PER_ADDRESS,
		.xfer_per_link = LINK_PER_LINK,
		.min_rate = LINK_MIN_RATE,
		.grace = LINK_RATE_GRACE,
	};
	struct MHD_Daemon *d;
	struct http_guard *guard;

	/*
	 * Connections that are silent, slow or only moving a link's file
	 * make room for new ones near the cap, so /health and the
	 * supervisor always get in; a request being worked on never does.
	 */
	if ((guard = http_guard_new(&lim)) == NULL) {
		close(fd);
		return NULL;
	}
	d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION |
	    MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG,
	    0, NULL, NULL, agent_access, is_unix ? &unix_mark : NULL,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
	    MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)MAX_CONNECTIONS,
	    /* Uploads and downloads move in pieces of what the pool holds. */
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(192 * 1024),
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)FIRST_REQUEST_S,
	    MHD_OPTION_NOTIFY_CONNECTION, http_guard_notify, guard,
	    MHD_OPTION_NOTIFY_COMPLETED, agent_completed, NULL,
	    MHD_OPTION_END);
	if (d == NULL) {
		log_warnx("libmicrohttpd could not start");
		close(fd);
	}
	return d;
}

int
agent_http_start(const struct agent_config *cfg)
{
	int fd;

	conf = cfg;
	if (cfg->socket != NULL) {
		if ((fd = listen_unix(cfg->socket)) == -1 ||
		    (unix_daemon = daemon_start(fd, 1)) == NULL)
			goto fail;
	}
	if (cfg->port >= 0) {
		if ((fd = listen_tcp(cfg->host, cfg->port)) == -1 ||
		    (tcp_daemon = daemon_start(fd, 0)) == NULL)
			goto fail;
		if (cfg->secret_len > 0)
			log_info("TCP requests but /health need the agent "
			    "secret (Authorization: Bearer)");
		else if (cfg->token_len > 0)
			log_info("/mcp requests need the agent token "
			    "(Authorization: Bearer)");
		else if (agent_config_exposed(cfg))
			log_warnx("%s", agent_exposed_warning);
	}
	return 0;
fail:
	agent_http_stop(0);
	return -1;
}

/* Stops accepting; the socket file goes at once so a successor can start. */
static void
quiesce(struct MHD_Daemon *d, int is_unix)
{
	struct stat	 st;
	MHD_socket	 fd;

	if (d == NULL)
		return;
	fd = MHD_quiesce_daemon(d);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	if (is_unix && stat(conf->socket, &st) == 0 && st.st_dev == sock_dev &&
	    st.st_ino == sock_ino)
		unlink(conf->socket);
}

void
agent_http_stop(double grace)
{
	double		 end;

	quiesce(tcp_daemon, 0);
	quiesce(unix_daemon, 1);
	/*
	 * MHD_stop_daemon cuts connections whose answers are not out yet, so
	 * first let requests in progress finish (a run ends by its timeout).
	 */
	end = clock_mono() + grace;
	while (__atomic_load_n(&active, __ATOMIC_SEQ_CST) > 0) {
		if (clock_mono() >= end) {
			log_warnx("%d request(s) still in progress; stopping "
			    "anyway", __atomic_load_n(&active, __ATOMIC_SEQ_CST));
			break;
		}
		clock_sleep_ms(50);
	}
	if (tcp_daemon != NULL)
		MHD_stop_daemon(tcp_daemon);
	if (unix_daemon != NULL)
		MHD_stop_daemon(unix_daemon);
	tcp_daemon = unix_daemon = NULL;
}
