/*
 * Unit tests for sandbox-agent/sweep.c against a fake /proc (a directory
 * of <pid>/status files) and a recording kill(): which processes count as
 * leftovers, that nothing is killed while a run is in flight or when
 * sweeping is off, that the zygote is spared by the scan but reported when
 * a kill takes it, the bounded rounds, and the refusal as root.  The real
 * kill(-1) is tested in a PID namespace of its own (tests/e2e/sweep.test.mjs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "../../../sandbox-agent/sweep.c"

static char	 fake[64];
static int	 kills, kill_sig, kill_pid, killed_calls;
/* Pids the fake kill "kills" (their status files are removed). */
static int	 dies_on_kill = 1;

static void
put_proc_child(long pid, char state, unsigned long uid, long ppid)
{
	char	 path[256];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%ld", fake, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%ld/status", fake, pid);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "Name:\tx\nUmask:\t0022\nState:\t%c (x)\nTgid:\t%ld\n"
	    "Pid:\t%ld\nPPid:\t%ld\nUid:\t%lu\t%lu\t%lu\t%lu\nGid:\t0\t0\t0\t0\n",
	    state, pid, pid, ppid, uid, uid, uid, uid);
	fclose(f);
}

static void
put_proc(long pid, char state, unsigned long uid)
{
	put_proc_child(pid, state, uid, 1);
}

static void
drop_proc(long pid)
{
	char	 path[256];

	snprintf(path, sizeof(path), "%s/%ld/status", fake, pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%ld", fake, pid);
	rmdir(path);
}

static int
fake_kill(pid_t pid, int sig)
{
	char	 cmd[512];

	kills++;
	kill_pid = (int)pid;
	kill_sig = sig;
	if (dies_on_kill) {
		/* Everything but 1, us and 4242 (the zygote is killed too). */
		snprintf(cmd, sizeof(cmd), "cd %s && for d in [0-9]*; do "
		    "[ $d = 1 ] || [ $d = %d ] || rm -rf $d; done", fake,
		    (int)getpid());
		assert_int_equal(system(cmd), 0);
	}
	return 0;
}

static pid_t	zygote = 4242;
static pid_t	keep_zygote(void) { return zygote; }
static void	zygote_killed(void) { killed_calls++; }

static int
setup(void **state)
{
	char	 cmd[512];

	snprintf(fake, sizeof(fake), "/tmp/vivarium-sweep-XXXXXX");
	assert_non_null(mkdtemp(fake));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/self %s/sys", fake, fake);
	assert_int_equal(system(cmd), 0);
	sweep_proc = fake;
	sweep_kill = fake_kill;
	kills = killed_calls = 0;
	kill_pid = kill_sig = 0;
	dies_on_kill = 1;
	zygote = 4242;
	put_proc(1, 'S', getuid());
	put_proc((long)getpid(), 'R', getuid());
	sweep_setup(1, keep_zygote, zygote_killed);
	return 0;
}

static int
teardown(void **state)
{
	char	 cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", fake);
	assert_int_equal(system(cmd), 0);
	sweep_setup(0, NULL, NULL);
	return 0;
}

/* Only init, the agent and the zygote: nothing to do, no kill. */
static void
test_nothing_left(void **state)
{
	put_proc(4242, 'S', getuid());
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 0);
	assert_int_equal(kills, 0);
	assert_int_equal(killed_calls, 0);
}

/* Zombies are already dead; other users' processes cannot be killed. */
static void
test_zombies_and_others_ignored(void **state)
{
	put_proc(300, 'Z', getuid());
	put_proc(301, 'S', getuid() + 1);
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 0);
	assert_int_equal(kills, 0);
}

/* Leftovers: one kill(-1, SIGKILL), counted, and the zygote forgotten. */
static void
test_leftovers_killed(void **state)
{
	put_proc(4242, 'S', getuid());
	put_proc(500, 'S', getuid());
	put_proc(501, 'R', getuid());
	put_proc(502, 'D', getuid());
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 3);
	assert_int_equal(kills, 1);
	assert_int_equal(kill_pid, -1);
	assert_int_equal(kill_sig, SIGKILL);
	assert_int_equal(killed_calls, 1);
}

/* No zygote (cold, or not started yet): nothing to forget. */
static void
test_leftovers_without_zygote(void **state)
{
	zygote = -1;
	put_proc(500, 'S', getuid());
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 1);
	assert_int_equal(kills, 1);
	assert_int_equal(killed_calls, 0);
}

/* While another run is in flight nothing happens; at the last end it does. */
static void
test_waits_for_last_run(void **state)
{
	put_proc(600, 'S', getuid());
	sweep_run_begin();
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 0);
	assert_int_equal(kills, 0);
	assert_int_equal(sweep_run_end(), 1);
	assert_int_equal(kills, 1);
}

/* The zygote's children (its waiters) end by themselves: not leftovers. */
static void
test_waiters_spared(void **state)
{
	put_proc(4242, 'S', getuid());
	put_proc_child(4300, 'S', getuid(), 4242);
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 0);
	assert_int_equal(kills, 0);
	/* With a leftover beside it, the kill takes both, and both count
	 * from the next round on (here the fake kill leaves them all). */
	dies_on_kill = 0;
	put_proc(4301, 'S', getuid());
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 1 + 3 * (SWEEP_ROUNDS - 1));
	assert_int_equal(killed_calls, 1);
}

/* A waiter's live child is the spare waiting for the next run: spared; a
 * child of that spare is not (it would be the code's, run after all). */
static void
test_spare_spared(void **state)
{
	put_proc(4242, 'S', getuid());
	put_proc_child(4300, 'S', getuid(), 4242);
	put_proc_child(4301, 'S', getuid(), 4300);
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 0);
	assert_int_equal(kills, 0);
	put_proc_child(4302, 'S', getuid(), 4301);
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 1);
	assert_int_equal(kills, 1);
	assert_int_equal(killed_calls, 1);
}

/* Off (the default): the count is kept but nothing is scanned or killed. */
static void
test_off(void **state)
{
	sweep_setup(0, keep_zygote, zygote_killed);
	put_proc(700, 'S', getuid());
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 0);
	assert_int_equal(kills, 0);
}

/* Processes that survive the kill: bounded rounds, then it gives up. */
static void
test_bounded_rounds(void **state)
{
	dies_on_kill = 0;
	put_proc(800, 'S', getuid());
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), SWEEP_ROUNDS);
	assert_int_equal(kills, SWEEP_ROUNDS);
	assert_int_equal(killed_calls, 1);
}

/* A leftover that ends by itself within the grace costs no kill. */
static void *
drop_later(void *arg)
{
	clock_sleep_ms(20);
	drop_proc(900);
	return NULL;
}

static void
test_grace(void **state)
{
	pthread_t	 t;

	put_proc(4242, 'S', getuid());
	put_proc(900, 'S', getuid());
	assert_int_equal(pthread_create(&t, NULL, drop_later, NULL), 0);
	sweep_run_begin();
	assert_int_equal(sweep_run_end(), 0);
	pthread_join(t, NULL);
	assert_int_equal(kills, 0);
	assert_int_equal(killed_calls, 0);
}

/* The tests run as root: the setting must be refused, saying why. */
static void
test_refused_as_root(void **state)
{
	char	 why[512];

	if (getuid() != 0 && geteuid() != 0)
		skip();
	assert_int_equal(sweep_refused(why, sizeof(why)), 1);
	assert_non_null(strstr(why, "root"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nothing_left, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zombies_and_others_ignored,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_leftovers_killed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_leftovers_without_zygote,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_waits_for_last_run, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_spare_spared, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_waiters_spared, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounded_rounds, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_grace, setup, teardown),
		cmocka_unit_test(test_refused_as_root),
	};

	log_init("test", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
