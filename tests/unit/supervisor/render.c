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
	free(s);
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
	    "vivarium-egress\nEnvironment=http_proxy=http://10.213.0.254:3128 "
	    "https_proxy=http://10.213.0.254:3128 "
	    "HTTP_PROXY=http://10.213.0.254:3128 "
	    "HTTPS_PROXY=http://10.213.0.254:3128 no_proxy= NO_PROXY=\n"));
	free(s);
	/* No network yet: no address to give, and it says what to do. */
	assert_int_equal(render_user(conf("vivarium-egress"), p, "bob",
	    "templates", out), 0);
	s = slurp("vivarium-bob.container");
	assert_non_null(strstr(s, "\n# egress: the network vivarium-bob does "
	    "not exist yet"));
	assert_null(strstr(s, "http_proxy"));
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_user),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
