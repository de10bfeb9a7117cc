/*
 * mhd.c: libmicrohttpd helpers (see mhd.h).
 */
#include <sys/socket.h>

#include <stddef.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mhd.h"
#include "log.h"
#include "banned.h"

/* ------------------------------------------------------------ bodies */

static struct http_request *
http_request_new(void)
{
	struct http_request *req;

	req = calloc(1, sizeof(*req));
	if (req == NULL)
		return NULL;
	/* The max is set in http_collect, from the caller's cap. */
	buf_init(&req->body, 0);
	return req;
}

struct http_request *
http_request_attach(void **con_cls, void *state,
    void (*release)(void *, enum MHD_RequestTerminationCode))
{
	struct http_request *req;

	if ((req = http_request_new()) == NULL)
		return NULL;
	req->state = state;
	req->release = release;
	*con_cls = req;
	return req;
}

enum http_collect
http_collect(struct MHD_Connection *conn, void **con_cls,
    const char *upload_data, size_t *upload_data_size, size_t max,
    struct http_request **reqp)
{
	struct http_request	*req = *con_cls;
	const char		*cl;
	char			*end;
	unsigned long long	 len;

	if (req == NULL) {
		/* First call: headers only.  Refuse a declared oversize now. */
		req = http_request_new();
		*reqp = req;
		if (req == NULL)
			return HTTP_COLLECT_FAILED;
		req->body.max = max;
		*con_cls = req;
		*reqp = req;
		cl = http_header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL) {
			errno = 0;
			len = strtoull(cl, &end, 10);
			if (errno == 0 && *end == '\0' && len > max &&
			    len <= HTTP_DRAIN_MAX) {
				/*
				 * Read and drop it, then answer: a client still
				 * sending when we close would get a reset
				 * instead of our 413.
				 */
				req->too_big = 1;
			} else if (errno == 0 && *end == '\0' && len > max) {
				req->too_big = 1;
				req->ret = http_reply_text(conn,
				    MHD_HTTP_CONTENT_TOO_LARGE,
				    "request body too large: %llu bytes, "
				    "the limit is %zu bytes", len, max);
				return HTTP_COLLECT_ANSWERED;
			}
		}
		return HTTP_COLLECT_MORE;
	}
	*reqp = req;
	if (*upload_data_size > 0) {
		req->seen += *upload_data_size;
		if (req->too_big && req->seen > HTTP_DRAIN_MAX)
			return HTTP_COLLECT_FAILED;
		if (!req->too_big && buf_append(&req->body, upload_data,
		    *upload_data_size) == -1) {
			/* ENOSPC (over the cap) or ENOMEM: drop what we have. */
			req->too_big = 1;
			buf_release(&req->body);
		}
		*upload_data_size = 0;
		return HTTP_COLLECT_MORE;
	}
	if (req->too_big) {
		req->ret = http_reply_text(conn, MHD_HTTP_CONTENT_TOO_LARGE,
		    "request body too large: the limit is %zu bytes", max);
		return HTTP_COLLECT_ANSWERED;
	}
	return HTTP_COLLECT_DONE;
}

void
http_request_completed(void *cls, struct MHD_Connection *conn,
    void **con_cls, enum MHD_RequestTerminationCode why)
{
	struct http_request *req = *con_cls;

	http_guard_untrust(conn);	/* between requests: idle again */
	if (req == NULL)
		return;
	if (req->release != NULL)
		req->release(req->state, why);
	buf_release(&req->body);
	free(req);
	*con_cls = NULL;
}

/* ------------------------------------------------------------ responses */

struct MHD_Response *
http_response_json(const json_t *json)
{
	struct MHD_Response	*resp;
	char			*s;

	s = json_dumps(json, JSON_COMPACT);
	if (s == NULL)
		return NULL;
	resp = MHD_create_response_from_buffer(strlen(s), s,
	    MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(s);
		return NULL;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "application/json");
	return resp;
}

struct MHD_Response *
http_response_text(const char *text)
{
	struct MHD_Response *resp;

	resp = MHD_create_response_from_buffer(strlen(text), (void *)(uintptr_t)text,
	    MHD_RESPMEM_MUST_COPY);
	if (resp == NULL)
		return NULL;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "text/plain; charset=utf-8");
	return resp;
}

enum MHD_Result
http_queue(struct MHD_Connection *conn, unsigned int status,
    struct MHD_Response *resp)
{
	enum MHD_Result ret;

	if (resp == NULL)
		return MHD_NO;
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

enum MHD_Result
http_reply_json(struct MHD_Connection *conn, unsigned int status,
    const json_t *json)
{
	return http_queue(conn, status, http_response_json(json));
}

enum MHD_Result
http_reply_text(struct MHD_Connection *conn, unsigned int status,
    const char *fmt, ...)
{
	struct buf	 b = BUF_INIT(64 * 1024);
	va_list		 ap;
	enum MHD_Result	 ret;

	va_start(ap, fmt);
	if (buf_vappendf(&b, fmt, ap) == -1 || buf_append(&b, "\n", 1) == -1) {
		va_end(ap);
		buf_release(&b);
		return MHD_NO;
	}
	va_end(ap);
	ret = http_queue(conn, status, http_response_text(buf_str(&b)));
	buf_release(&b);
	return ret;
}

enum MHD_Result
http_reply_empty(struct MHD_Connection *conn, unsigned int status,
    const char *allow)
{
	struct MHD_Response *resp;

	resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	if (resp == NULL)
		return MHD_NO;
	if (allow != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	return http_queue(conn, status, resp);
}

const char *
http_header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/*
 * The request's header fields in the order they came, as libmicrohttpd
 * keeps them: pointers into its read buffer, where it parsed each line in
 * place (the ':' and the line's CR and LF overwritten with NUL bytes).
 */
#define STRICT_MAX_FIELDS	256

struct header_walk {
	const char	*name;
	int		 n;		/* fields named name */
	int		 at;		/* index of the last of them */
	int		 count;
	const char	*keys[STRICT_MAX_FIELDS];
	const char	*values[STRICT_MAX_FIELDS];
	int		 nul;		/* MHD 1.x: the value's size says so */
};

static enum MHD_Result
header_walk_one(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct header_walk *w = cls;

	(void)kind;
	if (key != NULL && strcasecmp(key, w->name) == 0) {
		w->n++;
		w->at = w->count;
	}
	if (w->count < STRICT_MAX_FIELDS) {
		w->keys[w->count] = key;
		w->values[w->count] = value;
	}
	w->count++;
	return MHD_YES;
}

/*
 * Every field with its size as libmicrohttpd reports it: 1.x reports the
 * bytes received, so a value whose strlen is shorter holds a NUL; 0.9
 * reports the strlen, and then only value_cut_by_nul can tell.
 */
static enum MHD_Result
header_walk_n(void *cls, enum MHD_ValueKind kind, const char *key,
    size_t key_size, const char *value, size_t value_size)
{
	struct header_walk *w = cls;

	(void)key_size;
	if (key != NULL && value != NULL && strcasecmp(key, w->name) == 0)
		w->nul = strlen(value) != value_size;
	return header_walk_one(cls, kind, key, value);
}

/*
 * The version of the libmicrohttpd this process runs with, as 0xMMmmpp00
 * like MHD_VERSION: decided at run time, not from the headers we were
 * built with, since a distribution upgrade (Debian 12's 0.9.75 to 13's
 * 1.0.1) changes the library under the same soname.
 */
static unsigned long
mhd_runtime_version(void)
{
	unsigned int	 a = 0, b = 0, c = 0;
	const char	*v = MHD_get_version();

	if (v == NULL || sscanf(v, "%u.%u.%u", &a, &b, &c) < 2)
		return 0;
	return ((unsigned long)(a & 0xff) << 24) | ((b & 0xff) << 16) |
	    ((c & 0xff) << 8);
}

/*
 * libmicrohttpd 0.9 measures a value with strlen, so "alice\0evil" reads
 * as "alice" through every API it has.  What follows the value in its
 * buffer tells: after a value there are only the NUL bytes that replaced
 * its line's end (CR LF, or a bare LF), up to the next field's name; after
 * the last field, its line end and the empty line's.  A byte that is not
 * NUL there came after a NUL inside the value.
 *
 * That reads bytes of the library's own buffer, so it is done only on the
 * releases whose layout it was written and tested for (0.9.75, Debian
 * 12's, and older 0.9); a newer 0.9 gets the sizes it reports, and a NUL
 * there may go unseen, which is better than refusing every request.
 */
#define MHD_LAYOUT_KNOWN	0x00097500UL

static int
value_cut_by_nul(const struct header_walk *w)
{
	const char	*v, *end, *next;
	ptrdiff_t	 gap, eol = 2;
	int		 i, known = w->count < STRICT_MAX_FIELDS ? w->count :
			    STRICT_MAX_FIELDS;

	if (w->at >= known || (v = w->values[w->at]) == NULL)
		return 0;
	/* The line ends this client sends: the narrowest gap between two
	 * fields (one NUL for a bare LF, two for CR LF). */
	for (i = 0; i + 1 < known; i++) {
		if (w->values[i] == NULL || w->keys[i + 1] == NULL)
			continue;
		gap = w->keys[i + 1] - (w->values[i] + strlen(w->values[i]));
		if (gap >= 1 && gap < eol)
			eol = gap;
	}
	end = v + strlen(v);
	if (w->at + 1 < known) {
		next = w->keys[w->at + 1];
		/* Not one buffer, or not in order: nothing to tell. */
		if (next == NULL || next <= end || next - end > 65536)
			return 0;
		for (; end < next; end++)
			if (*end != '\0')
				return 1;
		return 0;
	}
	/* The last field: its line end and the empty line's, all received
	 * (the head is complete), so reading them stays inside the buffer. */
	for (i = 1; i < 2 * eol; i++)
		if (end[i] != '\0')
			return 1;
	return 0;
}

const char *
http_header_strict(struct MHD_Connection *conn, const char *name,
    int *refused, char *why, size_t whylen)
{
	struct header_walk w;

	memset(&w, 0, sizeof(w));
	w.name = name;
	*refused = 0;
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, header_walk_n, &w);
	if (w.n == 0)
		return NULL;
	if (w.n > 1) {
		snprintf(why, whylen, "the %s header is sent %d times: send it "
		    "once, as which one counts would be a guess", name, w.n);
		*refused = 1;
		return NULL;
	}
	if (w.count > STRICT_MAX_FIELDS) {
		snprintf(why, whylen, "more than %d header fields",
		    STRICT_MAX_FIELDS);
		*refused = 1;
		return NULL;
	}
	if (w.nul || (mhd_runtime_version() <= MHD_LAYOUT_KNOWN
	    && value_cut_by_nul(&w))) {
		snprintf(why, whylen, "the %s header holds a NUL byte", name);
		*refused = 1;
		return NULL;
	}
	return w.values[w.at];
}
