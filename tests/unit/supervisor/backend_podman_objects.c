/*
 * Unit tests for supervisor/backend_podman_objects.c's run directories: where
 * they live (<state_dir>/users/<user>, never next to the supervisor's own
 * files) and that an entry planted in their place (a link, a file, another
 * owner's directory) is refused, not followed, chowned or mounted; how they are
 * owned (the supervisor's, the sandbox's group, sealed once the agent listens);
 * the state directory's mode; the id slots (idmap.c) and the workspace images
 * (quota.c).
 */
#include <sys/stat.h>
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

#include "../../../supervisor/backend_podman_objects.c"

static char	 tmp[] = "/tmp/viv-sb-test-XXXXXX";
static struct conf cf;
static struct sandbox_host host;	/* slot 0: no user namespace */


static int
setup(void **state)
{
	static char user[] = "1000:1000";

	assert_non_null(mkdtemp(tmp));
	memset(&cf, 0, sizeof(cf));
	cf.state_dir = tmp;
	cf.sandbox_user = user;
	cf.uid_base = DEF_UID_BASE;
	memset(&host, 0, sizeof(host));
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
	struct berr	 e;

	memset(&e, 0, sizeof(e));
	assert_int_equal(sandbox_names(&cf, user, &n), 0);
	if (rundir_make(&cf, &n, &host, &e) == -1) {
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
	if (geteuid() == 0) {
		/* ours, the sandbox's group may make its socket */
		assert_int_equal(st.st_mode & 0777, 0730);
		assert_int_equal(st.st_uid, 0);
		assert_int_equal(st.st_gid, 1000);
	} else
		assert_int_equal(st.st_mode & 0777, 0700);
	/* again: the directory made before is fine */
	assert_int_equal(make("token", why, sizeof(why)), 0);
}

/* With a slot, the group is the slot's mapping of the sandbox's gid; once
 * the agent listens the directory is sealed, and a directory the sandbox
 * user owned (an older supervisor's) is taken back. */
static void
test_rundir_slot_and_seal(void **state)
{
	struct names	 n;
	struct stat	 st;
	char		 why[512];

	if (geteuid() != 0)
		skip();
	host.slot = 3;
	assert_int_equal(make("alice", why, sizeof(why)), 0);
	assert_int_equal(sandbox_names(&cf, "alice", &n), 0);
	assert_int_equal(stat(n.rundir, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, DEF_UID_BASE + 3 * UID_RANGE + 1000);
	assert_int_equal(st.st_mode & 0777, 0730);
	rundir_seal(&cf, &n, &host);
	assert_int_equal(stat(n.rundir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0750);
	/* made again for the next start: writable by the group again */
	sh("chown %ld %s", (long)(DEF_UID_BASE + 3 * UID_RANGE + 1000),
	    n.rundir);
	assert_int_equal(make("alice", why, sizeof(why)), 0);
	assert_int_equal(stat(n.rundir, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 0777, 0730);
	host.slot = 0;
}

/* state_dir is made 0700, and one left open by hand is closed. */
static void
test_state_dir_0700(void **state)
{
	struct stat	 st;
	char		 fresh[256], why[512];

	sh("chmod 0755 %s", tmp);
	assert_int_equal(make("alice", why, sizeof(why)), 0);
	assert_int_equal(stat(tmp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	snprintf(fresh, sizeof(fresh), "%s/fresh", tmp);
	cf.state_dir = fresh;
	assert_int_equal(make("bob", why, sizeof(why)), 0);
	cf.state_dir = tmp;
	assert_int_equal(stat(fresh, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
}

/* Slots: one per user, stable, distinct, given back; never taken from a
 * directory someone else could write. */
static void
test_idmap_slots(void **state)
{
	struct berr	 e;
	long		 a, b, a2, none;
	char		 p[256], target[64];
	ssize_t		 len;

	assert_int_equal(idmap_slot(&cf, "alice", 0, &none, &e), 0);
	assert_int_equal(none, 0);
	assert_int_equal(idmap_slot(&cf, "alice", 1, &a, &e), 0);
	assert_int_equal(idmap_slot(&cf, "bob", 1, &b, &e), 0);
	assert_int_equal(a, 1);
	assert_int_equal(b, 2);
	assert_int_equal(idmap_slot(&cf, "alice", 1, &a2, &e), 0);
	assert_int_equal(a2, a);
	snprintf(p, sizeof(p), "%s/slots/1", tmp);
	len = readlink(p, target, sizeof(target) - 1);
	assert_true(len > 0);
	target[len] = '\0';
	assert_string_equal(target, "alice");
	assert_int_equal((long)idmap_host_id(&cf, b, 1000),
	    DEF_UID_BASE + 2 * UID_RANGE + 1000);
	/* a slot handed out twice (two programs at once): the lowest wins */
	sh("ln -s bob %s/slots/7", tmp);
	assert_int_equal(idmap_slot(&cf, "bob", 1, &b, &e), 0);
	assert_int_equal(b, 2);
	/* given back: the next user takes the lowest free one */
	assert_int_equal(idmap_release(&cf, "alice"), 0);
	assert_int_equal(idmap_slot(&cf, "alice", 0, &none, &e), 0);
	assert_int_equal(none, 0);
	assert_int_equal(idmap_slot(&cf, "carol", 1, &a, &e), 0);
	assert_int_equal(a, 1);
	/* a slots directory others may write is refused */
	sh("chmod 0777 %s/slots", tmp);
	assert_int_equal(idmap_slot(&cf, "dave", 1, &a, &e), -1);
	assert_non_null(strstr(e.msg, "refusing"));
	sh("chmod 0700 %s/slots", tmp);
	/* the last range that fits below 2^32 - 1 */
	assert_true(idmap_host_id(&cf, idmap_max_slot(&cf), UID_RANGE - 1)
	    < 4294967295UL);
}

/* A workspace image: sparse, ext4 of the size asked, its root the
 * sandbox's, no lost+found; made once; a planted link is refused. */
static void
test_quota_image(void **state)
{
	struct berr	 e;
	struct stat	 st;
	char		 path[256], why[256], cmd[1024];

	if (!quota_tools(why, sizeof(why)))
		skip();
	assert_int_equal(quota_image_ensure(&cf, "alice", 32ULL << 20, 4242,
	    4343, path, sizeof(path), &e), 1);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 32LL << 20);
	assert_true((long long)st.st_blocks * 512 < (8LL << 20));  /* sparse */
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(cmd, sizeof(cmd), "debugfs -R 'stat /' %s 2>/dev/null | "
	    "grep -q 'User:  4242   Group:  4343' && ! debugfs -R 'ls /' %s "
	    "2>/dev/null | grep -q lost+found", path, path);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(quota_image_ensure(&cf, "alice", 32ULL << 20, 4242,
	    4343, path, sizeof(path), &e), 0);
	sh("ln -s /etc/passwd %s/workspaces/mallory.img", tmp);
	assert_int_equal(quota_image_ensure(&cf, "mallory", 32ULL << 20, 1, 1,
	    path, sizeof(path), &e), -1);
	assert_non_null(strstr(e.msg, "is not a workspace image"));
	quota_image_remove(&cf, "alice");
	quota_image_path(&cf, "alice", path, sizeof(path));
	assert_int_equal(stat(path, &st), -1);
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
		cmocka_unit_test(test_rundir_slot_and_seal),
		cmocka_unit_test(test_state_dir_0700),
		cmocka_unit_test(test_idmap_slots),
		cmocka_unit_test(test_quota_image),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
