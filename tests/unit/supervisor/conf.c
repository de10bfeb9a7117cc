/*
 * Unit tests for supervisor/conf.c (YAML config, broken files, env
 * overrides) and supervisor/endpoint.c (endpoints, user ids, token).
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

#include "../../../supervisor/endpoint.c"
#include "../../../supervisor/conf.c"

static char	 path[64];

static const char *
write_conf(const char *text)
{
	FILE	*f;

	snprintf(path, sizeof(path), "/tmp/svconf.%d.yaml", (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void
clear_env(void)
{
	unsetenv("VIVARIUM_SUPERVISOR_TOKEN");
	unsetenv("VIVARIUM_SUPERVISOR_LISTEN");
	unsetenv("VIVARIUM_PODMAN_SOCKET");
	unsetenv("VIVARIUM_SANDBOX_IMAGE");
	unsetenv("VIVARIUM_STATE_DIR");
	unsetenv("VIVARIUM_PROVISIONING");
	unsetenv("VIVARIUM_IDLE_STOP_AFTER");
	unsetenv("VIVARIUM_KUBECONFIG");
	unsetenv("VIVARIUM_KUBE_NAMESPACE");
}

static void
test_full_config(void **state)
{
	struct conf	 c;
	struct confdiag	 d;
	const char	*p;

	clear_env();
	p = write_conf(
	    "listen: 0.0.0.0:9000\n"
	    "token: abcdefghijklmnopqrstuvwxyz\n"
	    "user_header: X-Librechat-User\n"
	    "allowed_origins: [\"https://chat.example.org\"]\n"
	    "podman:\n  socket: /run/user/1000/podman/podman.sock\n  timeout: 10s\n"
	    "state_dir: /srv/vivarium\n"
	    "image: localhost/vivarium-sandbox:9\n"
	    "provisioning: allowlist\n"
	    "idle_stop_after: 5m\n"
	    "max_body: 1m\n"
	    "limits:\n  memory: 1g\n  cpus: 1.5\n  pids: 64\n  workspace: 2g\n"
	    "sandbox:\n  user: \"1001:1001\"\n  uid_base: 200000\n"
	    "  env:\n    VIVARIUM_MAX_TIMEOUT: \"120\"\n"
	    "users:\n  alice:\n  bob:\n    memory: 4g\n    cpus: 4\n"
	    "    workspace: 20m\n"
	    "egress:\n  container: vivarium-egress\n  port: 3129\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), 0);
	assert_int_equal(d.count, 0);
	assert_string_equal(c.listen_host, "0.0.0.0");
	assert_int_equal(c.listen_port, 9000);
	assert_string_equal(c.user_header, "X-Librechat-User");
	assert_string_equal(c.podman_socket, "/run/user/1000/podman/podman.sock");
	assert_int_equal(c.podman_timeout_ms, 10000);
	assert_int_equal(c.provisioning, PROV_ALLOWLIST);
	assert_int_equal(c.idle_stop_after, 300);
	assert_int_equal(c.max_body, 1 << 20);
	assert_int_equal(c.limits.cpus_milli, 1500);
	assert_int_equal(c.nusers, 2);
	assert_true(conf_user_listed(&c, "alice"));
	assert_false(conf_user_listed(&c, "carol"));
	/* alice takes the defaults, bob overrides two of three. */
	assert_int_equal(conf_limits(&c, "alice")->memory, 1ULL << 30);
	assert_int_equal(conf_limits(&c, "bob")->memory, 4ULL << 30);
	assert_int_equal(conf_limits(&c, "bob")->cpus_milli, 4000);
	assert_int_equal(conf_limits(&c, "bob")->pids, 64);
	assert_int_equal(conf_limits(&c, "carol")->pids, 64);
	/* the workspace quota: a default, and bob's own */
	assert_int_equal(conf_limits(&c, "alice")->workspace, 2ULL << 30);
	assert_int_equal(conf_limits(&c, "bob")->workspace, 20ULL << 20);
	assert_int_equal(c.uid_base, 200000);
	assert_int_equal(c.nenv, 1);
	assert_int_equal(c.egress_port, 3129);
	confdiag_release(&d);
	conf_release(&c);
	unlink(p);
}

static void
test_defaults_and_env(void **state)
{
	struct conf	 c;
	struct confdiag	 d;

	clear_env();
	setenv("VIVARIUM_SUPERVISOR_TOKEN", "0123456789abcdef", 1);
	setenv("VIVARIUM_PODMAN_SOCKET", "/tmp/p.sock", 1);
	setenv("VIVARIUM_IDLE_STOP_AFTER", "90s", 1);
	setenv("VIVARIUM_PROVISIONING", "manual", 1);
	confdiag_init(&d, NULL);
	assert_int_equal(conf_load(&c, NULL, &d), 0);
	assert_string_equal(c.podman_socket, "/tmp/p.sock");
	assert_int_equal(c.idle_stop_after, 90);
	assert_int_equal(c.provisioning, PROV_MANUAL);
	assert_string_equal(c.user_header, "X-User-ID");
	assert_int_equal(c.limits.memory, 2ULL << 30);
	assert_int_equal(c.limits.cpus_milli, 2000);
	assert_int_equal(c.limits.pids, 128);
	assert_int_equal(c.limits.workspace, 5ULL << 30);
	assert_int_equal(c.uid_base, DEF_UID_BASE);
	confdiag_release(&d);
	conf_release(&c);

	/* A bad environment value is named. */
	setenv("VIVARIUM_IDLE_STOP_AFTER", "soon", 1);
	confdiag_init(&d, NULL);
	assert_int_equal(conf_load(&c, NULL, &d), -1);
	assert_non_null(strstr(buf_str(&d.text), "VIVARIUM_IDLE_STOP_AFTER"));
	confdiag_release(&d);
	conf_release(&c);
	clear_env();
}

/* A quota too small, a uid_base past the end, and a sandbox user by
 * name (or outside the range) while each sandbox gets a namespace. */
static void
test_ids_and_quota_refused(void **state)
{
	static const struct { const char *yaml; int runsc; } rts[] = {
		{ "token: abcdefghijklmnopqrstuvwxyz\n"
		    "sandbox:\n  runtime: runsc\n  uid_base: 0\n", 1 },
		{ "token: abcdefghijklmnopqrstuvwxyz\n"
		    "sandbox:\n  runtime: runc\n", 0 },
	};
	struct conf	 c;
	struct confdiag	 d;
	const char	*p, *t;
	size_t		 i;

	clear_env();
	p = write_conf(
	    "token: abcdefghijklmnopqrstuvwxyz\n"
	    "limits:\n  workspace: 1m\n"
	    "sandbox:\n  user: sandbox\n"
	    "users:\n  bob:\n    workspace: lots\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), -1);
	t = buf_str(&d.text);
	assert_non_null(strstr(t, ":3: limits.workspace"));
	assert_non_null(strstr(t, ":8: users.bob.workspace"));
	assert_non_null(strstr(t, "must be numeric uid:gid below 65536"));
	confdiag_release(&d);
	conf_release(&c);
	p = write_conf(
	    "token: abcdefghijklmnopqrstuvwxyz\n"
	    "sandbox:\n  uid_base: 4294000000\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), -1);
	assert_non_null(strstr(buf_str(&d.text), "uid_base"));
	confdiag_release(&d);
	conf_release(&c);
	/* uid_base 0: one shared uid, any sandbox.user */
	p = write_conf(
	    "token: abcdefghijklmnopqrstuvwxyz\n"
	    "sandbox:\n  user: sandbox\n  uid_base: 0\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), 0);
	assert_int_equal(c.uid_base, 0);
	assert_int_equal(c.runsc, 0);
	confdiag_release(&d);
	conf_release(&c);
	/* The runtime: runc or runsc, nothing else. */
	for (i = 0; i < sizeof(rts) / sizeof(rts[0]); i++) {
		p = write_conf(rts[i].yaml);
		confdiag_init(&d, p);
		assert_int_equal(conf_load(&c, p, &d), 0);
		assert_int_equal(c.runsc, rts[i].runsc);
		confdiag_release(&d);
		conf_release(&c);
	}
	p = write_conf(
	    "token: abcdefghijklmnopqrstuvwxyz\n"
	    "sandbox:\n  runtime: kata\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), -1);
	t = buf_str(&d.text);
	assert_non_null(strstr(t, ":3: sandbox.runtime"));
	assert_non_null(strstr(t, "runc or runsc"));
	confdiag_release(&d);
	conf_release(&c);
	unlink(p);
}

/* backend: podman, the default and the only one; others say which are. */
static void
test_backend(void **state)
{
	struct conf	 c;
	struct confdiag	 d;
	const char	*p, *t;

	clear_env();
	p = write_conf("token: abcdefghijklmnopqrstuvwxyz\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), 0);
	assert_int_equal(c.backend, BACKEND_PODMAN);
	confdiag_release(&d);
	conf_release(&c);
	p = write_conf("token: abcdefghijklmnopqrstuvwxyz\nbackend: podman\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), 0);
	assert_int_equal(c.backend, BACKEND_PODMAN);
	confdiag_release(&d);
	conf_release(&c);
	p = write_conf("token: abcdefghijklmnopqrstuvwxyz\n"
	    "backend: docker\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), -1);
	t = buf_str(&d.text);
	assert_non_null(strstr(t, ":2: backend"));
	assert_non_null(strstr(t, "podman or kubernetes"));
	confdiag_release(&d);
	conf_release(&c);
	unlink(p);
}

/* Every problem in one run, each with its line. */
/* kubernetes: its defaults, every key, and what it refuses. */
static void
test_kubernetes(void **state)
{
	static const char *const bad[][2] = {
		{ "namespace: Sandboxes", "namespace: \"Sandboxes\"" },
		{ "namespace: a.b", "namespace" },
		{ "agent_port: 0", "agent_port" },
		{ "uid_base: 0", "uid_base" },
		{ "uid_base: 2147418113", "uid_base" },
		{ "uid_base: 3000000000", "uid_base" },
		{ "user_namespace: yes", "user_namespace" },
		{ "user_namespace: \"\"", "user_namespace" },
		{ "egress_proxy: vivarium-egress", "name:port" },
		{ "egress_proxy: vivarium-egress:0", "name:port" },
		{ "egress_proxy: \":3128\"", "name:port" },
		{ "egress_selector: app in (x)", "label selector" },
		{ "supervisor_selector: \"\"", "supervisor_selector" },
		{ "runtime_class: gVisor", "runtime_class" },
		{ "storage_class: a_b", "storage_class" },
		{ "ephemeral_storage: 1k", "ephemeral_storage" },
		{ "kubectl: /usr/bin/kubectl", "unknown key \"kubectl\"" },
	};
	struct conf	 c;
	struct confdiag	 d;
	const char	*p;
	char		 text[512];
	size_t		 i;

	clear_env();
	p = write_conf("token: abcdefghijklmnopqrstuvwxyz\n"
	    "backend: kubernetes\n"
	    "kubernetes:\n  namespace: ns1\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), 0);
	assert_int_equal(c.backend, BACKEND_KUBERNETES);
	assert_string_equal(c.kube.namespace, "ns1");
	assert_null(c.kube.kubeconfig);
	assert_null(c.kube.image);
	assert_null(c.kube.runtime_class);
	assert_null(c.kube.storage_class);
	assert_int_equal(c.kube.agent_port, 8700);
	/* Above the subordinate ranges of useradd, the kubelet and systemd. */
	assert_int_equal(c.kube.uid_base, 0x78000000);
	assert_int_equal(c.kube.user_namespace, KUBE_USERNS_AUTO);
	assert_string_equal(c.kube.egress_host, "vivarium-egress");
	assert_int_equal(c.kube.egress_port, 3128);
	assert_string_equal(c.kube.egress_selector,
	    "app.kubernetes.io/name=vivarium-egress");
	assert_string_equal(c.kube.supervisor_selector,
	    "app.kubernetes.io/name=vivarium-supervisor");
	confdiag_release(&d);
	conf_release(&c);

	setenv("VIVARIUM_KUBE_NAMESPACE", "from-env", 1);
	setenv("VIVARIUM_KUBECONFIG", "/etc/kube.yaml", 1);
	p = write_conf("token: abcdefghijklmnopqrstuvwxyz\n"
	    "backend: kubernetes\n"
	    "kubernetes:\n"
	    "  kubeconfig: /root/.kube/config\n"
	    "  namespace: ns1\n"
	    "  image: registry.example.org/sandbox:1\n"
	    "  runtime_class: gvisor\n"
	    "  storage_class: fast.ssd\n"
	    "  agent_port: 9000\n"
	    "  uid_base: 200000\n"
	    "  user_namespace: false\n"
	    "  ephemeral_storage: 2g\n"
	    "  egress_proxy: \"[fd00::1]:8080\"\n"
	    "  egress_selector: app=egress,tier=net\n"
	    "  supervisor_selector: example.org/role=front\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), 0);
	assert_string_equal(c.kube.namespace, "from-env");
	assert_string_equal(c.kube.kubeconfig, "/etc/kube.yaml");
	assert_string_equal(c.kube.image, "registry.example.org/sandbox:1");
	assert_string_equal(c.kube.runtime_class, "gvisor");
	assert_string_equal(c.kube.storage_class, "fast.ssd");
	assert_int_equal(c.kube.agent_port, 9000);
	assert_int_equal(c.kube.uid_base, 200000);
	assert_int_equal(c.kube.user_namespace, KUBE_USERNS_OFF);
	assert_true(c.kube.ephemeral_storage == 2ULL << 30);
	assert_string_equal(c.kube.egress_host, "fd00::1");
	assert_int_equal(c.kube.egress_port, 8080);
	assert_string_equal(c.kube.egress_selector, "app=egress,tier=net");
	assert_string_equal(c.kube.supervisor_selector,
	    "example.org/role=front");
	confdiag_release(&d);
	conf_release(&c);
	clear_env();

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "token: abcdefghijklmnopqrstuvwxyz\n"
		    "backend: kubernetes\nkubernetes:\n  %s\n", bad[i][0]);
		p = write_conf(text);
		confdiag_init(&d, p);
		assert_int_equal(conf_load(&c, p, &d), -1);
		if (strstr(buf_str(&d.text), bad[i][1]) == NULL
		    || strstr(buf_str(&d.text), ":4: ") == NULL)
			fail_msg("%s: %s", bad[i][0], buf_str(&d.text));
		confdiag_release(&d);
		conf_release(&c);
	}
	unlink(p);
}

static void
test_broken_file(void **state)
{
	struct conf	 c;
	struct confdiag	 d;
	const char	*p, *t;
	char		 want[128];

	clear_env();
	p = write_conf(
	    "listen: localhost\n"			/* 1 */
	    "token: short\n"				/* 2 */
	    "provisioning: sometimes\n"			/* 3 */
	    "idle_stop_after: -5\n"			/* 4 */
	    "limits:\n  memory: lots\n  cpus: 0\n"	/* 5-7 */
	    "colour: blue\n"				/* 8 */
	    "users:\n  Alice:\n"			/* 9-10 */
	    "sandbox: [1, 2]\n"				/* 11 */
	    "egress:\n  container: e\n"		/* 12-13 */
	    "  url: http://egress:3128\n");		/* 14 */
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), -1);
	t = buf_str(&d.text);
	fputs(t, stderr);
#define HAS_LINE(n) do { \
	snprintf(want, sizeof(want), "%s:%d: ", p, (n)); \
	assert_non_null(strstr(t, want)); } while (0)
	HAS_LINE(1);
	HAS_LINE(3);
	HAS_LINE(4);
	HAS_LINE(6);
	HAS_LINE(7);
	HAS_LINE(8);
	HAS_LINE(10);
	HAS_LINE(11);
	HAS_LINE(14);
#undef HAS_LINE
	assert_non_null(strstr(t, "unknown key \"colour\""));
	assert_non_null(strstr(t, "too short"));
	assert_non_null(strstr(t, "url is no longer used"));
	assert_int_equal(d.count, 10);
	confdiag_release(&d);
	conf_release(&c);
	unlink(p);
}

static void
test_yaml_syntax_and_missing(void **state)
{
	struct conf	 c;
	struct confdiag	 d;
	const char	*p;

	clear_env();
	p = write_conf("token: [unclosed\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), -1);
	assert_non_null(strstr(buf_str(&d.text), p));
	confdiag_release(&d);
	conf_release(&c);
	unlink(p);

	confdiag_init(&d, "/nonexistent/sv.yaml");
	assert_int_equal(conf_load(&c, "/nonexistent/sv.yaml", &d), -1);
	assert_non_null(strstr(buf_str(&d.text), "/nonexistent/sv.yaml"));
	confdiag_release(&d);
	conf_release(&c);

	/* No token anywhere is an error that says where to put one. */
	confdiag_init(&d, NULL);
	assert_int_equal(conf_load(&c, NULL, &d), -1);
	assert_non_null(strstr(buf_str(&d.text), "VIVARIUM_SUPERVISOR_TOKEN"));
	confdiag_release(&d);
	conf_release(&c);

	/* allowlist with nobody listed serves nobody: refused. */
	setenv("VIVARIUM_SUPERVISOR_TOKEN", "0123456789abcdef", 1);
	setenv("VIVARIUM_PROVISIONING", "allowlist", 1);
	confdiag_init(&d, NULL);
	assert_int_equal(conf_load(&c, NULL, &d), -1);
	assert_non_null(strstr(buf_str(&d.text), "allowlist"));
	confdiag_release(&d);
	conf_release(&c);
	clear_env();
}

/* The listen address is checked as the bind takes it: -n says so too. */
static void
test_listen(void **state)
{
	static const char *const bad[] = {
		"nonsense:xyz", "localhost:8787", "127.0.0.1", "127.0.0.1:0",
		"[::1]8787",
	};
	static const struct {
		const char	*spec, *host;
		int		 port;
	} good[] = {
		{ "[::1]:9001", "::1", 9001 },
		{ ":9002", "0.0.0.0", 9002 },	/* every address */
	};
	struct conf	 c;
	struct confdiag	 d;
	char		 want[64];
	size_t		 i;

	clear_env();
	setenv("VIVARIUM_SUPERVISOR_TOKEN", "0123456789abcdef", 1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("VIVARIUM_SUPERVISOR_LISTEN", bad[i], 1);
		confdiag_init(&d, NULL);
		assert_int_equal(conf_load(&c, NULL, &d), -1);
		snprintf(want, sizeof(want), "VIVARIUM_SUPERVISOR_LISTEN=\"%s\"",
		    bad[i]);
		assert_non_null(strstr(buf_str(&d.text), want));
		confdiag_release(&d);
		conf_release(&c);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		setenv("VIVARIUM_SUPERVISOR_LISTEN", good[i].spec, 1);
		confdiag_init(&d, NULL);
		assert_int_equal(conf_load(&c, NULL, &d), 0);
		assert_string_equal(c.listen_host, good[i].host);
		assert_int_equal(c.listen_port, good[i].port);
		confdiag_release(&d);
		conf_release(&c);
	}
	clear_env();
}

/* A user's limits are read with the same keys as limits:, and named. */
static void
test_user_limits(void **state)
{
	struct conf	 c;
	struct confdiag	 d;
	const char	*p, *t;

	clear_env();
	p = write_conf(
	    "token: 0123456789abcdef\n"
	    "limits:\n  pids: 100\n"
	    "users:\n  bob:\n    cpus: 0.5\n    disk: 1g\n"	/* 4-7 */
	    "  carol:\n    pids: 8\n"				/* 8-9 */
	    "sandbox:\n  env:\n    1BAD: x\n"		/* 10-12 */
	    "podman:\n  timeout: 0\n");				/* 13-14 */
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), -1);
	t = buf_str(&d.text);
	fputs(t, stderr);
	assert_non_null(strstr(t, ":7: unknown key \"disk\" in users.bob "
	    "(known: memory, cpus, pids, workspace)"));
	assert_non_null(strstr(t, ":9: users.carol.pids: \"8\" is not a whole "
	    "number from 16 to"));
	assert_non_null(strstr(t, ":12: env: \"1BAD\" is not a variable name"));
	assert_non_null(strstr(t, ":14: podman.timeout: \"0\" is not a "
	    "duration from 1s"));
	assert_int_equal(d.count, 4);
	assert_int_equal(conf_limits(&c, "bob")->cpus_milli, 500);
	assert_int_equal(conf_limits(&c, "bob")->pids, 100);
	confdiag_release(&d);
	conf_release(&c);
	unlink(p);
}

static void
test_durations(void **state)
{
	long	 v;

	assert_int_equal(config_parse_duration("15m", 86400, &v), 0);
	assert_int_equal(v, 900);
	assert_int_equal(config_parse_duration("2h", 86400, &v), 0);
	assert_int_equal(v, 7200);
	assert_int_equal(config_parse_duration("30", 86400, &v), 0);
	assert_int_equal(v, 30);
	assert_int_equal(config_parse_duration("0", 86400, &v), 0);
	assert_int_equal(config_parse_duration("", 86400, &v), -1);
	assert_int_equal(config_parse_duration("m", 86400, &v), -1);
	assert_int_equal(config_parse_duration("1.5m", 86400, &v), -1);
	assert_int_equal(config_parse_duration("2d", 86400, &v), -1);
	assert_int_equal(config_parse_duration("-1s", 86400, &v), -1);
}

static void
test_endpoints(void **state)
{
	const char	*u;
	size_t		 n;

	assert_int_equal(endpoint_match("/mcp", &u, &n), ENDPOINT_MCP);
	assert_int_equal(endpoint_match("/mcp/", &u, &n), ENDPOINT_MCP);
	assert_int_equal(endpoint_match("/health", &u, &n), ENDPOINT_HEALTH);
	assert_int_equal(endpoint_match("/metrics", &u, &n), ENDPOINT_METRICS);
	assert_int_equal(endpoint_match("/u/alice/mcp", &u, &n), ENDPOINT_USER_MCP);
	assert_int_equal(n, 5);
	assert_memory_equal(u, "alice", 5);
	assert_int_equal(endpoint_match("/u//mcp", &u, &n), ENDPOINT_USER_MCP);
	assert_int_equal(n, 0);	/* refused later by user_id_valid */
	assert_int_equal(endpoint_match("/u/alice/mcpx", &u, &n), ENDPOINT_NONE);
	assert_int_equal(endpoint_match("/u/alice/x/mcp", &u, &n), ENDPOINT_NONE);
	assert_int_equal(endpoint_match("/u/alice", &u, &n), ENDPOINT_NONE);
	assert_int_equal(endpoint_match("/", &u, &n), ENDPOINT_NONE);
	assert_int_equal(endpoint_match("/mcpx", &u, &n), ENDPOINT_NONE);
}

static void
test_user_ids(void **state)
{
	char	 id[80];

#define OK(s)	assert_int_equal(user_id_valid(s, strlen(s)), 0)
#define BAD(s)	assert_int_equal(user_id_valid(s, strlen(s)), -1)
	OK("alice");
	OK("a");
	OK("0");
	OK("user-42");
	OK("65a1f0c2e4b0d3a1b2c3d4e5");	/* a LibreChat ObjectId */
	BAD("");
	BAD("Alice");
	BAD("-alice");
	BAD("alice-");
	BAD("al_ice");
	BAD("al.ice");
	BAD("al ice");
	BAD("../etc");
	BAD("al%2fice");
	BAD("alicé");
	memset(id, 'a', 63);
	id[63] = '\0';
	OK(id);
	id[63] = 'a';
	id[64] = '\0';
	BAD(id);
	/* An embedded NUL is caught by the length. */
	assert_int_equal(user_id_valid("ab\0c", 4), -1);
#undef OK
#undef BAD
}

static void
test_token(void **state)
{
	const char *t = "0123456789abcdef";

	assert_true(token_ok("Bearer 0123456789abcdef", t));
	assert_true(token_ok("bearer 0123456789abcdef", t));
	assert_false(token_ok("Bearer 0123456789abcde", t));
	assert_false(token_ok("Bearer 0123456789abcdefg", t));
	assert_false(token_ok("Bearer 0123456789abcdeF", t));
	assert_false(token_ok("Bearer ", t));
	assert_false(token_ok("Basic 0123456789abcdef", t));
	assert_false(token_ok("0123456789abcdef", t));
	assert_false(token_ok(NULL, t));
}

/* links.*: the transfer caps and the floor, and caps that leave no room. */
static void
test_link_traffic(void **state)
{
	struct conf	 c;
	struct confdiag	 d;
	const char	*p, *t;

	clear_env();
	setenv("VIVARIUM_SUPERVISOR_TOKEN", "0123456789abcdef", 1);
	confdiag_init(&d, NULL);
	assert_int_equal(conf_load(&c, NULL, &d), 0);
	assert_int_equal(c.link_max_transfers, 128);
	assert_int_equal(c.link_max_per_address, 32);
	assert_int_equal(c.link_max_per_link, 8);
	assert_int_equal(c.link_min_rate, 1024);
	assert_int_equal(c.link_rate_grace, 60);
	confdiag_release(&d);
	conf_release(&c);

	p = write_conf("max_connections: 64\nmax_connections_per_address: 64\n"
	    "links:\n  max_transfers: 32\n  max_transfers_per_address: 32\n"
	    "  max_transfers_per_link: 4\n  min_rate: 1m\n  rate_grace: 45s\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), 0);
	assert_int_equal(c.link_max_transfers, 32);
	assert_int_equal(c.link_max_per_address, 32);
	assert_int_equal(c.link_max_per_link, 4);
	assert_int_equal(c.link_min_rate, 1 << 20);
	assert_int_equal(c.link_rate_grace, 45);
	confdiag_release(&d);
	conf_release(&c);

	/* Not given: past a slow sandbox start, not an error. */
	p = write_conf("ready_timeout: 60s\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), 0);
	assert_int_equal(c.link_rate_grace, 90);
	confdiag_release(&d);
	conf_release(&c);

	/* No room left for /mcp, in total and per address; a window shorter
	 * than starting a sandbox: all three named in one run. */
	p = write_conf("max_connections: 64\nmax_connections_per_address: 16\n"
	    "ready_timeout: 30s\n"
	    "links:\n  max_transfers: 33\n  max_transfers_per_address: 16\n"
	    "  rate_grace: 30s\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), -1);
	t = buf_str(&d.text);
	assert_int_equal(d.count, 3);
	assert_non_null(strstr(t, "max_transfers (33) must leave room for "
	    "/mcp and /health: at most max_connections - 32 (32)"));
	assert_non_null(strstr(t, "max_transfers_per_address (16) must be "
	    "below max_connections_per_address (16)"));
	assert_non_null(strstr(t, "rate_grace (30s) must be longer than "
	    "ready_timeout (30s)"));
	confdiag_release(&d);
	conf_release(&c);
	/* No floor: no window to check. */
	p = write_conf("ready_timeout: 30s\nlinks:\n  min_rate: 0\n"
	    "  rate_grace: 10s\n");
	confdiag_init(&d, p);
	assert_int_equal(conf_load(&c, p, &d), 0);
	confdiag_release(&d);
	conf_release(&c);
	unlink(p);
	clear_env();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_traffic),
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_ids_and_quota_refused),
		cmocka_unit_test(test_defaults_and_env),
		cmocka_unit_test(test_broken_file),
		cmocka_unit_test(test_yaml_syntax_and_missing),
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_user_limits),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_backend),
		cmocka_unit_test(test_kubernetes),
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_user_ids),
		cmocka_unit_test(test_token),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
