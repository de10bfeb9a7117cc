/*
 * run_python end to end: Debian's /usr/bin/python3 with the real runner
 * from python/, a temporary workspace per test.  Prints, exceptions, exit
 * statuses, timeouts, signals, a missing interpreter, report.json in every
 * bad shape, the contract's environment, output clipping, PNGs, and memory
 * that stays flat while the code prints gigabytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../sandbox-agent/run.c"
#include "proc.h"

#include "runfix.h"

static char	 fixtures[PATH_MAX];

static int
setup(void **state)
{
	if (runfix_setup("run-test") == -1)
		return -1;
	if (realpath("tests/data/png", fixtures) == NULL) {
		fprintf(stderr, "run from the top of the tree\n");
		return -1;
	}
	return 0;
}

/* The zygote and the agent's timer go with the tests, as valgrind wants. */
static int
teardown(void **state)
{
	warm_stop();
	return 0;
}

static int
ws_del(void **state)
{
	return ws_rm();
}

static void
limits(struct run_limits *lim)
{
	runfix_limits(lim);
	/* As the agent: warm unless VIVARIUM_WARM=0 (tests run both ways). */
	lim->warm = getenv("VIVARIUM_WARM") == NULL ||
	    strcmp(getenv("VIVARIUM_WARM"), "0") != 0;
	/* Runs don't wait for a new zygote; these tests want every run warm. */
	if (lim->warm && run_warm_wait(lim, 60) == -1)
		fprintf(stderr, "the zygote did not get ready\n");
}

static int
run(const struct run_limits *lim, const char *code, long timeout,
    struct run_result *res)
{
	char		 err[512];
	int		 rc;

	if ((rc = runfix_run(lim, code, timeout, res, err, sizeof(err))) == -1)
		print_error("run_python: %s\n", err);
	return rc;
}

/* ---------------------------------------------------------------- basics */

static void
test_print(void **state)
{
	struct run_limits lim;
	struct run_result res;

	limits(&lim);
	assert_int_equal(run(&lim, "print('hello')\nprint('wörld')", 30,
	    &res), 0);
	assert_false(res.spawn_failed);
	assert_false(res.timed_out);
	assert_false(res.signaled);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "hello\nwörld\n");
	assert_int_equal(res.out_len, strlen("hello\nwörld\n"));
	assert_int_equal(res.out_cut, 0);
	assert_string_equal(res.err, "");
	assert_int_equal(res.report, RUN_REPORT_OK);
	assert_non_null(res.footer);
	assert_non_null(strstr(res.footer, "--- state ---"));
	assert_string_equal(res.note, "");
	assert_true(res.duration > 0 && res.duration < 30);
	run_result_release(&res);

	/* No footer asked for: the report says null. */
	lim.state_summary = 0;
	assert_int_equal(run(&lim, "x = 1", 30, &res), 0);
	assert_int_equal(res.report, RUN_REPORT_OK);
	assert_null(res.footer);
	run_result_release(&res);
}

static void
test_exception_and_exit_codes(void **state)
{
	struct run_limits lim;
	struct run_result res;

	limits(&lim);
	assert_int_equal(run(&lim, "print('before')\n1/0", 30, &res), 0);
	assert_int_equal(res.exit_code, 1);
	assert_string_equal(res.out, "before\n");
	assert_non_null(strstr(res.err, "ZeroDivisionError"));
	assert_non_null(strstr(res.err, "<run_python>"));
	assert_int_equal(res.report, RUN_REPORT_OK);
	assert_non_null(res.footer);
	assert_string_equal(res.error, "ZeroDivisionError: division by zero");
	run_result_release(&res);

	/* The error is one line, and cut short. */
	assert_int_equal(run(&lim, "raise ValueError('a\\nb' + 'x' * 500)", 30,
	    &res), 0);
	assert_true(strncmp(res.error, "ValueError: a bxxx", 18) == 0);
	assert_true(strlen(res.error) < 210);
	run_result_release(&res);
	assert_int_equal(run(&lim, "import sys; sys.exit('no data')", 30,
	    &res), 0);
	assert_int_equal(res.exit_code, 1);
	assert_string_equal(res.error, "SystemExit: no data");
	run_result_release(&res);

	assert_int_equal(run(&lim, "import sys; sys.exit(3)", 30, &res), 0);
	assert_int_equal(res.exit_code, 3);
	assert_int_equal(res.report, RUN_REPORT_OK);
	assert_string_equal(res.error, "");
	run_result_release(&res);

	/* os._exit skips the runner's report: no footer, and a note why. */
	assert_int_equal(run(&lim, "import os; print('x', flush=True); "
	    "os._exit(4)", 30, &res), 0);
	assert_int_equal(res.exit_code, 4);
	assert_string_equal(res.out, "x\n");
	assert_int_equal(res.report, RUN_REPORT_MISSING);
	assert_null(res.footer);
	assert_non_null(strstr(res.note, "os._exit()"));
	run_result_release(&res);
}

static void
test_timeout(void **state)
{
	struct run_limits lim;
	struct run_result res;

	limits(&lim);
	assert_int_equal(run(&lim, "import subprocess, time\n"
	    "subprocess.Popen(['sleep', '60'])\n"
	    "print('started')\n"
	    "time.sleep(60)", 1, &res), 0);
	assert_true(res.timed_out);
	assert_false(res.signaled);
	assert_int_equal(res.exit_code, -1);
	assert_true(res.duration >= 0.95 && res.duration < 5);
	assert_string_equal(res.out, "started\n");
	assert_int_equal(res.report, RUN_REPORT_MISSING);
	assert_null(res.footer);
	/* Runs write unbuffered: nothing printed is lost, nothing to tell. */
	assert_null(strstr(res.note, "flush"));
	run_result_release(&res);
}

static void
test_killed_by_signal(void **state)
{
	struct run_limits lim;
	struct run_result res;

	limits(&lim);
	assert_int_equal(run(&lim, "import os, signal\n"
	    "os.kill(os.getpid(), signal.SIGKILL)", 30, &res), 0);
	assert_true(res.signaled);
	assert_int_equal(res.signal, SIGKILL);
	assert_false(res.timed_out);
	assert_non_null(strstr(res.note, "out-of-memory"));
	assert_null(res.footer);
	run_result_release(&res);

	assert_int_equal(run(&lim, "import os, signal\n"
	    "os.kill(os.getpid(), signal.SIGSEGV)", 30, &res), 0);
	assert_true(res.signaled);
	assert_int_equal(res.signal, SIGSEGV);
	/* The error line names it; no second sentence about it. */
	assert_string_equal(res.note, "");
	run_result_release(&res);
}

static void
test_interpreter_missing(void **state)
{
	struct run_limits lim;
	struct run_result res;

	limits(&lim);
	lim.python = "/nonexistent/python3";
	assert_int_equal(run(&lim, "print(1)", 30, &res), 0);
	assert_true(res.spawn_failed);
	assert_non_null(strstr(res.note, "/nonexistent/python3"));
	assert_non_null(strstr(res.note, "No such file"));
	assert_non_null(strstr(res.note, "VIVARIUM_PYTHON"));
	assert_null(res.footer);
	run_result_release(&res);

	lim.python = "vivarium-no-such-python";
	assert_int_equal(run(&lim, "print(1)", 30, &res), 0);
	assert_true(res.spawn_failed);
	assert_non_null(strstr(res.note, "PATH"));
	run_result_release(&res);

	/* The runner cannot be imported: Python runs, says why, no report. */
	limits(&lim);
	lim.pythonpath = "/nonexistent";
	assert_int_equal(run(&lim, "print(1)", 30, &res), 0);
	assert_false(res.spawn_failed);
	assert_int_equal(res.exit_code, 1);
	assert_non_null(strstr(res.err, "vivarium"));
	assert_int_equal(res.report, RUN_REPORT_MISSING);
	run_result_release(&res);
}

/* Children the code leaves behind die with the run; one that escapes the
 * group with setsid cannot hold the call. */
static void
test_children_outliving_the_run(void **state)
{
	struct run_limits lim;
	struct run_result res;
	int		 bg, daemon;

	limits(&lim);
	assert_int_equal(run(&lim, "import subprocess\n"
	    "p = subprocess.Popen(['sleep', '60'])\n"
	    "print(p.pid)", 30, &res), 0);
	assert_int_equal(res.exit_code, 0);
	bg = atoi(res.out);
	assert_true(bg > 0);
	assert_true(wait_dead(bg, 2));
	assert_string_equal(res.note, "");
	run_result_release(&res);

	assert_int_equal(run(&lim, "import subprocess\n"
	    "p = subprocess.Popen(['setsid', 'sleep', '60'])\n"
	    "print(p.pid, flush=True)", 30, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_true(res.duration < 5);
	daemon = atoi(res.out);
	assert_true(daemon > 0);
	assert_non_null(strstr(res.note, "left the run's process group"));
	assert_int_equal(res.report, RUN_REPORT_OK);
	/* The test started it, so the test ends it. */
	assert_false(pid_dead(daemon));
	kill(daemon, SIGKILL);
	run_result_release(&res);
}

/* ---------------------------------------------------------------- report */

static void
bad_report(const char *what, const char *python_expr, int want,
    const char *why)
{
	struct run_limits lim;
	struct run_result res;
	char		 code[1024];

	limits(&lim);
	snprintf(code, sizeof(code),
	    "import os\n"
	    "p = os.path.join(os.environ['VIVARIUM_RUN_DIR'], 'report.json')\n"
	    "%s\n"
	    "os._exit(0)\n", python_expr);
	assert_int_equal(run(&lim, code, 30, &res), 0);
	if (res.report != want)
		fail_msg("%s: report status %d, want %d (note: %s)", what,
		    res.report, want, res.note);
	assert_int_equal(res.exit_code, 0);
	assert_null(res.footer);
	if (why != NULL && strstr(res.note, why) == NULL)
		fail_msg("%s: note '%s' lacks '%s'", what, res.note, why);
	run_result_release(&res);
}

/*
 * One walk before and one after the run say what it wrote: the footer's
 * wrote: line, files_written and the returned images agree, ten levels
 * down and in a .vivarium of the user's (the runner's own is hidden);
 * files_written is capped; a timed-out run still returns its images.
 */
static void
test_one_workspace_diff(void **state)
{
	struct run_limits lim;
	struct run_result res;
	char		 code[PATH_MAX * 4];
	const char	*deep = "a/b/c/d/e/f/g/h/i/j/deep.png";
	size_t		 i;
	int		 named;

	limits(&lim);
	lim.max_images = 4;
	lim.max_image_side = 100;
	snprintf(code, sizeof(code),
	    "import os, shutil\n"
	    "F = '%s'\n"
	    "os.makedirs('a/b/c/d/e/f/g/h/i/j', exist_ok=True)\n"
	    "shutil.copy(F + '/solid.png', '%s')\n"
	    "os.utime('%s', (3000, 3000))\n"
	    "os.makedirs('sub/.vivarium', exist_ok=True)\n"
	    "shutil.copy(F + '/solid.png', 'sub/.vivarium/mine.png')\n"
	    "os.utime('sub/.vivarium/mine.png', (2000, 2000))\n"
	    "os.makedirs('.vivarium', exist_ok=True)\n"
	    "shutil.copy(F + '/solid.png', '.vivarium/runner.png')\n"
	    "open('w1.txt', 'w').write('1')\n"
	    "os.utime('w1.txt', (1000, 1000))\n", fixtures, deep, deep);
	assert_int_equal(run(&lim, code, 30, &res), 0);
	if (res.exit_code != 0)
		fail_msg("stderr: %s", res.err);
	assert_non_null(res.footer);
	if (strstr(res.footer, "\nwrote: a/b/c/d/e/f/g/h/i/j/deep.png (") ==
	    NULL || strstr(res.footer, "), sub/.vivarium/mine.png (") == NULL ||
	    strstr(res.footer, "), w1.txt (1 B)\n") == NULL ||
	    strstr(res.footer, "runner.png") != NULL)
		fail_msg("footer: %s", res.footer);
	assert_int_equal(res.nfiles, 3);
	assert_string_equal(res.files[0], deep);
	assert_string_equal(res.files[1], "sub/.vivarium/mine.png");
	assert_string_equal(res.files[2], "w1.txt");
	/* The images are the PNGs of that list, in the order written. */
	assert_int_equal(res.nimages, 2);
	assert_string_equal(res.images[0].name, "sub/.vivarium/mine.png");
	assert_string_equal(res.images[1].name, deep);
	for (i = 0; i < res.nimages; i++) {
		named = strstr(res.footer, res.images[i].name) != NULL;
		assert_true(named);
	}
	run_result_release(&res);

	/* Nothing new: no wrote:, an empty list, no images. */
	assert_int_equal(run(&lim, "pass", 30, &res), 0);
	assert_null(strstr(res.footer, "wrote:"));
	assert_int_equal(res.nfiles, 0);
	assert_int_equal(res.nimages, 0);
	run_result_release(&res);

	/* files_written is capped. */
	assert_int_equal(run(&lim, "for i in range(500):\n"
	    "    open('f%03d.txt' % i, 'w').close()\n", 30, &res), 0);
	assert_int_equal(res.nfiles, FILES_WRITTEN_MAX);
	run_result_release(&res);

	/* No summary: no list either. */
	lim.state_summary = 0;
	assert_int_equal(run(&lim, "open('x.txt', 'w').close()\n", 30, &res), 0);
	assert_null(res.footer);
	assert_int_equal(res.nfiles, 0);
	run_result_release(&res);

	/* Killed at its timeout: no footer, but its image. */
	lim.state_summary = 1;
	snprintf(code, sizeof(code), "import shutil, time\n"
	    "shutil.copy('%s/solid.png', 'late.png')\ntime.sleep(30)\n",
	    fixtures);
	assert_int_equal(run(&lim, code, 1, &res), 0);
	assert_true(res.timed_out);
	assert_null(res.footer);
	assert_int_equal(res.nimages, 1);
	assert_string_equal(res.images[0].name, "late.png");
	run_result_release(&res);
}

static void
test_report_malformed(void **state)
{
	bad_report("not JSON", "open(p, 'w').write('{\"version\": 1,')",
	    RUN_REPORT_MALFORMED, "not JSON");
	bad_report("array", "open(p, 'w').write('[1, 2]')",
	    RUN_REPORT_MALFORMED, "not a JSON object");
	bad_report("version string", "open(p, 'w').write('{\"version\": \"1\", "
	    "\"exit_code\": 0, \"footer\": null}')", RUN_REPORT_MALFORMED,
	    "version");
	bad_report("exit_code string", "open(p, 'w').write('{\"version\": 1, "
	    "\"exit_code\": \"0\", \"footer\": null}')", RUN_REPORT_MALFORMED,
	    "exit_code");
	bad_report("footer number", "open(p, 'w').write('{\"version\": 1, "
	    "\"exit_code\": 0, \"footer\": 5}')", RUN_REPORT_MALFORMED,
	    "footer");
	bad_report("duplicate key", "open(p, 'w').write('{\"version\": 1, "
	    "\"version\": 1, \"exit_code\": 0}')", RUN_REPORT_MALFORMED,
	    "not JSON");
	bad_report("invalid UTF-8", "open(p, 'wb').write(b'{\"version\": 1, "
	    "\"exit_code\": 0, \"footer\": \"\\xff\"}')", RUN_REPORT_MALFORMED,
	    "not JSON");
	bad_report("too big", "open(p, 'w').write('{\"version\": 1, "
	    "\"exit_code\": 0, \"footer\": \"' + 'x' * (2 << 20) + '\"}')",
	    RUN_REPORT_MALFORMED, "larger than");
	bad_report("symlink", "os.symlink('/etc/passwd', p)",
	    RUN_REPORT_MALFORMED, "unusable");
	bad_report("directory", "os.mkdir(p)", RUN_REPORT_MALFORMED,
	    "unusable");
	bad_report("fifo", "os.mkfifo(p)", RUN_REPORT_MALFORMED,
	    "not a regular file");
	bad_report("other version", "open(p, 'w').write('{\"version\": 2, "
	    "\"exit_code\": 0, \"footer\": \"new\"}')", RUN_REPORT_VERSION,
	    NULL);
	/* Unknown members are fine (files_written, which older runners
	 * sent, among them); a good report written by hand counts. */
	bad_report("extra members", "open(p, 'w').write('{\"version\": 1, "
	    "\"exit_code\": 0, \"footer\": null, \"more\": [1], "
	    "\"files_written\": 5}')", RUN_REPORT_OK, NULL);
}

/* ---------------------------------------------------------------- contract */

static void
test_environment_and_run_dir(void **state)
{
	struct run_limits lim;
	struct run_result res;
	char		 want[PATH_MAX * 2], rundir[PATH_MAX];
	struct stat	 st;
	const char	*code =
	    "import os, stat, sys\n"
	    "e = os.environ\n"
	    "for k in ('VIVARIUM_FRESH', 'VIVARIUM_PERSIST_NAMESPACE',\n"
	    "          'VIVARIUM_NAMESPACE_MAX_BYTES', 'VIVARIUM_STATE_SUMMARY',\n"
	    "          'VIVARIUM_STATE_DIR', 'MPLBACKEND', 'KEEP_ME'):\n"
	    "    print(k, e.get(k))\n"
	    "print('PYTHONPATH', e['PYTHONPATH'])\n"
	    "print('cwd', os.getcwd())\n"
	    "d = e['VIVARIUM_RUN_DIR']\n"
	    "print('mode', oct(stat.S_IMODE(os.stat(d).st_mode)))\n"
	    "print('files', sorted(os.listdir(d)))\n"
	    "print('stdin', repr(sys.stdin.read()))\n"
	    "print('pgid', os.getpgid(0) == os.getpid())\n"
	    "open('rundir.txt', 'w').write(d)\n"
	    "open(os.path.join(d, 'junk'), 'w').write('left behind')\n"
	    "os.makedirs(os.path.join(d, 'a', 'b'))\n";

	limits(&lim);
	lim.persist_namespace = 0;
	lim.namespace_max_bytes = 12345;
	setenv("KEEP_ME", "passed through", 1);
	setenv("PYTHONPATH", "/some/where", 1);
	setenv("MPLBACKEND", "TkAgg", 1);
	assert_int_equal(run(&lim, code, 30, &res), 0);
	unsetenv("KEEP_ME");
	unsetenv("PYTHONPATH");
	unsetenv("MPLBACKEND");
	if (res.exit_code != 0)
		fail_msg("stderr: %s", res.err);
	snprintf(want, sizeof(want),
	    "VIVARIUM_FRESH 0\n"
	    "VIVARIUM_PERSIST_NAMESPACE 0\n"
	    "VIVARIUM_NAMESPACE_MAX_BYTES 12345\n"
	    "VIVARIUM_STATE_SUMMARY 1\n"
	    "VIVARIUM_STATE_DIR %s/.vivarium\n"
	    "MPLBACKEND Agg\n"
	    "KEEP_ME passed through\n"
	    "PYTHONPATH %s:/some/where\n"
	    "cwd %s\n"
	    "mode 0o700\n"
	    "files ['code.py']\n"
	    "stdin ''\n"
	    "pgid True\n", ws, pythonpath, ws);
	assert_string_equal(res.out, want);
	run_result_release(&res);

	/* The run directory is gone, with what the code left in it. */
	snprintf(want, sizeof(want), "%s/rundir.txt", ws);
	{
		FILE	*f = fopen(want, "r");
		size_t	 n;

		assert_non_null(f);
		n = fread(rundir, 1, sizeof(rundir) - 1, f);
		rundir[n] = '\0';
		fclose(f);
	}
	assert_int_equal(stat(rundir, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void
test_output_clipped(void **state)
{
	struct run_limits lim;
	struct run_result res;

	limits(&lim);
	lim.output_limit = 1000;
	assert_int_equal(run(&lim, "import sys\n"
	    "print('x' * 99999 + 'END')\n"
	    /* ';': the count write() returns is not shown (a notebook's rule) */
	    "sys.stderr.write('é' * 5000 + '€');", 30, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out_len, 1000);
	assert_int_equal(res.out_cut, 100003 - 1000);
	assert_memory_equal(res.out + 996, "END\n", 4);
	/* 1000 characters of two and three bytes, none split. */
	assert_int_equal(res.err_len, 999 * 2 + 3);
	assert_int_equal(res.err_cut, 5001 - 1000);
	assert_memory_equal(res.err, "é", 2);
	assert_memory_equal(res.err + res.err_len - 3, "€", 3);
	run_result_release(&res);

	/* Raw bytes that are not UTF-8 come back replaced, not dropped. */
	assert_int_equal(run(&lim, "import sys\n"
	    "sys.stdout.buffer.write(b'a\\xffb\\xe2\\x82');", 30, &res), 0);
	assert_string_equal(res.out, "a\xef\xbf\xbd" "b\xef\xbf\xbd");
	run_result_release(&res);
}

static long
maxrss_kib(void)
{
	struct rusage	 ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Printing gigabytes does not grow the agent. */
static void
test_huge_output_bounded(void **state)
{
	struct run_limits lim;
	struct run_result res;
	long		 before, after;
	const char	*e;
	char		 code[256];
	long		 mb = 2048;

	if ((e = getenv("RUN_TEST_MB")) != NULL)
		mb = atol(e);
	snprintf(code, sizeof(code), "import sys\n"
	    "chunk = 'y' * (1 << 20)\n"
	    "for i in range(%ld):\n"
	    "    sys.stdout.write(chunk)\n"
	    "print('DONE')\n", mb);
	limits(&lim);
	before = maxrss_kib();
	assert_int_equal(run(&lim, code, 300, &res), 0);
	after = maxrss_kib();
	print_message("%ld MiB printed: peak RSS %ld -> %ld KiB, %.1f s\n",
	    mb, before, after, res.duration);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out_len, 20000);
	assert_int_equal(res.out_cut, (unsigned long long)mb * (1 << 20) + 5 -
	    20000);
	assert_memory_equal(res.out + res.out_len - 5, "DONE\n", 5);
	assert_true(after - before < 32 * 1024);
	run_result_release(&res);
}

/* ---------------------------------------------------------------- images */

static void
copy_fixture(const char *name, const char *to, time_t mtime)
{
	char		 cmd[PATH_MAX * 2 + 64], path[PATH_MAX];
	struct timespec	 ts[2];

	snprintf(cmd, sizeof(cmd), "cp '%s/%s' '%s/%s'", fixtures, name, ws, to);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/%s", ws, to);
	ts[0].tv_sec = ts[1].tv_sec = mtime;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void
test_images(void **state)
{
	struct run_limits lim;
	struct run_result res;
	char		 code[PATH_MAX * 4];

	limits(&lim);
	lim.max_images = 2;
	lim.max_image_side = 100;
	copy_fixture("rgb8.png", "old.png", 1000);
	copy_fixture("gray8.png", "changed.png", 1000);
	/* The code writes two new PNGs, rewrites one, adds a broken one and
	 * one under .vivarium/, and leaves old.png alone. */
	snprintf(code, sizeof(code),
	    "import os, shutil\n"
	    "F = '%s'\n"
	    "os.makedirs('plots', exist_ok=True)\n"
	    "shutil.copy(F + '/solid.png', 'plots/a.png')\n"
	    "os.utime('plots/a.png', (3000, 3000))\n"
	    "shutil.copy(F + '/tall.png', 'b.png')\n"
	    "os.utime('b.png', (4000, 4000))\n"
	    "shutil.copy(F + '/rgba8.png', 'changed.png')\n"
	    "os.utime('changed.png', (2000, 2000))\n"
	    "open('broken.png', 'w').write('no')\n"
	    "os.utime('broken.png', (1500, 1500))\n"
	    "os.makedirs('.vivarium', exist_ok=True)\n"
	    "shutil.copy(F + '/solid.png', '.vivarium/x.png')\n",
	    fixtures);
	assert_int_equal(run(&lim, code, 30, &res), 0);
	if (res.exit_code != 0)
		fail_msg("stderr: %s", res.err);
	/* Picked in the order they were written, the first kept:
	 * broken.png fails (noted), then changed.png and plots/a.png; b.png,
	 * the last one drawn, is over the limit and named with its size. */
	assert_int_equal(res.nimages, 2);
	assert_string_equal(res.images[0].name, "changed.png");
	assert_string_equal(res.images[1].name, "plots/a.png");
	assert_int_equal(res.images[1].width, 100);
	assert_int_equal(res.images[1].height, 75);
	assert_memory_equal(res.images[1].png, "\x89PNG", 4);
	assert_int_equal(res.images_skipped, 1);
	assert_ptr_equal(strstr(res.skipped_names, "b.png ("),
	    res.skipped_names);
	assert_int_equal(res.skipped_names[strlen(res.skipped_names) - 1], ')');
	assert_non_null(strstr(res.note, "broken.png could not be shown: not a "
	    "PNG file"));
	run_result_release(&res);

	/* Nothing new: no images.  Images off: not even looked for. */
	assert_int_equal(run(&lim, "pass", 30, &res), 0);
	assert_int_equal(res.nimages, 0);
	assert_int_equal(res.images_skipped, 0);
	run_result_release(&res);
	lim.max_images = 0;
	assert_int_equal(run(&lim, "import shutil\n"
	    "shutil.copy('b.png', 'c.png')", 30, &res), 0);
	assert_int_equal(res.nimages, 0);
	assert_int_equal(res.images_skipped, 0);
	run_result_release(&res);
}

/*
 * The figures, drawn by matplotlib in the run: the default chart,
 * a 3000x1500 scatter, four 1280x1280 noise images and a photo-like
 * gradient.  Each returned image keeps to its share, the result to its
 * total, and the text names every shrink and omission.
 */
static void
test_image_budgets(void **state)
{
	struct run_limits lim;
	struct run_result res;
	struct buf	 b = BUF_INIT(1 << 20);
	char		 code[PATH_MAX * 4], line[256];
	size_t		 i, total = 0;

	limits(&lim);
	if (system(PYTHON " -c 'import matplotlib, PIL' 2>/dev/null") != 0)
		skip();
	snprintf(code, sizeof(code),
	    "import os, sys, time\n"
	    "sys.path.insert(0, '%s/../bench/images')\n"
	    "import figures\n"
	    "for i, n in enumerate(['noise2.png', 'noise3.png', 'noise4.png', "
	    "'gradient.png', 'noise1.png', 'scatter3000.png', 'chart.png']):\n"
	    "    figures.FIGURES[n](n)\n"
	    "    os.utime(n, (1000 + i, 1000 + i))\n", pythonpath);
	/* Four at most: the first four written, noise2-4 and the gradient;
	 * the rest named in the order they were written. */
	assert_int_equal(run(&lim, code, 120, &res), 0);
	if (res.exit_code != 0)
		fail_msg("stderr: %s", res.err);
	assert_int_equal(res.nimages, 4);
	assert_int_equal(res.images_skipped, 3);
	assert_ptr_equal(strstr(res.skipped_names, "noise1.png ("),
	    res.skipped_names);
	assert_true(strstr(res.skipped_names, "), scatter3000.png (") <
	    strstr(res.skipped_names, "), chart.png ("));
	assert_non_null(strstr(res.skipped_names, "), chart.png ("));
	assert_string_equal(res.images[0].name, "noise2.png");
	assert_string_equal(res.images[3].name, "gradient.png");
	for (i = 0; i < res.nimages; i++) {
		const struct run_image *im = &res.images[i];

		assert_false(im->omitted);
		assert_true(im->shrunk);
		assert_true(im->png_len <= im->budget);
		assert_true(im->budget <= lim.max_image_bytes);
		total += im->png_len;
	}
	assert_true(total <= lim.max_result_image_bytes);
	run_result_images_text(&b, &res, lim.max_images);
	for (i = 0; i < res.nimages; i++) {
		snprintf(line, sizeof(line), "image %zu of 4: %s (%dx%d, shrunk "
		    "to %dx%d to fit", i + 1, res.images[i].name,
		    res.images[i].orig_width, res.images[i].orig_height,
		    res.images[i].width, res.images[i].height);
		if (strstr(buf_str(&b), line) == NULL)
			fail_msg("no '%s' in:\n%s", line, buf_str(&b));
	}
	buf_release(&b);
	run_result_release(&res);

	/* The chart and the scatter alone: the chart as drawn, the scatter
	 * shrunk, both in budget. */
	assert_int_equal(run(&lim, "import os, sys\n"
	    "os.utime('chart.png', None)\n"
	    "os.utime('scatter3000.png', None)\n", 30, &res), 0);
	assert_int_equal(res.nimages, 2);
	for (i = 0; i < 2; i++) {
		const struct run_image *im = &res.images[i];

		assert_true(im->png_len <= lim.max_image_bytes);
		if (strcmp(im->name, "chart.png") == 0) {
			assert_false(im->shrunk);
			assert_int_equal(im->width, 960);
			assert_true(im->colors > 0);
		} else {
			assert_int_equal(im->orig_width, 3000);
			assert_true(im->shrunk);
		}
	}
	run_result_release(&res);

	/* A result budget too small for four: the later ones are left out,
	 * and say so. */
	lim.max_result_image_bytes = 30000;
	lim.max_image_bytes = 25600;
	assert_int_equal(run(&lim, "import os\n"
	    "for n in ['noise1.png', 'noise2.png', 'noise3.png', "
	    "'noise4.png']:\n"
	    "    os.utime(n, None)\n", 30, &res), 0);
	assert_int_equal(res.nimages, 4);
	total = 0;
	for (i = 0; i < res.nimages; i++) {
		if (!res.images[i].omitted)
			total += res.images[i].png_len;
		else
			assert_null(res.images[i].png);
	}
	assert_true(total <= 30000);
	buf_init(&b, 1 << 20);
	run_result_images_text(&b, &res, lim.max_images);
	for (i = 0; i < res.nimages; i++)
		if (res.images[i].omitted) {
			snprintf(line, sizeof(line), "image left out: %s",
			    res.images[i].name);
			assert_non_null(strstr(buf_str(&b), line));
		}
	buf_release(&b);
	run_result_release(&res);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		/* First, while the peak RSS is still the baseline. */
		cmocka_unit_test_setup_teardown(test_huge_output_bounded,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_print, ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_exception_and_exit_codes,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_timeout, ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_killed_by_signal, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_children_outliving_the_run,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_interpreter_missing,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_one_workspace_diff,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_report_malformed, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_environment_and_run_dir,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_output_clipped, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_image_budgets, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_images, ws_new, ws_del),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
