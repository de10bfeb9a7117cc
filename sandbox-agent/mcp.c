/*
 * mcp.c: JSON-RPC framing and the MCP methods (initialize, ping,
 * tools/list, tools/call).  Knows nothing of HTTP beyond the status code it
 * suggests: 400 for a body that is not a usable JSON-RPC message, 200 for
 * every answered request (method errors included), 202 when there is
 * nothing to answer.
 *
 * All state belongs to the workspace, so any request may come on any
 * connection, and there is no session table to bound or expire.  The
 * Mcp-Session-Id minted at initialize only carries what the client
 * declared (agent.h, CLIENT_*), for the eras that say it only there.
 */
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

static json_t *
method_initialize(const struct agent_ctx *ctx, json_t *id, json_t *params)
{
	json_t		*pv = json_object_get(params, "protocolVersion");
	const char	*v, *mods = pycheck_modules();
	struct buf	 ins = BUF_INIT(sizeof(instructions) + 4096);
	json_t		*res;

	if (!json_is_string(pv))
		return jsonrpc_error(id, RPC_INVALID_PARAMS, "initialize needs "
		    "params.protocolVersion (a string such as \"%s\")",
		    MCP_LATEST_VERSION);
	v = json_string_value(pv);
	if (!mcp_version_supported(v))
		v = MCP_LATEST_VERSION;
	if (ctx->session_out != NULL && mcp_session_mint(mcp_client_caps(
	    json_object_get(params, "capabilities")), ctx->session_out) == -1)
		ctx->session_out[0] = '\0';
	if (buf_appends(&ins, instructions) == -1 || (mods[0] != '\0' &&
	    buf_appendf(&ins, "\n%s", mods) == -1)) {
		buf_release(&ins);
		return mcp_result(id, NULL);
	}
	res = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}",
	    "protocolVersion", v,
	    "capabilities", "tools", "listChanged", 0,
	    "serverInfo", "name", "vivarium-agent", "title", "vivarium",
	    "version", VIVARIUM_VERSION,
	    "instructions", buf_str(&ins));
	buf_release(&ins);
	return mcp_result(id, res);
}

static json_t *
method_tools_call(const struct agent_ctx *ctx, json_t *id, json_t *params)
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
		return mcp_result(id, tools_list(ctx->cfg));
	if (strcmp(m, "tools/call") == 0) {
		struct agent_ctx call = *ctx;

		if (params == NULL)
			return jsonrpc_error(id, RPC_INVALID_PARAMS,
			    "tools/call needs params {name, arguments}");
		call.request_id = id;
		return method_tools_call(&call, id, params);
	}
	return jsonrpc_error(id, RPC_METHOD_NOT_FOUND, "Method not found: "
	    "'%.100s' (this server offers initialize, ping, tools/list and "
	    "tools/call)", m);
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
	/* MCP-Protocol-Version applies after initialize. */
	method = json_is_object(msg) ? json_object_get(msg, "method") : NULL;
	if (pver != NULL && !mcp_version_supported(pver) &&
	    !(json_is_string(method) &&
	    strcmp(json_string_value(method), "initialize") == 0)) {
		*reply = jsonrpc_error(NULL, RPC_INVALID_REQUEST,
		    "Bad Request: unsupported MCP-Protocol-Version '%.40s' "
		    "(supported: 2025-11-25, 2025-06-18, 2025-03-26)", pver);
		json_decref(msg);
		return 400;
	}
	if (json_is_array(msg)) {
		/* Batches existed only in 2025-03-26. */
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
