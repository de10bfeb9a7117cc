/*
 * fileweb.c: file links in the browser (fileweb.h).
 *
 * Every answer carries the same guard headers: nosniff, no referrer (the
 * token is in the URL), no caching, no framing.  Files are always sent as
 * attachments under a CSP sandbox, so an HTML or SVG file a model wrote is
 * downloaded, never rendered in our origin; the only inline files are the
 * workspace page's image previews, and only for raster image types.  Pages
 * run one inline script, allowed by a per-response nonce.
 */
#include <sys/random.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fileweb.h"
#include "mhd.h"
#include "log.h"
#include "multipart.h"
#include "text.h"
#include "base64.h"
#include "banned.h"

#define PAGE_MAX	(4u << 20)
#define LIST_SHOWN	2000

enum route_kind {
	RK_NONE,
	RK_DOWNLOAD,		/* /f/<token>[/<name>] */
	RK_UPLOAD,		/* /up/<token> */
	RK_WORKSPACE,		/* /ws/<token> */
	RK_WS_FILE,		/* /ws/<token>/file/<path> */
	RK_WS_VIEW,		/* /ws/<token>/view/<path> */
};

struct route {
	enum route_kind	 kind;
	const char	*token;
	size_t		 toklen;
	const char	*path;		/* RK_WS_FILE, RK_WS_VIEW */
};

static int
route_parse(const char *url, struct route *r)
{
	const char	*p, *slash;

	memset(r, 0, sizeof(*r));
	if (strncmp(url, "/f/", 3) == 0) {
		r->kind = RK_DOWNLOAD;
		p = url + 3;
	} else if (strncmp(url, "/up/", 4) == 0) {
		r->kind = RK_UPLOAD;
		p = url + 4;
	} else if (strncmp(url, "/ws/", 4) == 0) {
		r->kind = RK_WORKSPACE;
		p = url + 4;
	} else
		return -1;
	r->token = p;
	slash = strchr(p, '/');
	r->toklen = slash ? (size_t)(slash - p) : strlen(p);
	if (slash == NULL || slash[1] == '\0')
		return 0;
	switch (r->kind) {
	case RK_DOWNLOAD:
		return 0;		/* the name after the token is cosmetic */
	case RK_WORKSPACE:
		if (strncmp(slash, "/file/", 6) == 0) {
			r->kind = RK_WS_FILE;
			r->path = slash + 6;
			return 0;
		}
		if (strncmp(slash, "/view/", 6) == 0) {
			r->kind = RK_WS_VIEW;
			r->path = slash + 6;
			return 0;
		}
		return -1;
	default:
		return -1;
	}
}

int
fileweb_match(const char *url)
{
	return strncmp(url, "/f/", 3) == 0 || strncmp(url, "/up/", 4) == 0 ||
	    strncmp(url, "/ws/", 4) == 0;
}

/* ------------------------------------------------------------ names */

static const struct {
	const char	*ext;
	const char	*type;
} types[] = {
	{ "csv", "text/csv" },
	{ "tsv", "text/tab-separated-values" },
	{ "txt", "text/plain" },
	{ "log", "text/plain" },
	{ "md", "text/markdown" },
	{ "json", "application/json" },
	{ "xml", "application/xml" },
	{ "html", "text/html" },
	{ "htm", "text/html" },
	{ "py", "text/x-python" },
	{ "ipynb", "application/x-ipynb+json" },
	{ "pdf", "application/pdf" },
	{ "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" },
	{ "xls", "application/vnd.ms-excel" },
	{ "docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document" },
	{ "pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation" },
	{ "ods", "application/vnd.oasis.opendocument.spreadsheet" },
	{ "odt", "application/vnd.oasis.opendocument.text" },
	{ "parquet", "application/vnd.apache.parquet" },
	{ "zip", "application/zip" },
	{ "gz", "application/gzip" },
	{ "tar", "application/x-tar" },
	{ "png", "image/png" },
	{ "jpg", "image/jpeg" },
	{ "jpeg", "image/jpeg" },
	{ "gif", "image/gif" },
	{ "webp", "image/webp" },
	{ "svg", "image/svg+xml" },
	{ "mp3", "audio/mpeg" },
	{ "wav", "audio/wav" },
	{ "mp4", "video/mp4" },
};

static const char *
ext_of(const char *name)
{
	const char *slash = strrchr(name, '/'), *dot = strrchr(name, '.');

	if (dot == NULL || (slash != NULL && dot < slash) || dot == name)
		return "";
	return dot + 1;
}

const char *
fw_content_type(const char *name)
{
	const char	*ext = ext_of(name);
	size_t		 i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcasecmp(ext, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

int
fw_previewable(const char *name)
{
	const char *t = fw_content_type(name);

	/* Raster formats only: SVG can carry script. */
	return strcmp(t, "image/png") == 0 || strcmp(t, "image/jpeg") == 0 ||
	    strcmp(t, "image/gif") == 0 || strcmp(t, "image/webp") == 0;
}

#define NAME_KEEP	200

/* Drops leading dots and blanks and trailing ones; returns the new start. */
static char *
trim_name(char *p, size_t *len)
{
	while (*len > 0 && (*p == '.' || *p == ' ')) {
		p++;
		(*len)--;
	}
	while (*len > 0 && (p[*len - 1] == '.' || p[*len - 1] == ' '))
		(*len)--;
	p[*len] = '\0';
	return p;
}

/*
 * The flushing ahead: an upload's temporary file is fsync'd before its
 * rename, and with nothing written out before (the dirty limits of a
 * large machine hold gigabytes) that fsync began the whole disk write only
 * once the transfer was over: 1.5-2.4 s after a 1 GiB transfer.  Started
 * behind the transfer, the disk work overlaps it.  A file system that
 * cannot (EINVAL, ESPIPE) just leaves it to the fsync.
 */
int
fw_upload_write(int fd, const char *name, const char *data, size_t len,
    unsigned long long *written, unsigned long long max, struct berr *e)
{
	unsigned long long before = *written, upto;
	ssize_t	 w;
	int	 full;

	if (*written + len > max) {
		berr_set(e, 413, "%s is larger than the limit of %llu bytes per "
		    "upload; it was not saved.", name, max);
		return -1;
	}
	while (len > 0) {
		w = write(fd, data, len);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			full = w == 0 || errno == ENOSPC || errno == EDQUOT;
			berr_set(e, full ? 507 : 500, "%s was not saved: %s",
			    name, full ? "the workspace is full. Free some "
			    "space (remove files you no longer need) and upload "
			    "it again" : strerror(errno));
			return -1;
		}
		data += w;
		len -= (size_t)w;
		*written += (size_t)w;
	}
	upto = *written / FW_FLUSH_AHEAD * FW_FLUSH_AHEAD;
	if (upto > before / FW_FLUSH_AHEAD * FW_FLUSH_AHEAD) {
		before = before / FW_FLUSH_AHEAD * FW_FLUSH_AHEAD;
		(void)sync_file_range(fd, (off_t)before, (off_t)(upto - before),
		    SYNC_FILE_RANGE_WRITE);
	}
	return 0;
}

void
fw_clean_name(const char *in, char *out, size_t outlen)
{
	char		 tmp[1024], *p, *dot;
	const char	*q, *base = in;
	size_t		 n = 0, len, extlen, cut;
	int		 k;

	for (q = in; *q != '\0'; q++)
		if (*q == '/' || *q == '\\')
			base = q + 1;
	len = strlen(base);
	for (q = base; *q != '\0' && n + 5 < sizeof(tmp);) {
		unsigned char c = (unsigned char)*q;

		if (c < 0x20 || c == 0x7f) {
			q++;
			continue;
		}
		k = utf8_seq((const unsigned char *)q, len - (size_t)(q - base));
		if (k <= 0) {
			tmp[n++] = '_';
			q++;
			continue;
		}
		/* Unseen but not without effect: "rtl<U+202E>gpj.exe" shows
		 * as "rtlexe.jpg", U+200B makes two names look alike. */
		if (unicode_invisible(utf8_code((const unsigned char *)q, k))) {
			q += k;
			continue;
		}
		memcpy(tmp + n, q, (size_t)k);
		n += (size_t)k;
		q += k;
	}
	tmp[n] = '\0';
	len = n;
	/* No hidden files (".vivarium" above all), no "..", no blank ends. */
	p = trim_name(tmp, &len);
	while (len > NAME_KEEP) {
		/* Keep a short extension; cut the stem on a character boundary. */
		dot = strrchr(p, '.');
		extlen = dot != NULL && (size_t)(p + len - dot) <= 16 ?
		    (size_t)(p + len - dot) : 0;
		cut = NAME_KEEP - extlen;
		while (cut > 0 && ((unsigned char)p[cut] & 0xc0) == 0x80)
			cut--;
		memmove(p + cut, p + len - extlen, extlen);
		len = cut + extlen;
		p = trim_name(p, &len);
	}
	if (len == 0 || len >= outlen) {
		snprintf(out, outlen, "upload");
		return;
	}
	memcpy(out, p, len + 1);
}

/* ------------------------------------------------------------ pages */

static int
html_escape(struct buf *b, const char *s)
{
	const char	*p;
	int		 r = 0;

	/* NULL (a field a backend left out) is shown as nothing. */
	for (p = s ? s : ""; *p != '\0' && r == 0; p++) {
		switch (*p) {
		case '&': r = buf_appends(b, "&amp;"); break;
		case '<': r = buf_appends(b, "&lt;"); break;
		case '>': r = buf_appends(b, "&gt;"); break;
		case '"': r = buf_appends(b, "&quot;"); break;
		case '\'': r = buf_appends(b, "&#39;"); break;
		default: r = buf_append(b, p, 1); break;
		}
	}
	return r;
}

static void
nonce_make(char out[25])
{
	unsigned char	 r[16];
	struct buf	 b = BUF_INIT(64);

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		memset(r, 0, sizeof(r));	/* no script runs, that is all */
	base64_encode(BASE64_URL, r, sizeof(r), &b);
	snprintf(out, 25, "%s", buf_str(&b));
	buf_release(&b);
}

static void
guard_headers(struct MHD_Response *resp)
{
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "Cache-Control", "private, no-store");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
}

static void
time_utc(time_t t, char *out, size_t len)
{
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL || strftime(out, len,
	    "%Y-%m-%d %H:%M UTC", &tm) == 0)
		snprintf(out, len, "%lld", (long long)t);
}

/*
 * The pages' style and the upload page's script, kept as the files they
 * are (common/pages/) and compiled in by the Makefile (embed).
 */
extern const unsigned char page_style[], upload_script[];
#define PAGE_STYLE	((const char *)page_style)
#define UPLOAD_SCRIPT	((const char *)upload_script)

static void
page_begin(struct buf *b, const char *title, const char *nonce)
{
	buf_appends(b, "<!doctype html>\n<html lang=\"en\"><head>"
	    "<meta charset=\"utf-8\"><meta name=\"viewport\" "
	    "content=\"width=device-width,initial-scale=1\"><title>");
	html_escape(b, title);
	buf_appendf(b, "</title><style nonce=\"%s\">%s</style></head><body>"
	    "<h1>", nonce, PAGE_STYLE);
	html_escape(b, title);
	buf_appends(b, "</h1>\n");
}

static enum MHD_Result
page_send(struct MHD_Connection *conn, unsigned int status, struct buf *b,
    const char *nonce)
{
	struct MHD_Response	*resp;
	char			 csp[512], *s;
	size_t			 len;

	buf_appends(b, "</body></html>\n");
	if ((s = buf_detach(b, &len)) == NULL)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(len, s, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(s);
		return MHD_NO;
	}
	snprintf(csp, sizeof(csp), "default-src 'none'; img-src 'self'; "
	    "style-src 'nonce-%s'; script-src 'nonce-%s'; connect-src 'self'; "
	    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
	    nonce, nonce);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "text/html; charset=utf-8");
	MHD_add_response_header(resp, "Content-Security-Policy", csp);
	guard_headers(resp);
	return http_queue(conn, status, resp);
}

/* A page with one message: refusals, errors, missing files. */
static enum MHD_Result
page_message(struct MHD_Connection *conn, unsigned int status,
    const char *title, const char *msg)
{
	struct buf	 b = BUF_INIT(PAGE_MAX);
	char		 nonce[25];

	nonce_make(nonce);
	page_begin(&b, title, nonce);
	buf_appends(&b, "<p>");
	html_escape(&b, msg);
	buf_appends(&b, "</p>\n");
	return page_send(conn, status, &b, nonce);
}

static enum MHD_Result
refuse_link(struct MHD_Connection *conn, enum link_check c,
    const struct link *l)
{
	char	 when[64], msg[512];

	switch (c) {
	case LINK_EXPIRED:
		time_utc(l->expires, when, sizeof(when));
		snprintf(msg, sizeof(msg), "This link expired on %s. Links "
		    "last a limited time; ask the assistant for a new one.",
		    when);
		return page_message(conn, 403, "Link expired", msg);
	case LINK_TOO_LONG:
		return page_message(conn, 403, "Link not valid", "This link is "
		    "not valid: it claims to last longer than this server "
		    "allows any link to. Ask the assistant for a new one.");
	case LINK_MALFORMED:
		return page_message(conn, 403, "Link not valid", "This link is "
		    "not valid: it is incomplete or damaged. Check that the "
		    "whole link was copied, or ask the assistant for a new one.");
	default:
		return page_message(conn, 403, "Link not valid", "This link is "
		    "not valid: this server did not make it, or its link key "
		    "has been replaced since (which cancels every earlier "
		    "link). Ask the assistant for a new one.");
	}
}

static enum MHD_Result
refuse_purpose(struct MHD_Connection *conn, const struct link *l,
    enum route_kind want)
{
	char	 msg[512];

	snprintf(msg, sizeof(msg), "This is a %s link, not %s link, so it "
	    "cannot be used here. Use the link as it was given.",
	    link_purpose_name(l->purpose),
	    want == RK_DOWNLOAD ? "a download" : want == RK_UPLOAD ?
	    "an upload" : "a workspace");
	return page_message(conn, 403, "Wrong kind of link", msg);
}

static enum MHD_Result
error_page(struct MHD_Connection *conn, const struct berr *e)
{
	unsigned int st = e->status >= 400 && e->status <= 599 ?
	    (unsigned int)e->status : 500;

	return page_message(conn, st, st == 404 ? "File not found" :
	    st == 413 ? "Too large" : st == 507 ? "Workspace full" :
	    st == 503 || st == 502 ? "Sandbox not available" :
	    "Something went wrong", e->msg[0] ? e->msg : "unknown error");
}

/* A transfer cap is full (http_guard_transfer): try again later. */
static enum MHD_Result
busy_page(struct MHD_Connection *conn, const char *why)
{
	char	 msg[512];

	snprintf(msg, sizeof(msg), "The server is busy: %s. Try again in a "
	    "minute.", why);
	log_info("file link: refused a transfer: %s", why);
	return page_message(conn, 503, "Busy", msg);
}

/* ------------------------------------------------------------ files */

struct reader_state {
	struct fw_reader	 r;
};

static ssize_t
reader_cb(void *cls, uint64_t pos, char *dst, size_t max)
{
	struct reader_state	*s = cls;
	ssize_t			 n;

	n = s->r.read(s->r.cookie, dst, max);
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n;
}

static void
reader_free(void *cls)
{
	struct reader_state *s = cls;

	if (s->r.close != NULL)
		s->r.close(s->r.cookie);
	free(s);
}

/* RFC 6266: an ASCII fallback, and the real name in filename*. */
static void
disposition(const char *kind, const char *path, struct buf *b)
{
	const char	*base = strrchr(path, '/');
	const char	*p;

	base = base ? base + 1 : path;
	buf_appendf(b, "%s; filename=\"", kind);
	for (p = base; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '%')
			buf_append(b, "_", 1);
		else
			buf_append(b, p, 1);
	}
	buf_appends(b, "\"; filename*=UTF-8''");
	url_escape(base, 0, b);
}

/* A sent descriptor's backend state, let go when the request ends. */
static void
held_release(void *state, enum MHD_RequestTerminationCode why)
{
	struct reader_state *s = state;

	s->r.close(s->r.cookie);
	free(s);
}

static enum MHD_Result
send_file(const struct fileweb *fw, struct MHD_Connection *conn,
    const char *user, const char *path, int inline_ok, void **con_cls)
{
	struct fw_reader	 r;
	struct berr		 e;
	struct reader_state	*s;
	struct MHD_Response	*resp;
	struct buf		 cd = BUF_INIT(4096);
	enum MHD_Result		 ret;

	if (inline_ok && !fw_previewable(path)) {
		berr_set(&e, 403, "Only PNG, JPEG, GIF and WebP images are "
		    "shown here; download the file instead.");
		return error_page(conn, &e);
	}
	memset(&r, 0, sizeof(r));
	r.fd = -1;
	memset(&e, 0, sizeof(e));
	if (fw->be->open(fw->be->arg, user, path, &r, &e) == -1)
		return error_page(conn, &e);
	if (r.fd >= 0 && r.close != NULL) {
		/* Sent with sendfile; the backend's hold ends with the
		 * request (http_request_completed). */
		if ((s = calloc(1, sizeof(*s))) == NULL) {
			close(r.fd);
			r.close(r.cookie);
			return MHD_NO;
		}
		s->r = r;
		if (http_request_attach(con_cls, s, held_release) == NULL) {
			close(r.fd);
			held_release(s, MHD_REQUEST_TERMINATED_WITH_ERROR);
			return MHD_NO;
		}
	}
	if (r.fd >= 0)
		resp = MHD_create_response_from_fd64(r.size, r.fd);
	else {
		if ((s = calloc(1, sizeof(*s))) == NULL) {
			if (r.close != NULL)
				r.close(r.cookie);
			return MHD_NO;
		}
		s->r = r;
		resp = MHD_create_response_from_callback(r.size, 128 * 1024,
		    reader_cb, s, reader_free);
		if (resp == NULL)
			reader_free(s);
	}
	if (resp == NULL) {
		if (r.fd >= 0)
			close(r.fd);
		return MHD_NO;
	}
	disposition(inline_ok ? "inline" : "attachment", path, &cd);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    fw_content_type(path));
	MHD_add_response_header(resp, "Content-Disposition", buf_str(&cd));
	MHD_add_response_header(resp, "Content-Security-Policy",
	    "default-src 'none'; sandbox");
	guard_headers(resp);
	buf_release(&cd);
	if (r.fd >= 0)
		http_guard_file(conn, r.fd, r.size);
	/* Which way the bytes go: an operator sees whether files are
	 * handed over (docs/agent.md, "Files by descriptor"). */
	log_info("file link: %s of %s for user %s (%llu bytes, %s)",
	    inline_ok ? "preview" : "download", path, user,
	    (unsigned long long)r.size, r.fd >= 0 ? "sent from the file" :
	    "relayed");
	ret = http_queue(conn, 200, resp);
	return ret;
}

/* ------------------------------------------------------------ pages */

static void
upload_form(const struct fileweb *fw, struct buf *b, const char *action)
{
	char	 cap[32];

	human_size(fw->upload_max, cap, sizeof(cap));
	buf_appends(b, "<form id=\"up\" method=\"post\" enctype=\"multipart/"
	    "form-data\" action=\"");
	html_escape(b, action);
	buf_appends(b, "\"><div class=\"drop\" id=\"drop\"><p>Drop files here, "
	    "or choose them:</p><input type=\"file\" name=\"file\" multiple> "
	    "<button type=\"submit\">Upload</button>");
	buf_appendf(b, "<p><small>Up to %s per upload. Files go to the top of "
	    "the workspace; a file of the same name is kept, and the new one "
	    "gets a new name.</small></p></div>"
	    "<progress id=\"pr\" max=\"1\" value=\"0\"></progress>"
	    "<div id=\"out\"></div></form>\n", cap);
}

static enum MHD_Result
upload_page(const struct fileweb *fw, struct MHD_Connection *conn,
    const struct link *l, const char *url)
{
	struct buf	 b = BUF_INIT(PAGE_MAX);
	char		 nonce[25], when[64];

	nonce_make(nonce);
	time_utc(l->expires, when, sizeof(when));
	page_begin(&b, "Upload files to your workspace", nonce);
	buf_appends(&b, "<p>Files you upload here are in the workspace of the "
	    "assistant's Python sandbox at once: tell it their names, or just "
	    "ask it to look.</p>\n");
	upload_form(fw, &b, url);
	buf_appendf(&b, "<p><small>This link works until %s.</small></p>"
	    "<script nonce=\"%s\">%s</script>\n", when, nonce, UPLOAD_SCRIPT);
	return page_send(conn, 200, &b, nonce);
}

static enum MHD_Result
workspace_page(const struct fileweb *fw, struct MHD_Connection *conn,
    const struct link *l, const struct route *rt)
{
	struct buf	 b = BUF_INIT(PAGE_MAX), base = BUF_INIT(1024),
			 href = BUF_INIT(LINK_PATH_MAX * 3 + 1024);
	struct berr	 e;
	json_t		*list, *files, *f;
	size_t		 i;
	char		 nonce[25], when[64], size[32];
	const char	*path;
	json_int_t	 mtime;

	memset(&e, 0, sizeof(e));
	if ((list = fw->be->list(fw->be->arg, l->user, &e)) == NULL)
		return error_page(conn, &e);
	files = json_object_get(list, "files");
	nonce_make(nonce);
	buf_appends(&base, "/ws/");
	buf_append(&base, rt->token, rt->toklen);
	page_begin(&b, "Your workspace", nonce);
	if (!json_is_array(files) || json_array_size(files) == 0)
		buf_appends(&b, "<p>The workspace is empty.</p>\n");
	else {
		buf_appends(&b, "<table><tr><th></th><th>File</th><th>Size</th>"
		    "<th>Changed</th><th></th></tr>\n");
		json_array_foreach(files, i, f) {
			if (i >= LIST_SHOWN)
				break;
			path = json_string_value(json_object_get(f, "path"));
			if (path == NULL)
				continue;
			mtime = json_integer_value(json_object_get(f, "mtime"));
			human_size((unsigned long long)json_integer_value(
			    json_object_get(f, "size")), size, sizeof(size));
			time_utc((time_t)mtime, when, sizeof(when));
			buf_reset(&href);
			buf_append(&href, base.data, base.len);
			buf_appends(&href, "/file/");
			url_escape(path, 1, &href);
			buf_appends(&b, "<tr><td>");
			if (fw_previewable(path)) {
				buf_appendf(&b, "<img class=\"p\" loading=\"lazy\" "
				    "alt=\"\" src=\"%.*s/view/", (int)base.len,
				    base.data);
				url_escape(path, 1, &b);
				buf_appends(&b, "\">");
			}
			buf_appends(&b, "</td><td>");
			html_escape(&b, path);
			buf_appendf(&b, "</td><td class=\"n\">%s</td><td class=\"n\">"
			    "%s</td><td><a class=\"b\" download href=\"%s\">"
			    "Download</a></td></tr>\n", size, when,
			    buf_str(&href));
		}
		buf_appends(&b, "</table>\n");
		if (json_array_size(files) > LIST_SHOWN ||
		    json_is_true(json_object_get(list, "truncated")))
			buf_appendf(&b, "<p>Only the first %zu files are shown.</p>",
			    json_array_size(files) < LIST_SHOWN ?
			    json_array_size(files) : (size_t)LIST_SHOWN);
	}
	buf_appends(&b, "<h2>Add files</h2>\n");
	upload_form(fw, &b, buf_str(&base));
	time_utc(l->expires, when, sizeof(when));
	buf_appendf(&b, "<p><small>Nothing can be deleted from this page. This "
	    "link works until %s.</small></p><script nonce=\"%s\">%s</script>\n",
	    when, nonce, UPLOAD_SCRIPT);
	json_decref(list);
	buf_release(&base);
	buf_release(&href);
	return page_send(conn, 200, &b, nonce);
}

/* ------------------------------------------------------------ uploads */

struct upload {
	const struct fileweb	*fw;
	struct link		 link;
	struct multipart	 mp;
	void			*cur;		/* the file being received */
	char			 cur_name[256];
	json_t			*done;		/* [{name, path, size, renamed}] */
	struct berr		 err;
	int			 failed;
	int			 want_json;
};

static void
upload_end_current(struct upload *u)
{
	json_t *r;

	if (u->cur == NULL)
		return;
	r = u->fw->be->put_end(u->cur, &u->err);
	u->cur = NULL;
	if (r != NULL && (!json_is_string(json_object_get(r, "path")) ||
	    !json_is_string(json_object_get(r, "name")))) {
		json_decref(r);
		r = NULL;
		berr_set(&u->err, 502, "The sandbox's answer to the upload "
		    "could not be read.");
	}
	if (r == NULL) {
		u->failed = 1;
		return;
	}
	log_info("file link: upload of %s for user %s", json_string_value(
	    json_object_get(r, "path")), u->link.user);
	json_array_append_new(u->done, r);
}

static void
upload_abort_current(struct upload *u)
{
	if (u->cur != NULL)
		u->fw->be->put_abort(u->cur);
	u->cur = NULL;
}

/*
 * The form's parts as the reader finds them: a part of the field "file"
 * with a file chosen goes to the backend; every other part is ignored (a
 * file input left empty sends filename="" and no data).
 */
static int
upload_part_begin(void *arg, const char *name, const char *filename)
{
	struct upload	*u = arg;

	if (name == NULL || strcmp(name, "file") != 0 || filename == NULL ||
	    *filename == '\0')
		return 0;
	fw_clean_name(filename, u->cur_name, sizeof(u->cur_name));
	u->cur = u->fw->be->put_begin(u->fw->be->arg, u->link.user,
	    u->cur_name, &u->err);
	if (u->cur == NULL) {
		u->failed = 1;
		return -1;
	}
	return 0;
}

static int
upload_part_data(void *arg, const char *data, size_t size)
{
	struct upload	*u = arg;

	if (u->cur != NULL &&
	    u->fw->be->put_write(u->cur, data, size, &u->err) == -1) {
		upload_abort_current(u);
		u->failed = 1;
		return -1;
	}
	return 0;
}

/* The part is whole: its file goes into place now. */
static int
upload_part_end(void *arg)
{
	struct upload	*u = arg;

	upload_end_current(u);
	return u->failed ? -1 : 0;
}

static void
upload_release(void *state, enum MHD_RequestTerminationCode why)
{
	struct upload *u = state;

	if (u->cur != NULL) {
		log_warnx("file link: an upload for user %s broke off; %s was "
		    "not saved", u->link.user, u->cur_name);
		upload_abort_current(u);
	}
	json_decref(u->done);
	free(u);
}

static enum MHD_Result
upload_answer(struct MHD_Connection *conn, struct upload *u)
{
	struct buf	 b = BUF_INIT(PAGE_MAX);
	char		 nonce[25], size[32];
	json_t		*f, *j;
	size_t		 i;
	unsigned int	 status = u->failed ? (u->err.status ? u->err.status :
			    500) : 200;

	if (u->want_json) {
		enum MHD_Result ret;

		j = json_pack("{s:O}", "files", u->done);
		if (j != NULL && u->failed)
			json_object_set_new(j, "error", json_string(u->err.msg));
		ret = j ? http_reply_json(conn, status, j) : MHD_NO;
		json_decref(j);
		return ret;
	}
	nonce_make(nonce);
	page_begin(&b, u->failed ? "Upload failed" : "Upload complete", nonce);
	if (json_array_size(u->done) > 0) {
		buf_appends(&b, "<p>These files are now in the workspace:</p><ul>");
		json_array_foreach(u->done, i, f) {
			human_size((unsigned long long)json_integer_value(
			    json_object_get(f, "size")), size, sizeof(size));
			buf_appends(&b, "<li>");
			html_escape(&b, json_string_value(json_object_get(f,
			    "name")));
			buf_appends(&b, " &rarr; <code>");
			html_escape(&b, json_string_value(json_object_get(f,
			    "path")));
			buf_appendf(&b, "</code> (%s)%s</li>", size,
			    json_is_true(json_object_get(f, "renamed")) ?
			    " &mdash; a file of that name was already there, so "
			    "this one got a new name" : "");
		}
		buf_appends(&b, "</ul>\n");
	}
	if (u->failed) {
		buf_appends(&b, "<p class=\"err\">");
		html_escape(&b, u->err.msg);
		buf_appends(&b, "</p>\n");
	}
	buf_appends(&b, "<p>Go back to upload more.</p>\n");
	return page_send(conn, status, &b, nonce);
}

static enum MHD_Result
upload_start(const struct fileweb *fw, struct MHD_Connection *conn,
    const struct link *l, void **con_cls)
{
	struct upload		*u;
	struct http_request	*req;
	const char		*ct, *cl, *acc;
	char			*end, msg[256], cap[32];
	unsigned long long	 len;

	ct = http_header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (ct == NULL || strncasecmp(ct, "multipart/form-data", 19) != 0)
		return page_message(conn, 415, "Not an upload", "Uploads are "
		    "sent as a form (multipart/form-data) with the files in "
		    "the field \"file\", e.g. curl -F file=@data.csv URL.");
	cl = http_header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
	errno = 0;
	len = cl ? strtoull(cl, &end, 10) : 0;
	if (cl == NULL || errno != 0 || *end != '\0' || *cl == '-')
		return page_message(conn, 411, "Length required", "The upload "
		    "must say how large it is (Content-Length); browsers and "
		    "curl -F do.");
	if (len > fw->upload_max) {
		human_size(fw->upload_max, cap, sizeof(cap));
		snprintf(msg, sizeof(msg), "This upload is %llu bytes; the "
		    "limit is %s per upload. Nothing was saved.", len, cap);
		return page_message(conn, 413, "Too large", msg);
	}
	if ((u = calloc(1, sizeof(*u))) == NULL ||
	    (u->done = json_array()) == NULL)
		goto oom;
	u->fw = fw;
	u->link = *l;
	acc = http_header(conn, MHD_HTTP_HEADER_ACCEPT);
	u->want_json = acc != NULL && strstr(acc, "application/json") != NULL;
	if (mp_init(&u->mp, ct) == -1) {
		snprintf(msg, sizeof(msg), "The form could not be read: %s.",
		    u->mp.error);
		json_decref(u->done);
		free(u);
		return page_message(conn, 400, "Not an upload", msg);
	}
	if ((req = http_request_attach(con_cls, u, upload_release)) == NULL) {
		upload_release(u, MHD_REQUEST_TERMINATED_WITH_ERROR);
		return MHD_NO;
	}
	return MHD_YES;
oom:
	if (u != NULL)
		json_decref(u->done);
	free(u);
	return MHD_NO;
}

static enum MHD_Result
upload_more(struct MHD_Connection *conn, struct upload *u,
    const char *data, size_t *size)
{
	const struct mp_handler h = { upload_part_begin, upload_part_data,
	    upload_part_end, u };

	if (*size > 0) {
		if (!u->failed && mp_feed(&u->mp, data, *size, &h) == -1 &&
		    !u->failed) {
			u->failed = 1;
			berr_set(&u->err, 400, "The form could not be read: %s.",
			    u->mp.error ? u->mp.error : "it is not valid "
			    "multipart/form-data");
		}
		*size = 0;
		return MHD_YES;
	}
	/* The whole body is in: the form must have ended properly.  What
	 * is left is the sandbox's work (putting the file in place), not
	 * the client's pace. */
	http_guard_trust(conn, u->fw->work_timeout);
	if (!mp_complete(&u->mp) || u->failed) {
		if (!u->failed && u->cur != NULL)
			berr_set(&u->err, 400, "The upload ended before its "
			    "last file was complete; that file was not saved.");
		else if (!u->failed)
			berr_set(&u->err, 400, "The upload ended without the "
			    "form's closing boundary; only the files listed "
			    "arrived whole.");
		upload_abort_current(u);
		u->failed = 1;
		return upload_answer(conn, u);
	}
	if (json_array_size(u->done) == 0) {
		u->failed = 1;
		berr_set(&u->err, 400, "No file arrived: the form must have "
		    "its files in the field \"file\" (choose one or more and "
		    "send it again).");
	}
	return upload_answer(conn, u);
}

/* ------------------------------------------------------------ access */

enum MHD_Result
fileweb_access(const struct fileweb *fw, struct MHD_Connection *conn,
    const char *url, const char *method, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct http_request	*req = *con_cls;
	struct route		 rt;
	struct link		 l;
	enum link_check		 c;
	enum route_kind		 want;
	char			 why[256];
	int			 get;

	if (req != NULL)
		/* An upload's body; a download's hold (held_release) has
		 * its answer queued already. */
		return req->release == upload_release ? upload_more(conn,
		    req->state, upload_data, upload_data_size) : MHD_YES;
	if (route_parse(url, &rt) == -1)
		return page_message(conn, 404, "Not found", "There is nothing "
		    "at this address.");
	get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	if (!get && strcmp(method, "POST") != 0)
		return page_message(conn, 405, "Method not allowed", "Links "
		    "are opened (GET) or, for uploads, sent a form (POST).");
	c = link_verify(fw->keys, rt.token, rt.toklen, time(NULL),
	    fw->max_lifetime, &l);
	if (c != LINK_OK)
		return refuse_link(conn, c, &l);
	want = rt.kind == RK_DOWNLOAD ? RK_DOWNLOAD : rt.kind == RK_UPLOAD ?
	    RK_UPLOAD : RK_WORKSPACE;
	if ((want == RK_DOWNLOAD && l.purpose != LINK_DOWNLOAD) ||
	    (want == RK_UPLOAD && l.purpose != LINK_UPLOAD) ||
	    (want == RK_WORKSPACE && l.purpose != LINK_WORKSPACE))
		return refuse_purpose(conn, &l, want);
	/*
	 * A valid link earns no trust: its transfer is counted against the
	 * caps of link traffic and must keep moving (http_guard_transfer),
	 * so link holders never take the slots /mcp and /health need.
	 */
	if (http_guard_transfer(conn, rt.token, rt.toklen, why,
	    sizeof(why)) == -1)
		return busy_page(conn, why);
	switch (rt.kind) {
	case RK_DOWNLOAD:
		if (!get)
			break;
		return send_file(fw, conn, l.user, l.path, 0, con_cls);
	case RK_WS_FILE:
	case RK_WS_VIEW:
		if (!get)
			break;
		return send_file(fw, conn, l.user, rt.path,
		    rt.kind == RK_WS_VIEW, con_cls);
	case RK_UPLOAD:
	case RK_WORKSPACE:
		if (get)
			return rt.kind == RK_UPLOAD ? upload_page(fw, conn, &l,
			    url) : workspace_page(fw, conn, &l, &rt);
		return upload_start(fw, conn, &l, con_cls);
	case RK_NONE:
		break;
	}
	return page_message(conn, 405, "Method not allowed", "This link is "
	    "only opened (GET); uploads go to an upload link.");
}
