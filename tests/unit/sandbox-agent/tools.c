/*
 * Unit tests for sandbox-agent/tools.c: argument checks and how a run's
 * result is worded.  run_python is a stub that returns a scripted result,
 * so every outcome (exit, cut output, timeout, signal, spawn failure,
 * images) is checked without running Python.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../sandbox-agent/tools.c"

static struct run_result	 scripted;
static struct run_request	 seen;
static int			 setup_fails;
static const char		*image_name = "chart.png";

static char *
dup_str(const char *s)
{
	char *p = strdup(s);

	assert_non_null(p);
	return p;
}

/* No zygote here (tools_warm_start). */
int
run_warm_wait(const struct run_limits *lim, double seconds)
{
	return -1;
}

int
run_python(const struct run_limits *lim, const struct run_request *rq,
    struct run_result *res, char *errbuf, size_t errlen)
{
	static char ws[256];

	/* The request's strings belong to its job, gone after the call. */
	seen = *rq;
	snprintf(ws, sizeof(ws), "%s", rq->workspace ? rq->workspace : "");
	seen.workspace = ws;
	seen.code = NULL;
	*res = scripted;
	if (setup_fails) {
		memset(res, 0, sizeof(*res));
		snprintf(errbuf, errlen, "no space left for the run directory");
		return -1;
	}
	if (scripted.nfigures > 0) {
		size_t i;

		res->figures = calloc(scripted.nfigures, sizeof(*res->figures));
		assert_non_null(res->figures);
		for (i = 0; i < scripted.nfigures; i++) {
			res->figures[i].name = dup_str(scripted.figures[i].name);
			res->figures[i].by = dup_str(scripted.figures[i].by);
		}
	}
	res->out = dup_str(scripted.out ? scripted.out : "");
	res->err = dup_str(scripted.err ? scripted.err : "");
	res->footer = scripted.footer ? dup_str(scripted.footer) : NULL;
	if (scripted.nimages > 0 && scripted.images == NULL) {
		res->images = calloc(1, sizeof(*res->images));
		res->images[0].name = dup_str(image_name);
		res->images[0].png = malloc(4);
		memcpy(res->images[0].png, "\x89PNG", 4);
		res->images[0].png_len = 4;
		res->images[0].width = 1280;
		res->images[0].height = 640;
		res->images[0].orig_width = 2560;
		res->images[0].orig_height = 1280;
	} else if (scripted.nimages > 0) {
		size_t i;

		res->images = calloc(scripted.nimages, sizeof(*res->images));
		for (i = 0; i < scripted.nimages; i++) {
			const struct run_image *s = &scripted.images[i];

			res->images[i] = *s;
			res->images[i].name = dup_str(s->name);
			if (s->png != NULL) {
				res->images[i].png = calloc(1, s->png_len);
				assert_non_null(res->images[i].png);
			}
		}
	}
	return 0;
}

static struct agent_config	cfg;
static struct agent_ctx		ctx = { .cfg = &cfg, .workspace = "/tmp",
    .label = "test" };

static int
reset(void **state)
{
	memset(&scripted, 0, sizeof(scripted));
	memset(&seen, 0, sizeof(seen));
	memset(&cfg, 0, sizeof(cfg));
	setup_fails = 0;
	image_name = "chart.png";
	cfg.max_timeout = 300;
	cfg.output_limit = 20000;
	cfg.max_images = 4;
	cfg.python = "python3";
	return 0;
}

/* Calls a tool with arguments given as JSON text. */
static json_t *
call(const char *tool, const char *args_json, struct rpc_error *err)
{
	json_t *args = args_json ? json_loads(args_json, 0, NULL) : NULL;
	json_t *r;

	memset(err, 0, sizeof(*err));
	r = tools_call(&ctx, tool, args, err);
	json_decref(args);
	return r;
}

static const char *
text_of(json_t *r)
{
	return json_string_value(json_object_get(json_array_get(
	    json_object_get(r, "content"), 0), "text"));
}

static void
test_list_has_schemas(void **state)
{
	json_t	*l = tools_list(&cfg), *t, *to;
	size_t	 i;

	assert_non_null(l);
	assert_int_equal(json_array_size(json_object_get(l, "tools")), 7);
	json_array_foreach(json_object_get(l, "tools"), i, t) {
		json_t *s = json_object_get(t, "inputSchema");
		const char *name = json_string_value(json_object_get(t, "name"));
		json_t *ann = json_object_get(t, "annotations");
		int runs = strcmp(name, "run_python") == 0 ||
		    strcmp(name, "job_status") == 0;

		/* MCP 2025-11-25 metadata: a title, hints, and an output
		 * schema where structuredContent comes back. */
		assert_true(json_string_length(json_object_get(t, "title")) > 3);
		assert_true(json_is_boolean(json_object_get(ann,
		    "readOnlyHint")));
		assert_int_equal(json_is_true(json_object_get(ann,
		    "readOnlyHint")), strcmp(name, "list_files") == 0 ||
		    strcmp(name, "read_text_file") == 0 ||
		    strcmp(name, "share_file") == 0);
		assert_int_equal(json_is_true(json_object_get(ann,
		    "openWorldHint")), strcmp(name, "run_python") == 0);
		assert_int_equal(json_object_get(t, "outputSchema") != NULL, runs);
		if (runs)
			assert_non_null(json_object_get(json_object_get(
			    json_object_get(t, "outputSchema"), "properties"),
			    "cancelled"));

		assert_string_equal(json_string_value(json_object_get(s, "type")),
		    "object");
		/* The limit is in the schema, not learnt by overshooting. */
		if (strcmp(name, "run_python") == 0) {
			to = json_object_get(json_object_get(s, "properties"),
			    "timeout_seconds");
			assert_int_equal(json_integer_value(json_object_get(to,
			    "maximum")), cfg.max_timeout);
			assert_int_equal(json_integer_value(json_object_get(to,
			    "default")), 60);
		}
		assert_true(json_string_length(json_object_get(t,
		    "description")) > 40);
	}
	json_decref(l);
}

/* A property of a tool's inputSchema, as its file says. */
static json_t *
schema_prop(json_t *tool, const char *name)
{
	return json_object_get(json_object_get(json_object_get(tool,
	    "inputSchema"), "properties"), name);
}

static long
prop_int(json_t *tool, const char *name, const char *key)
{
	json_t *v = json_object_get(schema_prop(tool, name), key);

	assert_true(json_is_integer(v));
	return (long)json_integer_value(v);
}

/*
 * The files in sandbox-agent/tools/ against the C that acts on them: the
 * numbers the checks use, the arguments they take, and what is said alike.
 */
static void
test_schema_files_match_code(void **state)
{
	struct rpc_error err;
	json_t		*t, *links[3], *r, *prop;
	const char	*key;
	char		 ebuf[512], want[512];
	size_t		 i, off;
	int		 first;

	if (tools_load(ebuf, sizeof(ebuf)) == -1)
		fail_msg("%s", ebuf);

	t = tools_def("read_text_file");
	assert_int_equal(prop_int(t, "max_chars", "default"),
	    READ_DEFAULT_CHARS);
	assert_int_equal(prop_int(t, "max_chars", "maximum"), READ_MAX_CHARS);
	json_decref(t);

	t = tools_def("job_status");
	assert_int_equal(prop_int(t, "wait_seconds", "maximum"),
	    JOB_WAIT_MAX_S);
	snprintf(want, sizeof(want), "(at most %d)", JOB_WAIT_MAX_S);
	assert_non_null(strstr(json_string_value(json_object_get(
	    schema_prop(t, "wait_seconds"), "description")), want));
	json_decref(t);

	/* run_python's default is arg_long's; its maximum the config's. */
	t = tools_def("run_python");
	assert_int_equal(prop_int(t, "timeout_seconds", "default"), 60);
	assert_true(json_is_null(json_object_get(schema_prop(t,
	    "timeout_seconds"), "maximum")));
	json_decref(t);

	/* One lifetime_hours, said alike by the three link tools. */
	links[0] = tools_def("share_file");
	links[1] = tools_def("upload_link");
	links[2] = tools_def("workspace_link");
	for (i = 0; i < 3; i++) {
		assert_non_null(schema_prop(links[i], "lifetime_hours"));
		assert_true(json_equal(schema_prop(links[i], "lifetime_hours"),
		    schema_prop(links[0], "lifetime_hours")));
	}
	for (i = 0; i < 3; i++)
		json_decref(links[i]);

	t = tools_def("workspace_view");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_object_get(t, "_meta"), "ui"), "resourceUri")),
	    UI_WORKSPACE_URI);
	json_decref(t);
	assert_null(tools_def("nope"));

	/* Each tool takes the arguments its schema names, in that order. */
	for (i = 0; i < TOOLS_N; i++) {
		t = tools_def(tool_files[i].name);
		assert_non_null(t);
		off = (size_t)snprintf(want, sizeof(want), "%s has no argument "
		    "'zz' (it takes", tool_files[i].name);
		first = 1;
		json_object_foreach(json_object_get(json_object_get(t,
		    "inputSchema"), "properties"), key, prop) {
			off += (size_t)snprintf(want + off, sizeof(want) - off,
			    "%s%s", first ? ": " : ", ", key);
			first = 0;
		}
		snprintf(want + off, sizeof(want) - off, "%s)",
		    first ? " none" : "");
		r = call(tool_files[i].name, "{\"zz\": 1}", &err);
		assert_non_null(r);
		assert_true(json_is_true(json_object_get(r, "isError")));
		assert_string_equal(text_of(r), want);
		json_decref(r);
		json_decref(t);
	}
}

/* A broken file is refused with where and why, not served half. */
static void
test_schema_file_broken(void **state)
{
	static const struct { const char *text, *says; } cases[] = {
		{ "{\"name\": \"x\",}", "sandbox-agent/tools/x.json:1:" },
		{ "{\"name\": \"x\", \"name\": \"x\"}", "duplicate object key" },
		{ "[\"x\"]", "not a JSON object" },
		{ "{\"name\": \"y\"}", "its \"name\" is not \"x\"" },
		{ "{\"title\": \"x\"}", "its \"name\" is not \"x\"" },
	};
	struct tool_file f = { "x", NULL, NULL, 1 };
	size_t		 i, len;
	json_t		*t;
	char		 ebuf[512];

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f.text = (const unsigned char *)cases[i].text;
		len = strlen(cases[i].text);
		f.len = &len;
		ebuf[0] = '\0';
		if ((t = tool_parse(&f, ebuf, sizeof(ebuf))) != NULL) {
			assert_int_equal(tool_check(&f, t, ebuf, sizeof(ebuf)),
			    -1);
			json_decref(t);
		}
		assert_non_null(strstr(ebuf, cases[i].says));
	}

	/* run_python without the null its maximum is filled into. */
	t = tools_def("run_python");
	assert_int_equal(json_object_set_new(schema_prop(t, "timeout_seconds"),
	    "maximum", json_integer(300)), 0);
	assert_int_equal(tool_check(&tool_files[0], t, ebuf, sizeof(ebuf)), -1);
	assert_non_null(strstr(ebuf, "run_python.json: a null"));
	json_decref(t);
}

static void
test_bad_arguments(void **state)
{
	static const struct { const char *tool, *args, *says; } cases[] = {
		{ "nope", "{}", "Unknown tool 'nope'" },
		{ "run_python", "{}", "needs 'code'" },
		{ "run_python", "{\"code\": 5}", "must be a string" },
		{ "run_python", "{\"code\": \"1\", \"timeout_seconds\": \"9\"}",
		  "must be a number, not a string" },
		{ "run_python", "{\"code\": \"1\", \"timeout_seconds\": 0}",
		  "from 1" },
		{ "run_python", "{\"code\": \"1\", \"timeout_seconds\": 2.5}",
		  "whole number" },
		{ "run_python", "{\"code\": \"1\", \"fresh\": \"yes\"}",
		  "true or false" },
		{ "run_python", "{\"code\": \"1\", \"cwd\": \"/\"}",
		  "no argument 'cwd' (it takes: code, timeout_seconds, fresh, "
		  "background)" },
		{ "run_python", "{\"code\": \"1\", \"background\": 1}",
		  "'background' must be true or false" },
		{ "job_status", "{}", "needs 'job_id'" },
		{ "job_status", "{\"job_id\": 5}", "must be a string" },
		{ "job_status", "{\"job_id\": \"a\", \"wait_seconds\": 51}",
		  "from 0 to 50" },
		{ "job_status", "{\"job_id\": \"a\", \"stop\": \"y\"}",
		  "true or false" },
		{ "list_files", "{\"path\": \"x\"}", "it takes none" },
		{ "read_text_file", "{}", "needs 'path'" },
		{ "read_text_file", "{\"path\": [\"a\"]}", "must be a string" },
		{ "read_text_file", "{\"path\": \"a\", \"max_chars\": -1}",
		  "from 1" },
		{ "read_text_file", "{\"path\": \"a\", \"max_chars\": true}",
		  "not a boolean" },
	};
	struct rpc_error	 err;
	size_t			 i;

	json_t			*r;

	/* An unknown tool stays a protocol error. */
	assert_null(call(cases[0].tool, cases[0].args, &err));
	assert_int_equal(err.code, RPC_INVALID_PARAMS);
	assert_non_null(strstr(err.message, cases[0].says));
	/* Refused arguments are a tool result with isError (SEP-1303). */
	for (i = 1; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = call(cases[i].tool, cases[i].args, &err);
		assert_non_null(r);
		assert_true(json_is_true(json_object_get(r, "isError")));
		if (strstr(text_of(r), cases[i].says) == NULL)
			fail_msg("%s %s: '%s' lacks '%s'", cases[i].tool,
			    cases[i].args, text_of(r), cases[i].says);
		json_decref(r);
	}
	assert_null(seen.code);		/* the stub never ran */
}

static void
test_timeout_clamped(void **state)
{
	struct rpc_error	 err;
	json_t			*r;

	r = call("run_python", "{\"code\": \"pass\", \"timeout_seconds\": 1000}",
	    &err);
	assert_non_null(r);
	assert_int_equal(seen.timeout_s, 300);
	assert_non_null(strstr(text_of(r), "timeout_seconds=1000"));
	json_decref(r);
	r = call("run_python", "{\"code\": \"pass\", \"timeout_seconds\": 7.0, "
	    "\"fresh\": true}", &err);
	assert_int_equal(seen.timeout_s, 7);
	assert_true(seen.fresh);
	json_decref(r);
	r = call("run_python", "{\"code\": \"pass\"}", &err);
	assert_int_equal(seen.timeout_s, 60);
	assert_false(seen.fresh);
	assert_string_equal(seen.workspace, "/tmp");
	json_decref(r);
}

static void
test_result_ok_and_cut(void **state)
{
	struct rpc_error	 err;
	json_t			*r;
	const char		*t;

	static char out[] = "tail of output\n";
	static char footer[] = "--- state ---\nnamespace: restored 2 name(s)";

	scripted.out = out;
	scripted.out_len = strlen(scripted.out);
	scripted.out_cut = 123456;
	scripted.footer = footer;
	r = call("run_python", "{\"code\": \"print(1)\"}", &err);
	t = text_of(r);
	assert_non_null(strstr(t, "exit code: 0\n"));
	assert_non_null(strstr(t, "123456 characters cut from the start of "
	    "stdout"));
	assert_non_null(strstr(t, "tail of output\n"));
	assert_null(strstr(t, "--- stderr ---"));
	assert_non_null(strstr(t, "--- state ---\nnamespace: restored 2 name(s)\n"));
	assert_true(json_is_false(json_object_get(r, "isError")));
	json_decref(r);
}

static void
test_result_error_exit(void **state)
{
	struct rpc_error	 err;
	json_t			*r;

	scripted.exit_code = 1;
	static char e[] = "Traceback ...\nZeroDivisionError: division by zero\n";

	scripted.err = e;
	scripted.err_len = strlen(scripted.err);
	r = call("run_python", "{\"code\": \"1/0\"}", &err);
	/* No exception named (an older runner, os._exit): the code alone. */
	assert_true(strncmp(text_of(r), "error: exit code 1\n--- stderr ---\n"
	    "Traceback", 38) == 0);
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);

	/* The runner named it: first line, before the traceback, and before
	 * the note about the timeout too. */
	snprintf(scripted.error, sizeof(scripted.error),
	    "KeyError: 'missing'");
	r = call("run_python", "{\"code\": \"{}['missing']\", "
	    "\"timeout_seconds\": 9999}", &err);
	assert_true(strncmp(text_of(r), "error: KeyError: 'missing' (exit code "
	    "1)\nnote: timeout_seconds=9999", 55) == 0);
	assert_non_null(strstr(text_of(r), "\n--- stderr ---\nTraceback"));
	assert_null(strstr(text_of(r), "exit code: 1"));
	json_decref(r);

	/* Success has no error line, whatever the report said. */
	scripted.exit_code = 0;
	r = call("run_python", "{\"code\": \"1\"}", &err);
	assert_true(strncmp(text_of(r), "exit code: 0\n", 13) == 0);
	assert_null(strstr(text_of(r), "error:"));
	assert_true(json_is_false(json_object_get(r, "isError")));
	json_decref(r);
}

static void
test_result_timeout_signal_spawn(void **state)
{
	struct rpc_error	 err;
	json_t			*r;

	scripted.timed_out = 1;
	r = call("run_python", "{\"code\": \"while 1: pass\", "
	    "\"timeout_seconds\": 2}", &err);
	assert_non_null(strstr(text_of(r), "Timed out after 2 s"));
	assert_non_null(strstr(text_of(r), "process group"));
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);

	reset(state);
	scripted.signaled = 1;
	scripted.signal = SIGKILL;
	r = call("run_python", "{\"code\": \"x\"}", &err);
	assert_non_null(strstr(text_of(r), "killed by signal 9 (SIGKILL)"));
	json_decref(r);
	/* Every signal by its name, not only a listed few. */
	scripted.signal = SIGUSR1;
	r = call("run_python", "{\"code\": \"x\"}", &err);
	assert_non_null(strstr(text_of(r), "killed by signal 10 (SIGUSR1);"));
	scripted.signal = SIGKILL;
	snprintf(scripted.note, sizeof(scripted.note), "probably the memory "
	    "limit");
	json_decref(r);
	r = call("run_python", "{\"code\": \"x\"}", &err);
	assert_non_null(strstr(text_of(r), "\nnote: probably the memory limit\n"));
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);

	reset(state);
	scripted.spawn_failed = 1;
	snprintf(scripted.note, sizeof(scripted.note), "python3: not found");
	r = call("run_python", "{\"code\": \"x\"}", &err);
	assert_non_null(strstr(text_of(r), "could not be started"));
	assert_non_null(strstr(text_of(r), "python3: not found"));
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);

	reset(state);
	scripted.stopped = 1;
	scripted.duration = 2.5;
	r = call("run_python", "{\"code\": \"x\", \"background\": true}",
	    &err);
	assert_non_null(r);
	assert_false(json_is_true(json_object_get(r, "isError")));
	{
		/* A background job: its id comes back; job_status collects it
		 * once, then the id is gone. */
		json_t	*sc = json_object_get(r, "structuredContent");
		char	 args[128];

		assert_string_equal(json_string_value(json_object_get(sc,
		    "state")), "running");
		assert_int_equal(json_string_length(json_object_get(sc,
		    "job_id")), JOB_ID_LEN);
		assert_non_null(strstr(text_of(r), json_string_value(
		    json_object_get(sc, "job_id"))));
		snprintf(args, sizeof(args), "{\"job_id\": \"%s\", "
		    "\"wait_seconds\": 5}", json_string_value(json_object_get(sc,
		    "job_id")));
		json_decref(r);
		r = call("job_status", args, &err);
		assert_non_null(r);
		sc = json_object_get(r, "structuredContent");
		assert_string_equal(json_string_value(json_object_get(sc,
		    "state")), "done");
		assert_true(json_is_true(json_object_get(sc, "cancelled")));
		assert_true(json_is_null(json_object_get(sc, "exit_code")));
		assert_non_null(strstr(text_of(r), "Stopped after 2.5 s"));
		assert_true(json_is_true(json_object_get(r, "isError")));
		json_decref(r);
		r = call("job_status", args, &err);
		assert_non_null(strstr(text_of(r), "no background job"));
		assert_true(json_is_true(json_object_get(r, "isError")));
	}
	json_decref(r);

	reset(state);
	setup_fails = 1;
	r = call("run_python", "{\"code\": \"x\"}", &err);
	assert_non_null(r);
	assert_non_null(strstr(text_of(r), "no space left"));
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);
}

static void
test_result_images(void **state)
{
	struct rpc_error	 err;
	json_t			*r, *img;

	scripted.nimages = 1;
	scripted.images_skipped = 2;
	r = call("run_python", "{\"code\": \"plot()\"}", &err);
	assert_int_equal(json_array_size(json_object_get(r, "content")), 2);
	img = json_array_get(json_object_get(r, "content"), 1);
	assert_string_equal(json_string_value(json_object_get(img, "type")),
	    "image");
	assert_string_equal(json_string_value(json_object_get(img, "mimeType")),
	    "image/png");
	assert_string_equal(json_string_value(json_object_get(img, "data")),
	    "iVBORw==");
	assert_non_null(strstr(text_of(r), "image: chart.png (2560x1280, "
	    "shown at 1280x640, 4 B)"));
	assert_non_null(strstr(text_of(r), "2 more new or changed PNG"));
	assert_null(strstr(text_of(r), "iVBOR"));
	json_decref(r);
}

/* A PNG whose name is not UTF-8 keeps the run's result: the name is shown
 * escaped and marked. */
static void
test_result_image_name_not_utf8(void **state)
{
	static char		 made[] = "made it\n";
	struct rpc_error	 err;
	json_t			*r;

	scripted.nimages = 1;
	scripted.out = made;
	scripted.out_len = 8;
	image_name = "plots/r\xe9sum\xe9.png";
	r = call("run_python", "{\"code\": \"plot()\"}", &err);
	assert_non_null(r);
	assert_int_equal(json_array_size(json_object_get(r, "content")), 2);
	assert_non_null(strstr(text_of(r), "made it"));
	assert_non_null(strstr(text_of(r), "image: plots/r\\xe9sum\\xe9.png "
	    "(2560x1280, shown at 1280x640, 4 B) [name not UTF-8: bytes "
	    "shown as \\xNN]"));
	json_decref(r);
}

/* list_files over a workspace with such a name answers, never fails. */
static void
test_list_files_name_not_utf8(void **state)
{
	struct agent_ctx	 c2 = ctx;
	struct rpc_error	 err;
	char			 dir[] = "/tmp/viv-tools-XXXXXX", cmd[256];
	json_t			*r;

	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "printf x >%s/caf$(printf '\\351').csv", dir);
	assert_int_equal(system(cmd), 0);
	c2.workspace = dir;
	memset(&err, 0, sizeof(err));
	r = tools_call(&c2, "list_files", NULL, &err);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	assert_non_null(r);
	assert_non_null(strstr(text_of(r), "caf\\xe9.csv  1 B  [name not UTF-8"));
	json_decref(r);
}

static char lit0[] = "fx.png";
static char lit1[] = "big.png";
static char lit2[] = "noise.png";
static char lit3[] = "late.png";
static char lit4[] = "bad\xff\x01name.png";
static char lit5[] = "--- state ---\nnamespace: empty";
static char figby0[] = "plt.show()";
static char figby1[] = "left open";
static char figby2[] = "last line";

/* Shown, shrunk, left out, over max_images: each named, in order. */
static void
test_result_image_lines(void **state)
{
	struct run_figure	 figs[2] = { { lit0, figby0 }, { lit3, figby1 } };
	struct run_image	 ims[4];
	struct rpc_error	 err;
	json_t			*r, *c;
	const char		*t;

	memset(ims, 0, sizeof(ims));
	ims[0] = (struct run_image){ .name = lit0, .png = (void *)1,
	    .png_len = 15300, .width = 960, .height = 540, .orig_width = 960,
	    .orig_height = 540, .colors = 64, .budget = 25600 };
	ims[1] = (struct run_image){ .name = lit1, .png = (void *)1,
	    .png_len = 24100, .width = 600, .height = 300,
	    .orig_width = 3000, .orig_height = 1500, .shrunk = 1,
	    .budget = 25600 };
	ims[2] = (struct run_image){ .name = lit2,
	    .png_len = 7000, .width = 48, .height = 48, .orig_width = 1280,
	    .orig_height = 1280, .omitted = 1, .budget = 1024 };
	ims[3] = (struct run_image){ .name = lit3,
	    .omitted = 1, .budget = 500 };
	scripted.images = ims;
	scripted.nimages = 4;
	scripted.images_skipped = 3;
	snprintf(scripted.skipped_names, sizeof(scripted.skipped_names),
	    "a.png (1.0 KB), b.png (2.0 KB)");
	scripted.pictures = 2;
	snprintf(scripted.picture_names, sizeof(scripted.picture_names),
	    "c.jpg (3.0 KB), d.svg (4.0 KB)");
	scripted.figures = figs;
	scripted.nfigures = 2;
	r = call("run_python", "{\"code\": \"plot()\"}", &err);
	scripted.figures = NULL;
	scripted.nfigures = 0;
	t = text_of(r);
	assert_non_null(strstr(t, "image 1 of 2: fx.png (960x540, 14.9 KB; "
	    "saved by vivarium for plt.show())\n"));
	assert_non_null(strstr(t, "image 2 of 2: big.png (3000x1500, shrunk to "
	    "600x300 to fit 25.0 KB, 23.5 KB)\n"));
	assert_non_null(strstr(t, "image left out: noise.png (1280x1280): still "
	    "6.8 KB at 48x48, over the 1.0 KB it could have; the file is in the "
	    "workspace at full size.\n"));
	assert_non_null(strstr(t, "image left out: late.png: only 500 B of "
	    "the result's image budget was left;"));
	assert_non_null(strstr(t, "The 2 images are attached after this text in "
	    "that order.\n"));
	assert_non_null(strstr(t, "3 more new or changed PNG file(s) not shown "
	    "(at most 4 images per call): a.png (1.0 KB), b.png (2.0 KB), …; "
	    "they are in the workspace: show one in a later call, or "
	    "share_file(path) gives the user a link.\n"));
	assert_non_null(strstr(t, "not shown, only PNG files come back as "
	    "images: c.jpg (3.0 KB), d.svg (4.0 KB); save charts as .png to "
	    "see them, and share_file(path) gives the user a link.\n"));
	/* big.png is not a figure of the report's: its line says nothing. */
	assert_null(strstr(t, "23.5 KB; "));
	/* A figure the code left on its last line says so. */
	scripted.figures = figs;
	scripted.nfigures = 2;
	figs[0].by = figby2;
	json_decref(r);
	r = call("run_python", "{\"code\": \"plot()\"}", &err);
	scripted.figures = NULL;
	scripted.nfigures = 0;
	assert_non_null(strstr(text_of(r), "image 1 of 2: fx.png (960x540, "
	    "14.9 KB; the figure on the last line, saved by vivarium)\n"));
	/* Two image items only, in the order of the lines. */
	c = json_object_get(r, "content");
	assert_int_equal(json_array_size(c), 3);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(c, 1), "type")), "image");
	assert_int_equal(strlen(json_string_value(json_object_get(
	    json_array_get(c, 1), "data"))), (15300 + 2) / 3 * 4);
	assert_int_equal(strlen(json_string_value(json_object_get(
	    json_array_get(c, 2), "data"))), (24100 + 2) / 3 * 4);
	json_decref(r);

	/* A file name that is not UTF-8 still gives a result. */
	reset(state);
	memset(ims, 0, sizeof(ims));
	ims[0] = (struct run_image){ .name = lit4,
	    .png = (void *)1, .png_len = 10, .width = 2, .height = 2,
	    .orig_width = 2, .orig_height = 2 };
	scripted.images = ims;
	scripted.nimages = 1;
	r = call("run_python", "{\"code\": \"x\"}", &err);
	assert_non_null(r);
	assert_non_null(strstr(text_of(r), "image: bad\\xff\\x01name.png (2x2, "
	    "10 B) [name not UTF-8: bytes shown as \\xNN]"));
	json_decref(r);
}

/* Whatever the code prints, the whole result stays under the cap. */
static void
test_result_size_capped(void **state)
{
	struct rpc_error	 err;
	json_t			*r;
	char			*big, *s;
	size_t			 n = 6u << 20;
	unsigned long long	 cut;

	/* 6 MiB of control characters in each stream: 36 MiB as JSON. */
	big = malloc(n + 1);
	assert_non_null(big);
	memset(big, 1, n);
	memcpy(big + n - 4, "END\n", 4);
	big[n] = '\0';
	scripted.out = big;
	scripted.out_len = n;
	scripted.err = big;
	scripted.err_len = n;
	scripted.footer = lit5;
	r = call("run_python", "{\"code\": \"x\"}", &err);
	assert_non_null(r);
	s = json_dumps(r, JSON_COMPACT);
	assert_non_null(s);
	assert_true(strlen(s) < RESULT_MAX_BYTES);
	assert_true(strlen(s) > RESULT_MAX_BYTES / 2);	/* not cut for nothing */
	/* The tails survive with the footer; the cut is counted. */
	assert_non_null(strstr(s, "END\\n--- stderr ---"));
	assert_non_null(strstr(s, "characters cut from the start of stdout"));
	assert_non_null(strstr(s, "--- state ---\\nnamespace: empty"));
	free(s);
	json_decref(r);
	free(big);

	/* The helpers on their own: tails at a character boundary. */
	{
		const char *t = "a\xc3\xa9\"b", *p = t;
		size_t len = strlen(t);

		cut = 0;
		assert_int_equal(run_text_json_len(t, len), 6);
		run_text_fit_tail(&p, &len, &cut, 3);
		assert_string_equal(p, "\"b");
		assert_int_equal(cut, 2);
		assert_int_equal(run_text_fit_head(t, strlen(t), 2), 1);
		assert_int_equal(run_text_fit_head(t, strlen(t), 3), 3);
	}
}

static void
test_base64(void **state)
{
	static const struct { const char *in, *out; } v[] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
	};
	size_t	 i;
	char	*s;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		s = base64((const unsigned char *)v[i].in, strlen(v[i].in));
		assert_string_equal(s, v[i].out);
		free(s);
	}
}

/* Starts a background job in workspace ws; its id into id, or NULL text. */
static const char *
start_bg(const char *ws, const char *label, char id[JOB_ID_LEN + 1])
{
	static char		 text[2048];
	struct rpc_error	 err;
	json_t			*r;
	const char		*v;

	ctx.workspace = ws;
	ctx.label = label;
	r = call("run_python", "{\"code\": \"x\", \"background\": true}", &err);
	assert_non_null(r);
	snprintf(text, sizeof(text), "%s", text_of(r));
	v = json_string_value(json_object_get(json_object_get(r,
	    "structuredContent"), "job_id"));
	id[0] = '\0';
	if (v != NULL)
		snprintf(id, JOB_ID_LEN + 1, "%s", v);
	if (json_is_true(json_object_get(r, "isError")))
		assert_null(v);
	json_decref(r);
	return text;
}

static void
collect(const char *ws, const char *id)
{
	struct rpc_error	 err;
	char			 args[128];
	json_t			*r;

	ctx.workspace = ws;
	snprintf(args, sizeof(args), "{\"job_id\": \"%s\", \"wait_seconds\": 5}",
	    id);
	r = call("job_status", args, &err);
	assert_non_null(r);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r,
	    "structuredContent"), "state")), "done");
	json_decref(r);
}

static void
test_jobs_per_user_cap(void **state)
{
	char		 a[JOBS_PER_USER + 1][JOB_ID_LEN + 1], b[JOB_ID_LEN + 1],
			 one[JOBS_PER_USER + 1][JOB_ID_LEN + 1];
	const char	*t;
	int		 i;

	/* Users sharing the agent: alice fills her share, not the table. */
	cfg.user_header = "X-User-ID";
	for (i = 0; i < JOBS_PER_USER; i++) {
		t = start_bg("/tmp/users/alice", "user alice", a[i]);
		assert_int_equal(strlen(a[i]), JOB_ID_LEN);
	}
	/* Refused, however often; asked until one of hers has finished
	 * (a loaded machine may take a while to run "1" eight times). */
	for (i = 0; i < 200; i++) {
		t = start_bg("/tmp/users/alice", "user alice",
		    a[JOBS_PER_USER]);
		assert_string_equal(a[JOBS_PER_USER], "");
		if (strstr(t, "(done, not collected)") != NULL)
			break;
		usleep(50 * 1000);
	}
	assert_non_null(strstr(t, "user alice already has 8 background jobs"));
	assert_non_null(strstr(t, "the most one user may keep"));
	assert_non_null(strstr(t, "32 in all"));
	for (i = 0; i < JOBS_PER_USER; i++)
		assert_non_null(strstr(t, a[i]));	/* each of hers, named */
	assert_non_null(strstr(t, "(done, not collected)"));
	assert_non_null(strstr(t, "job_status(job_id, stop=true)"));
	/* Bob still gets his. */
	start_bg("/tmp/users/bob", "user bob", b);
	assert_int_equal(strlen(b), JOB_ID_LEN);
	/* One collected: alice may start one again. */
	collect("/tmp/users/alice", a[0]);
	start_bg("/tmp/users/alice", "user alice", a[0]);
	assert_int_equal(strlen(a[0]), JOB_ID_LEN);
	for (i = 0; i < JOBS_PER_USER; i++)
		collect("/tmp/users/alice", a[i]);
	collect("/tmp/users/bob", b);

	/* One workspace of its own: the whole table is its. */
	cfg.user_header = NULL;
	for (i = 0; i <= JOBS_PER_USER; i++) {
		start_bg("/tmp", "workspace", one[i]);
		assert_int_equal(strlen(one[i]), JOB_ID_LEN);
	}
	for (i = 0; i <= JOBS_PER_USER; i++)
		collect("/tmp", one[i]);
	ctx.workspace = "/tmp";
	ctx.label = "test";
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_list_has_schemas, reset),
		cmocka_unit_test_setup(test_schema_files_match_code, reset),
		cmocka_unit_test_setup(test_schema_file_broken, reset),
		cmocka_unit_test_setup(test_bad_arguments, reset),
		cmocka_unit_test_setup(test_timeout_clamped, reset),
		cmocka_unit_test_setup(test_result_ok_and_cut, reset),
		cmocka_unit_test_setup(test_result_error_exit, reset),
		cmocka_unit_test_setup(test_result_timeout_signal_spawn, reset),
		cmocka_unit_test_setup(test_result_images, reset),
		cmocka_unit_test_setup(test_result_image_name_not_utf8, reset),
		cmocka_unit_test_setup(test_list_files_name_not_utf8, reset),
		cmocka_unit_test_setup(test_result_image_lines, reset),
		cmocka_unit_test_setup(test_result_size_capped, reset),
		cmocka_unit_test_setup(test_base64, reset),
		cmocka_unit_test_setup(test_jobs_per_user_cap, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
