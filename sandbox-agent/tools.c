/*
 * tools.c: the MCP tools -- their schemas, argument checks, and how a
 * result is put into words for a model.  Running Python is run.c's job;
 * jobs.c runs it in a thread of its own, in the foreground or the
 * background.
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "agent.h"
#include "log.h"
#include "run.h"
#include "base64.h"
#include "banned.h"

#define READ_DEFAULT_CHARS	10000
#define READ_MAX_CHARS		1000000
#define TEXT_MAX		(64u * 1024 * 1024)
/* job_status waits at most this long: below a client's usual 60 s. */
#define JOB_WAIT_MAX_S		50

/* ------------------------------------------------------------ schemas */

/*
 * Each tool is a JSON file, sandbox-agent/tools/NAME.json, as tools/list
 * shows it (but the _meta.ui that ui.c adds), compiled in by module.mk
 * (embed) as redis keeps its command table in src/commands/NAME.json, and
 * read once (tools_load).  A null in a file is what only this program
 * knows: tool_fill says which.
 */
#define EMBEDDED(n)	extern const unsigned char tooldef_##n[]; \
			extern const size_t tooldef_##n##_len
#define TOOL_FILE(n, l)	{ #n, tooldef_##n, &tooldef_##n##_len, l }

EMBEDDED(run_python);
EMBEDDED(list_files);
EMBEDDED(read_text_file);
EMBEDDED(job_status);
EMBEDDED(share_file);
EMBEDDED(upload_link);
EMBEDDED(workspace_link);
EMBEDDED(workspace_view);
EMBEDDED(run_output);

struct tool_file {
	const char		*name;
	const unsigned char	*text;
	const size_t		*len;
	int			 listed;	/* in tools/list; else ui.c's */
};

static const struct tool_file tool_files[] = {
	/* tools/list, in this order */
	TOOL_FILE(run_python, 1), TOOL_FILE(list_files, 1),
	TOOL_FILE(read_text_file, 1), TOOL_FILE(job_status, 1),
	TOOL_FILE(share_file, 1), TOOL_FILE(upload_link, 1),
	TOOL_FILE(workspace_link, 1),
	/* the MCP Apps view's alone, which ui.c lists (tools_def) */
	TOOL_FILE(workspace_view, 0),
};
#define TOOLS_N		(sizeof(tool_files) / sizeof(tool_files[0]))

/* What run_python and job_status return in structuredContent. */
static const struct tool_file run_output_file = TOOL_FILE(run_output, 0);

static json_t		*tool_defs[TOOLS_N];	/* owned, as the files say */
static json_t		*run_output;		/* owned */
static pthread_once_t	 tools_once = PTHREAD_ONCE_INIT;
static char		 tools_error[512];	/* why tools_load failed */

/*
 * What the files leave null: run_python's time limit is the
 * configuration's, and a tool that returns a run's result has
 * run_output.json as its outputSchema.  -1 when a null is missing.
 */
static int
tool_fill(json_t *tool, long max_timeout)
{
	json_t	*to;

	if (json_is_null(json_object_get(tool, "outputSchema")) &&
	    json_object_set_new(tool, "outputSchema",
	    json_deep_copy(run_output)) == -1)
		return -1;
	if (strcmp(json_string_value(json_object_get(tool, "name")),
	    "run_python") != 0)
		return 0;
	to = json_object_get(json_object_get(json_object_get(tool,
	    "inputSchema"), "properties"), "timeout_seconds");
	if (!json_is_null(json_object_get(to, "maximum")))
		return -1;
	return json_object_set_new(to, "maximum", json_integer(max_timeout));
}

/* One file's JSON, new; NULL with file:line:column: why in ebuf. */
static json_t *
tool_parse(const struct tool_file *f, char *ebuf, size_t len)
{
	json_error_t	 e;
	json_t		*t;

	t = json_loadb((const char *)f->text, *f->len, JSON_REJECT_DUPLICATES,
	    &e);
	if (t == NULL)
		snprintf(ebuf, len, "sandbox-agent/tools/%s.json:%d:%d: %s",
		    f->name, e.line, e.column, e.text);
	else if (!json_is_object(t)) {
		snprintf(ebuf, len, "sandbox-agent/tools/%s.json: not a JSON "
		    "object", f->name);
		json_decref(t);
		t = NULL;
	}
	return t;
}

/* A tool's file: its own name, and the nulls tool_fill fills. */
static int
tool_check(const struct tool_file *f, json_t *t, char *ebuf, size_t len)
{
	json_t	*c;
	int	 rc;

	if (!json_is_string(json_object_get(t, "name")) ||
	    strcmp(json_string_value(json_object_get(t, "name")),
	    f->name) != 0) {
		snprintf(ebuf, len, "sandbox-agent/tools/%s.json: its \"name\" "
		    "is not \"%s\"", f->name, f->name);
		return -1;
	}
	c = json_deep_copy(t);
	rc = c == NULL ? -1 : tool_fill(c, 1);
	json_decref(c);
	if (rc == -1)
		snprintf(ebuf, len, "sandbox-agent/tools/%s.json: a null that "
		    "tools.c fills (tool_fill) is missing", f->name);
	return rc;
}

static void
tools_load_once(void)
{
	size_t	 i;

	if ((run_output = tool_parse(&run_output_file, tools_error,
	    sizeof(tools_error))) == NULL)
		return;
	for (i = 0; i < TOOLS_N; i++)
		if ((tool_defs[i] = tool_parse(&tool_files[i], tools_error,
		    sizeof(tools_error))) == NULL ||
		    tool_check(&tool_files[i], tool_defs[i], tools_error,
		    sizeof(tools_error)) == -1)
			return;
}

/* 0 once the files are read, -1 when one is wrong (tools_error). */
static int
tools_loaded(void)
{
	pthread_once(&tools_once, tools_load_once);
	return tools_error[0] == '\0' ? 0 : -1;
}

int
tools_load(char *ebuf, size_t len)
{
	if (tools_loaded() == 0)
		return 0;
	snprintf(ebuf, len, "%s", tools_error);
	return -1;
}

json_t *
tools_def(const char *name)
{
	size_t	 i;

	if (tools_loaded() == -1)
		return NULL;
	for (i = 0; i < TOOLS_N; i++)
		if (strcmp(tool_files[i].name, name) == 0)
			return json_deep_copy(tool_defs[i]);
	return NULL;
}

json_t *
tools_list(const struct agent_config *cfg)
{
	json_t	*tools;
	size_t	 i;

	if (tools_loaded() == -1 || (tools = json_array()) == NULL)
		return NULL;
	for (i = 0; i < TOOLS_N; i++)
		if (tool_files[i].listed && (json_array_append_new(tools,
		    json_deep_copy(tool_defs[i])) == -1 ||
		    tool_fill(json_array_get(tools, json_array_size(tools) - 1),
		    cfg->max_timeout) == -1)) {
			json_decref(tools);
			return NULL;
		}
	return json_pack("{s:o}", "tools", tools);
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
	struct buf	 b = BUF_INIT(TEXT_MAX * 4);
	json_t		*t;

	if ((t = json_pack("{s:s, s:s%}", "type", "text", "text", text,
	    len)) != NULL)
		return t;
	/* Not UTF-8 somewhere: a result is never lost over its bytes. */
	if (text_escape(&b, text, len, 0) == 1)
		t = json_pack("{s:s, s:s%}", "type", "text", "text",
		    buf_str(&b), b.len);
	buf_release(&b);
	return t;
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

/* Standard base64 of len bytes, as MCP's image data wants; new string. */
static char *
base64(const unsigned char *in, size_t len)
{
	struct buf	 b = BUF_INIT(base64_encoded_len(BASE64_STD, len) + 1);

	if (base64_encode(BASE64_STD, in, len, &b) == -1) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

/*
 * One stream as the result shows it: a head (may be empty) and a tail, the
 * characters cut between them, both within room bytes of JSON.
 */
struct stream_view {
	const char	*head, *tail;
	size_t		 head_len, tail_len;
	unsigned long long cut;
};

static void
stream_view(struct stream_view *v, const char *text, size_t len,
    size_t head, unsigned long long cut, size_t room)
{
	size_t	 h, hroom;

	v->head = text;
	v->head_len = cut > 0 ? head : 0;
	v->tail = text + v->head_len;
	v->tail_len = len - v->head_len;
	v->cut = cut;
	if (run_text_json_len(text, len) <= room)
		return;
	/* Over the result's budget: both parts shrink, in their shares. */
	hroom = v->head_len > 0 ? room / RUN_HEAD_SHARE : 0;
	h = run_text_fit_head(v->head, v->head_len, hroom);
	v->cut += utf8_chars(v->head + h, v->head_len - h);
	v->head_len = h;
	run_text_fit_tail(&v->tail, &v->tail_len, &v->cut,
	    room - run_text_json_len(v->head, h));
}

static void
ensure_newline(struct buf *b)
{
	if (b->len > 0 && b->data[b->len - 1] != '\n')
		buf_append(b, "\n", 1);
}

/* One stream's section: header, text, and where the cut is. */
static void
stream_section(struct buf *b, const char *name, const struct stream_view *v)
{
	if (v->head_len == 0 && v->tail_len == 0 && v->cut == 0)
		return;
	buf_appendf(b, "--- %s ---\n", name);
	if (v->cut > 0 && v->head_len == 0)
		buf_appendf(b, "[... %llu characters cut from the start of %s; "
		    "the rest follows ...]\n", v->cut, name);
	if (v->cut > 0 && v->head_len > 0) {
		buf_append(b, v->head, v->head_len);
		ensure_newline(b);
		buf_appendf(b, "[... %llu characters cut here, from the middle "
		    "of %s; its start is above, its end below ...]\n", v->cut,
		    name);
	}
	buf_append(b, v->tail, v->tail_len);
	if (v->tail_len > 0)
		ensure_newline(b);
}

/* "SIGSEGV": the one name the text gives a signal. */
static void
signal_name(int sig, char *out, size_t len)
{
	const char	*s = sigabbrev_np(sig);

	if (s != NULL)
		snprintf(out, len, "SIG%s", s);
	else
		snprintf(out, len, "an unnamed signal");
}

/* The structuredContent of a finished run (new), mirroring the text. */
static json_t *
run_structured(const struct run_result *res, const char *job_id)
{
	json_t	*sc, *images, *files, *im;
	size_t	 i;

	images = json_array();
	files = json_array();
	for (i = 0; images != NULL && i < res->nimages; i++) {
		struct buf nm = BUF_INIT(PATH_MAX * 4);

		/* As the text shows it: a JSON string must be UTF-8. */
		(void)text_escape(&nm, res->images[i].name,
		    strlen(res->images[i].name), ESCAPE_CONTROL);
		im = json_pack("{s:s%, s:i, s:i}", "name", buf_str(&nm), nm.len,
		    "width", res->images[i].orig_width,
		    "height", res->images[i].orig_height);
		buf_release(&nm);
		if (im == NULL || json_array_append_new(images, im) == -1) {
			json_decref(images);
			images = NULL;
		}
	}
	/* The runner's list (report.json); names that are not UTF-8 drop out. */
	for (i = 0; files != NULL && i < res->nfiles; i++)
		json_array_append_new(files, json_string(res->files[i]));
	sc = json_pack("{s:o?, s:b, s:b, s:o, s:o, s:f}",
	    "exit_code", res->spawn_failed || res->timed_out || res->stopped ||
	    res->signaled ? json_null() : json_integer(res->exit_code),
	    "timed_out", res->timed_out, "cancelled", res->stopped,
	    "images", images, "files_written", files,
	    "elapsed_seconds", res->duration);
	if (sc != NULL && job_id != NULL && (json_object_set_new(sc, "job_id",
	    json_string(job_id)) == -1 || json_object_set_new(sc, "state",
	    json_string("done")) == -1)) {
		json_decref(sc);
		sc = NULL;
	}
	return sc;
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
    long max_images, int is_error, const char *job_id)
{
	json_t		*result, *sc;

	struct buf	 b = BUF_INIT(TEXT_MAX);
	json_t		*content, *item;
	char		*b64, sname[32];
	size_t		 i, room;
	struct stream_view out, err;

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
	else if (res->stopped)
		buf_appendf(&b, "error: Stopped after %.1f s: the run's whole "
		    "process group was killed. Output printed before that is "
		    "below; nothing from this run was saved to the namespace.\n",
		    res->duration);
	else if (res->signaled) {
		signal_name(res->signal, sname, sizeof(sname));
		buf_appendf(&b, "error: The Python process was killed by "
		    "signal %d (%s); nothing from this run was saved to the "
		    "namespace.\n", res->signal, sname);
	}
	else if (res->exit_code == 0)
		buf_appendf(&b, "exit code: %d\n", res->exit_code);
	if (asked_s != timeout_s)
		buf_appendf(&b, "note: timeout_seconds=%ld is above this "
		    "server's limit; %ld was used.\n", asked_s, timeout_s);
	if (res->note[0] && !res->spawn_failed)
		buf_appendf(&b, "note: %s\n", res->note);

	room = result_stream_room(res);
	stream_view(&out, res->out ? res->out : "", res->out_len, res->out_head,
	    res->out_cut, room);
	stream_view(&err, res->err ? res->err : "", res->err_len, res->err_head,
	    res->err_cut, room);
	stream_section(&b, "stdout", &out);
	stream_section(&b, "stderr", &err);
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
	if ((result = tool_result(content, is_error)) == NULL)
		return NULL;
	if ((sc = run_structured(res, job_id)) == NULL ||
	    json_object_set_new(result, "structuredContent", sc) == -1) {
		json_decref(result);
		return NULL;
	}
	return result;
}

/* ------------------------------------------------------------ tools */

/*
 * Waits for the job for up to seconds (< 0: its end), telling a client
 * that asked for progress how it goes once a second.  JOB_WAIT_DONE,
 * JOB_WAIT_TIMEOUT or JOB_WAIT_HANGUP (the client went away).
 */
static int
call_wait(const struct agent_ctx *ctx, struct job *job, double seconds)
{
	const struct call_io *io = ctx->io;
	double		 end = clock_mono() + seconds, step, left;
	char		 line[256];
	int		 r;

	for (;;) {
		step = io != NULL && io->progress != NULL ? 1.0 : -1;
		if (seconds >= 0) {
			if ((left = end - clock_mono()) <= 0)
				return JOB_WAIT_TIMEOUT;
			if (step < 0 || left < step)
				step = left;
		}
		if ((r = job_wait(job, step, io)) != JOB_WAIT_TIMEOUT)
			return r;
		if (io != NULL && io->progress != NULL && !job_done(job)) {
			job_last_line(job, line, sizeof(line));
			io->progress(io->arg, job_elapsed(job), line);
		}
	}
}

/* The finished job's CallToolResult, logged as the run was. */
static json_t *
job_outcome_json(const struct agent_ctx *ctx, struct job *job,
    const char *job_id)
{
	const struct run_result	*res;
	const struct run_request *rq;
	const char		*ebuf;
	char			 status[64];
	struct buf		 b = BUF_INIT(4096);
	json_t			*out;
	long			 asked;
	int			 rc, is_error;

	res = job_result(job, &rc, &ebuf);
	rq = job_request(job, &asked);
	if (rc == -1) {
		log_warnx("run_python: %s: could not run: %s", ctx->label, ebuf);
		buf_appendf(&b, "The run could not be set up, so the code "
		    "did not run: %s\n", ebuf[0] ? ebuf : "unknown error");
		out = tool_text(buf_str(&b), b.len, 1);
		buf_release(&b);
		return out;
	}
	is_error = res->spawn_failed || res->timed_out || res->stopped ||
	    res->signaled || res->exit_code != 0;
	if (res->spawn_failed)
		snprintf(status, sizeof(status), "spawn failed");
	else if (res->timed_out)
		snprintf(status, sizeof(status), "timed out after %ld s",
		    rq->timeout_s);
	else if (res->stopped)
		snprintf(status, sizeof(status), "stopped after %.1f s",
		    res->duration);
	else if (res->signaled)
		snprintf(status, sizeof(status), "killed by signal %d",
		    res->signal);
	else
		snprintf(status, sizeof(status), "exit %d", res->exit_code);
	log_info("run_python: %s%s%s: %.2f s, %s, %zu characters of code, "
	    "%zu image(s)", ctx->label, job_id ? ", job " : "",
	    job_id ? job_id : "", res->duration, status,
	    utf8_chars(rq->code, rq->code_len), res->nimages);
	return run_result_json(res, rq->timeout_s, asked, ctx->cfg->max_images,
	    is_error, job_id);
}

/* "It printed last: ...", or that it printed nothing yet. */
static void
job_last_words(struct buf *b, struct job *job)
{
	char	 line[256];

	job_last_line(job, line, sizeof(line));
	if (line[0] != '\0')
		buf_appendf(b, "It printed last: %s\n", line);
	else
		buf_appends(b, "It has printed nothing yet.\n");
}

/*
 * A foreground call while a background job holds (or waits for) the
 * workspace: nothing ran; the model learns which job, and how to wait for
 * it or stop it, at once rather than through a client timeout.
 */
static json_t *
busy_json(struct job *busy)
{
	struct buf	 b = BUF_INIT(4096);
	json_t		*out;

	buf_appendf(&b, "error: background job %s has been running for %.0f s "
	    "in this workspace, and runs here go one at a time, so this code "
	    "did not run.\n", job_id(busy), job_elapsed(busy));
	job_last_words(&b, busy);
	buf_appendf(&b, "Wait for it with job_status(job_id=\"%s\", "
	    "wait_seconds=%d) and then run this code again, or stop it with "
	    "job_status(job_id=\"%s\", stop=true).\n", job_id(busy),
	    JOB_WAIT_MAX_S, job_id(busy));
	out = tool_text(buf_str(&b), b.len, 1);
	buf_release(&b);
	return out;
}

/* What a background start returns: the id, in the text and the fields. */
static json_t *
job_started_json(struct job *job, struct job *busy, long timeout_s,
    long asked_s)
{
	struct buf	 b = BUF_INIT(4096);
	json_t		*out, *sc;

	if (asked_s != timeout_s)
		buf_appendf(&b, "note: timeout_seconds=%ld is above this "
		    "server's limit; %ld was used.\n", asked_s, timeout_s);
	buf_appendf(&b, "Started background job %s (it is stopped after %ld "
	    "s). Call job_status(job_id=\"%s\", wait_seconds=30) to see its "
	    "output so far and to collect its result once it is done; an "
	    "uncollected result is kept for an hour.\n", job_id(job),
	    timeout_s, job_id(job));
	if (busy != NULL)
		buf_appendf(&b, "It starts when background job %s, running for "
		    "%.0f s, has finished: runs in a workspace go one at a "
		    "time.\n", job_id(busy), job_elapsed(busy));
	out = tool_text(buf_str(&b), b.len, 0);
	buf_release(&b);
	sc = json_pack("{s:s, s:s, s:n, s:b, s:b, s:[], s:[], s:f}",
	    "job_id", job_id(job), "state", "running", "exit_code",
	    "timed_out", 0, "cancelled", 0, "images", "files_written",
	    "elapsed_seconds", 0.0);
	if (out == NULL || sc == NULL ||
	    json_object_set_new(out, "structuredContent", sc) == -1) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* What a tool answers when its result could not be built. */
static json_t *
result_oom(struct rpc_error *err)
{
	err->code = RPC_INTERNAL_ERROR;
	snprintf(err->message, sizeof(err->message), "out of memory while "
	    "building the result");
	return NULL;
}

/* What every run of this agent gets from its configuration. */
static void
run_limits_of(const struct agent_config *cfg, struct run_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->python = cfg->python;
	lim->pythonpath = cfg->pythonpath;
	lim->output_limit = (size_t)cfg->output_limit;
	lim->max_images = (int)cfg->max_images;
	lim->max_image_side = (int)cfg->max_image_side;
	lim->max_image_bytes = (size_t)cfg->max_image_bytes;
	lim->max_result_image_bytes = (size_t)cfg->max_result_image_bytes;
	lim->persist_namespace = cfg->persist_namespace;
	lim->namespace_max_bytes = cfg->namespace_max_bytes;
	lim->state_summary = cfg->state_summary;
	lim->warm = cfg->warm;
	lim->warm_imports = cfg->warm_imports;
	/* One shared workspace: where the first run will be. */
	lim->warm_workspace = cfg->user_header == NULL ? cfg->workdir : NULL;
}

void
tools_warm_start(const struct agent_config *cfg)
{
	struct run_limits lim;

	run_limits_of(cfg, &lim);
	if (lim.warm)
		run_warm_wait(&lim, 0);
}

static json_t *
tool_run_python(const struct agent_ctx *ctx, json_t *args,
    struct rpc_error *err)
{
	static const char *const names[] = { "code", "timeout_seconds",
	    "fresh", "background", NULL };
	const struct agent_config *cfg = ctx->cfg;
	struct run_limits	 lim;
	struct job		*job, *busy;
	json_t			*code, *fresh, *bg, *out;
	long			 asked, timeout_s;
	char			 ebuf[1024];
	int			 tracked, r;

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
	fresh = json_object_get(args, "fresh");
	if (fresh != NULL && !json_is_null(fresh) && !json_is_boolean(fresh))
		return rpc_fail(err, "run_python: 'fresh' must be true or "
		    "false"), NULL;
	bg = json_object_get(args, "background");
	if (bg != NULL && !json_is_null(bg) && !json_is_boolean(bg))
		return rpc_fail(err, "run_python: 'background' must be true or "
		    "false"), NULL;
	/* A background run is for long work: it gets the limit unless the
	 * model asked for less. */
	if (arg_long("run_python", args, "timeout_seconds", json_is_true(bg) ?
	    cfg->max_timeout : 60, 1, 1L << 30, &asked, err) == -1)
		return NULL;
	/* Runs of a workspace go one at a time; a call must not wait
	 * silently behind a job of minutes (and then time out in the
	 * client): it says so at once. */
	if (!json_is_true(bg) && (busy = job_busy(ctx->workspace)) != NULL) {
		out = busy_json(busy);
		job_unref(busy);
		if (out == NULL)
			goto oom;
		return out;
	}

	run_limits_of(cfg, &lim);
	timeout_s = asked > cfg->max_timeout ? cfg->max_timeout : asked;
	job = job_new(&lim, json_string_value(code), json_string_length(code),
	    timeout_s, asked, json_is_true(fresh), ctx->workspace, ctx->label);
	if (job == NULL)
		goto oom;

	if (json_is_true(bg)) {
		busy = job_busy(ctx->workspace);
		/* Users sharing this agent share its table: none fills it. */
		if (job_register(job, cfg->user_header != NULL ? JOBS_PER_USER :
		    JOBS_MAX, ebuf, sizeof(ebuf)) == -1) {
			log_info("run_python: %s: background job refused: %s",
			    ctx->label, ebuf);
			job_unref(busy);
			job_unref(job);
			return tool_text(ebuf, strlen(ebuf), 1);
		}
		if (job_start(job, ebuf, sizeof(ebuf)) == -1) {
			job_forget(job);
			job_unref(job);
			job_unref(busy);
			return tool_text(ebuf, strlen(ebuf), 1);
		}
		log_info("run_python: %s: background job %s started, %zu "
		    "characters of code", ctx->label, job_id(job),
		    utf8_chars(json_string_value(code),
		    json_string_length(code)));
		out = job_started_json(job, busy, timeout_s, asked);
		job_unref(job);
		job_unref(busy);
		if (out == NULL)
			goto oom;
		return out;
	}

	/* A notifications/cancelled naming this request stops the job. */
	tracked = ctx->request_id != NULL &&
	    cancel_track(ctx->workspace, ctx->request_id, job) == 0;
	if (job_start(job, ebuf, sizeof(ebuf)) == -1) {
		if (tracked)
			cancel_untrack(job);
		job_unref(job);
		return tool_text(ebuf, strlen(ebuf), 1);
	}
	if ((r = call_wait(ctx, job, -1)) == JOB_WAIT_HANGUP) {
		job_stop(job, "the client closed its connection");
		job_wait(job, -1, NULL);
	}
	if (tracked)
		cancel_untrack(job);
	if (r == JOB_WAIT_HANGUP || job_stop_asked(job)) {
		/* Cancelled: the spec asks for no answer at all. */
		log_info("run_python: %s: stopped after %.2f s (%s)", ctx->label,
		    job_elapsed(job), r == JOB_WAIT_HANGUP ?
		    "the client went away" : "cancelled by the client");
		job_unref(job);
		err->code = RPC_NO_REPLY;
		return NULL;
	}
	out = job_outcome_json(ctx, job, NULL);
	job_unref(job);
	if (out == NULL)
		goto oom;
	return out;
oom:
	return result_oom(err);
}

static json_t *
tool_job_status(const struct agent_ctx *ctx, json_t *args,
    struct rpc_error *err)
{
	static const char *const names[] = { "job_id", "wait_seconds", "stop",
	    NULL };
	struct buf	 b = BUF_INIT(16384);
	struct job	*job;
	json_t		*id, *stop, *out = NULL, *sc;
	char		 tail[8192];
	unsigned long long total;
	long		 wait_s;
	int		 r;

	if (args_known("job_status", args, names, err) == -1)
		return NULL;
	id = json_object_get(args, "job_id");
	if (id == NULL)
		return rpc_fail(err, "job_status needs 'job_id': the id "
		    "run_python(background=true) returned"), NULL;
	if (!json_is_string(id))
		return rpc_fail(err, "job_status: 'job_id' must be a string"),
		    NULL;
	if (arg_long("job_status", args, "wait_seconds", 0, 0, JOB_WAIT_MAX_S,
	    &wait_s, err) == -1)
		return NULL;
	stop = json_object_get(args, "stop");
	if (stop != NULL && !json_is_null(stop) && !json_is_boolean(stop))
		return rpc_fail(err, "job_status: 'stop' must be true or false"),
		    NULL;

	if ((job = job_find(ctx->workspace, json_string_value(id))) == NULL) {
		buf_appendf(&b, "There is no background job '%.64s' here: the id "
		    "is wrong, or its result was already collected, or it "
		    "finished more than an hour ago and was dropped. Start the "
		    "run again if you still need it.",
		    json_string_value(id));
		out = tool_text(buf_str(&b), b.len, 1);
		buf_release(&b);
		return out;
	}
	if (json_is_true(stop) && job_stop(job, "stopped with job_status("
	    "stop=true)"))
		log_info("job %s: %s: stop asked", job_id(job), ctx->label);
	/* A stopped job ends within a moment, unless it still waits for
	 * an earlier run's lock: then it ends when that run does. */
	r = job_done(job) ? JOB_WAIT_DONE : call_wait(ctx, job,
	    json_is_true(stop) && wait_s < 10 ? 10 : (double)wait_s);
	if (r == JOB_WAIT_HANGUP) {
		/* The job goes on: only this answer is not wanted. */
		job_unref(job);
		err->code = RPC_NO_REPLY;
		return NULL;
	}
	if (job_done(job)) {
		out = job_outcome_json(ctx, job, job_id(job));
		if (out != NULL)
			job_forget(job);	/* collected */
		job_unref(job);
		buf_release(&b);
		if (out == NULL)
			goto oom;
		return out;
	}
	job_output_so_far(job, tail, sizeof(tail), &total);
	buf_appendf(&b, "Job %s is still running (%.0f s so far).\n",
	    job_id(job), job_elapsed(job));
	if (total == 0)
		buf_appends(&b, "It has printed nothing yet.\n");
	else
		buf_appendf(&b, "--- output so far (%s) ---\n%s%s",
		    total > strlen(tail) ? "its tail" : "all of it", tail,
		    tail[0] && tail[strlen(tail) - 1] != '\n' ? "\n" : "");
	buf_appendf(&b, "Call job_status(job_id=\"%s\", wait_seconds=%d) "
	    "again to wait for its result.\n", job_id(job), JOB_WAIT_MAX_S);
	out = tool_text(buf_str(&b), b.len, 0);
	sc = json_pack("{s:s, s:s, s:n, s:b, s:b, s:[], s:[], s:f}",
	    "job_id", job_id(job), "state", "running", "exit_code",
	    "timed_out", 0, "cancelled", 0, "images", "files_written",
	    "elapsed_seconds", job_elapsed(job));
	job_unref(job);
	buf_release(&b);
	if (out == NULL || sc == NULL ||
	    json_object_set_new(out, "structuredContent", sc) == -1) {
		json_decref(out);
		goto oom;
	}
	return out;
oom:
	return result_oom(err);
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

static const char *const share_args[] = { "path", "lifetime_hours", NULL };
static const char *const page_args[] = { "lifetime_hours", NULL };
static const char *const view_args[] = { NULL };

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
	else if (strcmp(name, "job_status") == 0)
		out = tool_job_status(ctx, args, err);
	else if (strcmp(name, "share_file") == 0)
		out = args_known("share_file", args, share_args, err) == -1 ?
		    NULL : files_tool_share(ctx, args);
	else if (strcmp(name, "upload_link") == 0)
		out = args_known("upload_link", args, page_args, err) == -1 ?
		    NULL : files_tool_upload(ctx, args, err);
	else if (strcmp(name, "workspace_link") == 0)
		out = args_known("workspace_link", args, page_args, err) == -1 ?
		    NULL : files_tool_workspace(ctx, args);
	else if (strcmp(name, "workspace_view") == 0)	/* the view's (ui.c) */
		out = args_known("workspace_view", args, view_args, err) == -1 ?
		    NULL : files_tool_view(ctx, args);
	else {
		rpc_fail(err, "Unknown tool '%.100s' (this server has run_python, "
		    "job_status, list_files, read_text_file, share_file, "
		    "upload_link and workspace_link)", name);
		json_decref(empty);
		return NULL;	/* a protocol error, as MCP says */
	}
	json_decref(empty);
	if (out == NULL && err->code == RPC_INVALID_PARAMS) {
		/*
		 * Arguments the tool refused are a tool result with isError,
		 * so the model reads why and can call again (SEP-1303).
		 */
		out = tool_text(err->message, strlen(err->message), 1);
		if (out == NULL) {
			err->code = RPC_INTERNAL_ERROR;
			snprintf(err->message, sizeof(err->message),
			    "out of memory");
		}
	}
	return out;
}
