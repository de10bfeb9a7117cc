/*
 * files.c: the file side of file links -- reading, listing and receiving
 * workspace files -- and the three link tools.
 *
 * One implementation serves three callers: the standalone agent's own link
 * pages (a fileweb backend, common/fileweb.c), the supervisor's (through
 * the /_files/ endpoints on the unix socket, never on TCP), and the
 * tools.  Reading uses the read_text_file rules (workspace_open_file).  An
 * upload goes to a temporary file under .vivarium/ and is renamed into
 * place only once it is complete, never over an existing file.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "elicit.h"
#include "fdpass.h"
#include "fileweb.h"
#include "mhd.h"
#include "log.h"
#include "wsdiff.h"
#include "banned.h"

#define TMP_DIR		WS_STATE_DIR "/uploading"
#define UPLOADS_NOTE	WS_STATE_DIR "/uploaded" /* the runner's footer reads it */
#define LIST_MAX	5000		/* files on the workspace page */
#define RENAME_TRIES	1000
#define LOCAL_USER	"local"		/* links of a single-workspace agent */

static const struct agent_config *conf;
static char	 base_url[512];		/* public URL, no trailing slash */

/* ------------------------------------------------------------ reading */

static int
ws_open(const char *ws, const char *path, struct fw_reader *r,
    struct berr *e)
{
	struct stat	 st;
	int		 fd;

	if ((fd = workspace_open_file(ws, path, &st, e->msg,
	    sizeof(e->msg))) == -1) {
		e->status = strstr(e->msg, "does not exist") ? 404 : 403;
		return -1;
	}
	r->fd = fd;
	r->size = (uint64_t)st.st_size;
	return 0;
}

/* ------------------------------------------------------------ listing */

struct listing {
	json_t	*files;
	size_t	 bytes;		/* the JSON of files so far, at most */
	int	 truncated;
};

/*
 * An entry's JSON, at most: {"path":"...","size":N,"mtime":N}, with the
 * path as jansson escapes it (a quote or backslash 2 bytes, a control
 * character up to 6).  The listing stops before FW_LIST_MAX, the most a
 * relay reads of it, less room for the object around the array.
 */
#define LIST_ENTRY_FIXED	72
#define LIST_BYTES		(FW_LIST_MAX - 4096)

static size_t
entry_bytes(const char *path)
{
	const unsigned char	*p;
	size_t			 n = LIST_ENTRY_FIXED;

	for (p = (const unsigned char *)path; *p != '\0'; p++)
		n += *p < 0x20 ? 6 : *p == '"' || *p == '\\' ? 2 : 1;
	return n;
}

/* The regular files, until LIST_MAX of them or LIST_BYTES of JSON. */
static int
list_entry(void *arg, const struct ws_entry *e)
{
	struct listing	*L = arg;
	json_t		*p;

	if (json_array_size(L->files) >= LIST_MAX || L->bytes >= LIST_BYTES) {
		L->truncated = 1;
		return 1;
	}
	if (!S_ISREG(e->st->st_mode))
		return 0;
	/* A name that is not UTF-8 cannot be a JSON string. */
	if ((p = json_string(e->path)) == NULL)
		return 0;
	if (L->bytes + entry_bytes(e->path) > LIST_BYTES) {
		json_decref(p);
		L->truncated = 1;
		return 1;
	}
	L->bytes += entry_bytes(e->path);
	json_array_append_new(L->files, json_pack("{s:o, s:I, s:I}", "path", p,
	    "size", (json_int_t)e->st->st_size, "mtime",
	    (json_int_t)e->st->st_mtime));
	return 0;
}

static int
path_cmp(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a,
	    "path")), json_string_value(json_object_get(*(json_t *const *)b,
	    "path")));
}

static json_t *
ws_list(const char *ws, struct berr *e)
{
	struct listing	 L = { NULL, 0, 0 };
	json_t		**v, *sorted, *out;
	size_t		 i, n;
	int		 cut;

	if ((L.files = json_array()) == NULL)
		goto oom;
	if (ws_walk(ws, list_entry, &L, &cut) == -1 && errno != ENOENT) {
		berr_set(e, 500, "cannot list the workspace: %s",
		    strerror(errno));
		json_decref(L.files);
		return NULL;
	}
	L.truncated |= cut;
	n = json_array_size(L.files);
	if ((v = calloc(n + 1, sizeof(*v))) == NULL ||
	    (sorted = json_array()) == NULL) {
		free(v);
		goto oom;
	}
	for (i = 0; i < n; i++)
		v[i] = json_array_get(L.files, i);
	qsort(v, n, sizeof(*v), path_cmp);
	for (i = 0; i < n; i++)
		json_array_append(sorted, v[i]);
	free(v);
	json_decref(L.files);
	out = json_pack("{s:o, s:b}", "files", sorted, "truncated", L.truncated);
	if (out == NULL)
		goto oom;
	return out;
oom:
	json_decref(L.files);
	berr_set(e, 500, "out of memory");
	return NULL;
}

/* ------------------------------------------------------------ receiving */

struct put {
	char		 ws[PATH_MAX];
	char		 name[256];
	char		 tmp[64];	/* under TMP_DIR */
	int		 fd;
	int		 wsfd;
	unsigned long long size;
};

static int
mkdir_at(int dfd, const char *name)
{
	if (mkdirat(dfd, name, 0700) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

static void *
ws_put_begin(const char *ws, const char *name, struct berr *e)
{
	struct put	*p;
	unsigned int	 r;
	int		 i, full;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		berr_set(e, 500, "out of memory");
		return NULL;
	}
	p->fd = p->wsfd = -1;
	snprintf(p->ws, sizeof(p->ws), "%s", ws);
	fw_clean_name(name, p->name, sizeof(p->name));
	if ((p->wsfd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    mkdir_at(p->wsfd, WS_STATE_DIR) == -1 || mkdir_at(p->wsfd, TMP_DIR) == -1)
		goto sys;
	for (i = 0; i < 100 && p->fd == -1; i++) {
		if (getentropy(&r, sizeof(r)) == -1)
			r = (unsigned)rand();
		snprintf(p->tmp, sizeof(p->tmp), "%s/%08x.part", TMP_DIR, r);
		p->fd = openat(p->wsfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0644);
		if (p->fd == -1 && errno != EEXIST)
			goto sys;
	}
	if (p->fd == -1)
		goto sys;
	return p;
sys:
	full = errno == ENOSPC || errno == EDQUOT;
	berr_set(e, full ? 507 : 500, "cannot receive %s in the workspace: %s",
	    p->name, full ? "the workspace is full" : strerror(errno));
	if (p->wsfd != -1)
		close(p->wsfd);
	free(p);
	return NULL;
}

static void
ws_put_abort(void *h)
{
	struct put *p = h;

	if (p == NULL)
		return;
	if (p->fd != -1)
		close(p->fd);
	unlinkat(p->wsfd, p->tmp, 0);
	close(p->wsfd);
	free(p);
}

static int
ws_put_write(void *h, const char *data, size_t len, struct berr *e)
{
	struct put	*p = h;

	return fw_upload_write(p->fd, p->name, data, len, &p->size,
	    conf->upload_max, e);
}

/* "name (2).ext" for the n-th try. */
static void
alt_name(const char *name, int n, char *out, size_t len)
{
	const char *dot = strrchr(name, '.');

	if (n == 1)
		snprintf(out, len, "%s", name);
	else if (dot == NULL || dot == name)
		snprintf(out, len, "%s (%d)", name, n);
	else
		snprintf(out, len, "%.*s (%d)%s", (int)(dot - name), name, n,
		    dot);
}

/* Tells the next run's footer what arrived (best effort). */
static void
note_upload(int wsfd, const char *name, unsigned long long size)
{
	char	 line[512];
	int	 fd, n;

	fd = openat(wsfd, UPLOADS_NOTE, O_WRONLY | O_CREAT | O_APPEND |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1)
		return;
	n = snprintf(line, sizeof(line), "%s\t%llu\n", name, size);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!write(fd, line, (size_t)n);
	close(fd);
}

static json_t *
ws_put_end(void *h, struct berr *e)
{
	struct put	*p = h;
	char		 final[300];
	json_t		*out = NULL;
	int		 i, r = -1, full;

	if (fsync(p->fd) == -1 || close(p->fd) == -1) {
		p->fd = -1;
		full = errno == ENOSPC || errno == EDQUOT;
		berr_set(e, full ? 507 : 500, "%s was not saved: %s", p->name,
		    full ? "the workspace is full" : strerror(errno));
		goto done;
	}
	p->fd = -1;
	for (i = 1; i <= RENAME_TRIES; i++) {
		alt_name(p->name, i, final, sizeof(final));
		r = renameat2(p->wsfd, p->tmp, p->wsfd, final, RENAME_NOREPLACE);
		if (r == 0 || errno != EEXIST)
			break;
	}
	if (r == -1) {
		berr_set(e, 500, "%s was not saved: %s", p->name,
		    errno == EEXIST ? "too many files of that name" :
		    strerror(errno));
		goto done;
	}
	note_upload(p->wsfd, final, p->size);
	elicit_arrived(p->ws, final, p->size);	/* every upload path ends here */
	out = json_pack("{s:s, s:s, s:I, s:b}", "name", p->name, "path", final,
	    "size", (json_int_t)p->size, "renamed", i > 1);
done:
	ws_put_abort(p);	/* the temporary name is gone either way */
	return out;
}

/* ------------------------------------------------------------ backend */

/*
 * The workspace of a link's user: the agent's own in a sandbox or a
 * single-workspace setup, users/<id> in the per-user-directory mode.
 */
static int
user_ws(const char *user, char *out, size_t len, struct berr *e)
{
	char err[256];

	/* Only the users this agent signs for: never a name it would use
	 * as a path. */
	if (conf->user_header == NULL ? strcmp(user, LOCAL_USER) != 0 :
	    !workspace_user_id_valid(user)) {
		berr_set(e, 403, "This link names no user of this server.");
		return -1;
	}
	if (conf->user_header == NULL) {
		snprintf(out, len, "%s", conf->workdir);
		return 0;
	}
	if (workspace_user_dir(conf->workdir, user, out, len, err,
	    sizeof(err)) == -1) {
		berr_set(e, 500, "%s", err);
		return -1;
	}
	return 0;
}

static int
be_open(void *arg, const char *user, const char *path, struct fw_reader *r,
    struct berr *e)
{
	char ws[PATH_MAX];

	if (user_ws(user, ws, sizeof(ws), e) == -1)
		return -1;
	return ws_open(ws, path, r, e);
}

static json_t *
be_list(void *arg, const char *user, struct berr *e)
{
	char ws[PATH_MAX];

	if (user_ws(user, ws, sizeof(ws), e) == -1)
		return NULL;
	return ws_list(ws, e);
}

static void *
be_put_begin(void *arg, const char *user, const char *name,
    struct berr *e)
{
	char ws[PATH_MAX];

	if (user_ws(user, ws, sizeof(ws), e) == -1)
		return NULL;
	return ws_put_begin(ws, name, e);
}

static const struct fw_backend local_backend = {
	be_open, be_list, be_put_begin, ws_put_write, ws_put_end, ws_put_abort,
	NULL,
};

static struct fileweb	 web;

void
files_init(const struct agent_config *cfg)
{
	conf = cfg;
	if (cfg->public_url != NULL) {
		snprintf(base_url, sizeof(base_url), "%s", cfg->public_url);
		while (base_url[0] && base_url[strlen(base_url) - 1] == '/')
			base_url[strlen(base_url) - 1] = '\0';
	}
	web.keys = &cfg->link_keys;
	web.be = &local_backend;
	web.max_lifetime = cfg->link_max_lifetime;
	web.upload_max = cfg->upload_max;
}

void
files_listening(const char *host, int port)
{
	if (base_url[0] != '\0')
		return;
	if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
		host = "127.0.0.1";
	snprintf(base_url, sizeof(base_url), strchr(host, ':') ?
	    "http://[%s]:%d" : "http://%s:%d", host, port);
}

int
files_serve_links(struct MHD_Connection *conn, const char *url,
    const char *method, const char *upload_data, size_t *upload_data_size,
    void **con_cls)
{
	if (!conf->links || conf->link_user != NULL)
		return http_reply_text(conn, 404, "file links are not served "
		    "here");
	return fileweb_access(&web, conn, url, method, upload_data,
	    upload_data_size, con_cls);
}

/* ------------------------------------------------------------ /_files/ */

/*
 * What the supervisor calls on the unix socket, once it has checked a
 * link: the workspace's raw files, its listing, and uploads (the body is
 * the file, chunked).  Errors are a status and one plain sentence.
 *
 * Files by descriptor, on the unix socket only: /_files/raw?fd=1 hands
 * over the open file (fdpass.h) and answers {"size": N}; /_files/receive
 * hands over the temporary file of an upload, which the supervisor
 * writes itself, and its body says only how many bytes it wrote.  The
 * file is opened, checked and renamed here as for the relay: the
 * supervisor never names a path in the volume.  An older supervisor
 * asks without fd=1 and gets the bytes; so does any supervisor when the
 * socket cannot carry a descriptor (and /_files/receive answers 501,
 * which sends it to /_files/upload).
 */
static enum MHD_Result
internal_error(struct MHD_Connection *conn, const struct berr *e)
{
	return http_reply_text(conn, e->status ? e->status : 500, "%s", e->msg);
}

/* An upload from the supervisor: the file, or why it failed. */
struct iput {
	struct put	*p;		/* NULL once failed or finished */
	struct berr	 e;
	int		 by_fd;		/* /_files/receive: the body is a size */
	char		 said[24];	/* that size, in decimal */
	size_t		 nsaid;
};

/*
 * Hands fd over on conn's socket; 0, or -1 with nothing sent.  A socket
 * that cannot carry descriptors (gVisor's host sockets refuse them) is
 * said once: the caller then answers as if it had not been asked.
 */
static int
hand_over(struct MHD_Connection *conn, int fd)
{
	const union MHD_ConnectionInfo	*ci;
	static int			 said;

	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci != NULL && fdpass_send(ci->connect_fd, fd) == 0)
		return 0;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_SEQ_CST))
		log_warn("cannot hand files to the supervisor on this socket; "
		    "file links send their bytes instead");
	return -1;
}

/*
 * The supervisor wrote the file through the descriptor and says how many
 * bytes: the file must hold exactly that, within the upload limit.  0, or
 * -1 with ip->e.
 */
static int
iput_check(struct iput *ip)
{
	struct stat		 st;
	unsigned long long	 n;
	char			*end;

	ip->said[ip->nsaid < sizeof(ip->said) ? ip->nsaid :
	    sizeof(ip->said) - 1] = '\0';
	errno = 0;
	n = strtoull(ip->said, &end, 10);
	if (ip->nsaid == 0 || ip->nsaid >= sizeof(ip->said) || *end != '\0' ||
	    errno != 0 || ip->said[0] < '0' || ip->said[0] > '9') {
		berr_set(&ip->e, 400, "%s was not saved: the upload did not "
		    "say its size", ip->p->name);
		return -1;
	}
	if (n > conf->upload_max) {
		berr_set(&ip->e, 413, "%s is larger than the limit of %llu "
		    "bytes per upload; it was not saved.", ip->p->name,
		    conf->upload_max);
		return -1;
	}
	if (fstat(ip->p->fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (unsigned long long)st.st_size != n) {
		berr_set(&ip->e, 400, "%s was not saved: it holds %lld bytes, "
		    "not the %llu the upload said", ip->p->name,
		    (long long)st.st_size, n);
		return -1;
	}
	ip->p->size = n;
	return 0;
}

static void
iput_release(void *state, enum MHD_RequestTerminationCode why)
{
	struct iput *ip = state;

	if (ip->p != NULL) {
		log_warnx("an upload through the supervisor broke off; nothing "
		    "of it was kept");
		ws_put_abort(ip->p);
	}
	free(ip);
}

static enum MHD_Result
iput_more(struct MHD_Connection *conn, struct iput *ip, const char *data,
    size_t *size)
{
	enum MHD_Result	 ret;
	json_t		*j;

	if (*size > 0) {
		if (ip->by_fd) {
			/* Spaces (the supervisor's keep-alive while it writes),
			 * then a size: a few digits; more is kept short and
			 * refused. */
			for (; *size > 0; data++, (*size)--)
				if ((*data != ' ' || ip->nsaid > 0) &&
				    ip->nsaid < sizeof(ip->said))
					ip->said[ip->nsaid++] = *data;
			return MHD_YES;
		}
		if (ip->p != NULL && ws_put_write(ip->p, data, *size,
		    &ip->e) == -1) {
			ws_put_abort(ip->p);
			ip->p = NULL;
		}
		*size = 0;		/* the rest is read and dropped */
		return MHD_YES;
	}
	if (ip->p != NULL && ip->by_fd && iput_check(ip) == -1) {
		ws_put_abort(ip->p);
		ip->p = NULL;
	}
	if (ip->p == NULL)
		return internal_error(conn, &ip->e);
	j = ws_put_end(ip->p, &ip->e);
	ip->p = NULL;
	if (j == NULL)
		return internal_error(conn, &ip->e);
	ret = http_reply_json(conn, 201, j);
	json_decref(j);
	return ret;
}

int
files_internal(struct MHD_Connection *conn, int on_unix, const char *ws,
    const char *url, const char *method, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct http_request	*req = *con_cls;
	struct berr		 e;
	struct fw_reader	 r;
	struct MHD_Response	*resp;
	struct iput		*ip;
	const char		*arg;
	json_t			*j;
	enum MHD_Result		 ret;

	if (req != NULL)
		return iput_more(conn, req->state, upload_data, upload_data_size);
	memset(&e, 0, sizeof(e));
	if (strcmp(url, "/_files/raw") == 0 && strcmp(method, "GET") == 0) {
		arg = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
		    "path");
		memset(&r, 0, sizeof(r));
		if (arg == NULL) {
			berr_set(&e, 400, "?path= is required");
			return internal_error(conn, &e);
		}
		if (ws_open(ws, arg, &r, &e) == -1)
			return internal_error(conn, &e);
		if (on_unix && (arg = MHD_lookup_connection_value(conn,
		    MHD_GET_ARGUMENT_KIND, "fd")) != NULL &&
		    strcmp(arg, "1") == 0) {
			if (hand_over(conn, r.fd) == 0) {
				close(r.fd);
				if ((j = json_pack("{s:I}", "size",
				    (json_int_t)r.size)) == NULL)
					return MHD_NO;
				ret = http_reply_json(conn, 200, j);
				json_decref(j);
				return ret;
			}
			/* Not carried: the bytes, as without fd=1. */
		}
		if ((resp = MHD_create_response_from_fd64(r.size, r.fd)) == NULL) {
			close(r.fd);
			return MHD_NO;
		}
		return http_queue(conn, 200, resp);
	}
	if (strcmp(url, "/_files/list") == 0 && strcmp(method, "GET") == 0) {
		if ((j = ws_list(ws, &e)) == NULL)
			return internal_error(conn, &e);
		ret = http_reply_json(conn, 200, j);
		json_decref(j);
		return ret;
	}
	if ((strcmp(url, "/_files/upload") == 0 || (on_unix &&
	    strcmp(url, "/_files/receive") == 0)) && strcmp(method, "POST") == 0) {
		arg = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
		    "name");
		if (arg == NULL) {
			berr_set(&e, 400, "?name= is required");
			return internal_error(conn, &e);
		}
		if ((ip = calloc(1, sizeof(*ip))) == NULL)
			return MHD_NO;
		if ((ip->p = ws_put_begin(ws, arg, &e)) == NULL) {
			free(ip);
			return internal_error(conn, &e);
		}
		ip->by_fd = strcmp(url, "/_files/receive") == 0;
		if (ip->by_fd && hand_over(conn, ip->p->fd) == -1) {
			/* The supervisor sends the bytes to /_files/upload. */
			ws_put_abort(ip->p);
			free(ip);
			return http_reply_text(conn, 501, "files cannot be handed "
			    "over on this socket");
		}
		if (http_request_attach(con_cls, ip, iput_release) == NULL) {
			iput_release(ip, MHD_REQUEST_TERMINATED_WITH_ERROR);
			return MHD_NO;
		}
		return MHD_YES;
	}
	return http_reply_text(conn, 404, "no such file endpoint");
}

/* ------------------------------------------------------------ tools */

static json_t *
link_result(const char *text, json_t *structured, int is_error)
{
	json_t *r;

	r = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
	    "text", text, "isError", is_error);
	if (r != NULL && structured != NULL)
		json_object_set(r, "structuredContent", structured);
	json_decref(structured);
	return r;
}

static json_t *
link_refusal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_t *
link_refusal(const char *fmt, ...)
{
	char	 msg[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return link_result(msg, NULL, 1);
}

/* Makes the URL for l into out; 0, or -1 with a refusal in *res. */
static int
link_url(const struct agent_ctx *ctx, struct link *l, long lifetime,
    const char *prefix, const char *suffix, struct buf *out, json_t **res)
{
	const char *user;

	*res = NULL;
	if (!conf->links || base_url[0] == '\0') {
		*res = link_refusal("File links are not set up on this server: "
		    "it has no public address or no link key (see "
		    "docs/agent.md, \"Files in and out\"). Tell the user the "
		    "file is in the workspace at this path instead.");
		return -1;
	}
	user = conf->link_user ? conf->link_user : ctx->user ? ctx->user :
	    LOCAL_USER;
	snprintf(l->user, sizeof(l->user), "%s", user);
	l->expires = time(NULL) + lifetime;
	if (buf_appendf(out, "%s%s", base_url, prefix) == -1 ||
	    link_mint(&conf->link_keys, l, out) == -1 ||
	    (suffix != NULL && (buf_append(out, "/", 1) == -1 ||
	    url_escape(suffix, 0, out) == -1))) {
		*res = link_refusal("The link could not be made (no key for "
		    "this user, or the path is too long).");
		return -1;
	}
	return 0;
}

/* lifetime_hours: a number of hours, at most the server's maximum. */
static int
arg_lifetime(json_t *args, long def, long *out, json_t **res)
{
	json_t	*v = json_object_get(args, "lifetime_hours");
	double	 h;

	*out = def;
	*res = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_number(v) || (h = json_number_value(v)) <= 0) {
		*res = link_refusal("lifetime_hours must be a positive number "
		    "of hours (e.g. 24, or 0.5 for half an hour)");
		return -1;
	}
	if (h * 3600 > (double)conf->link_max_lifetime) {
		*res = link_refusal("lifetime_hours=%g is longer than this "
		    "server allows: at most %.4g hours", h,
		    (double)conf->link_max_lifetime / 3600);
		return -1;
	}
	*out = (long)(h * 3600);
	if (*out < 60)
		*out = 60;
	return 0;
}

static const char *
lifetime_words(long s, char *out, size_t len)
{
	if (s % 86400 == 0)
		snprintf(out, len, "%ld day%s", s / 86400, s == 86400 ? "" : "s");
	else if (s % 3600 == 0)
		snprintf(out, len, "%ld hour%s", s / 3600, s == 3600 ? "" : "s");
	else
		snprintf(out, len, "%ld minutes", (s + 59) / 60);
	return out;
}

static void
iso_time(time_t t, char *out, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *
files_tool_share(const struct agent_ctx *ctx, json_t *args)
{
	struct link	 l;
	struct buf	 url = BUF_INIT(16384), text = BUF_INIT(32768);
	struct stat	 st;
	json_t		*path, *res;
	const char	*p, *base;
	char		 err[1024], life[32], when[32];
	long		 lifetime;
	int		 fd;

	path = json_object_get(args, "path");
	if (!json_is_string(path))
		return link_refusal("share_file needs 'path': the file's path "
		    "relative to the workspace, e.g. out/report.xlsx");
	p = json_string_value(path);
	if (memchr(p, '\0', json_string_length(path)) != NULL)
		return link_refusal("share_file: 'path' contains a NUL character");
	if (arg_lifetime(args, conf->download_lifetime, &lifetime, &res) == -1)
		return res;
	if ((fd = workspace_open_file(ctx->workspace, p, &st, err,
	    sizeof(err))) == -1)
		return link_refusal("Cannot share '%s': %s", p, err);
	close(fd);
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	memset(&l, 0, sizeof(l));
	l.purpose = LINK_DOWNLOAD;
	snprintf(l.path, sizeof(l.path), "%s", p);
	base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
	if (link_url(ctx, &l, lifetime, "/f/", base, &url, &res) == -1) {
		buf_release(&url);
		return res;
	}
	iso_time(l.expires, when, sizeof(when));
	buf_appendf(&text, "Download link for %s (%lld bytes), valid for %s "
	    "(until %s):\n[%s](%s)\nGive this link to the user in your answer "
	    "(as it is, on a line of its own); they open it in their browser "
	    "to download the file. Tell them it works until %s.\n", p,
	    (long long)st.st_size, lifetime_words(lifetime, life, sizeof(life)),
	    when, base, buf_str(&url), when);
	res = link_result(buf_str(&text), json_pack("{s:s, s:s, s:I, s:s}",
	    "url", buf_str(&url), "path", p, "size", (json_int_t)st.st_size,
	    "expires_at", when), 0);
	buf_release(&url);
	buf_release(&text);
	return res;
}

static json_t *
page_link(const struct agent_ctx *ctx, json_t *args, enum link_purpose pur)
{
	struct link	 l;
	struct buf	 url = BUF_INIT(4096), text = BUF_INIT(8192);
	json_t		*res;
	char		 life[32], when[32];
	long		 lifetime;

	if (arg_lifetime(args, pur == LINK_UPLOAD ? conf->upload_lifetime :
	    conf->download_lifetime, &lifetime, &res) == -1)
		return res;
	memset(&l, 0, sizeof(l));
	l.purpose = pur;
	if (link_url(ctx, &l, lifetime, pur == LINK_UPLOAD ? "/up/" : "/ws/",
	    NULL, &url, &res) == -1) {
		buf_release(&url);
		return res;
	}
	iso_time(l.expires, when, sizeof(when));
	lifetime_words(lifetime, life, sizeof(life));
	if (pur == LINK_UPLOAD)
		buf_appendf(&text, "Upload page, valid for %s (until %s):\n"
		    "[Upload files](%s)\nGive this link to the user in your "
		    "answer: they open it in their browser and choose or drop "
		    "their files. Files land at the top of the workspace (an "
		    "existing file is never overwritten; a new name is chosen), "
		    "and the next run_python's footer lists them as uploaded.\n",
		    life, when, buf_str(&url));
	else
		buf_appendf(&text, "Workspace page, valid for %s (until %s):\n"
		    "[Your workspace](%s)\nGive this link to the user in your "
		    "answer: it lists every file in the workspace with sizes, "
		    "dates and download buttons, shows images, and takes "
		    "uploads. Nothing can be deleted from it.\n", life, when,
		    buf_str(&url));
	res = link_result(buf_str(&text), json_pack("{s:s, s:s}", "url",
	    buf_str(&url), "expires_at", when), 0);
	buf_release(&url);
	buf_release(&text);
	return res;
}

/*
 * upload_link for a client that shows URL elicitations (CLIENT_ELICIT_URL,
 * LibreChat among them): the first call fails with -32042 carrying the
 * upload page, the client shows it in the chat, waits for the user and
 * calls again; that call answers what arrived meanwhile.  A user who
 * declines or closes the card is never told to the server: LibreChat (its
 * MCPManager.callTool, read 2026-12) then does not retry and hands the
 * error's message to the model, so that message says what happened.  A
 * retry that finds nothing uploaded answers so with the plain link and
 * forgets: never a second card in a row.
 */
static json_t *
upload_arrived(const struct elicit_state *st)
{
	struct buf	 text = BUF_INIT(16384);
	json_t		*files, *res;
	size_t		 i;

	if ((files = json_array()) == NULL)
		return NULL;
	if (st->nfiles == 0)
		buf_appendf(&text, "The user uploaded nothing: they closed or "
		    "declined the upload card. Do not ask again in this answer. "
		    "If they still want to send a file, give them this upload "
		    "page (valid until the time below) in your answer:\n"
		    "[Upload files](%s)\n", st->url);
	else
		buf_appendf(&text, "The user uploaded %zu file%s; they are at "
		    "the top of the workspace (/workspace), ready for "
		    "run_python or read_text_file:\n", st->nfiles + st->more,
		    st->nfiles + st->more == 1 ? "" : "s");
	for (i = 0; i < st->nfiles; i++) {
		buf_appendf(&text, "- %s (%llu bytes)\n", st->files[i].name,
		    st->files[i].size);
		json_array_append_new(files, json_pack("{s:s, s:I}", "path",
		    st->files[i].name, "size", (json_int_t)st->files[i].size));
	}
	if (st->more > 0)
		buf_appendf(&text, "- and %zu more (list_files() shows them)\n",
		    st->more);
	res = link_result(buf_str(&text), json_pack("{s:o, s:b}", "uploaded",
	    files, "declined", st->nfiles == 0), 0);
	buf_release(&text);
	return res;
}

json_t *
files_tool_upload(const struct agent_ctx *ctx, json_t *args,
    struct rpc_error *err)
{
	struct elicit_state	 st;
	struct link		 l;
	struct buf		 url = BUF_INIT(4096);
	json_t			*res, *el;
	long			 lifetime;

	if (!(ctx->client & CLIENT_ELICIT_URL))
		return page_link(ctx, args, LINK_UPLOAD);
	/* The retry: the arguments do not matter, the workspace does. */
	if (elicit_take(ctx->workspace, &st) == 0)
		return upload_arrived(&st);
	/*
	 * A 2026-07-28 retry (it carries the user's answer) whose card is
	 * gone (expired, or the agent restarted): the plain link, never a
	 * new card, so client and server cannot go round in circles.
	 */
	if (ctx->input_responses != NULL)
		return page_link(ctx, args, LINK_UPLOAD);
	if (arg_lifetime(args, conf->upload_lifetime, &lifetime, &res) == -1)
		return res;
	memset(&l, 0, sizeof(l));
	l.purpose = LINK_UPLOAD;
	if (link_url(ctx, &l, lifetime, "/up/", NULL, &url, &res) == -1) {
		buf_release(&url);
		return res;
	}
	if (elicit_begin(ctx->workspace, buf_str(&url), "Upload your files "
	    "here; close this when they are uploaded.", l.expires, &el) == -1) {
		/* Nothing remembered: the plain link still works. */
		buf_release(&url);
		return page_link(ctx, args, LINK_UPLOAD);
	}
	buf_release(&url);
	err->code = RPC_URL_ELICITATION;
	/* What the model reads when the user declined or closed the card. */
	snprintf(err->message, sizeof(err->message), "The user was shown an "
	    "upload page in the chat and closed or declined it: nothing was "
	    "uploaded. Tell them; if they still want to send a file, call "
	    "upload_link again.");
	err->data = json_pack("{s:[o]}", "elicitations", el);
	return NULL;
}

json_t *
files_tool_workspace(const struct agent_ctx *ctx, json_t *args)
{
	return page_link(ctx, args, LINK_WORKSPACE);
}

/*
 * workspace_view, for the MCP Apps view only (ui.c): the listing, and a
 * workspace link under which the view previews, downloads and uploads
 * through the same checks as the workspace page.  Without links the
 * listing comes alone (base null) and the view only lists.
 */
json_t *
files_tool_view(const struct agent_ctx *ctx, json_t *args)
{
	struct link	 l;
	struct buf	 url = BUF_INIT(4096);
	struct berr	 e;
	json_t		*list, *res = NULL;
	char		 when[32];

	memset(&e, 0, sizeof(e));
	if ((list = ws_list(ctx->workspace, &e)) == NULL)
		return link_refusal("The workspace could not be listed: %s",
		    e.msg);
	memset(&l, 0, sizeof(l));
	l.purpose = LINK_WORKSPACE;
	if (link_url(ctx, &l, conf->download_lifetime, "/ws/", NULL, &url,
	    &res) == 0) {
		iso_time(l.expires, when, sizeof(when));
		json_object_set_new(list, "base", json_string(buf_str(&url)));
		json_object_set_new(list, "expires_at", json_string(when));
	} else {
		json_decref(res);
		json_object_set_new(list, "base", json_null());
	}
	buf_release(&url);
	return link_result(json_array_size(json_object_get(list, "files")) ?
	    "The workspace's files are listed in structuredContent." :
	    "The workspace is empty.", list, 0);
}

const char *
files_link_base(void)
{
	return conf != NULL && conf->links && base_url[0] != '\0' ? base_url :
	    NULL;
}
