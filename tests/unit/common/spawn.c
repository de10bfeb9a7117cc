/*
 * Unit tests for common/spawn.c with real children (/bin/sh, head, sleep):
 * exit codes, exec failures, signal reset, the timeout killing a whole
 * group, daemons that keep the pipes open, and memory that stays flat
 * whatever the child prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "spawn.h"
#include "proc.h"

static char	 tmpdir[] = "/tmp/vivarium-spawn-test-XXXXXX";

static int
setup(void **state)
{
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char	 cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Runs sh -c script; returns spawn_run's result. */
static int
run_sh(struct spawn *sp, const char *script, double timeout, char *err,
    size_t errlen)
{
	static char	 sh[] = "/bin/sh", c[] = "-c";
	char		*argv[] = { sh, c, (char *)(uintptr_t)script, NULL };

	sp->argv = argv;
	sp->timeout = timeout;
	return spawn_run(sp, err, errlen);
}

static const char *
out_str(struct spawn_stream *s)
{
	size_t	 n;

	return (const char *)spawn_stream_take(s, &n);
}

static pid_t
read_pidfile(const char *path, double secs)
{
	double	 end = mono_now() + secs;
	FILE	*f;
	int	 pid;

	while (mono_now() < end) {
		if ((f = fopen(path, "r")) != NULL) {
			pid = 0;
			if (fscanf(f, "%d", &pid) == 1 && pid > 0) {
				fclose(f);
				return pid;
			}
			fclose(f);
		}
		usleep(10000);
	}
	return -1;
}

/* ---------------------------------------------------------------- streams */

static void
test_stream_keeps_tail(void **state)
{
	struct spawn_stream s = SPAWN_STREAM_INIT;
	unsigned char	 all[200000], chunk[9000];
	size_t		 total = 0, n, i, len, keep;
	const unsigned char *p;
	unsigned int	 seed = 7;
	int		 round;

	for (round = 0; round < 40; round++) {
		s.cap = 1 + (size_t)(rand_r(&seed) % 20000);
		total = 0;
		while (total < sizeof(all) - sizeof(chunk)) {
			n = (size_t)rand_r(&seed) % sizeof(chunk);
			if (round % 5 == 0)
				n = s.cap + (size_t)(rand_r(&seed) % 5);	/* bigger than cap */
			if (n > sizeof(chunk))
				n = sizeof(chunk);
			for (i = 0; i < n; i++)
				chunk[i] = (unsigned char)rand_r(&seed);
			assert_int_equal(spawn_stream_add(&s, chunk, n), 0);
			memcpy(all + total, chunk, n);
			total += n;
			assert_true(s.size <= s.cap);
		}
		assert_int_equal(s.total, total);
		p = spawn_stream_take(&s, &len);
		keep = total < s.cap ? total : s.cap;
		assert_int_equal(len, keep);
		assert_memory_equal(p, all + total - keep, keep);
		assert_int_equal(p[len], 0);
		spawn_stream_release(&s);
	}
	/* cap 0 keeps nothing but still counts. */
	s.cap = 0;
	assert_int_equal(spawn_stream_add(&s, (const unsigned char *)"abc", 3), 0);
	p = spawn_stream_take(&s, &len);
	assert_int_equal(len, 0);
	assert_int_equal(s.total, 3);
	spawn_stream_release(&s);
}

/* ---------------------------------------------------------------- exits */

static void
test_exit_codes_and_output(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	char		 err[256];

	sp.out.cap = sp.err.cap = 4096;
	assert_int_equal(run_sh(&sp, "echo out; echo err >&2; exit 3", 10,
	    err, sizeof(err)), 0);
	assert_true(sp.exited);
	assert_int_equal(sp.exit_code, 3);
	assert_false(sp.timed_out);
	assert_false(sp.signaled);
	assert_false(sp.lingered);
	assert_string_equal(out_str(&sp.out), "out\n");
	assert_string_equal(out_str(&sp.err), "err\n");
	spawn_release(&sp);

	assert_int_equal(run_sh(&sp, "exit 0", 10, err, sizeof(err)), 0);
	assert_true(sp.exited);
	assert_int_equal(sp.exit_code, 0);
	assert_true(sp.duration >= 0 && sp.duration < 5);
	spawn_release(&sp);
}

static void
test_killed_by_signal(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	char		 err[256];

	assert_int_equal(run_sh(&sp, "kill -SEGV $$; sleep 5", 10, err,
	    sizeof(err)), 0);
	assert_false(sp.exited);
	assert_true(sp.signaled);
	assert_int_equal(sp.signal, SIGSEGV);
	assert_false(sp.timed_out);
	spawn_release(&sp);
}

/* SIG_IGN and a blocked mask would be inherited through exec: both reset. */
static void
test_signals_reset_in_child(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	struct sigaction sa, old;
	sigset_t	 set, oldset;
	char		 err[256];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGTERM, &sa, &old);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, &oldset);

	assert_int_equal(run_sh(&sp, "kill -TERM $$; sleep 5", 10, err,
	    sizeof(err)), 0);
	assert_true(sp.signaled);
	assert_int_equal(sp.signal, SIGTERM);
	spawn_release(&sp);
	assert_int_equal(run_sh(&sp, "kill -USR1 $$; sleep 5", 10, err,
	    sizeof(err)), 0);
	assert_true(sp.signaled);
	assert_int_equal(sp.signal, SIGUSR1);
	spawn_release(&sp);

	pthread_sigmask(SIG_SETMASK, &oldset, NULL);
	sigaction(SIGTERM, &old, NULL);
}

static void
test_env_cwd_stdin(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	static char	 e1[] = "FOO=bar baz", e2[] = "PATH=/usr/bin:/bin";
	char		*envp[] = { e1, e2, NULL };
	char		 err[256], want[128];

	sp.envp = envp;
	sp.cwd = tmpdir;
	sp.out.cap = 4096;
	/* cat must see EOF at once: stdin is /dev/null. */
	assert_int_equal(run_sh(&sp, "echo \"$FOO\"; pwd; cat; echo end", 10,
	    err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "bar baz\n%s\nend\n", tmpdir);
	assert_string_equal(out_str(&sp.out), want);
	assert_int_equal(sp.exit_code, 0);
	spawn_release(&sp);
}

static void
test_exec_failures(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	static char	 missing[] = "/nonexistent/python3";
	static char	 nopath[] = "vivarium-no-such-program";
	char		*argv[] = { missing, NULL };
	char		 err[256], path[128];
	int		 fd;

	sp.argv = argv;
	assert_int_equal(spawn_run(&sp, err, sizeof(err)), -1);
	assert_int_equal(sp.exec_errno, ENOENT);
	assert_false(sp.chdir_failed);
	assert_non_null(strstr(err, "/nonexistent/python3"));
	assert_non_null(strstr(err, "No such file"));
	spawn_release(&sp);

	argv[0] = nopath;
	assert_int_equal(spawn_run(&sp, err, sizeof(err)), -1);
	assert_int_equal(sp.exec_errno, ENOENT);
	spawn_release(&sp);

	/* Found but not executable: the exec itself fails in the child. */
	snprintf(path, sizeof(path), "%s/noexec", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
	argv[0] = path;
	assert_int_equal(spawn_run(&sp, err, sizeof(err)), -1);
	assert_int_equal(sp.exec_errno, EACCES);
	spawn_release(&sp);

	/* A shebang-less, zero-length executable: ENOEXEC from execve. */
	chmod(path, 0755);
	assert_int_equal(spawn_run(&sp, err, sizeof(err)), -1);
	assert_int_equal(sp.exec_errno, ENOEXEC);
	spawn_release(&sp);

	/* A missing working directory is reported from the child too. */
	sp.cwd = "/nonexistent-dir";
	assert_int_equal(run_sh(&sp, "exit 0", 10, err, sizeof(err)), -1);
	assert_int_equal(sp.exec_errno, ENOENT);
	assert_non_null(strstr(err, "/nonexistent-dir"));
	assert_true(sp.chdir_failed);
	spawn_release(&sp);
}

/*
 * The one PATH search: an empty entry is the current directory (POSIX),
 * which for a run is its cwd, and the child runs what was checked; a
 * directory or a file without x does not count.
 */
static void
test_path_search(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	static char	 prog[] = "vivarium-test-prog";
	static char	 e_empty[] = "PATH=/nonexistent::/bin";
	static char	 e_rel[] = "PATH=/nonexistent:sub";
	static char	 e_none[] = "PATH=/nonexistent";
	char		*env_empty[] = { e_empty, NULL }, *env_rel[] = { e_rel, NULL };
	char		*env_none[] = { e_none, NULL };
	char		*argv[] = { prog, NULL };
	char		 path[256], out[256], err[256];
	const unsigned char *o;
	size_t		 n;
	FILE		*f;

	snprintf(path, sizeof(path), "%s/sub", tmpdir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s", tmpdir, prog);
	assert_non_null(f = fopen(path, "w"));
	fputs("#!/bin/sh\necho top\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub/%s", tmpdir, prog);
	assert_non_null(f = fopen(path, "w"));
	fputs("#!/bin/sh\necho sub\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);

	/* Looked up where the child runs, not where the caller is. */
	assert_int_equal(spawn_find(prog, env_empty, tmpdir, out, sizeof(out)),
	    0);
	assert_string_equal(out, "./vivarium-test-prog");
	assert_int_equal(spawn_find(prog, env_empty, "/", out, sizeof(out)),
	    ENOENT);
	assert_int_equal(spawn_find(prog, env_rel, tmpdir, out, sizeof(out)),
	    0);
	assert_string_equal(out, "sub/vivarium-test-prog");
	assert_int_equal(spawn_find(prog, env_none, tmpdir, out, sizeof(out)),
	    ENOENT);
	assert_int_equal(spawn_find("sh", env_empty, tmpdir, out, sizeof(out)),
	    0);
	assert_string_equal(out, "/bin/sh");
	/* Not executable: EACCES; a directory: not found. */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(spawn_find(prog, env_rel, tmpdir, out, sizeof(out)),
	    EACCES);
	assert_int_equal(spawn_find("sub", env_empty, tmpdir, out, sizeof(out)),
	    ENOENT);

	/* spawn_run runs the one found in its cwd. */
	sp.argv = argv;
	sp.envp = env_empty;
	sp.cwd = tmpdir;
	sp.out.cap = 1024;
	assert_int_equal(spawn_run(&sp, err, sizeof(err)), 0);
	o = spawn_stream_take(&sp.out, &n);
	assert_string_equal((const char *)o, "top\n");
	spawn_release(&sp);
}

/* ---------------------------------------------------------------- timeout */

static void
test_timeout_kills_group(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	char		 err[256], script[2048], pf[128];
	pid_t		 gc;
	double		 t0;

	/* Every process ignores SIGTERM; the grandchild keeps the pipes. */
	snprintf(pf, sizeof(pf), "%s/gc.pid", tmpdir);
	snprintf(script, sizeof(script),
	    "trap '' TERM HUP INT; sleep 60 & echo $! > '%s'; "
	    "echo started; wait; sleep 60", pf);
	sp.out.cap = 4096;
	t0 = mono_now();
	assert_int_equal(run_sh(&sp, script, 0.5, err, sizeof(err)), 0);
	assert_true(mono_now() - t0 < 3.0);
	assert_true(sp.duration >= 0.45);
	assert_true(sp.timed_out);
	assert_false(sp.exited);
	assert_false(sp.signaled);
	/* The group held the pipes; once it is dead, nothing lingers. */
	assert_false(sp.lingered);
	assert_string_equal(out_str(&sp.out), "started\n");
	gc = read_pidfile(pf, 1);
	assert_true(gc > 0);
	assert_true(wait_dead(gc, 2));
	spawn_release(&sp);
}

/* What writes stop_fd from another thread, after a pause. */
struct stopper {
	int	 fd;
	double	 after;
};

static void *
stopper_main(void *arg)
{
	struct stopper	*st = arg;
	struct timespec	 ts;
	uint64_t	 one = 1;

	ts.tv_sec = (time_t)st->after;
	ts.tv_nsec = (long)((st->after - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	if (write(st->fd, &one, sizeof(one)) != sizeof(one))
		abort();
	return NULL;
}

/* stop_fd kills the whole group at once, as the deadline does. */
static void
test_stop_fd_kills_group(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	struct stopper	 st;
	pthread_t	 th;
	char		 err[256], script[2048], pf[128];
	pid_t		 gc;
	double		 t0;

	snprintf(pf, sizeof(pf), "%s/stop-gc.pid", tmpdir);
	snprintf(script, sizeof(script),
	    "trap '' TERM HUP INT; sleep 60 & echo $! > '%s'; "
	    "echo started; wait; sleep 60", pf);
	st.fd = eventfd(0, EFD_CLOEXEC);
	assert_true(st.fd != -1);
	st.after = 0.3;
	sp.stop_fd = st.fd;
	sp.out.cap = 4096;
	t0 = mono_now();
	assert_int_equal(pthread_create(&th, NULL, stopper_main, &st), 0);
	assert_int_equal(run_sh(&sp, script, 30, err, sizeof(err)), 0);
	pthread_join(th, NULL);
	/* Stopped within 200 ms of the request (0.3 s in). */
	assert_true(mono_now() - t0 < 0.5 + 0.2);
	assert_true(sp.stopped);
	assert_false(sp.timed_out);
	assert_false(sp.exited);
	assert_false(sp.signaled);
	assert_string_equal(out_str(&sp.out), "started\n");
	gc = read_pidfile(pf, 1);
	assert_true(gc > 0);
	assert_true(wait_dead(gc, 2));
	spawn_release(&sp);

	/* Already readable before the start: the run is stopped at once;
	 * a child that ends on its own first is not "stopped". */
	assert_int_equal(run_sh(&sp, "sleep 30", 60, err, sizeof(err)), 0);
	assert_true(sp.stopped);
	assert_true(sp.duration < 1.0);
	spawn_release(&sp);
	sp.stop_fd = -1;
	assert_int_equal(run_sh(&sp, "exit 3", 60, err, sizeof(err)), 0);
	assert_false(sp.stopped);
	assert_int_equal(sp.exit_code, 3);
	spawn_release(&sp);
	close(st.fd);
}

/* The main process exits; a daemon that left the group keeps stdout. */
static void
test_daemon_keeps_pipes_open(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	char		 err[256], script[2048], pf[128], bg[128];
	pid_t		 d, b;
	double		 t0;

	snprintf(pf, sizeof(pf), "%s/daemon.pid", tmpdir);
	snprintf(bg, sizeof(bg), "%s/bg.pid", tmpdir);
	snprintf(script, sizeof(script),
	    "setsid sh -c 'echo $$ > \"%s\"; exec sleep 60' & "
	    "sleep 60 & echo $! > '%s'; "
	    "while [ ! -s '%s' ]; do sleep 0.01; done; echo main done",
	    pf, bg, pf);
	sp.out.cap = 4096;
	t0 = mono_now();
	assert_int_equal(run_sh(&sp, script, 30, err, sizeof(err)), 0);
	assert_true(mono_now() - t0 < 5.0);
	assert_true(sp.exited);
	assert_int_equal(sp.exit_code, 0);
	assert_false(sp.timed_out);
	assert_true(sp.lingered);
	assert_string_equal(out_str(&sp.out), "main done\n");
	/* The plain background child was in the group: killed. */
	b = read_pidfile(bg, 1);
	assert_true(b > 0);
	assert_true(wait_dead(b, 2));
	/* The daemon left the group; the test started it, so it ends it. */
	d = read_pidfile(pf, 1);
	assert_true(d > 0);
	assert_false(pid_dead(d));
	kill(d, SIGKILL);
	assert_true(wait_dead(d, 2));
	spawn_release(&sp);
}

/* Output still in the pipe when the child exits is not lost. */
static void
test_exit_with_full_pipe(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	char		 err[256];
	size_t		 len;
	int		 i;

	sp.out.cap = 1 << 20;
	sp.err.cap = 1 << 20;
	for (i = 0; i < 10; i++) {
		assert_int_equal(run_sh(&sp, "head -c 300000 /dev/zero; "
		    "head -c 70000 /dev/zero >&2", 10, err, sizeof(err)), 0);
		assert_int_equal(sp.out.total, 300000);
		assert_int_equal(sp.err.total, 70000);
		spawn_stream_take(&sp.out, &len);
		assert_int_equal(len, 300000);
		spawn_release(&sp);
	}
}

/* ---------------------------------------------------------------- memory */

static long
rss_kib(void)
{
	FILE	*f;
	long	 size = 0, res = 0;

	if ((f = fopen("/proc/self/statm", "r")) == NULL)
		return 0;
	if (fscanf(f, "%ld %ld", &size, &res) != 2)
		res = 0;
	fclose(f);
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

struct rss_probe {
	unsigned long long seen, next;
	long		 peak;
};

static void
probe_rss(void *arg, const unsigned char *p, size_t n)
{
	struct rss_probe *pr = arg;
	long		 r;

	pr->seen += n;
	if (pr->seen >= pr->next) {
		pr->next = pr->seen + (4u << 20);
		if ((r = rss_kib()) > pr->peak)
			pr->peak = r;
	}
}

static void
test_huge_output_flat_memory(void **state)
{
	struct spawn	 sp = SPAWN_INIT;
	struct rss_probe pr = { 0, 0, 0 };
	char		 err[256];
	const unsigned char *p;
	size_t		 len;
	long		 base;
	unsigned long long mb = 512;
	const char	*e;
	char		 script[256];

	if ((e = getenv("SPAWN_TEST_MB")) != NULL)
		mb = strtoull(e, NULL, 10);
	snprintf(script, sizeof(script), "head -c %lluM /dev/zero | tr '\\0' x; "
	    "printf END; head -c %lluM /dev/zero >&2", mb, mb / 8);
	sp.out.cap = sp.err.cap = 1 << 20;
	sp.out.observe = probe_rss;
	sp.out.observe_arg = &pr;
	base = rss_kib();
	pr.peak = base;
	assert_int_equal(run_sh(&sp, script, 120, err, sizeof(err)), 0);
	assert_int_equal(sp.exit_code, 0);
	assert_int_equal(sp.out.total, (mb << 20) + 3);
	assert_int_equal(sp.err.total, (mb / 8) << 20);
	p = spawn_stream_take(&sp.out, &len);
	assert_int_equal(len, 1 << 20);
	assert_memory_equal(p + len - 5, "xxEND", 5);
	print_message("huge output: %llu MB read, rss %ld KiB -> peak %ld KiB "
	    "in %.2f s\n", mb + mb / 8, base, pr.peak, sp.duration);
	/* Two 1 MiB rings and one read chunk; allow slack for the allocator. */
	assert_true(pr.peak - base < 16 * 1024);
	spawn_release(&sp);
}

/* ---------------------------------------------------------------- threads */

struct job {
	int	 i;
	int	 ok;
	double	 took;
};

static void *
job_run(void *arg)
{
	struct job	*j = arg;
	struct spawn	 sp = SPAWN_INIT;
	char		 err[256], script[64], want[16];
	double		 t0 = mono_now();

	snprintf(script, sizeof(script), "echo %d; sleep 0.%d", j->i, j->i * 2);
	snprintf(want, sizeof(want), "%d\n", j->i);
	sp.out.cap = 64;
	j->ok = run_sh(&sp, script, 10, err, sizeof(err)) == 0 &&
	    sp.exit_code == 0 && strcmp(out_str(&sp.out), want) == 0;
	j->took = mono_now() - t0;
	spawn_release(&sp);
	return NULL;
}

/* Children spawned at once from threads do not hold each other's pipes. */
static void
test_parallel_threads(void **state)
{
	pthread_t	 th[4];
	struct job	 jobs[4];
	int		 i;

	for (i = 0; i < 4; i++) {
		jobs[i].i = i;
		assert_int_equal(pthread_create(&th[i], NULL, job_run, &jobs[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_true(jobs[i].ok);
		assert_true(jobs[i].took < 0.2 * i + 2.0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_keeps_tail),
		cmocka_unit_test(test_exit_codes_and_output),
		cmocka_unit_test(test_killed_by_signal),
		cmocka_unit_test(test_signals_reset_in_child),
		cmocka_unit_test(test_env_cwd_stdin),
		cmocka_unit_test(test_exec_failures),
		cmocka_unit_test(test_path_search),
		cmocka_unit_test(test_timeout_kills_group),
		cmocka_unit_test(test_stop_fd_kills_group),
		cmocka_unit_test(test_daemon_keeps_pipes_open),
		cmocka_unit_test(test_exit_with_full_pipe),
		cmocka_unit_test(test_huge_output_flat_memory),
		cmocka_unit_test(test_parallel_threads),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
