/*
 * Unit tests for egress-proxy/labels.c: the user labels file, parsed
 * strictly (bad lines, long lines and labels, too many entries, an
 * address twice, NUL bytes), IPv4 and IPv6 clients (an IPv4-mapped one is
 * its IPv4 address), and the file read again only when it changed, with
 * no labels at all while it is missing or bad.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../egress-proxy/labels.c"

#define ID	"665f0c2a9d3e4b1c8f7a6e5d"

static char	 path[] = "/tmp/egress-labels-XXXXXX";

/* Parses text; on success the table stays in *t. */
static int
parse(const char *text, size_t len, struct label **t, size_t *n, char *why)
{
	return labels_parse(text, len, t, n, why, 256);
}

static int
parses(const char *text)
{
	struct label	*t;
	size_t		 n;
	char		 why[256] = "";
	int		 r;

	r = parse(text, strlen(text), &t, &n, why);
	if (r == 0)
		free(t);
	else
		assert_true(strncmp(why, "line ", 5) == 0 ||
		    strstr(why, "twice") != NULL);
	return r;
}

static struct sockaddr_storage
client(const char *a)
{
	struct sockaddr_storage	 ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, a, &((struct sockaddr_in *)&ss)->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else {
		assert_int_equal(inet_pton(AF_INET6, a,
		    &((struct sockaddr_in6 *)&ss)->sin6_addr), 1);
		ss.ss_family = AF_INET6;
	}
	return ss;
}

/* The label labels_find gives the client at address a, "" for none. */
static const char *
find(const char *a)
{
	static char		 out[LABEL_MAX + 1];
	struct sockaddr_storage	 ss = client(a);

	if (labels_find(&ss, out, sizeof(out)) == 0)
		assert_string_equal(out, "");
	return out;
}

static void
write_file(const char *text)
{
	char	 tmp[64];
	FILE	*f;

	/* Replaced by rename, as the supervisor does: a new inode. */
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	assert_non_null(f = fopen(tmp, "w"));
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static void
test_good(void **state)
{
	struct label	*t;
	size_t		 n;
	char		 why[256];
	const char	*text =
	    "# written by vivarium-supervisor\n"
	    "\n"
	    "10.89.1.5 alice@example.org/" ID "\n"
	    "fd00:89:2::7 " ID "\n"
	    "10.89.0.3 Jos\xc3\xa9_Mar\xc3\xad" "a/" ID "\n"
	    "::ffff:10.89.3.3 mapped\n"
	    "10.89.4.4 last-without-newline";

	assert_int_equal(parse(text, strlen(text), &t, &n, why), 0);
	assert_int_equal(n, 5);
	free(t);
	/* Empty: no labels, and no error. */
	assert_int_equal(parse("", 0, &t, &n, why), 0);
	assert_int_equal(n, 0);
	free(t);
	assert_int_equal(parses("# only a comment\n"), 0);
}

static void
test_bad_lines(void **state)
{
	static const char *bad[] = {
		"10.89.1.5\n",			/* no label */
		"10.89.1.5 \n",
		"10.89.1.5  alice\n",		/* two spaces */
		" 10.89.1.5 alice\n",
		"10.89.1.5 alice \n",
		"10.89.1.5\talice\n",
		"10.89.1.5 alice bob\n",
		"10.89.1.5 alice\r\n",		/* CR: a control character */
		"10.89.1.5 al\"ice\n",
		"10.89.1.5 al\\ice\n",
		"10.89.1.5 al\x1b[31mice\n",
		"10.89.1.5 al\x7fice\n",
		"10.89.1.5 al\xe2\x80\xaeice\n",	/* U+202E, bidi override */
		"10.89.1.5 al\xc2\x85ice\n",	/* U+0085, C1 */
		"10.89.1.5 al\xffice\n",		/* not UTF-8 */
		"10.89.1.5 al\xc3\n",		/* cut off */
		"10.89.1.256 alice\n",
		"10.89.1 alice\n",
		"010.89.1.5 alice\n",
		"10.89.1.5/32 alice\n",
		"[fd00::1] alice\n",
		"fd00::1%eth0 alice\n",
		"alice 10.89.1.5\n",
		"localhost alice\n",
		"= alice\n",
		"# fine\nnonsense\n",
	};
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parses(bad[i]) != -1)
			fail_msg("taken: %s", bad[i]);
	}
}

static void
test_nul(void **state)
{
	static const char a[] = "10.89.1.5 alice\0bob\n";
	static const char b[] = "10.89.1.5\0junk alice\n";
	static const char c[] = "# comment\0\n10.89.1.5 alice\n";
	struct label	*t;
	size_t		 n;
	char		 why[256];

	assert_int_equal(parse(a, sizeof(a) - 1, &t, &n, why), -1);
	assert_string_equal(why, "line 1: a NUL byte");
	assert_int_equal(parse(b, sizeof(b) - 1, &t, &n, why), -1);
	assert_int_equal(parse(c, sizeof(c) - 1, &t, &n, why), -1);
	assert_null(t);
}

static void
test_long(void **state)
{
	char		 line[LABELS_LINE_MAX + 64], label[LABEL_MAX + 2];
	struct label	*t;
	size_t		 n;
	char		 why[256];

	/* A label of LABEL_MAX bytes is taken, one more is not. */
	memset(label, 'a', LABEL_MAX);
	label[LABEL_MAX] = '\0';
	snprintf(line, sizeof(line), "10.89.1.5 %s\n", label);
	assert_int_equal(parses(line), 0);
	label[LABEL_MAX] = 'a';
	label[LABEL_MAX + 1] = '\0';
	snprintf(line, sizeof(line), "10.89.1.5 %s\n", label);
	assert_int_equal(parse(line, strlen(line), &t, &n, why), -1);
	assert_non_null(strstr(why, "longer than 128 bytes"));
	/* So is a line past LABELS_LINE_MAX, a comment too. */
	memset(line, '#', sizeof(line));
	line[LABELS_LINE_MAX] = '\n';
	assert_int_equal(parse(line, LABELS_LINE_MAX + 1, &t, &n, why), 0);
	free(t);
	line[LABELS_LINE_MAX] = '#';
	line[LABELS_LINE_MAX + 1] = '\n';
	assert_int_equal(parse(line, LABELS_LINE_MAX + 2, &t, &n, why), -1);
	assert_string_equal(why, "line 1: longer than 255 bytes");
	/* An address longer than any. */
	snprintf(line, sizeof(line), "%s alice\n",
	    "0000:0000:0000:0000:0000:0000:0000:0000:0000");
	assert_int_equal(parses(line), -1);
}

static void
test_too_many(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20);
	struct label	*t;
	size_t		 n;
	char		 why[256];
	int		 i;

	for (i = 0; i < LABELS_MAX; i++)
		assert_int_equal(buf_appendf(&b, "10.%d.%d.5 u%d\n", i / 256,
		    i % 256, i), 0);
	assert_int_equal(parse(b.data, b.len, &t, &n, why), 0);
	assert_int_equal(n, LABELS_MAX);
	free(t);
	assert_int_equal(buf_appendf(&b, "11.0.0.1 one-more\n"), 0);
	assert_int_equal(parse(b.data, b.len, &t, &n, why), -1);
	assert_string_equal(why, "line 4097: more than 4096 addresses");
	buf_release(&b);
}

static void
test_twice(void **state)
{
	assert_int_equal(parses("10.89.1.5 alice\n10.89.1.6 bob\n"
	    "10.89.1.5 carol\n"), -1);
	/* The same address, spelt as IPv4-mapped IPv6. */
	assert_int_equal(parses("10.89.1.5 alice\n::ffff:10.89.1.5 bob\n"), -1);
	assert_int_equal(parses("fd00::1 alice\nfd00:0::0:1 bob\n"), -1);
}

static void
test_find_and_reload(void **state)
{
	int	 fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	/* None named: nothing found. */
	labels_open(NULL);
	assert_string_equal(find("10.89.1.5"), "");
	write_file("10.89.1.5 alice@example.org/" ID "\n"
	    "fd00:89:2::7 " ID "\n");
	labels_open(path);
	assert_int_equal(labels_count(), 2);
	assert_string_equal(find("10.89.1.5"), "alice@example.org/" ID);
	assert_string_equal(find("::ffff:10.89.1.5"), "alice@example.org/" ID);
	assert_string_equal(find("fd00:89:2::7"), ID);
	assert_string_equal(find("fd00:89:2::8"), "");
	assert_string_equal(find("10.89.1.6"), "");
	assert_string_equal(find("::10.89.1.5"), "");	/* not mapped */
	/* Unchanged: not read again (the table stays the same object). */
	{
		struct label *was = table;

		labels_refresh();
		assert_ptr_equal(table, was);
	}
	/* A new address for alice, bob on her old one. */
	write_file("10.89.1.9 alice\n10.89.1.5 bob\n");
	labels_refresh();
	assert_string_equal(find("10.89.1.5"), "bob");
	assert_string_equal(find("10.89.1.9"), "alice");
	/* A bad file: no labels, none kept from before. */
	write_file("10.89.1.9 alice\n10.89.1.5 b o b\n");
	labels_refresh();
	assert_int_equal(labels_count(), 0);
	assert_string_equal(find("10.89.1.9"), "");
	labels_refresh();	/* said once: not read again */
	/* Fixed, then gone. */
	write_file("10.89.1.9 alice\n");
	labels_refresh();
	assert_string_equal(find("10.89.1.9"), "alice");
	unlink(path);
	labels_refresh();
	assert_int_equal(labels_count(), 0);
	labels_refresh();
	write_file("10.89.1.9 carol\n");
	labels_refresh();
	assert_string_equal(find("10.89.1.9"), "carol");
	/* A directory is no file. */
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	labels_refresh();
	assert_int_equal(labels_count(), 0);
	rmdir(path);
	labels_free();
	assert_string_equal(find("10.89.1.9"), "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_nul),
		cmocka_unit_test(test_long),
		cmocka_unit_test(test_too_many),
		cmocka_unit_test(test_twice),
		cmocka_unit_test(test_find_and_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
