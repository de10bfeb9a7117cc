/*
 * pool.c driven by a fake backend (backend.h): the seam is all pool.c
 * knows of where sandboxes run.  Concurrent first requests for one user
 * call ensure once; the idle reaper calls stop; a down backend is a 503;
 * adopt takes what list says; manual provisioning asks registered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include <cmocka.h>

#include "../../../supervisor/pool.c"

static struct conf	 cf;

/* What the fake was asked, and how it answers. */
static struct {
	pthread_mutex_t	 mu;
	int		 ensures, stops, used, registered_asks;
	int		 fail_status;	/* ensure fails with it; -1: succeeds */
	const char	*registered;	/* the one user registered */
} fake = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
count(int *n)
{
	pthread_mutex_lock(&fake.mu);
	(*n)++;
	pthread_mutex_unlock(&fake.mu);
}

static int
fk_ensure(struct backend *b, const char *user, int *created,
    struct agent_addr *addr, struct berr *e)
{
	struct timespec	 ts = { 0, 100 * 1000000L };

	count(&fake.ensures);
	/* Slow, as a real start is: the other first requests pile up. */
	nanosleep(&ts, NULL);
	if (fake.fail_status != -1) {
		berr_set(e, fake.fail_status, "the fake is down");
		return -1;
	}
	*created = 1;
	memset(addr, 0, sizeof(*addr));
	addr->kind = AGENT_UNIX;
	snprintf(addr->path, sizeof(addr->path), "/fake/%s.sock", user);
	return 0;
}

static int
fk_stop(struct backend *b, const char *user, struct berr *e)
{
	count(&fake.stops);
	return 0;
}

static int
fk_registered(struct backend *b, const char *user, struct berr *e)
{
	count(&fake.registered_asks);
	return fake.registered != NULL && strcmp(user, fake.registered) == 0;
}

static int
fk_inspect(struct backend *b, const char *user, struct backend_info *out,
    struct berr *e)
{
	memset(out, 0, sizeof(*out));
	out->state = BK_MISSING;
	return 0;
}

static int
fk_list(struct backend *b, struct backend_sandbox **out, size_t *n,
    struct berr *e)
{
	static const struct backend_sandbox have[] = {
		{ "alice", BK_RUNNING },
		{ "bob", BK_STOPPED },
		{ "Not A User", BK_RUNNING },	/* a label no one may have */
	};

	if ((*out = malloc(sizeof(have))) == NULL)
		return -1;
	memcpy(*out, have, sizeof(have));
	*n = sizeof(have) / sizeof(have[0]);
	return 0;
}

static void
fk_label(struct backend *b, const char *user, char *dst, size_t len)
{
	snprintf(dst, len, "fake-%s", user);
}

static void
fk_used(struct backend *b, const char *user)
{
	count(&fake.used);
}

static struct backend	 fk = {
	.name = "fake",
	.ensure = fk_ensure,
	.stop = fk_stop,
	.registered = fk_registered,
	.inspect = fk_inspect,
	.list = fk_list,
	.label = fk_label,
	.used = fk_used,
};

static int
setup(void **state)
{
	memset(&cf, 0, sizeof(cf));
	cf.provisioning = PROV_AUTO;
	cf.idle_stop_after = 60;
	pthread_mutex_lock(&fake.mu);
	fake.ensures = fake.stops = fake.used = fake.registered_asks = 0;
	fake.fail_status = -1;
	fake.registered = NULL;
	pthread_mutex_unlock(&fake.mu);
	pool_init(&cf, &fk);
	return 0;
}

static int
teardown(void **state)
{
	pool_shutdown();
	return 0;
}

#define NTHREADS	8

static struct pool_entry	*got[NTHREADS];

static void *
first_request(void *arg)
{
	struct berr	 err;

	got[(intptr_t)arg] = pool_acquire("alice", 0, &err);
	return NULL;
}

static void
test_first_requests_ensure_once(void **state)
{
	pthread_t	 t[NTHREADS];
	long		 counts[SB_NSTATES];
	intptr_t	 i;

	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, first_request,
		    (void *)i), 0);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(fake.ensures, 1);
	for (i = 0; i < NTHREADS; i++) {
		assert_non_null(got[i]);
		assert_ptr_equal(got[i], got[0]);
	}
	/* The agent is where the backend said, not where pool.c guesses. */
	assert_int_equal(pool_addr(got[0])->kind, AGENT_UNIX);
	assert_string_equal(pool_addr(got[0])->path, "/fake/alice.sock");
	assert_int_equal(got[0]->inflight, NTHREADS);
	for (i = 0; i < NTHREADS; i++)
		pool_release(got[i]);
	/* Marked as each request began and as it ended (vivariumctl's
	 * idle time, upgrade's check). */
	assert_int_equal(fake.used, 2 * NTHREADS);
	pool_count_states(counts);
	assert_int_equal(counts[SB_READY], 1);
	/* A later request reuses it; one whose agent was gone does not. */
	got[0] = pool_acquire("alice", 0, &(struct berr){ 0 });
	assert_non_null(got[0]);
	pool_release(got[0]);
	assert_int_equal(fake.ensures, 1);
	got[0] = pool_acquire("alice", pool_gen(got[0]),
	    &(struct berr){ 0 });
	assert_non_null(got[0]);
	pool_release(got[0]);
	assert_int_equal(fake.ensures, 2);
}

static void
test_idle_stop(void **state)
{
	struct berr	 err;
	struct pool_entry	*sb;

	assert_non_null(sb = pool_acquire("carol", 0, &err));
	/* In use: never stopped, however long ago it was first used. */
	sb->last_used -= 3600;
	pool_reap();
	assert_int_equal(fake.stops, 0);
	pool_release(sb);
	pool_reap();
	assert_int_equal(fake.stops, 0);	/* just used */
	sb->last_used -= 3600;
	pool_reap();
	assert_int_equal(fake.stops, 1);
	assert_int_equal(sb->state, SB_STOPPED);
	/* The next request has the backend bring it back. */
	assert_non_null(pool_acquire("carol", 0, &err));
	assert_int_equal(fake.ensures, 2);
	pool_release(sb);
}

static void
test_backend_down(void **state)
{
	struct berr	 err;

	fake.fail_status = 0;
	assert_null(pool_acquire("dave", 0, &err));
	assert_int_equal(err.status, 503);
	assert_non_null(strstr(err.msg, "cannot be started right now"));
	assert_non_null(strstr(err.msg, "the fake is down"));
	fake.fail_status = 504;
	assert_null(pool_acquire("dave", 0, &err));
	assert_int_equal(err.status, 504);
	assert_int_equal(fake.ensures, 2);	/* a failure is not kept */
}

static void
test_adopt(void **state)
{
	struct berr	 err;
	struct pool_entry	*sb;
	long		 counts[SB_NSTATES];

	assert_int_equal(pool_adopt(), 0);
	pool_count_states(counts);
	assert_int_equal(counts[SB_READY], 1);		/* alice */
	assert_int_equal(counts[SB_STOPPED], 1);	/* bob */
	assert_int_equal(counts[SB_READY] + counts[SB_STOPPED]
	    + counts[SB_UNKNOWN], 2);			/* not "Not A User" */
	/* Adopted running: checked once by ensure, then reused. */
	assert_non_null(sb = pool_acquire("alice", 0, &err));
	pool_release(sb);
	assert_non_null(sb = pool_acquire("alice", 0, &err));
	pool_release(sb);
	assert_int_equal(fake.ensures, 1);
	assert_string_equal(pool_addr(sb)->path, "/fake/alice.sock");
}

static void
test_manual_provisioning(void **state)
{
	struct berr	 err;
	struct pool_entry	*sb;

	cf.provisioning = PROV_MANUAL;
	fake.registered = "erin";
	assert_null(pool_acquire("frank", 0, &err));
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.msg, "vivariumctl add-user frank"));
	assert_int_equal(fake.ensures, 0);
	assert_non_null(sb = pool_acquire("erin", 0, &err));
	pool_release(sb);
	assert_int_equal(fake.ensures, 1);
	assert_int_equal(fake.registered_asks, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_requests_ensure_once,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_down, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_adopt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_manual_provisioning, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
