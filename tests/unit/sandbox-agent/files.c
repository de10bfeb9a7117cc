/*
 * Unit tests for sandbox-agent/files.c (receiving, listing, the link
 * tools) and for the name cleaning of common/fileweb.c.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../sandbox-agent/files.c"

static struct agent_config	 cfg;
static char			 root[] = "/tmp/viv-files-XXXXXX";

static int
setup(void **state)
{
	char cmd[512];

	memset(&cfg, 0, sizeof(cfg));
	assert_non_null(mkdtemp(root));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/ws/d %s/out && echo secret > "
	    "%s/out/s && echo hi > %s/ws/d/t.txt && ln -s ../out/s %s/ws/l && "
	    "mkdir -p %s/ws/.vivarium && echo x > %s/ws/.vivarium/ns",
	    root, root, root, root, root, root, root);
	assert_int_equal(system(cmd), 0);
	cfg.workdir = root;
	cfg.upload_max = 100;
	cfg.link_max_lifetime = 7 * 86400;
	cfg.download_lifetime = 86400;
	cfg.upload_lifetime = 3600;
	files_init(&cfg);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static void
ws_path(char *out, size_t len)
{
	snprintf(out, len, "%s/ws", root);
}

static void
test_clean_name(void **state)
{
	static const struct { const char *in, *out; } v[] = {
		{ "report.xlsx", "report.xlsx" },
		{ "../../etc/passwd", "passwd" },
		{ "C:\\Users\\me\\bank.csv", "bank.csv" },
		{ "/etc/shadow", "shadow" },
		{ ".vivarium", "vivarium" },
		{ "..", "upload" },
		{ "", "upload" },
		{ " . ", "upload" },
		{ "a\x01\x1f\x7f" "b.txt", "ab.txt" },
		{ "bad\xff\xfe.csv", "bad__.csv" },
		{ "Äpfel – Übersicht.csv", "Äpfel – Übersicht.csv" },
		{ "name. ", "name" },
		/* Bidi and zero-width characters, the BOM, C1: removed. */
		{ "rtl\xe2\x80\xaegpj.exe", "rtlgpj.exe" },		/* U+202E */
		{ "pay\xe2\x80\x8bpal.pdf", "paypal.pdf" },		/* U+200B */
		{ "\xef\xbb\xbf" "data.csv", "data.csv" },		/* U+FEFF */
		{ "a\xe2\x81\xa6" "b\xe2\x81\xa9.txt", "ab.txt" },	/* U+2066/9 */
		{ "x\xc2\x85y\xc2\xad.txt", "xy.txt" },		/* NEL, SHY */
		{ "\xe2\x80\x8f.bashrc", "bashrc" },	/* then no hidden file */
		{ "\xe2\x80\xae\xe2\x80\x8b", "upload" },
		{ "caf\xc3\xa9\xe2\x80\x8c.txt", "caf\xc3\xa9.txt" },
	};
	char	 out[256], longname[600];
	size_t	 i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		fw_clean_name(v[i].in, out, sizeof(out));
		assert_string_equal(out, v[i].out);
	}
	/* Long names keep their extension and stay valid UTF-8. */
	memset(longname, 0, sizeof(longname));
	for (i = 0; i + 2 < 500; i += 2)
		memcpy(longname + i, "\xc3\xa9", 2);
	memcpy(longname + strlen(longname), ".parquet", 9);
	fw_clean_name(longname, out, sizeof(out));
	assert_true(strlen(out) <= 200);
	assert_non_null(strstr(out, ".parquet"));
	{
		char again[256];

		fw_clean_name(out, again, sizeof(again));
		assert_string_equal(again, out);	/* valid: unchanged */
	}
}

/*
 * fw_upload_write: a file written in uneven pieces across several flush
 * points arrives whole; past the cap nothing more is written (413); a full
 * disk is a 507 that says so; a descriptor the kernel cannot flush ahead
 * (a character device) still takes the bytes.
 */
static void
test_upload_write(void **state)
{
	static char		 piece[1000003];
	struct berr		 e;
	struct stat		 st;
	unsigned long long	 written = 0;
	char			 path[PATH_MAX], b[3];
	size_t			 i, total = 2 * FW_FLUSH_AHEAD + 3, n;
	int			 fd;

	for (i = 0; i < sizeof(piece); i++)
		piece[i] = (char)(i % 251);
	snprintf(path, sizeof(path), "%s/up.part", root);
	assert_true((fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)) >= 0);
	for (i = 0; i < total; i += n) {
		n = total - i < sizeof(piece) ? total - i : sizeof(piece);
		assert_int_equal(fw_upload_write(fd, "up.bin", piece, n,
		    &written, total, &e), 0);
	}
	assert_int_equal(written, total);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal((size_t)st.st_size, total);
	/* The last 3 bytes: piece[total % sizeof(piece) - 3 ...]. */
	assert_int_equal(pread(fd, b, 3, (off_t)total - 3), 3);
	n = total % sizeof(piece);
	assert_memory_equal(b, piece + n - 3, 3);

	memset(&e, 0, sizeof(e));
	assert_int_equal(fw_upload_write(fd, "up.bin", piece, 1, &written,
	    total, &e), -1);
	assert_int_equal(e.status, 413);
	assert_non_null(strstr(e.msg, "up.bin is larger than the limit"));
	assert_int_equal(written, total);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal((size_t)st.st_size, total);
	close(fd);
	unlink(path);

	assert_true((fd = open("/dev/full", O_WRONLY)) >= 0);
	written = 0;
	memset(&e, 0, sizeof(e));
	assert_int_equal(fw_upload_write(fd, "up.bin", piece, 10, &written,
	    total, &e), -1);
	assert_int_equal(e.status, 507);
	assert_non_null(strstr(e.msg, "the workspace is full"));
	close(fd);

	assert_true((fd = open("/dev/null", O_WRONLY)) >= 0);
	written = 0;
	for (i = 0; i < FW_FLUSH_AHEAD + 1; i += n) {
		n = FW_FLUSH_AHEAD + 1 - i < sizeof(piece) ?
		    FW_FLUSH_AHEAD + 1 - i : sizeof(piece);
		assert_int_equal(fw_upload_write(fd, "up.bin", piece, n,
		    &written, total, &e), 0);
	}
	assert_int_equal(written, FW_FLUSH_AHEAD + 1);
	close(fd);
}

static void
test_put_never_overwrites(void **state)
{
	struct berr	 e;
	char		 ws[300], p[400], buf[16];
	void		*h;
	json_t		*r;
	FILE		*f;
	int		 i;

	ws_path(ws, sizeof(ws));
	for (i = 0; i < 3; i++) {
		memset(&e, 0, sizeof(e));
		assert_non_null(h = ws_put_begin(ws, "t.txt", &e));
		assert_int_equal(ws_put_write(h, "new", 3, &e), 0);
		assert_non_null(r = ws_put_end(h, &e));
		assert_string_equal(json_string_value(json_object_get(r,
		    "path")), i == 0 ? "t.txt" : i == 1 ? "t (2).txt" :
		    "t (3).txt");
		assert_int_equal(json_is_true(json_object_get(r, "renamed")),
		    i > 0);
		json_decref(r);
	}
	/* The note for the footer has all three. */
	snprintf(p, sizeof(p), "%s/.vivarium/uploaded", ws);
	assert_non_null(f = fopen(p, "r"));
	assert_non_null(fgets(buf, sizeof(buf), f));
	assert_string_equal(buf, "t.txt\t3\n");
	fclose(f);
}

static int
count_entries(const char *dir)
{
	DIR		*d = opendir(dir);
	struct dirent	*de;
	int		 n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void
test_put_abort_and_cap_leave_nothing(void **state)
{
	struct berr	 e;
	char		 ws[300], tmp[400], big[101];
	void		*h;
	int		 before;

	ws_path(ws, sizeof(ws));
	snprintf(tmp, sizeof(tmp), "%s/%s", ws, TMP_DIR);
	before = count_entries(ws);
	assert_non_null(h = ws_put_begin(ws, "cut.csv", &e));
	assert_int_equal(ws_put_write(h, "half", 4, &e), 0);
	ws_put_abort(h);
	assert_int_equal(count_entries(ws), before);
	assert_int_equal(count_entries(tmp), 0);
	/* Over upload_max: refused with 413, and nothing stays. */
	memset(big, 'x', sizeof(big));
	assert_non_null(h = ws_put_begin(ws, "big.bin", &e));
	assert_int_equal(ws_put_write(h, big, sizeof(big), &e), -1);
	assert_int_equal(e.status, 413);
	ws_put_abort(h);
	assert_int_equal(count_entries(ws), before);
	assert_int_equal(count_entries(tmp), 0);
}

static void
test_list_and_open(void **state)
{
	struct berr	 e;
	struct fw_reader r;
	char		 ws[300];
	json_t		*l, *f;
	size_t		 i;

	ws_path(ws, sizeof(ws));
	memset(&e, 0, sizeof(e));
	assert_non_null(l = ws_list(ws, &e));
	json_array_foreach(json_object_get(l, "files"), i, f) {
		const char *p = json_string_value(json_object_get(f, "path"));

		/* No state dir, no symlink. */
		assert_null(strstr(p, ".vivarium"));
		assert_string_not_equal(p, "l");
	}
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(l, "files"), 0), "path")), "d/t.txt");
	json_decref(l);

	memset(&r, 0, sizeof(r));
	assert_int_equal(ws_open(ws, "d/t.txt", &r, &e), 0);
	assert_int_equal(r.size, 3);
	close(r.fd);
	assert_int_equal(ws_open(ws, "l", &r, &e), -1);
	assert_int_equal(e.status, 403);
	assert_int_equal(ws_open(ws, "../out/s", &r, &e), -1);
	assert_int_equal(ws_open(ws, ".vivarium/ns", &r, &e), -1);
	assert_int_equal(ws_open(ws, "nope", &r, &e), -1);
	assert_int_equal(e.status, 404);
}

/*
 * A workspace whose full listing would pass FW_LIST_MAX as JSON: 1000
 * names of 200 bytes, control characters most of them (6 bytes each as
 * JSON).  The listing stops in time and says it did.
 */
static void
test_list_bounded(void **state)
{
	struct berr	 e;
	char		 dir[300], name[256];
	json_t		*l;
	char		*dump;
	int		 dfd, fd, i;

	snprintf(dir, sizeof(dir), "%s/big", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_true((dfd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
	for (i = 0; i < 1000; i++) {
		memset(name, '\x01', 200);
		snprintf(name, sizeof(name), "%04d", i);
		name[4] = '\x01';
		name[200] = '\0';
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	close(dfd);
	memset(&e, 0, sizeof(e));
	assert_non_null(l = ws_list(dir, &e));
	assert_non_null(dump = json_dumps(l, JSON_COMPACT));
	assert_true(strlen(dump) <= FW_LIST_MAX);
	assert_true(json_is_true(json_object_get(l, "truncated")));
	/* As many as fit, not a handful. */
	assert_true(json_array_size(json_object_get(l, "files")) > 800);
	free(dump);
	json_decref(l);
}

/*
 * The page lists what list_files lists: past WS_WALK_MAX_DEPTH levels
 * (the same walk) it stops, and says so.
 */
static void
test_list_depth_bound(void **state)
{
	struct berr	 e;
	char		 dir[300], path[600];
	json_t		*l;
	size_t		 len;
	int		 i;

	snprintf(dir, sizeof(dir), "%s/deep", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	len = (size_t)snprintf(path, sizeof(path), "%s", dir);
	for (i = 0; i < WS_WALK_MAX_DEPTH + 1; i++) {
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/d");
		assert_int_equal(mkdir(path, 0700), 0);
		if (i == WS_WALK_MAX_DEPTH - 2 || i == WS_WALK_MAX_DEPTH - 1) {
			snprintf(path + len, sizeof(path) - len, "/f");
			close(open(path, O_WRONLY | O_CREAT, 0600));
			path[len] = '\0';
		}
	}
	memset(&e, 0, sizeof(e));
	assert_non_null(l = ws_list(dir, &e));
	assert_true(json_is_true(json_object_get(l, "truncated")));
	/* The f at level WS_WALK_MAX_DEPTH is listed, the one below not. */
	assert_int_equal(json_array_size(json_object_get(l, "files")), 1);
	json_decref(l);
}

static const char *
text_of(json_t *r)
{
	return json_string_value(json_object_get(json_array_get(
	    json_object_get(r, "content"), 0), "text"));
}

static void
test_share_tool(void **state)
{
	struct agent_ctx ctx;
	struct link	 l;
	char		 ws[300];
	const char	*url, *tok;
	json_t		*args, *r;

	ws_path(ws, sizeof(ws));
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = &cfg;
	ctx.workspace = ws;

	/* No key: a plain refusal, no link. */
	args = json_pack("{s:s}", "path", "d/t.txt");
	r = files_tool_share(&ctx, args);
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_non_null(strstr(text_of(r), "not set up"));
	json_decref(r);

	memset(cfg.link_keys.master, 7, sizeof(cfg.link_keys.master));
	cfg.link_keys.have_master = 1;
	cfg.links = 1;
	files_listening("0.0.0.0", 8000);
	r = files_tool_share(&ctx, args);
	assert_false(json_is_true(json_object_get(r, "isError")));
	url = json_string_value(json_object_get(json_object_get(r,
	    "structuredContent"), "url"));
	assert_non_null(url);
	assert_int_equal(strncmp(url, "http://127.0.0.1:8000/f/", 24), 0);
	assert_non_null(strstr(text_of(r), "[t.txt]("));
	assert_non_null(strstr(text_of(r), "Give this link to the user"));
	tok = url + 24;
	assert_int_equal(link_verify(&cfg.link_keys, tok, (size_t)(strchr(tok,
	    '/') - tok), time(NULL), cfg.link_max_lifetime, &l), LINK_OK);
	assert_string_equal(l.path, "d/t.txt");
	assert_string_equal(l.user, "local");
	json_decref(r);
	json_decref(args);

	/* The read_text_file rules, and the lifetime cap. */
	{
		static const char *bad[] = { "../out/s", "/etc/passwd", "l",
		    ".vivarium/ns", "d", "missing.csv" };
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			args = json_pack("{s:s}", "path", bad[i]);
			r = files_tool_share(&ctx, args);
			assert_true(json_is_true(json_object_get(r, "isError")));
			assert_null(json_object_get(r, "structuredContent"));
			json_decref(r);
			json_decref(args);
		}
	}
	args = json_pack("{s:s, s:i}", "path", "d/t.txt", "lifetime_hours",
	    1000);
	r = files_tool_share(&ctx, args);
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_non_null(strstr(text_of(r), "longer than"));
	json_decref(r);
	json_decref(args);

	args = json_object();
	r = files_tool_upload(&ctx, args, NULL);
	assert_non_null(strstr(json_string_value(json_object_get(
	    json_object_get(r, "structuredContent"), "url")), "/up/"));
	json_decref(r);
	r = files_tool_workspace(&ctx, args);
	assert_non_null(strstr(json_string_value(json_object_get(
	    json_object_get(r, "structuredContent"), "url")), "/ws/"));
	json_decref(r);
	json_decref(args);
}

/* upload_link by URL elicitation: asks once, answers what arrived. */
static void
test_upload_elicit(void **state)
{
	struct agent_ctx	 ctx;
	struct rpc_error	 err;
	struct elicit_state	 st;
	struct berr		 e;
	char			 ws[300], other[300], name[64];
	const char		*id, *id_gone = "0123456789abcdef0123456789abcdef";
	json_t			*args, *r, *el;
	void			*h;
	int			 i;

	ws_path(ws, sizeof(ws));
	snprintf(other, sizeof(other), "%s/out", root);
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = &cfg;
	ctx.workspace = ws;
	args = json_object();
	elicit_reset();

	/* Without the capability: today's link, nothing remembered. */
	memset(&err, 0, sizeof(err));
	assert_non_null(r = files_tool_upload(&ctx, args, &err));
	assert_non_null(strstr(text_of(r), "[Upload files](http://"));
	json_decref(r);
	assert_int_equal(elicit_find(ws, &st), -1);

	/* With it: -32042 and the signed upload page. */
	ctx.client = CLIENT_ELICIT_URL;
	assert_null(files_tool_upload(&ctx, args, &err));
	assert_int_equal(err.code, RPC_URL_ELICITATION);
	el = json_array_get(json_object_get(err.data, "elicitations"), 0);
	assert_string_equal(json_string_value(json_object_get(el, "mode")),
	    "url");
	id = json_string_value(json_object_get(el, "elicitationId"));
	assert_int_equal(strlen(id), 32);
	assert_int_equal(strncmp(json_string_value(json_object_get(el, "url")),
	    "http://127.0.0.1:8000/up/", 25), 0);
	assert_int_equal(elicit_find_id(ws, id, &st), 0);
	assert_int_equal(elicit_find_id(ws, "0123456789abcdef0123456789abcdef",
	    &st), -1);				/* bogus */
	assert_int_equal(elicit_find_id(other, id, &st), -1); /* another's */
	assert_int_equal(elicit_find_id(ws, NULL, &st), -1);

	/* An upload to another workspace is not this one's. */
	memset(&e, 0, sizeof(e));
	assert_non_null(h = ws_put_begin(other, "x.csv", &e));
	json_decref(ws_put_end(h, &e));
	assert_int_equal(elicit_find(ws, &st), 0);
	assert_int_equal(st.nfiles, 0);

	/* The user uploads; the retry (other arguments alike) lists it. */
	assert_non_null(h = ws_put_begin(ws, "data.csv", &e));
	assert_int_equal(ws_put_write(h, "a,b\n", 4, &e), 0);
	json_decref(ws_put_end(h, &e));
	json_decref(err.data);
	memset(&err, 0, sizeof(err));
	json_object_set_new(args, "lifetime_hours", json_integer(2));
	assert_non_null(r = files_tool_upload(&ctx, args, &err));
	assert_false(json_is_true(json_object_get(r, "isError")));
	assert_non_null(strstr(text_of(r), "- data.csv (4 bytes)"));
	assert_non_null(strstr(text_of(r), "/workspace"));
	json_decref(r);
	assert_int_equal(elicit_find(ws, &st), -1);	/* taken */

	/* Asked again; the retry finds nothing: says so with the link, once. */
	assert_null(files_tool_upload(&ctx, args, &err));
	json_decref(err.data);
	memset(&err, 0, sizeof(err));
	assert_non_null(r = files_tool_upload(&ctx, args, &err));
	assert_non_null(strstr(text_of(r), "uploaded nothing"));
	assert_non_null(strstr(text_of(r), "[Upload files](http://"));
	json_decref(r);
	assert_null(files_tool_upload(&ctx, args, &err));	/* a new card */
	json_decref(err.data);

	/* A 2026-07-28 retry whose card is gone: the link, no new card. */
	elicit_reset();
	ctx.input_responses = json_pack("{s:{s:s}}", id_gone, "action",
	    "accept");
	memset(&err, 0, sizeof(err));
	assert_non_null(r = files_tool_upload(&ctx, args, &err));
	assert_int_equal(err.code, 0);
	assert_non_null(strstr(text_of(r), "[Upload files](http://"));
	json_decref(r);
	assert_int_equal(elicit_find(ws, &st), -1);
	json_decref(ctx.input_responses);
	ctx.input_responses = NULL;

	/* Expired: gone. */
	assert_int_equal(elicit_begin(ws, "http://x/up/t", "m", time(NULL) - 1,
	    &el), 0);
	json_decref(el);
	assert_int_equal(elicit_find(ws, &st), -1);

	/* Bounded: the oldest goes when more workspaces than ELICIT_MAX ask. */
	elicit_reset();
	for (i = 0; i <= ELICIT_MAX; i++) {
		snprintf(name, sizeof(name), "/w/%d", i);
		assert_int_equal(elicit_begin(name, "http://x/up/t", "m",
		    time(NULL) + 60 + (i == 0 ? 0 : 1), &el), 0);
		json_decref(el);
		if (i == 0)
			sleep(1);		/* the oldest by its birth */
	}
	assert_int_equal(elicit_find("/w/0", &st), -1);
	assert_int_equal(elicit_find("/w/1", &st), 0);
	snprintf(name, sizeof(name), "/w/%d", ELICIT_MAX);
	assert_int_equal(elicit_find(name, &st), 0);
	/* Many files: the first ELICIT_FILES by name, the rest counted. */
	for (i = 0; i < ELICIT_FILES + 3; i++)
		elicit_arrived("/w/1", "f", 1);
	assert_int_equal(elicit_find("/w/1", &st), 0);
	assert_int_equal(st.nfiles, ELICIT_FILES);
	assert_int_equal(st.more, 3);
	elicit_reset();
	json_decref(args);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_name),
		cmocka_unit_test(test_upload_write),
		cmocka_unit_test(test_put_never_overwrites),
		cmocka_unit_test(test_put_abort_and_cap_leave_nothing),
		cmocka_unit_test(test_list_and_open),
		cmocka_unit_test(test_list_bounded),
		cmocka_unit_test(test_list_depth_bound),
		cmocka_unit_test(test_share_tool),
		cmocka_unit_test(test_upload_elicit),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
