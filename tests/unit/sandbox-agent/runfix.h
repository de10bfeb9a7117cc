/*
 * runfix.h: the fixture shared by the tests that run Python through
 * run_python (run.c, warm.c): Debian's interpreter, the runner from
 * python/, a temporary workspace per test and the agent's default limits.
 * Included after sandbox-agent/run.c; header-only, each test is one
 * translation unit.
 */
#ifndef TESTS_RUNFIX_H
#define TESTS_RUNFIX_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PYTHON		"/usr/bin/python3"

static char	 pythonpath[PATH_MAX];
static char	 ws[64];

/* Group setup: the tree's python/ and the interpreter.  0 or -1. */
static inline int
runfix_setup(const char *name)
{
	if (realpath("python", pythonpath) == NULL) {
		fprintf(stderr, "run from the top of the tree\n");
		return -1;
	}
	if (access(PYTHON, X_OK) == -1) {
		fprintf(stderr, "%s is needed (scripts/deps test)\n", PYTHON);
		return -1;
	}
	log_init(name, 0);
	return 0;
}

static inline int
ws_new(void **state)
{
	(void)state;
	snprintf(ws, sizeof(ws), "/tmp/vivarium-run-test-XXXXXX");
	return mkdtemp(ws) == NULL ? -1 : 0;
}

static inline int
ws_rm(void)
{
	char	 cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ws);
	return system(cmd) == 0 ? 0 : -1;
}

/* The agent's defaults, cold; a test turns on what it needs. */
static inline void
runfix_limits(struct run_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->python = PYTHON;
	lim->pythonpath = pythonpath;
	lim->output_limit = 20000;
	lim->max_images = 4;
	lim->max_image_side = 1280;
	lim->max_image_bytes = 25600;
	lim->max_result_image_bytes = 102400;
	lim->persist_namespace = 1;
	lim->namespace_max_bytes = 256ULL << 20;
	lim->state_summary = 1;
}

/* Runs code in ws; run_python's return, its error in err. */
static inline int
runfix_run(const struct run_limits *lim, const char *code, long timeout,
    struct run_result *res, char *err, size_t errlen)
{
	struct run_request rq;

	memset(&rq, 0, sizeof(rq));
	rq.code = code;
	rq.code_len = strlen(code);
	rq.timeout_s = timeout;
	rq.workspace = ws;
	rq.stop_fd = -1;
	return run_python(lim, &rq, res, err, errlen);
}

#endif
