/*
 * Unit tests for supervisor/egress.c: the egress proxy's container spec
 * (its walls: read-only root, no capabilities, limits, no restart policy,
 * its own host ids) and this host's address list it is given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../supervisor/egress.c"

#define S(x)	((char *)(uintptr_t)(x))

static struct conf	 cf;

static int
setup(void **state)
{
	(void)state;
	memset(&cf, 0, sizeof(cf));
	cf.state_dir = S("/var/lib/vivarium");
	cf.image = S("localhost/vivarium-sandbox:test");
	cf.egress_container = S("vivarium-egress");
	cf.egress_network = S("vivarium-egress");
	cf.egress_bridge = S("vivegress0");
	cf.egress_port = 3128;
	cf.egress_manage = 1;
	cf.uid_base = DEF_UID_BASE;
	return 0;
}

static const char *
str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void
test_spec_walls(void **state)
{
	json_t	*s = egress_container_spec(&cf, 1), *env, *m;

	(void)state;
	assert_non_null(s);
	assert_string_equal(str(s, "name"), "vivarium-egress");
	assert_string_equal(str(s, "image"), "localhost/vivarium-sandbox:test");
	assert_string_equal(str(s, "user"), "1000:1000");
	assert_true(json_is_true(json_object_get(s, "read_only_filesystem")));
	assert_true(json_is_true(json_object_get(s, "no_new_privileges")));
	assert_string_equal(json_string_value(json_array_get(
	    json_object_get(s, "cap_drop"), 0)), "ALL");
	assert_null(json_object_get(s, "restart_policy"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_object_get(s, "resource_limits"), "memory"), "limit")),
	    512LL << 20);
	assert_string_equal(str(json_object_get(s, "labels"),
	    "io.vivarium.role"), "egress");
	assert_non_null(json_object_get(json_object_get(s, "Networks"),
	    "vivarium-egress"));
	env = json_object_get(s, "env");
	assert_string_equal(str(env, "VIVARIUM_EGRESS_LISTEN"), "0.0.0.0:3128");
	assert_string_equal(str(env, "VIVARIUM_EGRESS_HOST_ADDRESSES"),
	    "/run/vivarium-host/host-addresses");
	assert_null(json_object_get(env, "VIVARIUM_EGRESS_CONFIG"));
	m = json_array_get(json_object_get(s, "mounts"), 0);
	assert_string_equal(str(m, "source"), "/var/lib/vivarium/egress");
	assert_string_equal(str(m, "destination"), "/run/vivarium-host");
	assert_string_equal(json_string_value(json_array_get(
	    json_object_get(m, "options"), 0)), "ro");
	/* Slot 0 of uid_base: ids no sandbox has. */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
	    json_object_get(json_object_get(s, "idmappings"), "UIDMap"), 0),
	    "host_id")), DEF_UID_BASE);
	assert_string_equal(str(json_object_get(s, "ipcns"), "nsmode"), "none");
	json_decref(s);
}

static void
test_spec_options(void **state)
{
	json_t	*s;

	(void)state;
	/* Rootless, or uid_base 0: no user namespace of its own. */
	s = egress_container_spec(&cf, 0);
	assert_null(json_object_get(s, "idmappings"));
	json_decref(s);
	cf.uid_base = 0;
	s = egress_container_spec(&cf, 1);
	assert_null(json_object_get(s, "idmappings"));
	json_decref(s);
	/* A config file: mounted read-only where the proxy reads it. */
	cf.egress_config = S("/etc/vivarium/egress.yaml");
	cf.egress_image = S("localhost/other:1");
	cf.egress_port = 8128;
	s = egress_container_spec(&cf, 1);
	assert_string_equal(str(s, "image"), "localhost/other:1");
	assert_string_equal(str(json_object_get(s, "env"),
	    "VIVARIUM_EGRESS_CONFIG"), "/etc/vivarium/egress.yaml");
	assert_string_equal(str(json_object_get(s, "env"),
	    "VIVARIUM_EGRESS_LISTEN"), "0.0.0.0:8128");
	assert_string_equal(str(json_array_get(json_object_get(s, "mounts"), 1),
	    "source"), "/etc/vivarium/egress.yaml");
	json_decref(s);
}

static void
test_host_list(void **state)
{
	struct buf	 b = BUF_INIT(1u << 20);
	struct perr	 e;

	(void)state;
	cf.egress_host_extra = S("203.0.113.7, 2001:db8::/64,198.51.100.0/24");
	assert_int_equal(egress_host_list(&cf, &b, &e), 0);
	assert_non_null(strstr(buf_str(&b), "\n127.0.0.1\n"));
	assert_non_null(strstr(buf_str(&b), "\n203.0.113.7\n"));
	assert_non_null(strstr(buf_str(&b), "\n2001:db8::/64\n"));
	assert_non_null(strstr(buf_str(&b), "\n198.51.100.0/24\n"));
	assert_int_equal(b.data[0], '#');
	buf_release(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_spec_walls, setup),
		cmocka_unit_test_setup(test_spec_options, setup),
		cmocka_unit_test_setup(test_host_list, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
