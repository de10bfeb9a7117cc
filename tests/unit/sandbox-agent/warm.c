/*
 * Warm runs (sandbox-agent/warm.c, python/vivarium/_zygote.py) through
 * run_python with Debian's /usr/bin/python3 and the real runner: every run
 * is a new process whatever the zygote holds, random state differs, a
 * timeout kills the run's whole group, a zygote that is killed, stopped or
 * killed mid-run costs no run its result, and os._exit / segfaults read as
 * they do cold.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "../../../sandbox-agent/run.c"
#include "../../../sandbox-agent/warm.c"

#include "runfix.h"

static int
setup(void **state)
{
	return runfix_setup("warm-test");
}

static int
teardown(void **state)
{
	warm_stop();
	return 0;
}

static int
ws_del(void **state)
{
	warm_reply_timeout = WARM_REPLY_TIMEOUT;
	return ws_rm();
}

static void
limits(struct run_limits *lim, int warm)
{
	runfix_limits(lim);
	lim->warm = warm;
	lim->warm_imports = "numpy,pandas,matplotlib,matplotlib.pyplot";
}

static void
run(const struct run_limits *lim, const char *code, long timeout,
    struct run_result *res)
{
	char		 err[512];

	if (runfix_run(lim, code, timeout, res, err, sizeof(err)) == -1)
		fail_msg("run_python: %s", err);
}

/* Runs code that must exit 0 and returns its stdout (owned). */
static char *
ok(const struct run_limits *lim, const char *code)
{
	struct run_result res;
	char		*out;

	run(lim, code, 60, &res);
	if (res.exit_code != 0)
		fail_msg("exit %d, stderr: %s, note: %s", res.exit_code,
		    res.err ? res.err : "", res.note);
	assert_int_equal(res.report, RUN_REPORT_OK);
	out = strdup(res.out);
	run_result_release(&res);
	return out;
}

/* The run's parent is a waiter forked from the zygote, not us. */
static void
assert_warm(const struct run_limits *lim)
{
	char	*out, want[32];

	assert_int_equal(run_warm_wait(lim, 60), 0);
	out = ok(lim, "import os; print(os.getppid())");
	snprintf(want, sizeof(want), "%d\n", (int)getpid());
	if (strcmp(out, want) == 0)
		fail_msg("the run was started cold");
	free(out);
	assert_true(warm_zygote_pid() > 0);
}

/* The ppid of a process, or -1. */
static pid_t
ppid_of(pid_t pid)
{
	char	 path[64], line[512], *p;
	FILE	*f;
	pid_t	 pp = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	if (fgets(line, sizeof(line), f) != NULL &&
	    (p = strrchr(line, ')')) != NULL)
		sscanf(p + 1, " %*c %d", &pp);
	fclose(f);
	return pp;
}

/* The zygote's spare (its waiter's child), waiting up to 5 s; or -1. */
static pid_t
spare_of(pid_t z)
{
	char		 path[64], line[512];
	DIR		*d;
	struct dirent	*de;
	pid_t		 pid, found = -1;
	int		 i;
	FILE		*f;

	for (i = 0; i < 500 && found == -1; i++) {
		if (i > 0)
			usleep(10000);
		if ((d = opendir("/proc")) == NULL)
			return -1;
		while (found == -1 && (de = readdir(d)) != NULL) {
			if ((pid = (pid_t)atoi(de->d_name)) <= 0 ||
			    ppid_of(pid) <= 0 || ppid_of(ppid_of(pid)) != z)
				continue;
			/* A waiting spare, not a zombie. */
			snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
			if ((f = fopen(path, "r")) == NULL)
				continue;
			if (fgets(line, sizeof(line), f) != NULL &&
			    strstr(line, ") S ") != NULL)
				found = pid;
			fclose(f);
		}
		closedir(d);
	}
	return found;
}

static void
test_fresh_process(void **state)
{
	struct run_limits lim;
	char		*a, *b;

	limits(&lim, 1);
	assert_warm(&lim);
	a = ok(&lim, "import os; print(os.getpid())");
	b = ok(&lim, "import os; print(os.getpid())");
	assert_string_not_equal(a, b);
	free(a);
	free(b);

	/* Module state set by one run is gone in the next. */
	free(ok(&lim, "import json, matplotlib, pandas\n"
	    "json.x = 1\n"
	    "matplotlib.rcParams['lines.linewidth'] = 7\n"
	    "pandas.set_option('display.max_rows', 3)\n"
	    "import sys; sys.modules['vivarium_marker'] = json\n"));
	a = ok(&lim, "import json, sys, matplotlib, pandas\n"
	    "print(hasattr(json, 'x'), matplotlib.rcParams['lines.linewidth'],"
	    " pandas.get_option('display.max_rows'),"
	    " 'vivarium_marker' in sys.modules)");
	assert_string_equal(a, "False 1.5 60 False\n");
	free(a);

	/* The environment is the run's, signals are a fresh interpreter's. */
	a = ok(&lim, "import os, signal\n"
	    "print(os.environ['VIVARIUM_RUN_DIR'].startswith('/'),"
	    " os.getcwd() == os.path.realpath(" "'.'),"
	    " signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL,"
	    " signal.getsignal(signal.SIGINT) is signal.default_int_handler,"
	    " signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN,"
	    " os.getpgid(0) == os.getpid())\n"
	    /* stdio and the socket where it says its end, not inherited */
	    "fds = sorted(int(f) for f in os.listdir('/proc/self/fd'))\n"
	    "fds = [f for f in fds if os.path.exists('/proc/self/fd/%d' % f)]\n"
	    "print(sorted(fds)[:3], len(fds),"
	    " [os.get_inheritable(f) for f in fds[3:]])");
	assert_string_equal(a, "True True True True True True\n"
	    "[0, 1, 2] 4 [False]\n");
	free(a);
}

static void
test_random_differs(void **state)
{
	struct run_limits lim;
	const char	*code = "import random, numpy, os\n"
	    "print(random.random(), numpy.random.rand(), os.urandom(8).hex())";
	char		*a, *b;

	limits(&lim, 1);
	assert_warm(&lim);
	a = ok(&lim, code);
	b = ok(&lim, code);
	assert_string_not_equal(a, b);
	/* Each of the three differs, not just one. */
	{
		char	*sa, *sb, *pa, *pb;
		int	 i;

		pa = a;
		pb = b;
		for (i = 0; i < 3; i++) {
			sa = strsep(&pa, " \n");
			sb = strsep(&pb, " \n");
			assert_non_null(sa);
			assert_non_null(sb);
			assert_string_not_equal(sa, sb);
		}
	}
	free(a);
	free(b);
}

static void
test_timeout_kills_group(void **state)
{
	struct run_limits lim;
	struct run_result res;
	char		 path[PATH_MAX], buf[32];
	FILE		*f;
	pid_t		 child;
	char		*out;

	limits(&lim, 1);
	assert_warm(&lim);
	snprintf(path, sizeof(path), "%s/child.pid", ws);
	run(&lim, "import subprocess, time\n"
	    "p = subprocess.Popen(['sleep', '60'])\n"
	    "open('child.pid', 'w').write(str(p.pid))\n"
	    "print('started', flush=True)\n"
	    "time.sleep(60)", 1, &res);
	assert_true(res.timed_out);
	assert_false(res.signaled);
	assert_int_equal(res.exit_code, -1);
	assert_true(res.duration >= 0.95 && res.duration < 5);
	assert_string_equal(res.out, "started\n");
	assert_null(res.footer);
	run_result_release(&res);
	assert_non_null(f = fopen(path, "r"));
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	child = (pid_t)atoi(buf);
	assert_true(child > 1);
	/* Killed with its group (it may linger as a zombie of init). */
	usleep(200000);
	{
		char	 st[PATH_MAX], line[256];
		FILE	*sf;
		int	 dead = 1;

		snprintf(st, sizeof(st), "/proc/%d/stat", (int)child);
		if ((sf = fopen(st, "r")) != NULL) {
			if (fgets(line, sizeof(line), sf) != NULL &&
			    strstr(line, ") Z ") == NULL &&
			    strstr(line, "sleep") != NULL)
				dead = 0;
			fclose(sf);
		}
		assert_true(dead);
	}
	out = ok(&lim, "print('next')");
	assert_string_equal(out, "next\n");
	free(out);
}

/* Waits (at most 10 s) until the zygote, our child, has exited: a loaded
 * machine may take longer than any fixed sleep to tear it down. */
static void
zygote_dead(pid_t z)
{
	siginfo_t	 si;
	int		 i;

	for (i = 0; i < 1000; i++) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)z, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == z)
			return;
		usleep(10000);
	}
	fail_msg("the zygote %d did not die", (int)z);
}

static void
test_zygote_killed_between_runs(void **state)
{
	struct run_limits lim;
	pid_t		 z;
	char		*out;

	limits(&lim, 1);
	assert_warm(&lim);
	z = warm_zygote_pid();
	/* Between calls: the spare asked for at the last run's end is made
	 * (until the waiter closes its copy of the control socket, the
	 * zygote's death shows one run later). */
	assert_true(spare_of(z) > 0);
	assert_int_equal(kill(z, SIGKILL), 0);
	zygote_dead(z);
	out = ok(&lim, "print('after')");
	assert_string_equal(out, "after\n");
	free(out);
	assert_true(warm_zygote_pid() > 0);
	assert_int_not_equal(warm_zygote_pid(), z);
	assert_warm(&lim);
}

static void
test_zygote_killed_mid_run(void **state)
{
	struct run_limits lim;
	struct run_result res;
	char		 code[256];
	pid_t		 z;

	limits(&lim, 1);
	assert_warm(&lim);
	z = warm_zygote_pid();
	/* The run kills the zygote itself (its parent's parent) and goes on. */
	snprintf(code, sizeof(code), "import os, time\n"
	    "os.kill(%d, 9)\n"
	    "time.sleep(0.3)\n"
	    "print('survived')", (int)z);
	run(&lim, code, 30, &res);
	assert_int_equal(res.exit_code, 0);
	assert_false(res.signaled);
	assert_string_equal(res.out, "survived\n");
	assert_int_equal(res.report, RUN_REPORT_OK);
	run_result_release(&res);
	assert_warm(&lim);
	assert_int_not_equal(warm_zygote_pid(), z);
}

static void
test_zygote_stopped_falls_back(void **state)
{
	struct run_limits lim;
	char		 path[PATH_MAX], buf[64], mine[32];
	pid_t		 z;
	char		*out;
	FILE		*f;
	size_t		 n;

	limits(&lim, 1);
	assert_warm(&lim);
	z = warm_zygote_pid();
	assert_true(spare_of(z) > 0);	/* made before the zygote stops */
	warm_reply_timeout = 0.5;
	assert_int_equal(kill(z, SIGSTOP), 0);
	snprintf(mine, sizeof(mine), "%d\n", (int)getpid());
	/* The spare made before needs no zygote: warm. */
	out = ok(&lim, "open('ran.txt', 'a').write('x')\nimport os\n"
	    "print(os.getppid())");
	assert_string_not_equal(out, mine);
	free(out);
	/* Its replacement never comes: cold after the reply timeout, run
	 * exactly once. */
	out = ok(&lim, "open('ran.txt', 'a').write('x')\nimport os\n"
	    "print(os.getppid())");
	assert_string_equal(out, mine);		/* cold: our child */
	free(out);
	usleep(300000);
	snprintf(path, sizeof(path), "%s/ran.txt", ws);
	assert_non_null(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(n, 2);
	/* The stopped one was replaced. */
	assert_int_equal(kill(z, 0), -1);
	assert_warm(&lim);
	assert_int_not_equal(warm_zygote_pid(), z);
}

/*
 * The spare for a run is forked once the run before it has ended, not
 * while it runs (the fork would take a core from it): it must restore what
 * that run saved, see the files it wrote and import the module it
 * rewrote, and keep none of its sys.path.  The run is the spare found
 * before it: no fork on its path.
 */
static void
test_spare_sees_last_run(void **state)
{
	struct run_limits lim;
	char		*out, *end, want[64];
	double		 ended, started;
	pid_t		 spare;

	limits(&lim, 1);
	assert_warm(&lim);
	free(ok(&lim, "x = 1\nopen('helpermod.py', 'w').write('V = 1')\n"
	    "import helpermod, sys\nsys.path.insert(0, '/vivarium-marker')\n"
	    "print(helpermod.V)"));
	out = ok(&lim, "import time\nx = 2\n"
	    "open('helpermod.py', 'w').write('V = 22')\n"
	    "open('data.txt', 'w').write('new')\ntime.sleep(0.5)\n"
	    "print(open('/proc/uptime').read().split()[0])");
	ended = strtod(out, &end);
	assert_true(end != out);
	free(out);
	assert_true((spare = spare_of(warm_zygote_pid())) > 0);
	out = ok(&lim, "import os, sys, helpermod\n"
	    "st = open('/proc/self/stat').read().rsplit(')', 1)[1].split()\n"
	    "print(int(st[19]) / os.sysconf('SC_CLK_TCK'))\n"
	    "print(os.getpid(), x, helpermod.V, open('data.txt').read(),"
	    " '/vivarium-marker' in sys.path)");
	started = strtod(out, &end);
	assert_true(end != out);
	/* Forked after the run before it ended (ticks: 10 ms). */
	assert_true(started >= ended);
	snprintf(want, sizeof(want), "\n%d 2 22 new False\n", (int)spare);
	assert_string_equal(end, want);
	free(out);
}

/*
 * The next spare is asked for a moment after a run ends (its answer is on
 * its way meanwhile); a run that comes sooner makes its own, and no other
 * spare is forked while it runs.  Then the next one is made as usual.
 */
static void
test_spare_not_during_next_run(void **state)
{
	struct run_limits lim;
	char		 code[1024], *out;
	pid_t		 z;

	limits(&lim, 1);
	assert_warm(&lim);
	z = warm_zygote_pid();
	free(ok(&lim, "print(1)"));
	snprintf(code, sizeof(code), "import os, time\ntime.sleep(0.2)\n"
	    "def pp(p):\n"
	    "    try:\n"
	    "        return int(open('/proc/%%d/stat' %% p).read()"
	    ".rsplit(')', 1)[1].split()[1])\n"
	    "    except (OSError, ValueError):\n"
	    "        return -1\n"
	    "me = os.getpid()\n"
	    "print(len([p for p in map(int, filter(str.isdigit, "
	    "os.listdir('/proc'))) if p != me and pp(pp(p)) == %d]))",
	    (int)z);
	out = ok(&lim, code);
	assert_string_equal(out, "0\n");
	free(out);
	assert_true(spare_of(z) > 0);
}

/* A spare killed while it waited costs no run: another is made and the
 * run is still warm, run once, from the same zygote. */
static void
test_spare_killed(void **state)
{
	struct run_limits lim;
	pid_t		 z, spare;
	char		*out, mine[32];

	limits(&lim, 1);
	assert_warm(&lim);
	z = warm_zygote_pid();
	assert_true((spare = spare_of(z)) > 0);
	assert_int_equal(kill(spare, SIGKILL), 0);
	usleep(100000);
	out = ok(&lim, "open('ran.txt', 'a').write('x')\nimport os\n"
	    "print(os.getpid(), os.getppid())");
	snprintf(mine, sizeof(mine), " %d\n", (int)getpid());
	assert_null(strstr(out, mine));		/* warm */
	assert_int_not_equal(atoi(out), spare);
	free(out);
	out = ok(&lim, "print(open('ran.txt').read())");
	assert_string_equal(out, "x\n");
	free(out);
	assert_int_equal(warm_zygote_pid(), z);
}

/* The same code warm and cold gives the same result. */
static void
same_both_ways(const char *code, int *signaled, int *sig, int *exit_code)
{
	struct run_limits lim;
	struct run_result r[2];
	int		 w;

	for (w = 0; w < 2; w++) {
		char	 cmd[128];

		/* Each starts from the same (empty) namespace. */
		snprintf(cmd, sizeof(cmd), "rm -rf '%s/.vivarium'", ws);
		assert_int_equal(system(cmd), 0);
		limits(&lim, w);
		if (w)
			assert_warm(&lim);
		run(&lim, code, 30, &r[w]);
	}
	if (getenv("WARM_TEST_VERBOSE") != NULL)
		fprintf(stderr, "--- cold:\n%s%s--- warm:\n%s%s", r[0].out,
		    r[0].err, r[1].out, r[1].err);
	assert_int_equal(r[0].exit_code, r[1].exit_code);
	assert_int_equal(r[0].signaled, r[1].signaled);
	assert_int_equal(r[0].signal, r[1].signal);
	assert_int_equal(r[0].timed_out, r[1].timed_out);
	assert_int_equal(r[0].report, r[1].report);
	assert_string_equal(r[0].note, r[1].note);
	assert_string_equal(r[0].out, r[1].out);
	assert_string_equal(r[0].err, r[1].err);
	if (getenv("WARM_TEST_VERBOSE") != NULL)
		fprintf(stderr, "--- %s\n%s%s(exit %d)\n", code, r[1].out,
		    r[1].err, r[1].exit_code);
	*signaled = r[1].signaled;
	*sig = r[1].signal;
	*exit_code = r[1].exit_code;
	run_result_release(&r[0]);
	run_result_release(&r[1]);
}

static void
test_exit_and_crash_as_cold(void **state)
{
	int	 signaled, sig, code;

	same_both_ways("import os\nprint('bye', flush=True)\nos._exit(3)",
	    &signaled, &sig, &code);
	assert_false(signaled);
	assert_int_equal(code, 3);
	same_both_ways("import ctypes\nctypes.string_at(0)", &signaled, &sig,
	    &code);
	assert_true(signaled);
	assert_int_equal(sig, SIGSEGV);
	same_both_ways("import sys\nsys.exit('no')", &signaled, &sig, &code);
	assert_int_equal(code, 1);
	same_both_ways("import atexit\natexit.register(print, 'at exit')\n"
	    "raise SystemExit(4)", &signaled, &sig, &code);
	assert_int_equal(code, 4);
	/* What shutdown does that code sees: threads waited for, __del__ of
	 * globals, unclosed files flushed (read back by the next run). */
	same_both_ways("import threading, time\n"
	    "class A:\n"
	    "    def __del__(self): print('del A', flush=True)\n"
	    "a = A()\n"
	    "f = open('unclosed.txt', 'w'); f.write('data')\n"
	    "threading.Thread(target=lambda: (time.sleep(0.2), "
	    "print('thread done', flush=True))).start()\n"
	    "print('main done')", &signaled, &sig, &code);
	assert_int_equal(code, 0);
	same_both_ways("print(open('unclosed.txt').read())", &signaled, &sig,
	    &code);
	assert_int_equal(code, 0);
}

/* Code that finds its end socket: the one descriptor past stdio. */
#define END_SOCKET \
	"import os, socket, time\n" \
	"fd = [f for f in map(int, os.listdir('/proc/self/fd'))\n" \
	"      if f > 2 and os.path.exists('/proc/self/fd/%d' % f)][0]\n" \
	"s = socket.socket(fileno=fd)\n"

/*
 * A run says its end on its request socket once its output is out
 * (_zygote._say_end), and the agent answers then with that exit code and
 * kills the group, without waiting for the kernel to tear the process
 * down.  Here the code says it itself and then sleeps: the answer comes
 * with its code and its output, not at the deadline.  Garbage on the
 * socket, or the socket closed, leaves the ordinary end.
 */
static void
test_end_said(void **state)
{
	struct run_limits lim;
	struct run_result res;

	limits(&lim, 1);
	assert_warm(&lim);
	run(&lim, END_SOCKET "print('said', flush=True)\n"
	    "s.send(b'x7')\ntime.sleep(60)", 20, &res);
	assert_false(res.timed_out);
	assert_false(res.signaled);
	assert_int_equal(res.exit_code, 7);
	assert_string_equal(res.out, "said\n");
	run_result_release(&res);

	run(&lim, END_SOCKET "for m in (b'hello', b'x999', b'x', b'x-1', b'y2'):\n"
	    "    s.send(m)\nprint('on')", 20, &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.report, RUN_REPORT_OK);
	assert_string_equal(res.out, "on\n");
	run_result_release(&res);

	run(&lim, END_SOCKET "s.close()\nprint('closed')\nraise SystemExit(5)",
	    20, &res);
	assert_int_equal(res.exit_code, 5);
	assert_string_equal(res.out, "closed\n");
	run_result_release(&res);
	free(ok(&lim, "print(1)"));
}

static void
test_workspace_gone(void **state)
{
	struct run_limits lim;
	struct run_result res;
	char		 cmd[128];
	pid_t		 z;

	limits(&lim, 1);
	/* Else the workspace walk (for images and footer) notices first. */
	lim.max_images = 0;
	lim.state_summary = 0;
	assert_warm(&lim);
	z = warm_zygote_pid();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ws);
	assert_int_equal(system(cmd), 0);
	run(&lim, "print(1)", 30, &res);
	assert_true(res.spawn_failed);
	assert_non_null(strstr(res.note, "Cannot enter the workspace"));
	run_result_release(&res);
	assert_int_equal(mkdir(ws, 0700), 0);
	/* Not the zygote's fault: the same one serves the next run. */
	assert_warm(&lim);
	assert_int_equal(warm_zygote_pid(), z);
}

/*
 * A fake vivarium package whose zygote says "ready" and then misbehaves as
 * $FAKE_ZYGOTE says; the real runner beside it serves the cold fallback.
 */
static const char fake_zygote[] =
    "import os, socket, sys, time\n"
    "mode = os.environ['FAKE_ZYGOTE']\n"
    "ctl = socket.socket(fileno=3)\n"
    "ctl.send(b'ready')\n"
    "held = []\n"
    "while True:\n"
    "    msg, fds, _, _ = socket.recv_fds(ctl, 64, 8)\n"
    "    if not msg: sys.exit(0)\n"
    "    req, st = socket.socket(fileno=fds[0]), socket.socket(fileno=fds[1])\n"
    "    held.append((req, st))\n"
    "    if mode == 'close': req.close(); st.close()\n"
    "    elif mode == 'garbage': st.send(b'hello there')\n"
    "    elif mode == 'badpid': st.send(b'p1')\n"
    "    elif mode == 'exit': os._exit(1)\n"
    "    elif mode == 'badack':\n"
    "        pid = os.fork()\n"
    "        if pid == 0:\n"
    "            os.setpgid(0, 0)\n"
    "            while True:\n"
    "                m = req.recv(1 << 20)\n"
    "                if not m: os._exit(0)\n"
    "                if m.startswith(b'r'): break\n"
    "            req.send(b'?')\n"
    "            if req.recv(16) == b'g': open('ran.txt', 'a').write('!')\n"
    "            os._exit(0)\n"
    "        os.setpgid(pid, pid)\n"
    "        st.send(b'p%d' % pid)\n";   /* 'silent': never answers */

static void
test_zygote_misbehaves(void **state)
{
	static const char *const modes[] = { "close", "garbage", "badpid",
	    "silent", "exit", "badack" };
	struct run_limits lim;
	char		 fake[PATH_MAX / 2], path[PATH_MAX], want[32], buf[64];
	const char	*mods[] = { "__init__", "_runner", "_store", "_footer",
	    "_figures", "_columns" };
	size_t		 i, n;
	char		*out;
	FILE		*f;

	snprintf(fake, sizeof(fake), "%s/fake", ws);
	snprintf(path, sizeof(path), "%s/vivarium", fake);
	assert_int_equal(mkdir(fake, 0700), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	for (i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
		char	 from[PATH_MAX * 2], to[PATH_MAX * 2];

		snprintf(from, sizeof(from), "%s/vivarium/%s.py", pythonpath,
		    mods[i]);
		snprintf(to, sizeof(to), "%s/%s.py", path, mods[i]);
		assert_int_equal(symlink(from, to), 0);
	}
	snprintf(path, sizeof(path), "%s/vivarium/_zygote.py", fake);
	assert_non_null(f = fopen(path, "w"));
	fputs(fake_zygote, f);
	fclose(f);

	limits(&lim, 1);
	lim.pythonpath = fake;
	warm_reply_timeout = 0.5;
	snprintf(want, sizeof(want), "%d\n", (int)getpid());
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		setenv("FAKE_ZYGOTE", modes[i], 1);
		warm_stop();	/* the environment changed: a new zygote */
		assert_int_equal(run_warm_wait(&lim, 30), 0);
		out = ok(&lim, "open('ran.txt', 'a').write('x')\nimport os\n"
		    "print(os.getppid())");
		/* Cold (our own child), and it ran exactly once. */
		if (strcmp(out, want) != 0)
			fail_msg("%s: not run cold: %s", modes[i], out);
		free(out);
	}
	unsetenv("FAKE_ZYGOTE");
	usleep(200000);
	snprintf(path, sizeof(path), "%s/ran.txt", ws);
	assert_non_null(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(n, sizeof(modes) / sizeof(modes[0]));
	warm_stop();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fresh_process, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_random_differs, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_timeout_kills_group,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_zygote_killed_between_runs,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_zygote_killed_mid_run,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_zygote_stopped_falls_back,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_spare_sees_last_run,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_spare_not_during_next_run,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_spare_killed, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_exit_and_crash_as_cold,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_end_said, ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_workspace_gone, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_zygote_misbehaves, ws_new,
		    ws_del),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
