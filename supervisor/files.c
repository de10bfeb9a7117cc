/*
 * files.c: file links on the supervisor.  common/fileweb.c does the web
 * side (checking the link, pages, headers, multipart); this is its
 * backend, which takes each checked request to the link's user's sandbox:
 * the agent's /_files/ endpoints on its unix socket do the file side, as
 * the sandbox user, inside the sandbox.  Bytes stream both ways through
 * bounded buffers; nothing is held whole.
 *
 * What goes wrong on the way (Podman down, a socket not answering) is
 * said in words that name host paths: the socket of Podman, the user's
 * agent socket.  A link holder is anyone a link reached, so the page
 * gets a plain sentence and the log gets the detail (unreachable()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "fileweb.h"
#include "text.h"
#include "link.h"
#include "log.h"
#include "supervisor.h"
#include "banned.h"

#define ANSWER_MAX	(64u * 1024)

static const struct conf	*conf;
static struct fileweb		 web;

struct svfile {
	struct agent_conn	 a;
	struct sandbox		*sb;
};

static void
fail(struct fw_error *e, unsigned int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
fail(struct fw_error *e, unsigned int status, const char *fmt, ...)
{
	va_list ap;

	e->status = status;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

/*
 * The sandbox could not be reached: the page says so in general words,
 * the log says why (detail may name Podman's socket or the agent's).
 */
static void
unreachable(struct fw_error *e, unsigned int status, const char *user,
    const char *what, const char *detail)
{
	log_warnx("file link for user %s: %s: %s", user, what, detail);
	fail(e, status, "The sandbox that holds these files is not available "
	    "right now. Try again in a few minutes; if it keeps failing, tell "
	    "whoever runs this server (its log says why).");
}

static struct sandbox *
acquire(const char *user, unsigned stale, struct fw_error *e)
{
	struct pool_err	 pe;
	struct sandbox	*sb;

	if (route_user_valid(user, strlen(user)) == -1) {
		fail(e, 403, "This link names no user of this server.");
		return NULL;
	}
	if ((sb = pool_acquire(user, stale, &pe)) == NULL)
		unreachable(e, pe.http == 503 ? 503 : 502, user, "the sandbox "
		    "could not be started", pe.msg);
	return sb;
}

/* Sends a bodyless request to the user's agent and reads the head. */
static struct svfile *
open_agent(const char *user, const char *method, const char *path,
    struct fw_error *e)
{
	struct agent_req	 r;
	struct svfile		*f;
	char			 err[512];
	int			 cf, attempt;
	unsigned		 gen;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		fail(e, 500, "out of memory");
		return NULL;
	}
	f->a.fd = -1;
	memset(&r, 0, sizeof(r));
	r.method = method;
	r.path = path;
	if ((f->sb = acquire(user, 0, e)) == NULL)
		goto fail;
	for (attempt = 0;; attempt++) {
		if (agent_open(&f->a, pool_addr(f->sb), &r, -1,
		    (int)(conf->agent_timeout * 1000), &cf, err,
		    sizeof(err)) == 0)
			return f;
		if (!cf || attempt > 0)
			break;
		/* Nobody listens: stopped or gone.  Look once more. */
		gen = pool_gen(f->sb);
		pool_release(f->sb);
		if ((f->sb = acquire(user, gen, e)) == NULL)
			goto fail;
	}
	unreachable(e, 502, user, "the sandbox's agent did not answer", err);
	pool_release(f->sb);
fail:
	free(f);
	return NULL;
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
agent_refusal(struct svfile *f, struct fw_error *e)
{
	struct buf	 b = BUF_INIT(1024);
	int		 st = f->a.head.status;

	(void)read_answer(f, &b);
	fail(e, st == 400 || st == 403 || st == 404 || st == 413 || st == 507 ?
	    (unsigned)st : 502, "%.400s", b.len ? buf_str(&b) :
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
    const char *what, struct fw_error *e)
{
	struct buf	 b = BUF_INIT(max);
	json_t		*j = NULL;
	char		 cap[32];
	int		 r = 0;

	if (f->a.head.status != want)
		agent_refusal(f, e);
	else if ((r = read_answer(f, &b)) == 1) {
		human_size(max, cap, sizeof(cap));
		fail(e, 502, "The sandbox's %s is larger than %s, the most "
		    "read from a sandbox here, so it cannot be shown.", what,
		    cap);
	} else if (r == -1 ||
	    (j = json_loadb(b.data ? b.data : "", b.len, 0, NULL)) == NULL ||
	    json_object_get(j, key) == NULL) {
		json_decref(j);
		j = NULL;
		fail(e, 502, "The sandbox sent an answer that could not be "
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

static int
sv_open(void *arg, const char *user, const char *path, struct fw_reader *r,
    struct fw_error *e)
{
	struct buf	 url = BUF_INIT(LINK_PATH_MAX * 3 + 64);
	struct svfile	*f;

	buf_appends(&url, "/_files/raw?path=");
	if (url_escape(path, 1, &url) == -1) {
		fail(e, 400, "The file name is too long.");
		return -1;
	}
	f = open_agent(user, "GET", buf_str(&url), e);
	buf_release(&url);
	if (f == NULL)
		return -1;
	if (f->a.head.status != 200 || f->a.head.content_length < 0) {
		if (f->a.head.status == 200)
			fail(e, 502, "The sandbox did not say how large the "
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
sv_list(void *arg, const char *user, struct fw_error *e)
{
	struct svfile	*f;
	json_t		*j;

	if ((f = open_agent(user, "GET", "/_files/list", e)) == NULL)
		return NULL;
	j = answer_json(f, 200, "files", FW_LIST_MAX, "list of files", e);
	if (j == NULL && f->a.head.status == 200)
		log_warnx("file link for user %s: the workspace page was "
		    "refused: %s", user, e->msg);
	svfile_close(f);
	return j;
}

static void *
sv_put_begin(void *arg, const char *user, const char *name,
    struct fw_error *e)
{
	struct buf		 url = BUF_INIT(1024);
	struct agent_req	 r;
	struct svfile		*f;
	char			 err[512];
	int			 stale, attempt;
	unsigned		 gen;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		fail(e, 500, "out of memory");
		return NULL;
	}
	f->a.fd = -1;
	if ((f->sb = acquire(user, 0, e)) == NULL) {
		free(f);
		return NULL;
	}
	buf_appends(&url, "/_files/upload?name=");
	url_escape(name, 0, &url);
	memset(&r, 0, sizeof(r));
	r.method = "POST";
	r.path = buf_str(&url);
	r.chunked = 1;
	for (attempt = 0;; attempt++) {
		if (agent_stream_open(&f->a, pool_addr(f->sb), &r,
		    (int)(conf->agent_timeout * 1000), &stale, err,
		    sizeof(err)) == 0)
			break;
		if (!stale || attempt > 0) {
			unreachable(e, 502, user, "the sandbox did not take an "
			    "upload", err);
			svfile_close(f);
			f = NULL;
			break;
		}
		/* Not (any more) its agent there: look once more. */
		gen = pool_gen(f->sb);
		pool_release(f->sb);
		if ((f->sb = acquire(user, gen, e)) == NULL) {
			free(f);
			f = NULL;
			break;
		}
	}
	buf_release(&url);
	return f;
}

static int
sv_put_write(void *h, const char *data, size_t len, struct fw_error *e)
{
	if (agent_stream_write(&((struct svfile *)h)->a, data, len) == -1) {
		fail(e, 502, "The sandbox stopped taking the upload (%s).",
		    strerror(errno));
		return -1;
	}
	return 0;
}

static json_t *
sv_put_end(void *h, struct fw_error *e)
{
	struct svfile	*f = h;
	char		 err[512];
	json_t		*j = NULL;

	if (agent_stream_close(&f->a, err, sizeof(err)) == -1) {
		log_warnx("file link: the sandbox did not confirm an upload: %s",
		    err);
		fail(e, 502, "The sandbox did not confirm the upload, so it "
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
