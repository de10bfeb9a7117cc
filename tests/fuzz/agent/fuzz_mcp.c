/*
 * libFuzzer driver for the agent's request handling: JSON-RPC framing
 * (mcp.c), tool argument checks and result wording (tools.c), and the
 * workspace walks of list_files and read_text_file (workspace.c) over a
 * small fixture workspace with a symlink pointing out.  run_python is a
 * stub: running Python is not what is fuzzed here.  Built by
 * `make test-fuzz-agent` with clang -fsanitize=fuzzer.
 *
 * Besides the sanitizers it checks the handler's promises: 202 exactly when
 * there is no reply, 200 or 400 otherwise, a reply that is a JSON-RPC
 * response (or a batch of them), and nothing from outside the workspace in
 * any reply (unless the request itself said it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../sandbox-agent/mcp.c"
#include "../../../sandbox-agent/tools.c"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);
int LLVMFuzzerInitialize(int *, char ***);

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
	run_result_init(res);
	res->out = strdup("ok\n");
	res->out_len = res->out ? 3 : 0;
	res->exit_code = rq->code_len % 3 == 0 ? 0 : 1;
	res->timed_out = rq->timeout_s == 7;
	return 0;
}

/* pycheck.c asks a Python; the fuzzer has a fixed answer. */
const char *
pycheck_modules(void)
{
	return "Installed: pandas.\nNot installed: polars (use pandas).";
}

static char		 dir[] = "/tmp/viv-fuzz-agent-XXXXXX";
static char		 ws[256];
static struct agent_config cfg;
static struct agent_ctx	 ctx;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char cmd[1024];

	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/ws/d/e %s/out && "
	    "echo OUTSIDE-SECRET > %s/out/s && echo hi > %s/ws/d/t.txt && "
	    "ln -s ../out %s/ws/l && ln -s ../out/s %s/ws/f",
	    dir, dir, dir, dir, dir, dir);
	if (system(cmd) != 0)
		abort();
	cfg.workdir = ws;
	/* The link tools sign with one user's key, as in a sandbox. */
	if (link_keys_set_user(&cfg.link_keys, "fuzz", "00112233445566778899"
	    "aabbccddeeff00112233445566778899aabbccddeeff", cmd,
	    sizeof(cmd)) == -1)
		abort();
	cfg.links = 1;
	cfg.link_user = "fuzz";
	cfg.public_url = "http://fuzz.example";
	cfg.download_lifetime = 86400;
	cfg.upload_lifetime = 3600;
	cfg.link_max_lifetime = 7 * 86400;
	cfg.upload_max = 1 << 20;
	cfg.max_timeout = 300;
	cfg.output_limit = 100;
	cfg.max_images = 4;
	cfg.python = "python3";
	ctx.cfg = &cfg;
	ctx.workspace = ws;
	ctx.label = "fuzz";
	files_init(&cfg);
	log_init("fuzz", 0);
	return 0;
}

static void
check_response(json_t *r)
{
	json_t *e;

	if (!json_is_object(r) ||
	    strcmp(json_string_value(json_object_get(r, "jsonrpc")), "2.0") != 0)
		abort();
	e = json_object_get(r, "error");
	if (e != NULL) {
		if (!json_is_integer(json_object_get(e, "code")) ||
		    !json_is_string(json_object_get(e, "message")))
			abort();
	} else if (json_object_get(r, "result") == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*pver = NULL;
	json_t		*reply, *r;
	unsigned int	 status;
	char		*s;
	size_t		 i;

	/* The first byte picks the MCP-Protocol-Version header. */
	if (size > 0) {
		static const char *const v[] = { NULL, "2025-03-26",
		    "2025-06-18", "2025-11-25", "bogus" };

		pver = v[data[0] % 5];
		data++;
		size--;
	}
	status = mcp_handle(&ctx, pver, (const char *)data, size, &reply);
	if ((status == 202) != (reply == NULL))
		abort();
	if (reply == NULL)
		return 0;
	if (status != 200 && status != 400)
		abort();
	if (json_is_array(reply)) {
		json_array_foreach(reply, i, r)
			check_response(r);
	} else
		check_response(reply);
	s = json_dumps(reply, JSON_COMPACT);
	if (s == NULL)
		abort();
	/* The secret may come back only if the input carried it itself. */
	if (strstr(s, "OUTSIDE-SECRET") != NULL &&
	    memmem(data, size, "OUTSIDE-SECRET", 14) == NULL)
		abort();
	free(s);
	json_decref(reply);
	return 0;
}
