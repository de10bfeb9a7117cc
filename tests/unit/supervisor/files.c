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
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Before cmocka.h: its fail() macro would take files.c's fail(). */
#include "../../../supervisor/files.c"
#include "fdpass.h"

#include <cmocka.h>

/* ---------------------------------------------------------------- pool */

static struct agent_addr	 fake_addr;
static struct berr		 acquire_err;
static int			 acquire_fails;
/* Asked again about a sandbox whose agent was not there: it moved here. */
static struct agent_addr	 moved_addr;
static int			 moved, asked_again;

struct pool_entry *
pool_acquire(const char *user, unsigned stale_gen, struct berr *err)
{
	if (stale_gen != 0) {
		asked_again++;
		if (moved)
			fake_addr = moved_addr;
	}
	if (acquire_fails) {
		*err = acquire_err;
		return NULL;
	}
	return (struct pool_entry *)&fake_addr;
}

void
pool_release(struct pool_entry *sb)
{
}

const struct agent_addr *
pool_addr(const struct pool_entry *sb)
{
	return &fake_addr;
}

unsigned
pool_gen(const struct pool_entry *sb)
{
	return 1;
}

/* relay_open takes none for file links: they are never kept. */
int
pool_conn_take(struct pool_entry *sb)
{
	return -1;
}

void
pool_conn_put(struct pool_entry *sb, int fd)
{
	close(fd);
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

/*
 * An agent that may hand a file over: per connection, the request head is
 * kept, the file (if any) handed over, the answer written; with a final
 * answer, the request's body is read to its end first and kept.
 */
struct script {
	int		 pass;		/* -1: hand nothing over */
	const char	*answer;
	const char	*final;		/* NULL: none */
	char		 req[8192];
	char		 body[512];
	size_t		 nbody;
};

static struct {
	int		 fd;
	char		 path[108];
	pthread_t	 thread;
	struct script	*s[2];
	int		 n;
} fsrv;

static void
fsrv_one(int c, struct script *s)
{
	size_t	 n = 0, hl;
	ssize_t	 r;
	char	*end;

	while (n < sizeof(s->req) - 1 && (r = read(c, s->req + n,
	    sizeof(s->req) - 1 - n)) > 0) {
		n += (size_t)r;
		s->req[n] = '\0';
		if ((end = strstr(s->req, "\r\n\r\n")) != NULL)
			break;
	}
	if ((end = strstr(s->req, "\r\n\r\n")) == NULL)
		return;
	hl = (size_t)(end + 4 - s->req);
	s->nbody = n - hl;
	memcpy(s->body, s->req + hl, s->nbody);
	s->req[hl] = '\0';
	if (s->pass != -1 && fdpass_send(c, s->pass) == -1)
		return;
	if (write(c, s->answer, strlen(s->answer)) < 0 || s->final == NULL)
		return;
	for (;;) {
		s->body[s->nbody] = '\0';
		if (strstr(s->body, "0\r\n\r\n") != NULL)
			break;
		if (s->nbody >= sizeof(s->body) - 1 || (r = read(c, s->body +
		    s->nbody, sizeof(s->body) - 1 - s->nbody)) <= 0)
			return;		/* the relay hung up */
		s->nbody += (size_t)r;
	}
	(void)!write(c, s->final, strlen(s->final));
}

static void *
fsrv_main(void *arg)
{
	int	 i, c;

	for (i = 0; i < fsrv.n; i++) {
		if ((c = accept(fsrv.fd, NULL, NULL)) == -1)
			return NULL;
		fsrv_one(c, fsrv.s[i]);
		close(c);
	}
	return NULL;
}

static void
fsrv_start(struct script *a, struct script *b)
{
	struct sockaddr_un sun;

	fsrv.s[0] = a;
	fsrv.s[1] = b;
	fsrv.n = b != NULL ? 2 : 1;
	snprintf(fsrv.path, sizeof(fsrv.path), "/tmp/fakeagent-fd.%d.sock",
	    (int)getpid());
	unlink(fsrv.path);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, fsrv.path, strlen(fsrv.path) + 1);
	fsrv.fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fsrv.fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fsrv.fd, 4), 0);
	agent_addr_unix(&fake_addr, fsrv.path);
	pthread_create(&fsrv.thread, NULL, fsrv_main, NULL);
}

static void
fsrv_stop(void)
{
	pthread_join(fsrv.thread, NULL);
	close(fsrv.fd);
	unlink(fsrv.path);
}

static int
open_fds(void)
{
	DIR	*d = opendir("/proc/self/fd");
	int	 n = 0;

	assert_non_null(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

/* A temporary file holding text, open with flags. */
static int
tmp_file(const char *text, int flags)
{
	char	 path[] = "/tmp/viv-fdfile-XXXXXX";
	int	 fd;

	assert_true((fd = mkstemp(path)) >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_true((fd = open(path, flags)) >= 0);
	unlink(path);
	return fd;
}

/* A 200 answering a download by descriptor: {"size": size}. */
static const char *
size_answer(char *buf, size_t len, long long size)
{
	char	 body[64];

	snprintf(body, sizeof(body), "{\"size\": %lld}", size);
	snprintf(buf, len, "HTTP/1.1 200 OK\r\nContent-Type: application/json"
	    "\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
	    strlen(body), body);
	return buf;
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
	moved = asked_again = 0;
	return 0;
}

/* ---------------------------------------------------------------- tests */

static void
assert_no_host_path(const struct berr *e, const char *path)
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
	struct berr	 e;
	struct fw_reader r;
	const char	*log;

	acquire_fails = 1;
	acquire_err.status = 503;
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
	struct berr	 e;
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

/*
 * Nobody listens where the pool said (the sandbox was stopped, or its
 * agent is at a new address): the pool is asked again, once, and the
 * request goes where it says.
 */
static void
test_agent_moved(void **state)
{
	struct berr	 e;
	json_t		*j;

	srv_start("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Connection: close\r\n\r\n", 1024);
	moved_addr = fake_addr;
	moved = 1;
	agent_addr_unix(&fake_addr, "/tmp/vivarium-test-nobody/agent.sock");
	memset(&e, 0, sizeof(e));
	assert_non_null(j = sv_list(NULL, "alice", &e));
	json_decref(j);
	srv_stop();
	assert_int_equal(asked_again, 1);

	/* Nobody at the new address either: asked once, then refused. */
	moved = 0;
	asked_again = 0;
	agent_addr_unix(&fake_addr, "/tmp/vivarium-test-nobody/agent.sock");
	memset(&e, 0, sizeof(e));
	capture_begin();
	assert_null(sv_list(NULL, "alice", &e));
	(void)capture_end();
	assert_int_equal(e.status, 502);
	assert_int_equal(asked_again, 1);
}

static void
test_list_read_bounded(void **state)
{
	struct berr	 e;
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

static void
test_download_by_fd(void **state)
{
	struct script	 s = { .pass = -1 };
	struct berr	 e;
	struct fw_reader r;
	char		 ans[256], got[32];
	int		 fd;

	fd = tmp_file("hello world", O_RDONLY);
	s.pass = fd;
	s.answer = size_answer(ans, sizeof(ans), 11);
	fsrv_start(&s, NULL);
	memset(&e, 0, sizeof(e));
	memset(&r, 0, sizeof(r));
	assert_int_equal(sv_open(NULL, "alice", "d/a b.csv", &r, &e), 0);
	fsrv_stop();
	assert_non_null(strstr(s.req, "GET /_files/raw?path=d/a%20b.csv&fd=1 "));
	assert_true(r.fd >= 0 && r.fd != fd);
	assert_int_equal(r.size, 11);
	assert_null(r.read);
	assert_non_null(r.close);	/* the sandbox held till the end */
	assert_int_equal(pread(r.fd, got, sizeof(got), 0), 11);
	assert_memory_equal(got, "hello world", 11);
	close(r.fd);
	r.close(r.cookie);
	close(fd);
}

/* What is handed over but is not what was said: refused, nothing kept. */
static void
test_download_fd_refused(void **state)
{
	static const struct {
		const char	*why;
		long long	 said;
		int		 kind;	/* 0 file, 1 write-only file, 2 pipe */
	} v[] = {
		{ "not of the size it said", 12, 0 },
		{ "not of the size it said", 10, 0 },
		{ "not open for reading", 11, 1 },
		{ "not a regular file", 0, 2 },
	};
	struct script	 s;
	struct berr	 e;
	struct fw_reader r;
	char		 ans[256];
	const char	*log;
	size_t		 i;
	int		 fd, p[2], before;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (v[i].kind == 2) {
			assert_int_equal(pipe(p), 0);
			fd = p[0];
			close(p[1]);
		} else
			fd = tmp_file("hello world", v[i].kind == 1 ? O_WRONLY :
			    O_RDONLY);
		memset(&s, 0, sizeof(s));
		s.pass = fd;
		s.answer = size_answer(ans, sizeof(ans), v[i].said);
		before = open_fds();
		fsrv_start(&s, NULL);
		memset(&e, 0, sizeof(e));
		memset(&r, 0, sizeof(r));
		r.fd = -1;
		capture_begin();
		assert_int_equal(sv_open(NULL, "alice", "a.csv", &r, &e), -1);
		log = capture_end();
		fsrv_stop();
		assert_int_equal(r.fd, -1);
		assert_int_equal(e.status, 502);
		if (strstr(log, v[i].why) == NULL)
			fail_msg("case %zu: the log does not say \"%s\": %s", i,
			    v[i].why, log);
		/* Nothing of it kept open. */
		if (open_fds() != before)
			fail_msg("case %zu: %d descriptors open, not %d", i,
			    open_fds(), before);
		close(fd);
	}
}

/* An agent that hands nothing over (on TCP, or older): its bytes. */
static void
test_download_bytes(void **state)
{
	struct script	 s = { .pass = -1 };
	struct berr	 e;
	struct fw_reader r;
	char		 got[16];

	s.answer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: "
	    "close\r\n\r\nhello";
	fsrv_start(&s, NULL);
	memset(&e, 0, sizeof(e));
	memset(&r, 0, sizeof(r));
	assert_int_equal(sv_open(NULL, "alice", "a.csv", &r, &e), 0);
	assert_int_equal(r.fd, -1);
	assert_int_equal(r.size, 5);
	assert_int_equal(r.read(r.cookie, got, sizeof(got)), 5);
	assert_memory_equal(got, "hello", 5);
	r.close(r.cookie);
	fsrv_stop();
}

static const char created[] = "HTTP/1.1 201 Created\r\nContent-Type: "
    "application/json\r\nContent-Length: 59\r\nConnection: close\r\n\r\n"
    "{\"name\":\"up.csv\",\"path\":\"up.csv\",\"size\":10,\"renamed\":false}";

static void
test_upload_by_fd(void **state)
{
	struct script	 s = { .pass = -1 };
	struct berr	 e;
	struct stat	 st;
	char		 got[32];
	void		*h;
	json_t		*j;
	int		 fd;

	tconf.upload_max = 1000;
	fd = tmp_file("", O_RDWR);
	s.pass = fd;
	s.answer = "";
	s.final = created;
	fsrv_start(&s, NULL);
	memset(&e, 0, sizeof(e));
	assert_non_null(h = sv_put_begin(NULL, "alice", "up.csv", &e));
	assert_int_equal(sv_put_write(h, "hello", 5, &e), 0);
	assert_int_equal(sv_put_write(h, "world", 5, &e), 0);
	assert_non_null(j = sv_put_end(h, &e));
	fsrv_stop();
	assert_string_equal(json_string_value(json_object_get(j, "path")),
	    "up.csv");
	json_decref(j);
	assert_non_null(strstr(s.req, "POST /_files/receive?name=up.csv "));
	assert_non_null(strstr(s.req, "Transfer-Encoding: chunked"));
	/* Not a byte of the file on the socket: only its size. */
	s.body[s.nbody] = '\0';
	assert_string_equal(s.body, "2\r\n10\r\n0\r\n\r\n");
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 10);
	assert_int_equal(pread(fd, got, sizeof(got), 0), 10);
	assert_memory_equal(got, "helloworld", 10);
	close(fd);
}

static void
test_upload_fd_refused(void **state)
{
	static const struct {
		const char	*why;
		const char	*text;
		int		 flags;
	} v[] = {
		{ "not open for writing", "", O_RDONLY },
		{ "not of the size it said", "already here", O_RDWR },
	};
	struct script	 s;
	struct berr	 e;
	const char	*log;
	size_t		 i;
	int		 fd;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		fd = tmp_file(v[i].text, v[i].flags);
		memset(&s, 0, sizeof(s));
		s.pass = fd;
		s.answer = "";
		fsrv_start(&s, NULL);
		memset(&e, 0, sizeof(e));
		capture_begin();
		assert_null(sv_put_begin(NULL, "alice", "up.csv", &e));
		log = capture_end();
		fsrv_stop();
		assert_int_equal(e.status, 502);
		assert_non_null(strstr(log, v[i].why));
		close(fd);
	}
}

/* Past the limit: refused as it is written; the agent sees no size. */
static void
test_upload_fd_over_limit(void **state)
{
	struct script	 s = { .pass = -1 };
	struct berr	 e;
	void		*h;
	int		 fd;

	tconf.upload_max = 8;
	fd = tmp_file("", O_RDWR);
	s.pass = fd;
	s.answer = "";
	s.final = created;
	fsrv_start(&s, NULL);
	memset(&e, 0, sizeof(e));
	assert_non_null(h = sv_put_begin(NULL, "alice", "up.csv", &e));
	assert_int_equal(sv_put_write(h, "hello", 5, &e), 0);
	assert_int_equal(sv_put_write(h, "world", 5, &e), -1);
	assert_int_equal(e.status, 413);
	sv_put_abort(h);
	fsrv_stop();
	s.body[s.nbody] = '\0';
	assert_null(strstr(s.body, "0\r\n\r\n"));	/* never ended */
	close(fd);
}

static void	upload_old_agent(const char *);

/*
 * An agent older than /_files/receive (404), or on a socket that cannot
 * carry a file (501, gVisor): the bytes go to /_files/upload as before.
 */
static void
test_upload_old_agent(void **state)
{
	static const char *const refusals[] = {
		"HTTP/1.1 404 Not Found\r\nContent-Length: 21\r\n"
		"Connection: close\r\n\r\nno such file endpoint",
		"HTTP/1.1 501 Not Implemented\r\nContent-Length: 4\r\n"
		"Connection: close\r\n\r\nnope",
	};
	size_t	 i;

	for (i = 0; i < 2; i++)
		upload_old_agent(refusals[i]);
}

static void
upload_old_agent(const char *refusal)
{
	struct script	 a = { .pass = -1 }, b = { .pass = -1 };
	struct berr	 e;
	void		*h;
	json_t		*j;

	tconf.upload_max = 1000;
	a.answer = refusal;
	b.answer = "";
	b.final = created;
	fsrv_start(&a, &b);
	memset(&e, 0, sizeof(e));
	assert_non_null(h = sv_put_begin(NULL, "alice", "up.csv", &e));
	assert_int_equal(sv_put_write(h, "helloworld", 10, &e), 0);
	assert_non_null(j = sv_put_end(h, &e));
	json_decref(j);
	fsrv_stop();
	assert_non_null(strstr(a.req, "POST /_files/receive?name=up.csv "));
	assert_non_null(strstr(b.req, "POST /_files/upload?name=up.csv "));
	b.body[b.nbody] = '\0';
	assert_string_equal(b.body, "a\r\nhelloworld\r\n0\r\n\r\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_podman_down_names_no_path, setup),
		cmocka_unit_test_setup(test_agent_socket_names_no_path, setup),
		cmocka_unit_test_setup(test_agent_moved, setup),
		cmocka_unit_test_setup(test_list_read_bounded, setup),
		cmocka_unit_test_setup(test_download_by_fd, setup),
		cmocka_unit_test_setup(test_download_fd_refused, setup),
		cmocka_unit_test_setup(test_download_bytes, setup),
		cmocka_unit_test_setup(test_upload_by_fd, setup),
		cmocka_unit_test_setup(test_upload_fd_refused, setup),
		cmocka_unit_test_setup(test_upload_fd_over_limit, setup),
		cmocka_unit_test_setup(test_upload_old_agent, setup),
	};

	signal(SIGPIPE, SIG_IGN);
	log_init("vivarium-test", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
