/*
 * Unit tests for supervisor/sandbox.c's run directories: where they live
 * (<state_dir>/users/<user>, never next to the supervisor's own files) and
 * that an entry planted in their place (a link, a file, another owner's
 * directory) is refused, not followed, chowned or mounted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shell.h"

#include "../../../supervisor/sandbox.c"

static char	 tmp[] = "/tmp/viv-sb-test-XXXXXX";
static struct conf cf;


static int
setup(void **state)
{
	static char user[] = "1000:1000";

	assert_non_null(mkdtemp(tmp));
	memset(&cf, 0, sizeof(cf));
	cf.state_dir = tmp;
	cf.sandbox_user = user;
	return 0;
}

static int
teardown(void **state)
{
	sh("rm -rf %s", tmp);
	return 0;
}

/* rundir_make for user; 0 or -1 with the reason in why. */
static int
make(const char *user, char *why, size_t whylen)
{
	struct names	 n;
	struct perr	 e;

	memset(&e, 0, sizeof(e));
	assert_int_equal(sandbox_names(&cf, user, &n), 0);
	if (rundir_make(&cf, &n, &e) == -1) {
		snprintf(why, whylen, "%s", e.msg);
		return -1;
	}
	return 0;
}

static void
test_names_in_users(void **state)
{
	struct names	 n;
	char		 want[256];

	assert_int_equal(sandbox_names(&cf, "alice", &n), 0);
	snprintf(want, sizeof(want), "%s/users/alice", tmp);
	assert_string_equal(n.rundir, want);
	snprintf(want, sizeof(want), "%s/users/alice/agent.sock", tmp);
	assert_string_equal(n.sock, want);
}

/* A user named like a file of the supervisor's gets a directory of its
 * own; the file is neither handed over nor touched. */
static void
test_user_named_token(void **state)
{
	struct stat	 st;
	char		 p[256], why[512];

	sh("printf secret >%s/token && chmod 0600 %s/token", tmp, tmp);
	assert_int_equal(make("token", why, sizeof(why)), 0);
	snprintf(p, sizeof(p), "%s/token", tmp);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(p, sizeof(p), "%s/users/token", tmp);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	if (geteuid() == 0)
		assert_int_equal(st.st_uid, 1000);
	/* again: the directory made before is the sandbox user's, fine */
	assert_int_equal(make("token", why, sizeof(why)), 0);
}

static void
test_planted_entries_refused(void **state)
{
	struct stat	 st;
	char		 p[256], why[512];

	sh("mkdir -p %s/users %s/elsewhere && chmod 0755 %s/users && "
	    "ln -s ../elsewhere %s/users/mallory && "
	    "printf x >%s/users/eve && mkdir %s/users/trudy", tmp, tmp, tmp,
	    tmp, tmp, tmp);
	assert_int_equal(make("mallory", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "a symbolic link"));
	snprintf(p, sizeof(p), "%s/elsewhere", tmp);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, geteuid());	/* not handed over */
	assert_int_equal(make("eve", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "is not a directory (a file)"));
	if (geteuid() == 0) {
		sh("chown 4242 %s/users/trudy", tmp);
		assert_int_equal(make("trudy", why, sizeof(why)), -1);
		assert_non_null(strstr(why, "belongs to uid 4242"));
	}
	/* users/ itself a link: refused for everyone */
	sh("mv %s/users %s/users.old && ln -s elsewhere %s/users", tmp, tmp, tmp);
	assert_int_equal(make("alice", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "/users is not a directory"));
	sh("rm %s/users && mv %s/users.old %s/users", tmp, tmp, tmp);
	/* users/ writable by others: refused */
	sh("chmod 0777 %s/users", tmp);
	assert_int_equal(make("alice", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "writable by others"));
	sh("chmod 0755 %s/users", tmp);
	assert_int_equal(make("alice", why, sizeof(why)), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_in_users),
		cmocka_unit_test(test_user_named_token),
		cmocka_unit_test(test_planted_entries_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
