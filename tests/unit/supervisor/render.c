/*
 * Unit tests for supervisor/render.c, vivariumctl render: placeholder
 * filling, and the real templates filled for a user, with the egress
 * proxy's address from a recorded Podman reply (podman_server.h).
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

#include "shell.h"
#include "supervisor/podman_server.h"

#include "../../../supervisor/render.c"

#define API	"/v4.0.0/libpod"
#define S(x)	((char *)(uintptr_t)(x))

static char	 out[] = "/tmp/viv-render-test-XXXXXX";

static int
setup(void **state)
{
	assert_non_null(mkdtemp(out));
	return 0;
}

static int
teardown(void **state)
{
	sh("rm -rf %s", out);
	return 0;
}

static char *
fill(const char *text, size_t max)
{
	static const char *const vars[] = { "USER", "alice", "EMPTY", "",
	    "U", "x", NULL };
	struct buf	 b = BUF_INIT(max);

	if (render_text(text, vars, &b) == -1) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

static void
test_text(void **state)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "vivarium-{{USER}}.container", "vivarium-alice.container" },
		{ "{{USER}}{{USER}}", "alicealice" },
		{ "a{{EMPTY}}b", "ab" },
		{ "{{U}}{{USER}}", "xalice" },
		/* Not ours, or not a placeholder: left as it is. */
		{ "{{OTHER}} {{user}} {{ USER }}", "{{OTHER}} {{user}} {{ USER }}" },
		{ "{{USER", "{{USER" },
		{ "{USER}} {{}}", "{USER}} {{}}" },
		{ "{{{USER}}}", "{alice}" },
		{ "", "" },
	};
	char	*s;
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = fill(cases[i].in, 1024);
		assert_non_null(s);
		assert_string_equal(s, cases[i].want);
		free(s);
	}
	/* Past the cap: refused, not cut short. */
	assert_null(fill("{{USER}}{{USER}}", 8));
	s = fill("{{USER}}{{USER}}", 11);
	assert_string_equal(s, "alicealice");
	free(s);
}

static struct conf *
conf(const char *egress)
{
	static struct conf	 c;

	memset(&c, 0, sizeof(c));
	c.state_dir = S("/var/lib/vivarium");
	c.image = S("localhost/vivarium-sandbox:test");
	c.sandbox_user = S("1000:1000");
	c.limits.memory = 2ULL << 30;
	c.limits.cpus_milli = 1500;
	c.limits.pids = 128;
	c.egress_container = S(egress);
	c.egress_port = 3128;
	c.tmp_size = 64ULL << 20;
	c.stop_timeout = 7;
	return &c;
}

static char *
slurp(const char *name)
{
	char	 path[256], *s;
	FILE	*f;
	long	 n;

	snprintf(path, sizeof(path), "%s/%s", out, name);
	assert_non_null(f = fopen(path, "r"));
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	s = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

static void
test_user(void **state)
{
	static const struct fake_route r[] = {
		{ "GET", API "/networks/vivarium-alice/json",
		    "network-inspect.http" },
		{ "GET", API "/networks/vivarium-bob/json",
		    "network-exists-missing.http" },
		{ NULL, NULL, NULL } };
	struct podman	*p = podman_new(fake_start(r), 5000);
	char		*s;

	/* Without egress: said so, and every placeholder filled. */
	assert_int_equal(render_user(conf(NULL), p, "alice", "templates", out),
	    0);
	s = slurp("vivarium-alice.container");
	assert_null(strstr(s, "{{"));
	assert_non_null(strstr(s, "\n# no egress proxy configured\n"));
	assert_non_null(strstr(s, "\nContainerName=vivarium-alice\n"));
	assert_non_null(strstr(s, "\nUser=1000:1000\n"));
	assert_non_null(strstr(s, "\nVolume=/var/lib/vivarium/users/alice:"
	    "/run/vivarium:rw\n"));
	assert_non_null(strstr(s, "--memory=2048m --cpus=1.50 "
	    "--pids-limit=128\n"));
	/* The spec's tmpfs size, not a number of the template's own. */
	assert_non_null(strstr(s, "--tmpfs=/tmp:rw,nosuid,nodev,size=67108864\n"));
	assert_non_null(strstr(s, "\nPodmanArgs=--http-proxy=false "
	    "--stop-timeout=7\n"));
	assert_non_null(strstr(s, "\nEnvironment=\"VIVARIUM_SOCKET="
	    "/run/vivarium/agent.sock\"\nEnvironment=\"VIVARIUM_PORT=off\"\n"));
	assert_non_null(strstr(s, "\n# The runtime: Podman's default\n"));
	assert_null(strstr(s, "--runtime"));
	free(s);
	/* Under gVisor: its runtime, and the pids limit the spec scales. */
	{
		struct conf	*c = conf(NULL);
		json_t		*spec;
		char		 want[64];

		c->runsc = 1;
		assert_int_equal(render_user(c, p, "alice", "templates", out),
		    0);
		spec = sandbox_container_spec(c, "alice", NULL,
		    &(struct sandbox_host){ 0 });
		snprintf(want, sizeof(want), "--pids-limit=%lld\n",
		    (long long)json_integer_value(json_object_get(json_object_get(
		    json_object_get(spec, "resource_limits"), "pids"), "limit")));
		json_decref(spec);
		assert_string_not_equal(want, "--pids-limit=128\n");
		s = slurp("vivarium-alice.container");
		assert_non_null(strstr(s, want));
		assert_non_null(strstr(s, "\nPodmanArgs=--runtime=runsc\n"));
		free(s);
	}
	/* sandbox.env: one line each, quoted as systemd unquotes, before ours. */
	{
		struct conf	*c = conf(NULL);
		struct kv	 env[] = { { S("LANG"), S("C.UTF-8") },
		    { S("MSG"), S("say \"hi\" 50% a\\b") } };
		char		*ours, *mine;

		c->env = env;
		c->nenv = 2;
		assert_int_equal(render_user(c, p, "alice", "templates", out),
		    0);
		s = slurp("vivarium-alice.container");
		assert_non_null(mine = strstr(s, "\nEnvironment=\"LANG=C.UTF-8\"\n"
		    "Environment=\"MSG=say \\\"hi\\\" 50%% a\\\\b\"\n"));
		assert_non_null(ours = strstr(s, "\nEnvironment=\"VIVARIUM_SOCKET="));
		assert_true(mine < ours);
		free(s);
		/* A newline has no way into a unit line: nothing written. */
		env[1].value = S("two\nlines");
		assert_int_equal(render_user(c, p, "dave", "templates", out),
		    -1);
		assert_int_not_equal(asprintf(&s, "%s/vivarium-dave.container",
		    out), -1);
		assert_int_equal(access(s, F_OK), -1);
		free(s);
	}
	s = slurp("vivarium-alice.network");
	assert_null(strstr(s, "{{"));
	assert_non_null(strstr(s, "\nNetworkName=vivarium-alice\n"));
	assert_non_null(strstr(s, "\nOptions=isolate=true\n"));
	free(s);
	/* With it: the spec's proxy variables at the subnet's last address
	 * (10.213.0.0/24 in the recorded reply). */
	assert_int_equal(render_user(conf("vivarium-egress"), p, "alice",
	    "templates", out), 0);
	s = slurp("vivarium-alice.container");
	assert_non_null(strstr(s, "\n# The egress proxy, connected with: "
	    "podman network connect --ip 10.213.0.254 vivarium-alice "
	    "vivarium-egress\n"));
	assert_non_null(strstr(s, "\nEnvironment=\"VIVARIUM_PORT=off\"\n"
	    "Environment=\"http_proxy=http://10.213.0.254:3128\"\n"
	    "Environment=\"https_proxy=http://10.213.0.254:3128\"\n"
	    "Environment=\"HTTP_PROXY=http://10.213.0.254:3128\"\n"
	    "Environment=\"HTTPS_PROXY=http://10.213.0.254:3128\"\n"
	    "Environment=\"no_proxy=\"\nEnvironment=\"NO_PROXY=\"\n"));
	free(s);
	/* No network yet: no address to give, and it says what to do. */
	assert_int_equal(render_user(conf("vivarium-egress"), p, "bob",
	    "templates", out), 0);
	s = slurp("vivarium-bob.container");
	assert_non_null(strstr(s, "\n# egress: the network vivarium-bob does "
	    "not exist yet"));
	assert_null(strstr(s, "Environment=\"http_proxy"));
	free(s);
	assert_string_equal(fake_last().target, API "/networks/vivarium-bob/json");
	/* A bad id renders nothing; a missing template is an error. */
	assert_int_equal(render_user(conf(NULL), p, "../x", "templates", out),
	    -1);
	assert_int_equal(render_user(conf(NULL), p, "carol", "/nonexistent",
	    out), -1);
	s = NULL;
	assert_int_not_equal(asprintf(&s, "%s/vivarium-carol.network", out), -1);
	assert_int_equal(access(s, F_OK), -1);
	free(s);
	podman_free(p);
	fake_stop();
}

/*
 * A rendered unit's Environment="K=V" lines (systemd's unquoting: \\, \"
 * and %%) or its Label=K=V lines, as a JSON object in their order.
 */
static json_t *
unit_pairs(const char *text, const char *key)
{
	json_t		*o = json_object();
	const char	*p, *eol;
	char		 line[1024], *eq;
	size_t		 n, klen = strlen(key);

	for (p = text; *p != '\0'; p = *eol != '\0' ? eol + 1 : eol) {
		eol = strchr(p, '\n');
		if (eol == NULL)
			eol = p + strlen(p);
		if ((size_t)(eol - p) <= klen || strncmp(p, key, klen) != 0)
			continue;
		p += klen;
		n = 0;
		if (*p == '"')
			p++;
		for (; p < eol && n < sizeof(line) - 1; p++) {
			if (*p == '"' && p + 1 == eol)
				break;
			if (*p == '\\' || (*p == '%' && p[1] == '%'))
				p++;
			line[n++] = *p;
		}
		line[n] = '\0';
		assert_non_null(eq = strchr(line, '='));
		*eq = '\0';
		json_object_set_new(o, line, json_string(eq + 1));
	}
	return o;
}

/* Both in the same order, as the sandbox would see them. */
static void
assert_same_pairs(const json_t *have, const json_t *want)
{
	void		*i = json_object_iter((json_t *)(uintptr_t)have);
	void		*j = json_object_iter((json_t *)(uintptr_t)want);

	for (; i != NULL && j != NULL; i = json_object_iter_next(
	    (json_t *)(uintptr_t)have, i), j = json_object_iter_next(
	    (json_t *)(uintptr_t)want, j)) {
		assert_string_equal(json_object_iter_key(i),
		    json_object_iter_key(j));
		assert_string_equal(json_string_value(json_object_iter_value(i)),
		    json_string_value(json_object_iter_value(j)));
	}
	assert_null(i);
	assert_null(j);
}

/*
 * The quadlet sandbox against the one the supervisor makes
 * (backend_podman_spec.c): the same environment, in the same order, but for the
 * file links (nothing would write their key file), and the same labels.  A
 * template or a builder that drifts fails here.
 */
static void
test_same_as_spec(void **state)
{
	static const struct fake_route r[] = {
		{ "GET", API "/networks/vivarium-alice/json",
		    "network-inspect.http" },
		{ NULL, NULL, NULL } };
	static const struct sandbox_host nohost;
	struct podman	*p = podman_new(fake_start(r), 5000);
	struct conf	*c = conf("vivarium-egress");
	struct kv	 env[] = { { S("LANG"), S("C.UTF-8") },
	    { S("MSG"), S("say \"hi\" 50% a\\b") },
	    { S("VIVARIUM_PORT"), S("8000") } };
	char		 hex[LINK_KEY_HEX + 1], *s;
	json_t		*have, *have2, *want, *links, *spec;
	const char	*k;
	void		*tmp;
	json_t		*v;
	int		 keyed;

	c->env = env;
	c->nenv = 3;
	c->public_url = S("https://files.example.org");
	memset(hex, 'a', LINK_KEY_HEX);
	hex[LINK_KEY_HEX] = '\0';
	for (keyed = 0; keyed < 2; keyed++) {
		if (keyed)
			assert_int_equal(link_keys_set_user(&c->link_keys,
			    "alice", hex, NULL, 0), 0);
		assert_int_equal(render_user(c, p, "alice", "templates", out),
		    0);
		s = slurp("vivarium-alice.container");
		have = unit_pairs(s, "Environment=");
		want = sandbox_env(c, "alice", "10.213.0.254");
		links = json_object();
		sandbox_link_env_file(c, "alice", links);
		assert_int_equal(json_object_size(links), keyed ? 8 : 0);
		json_object_foreach_safe(links, tmp, k, v)
			json_object_del(want, k);
		assert_same_pairs(have, want);
		json_decref(links);
		json_decref(want);
		json_decref(have);
		/* The container's labels, and the network's. */
		spec = sandbox_container_spec(c, "alice", "10.213.0.254",
		    &nohost);
		have = unit_pairs(s, "Label=");
		assert_same_pairs(have, json_object_get(spec, "labels"));
		json_decref(have);
		json_decref(spec);
		free(s);
		s = slurp("vivarium-alice.network");
		spec = sandbox_network_spec(c, "alice", "true");
		have = unit_pairs(s, "Label=");
		assert_same_pairs(have, json_object_get(spec, "labels"));
		/* The same bridge name. */
		have2 = unit_pairs(s, "PodmanArgs=--");
		assert_string_equal(json_string_value(json_object_get(have2,
		    "interface-name")), json_string_value(json_object_get(spec,
		    "network_interface")));
		json_decref(have2);
		json_decref(have);
		json_decref(spec);
		free(s);
		/* The workspace volume's name and labels. */
		s = slurp("vivarium-alice-workspace.volume");
		spec = sandbox_volume_spec("alice", &nohost);
		have = unit_pairs(s, "Label=");
		assert_same_pairs(have, json_object_get(spec, "Labels"));
		assert_string_equal(json_string_value(json_object_get(spec,
		    "Name")), "vivarium-alice-workspace");
		assert_non_null(strstr(s,
		    "\nVolumeName=vivarium-alice-workspace\n"));
		json_decref(have);
		json_decref(spec);
		free(s);
	}
	memset(&c->link_keys, 0, sizeof(c->link_keys));
	podman_free(p);
	fake_stop();
}

/*
 * render --kubernetes: three JSON documents in one YAML stream, the same
 * objects kspec.c builds (tests/unit/supervisor/kspec.c checks them by
 * value), the Pod with a random secret; none without a key.
 */
static void
test_kube(void **state)
{
	struct conf	*c = conf(NULL);
	char		 path[256], secret[KSPEC_SECRET_HEX + 1], *text, *doc;
	static const char *const kinds[] = { "PersistentVolumeClaim",
	    "NetworkPolicy", "Pod" };
	const json_t	*env, *e;
	json_t		*j;
	FILE		*f;
	size_t		 i, k;
	int		 found = 0;

	c->kube.namespace = S("ns");
	c->kube.agent_port = 8700;
	c->kube.uid_base = 100000;
	c->kube.ephemeral_storage = 1ULL << 30;
	c->kube.egress_host = S("127.0.0.1");
	c->kube.egress_port = 3128;
	c->kube.egress_selector = S("app.kubernetes.io/name=vivarium-egress");
	c->kube.supervisor_selector =
	    S("app.kubernetes.io/name=vivarium-supervisor");
	c->link_key_file = S("/nonexistent/link.key");
	snprintf(path, sizeof(path), "%s/kube.yaml", out);
	assert_non_null(f = fopen(path, "w"));
	/* No master key: no secret, so nothing is printed. */
	assert_int_equal(render_kube(c, "alice", 0, 0, f), -1);
	assert_int_equal(ftell(f), 0);
	c->link_keys.have_master = 1;
	memset(c->link_keys.master, 7, sizeof(c->link_keys.master));
	assert_int_equal(render_kube(c, "alice", 0, 0, f), 0);
	fclose(f);
	text = slurp("kube.yaml");
	assert_int_equal(strncmp(text, "---\n", 4), 0);
	doc = text + 4;
	for (k = 0; k < 3; k++) {
		char *next = strstr(doc, "\n---\n");

		if (k < 2)
			assert_non_null(next);
		else
			assert_null(next);
		if (next != NULL)
			*next = '\0';
		assert_non_null(j = json_loads(doc, 0, NULL));
		assert_string_equal(json_string_value(json_object_get(j, "kind")),
		    kinds[k]);
		if (k == 2) {
			env = json_object_get(json_array_get(json_object_get(
			    json_object_get(j, "spec"), "containers"), 0),
			    "env");
			json_array_foreach(env, i, e)
				if (strcmp(json_string_value(json_object_get(e,
				    "name")), "VIVARIUM_AGENT_SECRET") == 0) {
					/* A fresh random one, as for a new Pod. */
					snprintf(secret, sizeof(secret), "%s",
					    json_string_value(json_object_get(e,
					    "value")));
					assert_int_equal(strlen(secret),
					    KSPEC_SECRET_HEX);
					assert_int_equal(strspn(secret,
					    "0123456789abcdef"),
					    KSPEC_SECRET_HEX);
					found = 1;
				}
		}
		json_decref(j);
		if (next != NULL)
			doc = next + 5;
	}
	assert_true(found);
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_user),
		cmocka_unit_test(test_same_as_spec),
		cmocka_unit_test(test_kube),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
