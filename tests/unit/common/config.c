/* Unit tests for common/config.c: strict parsing, env diagnostics, YAML tree. */
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
	};

	return cmocka_run_group_tests_name("common/config", tests, NULL, NULL);
}
