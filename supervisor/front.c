/*
 * front.c: the supervisor's HTTP front, on libmicrohttpd.
 *
 * LibreChat sends MCP to /mcp (user in a header) or /u/<user>/mcp; the
 * front checks the Origin, the token and the user id before it takes any
 * body, answers /health and /metrics itself, hands file links to files.c,
 * and gives each MCP request to relay.c, which takes it to the user's
 * agent.  Every answer it makes and every relayed one is counted here.
 *
 * libmicrohttpd runs a thread per connection: provisioning and relaying
 * block, and the number of connections LibreChat keeps is small.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "buf.h"
#include "jsonrpc.h"
#include "log.h"
#include "mhd.h"
#include "origin.h"
#include "supervisor.h"
#include "banned.h"

static const struct conf	*conf;
static struct MHD_Daemon	*httpd;
static struct http_guard	*guard;

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

/*
 * The request's MCP headers and body, for the user's agent (relay.c); its
 * answer streamed back, or the reason there is none.
 */
static enum MHD_Result
reply_relayed(struct MHD_Connection *conn, const char *method,
    const char *user, const char *body, size_t body_len)
{
	const union MHD_ConnectionInfo *ci;
	struct agent_req	 ar;
	struct MHD_Response	*resp;
	char			 why[1024];
	int			 status, cfd = -1;

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
	if ((resp = relay_mcp(conf, user, &ar, &status, why,
	    sizeof(why))) == NULL)
		return status == 0 ? MHD_NO : reply_error(conn, status, "%s",
		    why);
	metrics_request(status);
	return http_queue(conn, (unsigned)status, resp);
}

/* ---------------------------------------------------------------- access */

/* The user a request is for: from the path or the configured header. */
static int
request_user(struct MHD_Connection *conn, enum endpoint ep, const char *purl,
    size_t plen, char *out, size_t outlen, char *why, size_t whylen)
{
	const char	*u, *h;
	size_t		 len;
	int		 refused;

	/* Ambiguity is refused, never resolved: a header sent twice or cut
	 * by a NUL, or a path and a header naming two users. */
	h = http_header_strict(conn, conf->user_header, &refused, why, whylen);
	if (refused)
		return -1;
	if (ep == ENDPOINT_USER_MCP) {
		u = purl;
		len = plen;
		if (h != NULL && (strlen(h) != len || memcmp(h, u, len) != 0)) {
			snprintf(why, whylen, "the path names user \"%.*s\" but "
			    "the %s header names \"%.80s\": send one of them, "
			    "or both the same", len > 80 ? 80 : (int)len, u,
			    conf->user_header, h);
			return -1;
		}
	} else {
		u = h;
		if (u == NULL || *u == '\0') {
			snprintf(why, whylen, "missing %s header: the supervisor "
			    "needs to know whose sandbox to use (LibreChat: "
			    "headers: %s: \"{{LIBRECHAT_USER_ID}}\"), or use "
			    "/u/<user>/mcp", conf->user_header, conf->user_header);
			return -1;
		}
		len = strlen(u);
	}
	if (user_id_valid(u, len) == -1) {
		snprintf(why, whylen, "invalid user id \"%.*s\": %s",
		    len > 80 ? 80 : (int)len, u, user_id_rule);
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
	enum endpoint		 ep;
	const char		*purl, *origin, *auth, *name;
	size_t			 plen;
	char			 user[USER_ID_MAX + 1], why[512];
	int			 refused;

	/* File links carry their own authority: no token, any Origin. */
	if (files_match(url))
		return (enum MHD_Result)files_access(conn, url, method,
		    upload_data, upload_data_size, con_cls);
	ep = endpoint_match(url, &purl, &plen);
	if (*con_cls == NULL) {
		/* First call, headers only: every check before any body. */
		switch (ep) {
		case ENDPOINT_NONE:
			return reply_error(conn, 404, "no such endpoint %.100s: "
			    "MCP is at /mcp or /u/<user>/mcp", url);
		case ENDPOINT_HEALTH:
			return reply_health(conn);
		case ENDPOINT_METRICS:
			return reply_metrics(conn);
		case ENDPOINT_MCP:
		case ENDPOINT_USER_MCP:
			break;
		}
		origin = http_header_strict(conn, "Origin", &refused, why,
		    sizeof(why));
		if (refused)
			return reply_error(conn, 400, "%s", why);
		if (!origin_allowed(conf->origins, origin))
			return reply_error(conn, 403, "Origin %.200s is not "
			    "allowed (allowed_origins in the supervisor's "
			    "config)", origin);
		/* A malformed Authorization is a 400, not a 401: LibreChat
		 * reads 401 as "OAuth needed". */
		auth = http_header_strict(conn, "Authorization", &refused, why,
		    sizeof(why));
		if (refused)
			return reply_error(conn, 400, "%s", why);
		if (!token_ok(auth, conf->token))
			return reply_error(conn, 401, "%s", auth == NULL
			    ? "missing Authorization: Bearer <token> header"
			    : "wrong token in the Authorization header");
		/*
		 * Past the token: the connection may stay as long as a relayed
		 * run (MHD checks this right after our reader returns, so a
		 * run that stays silent for longer would be cut off), and is
		 * never evicted to make room.
		 */
		http_guard_bearer(conn, (unsigned)(conf->agent_timeout + 60));
		if (request_user(conn, ep, purl, plen, user, sizeof(user), why,
		    sizeof(why)) == -1)
			return reply_error(conn, 400, "%s", why);
		if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0
		    && strcmp(method, "DELETE") != 0)
			return reply_error(conn, 405, "method %.20s is not "
			    "allowed on the MCP endpoint (GET, POST, DELETE)",
			    method);
	}
	switch (http_collect(conn, con_cls, upload_data, upload_data_size,
	    conf->max_body, &req)) {
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
	if (request_user(conn, ep, purl, plen, user, sizeof(user), why,
	    sizeof(why)) == -1)
		return reply_error(conn, 400, "%s", why);
	/* Who the user is, for people (vivariumctl list): never routed on. */
	if ((name = http_header(conn, conf->user_name_header)) != NULL)
		(void)names_record(conf, user, name);
	return reply_relayed(conn, method, user, req->body.data ?
	    req->body.data : "", req->body.len);
}

/* ---------------------------------------------------------------- start */

/*
 * Listens on the configured address.  The caller has blocked the signals
 * it takes (sigwait): libmicrohttpd's threads inherit the mask.
 */
int
front_start(const struct conf *c, char *err, size_t errlen)
{
	struct sockaddr_storage	 ss;
	struct addrinfo		 hints = { .ai_flags = AI_NUMERICHOST |
	    AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *ai;
	char			 port[16];
	int			 gai;

	conf = c;
	snprintf(port, sizeof(port), "%d", conf->listen_port);
	if ((gai = getaddrinfo(conf->listen_host, port, &hints, &ai)) != 0) {
		snprintf(err, errlen, "listen address %s: %s",
		    conf->listen_host, gai_strerror(gai));
		return -1;
	}
	memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
	struct http_guard_limits lim = {
		/* Room is made while a few slots are still free, so the new
		 * connection that triggers it is taken. */
		.soft = (unsigned)(conf->max_connections > 32 ?
		    conf->max_connections - 16 : conf->max_connections / 2),
		/* A head, once begun, as long as silence before it. */
		.deadline = (unsigned)conf->auth_timeout,
		.xfer_max = (unsigned)conf->link_max_transfers,
		.xfer_per_address = (unsigned)conf->link_max_per_address,
		.xfer_per_link = (unsigned)conf->link_max_per_link,
		.min_rate = conf->link_min_rate,
		.grace = (unsigned)conf->link_rate_grace,
	};

	if ((guard = http_guard_new(&lim)) == NULL) {
		snprintf(err, errlen, "http_guard_new: %s", strerror(errno));
		freeaddrinfo(ai);
		return -1;
	}
	/*
	 * poll(), not select(): a select() daemon refuses descriptors past
	 * FD_SETSIZE, so about 1,100 idle connections locked everyone out.
	 * Before the token a connection gets auth_timeout of silence, and the
	 * oldest of them makes room when the total nears max_connections;
	 * link transfers have caps below it and a floor rate (http_guard).
	 */
	httpd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION
	    | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG
	    | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
	    (uint16_t)conf->listen_port, NULL, NULL, access_handler, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)conf->max_connections,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    (unsigned)(conf->max_per_address < conf->max_connections ?
	    conf->max_per_address : conf->max_connections),
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)conf->auth_timeout,
	    /* Room for 128 KiB sends of a relayed file (the default pool of
	     * 32 KiB holds the head and little more). */
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(192 * 1024),
	    MHD_OPTION_NOTIFY_CONNECTION, http_guard_notify, guard,
	    MHD_OPTION_NOTIFY_COMPLETED, http_request_completed, NULL,
	    MHD_OPTION_END);
	freeaddrinfo(ai);
	if (httpd == NULL) {
		snprintf(err, errlen, "cannot listen on %s:%d (in use, or not "
		    "an address of this machine?)", conf->listen_host,
		    conf->listen_port);
		return -1;
	}
	return 0;
}

void
front_stop(void)
{
	MHD_stop_daemon(httpd);
	http_guard_free(guard);
}
