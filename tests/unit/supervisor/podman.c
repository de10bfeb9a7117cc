/*
 * Unit tests for supervisor/podman.c and the provisioning steps of
 * supervisor/backend_podman_objects.c, against recorded Podman 4.3.1 replies
 * served on a unix socket (podman_server.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "supervisor/podman_server.h"

#include "../../../supervisor/podman.c"
#include "../../../supervisor/endpoint.c"
#include "../../../supervisor/forward.c"
#include "../../../supervisor/conf.c"
#include "../../../supervisor/backend_podman_spec.c"
#include "../../../supervisor/backend_podman_objects.c"

#define API	"/v4.0.0/libpod"

static struct podman *
client(const struct fake_route *routes)
{
	return podman_new(fake_start(routes), 5000);
}

static void
done(struct podman *p)
{
	podman_free(p);
	fake_stop();
}

static void
test_version_4_3(void **state)
{
	static const struct fake_route r[] = {
		{ "GET", API "/version", "version.http" }, { NULL, NULL, NULL } };
	struct podman	*p = client(r);
	struct berr	 e;

	assert_int_equal(podman_version(p, &e), 0);
	assert_string_equal(p->version, "4.3.1");
	assert_true(podman_at_least(p, 4, 3));
	assert_false(podman_at_least(p, 4, 6));
	assert_string_equal(podman_isolate_value(p), "true");
	done(p);
}

static void
test_version_4_6_strict(void **state)
{
	static const struct fake_route r[] = {
		{ "GET", API "/version", "version-4.6.http" },
		{ NULL, NULL, NULL } };
	struct podman	*p = client(r);
	struct berr	 e;
	struct conf	 c;
	json_t		*spec;

	assert_int_equal(podman_version(p, &e), 0);
	assert_string_equal(podman_isolate_value(p), "strict");
	memset(&c, 0, sizeof(c));
	c.state_dir = (char *)(uintptr_t)"/var/lib/vivarium";
	spec = sandbox_network_spec(&c, "alice", podman_isolate_value(p));
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    spec, "options"), "isolate")), "strict");
	assert_true(json_is_true(json_object_get(spec, "internal")));
	/* No DNS: aardvark-dns would resolve outside names. */
	assert_true(json_is_false(json_object_get(spec, "dns_enabled")));
	/* A bridge name of our own, fit for IFNAMSIZ, different per user. */
	{
		const char *br = json_string_value(json_object_get(spec,
		    "network_interface"));
		json_t *other = sandbox_network_spec(&c, "bob",
		    podman_isolate_value(p));
		assert_non_null(br);
		assert_int_equal(strlen(br), 15);
		assert_string_not_equal(br, json_string_value(json_object_get(
		    other, "network_interface")));
		json_decref(other);
	}
	json_decref(spec);
	done(p);
}

static void
test_name_in_use(void **state)
{
	static const struct fake_route r[] = {
		{ "POST", API "/containers/create",
		    "container-create-name-in-use.http" },
		{ NULL, NULL, NULL } };
	struct podman		*p = client(r);
	struct berr		 e;
	struct fake_request	 q;
	json_t			*spec = json_pack("{s:s}", "name", "x");

	assert_int_equal(podman_container_create(p, spec, &e), -1);
	assert_int_equal(e.status, 500);
	assert_true(podman_err_exists(&e));
	assert_non_null(strstr(e.msg, "is already in use"));
	assert_non_null(strstr(e.msg, "POST"));
	/* The body went out as JSON with the header Podman needs. */
	q = fake_last();
	assert_string_equal(q.content_type, "application/json");
	assert_string_equal(q.body, "{\"name\":\"x\"}");
	json_decref(spec);
	done(p);
}

static void
test_errors_readable(void **state)
{
	static const struct fake_route r[] = {
		{ "POST", API "/networks/create", "network-create-bad-option.http" },
		{ "POST", API "/volumes/create", "volume-create-exists.http" },
		{ "POST", API "/containers/vivarium-alice/start",
		    "container-start-running.http" },
		{ "GET", API "/networks/vivarium-nobody/exists",
		    "network-exists-missing.http" },
		{ "GET", API "/networks/vivarium-alice/exists", "network-exists.http" },
		{ "POST", API "/containers/create", "container-create-form-body.http" },
		{ NULL, NULL, NULL } };
	struct podman	*p = client(r);
	struct berr	 e;
	json_t		*spec = json_object();

	assert_int_equal(podman_network_create(p, spec, &e), -1);
	assert_int_equal(e.status, 500);
	assert_false(podman_err_exists(&e));
	assert_non_null(strstr(e.msg, "parsing \"strict\""));
	assert_int_equal(podman_volume_create(p, spec, &e), -1);
	assert_true(podman_err_exists(&e));
	/* 304: already running is success. */
	assert_int_equal(podman_container_start(p, "vivarium-alice", &e), 0);
	assert_int_equal(podman_network_exists(p, "vivarium-nobody", &e), 0);
	assert_int_equal(podman_network_exists(p, "vivarium-alice", &e), 1);
	assert_int_equal(podman_container_create(p, spec, &e), -1);
	assert_non_null(strstr(e.msg, "500"));
	json_decref(spec);
	done(p);
}

static void
test_inspect_and_list(void **state)
{
	static const struct fake_route r[] = {
		{ "GET", API "/containers/vivarium-alice/json",
		    "container-inspect-running.http" },
		{ "GET", API "/containers/vivarium-nobody/json",
		    "container-inspect-missing.http" },
		{ "GET", API "/containers/json", "containers-list.http" },
		{ NULL, NULL, NULL } };
	struct podman		*p = client(r);
	struct berr		 e;
	struct fake_request	 q;
	json_t			*j;

	assert_int_equal(podman_container_inspect(p, "vivarium-alice", &j, &e), 0);
	assert_non_null(j);
	assert_int_equal(podman_ctr_state(j), CTR_RUNNING);
	json_decref(j);
	assert_int_equal(podman_container_inspect(p, "vivarium-nobody", &j, &e), 0);
	assert_null(j);
	assert_int_equal(podman_ctr_state(j), CTR_MISSING);
	assert_int_equal(podman_container_list(p, &j, &e), 0);
	assert_true(json_array_size(j) >= 1);
	assert_string_equal(sandbox_label_user(json_array_get(j, 0)), "alice");
	json_decref(j);
	q = fake_last();
	assert_non_null(strstr(q.target, "all=true"));
	assert_non_null(strstr(q.target, "io.vivarium.managed%3Dtrue"));
	done(p);
}

static void
test_unreachable(void **state)
{
	struct podman	*p = podman_new("/nonexistent/podman.sock", 2000);
	struct berr	 e;
	json_t		*j;

	assert_int_equal(podman_version(p, &e), -1);
	assert_int_equal(e.status, 0);
	assert_non_null(strstr(e.msg, "not reachable"));
	assert_non_null(strstr(e.msg, "/nonexistent/podman.sock"));
	assert_int_equal(podman_container_inspect(p, "x", &j, &e), -1);
	assert_int_equal(e.status, 0);
	podman_free(p);
}

static void
test_connection_closed(void **state)
{
	static const struct fake_route r[] = {
		{ "GET", API "/version", "CLOSE" }, { NULL, NULL, NULL } };
	struct podman	*p = client(r);
	struct berr	 e;

	assert_int_equal(podman_version(p, &e), -1);
	assert_int_equal(e.status, 0);
	assert_true(strlen(e.msg) > 20);
	done(p);
}

/*
 * sandbox_create walks network, volume, runtime dir, container; info is
 * the /info reply (rootful or rootless), which decides the user namespace.
 */
static void
create_missing_image(const char *info, int rootless)
{
	const struct fake_route r[] = {
		{ "GET", API "/version", "version.http" },
		{ "GET", API "/info", info },
		/* The network is there: kept as it is. */
		{ "GET", API "/networks/vivarium-bob/exists", "network-exists.http" },
		{ "GET", API "/volumes/vivarium-bob-workspace/json",
		    "volume-inspect-missing.http" },
		{ "POST", API "/volumes/create", "volume-create-exists.http" },
		{ "POST", API "/containers/create", "container-create-no-image.http" },
		{ NULL, NULL, NULL } };
	struct podman	*p = client(r);
	struct berr	 e;
	struct conf	 c;
	struct confdiag	 d;
	char		 dir[] = "/tmp/svtestXXXXXX";
	struct stat	 st;
	struct fake_request	 q;
	char		 rundir[128], target[128], key[512];

	assert_non_null(mkdtemp(dir));
	setenv("VIVARIUM_SUPERVISOR_TOKEN", "0123456789abcdef0123", 1);
	setenv("VIVARIUM_STATE_DIR", dir, 1);
	confdiag_init(&d, NULL);
	assert_int_equal(conf_load(&c, NULL, &d), 0);
	confdiag_release(&d);
	/*
	 * The link key goes in the run directory, for the agent to read and
	 * remove; not in the environment.  What the sandbox left at that
	 * name (here a symlink) is replaced, not followed.
	 */
	assert_int_equal(conf_link_keys(&c, key, sizeof(key)), 0);
	snprintf(rundir, sizeof(rundir), "%s/users", dir);
	assert_int_equal(mkdir(rundir, 0755), 0);
	snprintf(rundir, sizeof(rundir), "%s/users/bob", dir);
	assert_int_equal(mkdir(rundir, 0700), 0);
	snprintf(target, sizeof(target), "%s/target", dir);
	snprintf(rundir, sizeof(rundir), "%s/users/bob/link.key", dir);
	assert_int_equal(symlink(target, rundir), 0);
	/* A volume that appeared meanwhile (500 "already exists") is fine;
	 * the missing image is the error, and it says what to do. */
	assert_int_equal(sandbox_create(&c, p, "bob", &e), -1);
	assert_int_equal(lstat(rundir, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(access(target, F_OK), -1);
	assert_int_equal(st.st_size, LINK_KEY_HEX + 1);
	if (geteuid() == 0 && rootless == 0) {
		/* Ours, read through the sandbox's group. */
		assert_int_equal(st.st_mode & 0777, 0640);
		assert_int_equal(st.st_uid, 0);
		assert_int_not_equal(st.st_gid, 0);
	}
	assert_non_null(link_user_key_hex(&c.link_keys, "bob", key) == 0 ?
	    key : NULL);
	{
		char	 got[LINK_KEY_HEX + 2] = "";
		FILE	*f = fopen(rundir, "r");

		assert_non_null(f);
		assert_non_null(fgets(got, sizeof(got), f));
		fclose(f);
		assert_memory_equal(got, key, LINK_KEY_HEX);
	}
	if (strstr(e.msg, "make image") == NULL)
		fail_msg("%s", e.msg);
	assert_non_null(strstr(e.msg, c.image));
	/* Rootless without subordinate ids: the sandbox user is the
	 * supervisor's own uid (keep-id); with them (2), the range.
	 * Rootful: a user namespace of the sandbox's own (its slot's ids). */
	q = fake_last();
	assert_non_null(strstr(q.target, "/containers/create"));
	assert_null(strstr(q.body, "\"VIVARIUM_LINK_KEY\""));
	assert_non_null(strstr(q.body, "\"VIVARIUM_LINK_KEY_FILE\":"
	    "\"/run/vivarium/link.key\""));
	if (rootless == 2) {
		/* Subordinate ids: the namespace's 1..65536, not our uid. */
		assert_non_null(strstr(q.body, "\"userns\":{\"nsmode\":"
		    "\"private\"}"));
		assert_non_null(strstr(q.body, "\"UIDMap\":[{\"container_id\":0,"
		    "\"host_id\":1,\"size\":65536}]"));
		assert_non_null(strstr(q.body, "\"VIVARIUM_SOCKET_MODE\":\"0660\""));
		assert_null(strstr(q.body, "keep-id"));
	} else if (rootless) {
		assert_non_null(strstr(q.body, "\"userns\":{\"nsmode\":"
		    "\"keep-id\",\"value\":\"uid=1000,gid=1000\"}"));
		assert_null(strstr(q.body, "idmappings"));
	} else {
		assert_non_null(strstr(q.body, "\"userns\":{\"nsmode\":"
		    "\"private\"}"));
		assert_non_null(strstr(q.body, "idmappings"));
		assert_null(strstr(q.body, "keep-id"));
	}
	snprintf(rundir, sizeof(rundir), "%s/users/bob", dir);
	assert_int_equal(stat(rundir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* users/, slots/ and (with mkfs.ext4 here) workspaces/bob.img */
	snprintf(rundir, sizeof(rundir), "rm -rf %s", dir);
	assert_int_equal(system(rundir), 0);
	conf_release(&c);
	unsetenv("VIVARIUM_STATE_DIR");
	done(p);
}

static void
test_create_missing_image(void **state)
{
	create_missing_image("info.http", 0);
}

static void
test_create_rootless_keep_id(void **state)
{
	create_missing_image("info-rootless.http", 1);
}

/* The ACL as the kernel takes it: the mode's group bits become the
 * mask, the named user is there with its permissions. */
static void
test_acl_set(void **state)
{
	char		 dir[] = "/tmp/svaclXXXXXX";
	unsigned char	 b[64];
	struct stat	 st;
	int		 fd;
	ssize_t		 n;

	assert_non_null(mkdtemp(dir));
	assert_true((fd = open(dir, O_RDONLY | O_DIRECTORY)) != -1);
	assert_int_equal(fchmod(fd, 0700), 0);
	assert_int_equal(acl_set(fd, "system.posix_acl_access", 123456, 5), 0);
	assert_int_equal(acl_set(fd, "system.posix_acl_default", 654321, 7), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0770);
	n = fgetxattr(fd, "system.posix_acl_access", b, sizeof(b));
	assert_int_equal(n, 4 + 5 * 8);
	/* the second entry: ACL_USER, r-x, 123456 (little-endian) */
	assert_int_equal(b[12], ACL_TAG_USER);
	assert_int_equal(b[14], 5);
	assert_int_equal(b[16] | b[17] << 8 | b[18] << 16 | b[19] << 24, 123456);
	assert_int_equal(fgetxattr(fd, "system.posix_acl_default", b,
	    sizeof(b)), 4 + 5 * 8);
	close(fd);
	assert_int_equal(rmdir(dir), 0);
}

static void
test_create_rootless_subids(void **state)
{
	create_missing_image("info-rootless-subids.http", 2);
}

static void
test_egress_already_connected(void **state)
{
	static const struct fake_route r[] = {
		{ "POST", API "/networks/vivarium-alice/connect",
		    "network-connect-already.http" },
		/* Connected at 10.89.0.3 on vivarium-alice. */
		{ "GET", API "/containers/vivarium-egress/json",
		    "container-inspect-running.http" },
		{ "POST", API "/networks/vivarium-bob/connect",
		    "container-inspect-missing.http" },
		{ NULL, NULL, NULL } };
	struct podman		*p = client(r);
	struct berr		 e;
	struct conf		 c;
	struct names		 n;
	struct fake_request	 q;

	memset(&c, 0, sizeof(c));
	c.state_dir = (char *)(uintptr_t)"/var/lib/vivarium";
	c.egress_container = (char *)(uintptr_t)"vivarium-egress";
	c.egress_alias = (char *)(uintptr_t)"egress";
	(void)sandbox_names(&c, "alice", &n);
	/* Already there at its address: nothing more to do. */
	assert_int_equal(egress_connect(&c, p, &n, "10.89.0.3", &e), 0);
	q = fake_last();
	assert_string_equal(q.method, "GET");
	assert_non_null(strstr(q.target, "/containers/vivarium-egress/json"));
	/* A proxy container that does not exist: said plainly. */
	(void)sandbox_names(&c, "bob", &n);
	assert_int_equal(egress_connect(&c, p, &n, "10.89.7.254", &e), -1);
	assert_non_null(strstr(e.msg, "is the egress proxy container"));
	q = fake_last();
	/* At its fixed address with a MAC made of it: a proxy made anew
	 * there keeps the neighbours' ARP entries right. */
	assert_string_equal(q.body, "{\"container\":\"vivarium-egress\","
	    "\"aliases\":[\"egress\"],\"static_mac\":\"02:76:0a:59:07:fe\","
	    "\"static_ips\":[\"10.89.7.254\"]}");
	done(p);
}

static void
test_proxy_ip(void **state)
{
	static const struct fake_route r[] = {
		{ "GET", API "/networks/vivarium-alice/json",
		    "network-inspect.http" },
		{ "GET", API "/networks/vivarium-bob/json",
		    "network-exists-missing.http" },
		{ NULL, NULL, NULL } };
	static const struct { const char *json, *want; } cases[] = {
		{ "{\"subnets\":[{\"subnet\":\"10.89.3.0/24\"}]}", "10.89.3.254" },
		{ "{\"subnets\":[{\"subnet\":\"fd00::/64\"},"
		    "{\"subnet\":\"10.88.0.0/16\"}]}", "10.88.255.254" },
		{ "{\"subnets\":[{\"subnet\":\"192.168.5.8/29\"}]}", "192.168.5.14" },
		{ "{\"subnets\":[{\"subnet\":\"10.0.0.0/30\"}]}", NULL },
		{ "{\"subnets\":[{\"subnet\":\"10.0.0.0\"}]}", NULL },
		{ "{\"subnets\":[{\"subnet\":\"10.0.0.0/24x\"}]}", NULL },
		{ "{\"subnets\":[]}", NULL },
		{ "{}", NULL },
	};
	struct podman	*p;
	struct berr	 e;
	struct conf	 c;
	struct names	 n;
	json_t		*j;
	char		 ip[64];
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		j = json_loads(cases[i].json, 0, NULL);
		assert_non_null(j);
		if (cases[i].want == NULL)
			assert_int_equal(sandbox_proxy_ip_of(j, ip, sizeof(ip)), -1);
		else {
			assert_int_equal(sandbox_proxy_ip_of(j, ip, sizeof(ip)), 0);
			assert_string_equal(ip, cases[i].want);
		}
		json_decref(j);
	}
	/* From Podman's own reply (10.213.0.0/24). */
	p = client(r);
	memset(&c, 0, sizeof(c));
	c.state_dir = (char *)(uintptr_t)"/var/lib/vivarium";
	assert_int_equal(proxy_ip(&c, p, &n, ip, sizeof(ip), &e), 0);
	assert_string_equal(ip, "");		/* no proxy configured */
	c.egress_container = (char *)(uintptr_t)"vivarium-egress";
	(void)sandbox_names(&c, "alice", &n);
	assert_int_equal(proxy_ip(&c, p, &n, ip, sizeof(ip), &e), 0);
	assert_string_equal(ip, "10.213.0.254");
	(void)sandbox_names(&c, "bob", &n);
	assert_int_equal(proxy_ip(&c, p, &n, ip, sizeof(ip), &e), -1);
	assert_non_null(strstr(e.msg, "vivarium-bob"));
	done(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_4_3),
		cmocka_unit_test(test_version_4_6_strict),
		cmocka_unit_test(test_name_in_use),
		cmocka_unit_test(test_errors_readable),
		cmocka_unit_test(test_inspect_and_list),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_connection_closed),
		cmocka_unit_test(test_create_missing_image),
		cmocka_unit_test(test_create_rootless_keep_id),
		cmocka_unit_test(test_create_rootless_subids),
		cmocka_unit_test(test_acl_set),
		cmocka_unit_test(test_egress_already_connected),
		cmocka_unit_test(test_proxy_ip),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
