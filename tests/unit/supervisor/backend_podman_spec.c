/*
 * Unit tests for supervisor/backend_podman_spec.c: the bodies sent to Podman
 * for one user's network, volume and container, and the sandbox's environment.
 * These are the sandbox's walls (read-only root, no capabilities, limits, no
 * DNS, the proxy as the only way out), so each is checked by value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../supervisor/backend_podman_spec.c"

#define S(x)	((char *)(uintptr_t)(x))

static struct conf	 cf;
static struct user_conf	 big;
static struct kv	 extra[2];
static const struct sandbox_host nohost;	/* no userns, no quota */

static int
setup(void **state)
{
	memset(&cf, 0, sizeof(cf));
	cf.state_dir = S("/var/lib/vivarium");
	cf.image = S("localhost/vivarium-sandbox:test");
	cf.sandbox_user = S("1000:1000");
	cf.tmp_size = 256ULL << 20;
	cf.stop_timeout = 7;
	cf.egress_port = 3128;
	cf.limits.memory = 2ULL << 30;
	cf.limits.cpus_milli = 2000;
	cf.limits.pids = 128;
	cf.uid_base = DEF_UID_BASE;
	snprintf(big.id, sizeof(big.id), "big");
	big.limits.memory = 8ULL << 30;
	big.limits.cpus_milli = 500;
	big.limits.pids = 512;
	cf.users = &big;
	cf.nusers = 1;
	/* sandbox.env, one of them trying to undo one of ours */
	extra[0].key = S("LANG");
	extra[0].value = S("C.UTF-8");
	extra[1].key = S("VIVARIUM_PORT");
	extra[1].value = S("8000");
	cf.env = extra;
	cf.nenv = 2;
	return 0;
}

static const char *
str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static json_int_t
num(const json_t *o, const char *k1, const char *k2)
{
	return json_integer_value(json_object_get(json_object_get(o, k1), k2));
}

static void
test_names(void **state)
{
	struct names	 n;

	assert_int_equal(sandbox_names(&cf, "alice", &n), 0);
	assert_string_equal(n.container, "vivarium-alice");
	assert_string_equal(n.network, "vivarium-alice");
	assert_string_equal(n.volume, "vivarium-alice-workspace");
	assert_string_equal(n.rundir, "/var/lib/vivarium/users/alice");
	assert_string_equal(n.sock, "/var/lib/vivarium/users/alice/agent.sock");
	/* Bad ids never become names (a path, a flag, too long, empty). */
	assert_int_equal(sandbox_names(&cf, "../etc", &n), -1);
	assert_int_equal(sandbox_names(&cf, "-rf", &n), -1);
	assert_int_equal(sandbox_names(&cf, "", &n), -1);
	assert_int_equal(sandbox_names(&cf, "a b", &n), -1);
	assert_int_equal(sandbox_names(&cf, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &n), -1);
}

static void
test_container_walls(void **state)
{
	json_t	*s;

	s = sandbox_container_spec(&cf, "alice", NULL, &nohost);
	assert_non_null(s);
	assert_string_equal(str(s, "name"), "vivarium-alice");
	assert_string_equal(str(s, "image"), "localhost/vivarium-sandbox:test");
	assert_string_equal(str(s, "user"), "1000:1000");
	assert_string_equal(str(s, "work_dir"), "/workspace");
	assert_true(json_is_true(json_object_get(s, "read_only_filesystem")));
	assert_true(json_is_true(json_object_get(s, "no_new_privileges")));
	assert_true(json_is_true(json_object_get(s, "init")));
	assert_int_equal(json_array_size(json_object_get(s, "cap_drop")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(s,
	    "cap_drop"), 0)), "ALL");
	assert_null(json_object_get(s, "cap_add"));
	assert_null(json_object_get(s, "privileged"));
	/* Not the host's proxy variables (containers.conf http_proxy=true). */
	assert_true(json_is_false(json_object_get(s, "httpproxy")));
	/* No anonymous volume for an image's VOLUME: it would outlive us. */
	assert_string_equal(str(s, "image_volume_mode"), "ignore");
	assert_int_equal(json_integer_value(json_object_get(s, "stop_timeout")),
	    7);
	assert_string_equal(str(json_object_get(s, "labels"),
	    "io.vivarium.managed"), "true");
	assert_string_equal(sandbox_label_user(s), "alice");
	json_decref(s);
}

static void
test_container_limits(void **state)
{
	json_t		*s, *r, *rl;
	size_t		 i;
	int		 seen = 0;

	s = sandbox_container_spec(&cf, "alice", NULL, &nohost);
	r = json_object_get(s, "resource_limits");
	assert_int_equal(num(r, "memory", "limit"), 2LL << 30);
	assert_int_equal(num(r, "cpu", "quota"), 200000);
	assert_int_equal(num(r, "cpu", "period"), 100000);
	assert_int_equal(num(r, "pids", "limit"), 128);
	json_array_foreach(json_object_get(s, "r_limits"), i, rl) {
		json_int_t want = strcmp(str(rl, "type"), "nofile") == 0 ? 4096
		    : strcmp(str(rl, "type"), "nproc") == 0 ? 1024 : -1;

		assert_int_not_equal(want, -1);
		assert_int_equal(json_integer_value(json_object_get(rl, "soft")),
		    want);
		assert_int_equal(json_integer_value(json_object_get(rl, "hard")),
		    want);
		seen |= want == 4096 ? 1 : 2;
	}
	assert_int_equal(seen, 3);
	json_decref(s);
	/* A user of users: gets their own. */
	s = sandbox_container_spec(&cf, "big", NULL, &nohost);
	r = json_object_get(s, "resource_limits");
	assert_int_equal(num(r, "memory", "limit"), 8LL << 30);
	assert_int_equal(num(r, "cpu", "quota"), 50000);
	assert_int_equal(num(r, "pids", "limit"), 512);
	json_decref(s);
	/* gVisor: its own threads count too; scaled, not the bare count. */
	cf.runsc = 1;
	s = sandbox_container_spec(&cf, "alice", NULL, &nohost);
	r = json_object_get(s, "resource_limits");
	assert_int_equal(num(r, "pids", "limit"), 256 + 10 * 128);
	assert_int_equal(num(r, "memory", "limit"), 2LL << 30);
	json_decref(s);
	cf.runsc = 0;
}

static void
test_container_mounts(void **state)
{
	json_t		*s, *m, *opts, *v;
	const char	*o;
	size_t		 i;
	int		 size = 0, nosuid = 0;

	s = sandbox_container_spec(&cf, "alice", NULL, &nohost);
	m = json_object_get(s, "mounts");
	assert_int_equal(json_array_size(m), 2);
	v = json_array_get(m, 0);
	assert_string_equal(str(v, "destination"), "/tmp");
	assert_string_equal(str(v, "type"), "tmpfs");
	opts = json_object_get(v, "options");
	for (i = 0; i < json_array_size(opts); i++) {
		o = json_string_value(json_array_get(opts, i));
		size |= strcmp(o, "size=268435456") == 0;
		nosuid |= strcmp(o, "nosuid") == 0;
	}
	assert_true(size);
	assert_true(nosuid);
	v = json_array_get(m, 1);
	assert_string_equal(str(v, "destination"), "/run/vivarium");
	assert_string_equal(str(v, "type"), "bind");
	assert_string_equal(str(v, "source"), "/var/lib/vivarium/users/alice");
	v = json_array_get(json_object_get(s, "volumes"), 0);
	assert_string_equal(str(v, "Name"), "vivarium-alice-workspace");
	assert_string_equal(str(v, "Dest"), "/workspace");
	/* On the user's network only, as "sandbox". */
	assert_string_equal(str(json_object_get(s, "netns"), "nsmode"),
	    "bridge");
	v = json_object_get(json_object_get(s, "Networks"), "vivarium-alice");
	assert_string_equal(json_string_value(json_array_get(json_object_get(v,
	    "aliases"), 0)), "sandbox");
	assert_int_equal(json_object_size(json_object_get(s, "Networks")), 1);
	json_decref(s);
}

static void
test_env(void **state)
{
	json_t	*env, *s;

	env = sandbox_env(&cf, "alice", NULL);
	assert_string_equal(str(env, "LANG"), "C.UTF-8");
	/* Ours come last: sandbox.env cannot turn TCP on. */
	assert_string_equal(str(env, "VIVARIUM_PORT"), "off");
	assert_string_equal(str(env, "VIVARIUM_SOCKET"),
	    "/run/vivarium/agent.sock");
	/* No proxy configured: no proxy variables at all. */
	assert_null(json_object_get(env, "http_proxy"));
	assert_null(json_object_get(env, "NO_PROXY"));
	/* No link key loaded: links stay off. */
	assert_null(json_object_get(env, "VIVARIUM_LINK_KEY"));
	json_decref(env);
	/* The container gets exactly this environment. */
	s = sandbox_container_spec(&cf, "alice", "10.89.0.254", &nohost);
	env = sandbox_env(&cf, "alice", "10.89.0.254");
	assert_true(json_equal(json_object_get(s, "env"), env));
	json_decref(env);
	json_decref(s);
}

static void
test_proxy_env(void **state)
{
	static const char *const want[] = { "http_proxy", "https_proxy",
	    "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY" };
	struct sbenv	 px = SBENV_INIT;
	json_t		*env;
	size_t		 i;

	assert_int_equal(sbenv_proxy(&px, "10.89.0.254", 3128), 0);
	assert_int_equal(px.n, 6);
	for (i = 0; i < px.n; i++) {
		assert_string_equal(px.v[i].name, want[i]);
		assert_string_equal(px.v[i].value, i < 4 ?
		    "http://10.89.0.254:3128" : "");
	}
	/* In the sandbox: the same, over anything sandbox.env said. */
	extra[0].key = S("http_proxy");
	extra[0].value = S("http://elsewhere:80");
	env = sandbox_env(&cf, "alice", "10.89.0.254");
	for (i = 0; i < px.n; i++)
		assert_string_equal(str(env, px.v[i].name), px.v[i].value);
	json_decref(env);
	sbenv_release(&px);
	extra[0].key = S("LANG");
	extra[0].value = S("C.UTF-8");
	assert_int_equal(sbenv_proxy(&px, "192.168.5.14", 8080), 0);
	assert_string_equal(sbenv_get(&px, "HTTPS_PROXY"),
	    "http://192.168.5.14:8080");
	sbenv_release(&px);
}

static void
test_link_env(void **state)
{
	struct sbenv	 e = SBENV_INIT;
	json_t		*env;
	char		 hex[LINK_KEY_HEX + 1], sum[17];

	memset(hex, 'a', LINK_KEY_HEX);
	hex[LINK_KEY_HEX] = '\0';
	/* Holding only alice's key, as an agent would. */
	assert_int_equal(link_keys_set_user(&cf.link_keys, "alice", hex, NULL,
	    0), 0);
	cf.public_url = S("https://files.example.org");
	cf.download_lifetime = 600;
	cf.upload_max = 1048576;
	env = sandbox_env(&cf, "alice", NULL);
	assert_string_equal(str(env, "VIVARIUM_LINK_USER"), "alice");
	/* Podman's: not the key itself, which every /proc/<pid>/environ
	 * would show, but where the agent finds it and a digest of it. */
	assert_null(json_object_get(env, "VIVARIUM_LINK_KEY"));
	assert_string_equal(str(env, "VIVARIUM_LINK_KEY_FILE"),
	    "/run/vivarium/link.key");
	assert_int_equal(strlen(str(env, "VIVARIUM_LINK_KEY_SUM")), 16);
	assert_null(strstr(str(env, "VIVARIUM_LINK_KEY_SUM"), "aaaa"));
	assert_string_equal(str(env, "VIVARIUM_PUBLIC_URL"),
	    "https://files.example.org");
	assert_string_equal(str(env, "VIVARIUM_DOWNLOAD_LIFETIME"), "600");
	assert_string_equal(str(env, "VIVARIUM_UPLOAD_MAX_BYTES"), "1048576");
	snprintf(sum, sizeof(sum), "%s", str(env, "VIVARIUM_LINK_KEY_SUM"));
	json_decref(env);
	/* Kubernetes' (kspec.c): the key itself. */
	assert_int_equal(sbenv_links(&e, &cf, "alice", SBENV_KEY_ENV), 0);
	assert_string_equal(sbenv_get(&e, "VIVARIUM_LINK_KEY"), hex);
	assert_null(sbenv_get(&e, "VIVARIUM_LINK_KEY_FILE"));
	sbenv_release(&e);
	/* Alone, as backend_podman_objects.c compares a running container's. */
	env = json_object();
	sandbox_link_env_file(&cf, "alice", env);
	assert_string_equal(str(env, "VIVARIUM_LINK_KEY_SUM"), sum);
	assert_int_equal(json_object_size(env), 8);
	json_decref(env);
	/* Another key, another digest: an old container is told apart. */
	hex[0] = 'b';
	assert_int_equal(link_keys_set_user(&cf.link_keys, "alice", hex, NULL,
	    0), 0);
	env = sandbox_env(&cf, "alice", NULL);
	assert_string_not_equal(str(env, "VIVARIUM_LINK_KEY_SUM"), sum);
	json_decref(env);
	/* No key for bob: bob's sandbox signs nothing. */
	env = sandbox_env(&cf, "bob", NULL);
	assert_null(json_object_get(env, "VIVARIUM_LINK_KEY"));
	assert_null(json_object_get(env, "VIVARIUM_PUBLIC_URL"));
	json_decref(env);
	memset(&cf.link_keys, 0, sizeof(cf.link_keys));
	cf.public_url = NULL;
}

static void
test_network_and_volume(void **state)
{
	json_t		*s, *o;
	const char	*br;

	s = sandbox_network_spec(&cf, "alice", "strict");
	assert_string_equal(str(s, "name"), "vivarium-alice");
	assert_string_equal(str(s, "driver"), "bridge");
	/* No gateway, and no DNS: aardvark-dns would resolve outside names. */
	assert_true(json_is_true(json_object_get(s, "internal")));
	assert_true(json_is_false(json_object_get(s, "dns_enabled")));
	assert_string_equal(str(json_object_get(s, "options"), "isolate"),
	    "strict");
	assert_string_equal(sandbox_label_user(s), "alice");
	br = str(s, "network_interface");
	assert_non_null(br);
	assert_int_equal(strlen(br), 15);
	assert_int_equal(strncmp(br, "viv", 3), 0);
	/* The same user, the same bridge; another, another. */
	o = sandbox_network_spec(&cf, "alice", "true");
	assert_string_equal(str(o, "network_interface"), br);
	assert_string_equal(str(json_object_get(o, "options"), "isolate"),
	    "true");
	json_decref(o);
	o = sandbox_network_spec(&cf, "bob", "true");
	assert_string_not_equal(str(o, "network_interface"), br);
	json_decref(o);
	json_decref(s);
	s = sandbox_volume_spec("alice", &nohost);
	assert_null(json_object_get(s, "Options"));
	assert_string_equal(str(s, "Name"), "vivarium-alice-workspace");
	/* Podman's volume API spells it with a capital L. */
	assert_string_equal(sandbox_label_user(s), "alice");
	json_decref(s);
}

/* A slot: the sandbox's ids 0..65535 are the slot's host range, in a
 * user namespace and an IPC namespace of its own; without one, none of
 * that, and the label says which.  With an image, the workspace volume
 * is that filesystem, loop-mounted by Podman. */
static void
test_userns_and_quota(void **state)
{
	struct sandbox_host	 h = { .slot = 2,
	    .image = "/var/lib/vivarium/workspaces/alice.img" };
	json_t			*s, *m;
	const json_t		*o;
	char			 want[64];

	s = sandbox_container_spec(&cf, "alice", NULL, &h);
	assert_string_equal(str(json_object_get(s, "userns"), "nsmode"),
	    "private");
	assert_string_equal(str(json_object_get(s, "ipcns"), "nsmode"),
	    "private");
	/* /dev/shm of its own: the last mount, a 64 MB tmpfs */
	m = json_object_get(s, "mounts");
	o = json_array_get(m, json_array_size(m) - 1);
	assert_string_equal(str(o, "destination"), "/dev/shm");
	assert_string_equal(str(o, "type"), "tmpfs");
	assert_string_equal(json_string_value(json_array_get(json_object_get(o,
	    "options"), 4)), "size=64m");
	m = json_object_get(s, "idmappings");
	for (int i = 0; i < 2; i++) {
		o = json_object_get(m, i == 0 ? "UIDMap" : "GIDMap");
		assert_int_equal(json_array_size(o), 1);
		o = json_array_get(o, 0);
		assert_int_equal(json_integer_value(json_object_get(o, "container_id")), 0);
		assert_int_equal(json_integer_value(json_object_get(o, "host_id")),
		    DEF_UID_BASE + 2 * 65536);
		assert_int_equal(json_integer_value(json_object_get(o, "size")),
		    65536);
	}
	/* inside, the same user as ever */
	assert_string_equal(str(s, "user"), "1000:1000");
	snprintf(want, sizeof(want), "%ld+65536", DEF_UID_BASE + 2 * 65536);
	assert_string_equal(str(json_object_get(s, "labels"), SANDBOX_IDS_LABEL),
	    want);
	json_decref(s);
	s = sandbox_container_spec(&cf, "alice", NULL, &nohost);
	assert_null(json_object_get(s, "idmappings"));
	assert_null(json_object_get(s, "userns"));
	assert_string_equal(str(json_object_get(s, "labels"), SANDBOX_IDS_LABEL),
	    "shared");
	json_decref(s);
	s = sandbox_volume_spec("alice", &h);
	o = json_object_get(s, "Options");
	assert_string_equal(str(o, "type"), "ext4");
	assert_string_equal(str(o, "device"), h.image);
	assert_string_equal(str(o, "o"), "loop,nosuid,nodev,discard");
	json_decref(s);
}

/*
 * Rootless with a subordinate range: the sandbox's ids 0..65535 are the
 * rootless namespace's 1..65536, none of them the supervisor's uid (0
 * there), and the agent's socket lets the group in for the run
 * directory's ACL.  Without one, keep-id, the supervisor's own uid.
 */
static void
test_userns_rootless(void **state)
{
	struct sandbox_host	 h = { .rootless = 1, .sub_uid = 100000,
	    .sub_gid = 200000, .sub_size = 65536 };
	json_t			*s, *m;
	const json_t		*o;

	s = sandbox_container_spec(&cf, "alice", NULL, &h);
	assert_string_equal(str(json_object_get(s, "userns"), "nsmode"),
	    "private");
	m = json_object_get(s, "idmappings");
	for (int i = 0; i < 2; i++) {
		o = json_array_get(json_object_get(m, i == 0 ? "UIDMap" :
		    "GIDMap"), 0);
		assert_int_equal(json_integer_value(json_object_get(o,
		    "container_id")), 0);
		assert_int_equal(json_integer_value(json_object_get(o,
		    "host_id")), 1);
		assert_int_equal(json_integer_value(json_object_get(o,
		    "size")), 65536);
	}
	assert_string_equal(str(json_object_get(s, "env"),
	    "VIVARIUM_SOCKET_MODE"), "0660");
	assert_string_equal(str(json_object_get(s, "labels"),
	    SANDBOX_IDS_LABEL), "sub:100000+65536");
	json_decref(s);

	h.sub_size = 0;
	s = sandbox_container_spec(&cf, "alice", NULL, &h);
	assert_string_equal(str(json_object_get(s, "userns"), "nsmode"),
	    "keep-id");
	assert_null(json_object_get(s, "idmappings"));
	assert_null(json_object_get(json_object_get(s, "env"),
	    "VIVARIUM_SOCKET_MODE"));
	assert_string_equal(str(json_object_get(s, "labels"),
	    SANDBOX_IDS_LABEL), "shared");
	json_decref(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_container_walls),
		cmocka_unit_test(test_container_limits),
		cmocka_unit_test(test_container_mounts),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_proxy_env),
		cmocka_unit_test(test_link_env),
		cmocka_unit_test(test_network_and_volume),
		cmocka_unit_test(test_userns_and_quota),
		cmocka_unit_test(test_userns_rootless),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
