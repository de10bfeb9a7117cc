/*
 * Unit tests for sandbox-agent/workspace.c: user ids, path containment in
 * read_text_file (.., absolute paths, symlinks, symlinked parents, the
 * runner's state), text checks, truncation, the listing and the run lock.
 */
#include <errno.h>
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

#include "../../../sandbox-agent/workspace.c"

static char	 tmp[] = "/tmp/viv-ws-test-XXXXXX";
static char	 root[4200];

static void
put(const char *rel, const char *data, size_t len)
{
	char	 p[4300];
	FILE	*f;

	snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}


static int
setup(void **state)
{
	assert_non_null(mkdtemp(tmp));
	snprintf(root, sizeof(root), "%s/ws", tmp);
	sh("mkdir -p %s/ws/data/sub %s/outside %s/ws/.vivarium", tmp, tmp, tmp);
	put("outside/secret.txt", "secret\n", 7);
	put("ws/data/a.csv", "x,y\n1,2\n", 8);
	put("ws/.vivarium/ns.pkl", "state", 5);
	put("ws/bin.dat", "ab\0cd", 5);
	put("ws/latin1.txt", "caf\xe9\n", 5);
	put("ws/utf8.txt", "h\xc3\xa9llo w\xc3\xb6rld\n", 14);
	sh("ln -s ../outside %s/ws/out && ln -s ../outside/secret.txt "
	    "%s/ws/secret && ln -s data/a.csv %s/ws/inlink", tmp, tmp, tmp);
	return 0;
}

static int
teardown(void **state)
{
	sh("rm -rf %s", tmp);
	return 0;
}

/* read_text_file's result: 0 or -1, text in out or reason in err. */
static int
rd(const char *path, long max, struct buf *out, char *err)
{
	buf_reset(out);
	err[0] = '\0';
	return workspace_read_text(root, path, max, out, err, 512);
}

static void
test_user_ids(void **state)
{
	char long_id[80];

	assert_true(workspace_user_id_valid("alice"));
	assert_true(workspace_user_id_valid("A-b_c.9"));
	assert_true(workspace_user_id_valid("65f1b2c3d4e5f6a7b8c9d0e1"));
	assert_false(workspace_user_id_valid(""));
	assert_false(workspace_user_id_valid(".hidden"));
	assert_false(workspace_user_id_valid(".."));
	assert_false(workspace_user_id_valid("a/b"));
	assert_false(workspace_user_id_valid("a b"));
	assert_false(workspace_user_id_valid("é"));
	memset(long_id, 'a', 64);
	long_id[64] = '\0';
	assert_true(workspace_user_id_valid(long_id));
	long_id[64] = 'a';
	long_id[65] = '\0';
	assert_false(workspace_user_id_valid(long_id));
}

static void
test_user_dir(void **state)
{
	char out[4300], err[256];
	struct stat st;

	assert_int_equal(workspace_user_dir(root, "bob", out, sizeof(out), err,
	    sizeof(err)), 0);
	assert_non_null(strstr(out, "/ws/users/bob"));
	assert_int_equal(stat(out, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(workspace_user_dir(root, "../x", out, sizeof(out), err,
	    sizeof(err)), -1);
	/* A users/<id> that is a symlink is refused, not followed. */
	sh("ln -s ../../outside %s/ws/users/mallory", tmp);
	assert_int_equal(workspace_user_dir(root, "mallory", out, sizeof(out),
	    err, sizeof(err)), -1);
}

static void
test_read_plain(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20);
	char		 err[512];

	assert_int_equal(rd("data/a.csv", 100, &b, err), 0);
	assert_string_equal(buf_str(&b), "x,y\n1,2\n");
	assert_int_equal(rd("./data//a.csv", 100, &b, err), 0);
	assert_int_equal(rd("utf8.txt", 100, &b, err), 0);
	buf_release(&b);
}

static void
test_read_escapes_refused(void **state)
{
	static const char *const bad[] = {
		"../outside/secret.txt", "data/../../outside/secret.txt",
		"data/..", "..", "/etc/passwd", "out/secret.txt", "secret",
		"inlink", ".vivarium/ns.pkl", "./.vivarium/ns.pkl", "",
		"data", "data/", ".", "missing.txt", "data/a.csv/x",
		"data/a.csv/", "utf8.txt/", "utf8.txt//", "data/a.csv/.", NULL
	};
	struct buf	 b = BUF_INIT(1 << 20);
	char		 err[512];
	size_t		 i;

	for (i = 0; bad[i] != NULL; i++) {
		assert_int_equal(rd(bad[i], 100, &b, err), -1);
		assert_true(strlen(err) > 0);
		assert_null(strstr(buf_str(&b), "secret"));
	}
	rd("../outside/secret.txt", 100, &b, err);
	assert_non_null(strstr(err, "outside the workspace"));
	rd("/etc/passwd", 100, &b, err);
	assert_non_null(strstr(err, "absolute"));
	rd("out/secret.txt", 100, &b, err);
	assert_non_null(strstr(err, "symbolic link"));
	rd("secret", 100, &b, err);
	assert_non_null(strstr(err, "symbolic link"));
	rd("missing.txt", 100, &b, err);
	assert_non_null(strstr(err, "does not exist"));
	/* A trailing slash names a directory (POSIX): a file is not one. */
	rd("data/a.csv/", 100, &b, err);
	assert_string_equal(err, "'data/a.csv/': 'a.csv' is not a directory");
	rd("utf8.txt/", 100, &b, err);
	assert_string_equal(err, "'utf8.txt/': 'utf8.txt' is not a directory");
	rd("data/", 100, &b, err);
	assert_non_null(strstr(err, "is a directory"));
	buf_release(&b);
}

static void
test_read_binary_refused(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20);
	char		 err[512];

	assert_int_equal(rd("bin.dat", 100, &b, err), -1);
	assert_non_null(strstr(err, "binary"));
	assert_int_equal(rd("latin1.txt", 100, &b, err), -1);
	assert_non_null(strstr(err, "UTF-8"));
	buf_release(&b);
}

static void
test_read_truncation(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20);
	char		 err[512];

	/* 5 characters of "héllo wörld\n" (é is two bytes). */
	assert_int_equal(rd("utf8.txt", 5, &b, err), 0);
	assert_memory_equal(buf_str(&b), "h\xc3\xa9llo\n[truncated", 16);
	assert_non_null(strstr(buf_str(&b), "14 bytes"));
	/* Exactly the length: no marker. */
	assert_int_equal(rd("utf8.txt", 12, &b, err), 0);
	assert_null(strstr(buf_str(&b), "truncated"));
	buf_release(&b);
}

static void
test_utf8_scan(void **state)
{
	size_t	 cut;
	long	 n;
	char	 err[256];

	/* Overlong, surrogate and out-of-range sequences are not text. */
	assert_int_equal(text_scan((const unsigned char *)"\xc0\xaf", 2, 1, 10,
	    &cut, &n, err, sizeof(err)), -1);
	assert_int_equal(text_scan((const unsigned char *)"\xed\xa0\x80", 3, 1,
	    10, &cut, &n, err, sizeof(err)), -1);
	assert_int_equal(text_scan((const unsigned char *)"\xf4\x90\x80\x80", 4,
	    1, 10, &cut, &n, err, sizeof(err)), -1);
	/* A sequence cut by the read bound is fine when more follows. */
	assert_int_equal(text_scan((const unsigned char *)"ab\xe2\x82", 4, 0,
	    10, &cut, &n, err, sizeof(err)), 0);
	assert_int_equal(cut, 2);
	assert_int_equal(text_scan((const unsigned char *)"ab\xe2\x82", 4, 1,
	    10, &cut, &n, err, sizeof(err)), -1);
}

static void
test_list(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20);
	char		 err[256];

	assert_int_equal(workspace_list(root, &b, err, sizeof(err)), 0);
	assert_non_null(strstr(buf_str(&b), "data/a.csv  8 B\n"));
	assert_non_null(strstr(buf_str(&b), "data/sub/\n"));
	assert_non_null(strstr(buf_str(&b), "out  (symbolic link)"));
	assert_null(strstr(buf_str(&b), ".vivarium"));
	assert_null(strstr(buf_str(&b), "secret.txt"));
	buf_release(&b);
}

/* Names that are not UTF-8 (or hold control characters) are listed with
 * their bytes escaped and the line marked; the listing stays valid text. */
static void
test_list_names_not_utf8(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20);
	char		 err[256];
	size_t		 cut;
	long		 n;

	sh("mkdir -p %s/ws/odd/r$(printf '\\351')s && "
	    "printf abcd >%s/ws/odd/caf$(printf '\\351').csv && "
	    "printf x >%s/ws/odd/r$(printf '\\351')s/x.txt && "
	    "printf x >\"%s/ws/odd/two$(printf '\\nline').txt\" && "
	    "printf x >'%s/ws/odd/back\\x41slash.txt' && "
	    "printf x >%s/ws/odd/ok$(printf '\\303\\251').txt", tmp, tmp, tmp, tmp,
	    tmp, tmp);
	assert_int_equal(workspace_list(root, &b, err, sizeof(err)), 0);
	assert_non_null(strstr(buf_str(&b), "odd/caf\\xe9.csv  4 B  "
	    "[name not UTF-8: bytes shown as \\xNN]\n"));
	assert_non_null(strstr(buf_str(&b), "odd/r\\xe9s/  "
	    "[name not UTF-8: bytes shown as \\xNN]\n"));
	assert_non_null(strstr(buf_str(&b), "odd/r\\xe9s/x.txt  1 B  "
	    "[name not UTF-8: bytes shown as \\xNN]\n"));
	assert_non_null(strstr(buf_str(&b), "odd/two\\x0aline.txt  1 B  "
	    "[name not UTF-8: bytes shown as \\xNN]\n"));
	/* a backslash is itself only when nothing needed escaping */
	assert_non_null(strstr(buf_str(&b), "odd/back\\x41slash.txt  1 B\n"));
	assert_non_null(strstr(buf_str(&b), "odd/ok\xc3\xa9.txt  1 B\n"));
	assert_int_equal(text_scan((const unsigned char *)b.data, b.len, 1,
	    1 << 20, &cut, &n, err, sizeof(err)), 0);
	sh("rm -rf %s/ws/odd", tmp);
	buf_release(&b);
}

static void
test_list_bounded(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20);
	char		 err[256];

	sh("mkdir %s/ws/many && cd %s/ws/many && seq 1 1500 | xargs touch", tmp,
	    tmp);
	assert_int_equal(workspace_list(root, &b, err, sizeof(err)), 0);
	assert_non_null(strstr(buf_str(&b), "[listing cut after 1000 entries"));
	assert_true(b.len < 64 * 1024);
	sh("rm -rf %s/ws/many", tmp);
	buf_release(&b);
}

/* Each entry's path, with a '/' after a directory's; ends at "b.txt"
 * when told to. */
static int
walk_collect(void *arg, const struct ws_entry *e)
{
	struct buf *b = arg;

	buf_appendf(b, "%s%s\n", e->path, S_ISDIR(e->st->st_mode) ? "/" : "");
	return strcmp(e->path, "b.txt") == 0 && b->max == 4096 ? 7 : 0;
}

/*
 * The one walk: names in order, a directory before what it holds, links
 * and the runner's state never entered; what the callback returns ends it.
 */
static void
test_walk(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20), small = BUF_INIT(4096);
	char		 w[4300];
	int		 cut;

	snprintf(w, sizeof(w), "%s/walk", tmp);
	sh("mkdir -p %s/.vivarium %s/a/.vivarium %s/c && touch %s/b.txt "
	    "%s/a/z %s/a/.vivarium/s %s/.vivarium/s %s/c/y && ln -s a %s/link",
	    w, w, w, w, w, w, w, w, w);
	assert_int_equal(ws_walk(w, walk_collect, &b, &cut), 0);
	assert_false(cut);
	assert_string_equal(buf_str(&b), "a/\na/.vivarium/\na/.vivarium/s\n"
	    "a/z\nb.txt\nc/\nc/y\nlink\n");
	assert_int_equal(ws_walk(w, walk_collect, &small, &cut), 7);
	assert_string_equal(buf_str(&small), "a/\na/.vivarium/\n"
	    "a/.vivarium/s\na/z\nb.txt\n");
	assert_int_equal(ws_walk("/nonexistent-ws", walk_collect, &b, &cut), -1);
	assert_int_equal(errno, ENOENT);
	sh("rm -rf %s", w);
	buf_release(&b);
	buf_release(&small);
}

/* Past WS_WALK_MAX_DEPTH levels list_files says the walk stopped. */
static void
test_list_depth_bound(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20);
	char		 rel[256], err[256];
	size_t		 len;
	int		 i;

	len = (size_t)snprintf(rel, sizeof(rel), "%s/ws/deep", tmp);
	for (i = 1; i < WS_WALK_MAX_DEPTH + 2; i++)
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/d");
	sh("mkdir -p %s", rel);
	assert_int_equal(workspace_list(root, &b, err, sizeof(err)), 0);
	assert_non_null(strstr(buf_str(&b), "(the walk stopped early)"));
	/* deep is level 1: levels 1..WS_WALK_MAX_DEPTH are shown */
	len = (size_t)snprintf(rel, sizeof(rel), "\ndeep");
	for (i = 1; i < WS_WALK_MAX_DEPTH; i++)
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/d");
	snprintf(rel + len, sizeof(rel) - len, "/\n");
	assert_non_null(strstr(buf_str(&b), rel));
	snprintf(rel + len, sizeof(rel) - len, "/d/");
	assert_null(strstr(buf_str(&b), rel));
	sh("rm -rf %s/ws/deep", tmp);
	buf_release(&b);
}

static void
test_lock_reentry_after_release(void **state)
{
	struct wslock *a, *b;

	a = wslock_acquire("/w/1");
	b = wslock_acquire("/w/2");	/* another workspace: no wait */
	assert_non_null(a);
	assert_non_null(b);
	wslock_release(a);
	a = wslock_acquire("/w/1");
	wslock_release(a);
	wslock_release(b);
	assert_null(wslock_head);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_user_ids),
		cmocka_unit_test(test_user_dir),
		cmocka_unit_test(test_read_plain),
		cmocka_unit_test(test_read_escapes_refused),
		cmocka_unit_test(test_read_binary_refused),
		cmocka_unit_test(test_read_truncation),
		cmocka_unit_test(test_utf8_scan),
		cmocka_unit_test(test_list_names_not_utf8),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_list_bounded),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_list_depth_bound),
		cmocka_unit_test(test_lock_reentry_after_release),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
