/*
 * Unit tests for supervisor/files.c, the relay behind file links: a
 * scripted server on a unix socket plays the user's agent, and the pool
 * is stubbed.  What a link holder's page says when the sandbox cannot be
 * reached (never a host path: the detail goes to the log), and how much
 * of a sandbox's listing is read (FW_LIST_MAX, then a clear refusal).
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

/* ---------------------------------------------------------------- agent */

static struct {
	int		 fd;
	char		 path[108];
	pthread_t	 thread;
	const char	*head;
	size_t		 body_len;	/* a listing of about this size */
} srv;

static void *
srv_main(void *arg)
{
	char	 req[8192], entry[256];
	size_t	 n = 0, sent;
	ssize_t	 r;
	int	 c, i;

	if ((c = accept(srv.fd, NULL, NULL)) == -1)
		return NULL;
	while (n < sizeof(req) - 1 && (r = read(c, req + n,
	    sizeof(req) - 1 - n)) > 0) {
		n += (size_t)r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	/* Stops at the first failed write: the relay hung up. */
	if (write(c, srv.head, strlen(srv.head)) > 0 &&
	    write(c, "{\"files\":[", 10) > 0) {
		for (i = 0, sent = 10; sent < srv.body_len; i++) {
			n = (size_t)snprintf(entry, sizeof(entry), "%s{\"path\":"
			    "\"dir/file-%08d.csv\",\"size\":1,\"mtime\":1}",
			    i ? "," : "", i);
			if (write(c, entry, n) <= 0)
				break;
			sent += n;
		}
		(void)!write(c, "],\"truncated\":false}", 20);
	}
	close(c);
	return NULL;
}

static void
srv_start(const char *head, size_t body_len)
{
	struct sockaddr_un sun;

	srv.head = head;
	srv.body_len = body_len;
	snprintf(srv.path, sizeof(srv.path), "/tmp/fakeagent-files.%d.sock",
	    (int)getpid());
	unlink(srv.path);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, srv.path, strlen(srv.path) + 1);
	srv.fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(srv.fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(srv.fd, 4), 0);
	agent_addr_unix(&fake_addr, srv.path);
	pthread_create(&srv.thread, NULL, srv_main, NULL);
}

static void
srv_stop(void)
{
	pthread_join(srv.thread, NULL);
	close(srv.fd);
	unlink(srv.path);
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

static void
test_list_read_bounded(void **state)
{
	struct fw_error	 e;
	json_t		*j;
	char		 head[256];
	const char	*log;

	/* Control: a listing under the bound is read whole. */
	srv_start("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Connection: close\r\n\r\n", 200 * 1024);
	memset(&e, 0, sizeof(e));
	assert_non_null(j = sv_list(NULL, "alice", &e));
	assert_true(json_array_size(json_object_get(j, "files")) > 3000);
	json_decref(j);
	srv_stop();

	/* Said too long in the head: refused before reading. */
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: "
	    "application/json\r\nContent-Length: %u\r\nConnection: close\r\n"
	    "\r\n", 16u << 20);
	srv_start(head, 16u << 20);
	memset(&e, 0, sizeof(e));
	capture_begin();
	assert_null(sv_list(NULL, "alice", &e));
	log = capture_end();
	srv_stop();
	assert_int_equal(e.status, 502);
	assert_string_equal(e.msg, "The sandbox's list of files is larger than "
	    "1.0 MB, the most read from a sandbox here, so it cannot be "
	    "shown.");
	assert_non_null(strstr(log, "user alice"));

	/* Not said (read to the end): refused once past the bound. */
	srv_start("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Connection: close\r\n\r\n", 4u << 20);
	memset(&e, 0, sizeof(e));
	capture_begin();
	assert_null(sv_list(NULL, "alice", &e));
	(void)capture_end();
	srv_stop();
	assert_int_equal(e.status, 502);
	assert_non_null(strstr(e.msg, "larger than 1.0 MB"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_podman_down_names_no_path, setup),
		cmocka_unit_test_setup(test_agent_socket_names_no_path, setup),
		cmocka_unit_test_setup(test_list_read_bounded, setup),
	};

	signal(SIGPIPE, SIG_IGN);
	log_init("vivarium-test", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
