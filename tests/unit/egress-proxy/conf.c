/*
 * Unit tests for egress-proxy/conf.c: the YAML file, environment overrides,
 * and every mistake reported in one run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <unistd.h>

#include <cmocka.h>

#include "../../../egress-proxy/conf.c"

static char path[] = "/tmp/egress-conf-XXXXXX";

static void
write_file(const char *text)
{
	FILE	*f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int
setup(void **state)
{
	int	 fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	return 0;
}

static int
teardown(void **state)
{
	unlink(path);
	return 0;
}

static void
clear_env(void)
{
	unsetenv("VIVARIUM_EGRESS_PORTS");
	unsetenv("VIVARIUM_EGRESS_ALLOW_CIDRS");
	unsetenv("VIVARIUM_EGRESS_HEADER_TIMEOUT");
	unsetenv("VIVARIUM_EGRESS_LISTEN");
	unsetenv("VIVARIUM_EGRESS_HOST_ADDRESSES");
	unsetenv("VIVARIUM_EGRESS_USER_LABELS");
}

static void
test_defaults(void **state)
{
	struct egress_conf c;
	struct confdiag	 d;

	clear_env();
	setenv("VIVARIUM_EGRESS_HOST_ADDRESSES", "none", 1);
	conf_defaults(&c);
	confdiag_init(&d, NULL);
	assert_int_equal(conf_load(&c, NULL, &d), 0);
	assert_null(c.host_addresses);
	assert_true(c.host_addresses_none);
	assert_int_equal(c.nports, 2);
	assert_int_equal(c.ports[0], 80);
	assert_int_equal(c.ports[1], 443);
	assert_int_equal(c.nallow, 0);
	assert_int_equal(c.nlisten, 1);
	assert_string_equal(c.listen[0], "0.0.0.0:3128");
	confdiag_release(&d);
	conf_release(&c);
	clear_env();
}

/*
 * Fail closed: without host_addresses the proxy would dial its host's
 * addresses (it cannot see them from a container), so a configuration
 * that does not name the file, or say none in words, is refused, with
 * how to do either.
 */
static void
test_host_addresses_required(void **state)
{
	struct egress_conf c;
	struct confdiag	 d;
	const char	*t;

	clear_env();
	conf_defaults(&c);
	confdiag_init(&d, NULL);
	assert_int_equal(conf_load(&c, NULL, &d), -1);
	assert_int_equal(d.count, 1);
	t = buf_str(&d.text);
	assert_non_null(strstr(t, "host_addresses is not set"));
	assert_non_null(strstr(t, "vivarium-egress-hosts"));
	assert_non_null(strstr(t, "host_addresses: none"));
	assert_non_null(strstr(t, "VIVARIUM_EGRESS_HOST_ADDRESSES=none"));
	confdiag_release(&d);
	conf_release(&c);

	/* none in the file; a path in the variable replaces it */
	write_file("host_addresses: none\n");
	conf_defaults(&c);
	confdiag_init(&d, path);
	assert_int_equal(conf_load(&c, path, &d), 0);
	assert_true(c.host_addresses_none);
	confdiag_release(&d);
	conf_release(&c);
	setenv("VIVARIUM_EGRESS_HOST_ADDRESSES", "/run/h", 1);
	conf_defaults(&c);
	confdiag_init(&d, path);
	assert_int_equal(conf_load(&c, path, &d), 0);
	assert_false(c.host_addresses_none);
	assert_string_equal(c.host_addresses, "/run/h");
	confdiag_release(&d);
	conf_release(&c);

	/* "None", "" or "no" are not the word */
	setenv("VIVARIUM_EGRESS_HOST_ADDRESSES", "None", 1);
	conf_defaults(&c);
	confdiag_init(&d, NULL);
	assert_int_equal(conf_load(&c, NULL, &d), -1);
	assert_non_null(strstr(buf_str(&d.text), "expected an absolute path "
	    "or none"));
	confdiag_release(&d);
	conf_release(&c);
	clear_env();
}

static void
test_file_and_env(void **state)
{
	struct egress_conf c;
	struct confdiag	 d;

	clear_env();
	write_file("listen: [\"127.0.0.1:9000\", \"[::1]:9000\"]\n"
	    "allow_ports: [443, 8443]\n"
	    "allow_cidrs:\n  - 127.0.0.0/8\n  - fd00::/8\n"
	    "timeouts:\n  header: 3\n  connect: 4\n  idle: 60\n"
	    "limits:\n  connections: 10\n  per_client: 2\n"
	    "resolver_threads: 2\n"
	    "host_addresses: /run/vivarium-host/host-addresses\n"
	    "user_labels: /run/vivarium-host/user-labels\n");
	setenv("VIVARIUM_EGRESS_HEADER_TIMEOUT", "7", 1);
	/* LISTEN replaces the file's listeners, and nothing else */
	setenv("VIVARIUM_EGRESS_LISTEN", "127.0.0.1:9000,[::1]:9000", 1);
	setenv("VIVARIUM_EGRESS_PORTS", "80", 1);
	conf_defaults(&c);
	confdiag_init(&d, path);
	assert_int_equal(conf_load(&c, path, &d), 0);
	assert_int_equal(c.nlisten, 2);
	assert_string_equal(c.listen[1], "[::1]:9000");
	assert_int_equal(c.nports, 1);		/* the variable wins */
	assert_int_equal(c.ports[0], 80);
	assert_int_equal(c.nallow, 2);
	assert_int_equal(c.header_timeout, 7);	/* the variable wins */
	assert_int_equal(c.connect_timeout, 4);
	assert_int_equal(c.idle_timeout, 60);
	assert_int_equal(c.max_conns, 10);
	assert_int_equal(c.max_per_client, 2);
	assert_int_equal(c.resolver_threads, 2);
	assert_string_equal(c.host_addresses, "/run/vivarium-host/host-addresses");
	assert_string_equal(c.user_labels, "/run/vivarium-host/user-labels");
	confdiag_release(&d);
	conf_release(&c);
	clear_env();
}

static void
test_all_errors_reported(void **state)
{
	struct egress_conf c;
	struct confdiag	 d;
	const char	*t;

	clear_env();
	write_file("allow_ports: [443, -1, 70000]\n"
	    "allow_cidrs: [10.1.2.3/8, nonsense]\n"
	    "timeouts:\n  header: soon\n  slow: 1\n"
	    "colour: blue\n"
	    "host_addresses: relative/file\n"
	    "user_labels: labels\n");
	setenv("VIVARIUM_EGRESS_ALLOW_CIDRS", "300.0.0.0/8", 1);
	setenv("VIVARIUM_EGRESS_HOST_ADDRESSES", "hosts.txt", 1);
	conf_defaults(&c);
	confdiag_init(&d, path);
	assert_int_equal(conf_load(&c, path, &d), -1);
	t = buf_str(&d.text);
	fputs(t, stderr);
	assert_int_equal(d.count, 11);
	assert_non_null(strstr(t, ":8: user_labels: \"labels\" is not an "
	    "absolute path"));
	assert_non_null(strstr(t, ":7: host_addresses: \"relative/file\" is not "
	    "an absolute path or none"));
	assert_non_null(strstr(t, "VIVARIUM_EGRESS_HOST_ADDRESSES=\"hosts.txt\": "
	    "expected an absolute path or none"));
	assert_non_null(strstr(t, ":1: allow_ports: \"-1\" is not a port"));
	assert_non_null(strstr(t, ":1: allow_ports: \"70000\" is not a port"));
	assert_non_null(strstr(t, ":2: allow_cidrs: \"10.1.2.3/8\" is not"));
	assert_non_null(strstr(t, ":4: timeouts.header: \"soon\" is not a whole "
	    "number from 1 to 3600"));
	assert_non_null(strstr(t, ":5: unknown key \"slow\" in timeouts "
	    "(known: header, connect, idle)"));
	assert_non_null(strstr(t, ":6: unknown key \"colour\""));
	assert_non_null(strstr(t, "VIVARIUM_EGRESS_ALLOW_CIDRS=\"300.0.0.0/8\": "
	    "\"300.0.0.0/8\" is not an address block"));
	confdiag_release(&d);
	conf_release(&c);
	clear_env();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_host_addresses_required),
		cmocka_unit_test(test_file_and_env),
		cmocka_unit_test(test_all_errors_reported),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
