/*
 * Unit tests for common/config.c (strict parsing, env diagnostics, host:port,
 * lists), yconf.c (the YAML tree) and conftab.c (the table loader).
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

#include "config.h"

static void
test_parse_long(void **state)
{
	long	 v = 0;

	assert_int_equal(config_parse_long("300", 1, 3600, &v), 0);
	assert_int_equal(v, 300);
	assert_int_equal(config_parse_long("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	/* Each of these must be refused. */
	assert_int_equal(config_parse_long("", 0, 10, &v), -1);
	assert_int_equal(config_parse_long(" 5", 0, 10, &v), -1);
	assert_int_equal(config_parse_long("5 ", 0, 10, &v), -1);
	assert_int_equal(config_parse_long("+5", 0, 10, &v), -1);
	assert_int_equal(config_parse_long("-1", 0, 10, &v), -1);
	assert_int_equal(config_parse_long("11", 0, 10, &v), -1);
	assert_int_equal(config_parse_long("1e3", 0, 10000, &v), -1);
	assert_int_equal(config_parse_long("0x10", 0, 100, &v), -1);
	assert_int_equal(config_parse_long("99999999999999999999", 0,
	    100, &v), -1);
	assert_int_equal(config_parse_long("-5", -10, 10, &v), 0);
	assert_int_equal(v, -5);
}

static void
test_parse_bool_and_size(void **state)
{
	int			 b = -1;
	unsigned long long	 s = 0;

	assert_int_equal(config_parse_bool("YES", &b), 0);
	assert_int_equal(b, 1);
	assert_int_equal(config_parse_bool("0", &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(config_parse_bool("2", &b), -1);
	assert_int_equal(config_parse_bool("", &b), -1);

	assert_int_equal(config_parse_size("268435456", ~0ULL, &s), 0);
	assert_int_equal(s, 268435456ULL);
	assert_int_equal(config_parse_size("2g", ~0ULL, &s), 0);
	assert_int_equal(s, 2ULL << 30);
	assert_int_equal(config_parse_size("512MiB", ~0ULL, &s), 0);
	assert_int_equal(s, 512ULL << 20);
	assert_int_equal(config_parse_size("5x", ~0ULL, &s), -1);
	assert_int_equal(config_parse_size("-5", ~0ULL, &s), -1);
	assert_int_equal(config_parse_size("2g", 1ULL << 30, &s), -1);
	assert_int_equal(config_parse_size("99999999999999999999g", ~0ULL,
	    &s), -1);
}

static void
test_env_diagnostics_name_the_variable(void **state)
{
	struct confdiag	 d;
	long		 v;
	int		 b;

	confdiag_init(&d, NULL);
	setenv("VIVARIUM_TEST_A", "abc", 1);
	setenv("VIVARIUM_TEST_B", "maybe", 1);
	unsetenv("VIVARIUM_TEST_C");
	assert_int_equal(config_env_long(&d, "VIVARIUM_TEST_A", 7, 0, 10, &v),
	    -1);
	assert_int_equal(v, 7);
	assert_int_equal(config_env_bool(&d, "VIVARIUM_TEST_B", 1, &b), -1);
	assert_int_equal(config_env_long(&d, "VIVARIUM_TEST_C", 9, 0, 10, &v),
	    0);
	assert_int_equal(v, 9);
	assert_int_equal(d.count, 2);
	assert_non_null(strstr(buf_str(&d.text), "VIVARIUM_TEST_A=\"abc\""));
	assert_non_null(strstr(buf_str(&d.text), "VIVARIUM_TEST_B"));
	confdiag_release(&d);
}

static void
test_yaml_tree(void **state)
{
	static const char text[] =
	    "# comment\n"
	    "listen: 127.0.0.1:8080\n"
	    "limits:\n"
	    "  memory: 2g\n"
	    "users:\n"
	    "  - alice\n"
	    "  - bob\n";
	struct confdiag		 d;
	struct ynode		*root;
	const struct ynode	*n;

	confdiag_init(&d, "test.yaml");
	root = yconf_load_string(text, sizeof(text) - 1, &d);
	assert_non_null(root);
	assert_int_equal(d.count, 0);
	n = yconf_get(root, "listen");
	assert_non_null(n);
	assert_int_equal(n->type, YNODE_SCALAR);
	assert_string_equal(n->value, "127.0.0.1:8080");
	assert_int_equal(n->line, 2);
	n = yconf_get(yconf_get(root, "limits"), "memory");
	assert_string_equal(n->value, "2g");
	assert_int_equal(n->line, 4);
	n = yconf_get(root, "users");
	assert_int_equal(n->type, YNODE_SEQ);
	assert_string_equal(n->child->value, "alice");
	assert_string_equal(n->child->next->value, "bob");
	assert_null(n->child->next->next);
	assert_null(yconf_get(root, "missing"));
	yconf_free(root);
	confdiag_release(&d);
}

static void
expect_yaml_error(const char *text, const char *needle)
{
	struct confdiag	 d;
	struct ynode	*root;

	confdiag_init(&d, "bad.yaml");
	root = yconf_load_string(text, strlen(text), &d);
	assert_null(root);
	assert_true(d.count >= 1);
	if (strstr(buf_str(&d.text), needle) == NULL)
		fail_msg("expected \"%s\" in: %s", needle, buf_str(&d.text));
	confdiag_release(&d);
}

static void
test_yaml_errors_have_lines(void **state)
{
	expect_yaml_error("a: 1\na: 2\n", "bad.yaml:2: \"a\" is given twice");
	expect_yaml_error("a: [1, 2\n", "bad.yaml:");
	expect_yaml_error("- 1\n- 2\n", "top level must be a mapping");
	expect_yaml_error("a: &x 1\nb: *x\n", "not supported");
	expect_yaml_error("a: 1\n---\nb: 2\n", "only one YAML document");
	expect_yaml_error("? [1]\n: 2\n", "keys must be plain words");
}

static void
test_yaml_empty_and_file(void **state)
{
	struct confdiag	 d;
	struct ynode	*root;
	char		 path[] = "/tmp/vivarium-config-test-XXXXXX";
	int		 fd;

	confdiag_init(&d, "empty.yaml");
	root = yconf_load_string("", 0, &d);
	assert_non_null(root);
	assert_int_equal(root->type, YNODE_MAP);
	assert_null(root->child);
	yconf_free(root);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "k: v\n", 5), 5);
	close(fd);
	root = yconf_load(path, &d);
	assert_non_null(root);
	assert_string_equal(yconf_get(root, "k")->value, "v");
	yconf_free(root);
	unlink(path);
	assert_null(yconf_load(path, &d));
	assert_non_null(strstr(buf_str(&d.text), "cannot open"));
	confdiag_release(&d);
}

static void
test_hostport(void **state)
{
	char	 h[64];
	long	 p;

	assert_int_equal(config_parse_hostport("127.0.0.1:8787", h, sizeof(h),
	    &p), 0);
	assert_string_equal(h, "127.0.0.1");
	assert_int_equal(p, 8787);
	assert_int_equal(config_parse_hostport("[::1]:3128", h, sizeof(h), &p),
	    0);
	assert_string_equal(h, "::1");
	assert_int_equal(config_parse_hostport(":80", h, sizeof(h), &p), 0);
	assert_string_equal(h, "");
	assert_int_equal(p, 80);
	/* The last colon ends the host, as both copies had it. */
	assert_int_equal(config_parse_hostport("::1:80", h, sizeof(h), &p), 0);
	assert_string_equal(h, "::1");
	/* What a bind without lookups would refuse at start-up. */
	assert_int_equal(config_parse_hostport("nonsense:xyz", h, sizeof(h),
	    &p), -1);
	assert_int_equal(config_parse_hostport("nonsense:80", h, sizeof(h), &p),
	    -1);
	assert_int_equal(config_parse_hostport("localhost:80", h, sizeof(h),
	    &p), -1);
	assert_int_equal(config_parse_hostport("1.2.3.4:0", h, sizeof(h), &p),
	    -1);
	assert_int_equal(config_parse_hostport("1.2.3.4:65536", h, sizeof(h),
	    &p), -1);
	assert_int_equal(config_parse_hostport("1.2.3.4:+80", h, sizeof(h), &p),
	    -1);
	assert_int_equal(config_parse_hostport("1.2.3.4:80 ", h, sizeof(h), &p),
	    -1);
	assert_int_equal(config_parse_hostport("1.2.3.4", h, sizeof(h), &p), -1);
	assert_int_equal(config_parse_hostport("[]:80", h, sizeof(h), &p), -1);
	assert_int_equal(config_parse_hostport("[::1]80", h, sizeof(h), &p), -1);
	assert_int_equal(config_parse_hostport("[::1:80", h, sizeof(h), &p), -1);
	assert_int_equal(config_parse_hostport("[1.2.3.4]:80", h, sizeof(h),
	    &p), 0);
	/* A host longer than the buffer is refused, not cut. */
	assert_int_equal(config_parse_hostport("255.255.255.255:80", h, 8, &p),
	    -1);
}

static int
collect(void *arg, const char *item)
{
	struct buf	*b = arg;

	if (strcmp(item, "bad") == 0)
		return -1;
	(void)buf_appendf(b, "[%s]", item);
	return 0;
}

static void
test_lists(void **state)
{
	struct buf	 b = BUF_INIT(1024);
	const char	*p = " a ,, b\t,c", *it;
	char		 big[400];
	size_t		 n;

	assert_int_equal(config_list_next(&p, &it, &n), 1);
	assert_int_equal(n, 1);
	assert_memory_equal(it, "a", 1);
	assert_int_equal(config_list_next(&p, &it, &n), 1);
	assert_int_equal(n, 0);		/* "a,,b": an empty item */
	assert_int_equal(config_list_next(&p, &it, &n), 1);
	assert_memory_equal(it, "b", n);
	assert_int_equal(config_list_next(&p, &it, &n), 1);
	assert_memory_equal(it, "c", n);
	assert_int_equal(config_list_next(&p, &it, &n), 0);

	assert_int_equal(config_list_each(" a ,, b\t,c,", &b, collect), 0);
	assert_string_equal(buf_str(&b), "[a][b][c]");
	buf_reset(&b);
	/* A bad item fails the list, and the others are still done. */
	assert_int_equal(config_list_each("a,bad,c", &b, collect), -1);
	assert_string_equal(buf_str(&b), "[a][c]");
	buf_reset(&b);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(config_list_each(big, &b, collect), -1);
	assert_int_equal(b.len, 0);
	buf_release(&b);
}

/* ------------------------------------------------------------ the table */

struct tsub {
	long		 n;
	char		*s;
};

struct tconf {
	long		 num;
	long		 dur;
	unsigned long long size;
	int		 flag;
	char		*name;
	int		 nitems;
	char		 items[4][16];
	int		 parsed;
	struct tsub	 sub;
	int		 nodes;
};

static int
tparse(void *base, const char *v)
{
	struct tconf	*c = base;

	if (strcmp(v, "good") != 0)
		return -1;
	c->parsed = 1;
	return 0;
}

static int
titem(void *base, const char *v)
{
	struct tconf	*c = base;

	if (c->nitems == 4 || strlen(v) >= sizeof(c->items[0]) ||
	    strcmp(v, "bad") == 0)
		return -1;
	snprintf(c->items[c->nitems++], sizeof(c->items[0]), "%s", v);
	return 0;
}

static void
treset(void *base)
{
	((struct tconf *)base)->nitems = 0;
}

static void
tnode(void *base, const struct ynode *n, struct confdiag *d)
{
	((struct tconf *)base)->nodes++;
}

#define T(f)	offsetof(struct tconf, f)
#define S(f)	offsetof(struct tsub, f)

static const struct conf_key tsub_keys[] = {
	CONF_VALUE("n", "VIVARIUM_T_SUB_N", CONF_LONG, S(n), 0, 9),
	CONF_VALUE("s", NULL, CONF_STR, S(s), 0, 0),
};

static const struct conf_key tkeys[] = {
	CONF_VALUE("num", "VIVARIUM_T_NUM", CONF_LONG, T(num), 1, 100),
	CONF_VALUE("dur", NULL, CONF_DURATION, T(dur), 60, 3600),
	CONF_VALUE("size", NULL, CONF_SIZE, T(size), 1024, 1 << 20),
	CONF_VALUE("flag", "VIVARIUM_T_FLAG", CONF_BOOL, T(flag), 0, 0),
	CONF_VALUE("name", "VIVARIUM_T_NAME", CONF_STR, T(name), 0, 0),
	{ .name = "items", .env = "VIVARIUM_T_ITEMS", .type = CONF_LIST,
	  .parse = titem, .reset = treset, .desc = "an item" },
	CONF_PARSED("parsed", NULL, tparse, "the word good"),
	CONF_SECTION_OF("sub", T(sub), tsub_keys),
	CONF_NODE_FN("node", tnode),
	/* A variable with no key in the file. */
	CONF_VALUE(NULL, "VIVARIUM_T_ONLY_ENV", CONF_DURATION, T(dur), 60, 3600),
};

static void
tconf_load(struct tconf *c, const char *text, struct confdiag *d)
{
	char	 path[] = "/tmp/conftab-XXXXXX";
	int	 fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	memset(c, 0, sizeof(*c));
	confdiag_init(d, "t.yaml");
	config_load(CONF_KEYS(tkeys), c, path, d);
	unlink(path);
}

static void
tconf_release(struct tconf *c, struct confdiag *d)
{
	free(c->name);
	free(c->sub.s);
	confdiag_release(d);
}

static void
test_table_good(void **state)
{
	struct tconf	 c;
	struct confdiag	 d;

	unsetenv("VIVARIUM_T_NUM");
	setenv("VIVARIUM_T_NAME", "from-env", 1);
	setenv("VIVARIUM_T_ITEMS", "x, y", 1);
	setenv("VIVARIUM_T_SUB_N", "7", 1);
	tconf_load(&c, "num: 42\ndur: 2m\nsize: 4k\nflag: yes\nname: file\n"
	    "items: [a, b, c]\nparsed: good\nsub:\n  n: 3\n  s: hello\n"
	    "node: [anything, {at: all}]\n", &d);
	fputs(buf_str(&d.text), stderr);
	assert_int_equal(d.count, 0);
	assert_int_equal(c.num, 42);
	assert_int_equal(c.dur, 120);
	assert_int_equal(c.size, 4096);
	assert_int_equal(c.flag, 1);
	/* The environment wins, and a list variable replaces the list. */
	assert_string_equal(c.name, "from-env");
	assert_int_equal(c.nitems, 2);
	assert_string_equal(c.items[0], "x");
	assert_string_equal(c.items[1], "y");
	assert_int_equal(c.sub.n, 7);		/* inside a section too */
	assert_string_equal(c.sub.s, "hello");
	assert_int_equal(c.parsed, 1);
	assert_int_equal(c.nodes, 1);
	tconf_release(&c, &d);

	/* A scalar is a one-item list. */
	unsetenv("VIVARIUM_T_ITEMS");
	tconf_load(&c, "items: solo\n", &d);
	assert_int_equal(d.count, 0);
	assert_int_equal(c.nitems, 1);
	assert_string_equal(c.items[0], "solo");
	tconf_release(&c, &d);
	unsetenv("VIVARIUM_T_NAME");
	unsetenv("VIVARIUM_T_SUB_N");
}

#define HAS(s)	do { if (strstr(t, (s)) == NULL) { \
	fprintf(stderr, "missing: %s\n", (s)); fail(); } } while (0)

static void
test_table_every_mistake(void **state)
{
	struct tconf	 c;
	struct confdiag	 d;
	const char	*t;

	setenv("VIVARIUM_T_NUM", "0", 1);
	setenv("VIVARIUM_T_FLAG", "maybe", 1);
	setenv("VIVARIUM_T_ITEMS", "ok,bad", 1);
	setenv("VIVARIUM_T_ONLY_ENV", "1s", 1);
	tconf_load(&c,
	    "num: 101\n"		/* 1 */
	    "dur: 59\n"			/* 2 */
	    "size: 2m\n"		/* 3 */
	    "flag: [1]\n"		/* 4 */
	    "name: \"\"\n"		/* 5 */
	    "items: [ok, bad, {}]\n"	/* 6 */
	    "parsed: bad\n"		/* 7 */
	    "sub:\n  n: 10\n  t: 1\n"	/* 8-10 */
	    "colour: blue\n"		/* 11 */
	    "items2: x\n", &d);		/* 12 */
	t = buf_str(&d.text);
	fputs(t, stderr);
	HAS("t.yaml:1: num: \"101\" is not a whole number from 1 to 100\n");
	HAS("t.yaml:2: dur: \"59\" is not a duration from 60s to 3600s");
	HAS("t.yaml:3: size: \"2m\" is not a size from 1024 to 1048576 bytes");
	HAS("t.yaml:4: flag: expected a single value, not a list\n");
	HAS("t.yaml:5: name: must not be empty\n");
	HAS("t.yaml:6: items: \"bad\" is not an item\n");
	HAS("t.yaml:6: items: expected an item, not a mapping\n");
	HAS("t.yaml:7: parsed: \"bad\" is not the word good\n");
	HAS("t.yaml:9: sub.n: \"10\" is not a whole number from 0 to 9\n");
	HAS("t.yaml:10: unknown key \"t\" in sub (known: n, s)\n");
	HAS("t.yaml:11: unknown key \"colour\" (known: num, dur, size, flag, "
	    "name, items, parsed, sub, node)\n");
	HAS("t.yaml:12: unknown key \"items2\"");
	/* The environment's, without the file, after the file's. */
	HAS("\nVIVARIUM_T_NUM=\"0\": expected a whole number from 1 to 100\n");
	HAS("\nVIVARIUM_T_FLAG=\"maybe\": expected yes or no");
	HAS("\nVIVARIUM_T_ITEMS=\"ok,bad\": \"bad\" is not an item\n");
	HAS("\nVIVARIUM_T_ONLY_ENV=\"1s\": expected a duration from 60s");
	assert_int_equal(d.count, 16);
	/* A bad value leaves the default. */
	assert_int_equal(c.num, 0);
	assert_int_equal(c.flag, 0);
	tconf_release(&c, &d);
	unsetenv("VIVARIUM_T_NUM");
	unsetenv("VIVARIUM_T_FLAG");
	unsetenv("VIVARIUM_T_ITEMS");
	unsetenv("VIVARIUM_T_ONLY_ENV");
}

/* A section given as something else, or left empty. */
static void
test_table_sections(void **state)
{
	struct tconf	 c;
	struct confdiag	 d;

	tconf_load(&c, "sub: [1]\n", &d);
	assert_int_equal(d.count, 1);
	assert_non_null(strstr(buf_str(&d.text), "t.yaml:1: sub: expected a "
	    "mapping (key: value lines), not a list"));
	tconf_release(&c, &d);
	tconf_load(&c, "sub:\n# nothing yet\n", &d);
	assert_int_equal(d.count, 0);
	tconf_release(&c, &d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_long),
		cmocka_unit_test(test_parse_bool_and_size),
		cmocka_unit_test(test_env_diagnostics_name_the_variable),
		cmocka_unit_test(test_yaml_tree),
		cmocka_unit_test(test_yaml_errors_have_lines),
		cmocka_unit_test(test_yaml_empty_and_file),
		cmocka_unit_test(test_hostport),
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_table_good),
		cmocka_unit_test(test_table_every_mistake),
		cmocka_unit_test(test_table_sections),
	};

	return cmocka_run_group_tests_name("common/config", tests, NULL, NULL);
}
