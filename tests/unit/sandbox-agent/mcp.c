/*
 * Unit tests for sandbox-agent/mcp.c: JSON-RPC framing, errors and the MCP
 * methods.  The tools are replaced by stubs, so only the framing is tested.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../sandbox-agent/mcp.c"

static int calls;

/* Two tools: one the view shows (run_python), one it does not. */
json_t *
tools_list(const struct agent_config *cfg)
{
	return json_pack("{s:[{s:s}, {s:s}]}", "tools", "name", "run_python",
	    "name", "list_files");
}

/* The view's own tool, as its file says (tools.c reads it in the agent). */
extern const unsigned char tooldef_workspace_view[];

json_t *
tools_def(const char *name)
{
	return strcmp(name, "workspace_view") == 0 ?
	    json_loads((const char *)tooldef_workspace_view, 0, NULL) : NULL;
}

/* The embedded view (ui_html.c). */
extern const size_t ui_workspace_html_len;

/* The links' base URL (files.c): what the view's CSP allows. */
static const char *link_base = "https://files.example.org:8443/base";

const char *
files_link_base(void)
{
	return link_base;
}

/* What pycheck found, as the instructions' last lines. */
const char *
pycheck_modules(void)
{
	return "Installed: pandas.\nNot installed: polars (use pandas).";
}

/* What the last tools_call saw of the client. */
static unsigned int	 seen_client;

json_t *
tools_call(const struct agent_ctx *ctx, const char *name, json_t *args,
    struct rpc_error *err)
{
	const char	*action;

	calls++;
	seen_client = ctx->client;
	/*
	 * A stub of a tool that needs the user's file: asks for it by URL
	 * elicitation when the client can show one, and on the retried call
	 * answers what the client said.
	 */
	if (strcmp(name, "ask_upload") == 0) {
		if (!(ctx->client & CLIENT_ELICIT_URL))
			return json_pack("{s:[{s:s, s:s}]}", "content", "type",
			    "text", "text", "open https://x.test/up/1");
		action = json_string_value(json_object_get(json_object_get(
		    ctx->input_responses, "el-1"), "action"));
		if (action != NULL)
			return json_pack("{s:[{s:s, s:s}]}", "content", "type",
			    "text", "text", action);
		err->code = RPC_URL_ELICITATION;
		snprintf(err->message, sizeof(err->message), "upload needed");
		err->data = json_pack("{s:[{s:s, s:s, s:s, s:s}]}",
		    "elicitations", "mode", "url", "elicitationId", "el-1",
		    "url", "https://x.test/up/1", "message", "Upload the file");
		return NULL;
	}
	if (strcmp(name, "echo") != 0) {
		err->code = RPC_INVALID_PARAMS;
		snprintf(err->message, sizeof(err->message), "Unknown tool '%s'",
		    name);
		return NULL;
	}
	return json_pack("{s:[], s:b}", "content", "isError", 0);
}

/* notifications/cancelled reaches cancel.c with the id it names. */
static int	 cancels;
static char	 cancelled_key[64];

int
cancel_request(const char *scope, json_t *id, const char *why)
{
	char	*k = json_dumps(id, JSON_ENCODE_ANY);

	cancels++;
	snprintf(cancelled_key, sizeof(cancelled_key), "%s:%s", scope,
	    k ? k : "(none)");
	free(k);
	return 1;
}

static const struct agent_ctx ctx = { .workspace = "/nonexistent",
    .label = "test" };

/* Handles body; returns the status and leaves the reply in *out. */
static unsigned int
handle(const char *pver, const char *body, json_t **out)
{
	return mcp_handle(&ctx, pver, body, strlen(body), out);
}

static int
error_code(json_t *reply)
{
	json_t *e = json_object_get(reply, "error");

	return (int)json_integer_value(json_object_get(e, "code"));
}

static void
test_parse_error(void **state)
{
	json_t *r;

	assert_int_equal(handle(NULL, "{\"jsonrpc\": ", &r), 400);
	assert_int_equal(error_code(r), RPC_PARSE_ERROR);
	assert_true(json_is_null(json_object_get(r, "id")));
	json_decref(r);
	/* Invalid UTF-8 is a parse error too, with a message saying where. */
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"ping\",\"x\":\"\xff\"}", &r), 400);
	assert_int_equal(error_code(r), RPC_PARSE_ERROR);
	json_decref(r);
	/* So is a lone surrogate and a NUL escape. */
	assert_int_equal(handle(NULL, "{\"a\":\"\\ud800\"}", &r), 400);
	json_decref(r);
	assert_int_equal(handle(NULL, "{\"a\":\"\\u0000\"}", &r), 400);
	json_decref(r);
	/* A parse error that quotes bytes that are not UTF-8 still has a
	 * message (found by the fuzzer: it had no reply at all). */
	assert_int_equal(handle(NULL, "[{\"a\":1},\"\\ud8\xde\x9a\x8d\x86or\"0]",
	    &r), 400);
	assert_int_equal(error_code(r), RPC_PARSE_ERROR);
	json_decref(r);
}

static void
test_invalid_shapes(void **state)
{
	static const char *const bad[] = {
		"[]", "42", "\"x\"", "null",
		"{\"id\":1,\"method\":\"ping\"}",			/* no jsonrpc */
		"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1}",			/* no method */
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
		"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
		NULL
	};
	json_t	*r;
	size_t	 i;

	for (i = 0; bad[i] != NULL; i++) {
		assert_int_equal(handle(NULL, bad[i], &r), 400);
		assert_int_equal(error_code(r), RPC_INVALID_REQUEST);
		json_decref(r);
	}
}

static void
test_id_echoed(void **state)
{
	json_t *r;

	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":\"abc\","
	    "\"method\":\"ping\"}", &r), 200);
	assert_string_equal(json_string_value(json_object_get(r, "id")), "abc");
	assert_true(json_is_object(json_object_get(r, "result")));
	assert_int_equal(json_object_size(json_object_get(r, "result")), 0);
	json_decref(r);
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":0,"
	    "\"method\":\"ping\"}", &r), 200);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 0);
	json_decref(r);
}

static void
test_notifications_and_responses_get_202(void **state)
{
	json_t *r;

	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\","
	    "\"method\":\"notifications/initialized\"}", &r), 202);
	assert_null(r);
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\","
	    "\"method\":\"notifications/whatever\",\"params\":{}}", &r), 202);
	assert_null(r);
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":5,"
	    "\"result\":{}}", &r), 202);
	assert_null(r);
}

/* A cancel is a notification: 202, and the id goes to cancel.c as is
 * (7 and "7" stay apart), scoped by the workspace. */
static void
test_cancelled_notification(void **state)
{
	json_t *r;

	cancels = 0;
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/cancelled\",\"params\":{\"requestId\":7,"
	    "\"reason\":\"AbortError\"}}", &r), 202);
	assert_null(r);
	assert_int_equal(cancels, 1);
	assert_string_equal(cancelled_key, "/nonexistent:7");
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/cancelled\",\"params\":{\"requestId\":\"7\"}}",
	    &r), 202);
	assert_string_equal(cancelled_key, "/nonexistent:\"7\"");
	/* Without params nothing is looked up; a bad id is cancel.c's to
	 * ignore. */
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/cancelled\"}", &r), 202);
	assert_int_equal(cancels, 2);
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/cancelled\",\"params\":{\"requestId\":[1]}}",
	    &r), 202);
	assert_null(r);
}

static void
test_unknown_method(void **state)
{
	json_t *r;

	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"prompts/list\"}", &r), 200);
	assert_int_equal(error_code(r), RPC_METHOD_NOT_FOUND);
	assert_non_null(strstr(json_string_value(json_object_get(
	    json_object_get(r, "error"), "message")), "prompts/list"));
	json_decref(r);
}

static void
test_initialize_negotiates(void **state)
{
	json_t		*r, *res;
	const char	*v;

	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\","
	    "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":"
	    "\"1\"}}}", &r), 200);
	res = json_object_get(r, "result");
	assert_string_equal(json_string_value(json_object_get(res,
	    "protocolVersion")), "2025-03-26");
	assert_non_null(json_object_get(json_object_get(res, "capabilities"),
	    "tools"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    res, "serverInfo"), "name")), "vivarium-agent");
	v = json_string_value(json_object_get(res, "instructions"));
	assert_non_null(v);
	assert_non_null(strstr(v, "run_python"));
	assert_non_null(strstr(v, "vivarium_charts"));
	assert_non_null(strstr(v, "share_file(path)"));
	assert_non_null(strstr(v, "upload_link()"));
	/* The libraries line is the Python's, not fixed text. */
	assert_non_null(strstr(v, "\nInstalled: pandas.\nNot installed: "
	    "polars (use pandas)."));
	assert_null(strstr(v, "pdfplumber"));
	/* Said once: the link tools' lifetimes are theirs to say. */
	assert_null(strstr(v, "lifetime"));
	json_decref(r);

	/* An unknown version gets our latest. */
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"2099-01-01\"}}",
	    &r), 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r,
	    "result"), "protocolVersion")), MCP_LATEST_VERSION);
	json_decref(r);

	/* No version at all: invalid params. */
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"initialize\",\"params\":{}}", &r), 200);
	assert_int_equal(error_code(r), RPC_INVALID_PARAMS);
	json_decref(r);
}

static void
test_protocol_version_header(void **state)
{
	json_t *r;

	assert_int_equal(handle("2025-06-18", "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"ping\"}", &r), 200);
	json_decref(r);
	assert_int_equal(handle("1999-01-01", "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"ping\"}", &r), 400);
	assert_non_null(strstr(json_string_value(json_object_get(
	    json_object_get(r, "error"), "message")), "MCP-Protocol-Version"));
	json_decref(r);
}

static void
test_tools_call_params(void **state)
{
	json_t *r;

	calls = 0;
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\"}", &r), 200);
	assert_int_equal(error_code(r), RPC_INVALID_PARAMS);
	json_decref(r);
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":3}}", &r), 200);
	assert_int_equal(error_code(r), RPC_INVALID_PARAMS);
	json_decref(r);
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":[1]}}",
	    &r), 200);
	assert_int_equal(error_code(r), RPC_INVALID_PARAMS);
	json_decref(r);
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":[\"echo\"]}", &r), 200);
	assert_int_equal(error_code(r), RPC_INVALID_PARAMS);
	json_decref(r);
	assert_int_equal(calls, 0);
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"nope\"}}", &r), 200);
	assert_int_equal(error_code(r), RPC_INVALID_PARAMS);
	json_decref(r);
	assert_int_equal(handle(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"echo\"}}", &r), 200);
	assert_non_null(json_object_get(r, "result"));
	json_decref(r);
	assert_int_equal(calls, 2);
}

static void
test_batches(void **state)
{
	json_t *r;

	/* 2025-03-26 (or no header): answered as an array, notifications silent. */
	assert_int_equal(handle(NULL, "[{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/initialized\"},{\"jsonrpc\":\"2.0\",\"id\":2,"
	    "\"method\":\"nope\"}]", &r), 200);
	assert_true(json_is_array(r));
	assert_int_equal(json_array_size(r), 2);
	assert_int_equal(error_code(json_array_get(r, 1)), RPC_METHOD_NOT_FOUND);
	json_decref(r);
	assert_int_equal(handle(NULL, "[{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/initialized\"}]", &r), 202);
	assert_null(r);
	/* Later versions have no batches. */
	assert_int_equal(handle("2025-06-18", "[{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"ping\"}]", &r), 400);
	assert_int_equal(error_code(r), RPC_INVALID_REQUEST);
	json_decref(r);
}

/* The session id minted at initialize carries what the client declared. */
static void
test_session_carries_client(void **state)
{
	struct agent_ctx c;
	char		 sid[MCP_SESSION_SIZE] = "", other[MCP_SESSION_SIZE];
	json_t		*r, *caps;
	const char	*init = "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	    "\"2025-11-25\",\"capabilities\":{\"elicitation\":{\"url\":{}},"
	    "\"extensions\":{\"io.modelcontextprotocol/ui\":{\"mimeTypes\":"
	    "[\"text/html;profile=mcp-app\"]}}}}}";

	memset(&c, 0, sizeof(c));
	c.label = "t";
	c.workspace = "/nonexistent";
	c.session_out = sid;
	r = NULL;
	assert_int_equal(mcp_handle(&c, NULL, init, strlen(init), &r), 200);
	json_decref(r);
	assert_int_equal(mcp_session_client(sid), CLIENT_ELICIT_URL | CLIENT_UI);
	/* Each initialize mints a new id. */
	assert_int_equal(mcp_session_mint(CLIENT_ELICIT_URL | CLIENT_UI, other),
	    0);
	assert_string_not_equal(sid, other);

	/* Form-only elicitation, another extension, or none: no bits. */
	caps = json_loads("{\"elicitation\":{}, \"extensions\":{\"x/y\":{}}}",
	    0, NULL);
	assert_int_equal(mcp_client_caps(caps), 0);
	json_decref(caps);
	caps = json_loads("{\"elicitation\":{\"form\":{}, \"url\":{}}, "
	    "\"extensions\":{\"io.modelcontextprotocol/ui\":{\"mimeTypes\":"
	    "[\"text/plain\"]}}}", 0, NULL);
	assert_int_equal(mcp_client_caps(caps), CLIENT_ELICIT_URL);
	json_decref(caps);
	assert_int_equal(mcp_client_caps(NULL), 0);

	/* Foreign, truncated or hostile ids carry nothing. */
	assert_int_equal(mcp_session_client(NULL), 0);
	assert_int_equal(mcp_session_client(""), 0);
	assert_int_equal(mcp_session_client("abc"), 0);
	assert_int_equal(mcp_session_client("vv1-03-0123"), 0);
	assert_int_equal(mcp_session_client("vv1-0g-0123456789abcdef"), 0);
	assert_int_equal(mcp_session_client("vv1-03-0123456789abcdef0"), 0);
	assert_int_equal(mcp_session_client("vv1-ff-0123456789abcdef"),
	    CLIENT_ELICIT_URL | CLIENT_UI);
	assert_int_equal(mcp_session_client("vv1-01-0123456789abcdef"),
	    CLIENT_ELICIT_URL);
}


/* ---------------------------------------------------------------- the view */

static json_t *
ask(const struct agent_ctx *c, const char *body)
{
	json_t *r = NULL;

	assert_int_equal(mcp_handle(c, NULL, body, strlen(body), &r), 200);
	assert_non_null(r);
	return r;
}

static void
test_resources_list(void **state)
{
	json_t	*r, *list, *e;

	r = ask(&ctx, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"resources/list\"}");
	list = json_object_get(json_object_get(r, "result"), "resources");
	assert_int_equal(json_array_size(list), 1);
	e = json_array_get(list, 0);
	assert_string_equal(json_string_value(json_object_get(e, "uri")),
	    "ui://vivarium/workspace");
	assert_string_equal(json_string_value(json_object_get(e, "mimeType")),
	    "text/html;profile=mcp-app");
	assert_non_null(json_object_get(e, "name"));
	json_decref(r);
	/* params are optional, a cursor is ignored (one page). */
	r = ask(&ctx, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
	    "\"resources/list\",\"params\":{\"cursor\":\"x\"}}");
	assert_int_equal(json_array_size(json_object_get(json_object_get(r,
	    "result"), "resources")), 1);
	json_decref(r);
}

static void
test_resources_read(void **state)
{
	json_t		*r, *c, *csp;
	const char	*html;

	r = ask(&ctx, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"resources/read\",\"params\":{\"uri\":\"ui://vivarium/workspace\"}}");
	c = json_array_get(json_object_get(json_object_get(r, "result"),
	    "contents"), 0);
	assert_non_null(c);
	assert_string_equal(json_string_value(json_object_get(c, "uri")),
	    "ui://vivarium/workspace");
	assert_string_equal(json_string_value(json_object_get(c, "mimeType")),
	    "text/html;profile=mcp-app");
	html = json_string_value(json_object_get(c, "text"));
	assert_non_null(html);
	assert_non_null(strstr(html, "<html"));
	assert_non_null(strstr(html, "Content-Security-Policy"));
	/* The embedded file is all there, its CSP filled in. */
	assert_non_null(strstr(html, "</html>"));
	assert_true(strlen(html) > ui_workspace_html_len / 2);
	assert_null(strstr(html, "@SCRIPT_HASH@"));
	assert_null(strstr(html, "@LINK_ORIGIN@"));
	assert_non_null(strstr(html, "script-src 'sha256-"));
	assert_non_null(strstr(html, "style-src 'sha256-"));
	assert_non_null(strstr(html, "connect-src https://files.example.org:8443;"));
	/* The CSP names the links' origin (no path), and only it. */
	csp = json_object_get(json_object_get(json_object_get(c, "_meta"),
	    "ui"), "csp");
	assert_int_equal(json_array_size(json_object_get(csp,
	    "connectDomains")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    csp, "connectDomains"), 0)), "https://files.example.org:8443");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    csp, "resourceDomains"), 0)), "https://files.example.org:8443");
	json_decref(r);

	/* No links: no domain at all. */
	link_base = NULL;
	r = ask(&ctx, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"resources/read\",\"params\":{\"uri\":\"ui://vivarium/workspace\"}}");
	c = json_array_get(json_object_get(json_object_get(r, "result"),
	    "contents"), 0);
	csp = json_object_get(json_object_get(json_object_get(c, "_meta"),
	    "ui"), "csp");
	assert_true(json_is_object(csp));
	assert_int_equal(json_object_size(csp), 0);
	assert_non_null(strstr(json_string_value(json_object_get(c, "text")),
	    "connect-src 'none';"));
	json_decref(r);
	/* A base that is no http(s) URL is not put into a CSP. */
	link_base = "javascript:alert(1)";
	r = ask(&ctx, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"resources/read\",\"params\":{\"uri\":\"ui://vivarium/workspace\"}}");
	c = json_array_get(json_object_get(json_object_get(r, "result"),
	    "contents"), 0);
	assert_int_equal(json_object_size(json_object_get(json_object_get(
	    json_object_get(c, "_meta"), "ui"), "csp")), 0);
	json_decref(r);
	link_base = "https://files.example.org:8443/base";
}

static void
test_resources_read_bad(void **state)
{
	static const struct { const char *params; int code; const char *says; }
	    cases[] = {
		{ "", RPC_INVALID_PARAMS, "params.uri" },
		{ ",\"params\":{}", RPC_INVALID_PARAMS, "params.uri" },
		{ ",\"params\":{\"uri\":null}", RPC_INVALID_PARAMS, "string" },
		{ ",\"params\":{\"uri\":7}", RPC_INVALID_PARAMS, "string" },
		{ ",\"params\":{\"uri\":[\"ui://vivarium/workspace\"]}",
		    RPC_INVALID_PARAMS, "string" },
		{ ",\"params\":[1]", RPC_INVALID_PARAMS, "object" },
		{ ",\"params\":{\"uri\":\"ui://vivarium/other\"}",
		    RPC_RESOURCE_NOT_FOUND, "ui://vivarium/other" },
		{ ",\"params\":{\"uri\":\"ui://vivarium/workspace/\"}",
		    RPC_RESOURCE_NOT_FOUND, "not found" },
		{ ",\"params\":{\"uri\":\"file:///etc/passwd\"}",
		    RPC_RESOURCE_NOT_FOUND, "not found" },
		{ ",\"params\":{\"uri\":\"\"}", RPC_RESOURCE_NOT_FOUND,
		    "not found" },
	};
	char	 body[256];
	json_t	*r, *e;
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":5,"
		    "\"method\":\"resources/read\"%s}", cases[i].params);
		r = ask(&ctx, body);
		e = json_object_get(r, "error");
		assert_non_null(e);
		assert_int_equal(error_code(r), cases[i].code);
		assert_non_null(strstr(json_string_value(json_object_get(e,
		    "message")), cases[i].says));
		assert_int_equal(json_integer_value(json_object_get(r, "id")),
		    5);
		if (cases[i].code == RPC_RESOURCE_NOT_FOUND)
			assert_true(json_is_string(json_object_get(
			    json_object_get(e, "data"), "uri")));
		json_decref(r);
	}
}

/* A tool's _meta.ui for everyone; the app-only tool with the extension. */
/* The list is built once and shared: every reply carries the same tools,
 * and what is added to one reply's result is in no other's. */
static void
test_tools_list_shared(void **state)
{
	struct agent_ctx c = ctx;
	json_t		*a, *b;

	a = ask(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/list\"}");
	assert_true(json_array_size(json_object_get(json_object_get(a,
	    "result"), "tools")) > 0);
	json_object_set_new(json_object_get(a, "result"), "ttlMs",
	    json_integer(0));
	b = ask(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
	    "\"tools/list\"}");
	assert_null(json_object_get(json_object_get(b, "result"), "ttlMs"));
	assert_true(json_equal(json_object_get(json_object_get(a, "result"),
	    "tools"), json_object_get(json_object_get(b, "result"), "tools")));
	json_decref(a);
	json_decref(b);
}

static void
test_tools_list_ui(void **state)
{
	struct agent_ctx c = ctx;
	json_t		*r, *tools, *t;
	size_t		 i;
	int		 view;

	for (c.client = 0; c.client <= CLIENT_UI; c.client += CLIENT_UI) {
		r = ask(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
		    "\"tools/list\"}");
		tools = json_object_get(json_object_get(r, "result"), "tools");
		view = 0;
		json_array_foreach(tools, i, t) {
			const char *n = json_string_value(json_object_get(t,
			    "name")), *uri;
			json_t *ui = json_object_get(json_object_get(t,
			    "_meta"), "ui");

			uri = json_string_value(json_object_get(ui,
			    "resourceUri"));
			if (strcmp(n, "list_files") == 0)
				assert_null(ui);
			else
				assert_string_equal(uri,
				    "ui://vivarium/workspace");
			if (strcmp(n, "workspace_view") == 0) {
				view = 1;
				assert_int_equal(json_array_size(
				    json_object_get(ui, "visibility")), 1);
				assert_string_equal(json_string_value(
				    json_array_get(json_object_get(ui,
				    "visibility"), 0)), "app");
			}
		}
		assert_int_equal(view, c.client == CLIENT_UI);
		assert_int_equal(json_array_size(tools), 2 + view);
		json_decref(r);
	}
}

/* initialize says resources and the extension. */
static void
test_initialize_ui(void **state)
{
	json_t *r, *caps;

	r = ask(&ctx, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}");
	caps = json_object_get(json_object_get(r, "result"), "capabilities");
	assert_true(json_is_object(json_object_get(caps, "resources")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    json_object_get(json_object_get(caps, "extensions"),
	    "io.modelcontextprotocol/ui"), "mimeTypes"), 0)),
	    "text/html;profile=mcp-app");
	json_decref(r);
}

/* ------------------------------------------------------------ 2026-07-28 */

#define ENV26(caps) "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":" \
	"\"2026-07-28\",\"io.modelcontextprotocol/clientInfo\":{\"name\":" \
	"\"t\",\"version\":\"1\"},\"io.modelcontextprotocol/clientCapabilities\":" \
	caps "}"

/* A POST with the 2026 headers (NULL: absent); session_out is watched. */
static unsigned int
handle26(const char *pver, const char *method, const char *name,
    const char *body, json_t **out, char *sid)
{
	struct agent_ctx c = ctx;

	c.hdr_method = method;
	c.hdr_name = name;
	c.session_out = sid;
	*out = NULL;
	return mcp_handle(&c, pver, body, strlen(body), out);
}

static json_t *
result_of(json_t *reply)
{
	return json_object_get(reply, "result");
}

static void
test_discover(void **state)
{
	char	 sid[MCP_SESSION_SIZE] = "";
	json_t	*r, *res, *sv;

	assert_int_equal(handle26("2026-07-28", "server/discover", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"server/discover\","
	    "\"params\":{" ENV26("{}") "}}", &r, sid), 200);
	res = result_of(r);
	assert_string_equal(json_string_value(json_object_get(res,
	    "resultType")), "complete");
	sv = json_object_get(res, "supportedVersions");
	assert_string_equal(json_string_value(json_array_get(sv, 0)),
	    "2026-07-28");
	assert_int_equal(json_array_size(sv), 4);
	assert_non_null(json_object_get(json_object_get(res, "capabilities"),
	    "tools"));
	assert_non_null(strstr(json_string_value(json_object_get(res,
	    "instructions")), "run_python"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_object_get(res, "_meta"), "io.modelcontextprotocol/serverInfo"),
	    "name")), "vivarium-agent");
	assert_string_equal(sid, "");	/* no session in this era */
	json_decref(r);
}

static void
test_2026_envelope_and_headers(void **state)
{
	static const struct {
		const char	*pver, *method, *name, *body;
		unsigned int	 status;
		int		 code;
	} cases[] = {
		/* capabilities missing, or not an object */
		{ "2026-07-28", "tools/list", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
		  "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\""
		  "}}}", 400, RPC_INVALID_PARAMS },
		{ "2026-07-28", "tools/list", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/list\",\"params\":{" ENV26("[]")
		  "}}", 400, RPC_INVALID_PARAMS },
		/* a version that is not a string */
		{ "2026-07-28", "tools/list", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
		  "{\"io.modelcontextprotocol/protocolVersion\":20260728,"
		  "\"io.modelcontextprotocol/clientCapabilities\":{}}}}", 400,
		  RPC_INVALID_PARAMS },
		/* the 2026 header on a body without the envelope */
		{ "2026-07-28", "tools/list", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/list\"}", 400,
		  RPC_INVALID_PARAMS },
		/* a version we do not speak */
		{ "2027-01-01", "tools/list", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
		  "{\"io.modelcontextprotocol/protocolVersion\":\"2027-01-01\","
		  "\"io.modelcontextprotocol/clientCapabilities\":{}}}}", 400,
		  RPC_UNSUPPORTED_VERSION },
		/* headers missing or disagreeing with the body */
		{ "2025-11-25", "tools/list", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/list\",\"params\":{" ENV26("{}")
		  "}}", 400, RPC_HEADER_MISMATCH },
		{ NULL, "tools/list", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/list\",\"params\":{" ENV26("{}")
		  "}}", 400, RPC_HEADER_MISMATCH },
		{ "2026-07-28", NULL, NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/list\",\"params\":{" ENV26("{}")
		  "}}", 400, RPC_HEADER_MISMATCH },
		{ "2026-07-28", "tools/call", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/list\",\"params\":{" ENV26("{}")
		  "}}", 400, RPC_HEADER_MISMATCH },
		{ "2026-07-28", "tools/call", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"echo\"," ENV26("{}") "}}", 400, RPC_HEADER_MISMATCH },
		{ "2026-07-28", "tools/call", "run_python", "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"echo\"," ENV26("{}") "}}", 400, RPC_HEADER_MISMATCH },
		{ "2026-07-28", "tools/call", "=?base64?ZWNo!!?=",
		  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		  "\"params\":{\"name\":\"echo\"," ENV26("{}") "}}", 400,
		  RPC_HEADER_MISMATCH },
		/* the same, right: plain and base64 names */
		{ "2026-07-28", "tools/call", "echo", "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"echo\"," ENV26("{}") "}}", 200, 0 },
		{ "2026-07-28", "tools/call", "=?base64?ZWNobw==?=",
		  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		  "\"params\":{\"name\":\"echo\"," ENV26("{}") "}}", 200, 0 },
		/* removed in this era: 404, -32601 */
		{ "2026-07-28", "ping", NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,"
		  "\"method\":\"ping\",\"params\":{" ENV26("{}") "}}", 404,
		  RPC_METHOD_NOT_FOUND },
		{ "2026-07-28", "initialize", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"initialize\",\"params\":{"
		  "\"protocolVersion\":\"2026-07-28\"," ENV26("{}") "}}", 404,
		  RPC_METHOD_NOT_FOUND },
		/* the 2025 handshake under the 2026 header */
		{ "2026-07-28", "initialize", NULL, "{\"jsonrpc\":\"2.0\","
		  "\"id\":1,\"method\":\"initialize\",\"params\":{"
		  "\"protocolVersion\":\"2026-07-28\"}}", 400,
		  RPC_HEADER_MISMATCH },
	};
	json_t	*r;
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned int st = handle26(cases[i].pver, cases[i].method,
		    cases[i].name, cases[i].body, &r, NULL);

		if (st != cases[i].status || (cases[i].code != 0 &&
		    error_code(r) != cases[i].code)) {
			char *t = json_dumps(r, 0);

			fail_msg("case %zu: status %u, reply %s", i, st, t);
		}
		if (cases[i].code != 0)
			assert_non_null(strlen(json_string_value(json_object_get(
			    json_object_get(r, "error"), "message"))) > 20 ?
			    r : NULL);
		json_decref(r);
	}
	/* -32022 lists what we speak. */
	handle26("2027-01-01", "tools/list", NULL, "{\"jsonrpc\":\"2.0\","
	    "\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
	    "{\"io.modelcontextprotocol/protocolVersion\":\"2027-01-01\","
	    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}", &r, NULL);
	assert_int_equal(json_array_size(json_object_get(json_object_get(
	    json_object_get(r, "error"), "data"), "supported")), 4);
	json_decref(r);
}

static void
test_2026_initialize_is_2025(void **state)
{
	char	 sid[MCP_SESSION_SIZE] = "";
	json_t	*r;

	/* A client asking initialize for 2026-07-28 gets the newest that
	 * has a handshake. */
	assert_int_equal(handle26(NULL, NULL, NULL, "{\"jsonrpc\":\"2.0\","
	    "\"id\":1,\"method\":\"initialize\",\"params\":{"
	    "\"protocolVersion\":\"2026-07-28\",\"capabilities\":{}}}", &r,
	    sid), 200);
	assert_string_equal(json_string_value(json_object_get(result_of(r),
	    "protocolVersion")), "2025-11-25");
	assert_null(json_object_get(result_of(r), "resultType"));
	assert_string_not_equal(sid, "");
	json_decref(r);
}

static void
test_2026_tools(void **state)
{
	json_t	*r, *res;

	assert_int_equal(handle26("2026-07-28", "tools/list", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
	    "\"params\":{" ENV26("{}") "}}", &r, NULL), 200);
	res = result_of(r);
	assert_string_equal(json_string_value(json_object_get(res,
	    "resultType")), "complete");
	assert_true(json_is_integer(json_object_get(res, "ttlMs")));
	assert_true(json_is_string(json_object_get(res, "cacheScope")));
	assert_true(json_is_array(json_object_get(res, "tools")));
	json_decref(r);

	/* Capabilities come from this request's _meta, not a session. */
	assert_int_equal(handle26("2026-07-28", "tools/call", "echo",
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"echo\"," ENV26("{\"elicitation\":"
	    "{\"url\":{}}}") "}}", &r, NULL), 200);
	assert_string_equal(json_string_value(json_object_get(result_of(r),
	    "resultType")), "complete");
	assert_int_equal(seen_client, CLIENT_ELICIT_URL);
	json_decref(r);

	/* A 2026 notification needs no headers, and is not answered. */
	assert_int_equal(handle26(NULL, NULL, NULL, "{\"jsonrpc\":\"2.0\","
	    "\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":"
	    "7," ENV26("{}") "}}", &r, NULL), 202);
	assert_null(r);

	/* No batch may hold a 2026 request. */
	assert_int_equal(handle26(NULL, NULL, NULL, "[{\"jsonrpc\":\"2.0\","
	    "\"id\":1,\"method\":\"tools/list\",\"params\":{" ENV26("{}")
	    "}}]", &r, NULL), 400);
	json_decref(r);
}

/* Whether the reply's result names s anywhere. */
static int
result_mentions(json_t *r, const char *s)
{
	char	*d = json_dumps(result_of(r), 0);
	int	 yes = d != NULL && strstr(d, s) != NULL;

	free(d);
	return yes;
}

/* The view in the 2026 era: discover says it, resources answer, and the
 * view's own tool is listed only for a request whose client shows views. */
static void
test_2026_view(void **state)
{
	json_t	*r, *res;

	assert_int_equal(handle26("2026-07-28", "server/discover", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\","
	    "\"params\":{" ENV26("{}") "}}", &r, NULL), 200);
	res = json_object_get(result_of(r), "capabilities");
	assert_non_null(json_object_get(res, "resources"));
	assert_non_null(json_object_get(json_object_get(res, "extensions"),
	    "io.modelcontextprotocol/ui"));
	json_decref(r);
	assert_int_equal(handle26("2026-07-28", "resources/list", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/list\","
	    "\"params\":{" ENV26("{}") "}}", &r, NULL), 200);
	res = result_of(r);
	assert_string_equal(json_string_value(json_object_get(res,
	    "resultType")), "complete");
	assert_int_equal(json_array_size(json_object_get(res, "resources")), 1);
	json_decref(r);
	assert_int_equal(handle26("2026-07-28", "resources/read", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\","
	    "\"params\":{\"uri\":\"ui://vivarium/workspace\"," ENV26("{}")
	    "}}", &r, NULL), 200);
	assert_non_null(json_object_get(result_of(r), "contents"));
	json_decref(r);
	assert_int_equal(handle26("2026-07-28", "tools/list", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\","
	    "\"params\":{" ENV26("{\"extensions\":{\"io.modelcontextprotocol/"
	    "ui\":{\"mimeTypes\":[\"text/html;profile=mcp-app\"]}}}") "}}", &r,
	    NULL), 200);
	assert_true(result_mentions(r, "workspace_view"));
	json_decref(r);
	assert_int_equal(handle26("2026-07-28", "tools/list", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\","
	    "\"params\":{" ENV26("{}") "}}", &r, NULL), 200);
	assert_false(result_mentions(r, "workspace_view"));
	json_decref(r);
}

static void
test_2026_input_required(void **state)
{
	json_t	*r, *res, *ir, *p;
	const char *call26 = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"ask_upload\",\"arguments\":"
	    "{}," ENV26("{\"elicitation\":{\"url\":{}}}") "}}";

	/* The tool's -32042 becomes input_required ... */
	assert_int_equal(handle26("2026-07-28", "tools/call", "ask_upload",
	    call26, &r, NULL), 200);
	res = result_of(r);
	assert_non_null(res);
	assert_string_equal(json_string_value(json_object_get(res,
	    "resultType")), "input_required");
	ir = json_object_get(json_object_get(res, "inputRequests"), "el-1");
	assert_string_equal(json_string_value(json_object_get(ir, "method")),
	    "elicitation/create");
	p = json_object_get(ir, "params");
	assert_string_equal(json_string_value(json_object_get(p, "mode")),
	    "url");
	assert_string_equal(json_string_value(json_object_get(p, "url")),
	    "https://x.test/up/1");
	assert_string_equal(json_string_value(json_object_get(p,
	    "elicitationId")), "el-1");
	assert_string_equal(json_string_value(json_object_get(p, "message")),
	    "Upload the file");
	json_decref(r);

	/* ... and the retried call reaches the tool with the answer. */
	assert_int_equal(handle26("2026-07-28", "tools/call", "ask_upload",
	    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"ask_upload\",\"arguments\":{},\"inputResponses\":"
	    "{\"el-1\":{\"action\":\"decline\"}}," ENV26("{\"elicitation\":"
	    "{\"url\":{}}}") "}}", &r, NULL), 200);
	res = result_of(r);
	assert_string_equal(json_string_value(json_object_get(res,
	    "resultType")), "complete");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(res, "content"), 0), "text")), "decline");
	json_decref(r);

	/* inputResponses of the wrong shape: -32602. */
	assert_int_equal(handle26("2026-07-28", "tools/call", "ask_upload",
	    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"ask_upload\",\"inputResponses\":[]," ENV26("{}")
	    "}}", &r, NULL), 200);
	assert_int_equal(error_code(r), RPC_INVALID_PARAMS);
	json_decref(r);

	/* The 2025 era keeps the error -32042 with its data. */
	{
		struct agent_ctx c = ctx;
		const char *b = "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":"
		    "\"tools/call\",\"params\":{\"name\":\"ask_upload\"}}";

		c.client = CLIENT_ELICIT_URL;
		assert_int_equal(mcp_handle(&c, "2025-11-25", b, strlen(b),
		    &r), 200);
		assert_int_equal(error_code(r), RPC_URL_ELICITATION);
		assert_non_null(json_object_get(json_object_get(r, "error"),
		    "data"));
		json_decref(r);
	}
}

/* The SSE path's early check refuses what mcp_handle would. */
static void
test_2026_refused_early(void **state)
{
	struct agent_ctx c = ctx;
	json_t		*r;
	const char	*b = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"echo\"," ENV26("{}") "}}";

	c.hdr_method = "tools/call";
	c.hdr_name = "other";
	assert_int_equal(mcp_refused(&c, "2026-07-28", b, strlen(b), &r), 400);
	assert_int_equal(error_code(r), RPC_HEADER_MISMATCH);
	json_decref(r);
	c.hdr_name = "echo";
	assert_int_equal(mcp_refused(&c, "2026-07-28", b, strlen(b), &r), 0);
	assert_null(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_error),
		cmocka_unit_test(test_invalid_shapes),
		cmocka_unit_test(test_id_echoed),
		cmocka_unit_test(test_notifications_and_responses_get_202),
		cmocka_unit_test(test_cancelled_notification),
		cmocka_unit_test(test_unknown_method),
		cmocka_unit_test(test_initialize_negotiates),
		cmocka_unit_test(test_protocol_version_header),
		cmocka_unit_test(test_tools_call_params),
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_session_carries_client),
		cmocka_unit_test(test_resources_list),
		cmocka_unit_test(test_resources_read),
		cmocka_unit_test(test_resources_read_bad),
		cmocka_unit_test(test_tools_list_shared),
		cmocka_unit_test(test_tools_list_ui),
		cmocka_unit_test(test_initialize_ui),
		cmocka_unit_test(test_discover),
		cmocka_unit_test(test_2026_envelope_and_headers),
		cmocka_unit_test(test_2026_initialize_is_2025),
		cmocka_unit_test(test_2026_tools),
		cmocka_unit_test(test_2026_view),
		cmocka_unit_test(test_2026_input_required),
		cmocka_unit_test(test_2026_refused_early),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
