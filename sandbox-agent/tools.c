/*
 * tools.c: the three MCP tools -- their schemas, argument checks, and how a
 * result is put into words for a model.  Running Python is run.c's job.
 */
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "log.h"
#include "run.h"
#include "banned.h"

#define READ_DEFAULT_CHARS	10000
#define READ_MAX_CHARS		1000000
#define TEXT_MAX		(64u * 1024 * 1024)

/* ------------------------------------------------------------ schemas */

json_t *
tools_list(void)
{
	json_t *run, *list, *read;

	run = json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s, "
	    "s:i, s:i}, s:{s:s, s:s, s:b}}, s:[s], s:b}, s:{s:b, s:b}}",
	    "name", "run_python",
	    "description",
	    "Run Python 3 code in a fresh process with the working directory "
	    "set to the workspace. Variables, functions and imports from "
	    "earlier calls are restored automatically (see the '--- state ---' "
	    "footer), so don't re-import or re-load what is already there. "
	    "Returns the exit code, the tail of stdout and stderr, and any new "
	    "or changed .png files as images (save charts with plt.savefig or "
	    "the vivarium_charts helpers). Runs in one workspace are queued "
	    "one after another.",
	    "inputSchema", "type", "object", "properties",
	    "code", "type", "string", "description",
	    "The Python source to run, as a complete script. Use print() to "
	    "show results; the value of the last expression is not shown.",
	    "timeout_seconds", "type", "integer", "description",
	    "Stop the run after this many seconds (the whole process tree is "
	    "killed). Values above the server's limit are lowered to it.",
	    "default", 60, "minimum", 1,
	    "fresh", "type", "boolean", "description",
	    "Start from an empty namespace and discard the stored one "
	    "(files are kept).",
	    "default", 0,
	    "required", "code", "additionalProperties", 0,
	    "annotations", "readOnlyHint", 0, "openWorldHint", 1);
	list = json_pack("{s:s, s:s, s:{s:s, s:{}, s:b}, s:{s:b}}",
	    "name", "list_files",
	    "description",
	    "List every file in the workspace, recursively, with sizes. Long "
	    "listings are cut (the cut is marked).",
	    "inputSchema", "type", "object", "properties",
	    "additionalProperties", 0,
	    "annotations", "readOnlyHint", 1);
	read = json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s, "
	    "s:i, s:i, s:i}}, s:[s], s:b}, s:{s:b}}",
	    "name", "read_text_file",
	    "description",
	    "Read a UTF-8 text file from the workspace. Paths are relative to "
	    "the workspace; paths leading outside it (.., absolute paths, "
	    "symbolic links) and binary files are refused. Text longer than "
	    "max_chars is cut and the cut is marked.",
	    "inputSchema", "type", "object", "properties",
	    "path", "type", "string", "description",
	    "File path relative to the workspace, e.g. data/prices.csv.",
	    "max_chars", "type", "integer", "description",
	    "Return at most this many characters from the start of the file.",
	    "default", READ_DEFAULT_CHARS, "minimum", 1,
	    "maximum", READ_MAX_CHARS,
	    "required", "path", "additionalProperties", 0,
	    "annotations", "readOnlyHint", 1);
	if (run == NULL || list == NULL || read == NULL) {
		json_decref(run);
		json_decref(list);
		json_decref(read);
		return NULL;
	}
	return json_pack("{s:[o, o, o]}", "tools", run, list, read);
}

/* ------------------------------------------------------------ arguments */

static int
rpc_fail(struct rpc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
rpc_fail(struct rpc_error *err, const char *fmt, ...)
{
	va_list ap;

	err->code = RPC_INVALID_PARAMS;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -1;
}

/* Refuses argument names the tool does not have. */
static int
args_known(const char *tool, json_t *args, const char *const *names,
    struct rpc_error *err)
{
	const char	*key;
	json_t		*v;
	size_t		 i;

	json_object_foreach(args, key, v) {
		for (i = 0; names[i] != NULL; i++)
			if (strcmp(key, names[i]) == 0)
				break;
		if (names[i] == NULL) {
			char	 takes[128] = "";
			size_t	 off = 0;

			for (i = 0; names[i] != NULL && off < sizeof(takes); i++)
				off += (size_t)snprintf(takes + off,
				    sizeof(takes) - off, "%s%s", i ? ", " : "",
				    names[i]);
			return rpc_fail(err, "%s has no argument '%.100s' (%s%s)",
			    tool, key, names[0] ? "it takes: " : "it takes none",
			    takes);
		}
	}
	return 0;
}

/* A whole number argument: JSON integer, or a real with no fraction. */
static int
arg_long(const char *tool, json_t *args, const char *name, long def,
    long min, long max, long *out, struct rpc_error *err)
{
	json_t	*v = json_object_get(args, name);
	double	 d;

	if (v == NULL || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < min || i > max)
			return rpc_fail(err, "%s: %s must be from %ld to %ld, "
			    "got %lld", tool, name, min, max, (long long)i);
		*out = (long)i;
		return 0;
	}
	if (json_is_real(v)) {
		d = json_real_value(v);
		if (d != floor(d) || d < (double)min || d > (double)max)
			return rpc_fail(err, "%s: %s must be a whole number from "
			    "%ld to %ld, got %g", tool, name, min, max, d);
		*out = (long)d;
		return 0;
	}
	return rpc_fail(err, "%s: %s must be a number, not %s", tool, name,
	    json_is_string(v) ? "a string" : json_is_boolean(v) ? "a boolean" :
	    json_is_array(v) ? "an array" : "an object");
}

/* ------------------------------------------------------------ results */

static json_t *
text_content(const char *text, size_t len)
{
	return json_pack("{s:s, s:s%}", "type", "text", "text", text, len);
}

static json_t *
tool_result(json_t *content, int is_error)
{
	if (content == NULL)
		return NULL;
	return json_pack("{s:o, s:b}", "content", content, "isError", is_error);
}

/* A result with one text item. */
static json_t *
tool_text(const char *text, size_t len, int is_error)
{
	json_t *t = text_content(text, len);

	if (t == NULL)
		return NULL;
	return tool_result(json_pack("[o]", t), is_error);
}

static char *
base64(const unsigned char *in, size_t len)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char		*out, *o;
	size_t		 i;
	unsigned int	 v;

	if ((out = malloc((len + 2) / 3 * 4 + 1)) == NULL)
		return NULL;
	o = out;
	for (i = 0; i + 2 < len; i += 3) {
		v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = tab[(v >> 6) & 63];
		*o++ = tab[v & 63];
	}
	if (i < len) {
		v = (unsigned)in[i] << 16;
		if (i + 1 < len)
			v |= (unsigned)in[i + 1] << 8;
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

/* One stream's section: header, cut marker, text. */
static void
stream_section(struct buf *b, const char *name, const char *text, size_t len,
    unsigned long long cut)
{
	if (len == 0 && cut == 0)
		return;
	buf_appendf(b, "--- %s ---\n", name);
	if (cut > 0)
		buf_appendf(b, "[... %llu characters cut from the start of %s; "
		    "the rest follows ...]\n", cut, name);
	buf_append(b, text, len);
	if (len > 0 && text[len - 1] != '\n')
		buf_append(b, "\n", 1);
}

static const char *
signal_name(int sig)
{
	switch (sig) {
	case SIGKILL:	return "SIGKILL";
	case SIGTERM:	return "SIGTERM";
	case SIGSEGV:	return "SIGSEGV";
	case SIGABRT:	return "SIGABRT";
	case SIGBUS:	return "SIGBUS";
	case SIGINT:	return "SIGINT";
	case SIGFPE:	return "SIGFPE";
	case SIGPIPE:	return "SIGPIPE";
	default:	return "a signal";
	}
}

/*
 * What stdout and stderr may each take as JSON so that the whole result
 * stays under RESULT_MAX_BYTES (run.h): what the images and the fixed
 * text leave, halved.
 */
static size_t
result_stream_room(const struct run_result *res)
{
	size_t	 used = RESULT_TEXT_FIXED, i;

	for (i = 0; i < res->nimages; i++)
		if (res->images[i].png != NULL)
			used += (res->images[i].png_len + 2) / 3 * 4 + 64;
	return used >= RESULT_MAX_BYTES ? 0 : (RESULT_MAX_BYTES - used) / 2;
}

/* Turns a run into the CallToolResult the model reads. */
static json_t *
run_result_json(const struct run_result *res, long timeout_s, long asked_s,
    long max_images, int is_error)
{
	struct buf	 b = BUF_INIT(TEXT_MAX);
	json_t		*content, *item;
	char		*b64;
	size_t		 i, room;
	const char	*out = res->out ? res->out : "";
	const char	*err = res->err ? res->err : "";
	size_t		 out_len = res->out_len, err_len = res->err_len;
	unsigned long long out_cut = res->out_cut, err_cut = res->err_cut;

	/* Errors first: no client shows isError to the model. */
	run_result_error_line(&b, res);
	if (res->spawn_failed)
		buf_appendf(&b, "error: Python could not be started, so the "
		    "code did not run.%s%s\n", res->note[0] ? " " : "",
		    res->note);
	else if (res->timed_out)
		buf_appendf(&b, "error: Timed out after %ld s: the run was "
		    "stopped and its whole process group (any child processes "
		    "too) was killed. Output printed before that is below; "
		    "nothing from this run was saved to the namespace.\n",
		    timeout_s);
	else if (res->signaled)
		buf_appendf(&b, "error: The Python process was killed by "
		    "signal %d (%s); nothing from this run was saved to the "
		    "namespace.\n", res->signal, signal_name(res->signal));
	else if (res->exit_code == 0)
		buf_appendf(&b, "exit code: %d\n", res->exit_code);
	if (asked_s != timeout_s)
		buf_appendf(&b, "note: timeout_seconds=%ld is above this "
		    "server's limit; %ld was used.\n", asked_s, timeout_s);
	if (res->note[0] && !res->spawn_failed)
		buf_appendf(&b, "note: %s\n", res->note);

	room = result_stream_room(res);
	run_text_fit_tail(&out, &out_len, &out_cut, room);
	run_text_fit_tail(&err, &err_len, &err_cut, room);
	stream_section(&b, "stdout", out, out_len, out_cut);
	stream_section(&b, "stderr", err, err_len, err_cut);
	if (!res->spawn_failed && res->out_len == 0 && res->out_cut == 0 &&
	    res->err_len == 0 && res->err_cut == 0)
		buf_appends(&b, "(no output)\n");
	run_result_images_text(&b, res, max_images);
	if (res->footer != NULL) {
		buf_append(&b, res->footer, run_text_fit_head(res->footer,
		    strlen(res->footer), RESULT_FOOTER_MAX));
		if (b.len > 0 && b.data[b.len - 1] != '\n')
			buf_append(&b, "\n", 1);
	}

	content = json_array();
	item = text_content(buf_str(&b), b.len);
	buf_release(&b);
	if (content == NULL || item == NULL ||
	    json_array_append_new(content, item) == -1) {
		json_decref(content);
		return NULL;
	}
	for (i = 0; i < res->nimages; i++) {
		if (res->images[i].png == NULL)
			continue;	/* left out; the text says so */
		b64 = base64(res->images[i].png, res->images[i].png_len);
		if (b64 == NULL)
			break;
		item = json_pack("{s:s, s:s, s:s}", "type", "image", "data", b64,
		    "mimeType", "image/png");
		free(b64);
		if (item == NULL || json_array_append_new(content, item) == -1)
			break;
	}
	return tool_result(content, is_error);
}

/* Characters in valid UTF-8 text. */
static size_t
utf8_chars(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

/* ------------------------------------------------------------ tools */

static json_t *
tool_run_python(const struct agent_ctx *ctx, json_t *args,
    struct rpc_error *err)
{
	static const char *const names[] = { "code", "timeout_seconds",
	    "fresh", NULL };
	const struct agent_config *cfg = ctx->cfg;
	struct run_limits	 lim;
	struct run_request	 rq;
	struct run_result	 res;
	struct wslock		*lock;
	json_t			*code, *fresh, *out;
	long			 asked;
	char			 ebuf[512], status[64];
	int			 rc, is_error, swept;

	if (args_known("run_python", args, names, err) == -1)
		return NULL;
	code = json_object_get(args, "code");
	if (code == NULL)
		return rpc_fail(err, "run_python needs 'code': the Python source "
		    "to run, as a string"), NULL;
	if (!json_is_string(code))
		return rpc_fail(err, "run_python: 'code' must be a string"), NULL;
	if (memchr(json_string_value(code), '\0', json_string_length(code)))
		return rpc_fail(err, "run_python: 'code' contains a NUL "
		    "character"), NULL;
	if (arg_long("run_python", args, "timeout_seconds", 60, 1, 1L << 30,
	    &asked, err) == -1)
		return NULL;
	fresh = json_object_get(args, "fresh");
	if (fresh != NULL && !json_is_null(fresh) && !json_is_boolean(fresh))
		return rpc_fail(err, "run_python: 'fresh' must be true or "
		    "false"), NULL;

	memset(&lim, 0, sizeof(lim));
	lim.python = cfg->python;
	lim.pythonpath = cfg->pythonpath;
	lim.output_limit = (size_t)cfg->output_limit;
	lim.max_images = (int)cfg->max_images;
	lim.max_image_side = (int)cfg->max_image_side;
	lim.max_image_bytes = (size_t)cfg->max_image_bytes;
	lim.max_result_image_bytes = (size_t)cfg->max_result_image_bytes;
	lim.persist_namespace = cfg->persist_namespace;
	lim.namespace_max_bytes = cfg->namespace_max_bytes;
	lim.state_summary = cfg->state_summary;
	lim.warm = cfg->warm;
	lim.warm_imports = cfg->warm_imports;
	memset(&rq, 0, sizeof(rq));
	rq.code = json_string_value(code);
	rq.code_len = json_string_length(code);
	rq.timeout_s = asked > cfg->max_timeout ? cfg->max_timeout : asked;
	rq.fresh = json_is_true(fresh);
	rq.workspace = ctx->workspace;

	if ((lock = wslock_acquire(ctx->workspace)) == NULL) {
		err->code = RPC_INTERNAL_ERROR;
		snprintf(err->message, sizeof(err->message), "out of memory");
		return NULL;
	}
	ebuf[0] = '\0';
	sweep_run_begin();
	rc = run_python(&lim, &rq, &res, ebuf, sizeof(ebuf));
	swept = sweep_run_end();
	wslock_release(lock);
	if (rc == 0 && swept > 0)
		run_result_note(&res, "%d stray background process%s left "
		    "running in the sandbox %s stopped after the run; nothing "
		    "a run starts outlives it.", swept, swept == 1 ? "" : "es",
		    swept == 1 ? "was" : "were");

	if (rc == -1) {
		log_warnx("run_python: %s: could not run: %s", ctx->label, ebuf);
		snprintf(status, sizeof(status), "not run");
		out = NULL;
		{
			struct buf b = BUF_INIT(4096);

			buf_appendf(&b, "The run could not be set up, so the code "
			    "did not run: %s\n", ebuf[0] ? ebuf : "unknown error");
			out = tool_text(buf_str(&b), b.len, 1);
			buf_release(&b);
		}
		run_result_release(&res);
		if (out == NULL)
			goto oom;
		return out;
	}
	is_error = res.spawn_failed || res.timed_out || res.signaled ||
	    res.exit_code != 0;
	if (res.spawn_failed)
		snprintf(status, sizeof(status), "spawn failed");
	else if (res.timed_out)
		snprintf(status, sizeof(status), "timed out after %ld s",
		    rq.timeout_s);
	else if (res.signaled)
		snprintf(status, sizeof(status), "killed by signal %d",
		    res.signal);
	else
		snprintf(status, sizeof(status), "exit %d", res.exit_code);
	log_info("run_python: %s: %.2f s, %s, %zu characters of code, "
	    "%zu image(s)", ctx->label, res.duration, status,
	    utf8_chars(rq.code, rq.code_len), res.nimages);
	out = run_result_json(&res, rq.timeout_s, asked, cfg->max_images,
	    is_error);
	run_result_release(&res);
	if (out == NULL)
		goto oom;
	return out;
oom:
	err->code = RPC_INTERNAL_ERROR;
	snprintf(err->message, sizeof(err->message), "out of memory while "
	    "building the result");
	return NULL;
}

static json_t *
tool_list_files(const struct agent_ctx *ctx, json_t *args,
    struct rpc_error *err)
{
	static const char *const names[] = { NULL };
	struct buf	 b = BUF_INIT(1024 * 1024);
	char		 ebuf[512];
	json_t		*out;

	if (args_known("list_files", args, names, err) == -1)
		return NULL;
	if (workspace_list(ctx->workspace, &b, ebuf, sizeof(ebuf)) == -1)
		out = tool_text(ebuf, strlen(ebuf), 1);
	else
		out = tool_text(buf_str(&b), b.len, 0);
	buf_release(&b);
	return out;
}

static json_t *
tool_read_text_file(const struct agent_ctx *ctx, json_t *args,
    struct rpc_error *err)
{
	static const char *const names[] = { "path", "max_chars", NULL };
	struct buf	 b = BUF_INIT((size_t)READ_MAX_CHARS * 4 + 4096);
	json_t		*path, *out;
	long		 max_chars;
	char		 ebuf[1024];

	if (args_known("read_text_file", args, names, err) == -1)
		return NULL;
	path = json_object_get(args, "path");
	if (path == NULL)
		return rpc_fail(err, "read_text_file needs 'path': a file path "
		    "relative to the workspace"), NULL;
	if (!json_is_string(path))
		return rpc_fail(err, "read_text_file: 'path' must be a "
		    "string"), NULL;
	if (memchr(json_string_value(path), '\0', json_string_length(path)))
		return rpc_fail(err, "read_text_file: 'path' contains a NUL "
		    "character"), NULL;
	if (arg_long("read_text_file", args, "max_chars", READ_DEFAULT_CHARS, 1,
	    READ_MAX_CHARS, &max_chars, err) == -1)
		return NULL;
	if (workspace_read_text(ctx->workspace, json_string_value(path),
	    max_chars, &b, ebuf, sizeof(ebuf)) == -1)
		out = tool_text(ebuf, strlen(ebuf), 1);
	else
		out = tool_text(buf_str(&b), b.len, 0);
	buf_release(&b);
	return out;
}

json_t *
tools_call(const struct agent_ctx *ctx, const char *name, json_t *args,
    struct rpc_error *err)
{
	json_t	*empty = NULL, *out;

	if (args == NULL)
		args = empty = json_object();
	if (args == NULL) {
		err->code = RPC_INTERNAL_ERROR;
		snprintf(err->message, sizeof(err->message), "out of memory");
		return NULL;
	}
	if (strcmp(name, "run_python") == 0)
		out = tool_run_python(ctx, args, err);
	else if (strcmp(name, "list_files") == 0)
		out = tool_list_files(ctx, args, err);
	else if (strcmp(name, "read_text_file") == 0)
		out = tool_read_text_file(ctx, args, err);
	else {
		rpc_fail(err, "Unknown tool '%.100s' (this server has run_python, "
		    "list_files and read_text_file)", name);
		out = NULL;
	}
	json_decref(empty);
	return out;
}
