/*
 * Unit tests for sandbox-agent/wsdiff.c: which files count as the run's
 * output (new, modified, unchanged, deleted, symlinks, .vivarium at the top
 * and deeper down, the walk's bounds), and the footer lines said about them.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* Small, so a test can reach it. */
#define WS_WALK_MAX_ENTRIES	500
#include "../../../sandbox-agent/wsdiff.c"
#include "../../../sandbox-agent/workspace.c"	/* the walk */

static char	 ws[64];

#define PATHLEN	1024

static int
ws_new(void **state)
{
	snprintf(ws, sizeof(ws), "/tmp/vivarium-wsdiff-test-XXXXXX");
	return mkdtemp(ws) == NULL ? -1 : 0;
}

static int
ws_del(void **state)
{
	char	 cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ws);
	return system(cmd) == 0 ? 0 : -1;
}

static void
put(const char *rel, const char *data, time_t mtime)
{
	char		 path[PATHLEN];
	struct timespec	 ts[2];
	int		 fd;

	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
	if (mtime != 0) {
		ts[0].tv_sec = ts[1].tv_sec = mtime;
		ts[0].tv_nsec = ts[1].tv_nsec = 0;
		assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	}
}

static void
mkd(const char *rel)
{
	char	 path[PATHLEN];

	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void
lnk(const char *target, const char *rel)
{
	char	 path[PATHLEN];

	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	assert_int_equal(symlink(target, path), 0);
}

static int
has(const struct ws_snap *s, const char *path)
{
	size_t	 i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->files[i].path, path) == 0)
			return 1;
	return 0;
}

/* The footer lines for before -> now; the caller frees the text. */
static char *
footer(const struct ws_snap *before, struct ws_snap *after)
{
	const struct ws_file **ch = NULL;
	struct buf	 b = BUF_INIT(1 << 16);
	char		 err[256];
	ssize_t		 n;

	assert_int_equal(ws_snap_take(after, ws, err, sizeof(err)), 0);
	n = ws_snap_changed(before, after, &ch);
	assert_true(n >= 0);
	assert_int_equal(ws_footer(&b, ws, after,
	    (const struct ws_file *const *)ch, (size_t)n), 0);
	free(ch);
	return buf_detach(&b, NULL);
}

/* ---------------------------------------------------------------- changes */

static void
test_change_detection(void **state)
{
	struct ws_snap	 before = WS_SNAP_INIT, after = WS_SNAP_INIT;
	const struct ws_file **ch = NULL;
	char		 err[256], a[512], b[512];
	ssize_t		 n;

	mkd("sub");
	mkd("sub/deeper");
	mkd(".vivarium");
	mkd("sub/.vivarium");
	put("mod.png", "one", 1000);
	put("same.png", "same", 1000);
	put("touched.png", "xxxx", 1000);
	put("replaced.png", "rrrr", 1000);
	put("sneaky.png", "ssss", 1000);
	put("sub/gone.png", "gone", 1000);
	put("sub/deeper/keep.PNG", "k", 1000);
	put("notes.txt", "text", 1000);
	put(".vivarium/ns.png", "store", 1000);
	lnk("same.png", "alias.png");
	lnk("sub", "subalias");

	assert_int_equal(ws_snap_take(&before, ws, err, sizeof(err)), 0);
	assert_int_equal(before.n, 8);
	assert_true(has(&before, "sub/deeper/keep.PNG"));
	assert_true(has(&before, "notes.txt"));
	assert_false(has(&before, "alias.png"));
	assert_false(has(&before, ".vivarium/ns.png"));
	assert_false(has(&before, "subalias/gone.png"));
	assert_false(before.truncated);

	put("mod.png", "one more", 1000);		/* size changed */
	put("touched.png", "yyyy", 2000);		/* same size, new mtime */
	/* Same size and mtime, but a new file (inode) renamed over it. */
	put("replaced.tmp", "RRRR", 1000);
	snprintf(a, sizeof(a), "%s/replaced.tmp", ws);
	snprintf(b, sizeof(b), "%s/replaced.png", ws);
	assert_int_equal(rename(a, b), 0);
	snprintf(a, sizeof(a), "%s/sub/gone.png", ws);
	assert_int_equal(unlink(a), 0);
	/* Rewritten in place with its old size and mtime: the ctime tells. */
	put("sneaky.png", "SSSS", 1000);
	put("sub/new.png", "new", 3000);
	/* The runner's store is hidden; a .vivarium deeper down is the user's. */
	put(".vivarium/ns.png", "store 2", 4000);
	put("sub/.vivarium/x.png", "mine", 4000);
	lnk("sub/new.png", "newalias.png");
	put("new.txt", "not a png", 5000);

	assert_int_equal(ws_snap_take(&after, ws, err, sizeof(err)), 0);
	n = ws_snap_changed(&before, &after, &ch);
	assert_int_equal(n, 7);
	/* Newest first; equal times by path. */
	assert_string_equal(ch[0]->path, "new.txt");
	assert_string_equal(ch[1]->path, "sub/.vivarium/x.png");
	assert_string_equal(ch[2]->path, "sub/new.png");
	assert_string_equal(ch[3]->path, "touched.png");
	assert_string_equal(ch[4]->path, "mod.png");
	assert_string_equal(ch[5]->path, "replaced.png");
	assert_string_equal(ch[6]->path, "sneaky.png");
	free(ch);

	/* Nothing changed: nothing returned. */
	n = ws_snap_changed(&after, &after, &ch);
	assert_int_equal(n, 0);
	assert_null(ch);
	ws_snap_release(&before);
	ws_snap_release(&after);

	assert_int_equal(ws_snap_take(&before, "/nonexistent-ws", err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent-ws"));
}

static void
test_walk_depth_bound(void **state)
{
	struct ws_snap	 s = WS_SNAP_INIT;
	char		 rel[256], ten[300], err[256];
	size_t		 len = 0;
	int		 i;

	len = (size_t)snprintf(rel, sizeof(rel), "deep");
	mkd(rel);
	for (i = 0; i < WS_WALK_MAX_DEPTH + 2; i++) {
		len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/d");
		mkd(rel);
		if (i == 8)	/* ten levels down: deep/d/.../d */
			snprintf(ten, sizeof(ten), "%s/ten.png", rel);
	}
	snprintf(rel + len, sizeof(rel) - len, "/bottom.png");
	put(rel, "x", 0);
	put(ten, "x", 0);
	put("deep/top.png", "x", 0);
	assert_int_equal(ws_snap_take(&s, ws, err, sizeof(err)), 0);
	assert_true(has(&s, "deep/top.png"));
	assert_true(has(&s, ten));
	assert_false(has(&s, rel));
	assert_true(s.truncated);
	ws_snap_release(&s);
}

/*
 * Past the entry bound the count gets a "+", and a file the first walk
 * did not see is news only when it was written after that walk began.
 */
static void
test_walk_entry_bound(void **state)
{
	struct ws_snap	 before = WS_SNAP_INIT, after = WS_SNAP_INIT;
	char		 name[PATHLEN], err[256], want[PATHLEN + 32], *f;
	int		 i;

	mkd("many");
	for (i = 0; i < WS_WALK_MAX_ENTRIES + 10; i++) {
		snprintf(name, sizeof(name), "many/f%05d", i);
		put(name, "", 1000);
	}
	assert_int_equal(ws_snap_take(&before, ws, err, sizeof(err)), 0);
	assert_true(before.truncated);
	assert_true(before.n > 20);
	/* Five seen ones gone: the next walk reaches five old files
	 * the first did not see, which the run did not write. */
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "%s/%s", ws, before.files[i].path);
		assert_int_equal(unlink(name), 0);
	}
	f = footer(&before, &after);
	assert_null(strstr(f, "wrote:"));
	if (strstr(f, "+ files, newest: ") == NULL)
		fail_msg("%s", f);
	free(f);
	assert_true(after.truncated);
	/* One the walks see, rewritten: named. */
	snprintf(name, sizeof(name), "%s", after.files[0].path);
	ws_snap_release(&after);
	put(name, "new", 0);
	f = footer(&before, &after);
	snprintf(want, sizeof(want), "wrote: %s (3 B)\n", name);
	assert_non_null(strstr(f, want));
	free(f);
	ws_snap_release(&before);
	ws_snap_release(&after);
}

/* ---------------------------------------------------------------- footer */

static void
test_footer_lines(void **state)
{
	struct ws_snap	 before = WS_SNAP_INIT, after = WS_SNAP_INIT;
	char		 err[256], big[65537], *f;

	mkd("notes");
	put("ameco_rel.pkl", "xxxxxxxxxx", 1600000000);
	put("ameco_all.pkl", "xxxxxxxxxx", 1600000001);
	put("notes/readme.md", "xxxxxxxxxx", 1600000002);
	assert_int_equal(ws_snap_take(&before, ws, err, sizeof(err)), 0);
	f = footer(&before, &after);
	assert_string_equal(f, "workspace: 3 files, newest: notes/readme.md, "
	    "ameco_all.pkl, ameco_rel.pkl\n");
	free(f);
	ws_snap_release(&after);

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put("fx.png", big, 1700000001);
	put("notes/log.txt", "", 1700000000);
	f = footer(&before, &after);
	assert_string_equal(f,
	    "wrote: fx.png (64.0 KB), notes/log.txt (0 B)\n"
	    "to give the user a file: share_file(path) makes a download link "
	    "to put in your answer\n"
	    "workspace: 5 files, newest: fx.png, notes/log.txt, "
	    "notes/readme.md\n");
	free(f);
	ws_snap_release(&before);
	ws_snap_release(&after);

	/* Images alone reach the model: no hint. */
	assert_int_equal(ws_snap_take(&before, ws, err, sizeof(err)), 0);
	put("chart.PNG", "x", 1800000000);
	f = footer(&before, &after);
	assert_non_null(strstr(f, "wrote: chart.PNG (1 B)\n"));
	assert_null(strstr(f, "share_file"));
	free(f);
	ws_snap_release(&before);
	ws_snap_release(&after);
}

static void
test_footer_names_and_bounds(void **state)
{
	struct ws_snap	 before = WS_SNAP_INIT, after = WS_SNAP_INIT;
	char		 err[256], name[256], *f, *line, *nl;
	int		 i;

	assert_int_equal(ws_snap_take(&before, ws, err, sizeof(err)), 0);
	/* A newline would forge a footer line; bad bytes are not UTF-8. */
	put("two\nlines.txt", "1", 1700000003);
	put("bad-\xff.txt", "1", 1700000002);
	/* 90 characters (2 bytes each): cut to 79 and an ellipsis. */
	for (i = 0; i < 90; i++)
		memcpy(name + 2 * i, "\xc3\xa9", 2);
	memcpy(name + 180, ".txt", 5);
	put(name, "1", 1700000001);
	f = footer(&before, &after);
	line = strstr(f, "wrote: ");
	assert_non_null(line);
	nl = strchr(line, '\n');
	*nl = '\0';
	assert_non_null(strstr(line, "two\\x0alines.txt (1 B)"));
	assert_non_null(strstr(line, "bad-\\xff.txt (1 B)"));
	memcpy(name + 2 * 79, "\xe2\x80\xa6 (1 B)", 10);
	assert_non_null(strstr(line, name));
	free(f);
	ws_snap_release(&after);

	/* Many files: the line stays bounded and counts the rest. */
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "file_number_%03d.csv", i);
		put(name, "1", 1700000100 + i);
	}
	f = footer(&before, &after);
	line = strstr(f, "wrote: ");
	nl = strchr(line, '\n');
	*nl = '\0';
	assert_true(utf8_chars(line, strlen(line)) <= 7 + LIST_MAX);
	assert_non_null(strstr(line, "wrote: file_number_099.csv (1 B), "
	    "file_number_098.csv (1 B)"));
	assert_non_null(strstr(line, " more"));
	assert_non_null(strstr(line, ", \xe2\x80\xa6 "));
	free(f);
	ws_snap_release(&before);
	ws_snap_release(&after);
}

static void
test_footer_uploads_named_once(void **state)
{
	struct ws_snap	 before = WS_SNAP_INIT, after = WS_SNAP_INIT;
	char		 err[256], *f;

	mkd(".vivarium");
	put("bank.csv", "a,b\n", 1700000000);
	put(".vivarium/uploaded", "bank.csv\t12288\nbad line\n\t5\nx\t5z\n"
	    "sub/b\tc.csv\t3\n", 0);
	assert_int_equal(ws_snap_take(&before, ws, err, sizeof(err)), 0);
	f = footer(&before, &after);
	assert_non_null(strstr(f, "uploaded by the user since the last "
	    "call: bank.csv (12.0 KB), sub/b\\x09c.csv (3 B)\n"));
	free(f);
	ws_snap_release(&after);
	f = footer(&before, &after);
	assert_null(strstr(f, "uploaded"));
	free(f);
	ws_snap_release(&before);
	ws_snap_release(&after);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_change_detection, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_walk_depth_bound, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_walk_entry_bound, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_footer_lines, ws_new,
		    ws_del),
		cmocka_unit_test_setup_teardown(test_footer_names_and_bounds,
		    ws_new, ws_del),
		cmocka_unit_test_setup_teardown(test_footer_uploads_named_once,
		    ws_new, ws_del),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
