/*
 * Unit tests for supervisor/files.c, the relay behind file links: the pool
 * is stubbed.  What a link holder's page says when the sandbox cannot be
 * reached (never a host path: the detail goes to the log).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Before cmocka.h: its fail() macro would take files.c's fail(). */
#include "../../../supervisor/files.c"

#include <cmocka.h>

/* ---------------------------------------------------------------- pool */

static struct agent_addr	 fake_addr;
static struct pool_err		 acquire_err;
static int			 acquire_fails;

struct sandbox *
pool_acquire(const char *user, unsigned stale_gen, struct pool_err *err)
{
	if (acquire_fails) {
		*err = acquire_err;
		return NULL;
	}
	return (struct sandbox *)&fake_addr;
}

void
pool_release(struct sandbox *sb)
{
}

const struct agent_addr *
pool_addr(const struct sandbox *sb)
{
	return &fake_addr;
}

unsigned
pool_gen(const struct sandbox *sb)
{
	return 1;
}

/* ---------------------------------------------------------------- stderr */

static struct {
	FILE	*f;
	int	 saved;
} cap;

static void
capture_begin(void)
{
	fflush(stderr);
	assert_non_null(cap.f = tmpfile());
	cap.saved = dup(2);
	assert_int_equal(dup2(fileno(cap.f), 2), 2);
}

static const char *
capture_end(void)
{
	static char	 out[16384];
	size_t		 n;

	fflush(stderr);
	assert_int_equal(dup2(cap.saved, 2), 2);
	close(cap.saved);
	rewind(cap.f);
	n = fread(out, 1, sizeof(out) - 1, cap.f);
	out[n] = '\0';
	fclose(cap.f);
	return out;
}

static struct conf	 tconf;

static int
setup(void **state)
{
	memset(&tconf, 0, sizeof(tconf));
	tconf.agent_timeout = 5;
	conf = &tconf;
	acquire_fails = 0;
	memset(&acquire_err, 0, sizeof(acquire_err));
	return 0;
}

/* ---------------------------------------------------------------- tests */

static void
assert_no_host_path(const struct fw_error *e, const char *path)
{
	if (strstr(e->msg, path) != NULL || strstr(e->msg, "/run/") != NULL ||
	    strstr(e->msg, ".sock") != NULL || strstr(e->msg, "Podman") != NULL)
		fail_msg("the page names a host path: %s", e->msg);
	assert_non_null(strstr(e->msg, "not available right now"));
}

static void
test_podman_down_names_no_path(void **state)
{
	static const char sock[] = "/run/vivarium-test/podman/podman.sock";
	struct fw_error	 e;
	struct fw_reader r;
	const char	*log;

	acquire_fails = 1;
	acquire_err.http = 503;
	snprintf(acquire_err.msg, sizeof(acquire_err.msg), "the sandbox for "
	    "\"alice\" cannot be started right now: Podman is not reachable "
	    "at %s (Couldn't connect to server): is `podman system service` "
	    "running?", sock);

	capture_begin();
	memset(&e, 0, sizeof(e));
	assert_null(sv_list(NULL, "alice", &e));
	log = capture_end();
	assert_int_equal(e.status, 503);
	assert_no_host_path(&e, sock);
	assert_non_null(strstr(log, sock));		/* the operator's */
	assert_non_null(strstr(log, "user alice"));

	memset(&e, 0, sizeof(e));
	memset(&r, 0, sizeof(r));
	capture_begin();
	assert_int_equal(sv_open(NULL, "alice", "a.csv", &r, &e), -1);
	assert_null(sv_put_begin(NULL, "alice", "up.csv", &e));
	log = capture_end();
	assert_no_host_path(&e, sock);
	assert_non_null(strstr(log, sock));
}

static void
test_agent_socket_names_no_path(void **state)
{
	static const char sock[] = "/tmp/vivarium-test-nobody/users/alice/"
	    "agent.sock";
	struct fw_error	 e;
	struct fw_reader r;
	const char	*log;

	agent_addr_unix(&fake_addr, sock);
	capture_begin();
	memset(&e, 0, sizeof(e));
	assert_null(sv_list(NULL, "alice", &e));
	log = capture_end();
	assert_int_equal(e.status, 502);
	assert_no_host_path(&e, sock);
	assert_non_null(strstr(log, sock));

	capture_begin();
	memset(&e, 0, sizeof(e));
	memset(&r, 0, sizeof(r));
	assert_int_equal(sv_open(NULL, "alice", "a.csv", &r, &e), -1);
	assert_no_host_path(&e, sock);
	memset(&e, 0, sizeof(e));
	assert_null(sv_put_begin(NULL, "alice", "up.csv", &e));
	log = capture_end();
	assert_no_host_path(&e, sock);
	assert_non_null(strstr(log, sock));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_podman_down_names_no_path, setup),
		cmocka_unit_test_setup(test_agent_socket_names_no_path, setup),
	};

	signal(SIGPIPE, SIG_IGN);
	log_init("vivarium-test", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
