/*
 * files.c: file links on the supervisor.  common/fileweb.c does the web
 * side (checking the link, pages, headers, multipart); this is its
 * backend, which takes each checked request to the link's user's sandbox:
 * the agent's /_files/ endpoints on its unix socket do the file side, as
 * the sandbox user, inside the sandbox.
 *
 * On a unix socket the agent hands over the open file itself (common/
 * fdpass.h): a download is sent from it with sendfile(2), an upload is
 * written into the agent's temporary file by the thread that parses it,
 * and no byte crosses the socket.  The agent still opens, checks and
 * renames; the supervisor never names a path in the volume, and checks
 * what it is given (check_passed()), since code in the sandbox can stand
 * in for the agent.  Over TCP (a cluster's Pods) bytes stream both ways
 * through bounded buffers, as they do with an agent too old to hand files
 * over; nothing is held whole.
 *
 * What goes wrong on the way (Podman down, a socket not answering) is
 * said in words that name host paths: the socket of Podman, the user's
 * agent socket.  A link holder is anyone a link reached, so the page
 * gets a plain sentence and the log gets the detail (unreachable()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "fileweb.h"
#include "text.h"
#include "link.h"
#include "log.h"
#include "supervisor.h"
#include "backend.h"
#include "banned.h"

#define ANSWER_MAX	(64u * 1024)
/*
 * While the supervisor writes an upload, its agent connection is quiet: a
 * space this often keeps it open.  The agent in the image (libmicrohttpd
 * 1.x) closed a quiet one within 25 s, 3 s was kept: under the 10 s
 * first-request timeout its connections start with.
 */
#define KEEPALIVE_S	5

static const struct conf	*conf;
static struct fileweb		 web;

struct svfile {
	struct agent_conn	 a;
	struct pool_entry	*sb;
	/* An upload written through a descriptor the agent handed over
	 * (1; -1 once the sandbox stopped taking its end). */
	int			 by_fd;
	char			 name[256];	/* of an upload, for errors */
	unsigned long long	 written;
	double			 said_at;	/* the last keep-alive */
};

/*
 * The sandbox could not be reached: the page says so in general words,
 * the log says why (detail may name Podman's socket or the agent's).
 */
static void
unreachable(struct berr *e, long status, const char *user,
    const char *what, const char *detail)
{
	log_warnx("file link for user %s: %s: %s", user, what, detail);
	berr_set(e, status, "The sandbox that holds these files is not "
	    "available right now. Try again in a few minutes; if it keeps "
	    "failing, tell whoever runs this server (its log says why).");
}

/* The pool could not give the user's sandbox (pe says why). */
static void
not_started(struct berr *e, const char *user, const struct berr *pe)
{
	unreachable(e, pe->status == 503 ? 503 : 502, user, "the sandbox could "
	    "not be started", pe->msg);
}

static struct pool_entry *
acquire(const char *user, struct berr *e)
{
	struct berr	 pe;
	struct pool_entry	*sb;

	if (user_id_valid(user, strlen(user)) == -1) {
		berr_set(e, 403, "This link names no user of this server.");
		return NULL;
	}
	if ((sb = pool_acquire(user, 0, &pe)) == NULL)
		not_started(e, user, &pe);
	return sb;
}

static void
svfile_close(struct svfile *f)
{
	if (f == NULL)
		return;
	agent_close(&f->a);
	if (f->sb != NULL)
		pool_release(f->sb);
	free(f);
}

/*
 * Opens r on the agent of f's sandbox (relay_open: once more when nobody
 * listens); 0, or -1 with e, what saying for the log what did not happen.
 * f is for svfile_close either way.
 */
static int
svfile_open(struct svfile *f, const char *user, const struct agent_req *r,
    const char *what, struct berr *e)
{
	struct berr	 pe;

	if (relay_open(&f->sb, user, &f->a, r, 0,
	    (int)(conf->agent_timeout * 1000), &pe) == 0)
		return 0;
	if (f->sb == NULL)
		not_started(e, user, &pe);
	else
		unreachable(e, 502, user, what, pe.msg);
	return -1;
}

/*
 * Sends a bodyless request to the user's agent and reads the head; with
 * want_fd, a file the agent hands over first is in f->a.passed_fd.
 */
static struct svfile *
open_agent(const char *user, const char *method, const char *path,
    int want_fd, struct berr *e)
{
	struct agent_req	 r;
	struct svfile		*f;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		berr_set(e, 500, "out of memory");
		return NULL;
	}
	f->a.fd = -1;
	memset(&r, 0, sizeof(r));
	r.method = method;
	r.path = path;
	r.want_fd = want_fd;
	if ((f->sb = acquire(user, e)) == NULL || svfile_open(f, user, &r,
	    "the sandbox's agent did not answer", e) == -1) {
		svfile_close(f);
		return NULL;
	}
	return f;
}

/*
 * Reads the rest of a (small) answer body into b: 0, -1, or 1 when it is
 * longer than b may hold (then nothing more is read).
 */
static int
read_answer(struct svfile *f, struct buf *b)
{
	char	 tmp[16384];
	ssize_t	 n;

	if (f->a.head.content_length > (long long)b->max)
		return 1;
	while ((n = agent_read(&f->a, tmp, sizeof(tmp))) > 0)
		if (buf_append(b, tmp, (size_t)n) == -1)
			return errno == ENOSPC ? 1 : -1;
	return n == 0 ? 0 : -1;
}

/* An agent's refusal: its status if it is one we pass on, its words. */
static void
agent_refusal(struct svfile *f, struct berr *e)
{
	struct buf	 b = BUF_INIT(1024);
	int		 st = f->a.head.status;

	(void)read_answer(f, &b);
	berr_set(e, st == 400 || st == 403 || st == 404 || st == 413 ||
	    st == 507 ? st : 502, "%.400s", b.len ? buf_str(&b) :
	    "the sandbox refused");
	e->msg[strcspn(e->msg, "\r\n")] = '\0';
	buf_release(&b);
}

/*
 * The JSON answer of an agent whose head said want: an object with key,
 * or NULL with e filled (its refusal, or 502 for a reply not understood
 * or longer than max: what, e.g. "list of files", names it then).
 */
static json_t *
answer_json(struct svfile *f, int want, const char *key, size_t max,
    const char *what, struct berr *e)
{
	struct buf	 b = BUF_INIT(max);
	json_t		*j = NULL;
	char		 cap[32];
	int		 r = 0;

	if (f->a.head.status != want)
		agent_refusal(f, e);
	else if ((r = read_answer(f, &b)) == 1) {
		human_size(max, cap, sizeof(cap));
		berr_set(e, 502, "The sandbox's %s is larger than %s, the most "
		    "read from a sandbox here, so it cannot be shown.", what,
		    cap);
	} else if (r == -1 ||
	    (j = json_loadb(b.data ? b.data : "", b.len, 0, NULL)) == NULL ||
	    json_object_get(j, key) == NULL) {
		json_decref(j);
		j = NULL;
		berr_set(e, 502, "The sandbox sent an answer that could not be "
		    "read.");
	}
	buf_release(&b);
	return j;
}

static ssize_t
sv_read(void *cookie, char *dst, size_t max)
{
	return agent_read(&((struct svfile *)cookie)->a, dst, max);
}

static void
sv_close(void *cookie)
{
	svfile_close(cookie);
}

/*
 * A descriptor the agent handed over must be what it said: a regular file
 * (not a pipe, socket or device that could stall or stream for ever),
 * open for reading (download) or writing (upload), not an O_PATH handle,
 * of the size it said (nothing yet, for an upload).  0, or -1 with e.
 */
static int
check_passed(const char *user, int fd, int for_write, long long size,
    struct berr *e)
{
	struct stat	 st;
	int		 fl;
	const char	*why = NULL;

	if (fstat(fd, &st) == -1 || (fl = fcntl(fd, F_GETFL)) == -1)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if ((fl & O_PATH) || (fl & O_ACCMODE) == (for_write ? O_RDONLY :
	    O_WRONLY))
		why = for_write ? "not open for writing" : "not open for reading";
	else if (st.st_size != size) {
		/* Likely a run writing it just then: worth another try. */
		log_warnx("file link for user %s: the sandbox handed over a "
		    "file not of the size it said (%lld, not %lld bytes)",
		    user, (long long)st.st_size, size);
		berr_set(e, 502, "The file changed while it was being opened "
		    "(is something writing it?). Try again in a moment.");
		return -1;
	}
	if (why == NULL)
		return 0;
	unreachable(e, 502, user, "the sandbox handed over a file that "
	    "cannot be used", why);
	return -1;
}

/*
 * A download handed over as a descriptor: the answer says its size, and
 * the file goes to fileweb, which sends it with sendfile.  The sandbox
 * stays held (f, closed with the response) so that it is not stopped,
 * and its volume unmounted, under an open file.
 */
static int
sv_open_passed(struct svfile *f, const char *user, struct fw_reader *r,
    struct berr *e)
{
	json_t		*j;
	json_int_t	 size;

	if ((j = answer_json(f, 200, "size", ANSWER_MAX, "answer to a "
	    "download", e)) == NULL)
		goto fail;
	size = json_integer_value(json_object_get(j, "size"));
	if (!json_is_integer(json_object_get(j, "size")) || size < 0) {
		json_decref(j);
		berr_set(e, 502, "The sandbox sent an answer that could not be "
		    "read.");
		goto fail;
	}
	json_decref(j);
	if (check_passed(user, f->a.passed_fd, 0, (long long)size, e) == -1)
		goto fail;
	r->fd = f->a.passed_fd;
	f->a.passed = 0;
	r->size = (uint64_t)size;
	agent_close(&f->a);
	r->cookie = f;
	r->read = NULL;
	r->close = sv_close;
	return 0;
fail:
	svfile_close(f);
	return -1;
}

static int
sv_open(void *arg, const char *user, const char *path, struct fw_reader *r,
    struct berr *e)
{
	struct buf	 url = BUF_INIT(LINK_PATH_MAX * 3 + 64);
	struct svfile	*f;

	buf_appends(&url, "/_files/raw?path=");
	if (url_escape(path, 1, &url) == -1) {
		berr_set(e, 400, "The file name is too long.");
		return -1;
	}
	/* An agent on TCP, or one that predates fd=1, sends the bytes. */
	buf_appends(&url, "&fd=1");
	f = open_agent(user, "GET", buf_str(&url), 1, e);
	buf_release(&url);
	if (f == NULL)
		return -1;
	if (f->a.passed)
		return sv_open_passed(f, user, r, e);
	if (f->a.head.status != 200 || f->a.head.content_length < 0) {
		if (f->a.head.status == 200)
			berr_set(e, 502, "The sandbox did not say how large the "
			    "file is.");
		else
			agent_refusal(f, e);
		svfile_close(f);
		return -1;
	}
	r->fd = -1;
	r->size = (uint64_t)f->a.head.content_length;
	r->cookie = f;
	r->read = sv_read;
	r->close = sv_close;
	return 0;
}

static json_t *
sv_list(void *arg, const char *user, struct berr *e)
{
	struct svfile	*f;
	json_t		*j;

	if ((f = open_agent(user, "GET", "/_files/list", 0, e)) == NULL)
		return NULL;
	j = answer_json(f, 200, "files", FW_LIST_MAX, "list of files", e);
	if (j == NULL && f->a.head.status == 200)
		log_warnx("file link for user %s: the workspace page was "
		    "refused: %s", user, e->msg);
	svfile_close(f);
	return j;
}

/*
 * Opens the upload request at endpoint on the user's agent: f, or NULL
 * with e (f is freed then).  A stale address is looked up once more.
 */
static struct svfile *
put_open(struct svfile *f, const char *user, const char *endpoint,
    const char *name, int want_fd, struct berr *e)
{
	struct buf		 url = BUF_INIT(1024);
	struct agent_req	 r;

	buf_appends(&url, endpoint);
	buf_appends(&url, "?name=");
	url_escape(name, 0, &url);
	memset(&r, 0, sizeof(r));
	r.method = "POST";
	r.path = buf_str(&url);
	r.chunked = 1;
	r.want_fd = want_fd;
	if (svfile_open(f, user, &r, "the sandbox did not take an upload",
	    e) == -1) {
		svfile_close(f);
		f = NULL;
	}
	buf_release(&url);
	return f;
}

static void *
sv_put_begin(void *arg, const char *user, const char *name,
    struct berr *e)
{
	struct svfile	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		berr_set(e, 500, "out of memory");
		return NULL;
	}
	f->a.fd = -1;
	snprintf(f->name, sizeof(f->name), "%s", name);
	if ((f->sb = acquire(user, e)) == NULL) {
		free(f);
		return NULL;
	}
	if (pool_addr(f->sb)->kind == AGENT_UNIX) {
		if ((f = put_open(f, user, "/_files/receive", name, 1, e)) ==
		    NULL)
			return NULL;
		if (f->a.passed) {
			if (check_passed(user, f->a.passed_fd, 1, 0, e) == -1) {
				svfile_close(f);
				return NULL;
			}
			f->by_fd = 1;
			f->said_at = clock_mono();
			return f;
		}
		/* It answered instead: a refusal, or an agent that takes
		 * the bytes instead: older than /_files/receive (404), or on
		 * a socket that cannot carry a file (501, under gVisor). */
		if (f->a.head.status != 404 && f->a.head.status != 501) {
			agent_refusal(f, e);
			svfile_close(f);
			return NULL;
		}
		agent_close(&f->a);
	}
	return put_open(f, user, "/_files/upload", name, 0, e);
}

/* A piece of an upload, into the file the agent handed over. */
static int
put_write_fd(struct svfile *f, const char *data, size_t len,
    struct berr *e)
{
	if (fw_upload_write(f->a.passed_fd, f->name, data, len, &f->written,
	    conf->upload_max, e) == -1)
		return -1;
	if (clock_mono() - f->said_at >= KEEPALIVE_S) {
		if (agent_stream_write(&f->a, " ", 1) == -1) {
			berr_set(e, 502, "The sandbox stopped taking the upload "
			    "(%s).", strerror(errno));
			return -1;
		}
		f->said_at = clock_mono();
	}
	return 0;
}

static int
sv_put_write(void *h, const char *data, size_t len, struct berr *e)
{
	struct svfile *f = h;

	if (f->by_fd)
		return put_write_fd(f, data, len, e);
	if (agent_stream_write(&f->a, data, len) == -1) {
		berr_set(e, 502, "The sandbox stopped taking the upload (%s).",
		    strerror(errno));
		return -1;
	}
	return 0;
}

static json_t *
sv_put_end(void *h, struct berr *e)
{
	struct svfile	*f = h;
	char		 err[512], size[32];
	json_t		*j = NULL;
	int		 n;

	if (f->by_fd) {
		/* Written: what is left is to say how much (docs/agent.md). */
		close(f->a.passed_fd);
		f->a.passed = 0;
		n = snprintf(size, sizeof(size), "%llu", f->written);
		if (agent_stream_write(&f->a, size, (size_t)n) == -1)
			f->by_fd = -1;
	}
	if (f->by_fd == -1 || agent_stream_close(&f->a, err,
	    sizeof(err)) == -1) {
		if (f->by_fd == -1)
			snprintf(err, sizeof(err), "cannot send to the sandbox: "
			    "%s", strerror(errno));
		log_warnx("file link: the sandbox did not confirm an upload: %s",
		    err);
		berr_set(e, 502, "The sandbox did not confirm the upload, so it "
		    "may not have been saved. Try again in a few minutes.");
	} else
		j = answer_json(f, 201, "path", ANSWER_MAX, "answer to the "
		    "upload", e);
	svfile_close(f);
	return j;
}

static void
sv_put_abort(void *h)
{
	/* Closing mid-body: the agent removes what it had. */
	svfile_close(h);
}

static const struct fw_backend relay_backend = {
	sv_open, sv_list, sv_put_begin, sv_put_write, sv_put_end,
	sv_put_abort, NULL,
};

void
files_init(const struct conf *c)
{
	conf = c;
	web.keys = &c->link_keys;
	web.be = &relay_backend;
	web.max_lifetime = c->link_max_lifetime;
	web.upload_max = c->upload_max;
	/* An upload's last file is saved by the sandbox: as long as a run. */
	web.work_timeout = (unsigned)(c->agent_timeout + 60);
}

int
files_match(const char *url)
{
	return fileweb_match(url);
}

int
files_access(struct MHD_Connection *conn, const char *url, const char *method,
    const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	return fileweb_access(&web, conn, url, method, upload_data,
	    upload_data_size, con_cls);
}
