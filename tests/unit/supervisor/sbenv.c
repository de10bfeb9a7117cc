/*
 * Unit tests for supervisor/sbenv.c: the names, labels and environment every
 * backend's sandbox shares.  The shapes each backend puts them in are
 * backend_podman_spec.c's, kspec.c's and render.c's tests; here, the list
 * itself: the order, and what comes later winning in the first place.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../supervisor/sbenv.c"

#define S(x)	((char *)(uintptr_t)(x))

static void
test_names_labels(void **state)
{
	struct sbenv_names	 n;
	struct sbenv_label	 l[SBENV_LABELS_MAX];

	assert_int_equal(sbenv_names("alice", &n), 0);
	assert_string_equal(n.sandbox, "vivarium-alice");
	assert_string_equal(n.workspace, "vivarium-alice-workspace");
	assert_int_equal(sbenv_names("../etc", &n), -1);
	assert_int_equal(sbenv_names("", &n), -1);
	assert_int_equal(sbenv_labels(0, "alice", l), 2);
	assert_string_equal(l[0].key, "io.vivarium.managed");
	assert_string_equal(l[0].value, "true");
	assert_string_equal(l[1].key, "io.vivarium.user");
	assert_string_equal(l[1].value, "alice");
	assert_int_equal(sbenv_labels(1, "alice", l), 3);
	assert_string_equal(l[2].key, "vivarium.io/user");
	assert_string_equal(l[2].value, "alice");
}

/* name=value,... of e, in order. */
static char *
joined(const struct sbenv *e)
{
	static char	 s[2048];
	size_t		 i, n = 0;

	s[0] = '\0';
	for (i = 0; i < e->n; i++)
		n += (size_t)snprintf(s + n, sizeof(s) - n, "%s%s=%s",
		    i > 0 ? "," : "", e->v[i].name, e->v[i].value);
	return s;
}

static void
test_env(void **state)
{
	struct conf	 c;
	struct kv	 env[] = { { S("LANG"), S("C") },
	    { S("VIVARIUM_PORT"), S("8000") },
	    { S("VIVARIUM_SOCKET"), S("/elsewhere") },
	    { S("USER"), S("bob") } };
	struct sbenv_how sock = { .proxy = "10.0.0.254", .proxy_port = 3128,
	    .socket_mode = "0660" };
	struct sbenv_how tcp = { .login = "sandbox", .tcp_port = 8700,
	    .secret = "s3cret" };
	struct sbenv	 e;

	memset(&c, 0, sizeof(c));
	c.env = env;
	c.nenv = 4;
	/* On the socket: ours over sandbox.env's, in sandbox.env's place. */
	assert_int_equal(sbenv_make(&c, "alice", &sock, &e), 0);
	assert_string_equal(joined(&e), "LANG=C,VIVARIUM_PORT=off,"
	    "VIVARIUM_SOCKET=/run/vivarium/agent.sock,USER=bob,"
	    "http_proxy=http://10.0.0.254:3128,"
	    "https_proxy=http://10.0.0.254:3128,"
	    "HTTP_PROXY=http://10.0.0.254:3128,"
	    "HTTPS_PROXY=http://10.0.0.254:3128,no_proxy=,NO_PROXY=,"
	    "VIVARIUM_SOCKET_MODE=0660");
	sbenv_release(&e);
	assert_int_equal(e.n, 0);
	/* On TCP: a login name sandbox.env may change, no socket at all. */
	assert_int_equal(sbenv_make(&c, "alice", &tcp, &e), 0);
	assert_string_equal(joined(&e), "USER=bob,LOGNAME=sandbox,LANG=C,"
	    "VIVARIUM_PORT=8700,VIVARIUM_HOST=0.0.0.0,"
	    "VIVARIUM_AGENT_SECRET=s3cret");
	assert_null(sbenv_get(&e, "VIVARIUM_SOCKET"));
	assert_null(sbenv_get(&e, "http_proxy"));
	sbenv_release(&e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_labels),
		cmocka_unit_test(test_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
