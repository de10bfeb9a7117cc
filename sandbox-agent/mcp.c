/*
 * mcp.c: JSON-RPC framing and the MCP methods (initialize, ping,
 * tools/list, tools/call, and resources/list and resources/read for the
 * MCP Apps view, ui.c).  Knows nothing of HTTP beyond the status code it
 * suggests: 400 for a body that is not a usable JSON-RPC message, 200 for
 * every answered request (method errors included), 202 when there is
 * nothing to answer.
 *
 * All state belongs to the workspace, so any request may come on any
 * connection, and there is no session table to bound or expire.  The
 * Mcp-Session-Id minted at initialize only carries what the client
 * declared (agent.h, CLIENT_*), for the eras that say it only there.
 *
 * Two eras share the endpoint.  The 2025 versions (03-26, 06-18, 11-25)
 * begin with initialize.  2026-07-28 is stateless: each request names its
 * version and the client's capabilities in params._meta, mirrors its
 * method (and tool) in the Mcp-Method and Mcp-Name headers, and finds the
 * server with server/discover; no session, no ping, and a tool that needs
 * the user answers input_required instead of an error.  The body decides
 * the era (mcp_era); the headers are only checked against it.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "jsonrpc.h"
#include "log.h"
#include "banned.h"

static const char *const versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26", NULL
};

/* The reserved _meta keys of 2026-07-28. */
#define META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define META_CAPS	"io.modelcontextprotocol/clientCapabilities"
#define META_INFO	"io.modelcontextprotocol/clientInfo"
#define META_SERVER	"io.modelcontextprotocol/serverInfo"
#define ALL_VERSIONS	MCP_STATELESS_VERSION ", 2025-11-25, 2025-06-18, " \
			"2025-03-26"

enum era { ERA_2025, ERA_2026, ERA_REFUSED };

/* The instructions; pycheck's lines about the libraries go after them. */
static const char instructions[] =
    "This server runs Python 3 for data work, in a sandbox with a persistent "
    "workspace directory.\n"
    "- run_python(code) works like a notebook cell run in a new process, "
    "with the workspace as working directory: variables, functions and "
    "imports carry over to the next call, and the '--- state ---' footer "
    "at the end of each result says what is there, so do not re-import, "
    "re-download or re-read it. A bare expression on the last line is "
    "shown; plt.show() and figures left open come back as images "
    "(figure-N.png), as do new or changed .png files (each 'image:' line "
    "says its size, or that it was shrunk or left out; the file keeps its "
    "full size).\n"
    "- Runs that may take more than about a minute (big downloads, long "
    "computations): run_python(code, background=true), then "
    "job_status(job_id, wait_seconds=30) until it is done; tell the user it "
    "is running meanwhile. Runs in one workspace go one at a time: while a "
    "job runs, run_python answers at once with its id.\n"
    "- list_files() and read_text_file(path) look at workspace files "
    "without running code.\n"
    "- Files reach the user only by link, never inside this chat: "
    "share_file(path) for a file you made, upload_link() for the user's "
    "own files, workspace_link() for a page of all files. Put the link in "
    "your answer as it is. Where the chat shows the upload page itself, "
    "upload_link() returns only after the user uploaded, listing the "
    "files: use them at once.\n"
    "Charts: from vivarium_charts import line_chart, bar_chart, "
    "scatter_chart, clean_numeric. line_chart(df, x=\"year\", "
    "y=[\"a\", \"b\"], title=\"...\") writes a PNG, prints one line "
    "describing it (x range; each series' first, last, min, max) and "
    "returns its name; "
    "x and y are optional (index and all numeric columns). "
    "df = clean_numeric(df) turns 'NA', ':' and '' into NaN before any "
    "arithmetic. Use plain matplotlib only when the helpers cannot draw "
    "it.";

int
mcp_version_supported(const char *v)
{
	size_t i;

	for (i = 0; versions[i] != NULL; i++)
		if (strcmp(v, versions[i]) == 0)
			return 1;
	return 0;
}

unsigned int
mcp_client_caps(json_t *caps)
{
	json_t		*el, *ext, *ui, *types, *t;
	unsigned int	 client = 0;
	size_t		 i;

	if (!json_is_object(caps))
		return 0;
	/* URL mode must be named; an empty elicitation object means form. */
	el = json_object_get(caps, "elicitation");
	if (json_is_object(json_object_get(el, "url")))
		client |= CLIENT_ELICIT_URL;
	ext = json_object_get(caps, "extensions");
	ui = json_object_get(ext, "io.modelcontextprotocol/ui");
	if (json_is_object(ui)) {
		types = json_object_get(ui, "mimeTypes");
		if (!json_is_array(types))
			client |= CLIENT_UI;	/* the extension's default */
		json_array_foreach(types, i, t)
			if (json_is_string(t) && strcmp(json_string_value(t),
			    "text/html;profile=mcp-app") == 0)
				client |= CLIENT_UI;
	}
	return client;
}

#define SESSION_PREFIX	"vv1-"

int
mcp_session_mint(unsigned int client, char *out)
{
	unsigned char	r[8];

	if (getentropy(r, sizeof(r)) == -1)
		return -1;
	snprintf(out, MCP_SESSION_SIZE, SESSION_PREFIX "%02x-"
	    "%02x%02x%02x%02x%02x%02x%02x%02x", client & 0xffu, r[0], r[1],
	    r[2], r[3], r[4], r[5], r[6], r[7]);
	return 0;
}

unsigned int
mcp_session_client(const char *sid)
{
	const char	*p;
	unsigned int	 v = 0;
	int		 i;

	if (sid == NULL || strncmp(sid, SESSION_PREFIX,
	    sizeof(SESSION_PREFIX) - 1) != 0)
		return 0;
	p = sid + sizeof(SESSION_PREFIX) - 1;
	for (i = 0; i < 2; i++, p++) {
		if (*p >= '0' && *p <= '9')
			v = v * 16 + (unsigned int)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			v = v * 16 + (unsigned int)(*p - 'a' + 10);
		else
			return 0;
	}
	if (*p != '-' || strlen(p + 1) != 16 ||
	    strspn(p + 1, "0123456789abcdef") != 16)
		return 0;
	return v & (CLIENT_ELICIT_URL | CLIENT_UI);
}

static json_t *
mcp_result(json_t *id, json_t *result)
{
	if (result == NULL)
		return jsonrpc_error(id, RPC_INTERNAL_ERROR, "out of memory");
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
	    "result", result);
}

/* ------------------------------------------------------------ methods */

/* The instructions, and pycheck's lines about the libraries after them. */
static int
instructions_make(struct buf *ins)
{
	const char	*mods = pycheck_modules();

	return buf_appends(ins, instructions) == -1 || (mods[0] != '\0' &&
	    buf_appendf(ins, "\n%s", mods) == -1) ? -1 : 0;
}

static json_t *
method_initialize(const struct agent_ctx *ctx, json_t *id, json_t *params)
{
	json_t		*pv = json_object_get(params, "protocolVersion");
	const char	*v;
	struct buf	 ins = BUF_INIT(sizeof(instructions) + 4096);
	json_t		*res;

	if (!json_is_string(pv))
		return jsonrpc_error(id, RPC_INVALID_PARAMS, "initialize needs "
		    "params.protocolVersion (a string such as \"%s\")",
		    MCP_LATEST_VERSION);
	/* 2026-07-28 included: it has no handshake, so a client that asks
	 * for it here gets the newest version that has one. */
	v = json_string_value(pv);
	if (!mcp_version_supported(v))
		v = MCP_LATEST_VERSION;
	if (ctx->session_out != NULL && mcp_session_mint(mcp_client_caps(
	    json_object_get(params, "capabilities")), ctx->session_out) == -1)
		ctx->session_out[0] = '\0';
	if (instructions_make(&ins) == -1) {
		buf_release(&ins);
		return mcp_result(id, NULL);
	}
	/* resources and the extension: the MCP Apps view (ui.c). */
	res = json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{s:{s:[s]}}}, "
	    "s:{s:s, s:s, s:s}, s:s}",
	    "protocolVersion", v,
	    "capabilities", "tools", "listChanged", 0,
	    "resources", "subscribe", 0, "listChanged", 0,
	    "extensions", UI_EXTENSION, "mimeTypes", UI_MIME_TYPE,
	    "serverInfo", "name", "vivarium-agent", "title", "vivarium",
	    "version", VIVARIUM_VERSION,
	    "instructions", buf_str(&ins));
	buf_release(&ins);
	return mcp_result(id, res);
}

/*
 * server/discover (2026-07-28): what initialize told, without a session.
 * Every version is listed; a client picks the newest it shares.  Nothing
 * here changes while the agent runs, but an upgrade may, so no caching.
 */
static json_t *
method_discover(json_t *id)
{
	struct buf	 ins = BUF_INIT(sizeof(instructions) + 4096);
	json_t		*res;

	if (instructions_make(&ins) == -1) {
		buf_release(&ins);
		return mcp_result(id, NULL);
	}
	res = json_pack("{s:[s,s,s,s], s:{s:{s:b}, s:{s:b, s:b}, "
	    "s:{s:{s:[s]}}}, s:s, s:i, s:s, s:{s:{s:s, s:s, s:s}}}",
	    "supportedVersions", MCP_STATELESS_VERSION, "2025-11-25",
	    "2025-06-18", "2025-03-26",
	    "capabilities", "tools", "listChanged", 0,
	    "resources", "subscribe", 0, "listChanged", 0,
	    "extensions", UI_EXTENSION, "mimeTypes", UI_MIME_TYPE,
	    "instructions", buf_str(&ins),
	    "ttlMs", 0, "cacheScope", "public",
	    "_meta", META_SERVER, "name", "vivarium-agent", "title", "vivarium",
	    "version", VIVARIUM_VERSION);
	buf_release(&ins);
	return mcp_result(id, res);
}

/*
 * A tool's URL elicitation (RPC_URL_ELICITATION, data {elicitations:
 * [{mode: "url", elicitationId, url, message}]}) as 2026-07-28 says it:
 * an input_required result with one elicitation/create request for each,
 * keyed by its elicitationId.  The client shows the link, then sends the
 * same tools/call again with inputResponses under the same keys; the tool
 * runs again and decides (files_tool_upload).  Nothing is kept here in
 * between, so there is no requestState.  NULL when data is not that shape.
 */
static json_t *
input_required(json_t *data)
{
	json_t	*els = json_object_get(data, "elicitations"), *el, *reqs, *res;
	json_t	*eid, *url, *msg;
	size_t	 i;

	if (!json_is_array(els) || json_array_size(els) == 0 ||
	    (reqs = json_object()) == NULL)
		return NULL;
	json_array_foreach(els, i, el) {
		eid = json_object_get(el, "elicitationId");
		url = json_object_get(el, "url");
		msg = json_object_get(el, "message");
		if (!json_is_string(eid) || !json_is_string(url) ||
		    !json_is_string(msg) || json_object_set_new(reqs,
		    json_string_value(eid), json_pack("{s:s, s:{s:s, s:O, s:O, "
		    "s:O}}", "method", "elicitation/create", "params", "mode",
		    "url", "elicitationId", eid, "url", url, "message",
		    msg)) == -1) {
			json_decref(reqs);
			return NULL;
		}
	}
	res = json_pack("{s:s, s:o}", "resultType", "input_required",
	    "inputRequests", reqs);
	return res;
}

static json_t *
method_tools_call(const struct agent_ctx *ctx, json_t *id, json_t *params,
    enum era era)
{
	struct rpc_error	 err;
	json_t			*name, *args, *res;

	name = json_object_get(params, "name");
	args = json_object_get(params, "arguments");
	if (name == NULL)
		return jsonrpc_error(id, RPC_INVALID_PARAMS, "tools/call needs "
		    "params.name: the tool to call (see tools/list)");
	if (!json_is_string(name))
		return jsonrpc_error(id, RPC_INVALID_PARAMS, "tools/call: "
		    "params.name must be a string");
	if (args != NULL && json_is_null(args))
		args = NULL;
	if (args != NULL && !json_is_object(args))
		return jsonrpc_error(id, RPC_INVALID_PARAMS, "tools/call: "
		    "params.arguments must be an object of named arguments");
	memset(&err, 0, sizeof(err));
	res = tools_call(ctx, json_string_value(name), args, &err);
	if (res == NULL && err.code == RPC_NO_REPLY)
		return NULL;	/* cancelled: no response (MCP cancellation) */
	if (res == NULL && err.code == RPC_URL_ELICITATION && era == ERA_2026) {
		res = input_required(err.data);
		json_decref(err.data);
		if (res == NULL)
			return jsonrpc_error(id, RPC_INTERNAL_ERROR, "internal "
			    "error: a tool asked for input in a shape this "
			    "server cannot send");
		return mcp_result(id, res);
	}
	if (res == NULL) {
		res = jsonrpc_error(id, err.code ? err.code :
		    RPC_INTERNAL_ERROR, "%s", err.message[0] ? err.message :
		    "internal error");
		if (res != NULL && err.data != NULL)
			json_object_set(json_object_get(res, "error"), "data",
			    err.data);
		json_decref(err.data);
		return res;
	}
	json_decref(err.data);
	return mcp_result(id, res);
}

/*
 * tools/list: the same for every request of a client kind (with MCP Apps
 * or without) under one config, so each list is built once and shared,
 * never changed after (jansson's counts are atomic and json_dumps only
 * reads).  Copying the nine definitions for every request was two thirds
 * of the agent's work under load (bench-supervisor (d)).
 */
static json_t *
method_tools_list(const struct agent_ctx *ctx, json_t *id)
{
	static pthread_mutex_t	 lock = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		json_t	*tools;
		long	 max_timeout;
	} kept[2];
	int	 ui = (ctx->client & CLIENT_UI) != 0;
	long	 mt = ctx->cfg != NULL ? ctx->cfg->max_timeout : 0;
	json_t	*list, *tools = NULL;

	pthread_mutex_lock(&lock);
	if (kept[ui].tools == NULL || kept[ui].max_timeout != mt) {
		list = tools_list(ctx->cfg);
		if (list != NULL && ui_tools_decorate(list, ui) == 0) {
			json_decref(kept[ui].tools);
			kept[ui].tools = json_incref(json_object_get(list,
			    "tools"));
			kept[ui].max_timeout = mt;
		}
		json_decref(list);
	}
	if (kept[ui].tools != NULL && kept[ui].max_timeout == mt)
		tools = json_incref(kept[ui].tools);
	pthread_mutex_unlock(&lock);
	return mcp_result(id, tools != NULL ? json_pack("{s:o}", "tools",
	    tools) : NULL);
}

/* resources/read {uri}: the view (ui.c), the one resource there is. */
static json_t *
method_resources_read(json_t *id, json_t *params)
{
	struct rpc_error	 err;
	json_t			*uri = json_object_get(params, "uri"), *res;

	if (uri == NULL)
		return jsonrpc_error(id, RPC_INVALID_PARAMS, "resources/read "
		    "needs params.uri (see resources/list)");
	if (!json_is_string(uri))
		return jsonrpc_error(id, RPC_INVALID_PARAMS, "resources/read: "
		    "params.uri must be a string");
	memset(&err, 0, sizeof(err));
	res = ui_resource_read(json_string_value(uri), files_link_base(),
	    &err);
	if (res != NULL)
		return mcp_result(id, res);
	res = jsonrpc_error(id, err.code, "%s", err.message);
	if (res != NULL && err.data != NULL)
		json_object_set(json_object_get(res, "error"), "data",
		    err.data);
	json_decref(err.data);
	return res;
}

/*
 * notifications/cancelled {requestId, reason}: stops the run of that
 * request, if one of this workspace is running; anything else is ignored.
 */
static void
notify_cancelled(const struct agent_ctx *ctx, json_t *params)
{
	json_t	*rid = json_object_get(params, "requestId");
	char	*text;

	if (cancel_request(ctx->workspace, rid, "cancelled by the client") == 0)
		return;
	text = json_dumps(rid, JSON_ENCODE_ANY);
	log_info("%s: request %.80s cancelled by the client", ctx->label,
	    text != NULL ? text : "?");
	free(text);
}

/* ------------------------------------------------------------ 2026-07-28 */

/* A 400 for a request the era check refused; data stolen (may be NULL). */
static json_t *
refuse(json_t *id, int code, json_t *data, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static json_t *
refuse(json_t *id, int code, json_t *data, const char *fmt, ...)
{
	va_list	 ap;
	json_t	*e;

	va_start(ap, fmt);
	e = jsonrpc_verror(json_is_string(id) || json_is_integer(id) ? id :
	    NULL, code, fmt, ap);
	va_end(ap);
	if (e != NULL && data != NULL)
		json_object_set(json_object_get(e, "error"), "data", data);
	json_decref(data);
	return e;
}

/*
 * Mcp-Name may carry a value that is not plain header text as
 * =?base64?...?=; decodes it into out (NUL-terminated).  -1 when invalid.
 */
static int
name_decode(const char *h, char *out, size_t outsz)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t		 len = strlen(h), n = 0, i;
	unsigned int	 acc = 0, bits = 0;
	const char	*p;

	if (len < 12 || strncmp(h, "=?base64?", 9) != 0 ||
	    strcmp(h + len - 2, "?=") != 0) {
		if (len >= outsz)
			return -1;
		memcpy(out, h, len + 1);
		return 0;
	}
	for (i = 9; i < len - 2 && h[i] != '='; i++) {
		if ((p = strchr(b64, h[i])) == NULL || h[i] == '\0')
			return -1;
		acc = (acc << 6) | (unsigned int)(p - b64);
		if ((bits += 6) >= 8) {
			bits -= 8;
			if (n + 1 >= outsz)
				return -1;
			out[n++] = (char)((acc >> bits) & 0xffu);
		}
	}
	for (; i < len - 2; i++)
		if (h[i] != '=')
			return -1;
	out[n] = '\0';
	return strlen(out) == n ? 0 : -1;
}

/*
 * A header's value without the optional white space around it (RFC 9110
 * 5.5), in buf; NULL for NULL, and for a value too long for any name here.
 */
static const char *
ows_trim(const char *h, char *buf, size_t sz)
{
	size_t	 n;

	if (h == NULL)
		return NULL;
	h += strspn(h, " \t");
	n = strlen(h);
	while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--;
	if (n >= sz)
		return "(too long)";
	memcpy(buf, h, n);
	buf[n] = '\0';
	return buf;
}

/*
 * Which era a message belongs to.  The body decides: a request whose
 * params._meta names a protocol version is stateless (2026-07-28), and
 * anything else is a 2025 message, initialize above all.  For a 2026
 * request the envelope and then the headers are checked, in the order the
 * specification lists them; a refusal is ERA_REFUSED with *reply set (an
 * HTTP 400).  MCP-Protocol-Version for the 2025 eras is mcp_handle's.
 */
static enum era
mcp_era(const struct agent_ctx *ctx, const char *pver, json_t *msg,
    json_t **reply)
{
	json_t		*id, *params, *meta, *claim, *caps, *info, *name;
	const char	*m, *v, *hm, *hn;
	char		 dec[512], bv[64], bm[128], bn[512];
	int		 hdr2026;

	*reply = NULL;
	pver = ows_trim(pver, bv, sizeof(bv));
	hm = ows_trim(ctx->hdr_method, bm, sizeof(bm));
	hn = ows_trim(ctx->hdr_name, bn, sizeof(bn));
	if (!json_is_object(msg) || !json_is_string(json_object_get(msg,
	    "method")))
		return ERA_2025;	/* mcp_one says what is wrong */
	m = json_string_value(json_object_get(msg, "method"));
	id = json_object_get(msg, "id");
	params = json_object_get(msg, "params");
	meta = json_object_get(params, "_meta");
	claim = json_is_object(meta) ? json_object_get(meta, META_VERSION) :
	    NULL;
	hdr2026 = pver != NULL && strcmp(pver, MCP_STATELESS_VERSION) == 0;

	if (claim == NULL && strcmp(m, "initialize") == 0) {
		if (!hdr2026)
			return ERA_2025;
		*reply = refuse(id, RPC_HEADER_MISMATCH, NULL, "Bad Request: "
		    "initialize is the 2025 handshake, but MCP-Protocol-Version "
		    "says %s, which has none: send initialize without that "
		    "header, or server/discover with it", MCP_STATELESS_VERSION);
		return ERA_REFUSED;
	}
	if (claim == NULL) {
		if (!hdr2026 || id == NULL)
			return hdr2026 ? ERA_2026 : ERA_2025;
		*reply = refuse(id, RPC_INVALID_PARAMS, json_pack("{s:{s:[s]}}",
		    "envelope", "missing", json_is_object(meta) ? META_VERSION :
		    "_meta"), "Invalid params: MCP-Protocol-Version says %s, but "
		    "params._meta has no \"%s\"; every request of that version "
		    "names it there, with \"%s\"", MCP_STATELESS_VERSION,
		    META_VERSION, META_CAPS);
		return ERA_REFUSED;
	}

	/* The envelope. */
	if (!json_is_string(claim)) {
		*reply = refuse(id, RPC_INVALID_PARAMS, json_pack("{s:{s:s, s:s}}",
		    "envelope", "key", META_VERSION, "problem", "expected a "
		    "protocol version string"), "Invalid _meta: \"%s\" must be "
		    "a string such as \"%s\"", META_VERSION,
		    MCP_STATELESS_VERSION);
		return ERA_REFUSED;
	}
	v = json_string_value(claim);
	if (mcp_version_supported(v))
		return ERA_2025;	/* a 2025 request with a modern habit */
	caps = json_object_get(meta, META_CAPS);
	info = json_object_get(meta, META_INFO);
	if (id != NULL && !json_is_object(caps)) {
		*reply = refuse(id, RPC_INVALID_PARAMS, json_pack("{s:{s:s, s:s}}",
		    "envelope", "key", META_CAPS, "problem", caps == NULL ?
		    "missing" : "expected an object"), "Invalid _meta: \"%s\" %s "
		    "(the client's capabilities for this request; {} when it "
		    "declares none)", META_CAPS, caps == NULL ? "is missing" :
		    "must be an object");
		return ERA_REFUSED;
	}
	if (info != NULL && !json_is_object(info)) {
		*reply = refuse(id, RPC_INVALID_PARAMS, json_pack("{s:{s:s, s:s}}",
		    "envelope", "key", META_INFO, "problem", "expected an "
		    "object"), "Invalid _meta: \"%s\" must be an object "
		    "{name, version}", META_INFO);
		return ERA_REFUSED;
	}

	/* The headers against the body. */
	if (pver != NULL && strcmp(pver, v) != 0) {
		*reply = refuse(id, RPC_HEADER_MISMATCH, NULL, "Bad Request: "
		    "MCP-Protocol-Version says '%.40s' but params._meta says "
		    "'%.40s'; they must be the same", pver, v);
		return ERA_REFUSED;
	}
	if (hm != NULL && strcmp(hm, m) != 0) {
		*reply = refuse(id, RPC_HEADER_MISMATCH, NULL, "Bad Request: "
		    "the Mcp-Method header says '%.100s' but the body's method "
		    "is '%.100s'; they must be the same", hm, m);
		return ERA_REFUSED;
	}
	if (strcmp(v, MCP_STATELESS_VERSION) != 0) {
		*reply = refuse(id, RPC_UNSUPPORTED_VERSION, json_pack("{s:[s,s,s,"
		    "s], s:s}", "supported", MCP_STATELESS_VERSION, "2025-11-25",
		    "2025-06-18", "2025-03-26", "requested", v), "Unsupported "
		    "protocol version '%.40s' (supported: " ALL_VERSIONS ")", v);
		return ERA_REFUSED;
	}
	if (id == NULL)
		return ERA_2026;	/* notifications need no headers */
	if (pver == NULL || hm == NULL) {
		*reply = refuse(id, RPC_HEADER_MISMATCH, NULL, "Bad Request: a "
		    "%s request needs the %s header (the body says '%s')",
		    MCP_STATELESS_VERSION, pver == NULL ? "MCP-Protocol-Version"
		    : "Mcp-Method", pver == NULL ? v : m);
		return ERA_REFUSED;
	}
	name = json_object_get(params, "name");
	if (strcmp(m, "tools/call") == 0 && json_is_string(name)) {
		if (hn == NULL) {
			*reply = refuse(id, RPC_HEADER_MISMATCH, NULL, "Bad "
			    "Request: a tools/call needs the Mcp-Name header "
			    "(the body names the tool '%.100s')",
			    json_string_value(name));
			return ERA_REFUSED;
		}
		if (name_decode(hn, dec, sizeof(dec)) == -1) {
			*reply = refuse(id, RPC_HEADER_MISMATCH, NULL, "Bad "
			    "Request: the Mcp-Name header is not valid "
			    "(=?base64?...?= must hold base64)");
			return ERA_REFUSED;
		}
		if (strcmp(dec, json_string_value(name)) != 0) {
			*reply = refuse(id, RPC_HEADER_MISMATCH, NULL, "Bad "
			    "Request: the Mcp-Name header says '%.100s' but the "
			    "body names the tool '%.100s'; they must be the "
			    "same", dec, json_string_value(name));
			return ERA_REFUSED;
		}
	}
	return ERA_2026;
}

/* The 2026-07-28 caching hints, saying: do not keep it. */
static json_t *
no_cache(json_t *reply)
{
	json_t	*res = json_object_get(reply, "result");

	if (json_is_object(res)) {
		json_object_set_new(res, "ttlMs", json_integer(0));
		json_object_set_new(res, "cacheScope", json_string("private"));
	}
	return reply;
}

/* Results of 2026-07-28 say what they are. */
static json_t *
stamp_complete(json_t *reply)
{
	json_t	*res = json_object_get(reply, "result");

	if (json_is_object(res) && json_object_get(res, "resultType") == NULL)
		json_object_set_new(res, "resultType", json_string("complete"));
	return reply;
}

/*
 * One 2026-07-28 message, its envelope checked by mcp_era.  What the
 * client can do comes from this request's _meta alone.  *status becomes
 * 404 for a method this era does not have (the transport says so).
 */
static json_t *
mcp_stateless(const struct agent_ctx *ctx, json_t *msg, unsigned int *status)
{
	json_t			*id, *params, *meta, *ir, *rs;
	const char		*m;
	struct agent_ctx	 call = *ctx;

	id = json_object_get(msg, "id");
	params = json_object_get(msg, "params");
	m = json_string_value(json_object_get(msg, "method"));
	if (params != NULL && !json_is_object(params))
		return id == NULL ? NULL : jsonrpc_error(id, RPC_INVALID_PARAMS,
		    "'params' must be an object");
	if (id == NULL) {
		/* Closing the stream cancels in this era; the notification
		 * is still understood. */
		if (strcmp(m, "notifications/cancelled") == 0 && params != NULL)
			notify_cancelled(ctx, params);
		return NULL;
	}
	meta = json_object_get(params, "_meta");
	call.client = mcp_client_caps(json_object_get(meta, META_CAPS));
	call.session_out = NULL;
	call.input_responses = NULL;
	if (strcmp(m, "server/discover") == 0)
		return stamp_complete(method_discover(id));
	/* What these hold depends on this request's client and on the
	 * links: not cached, a client re-reads them when it likes. */
	if (strcmp(m, "tools/list") == 0)
		return stamp_complete(no_cache(method_tools_list(&call, id)));
	if (strcmp(m, "resources/list") == 0)
		return stamp_complete(no_cache(mcp_result(id,
		    ui_resources_list())));
	if (strcmp(m, "resources/read") == 0)
		return stamp_complete(no_cache(method_resources_read(id,
		    params)));
	if (strcmp(m, "tools/call") == 0) {
		if (params == NULL)
			return jsonrpc_error(id, RPC_INVALID_PARAMS,
			    "tools/call needs params {name, arguments}");
		ir = json_object_get(params, "inputResponses");
		rs = json_object_get(params, "requestState");
		if ((ir != NULL && !json_is_object(ir)) ||
		    (rs != NULL && !json_is_string(rs)))
			return jsonrpc_error(id, RPC_INVALID_PARAMS, "tools/call: "
			    "params.inputResponses must be an object and "
			    "params.requestState a string");
		call.request_id = id;
		call.input_responses = ir;
		return stamp_complete(method_tools_call(&call, id, params,
		    ERA_2026));
	}
	*status = 404;
	return jsonrpc_error(id, RPC_METHOD_NOT_FOUND, "Method not found: "
	    "'%.100s' is not part of protocol %s (it has server/discover, "
	    "tools/list, tools/call, resources/list and resources/read; "
	    "initialize and ping belong to the 2025 versions)", m,
	    MCP_STATELESS_VERSION);
}

/* ------------------------------------------------------------ framing */

/*
 * One message.  Returns the response (new), or NULL when none is due
 * (a notification, or a response from the client).  *bad is set when the
 * message itself was unusable (-32600), which a lone message answers 400.
 */
static json_t *
mcp_one(const struct agent_ctx *ctx, json_t *msg, int in_batch, int *bad)
{
	json_t		*jv, *id, *method, *params;
	const char	*m;

	*bad = 0;
	if (!json_is_object(msg)) {
		*bad = 1;
		return jsonrpc_error(NULL, RPC_INVALID_REQUEST,
		    "Invalid Request: a JSON-RPC message is a JSON object, "
		    "not %s",
		    json_is_array(msg) ? "an array" : json_is_string(msg) ?
		    "a string" : json_is_null(msg) ? "null" : "a scalar");
	}
	id = json_object_get(msg, "id");
	if (id != NULL && !json_is_string(id) && !json_is_integer(id)) {
		*bad = 1;
		return jsonrpc_error(NULL, RPC_INVALID_REQUEST,
		    "Invalid Request: 'id' must be a string or an integer");
	}
	jv = json_object_get(msg, "jsonrpc");
	if (!json_is_string(jv) || strcmp(json_string_value(jv), "2.0") != 0) {
		*bad = 1;
		return jsonrpc_error(id, RPC_INVALID_REQUEST,
		    "Invalid Request: 'jsonrpc' must be \"2.0\"");
	}
	method = json_object_get(msg, "method");
	if (method == NULL) {
		if (id != NULL && (json_object_get(msg, "result") != NULL ||
		    json_object_get(msg, "error") != NULL))
			return NULL;	/* a response to us: nothing to say */
		*bad = 1;
		return jsonrpc_error(id, RPC_INVALID_REQUEST,
		    "Invalid Request: no 'method'");
	}
	if (!json_is_string(method)) {
		*bad = 1;
		return jsonrpc_error(id, RPC_INVALID_REQUEST,
		    "Invalid Request: 'method' must be a string");
	}
	params = json_object_get(msg, "params");
	if (params != NULL && !json_is_object(params)) {
		if (id == NULL)
			return NULL;
		return jsonrpc_error(id, RPC_INVALID_PARAMS,
		    "'params' must be an object");
	}
	m = json_string_value(method);
	if (id == NULL) {
		/* notifications: initialized, progress, ... nothing to do */
		if (strcmp(m, "notifications/cancelled") == 0 && params != NULL)
			notify_cancelled(ctx, params);
		return NULL;
	}

	if (strcmp(m, "initialize") == 0) {
		if (in_batch)
			return jsonrpc_error(id, RPC_INVALID_REQUEST,
			    "initialize must not be part of a batch");
		return method_initialize(ctx, id, params);
	}
	if (strcmp(m, "ping") == 0)
		return mcp_result(id, json_object());
	if (strcmp(m, "tools/list") == 0)
		return method_tools_list(ctx, id);
	if (strcmp(m, "resources/list") == 0)
		return mcp_result(id, ui_resources_list());
	if (strcmp(m, "resources/read") == 0)
		return method_resources_read(id, params);
	if (strcmp(m, "tools/call") == 0) {
		struct agent_ctx call = *ctx;

		if (params == NULL)
			return jsonrpc_error(id, RPC_INVALID_PARAMS,
			    "tools/call needs params {name, arguments}");
		call.request_id = id;
		return method_tools_call(&call, id, params, ERA_2025);
	}
	return jsonrpc_error(id, RPC_METHOD_NOT_FOUND, "Method not found: "
	    "'%.100s' (this server offers initialize, ping, tools/list, "
	    "tools/call, resources/list and resources/read)", m);
}

unsigned int
mcp_refused(const struct agent_ctx *ctx, const char *pver, const char *body,
    size_t len, json_t **reply)
{
	json_t	*msg;

	*reply = NULL;
	if ((msg = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL)) == NULL)
		return 0;
	if (mcp_era(ctx, pver, msg, reply) != ERA_REFUSED) {
		json_decref(msg);
		return 0;
	}
	json_decref(msg);
	return *reply != NULL ? 400 : 500;
}

unsigned int
mcp_handle(const struct agent_ctx *ctx, const char *pver, const char *body,
    size_t len, json_t **reply)
{
	json_error_t	 jerr;
	json_t		*msg, *out, *r, *m, *method;
	size_t		 i;
	int		 bad;
	unsigned int	 status = 200;

	*reply = NULL;
	msg = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
	    &jerr);
	if (msg == NULL && json_error_code(&jerr) == json_error_invalid_utf8) {
		*reply = jsonrpc_error(NULL, RPC_PARSE_ERROR, "Parse error: "
		    "the body is not valid UTF-8 (at byte %d); JSON text, and "
		    "the code in it, must be UTF-8", jerr.position);
		return 400;
	}
	if (msg == NULL) {
		*reply = jsonrpc_error(NULL, RPC_PARSE_ERROR, "Parse error: "
		    "the body is not valid JSON (%s, at line %d column %d)",
		    jerr.text, jerr.line, jerr.column);
		return 400;
	}
	switch (mcp_era(ctx, pver, msg, reply)) {
	case ERA_REFUSED:
		json_decref(msg);
		return *reply != NULL ? 400 : 500;
	case ERA_2026:
		r = mcp_stateless(ctx, msg, &status);
		json_decref(msg);
		if (r == NULL)
			return 202;
		*reply = r;
		return status;
	case ERA_2025:
		break;
	}
	/* MCP-Protocol-Version applies after initialize. */
	method = json_is_object(msg) ? json_object_get(msg, "method") : NULL;
	if (pver != NULL && !mcp_version_supported(pver) &&
	    strcmp(pver, MCP_STATELESS_VERSION) != 0 &&
	    !(json_is_string(method) &&
	    strcmp(json_string_value(method), "initialize") == 0)) {
		*reply = jsonrpc_error(NULL, RPC_INVALID_REQUEST,
		    "Bad Request: unsupported MCP-Protocol-Version '%.40s' "
		    "(supported: " ALL_VERSIONS ")", pver);
		json_decref(msg);
		return 400;
	}
	if (json_is_array(msg)) {
		/* Batches existed only in 2025-03-26. */
		json_array_foreach(msg, i, m)
			if (json_is_object(json_object_get(json_object_get(m,
			    "params"), "_meta")) && json_object_get(
			    json_object_get(json_object_get(m, "params"),
			    "_meta"), META_VERSION) != NULL)
				pver = MCP_STATELESS_VERSION;
		if (pver != NULL && strcmp(pver, "2025-03-26") != 0) {
			*reply = jsonrpc_error(NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: batches are not part of protocol "
			    "%s; send one message per request", pver);
			json_decref(msg);
			return 400;
		}
		if (json_array_size(msg) == 0) {
			*reply = jsonrpc_error(NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: empty batch");
			json_decref(msg);
			return 400;
		}
		out = json_array();
		json_array_foreach(msg, i, m) {
			r = mcp_one(ctx, m, 1, &bad);
			if (r != NULL && out != NULL)
				json_array_append_new(out, r);
			else
				json_decref(r);
		}
		json_decref(msg);
		if (out != NULL && json_array_size(out) == 0) {
			json_decref(out);
			return 202;
		}
		*reply = out;
		return out != NULL ? 200 : 500;
	}
	r = mcp_one(ctx, msg, 0, &bad);
	json_decref(msg);
	if (r == NULL)
		return 202;
	*reply = r;
	if (bad)
		status = 400;
	return status;
}
