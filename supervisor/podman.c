/*
 * podman.c: the libpod REST client (see podman.h).
 *
 * One curl easy handle per call: calls come from several threads and a
 * unix-socket connect costs microseconds, so pooling would buy nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "buf.h"
#include "log.h"
#include "backend.h"
#include "podman.h"
#include "banned.h"

#define PODMAN_REPLY_MAX	(16u << 20)

struct podman *
podman_new(const char *socket, long timeout_ms)
{
	struct podman	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	if ((p->socket = strdup(socket)) == NULL) {
		free(p);
		return NULL;
	}
	p->timeout_ms = timeout_ms;
	p->rootless = -1;
	return p;
}

void
podman_free(struct podman *p)
{
	if (p == NULL)
		return;
	free(p->socket);
	free(p);
}

static size_t
podman_write(char *ptr, size_t size, size_t n, void *arg)
{
	struct buf	*b = arg;

	if (buf_append(b, ptr, size * n) == -1)
		return 0;	/* curl reports CURLE_WRITE_ERROR */
	return size * n;
}

/*
 * A handle for one request to path on Podman's socket, curl's own error
 * text going to errbuf (CURL_ERROR_SIZE); NULL when curl cannot make one.
 */
static CURL *
handle(const struct podman *p, const char *path, char *errbuf)
{
	CURL	*c;
	char	 url[1100];

	if ((c = curl_easy_init()) == NULL)
		return NULL;
	snprintf(url, sizeof(url), "http://d%s", path);
	errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, p->socket);
	curl_easy_setopt(c, CURLOPT_URL, url);	/* curl keeps a copy */
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	return c;
}

/* Nobody answered on the socket: said with what to check. */
static void
berr_unreachable(struct berr *e, const struct podman *p, CURLcode rc,
    const char *errbuf)
{
	berr_set(e, 0, "Podman is not reachable at %s (%s): is `podman system "
	    "service` running?", p->socket,
	    errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

/* Fills err from Podman's error body, falling back to the raw text. */
static void
berr_from_reply(struct berr *e, const char *method, const char *path,
    long status, const struct buf *body)
{
	json_t		*j;
	const char	*cause = NULL, *msg = NULL;
	json_error_t	 jerr;

	e->status = status;
	e->cause[0] = '\0';
	j = json_loadb(body->data ? body->data : "", body->len, 0, &jerr);
	if (j != NULL && json_is_object(j)) {
		cause = json_string_value(json_object_get(j, "cause"));
		msg = json_string_value(json_object_get(j, "message"));
	}
	if (cause != NULL)
		snprintf(e->cause, sizeof(e->cause), "%s", cause);
	if (msg != NULL && *msg != '\0')
		snprintf(e->msg, sizeof(e->msg), "Podman answered %ld to %s %s: %s",
		    status, method, path, msg);
	else if (cause != NULL && *cause != '\0')
		snprintf(e->msg, sizeof(e->msg), "Podman answered %ld to %s %s: %s",
		    status, method, path, cause);
	else
		snprintf(e->msg, sizeof(e->msg), "Podman answered %ld to %s %s: %.200s",
		    status, method, path, body->len ? buf_str(body) : "(empty body)");
	json_decref(j);
}

/*
 * One request; the reply's body into in (the caller's), the status into
 * *statusp.  What podman_call says, without the JSON decoding.
 */
static int
call(struct podman *p, const char *method, const char *path, json_t *body,
    struct buf *in, long *statusp, struct berr *e)
{
	CURL			*c = NULL;
	struct curl_slist	*hdrs = NULL;
	char			 errbuf[CURL_ERROR_SIZE];
	char			*payload = NULL;
	long			 status = 0;
	CURLcode		 rc;
	int			 ret = -1;

	if (statusp != NULL)
		*statusp = 0;
	memset(e, 0, sizeof(*e));
	if ((c = handle(p, path, errbuf)) == NULL) {
		snprintf(e->msg, sizeof(e->msg), "cannot set up a curl handle");
		goto fail;
	}
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, p->timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, podman_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, in);
	/* Podman reads a body without this header as a form (500 ... EOF). */
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	if (body != NULL) {
		if ((payload = json_dumps(body, JSON_COMPACT)) == NULL) {
			snprintf(e->msg, sizeof(e->msg), "cannot encode request");
			goto fail;
		}
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload);
	} else if (strcmp(method, "POST") == 0)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");

	if ((rc = curl_easy_perform(c)) != CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		e->status = 0;
		if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT
		    || rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR
		    || rc == CURLE_SEND_ERROR)
			berr_unreachable(e, p, rc, errbuf);
		else
			snprintf(e->msg, sizeof(e->msg),
			    "request to Podman failed: %s %s: %s", method, path,
			    errbuf[0] ? errbuf : curl_easy_strerror(rc));
		goto fail;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (statusp != NULL)
		*statusp = status;
	if (!((status >= 200 && status < 300) || status == 304)) {
		berr_from_reply(e, method, path, status, in);
		goto fail;
	}
	ret = 0;
fail:
	if (ret == -1) {
		log_debug("podman: %s", e->msg);
		if (p->on_error != NULL)
			p->on_error(e);
	}
	free(payload);
	curl_slist_free_all(hdrs);
	if (c != NULL)
		curl_easy_cleanup(c);
	return ret;
}

int
podman_call(struct podman *p, const char *method, const char *path,
    json_t *body, json_t **reply, long *statusp, struct berr *e)
{
	struct buf	 in = BUF_INIT(PODMAN_REPLY_MAX);
	json_error_t	 jerr;
	long		 status = 0;
	int		 ret = -1;

	if (reply != NULL)
		*reply = NULL;
	if (call(p, method, path, body, &in, &status, e) == -1)
		goto out;
	if (statusp != NULL)
		*statusp = status;
	if (reply != NULL && in.len > 0) {
		*reply = json_loadb(in.data, in.len, 0, &jerr);
		if (*reply == NULL) {
			e->status = status;
			snprintf(e->msg, sizeof(e->msg),
			    "Podman sent a reply to %s %s that is not JSON: %s",
			    method, path, jerr.text);
			if (p->on_error != NULL)
				p->on_error(e);
			goto out;
		}
	}
	ret = 0;
out:
	buf_release(&in);
	return ret;
}

/* ---------------------------------------------------------------- version */

static int
parse_version(const char *s, int *ma, int *mi, int *pa)
{
	*ma = *mi = *pa = 0;
	if (s == NULL || sscanf(s, "%d.%d.%d", ma, mi, pa) < 2)
		return -1;
	return 0;
}

int
podman_version(struct podman *p, struct berr *e)
{
	json_t		*v = NULL, *comp;
	const char	*api = NULL;
	size_t		 i;
	int		 ma, mi, pa;

	if (p->major != 0)
		return 0;
	if (podman_call(p, "GET", PODMAN_API "/version", NULL, &v, NULL, e) == -1)
		return -1;
	json_array_foreach(json_object_get(v, "Components"), i, comp) {
		api = json_string_value(json_object_get(
		    json_object_get(comp, "Details"), "APIVersion"));
		if (api != NULL)
			break;
	}
	if (api == NULL)	/* the top level carries it too */
		api = json_string_value(json_object_get(v, "Version"));
	if (parse_version(api, &ma, &mi, &pa) == -1) {
		berr_set(e, 200, "cannot read Podman's version from /version");
		json_decref(v);
		return -1;
	}
	snprintf(p->version, sizeof(p->version), "%d.%d.%d", ma, mi, pa);
	p->minor = mi;
	p->patch = pa;
	p->major = ma;	/* last: the "known" flag */
	json_decref(v);
	return 0;
}

int
podman_at_least(const struct podman *p, int major, int minor)
{
	return p->major > major || (p->major == major && p->minor >= minor);
}

const char *
podman_isolate_value(const struct podman *p)
{
	/* "strict" (no routing to any other network) exists from 4.6. */
	return podman_at_least(p, 4, 6) ? "strict" : "true";
}

/* ---------------------------------------------------------------- objects */

/*
 * pre + escaped name + post: no caller-built format strings.  0, or -1 with
 * the reason in e.
 */
static int
path_fmt(char *dst, size_t len, const char *pre, const char *name,
    const char *post, struct berr *e)
{
	char	*esc;
	int	 n;

	if ((esc = curl_easy_escape(NULL, name, 0)) == NULL)
		n = -1;
	else {
		n = snprintf(dst, len, "%s%s%s", pre, esc, post);
		curl_free(esc);
	}
	if (n < 0 || (size_t)n >= len) {
		berr_set(e, 0, "name too long");
		return -1;
	}
	return 0;
}

static int
exists(struct podman *p, const char *pre, const char *name, const char *post,
    struct berr *e)
{
	char	 path[512];
	long	 status;

	if (path_fmt(path, sizeof(path), pre, name, post, e) == -1)
		return -1;
	if (podman_call(p, "GET", path, NULL, NULL, &status, e) == 0)
		return 1;
	return e->status == 404 ? 0 : -1;
}

static int
simple(struct podman *p, const char *method, const char *pre,
    const char *name, const char *post, json_t *body, struct berr *e)
{
	char	 path[512];

	if (path_fmt(path, sizeof(path), pre, name, post, e) == -1)
		return -1;
	return podman_call(p, method, path, body, NULL, NULL, e);
}

int
podman_network_exists(struct podman *p, const char *name, struct berr *e)
{
	return exists(p, PODMAN_API "/networks/", name, "/exists", e);
}

int
podman_network_create(struct podman *p, json_t *spec, struct berr *e)
{
	return podman_call(p, "POST", PODMAN_API "/networks/create", spec,
	    NULL, NULL, e);
}

int
podman_network_remove(struct podman *p, const char *name, struct berr *e)
{
	/*
	 * Never force: that removes every container on the network, the
	 * egress proxy included.  Callers disconnect what they know of.
	 */
	return simple(p, "DELETE", PODMAN_API "/networks/", name, "", NULL, e);
}

int
podman_network_connect(struct podman *p, const char *network,
    const char *container, const char *alias, const char *ip, struct berr *e)
{
	json_t		*body;
	unsigned char	 a4[4];
	char		 mac[24];
	int		 r;

	/*
	 * 4.3.1's libpod connect: {"container", "aliases", "static_ips",
	 * "static_mac"}.  At a fixed address, a MAC made of it (locally
	 * administered, 02:76 and the four bytes): a container connected
	 * again there, the egress proxy made anew, keeps the MAC, so the
	 * neighbours' ARP entries stay right; with a new MAC, a running
	 * sandbox could not reach it for up to a minute.
	 */
	body = json_pack("{s:s, s:[s]}", "container", container, "aliases",
	    alias);
	if (body != NULL && ip != NULL && inet_pton(AF_INET, ip, a4) == 1) {
		snprintf(mac, sizeof(mac), "02:76:%02x:%02x:%02x:%02x", a4[0],
		    a4[1], a4[2], a4[3]);
		if (json_object_set_new(body, "static_mac", json_string(mac))
		    == -1) {
			json_decref(body);
			body = NULL;
		}
	}
	if (body != NULL && ip != NULL && json_object_set_new(body,
	    "static_ips", json_pack("[s]", ip)) == -1) {
		json_decref(body);
		body = NULL;
	}
	if (body == NULL) {
		berr_set(e, 0, "out of memory");
		return -1;
	}
	r = simple(p, "POST", PODMAN_API "/networks/", network, "/connect", body,
	    e);
	json_decref(body);
	return r;
}

int
podman_network_disconnect(struct podman *p, const char *network,
    const char *container, struct berr *e)
{
	json_t	*body;
	int	 r;

	if ((body = json_pack("{s:s}", "container", container)) == NULL) {
		berr_set(e, 0, "out of memory");
		return -1;
	}
	r = simple(p, "POST", PODMAN_API "/networks/", network, "/disconnect",
	    body, e);
	json_decref(body);
	return r;
}

/* GET pre/name/json into *out; a missing object is 0 with *out NULL. */
static int
inspect(struct podman *p, const char *pre, const char *name, json_t **out,
    struct berr *e)
{
	char	 path[512];

	*out = NULL;
	if (path_fmt(path, sizeof(path), pre, name, "/json", e) == -1)
		return -1;
	if (podman_call(p, "GET", path, NULL, out, NULL, e) == 0)
		return 0;
	return e->status == 404 ? 0 : -1;
}

int
podman_network_inspect(struct podman *p, const char *name, json_t **out,
    struct berr *e)
{
	return inspect(p, PODMAN_API "/networks/", name, out, e);
}

int
podman_volume_exists(struct podman *p, const char *name, struct berr *e)
{
	return exists(p, PODMAN_API "/volumes/", name, "/exists", e);
}

int
podman_volume_inspect(struct podman *p, const char *name, json_t **out,
    struct berr *e)
{
	return inspect(p, PODMAN_API "/volumes/", name, out, e);
}

int
podman_volume_create(struct podman *p, json_t *spec, struct berr *e)
{
	return podman_call(p, "POST", PODMAN_API "/volumes/create", spec,
	    NULL, NULL, e);
}

int
podman_volume_remove(struct podman *p, const char *name, struct berr *e)
{
	return simple(p, "DELETE", PODMAN_API "/volumes/", name, "?force=true",
	    NULL, e);
}

int
podman_container_create(struct podman *p, json_t *spec, struct berr *e)
{
	return podman_call(p, "POST", PODMAN_API "/containers/create", spec,
	    NULL, NULL, e);
}

int
podman_container_start(struct podman *p, const char *name, struct berr *e)
{
	return simple(p, "POST", PODMAN_API "/containers/", name, "/start", NULL,
	    e);
}

int
podman_container_stop(struct podman *p, const char *name, int timeout,
    struct berr *e)
{
	char	 post[64];

	snprintf(post, sizeof(post), "/stop?timeout=%d", timeout);
	return simple(p, "POST", PODMAN_API "/containers/", name, post, NULL, e);
}

int
podman_container_remove(struct podman *p, const char *name, struct berr *e)
{
	return simple(p, "DELETE", PODMAN_API "/containers/", name,
	    "?force=true&timeout=0", NULL, e);
}

int
podman_container_inspect(struct podman *p, const char *name, json_t **out,
    struct berr *e)
{
	return inspect(p, PODMAN_API "/containers/", name, out, e);
}

int
podman_image_id(struct podman *p, const char *ref, char *id, size_t len,
    struct berr *e)
{
	json_t		*ins;
	const char	*v;

	if (inspect(p, PODMAN_API "/images/", ref, &ins, e) == -1)
		return -1;
	if (ins == NULL) {
		berr_set(e, 404, "no image %s in Podman's storage", ref);
		return -1;
	}
	v = json_string_value(json_object_get(ins, "Id"));
	if (v == NULL || strlen(v) >= len) {
		json_decref(ins);
		berr_set(e, 500, "Podman's answer for the image %s has no id",
		    ref);
		return -1;
	}
	snprintf(id, len, "%s", v);
	json_decref(ins);
	return 0;
}

int
podman_image_remove(struct podman *p, const char *id, struct berr *e)
{
	return simple(p, "DELETE", PODMAN_API "/images/", id, "", NULL, e);
}

enum ctr_state
podman_ctr_state(const json_t *inspect)
{
	const char	*s;

	if (inspect == NULL)
		return CTR_MISSING;
	s = json_string_value(json_object_get(json_object_get(inspect, "State"),
	    "Status"));
	if (s == NULL)
		s = json_string_value(json_object_get(inspect, "State"));
	if (s == NULL)
		return CTR_OTHER;
	if (strcmp(s, "running") == 0)
		return CTR_RUNNING;
	if (strcmp(s, "created") == 0)
		return CTR_CREATED;
	if (strcmp(s, "exited") == 0 || strcmp(s, "stopped") == 0
	    || strcmp(s, "configured") == 0 || strcmp(s, "initialized") == 0)
		return CTR_STOPPED;
	if (strcmp(s, "paused") == 0)
		return CTR_PAUSED;
	if (strcmp(s, "stopping") == 0 || strcmp(s, "removing") == 0)
		return CTR_TRANSIENT;
	return CTR_OTHER;
}

const char *
podman_ctr_state_name(enum ctr_state s)
{
	static const char *names[] = { "missing", "created", "running",
	    "stopped", "paused", "transient", "other" };

	return names[s];
}

static int
list(struct podman *p, const char *what, json_t **out, struct berr *e)
{
	char	 path[512], *esc;
	int	 r;

	*out = NULL;
	esc = curl_easy_escape(NULL, "{\"label\":[\"io.vivarium.managed=true\"]}",
	    0);
	if (esc == NULL) {
		berr_set(e, 0, "out of memory");
		return -1;
	}
	snprintf(path, sizeof(path), PODMAN_API "/%s?%sfilters=%s", what,
	    strcmp(what, "containers/json") == 0 ? "all=true&" : "", esc);
	curl_free(esc);
	r = podman_call(p, "GET", path, NULL, out, NULL, e);
	if (r == 0 && !json_is_array(*out)) {
		json_decref(*out);
		*out = NULL;
		berr_set(e, 200, "Podman's %s reply is not a list", what);
		return -1;
	}
	return r;
}

int
podman_container_list(struct podman *p, json_t **out, struct berr *e)
{
	return list(p, "containers/json", out, e);
}

int
podman_network_list(struct podman *p, json_t **out, struct berr *e)
{
	return list(p, "networks/json", out, e);
}

int
podman_volume_list(struct podman *p, json_t **out, struct berr *e)
{
	return list(p, "volumes/json", out, e);
}

int
podman_container_memory(struct podman *p, const char *name,
    unsigned long long *bytes, struct berr *e)
{
	char	 path[512];
	json_t	*r = NULL, *st;
	json_int_t v;

	if (path_fmt(path, sizeof(path),
	    PODMAN_API "/containers/stats?stream=false&containers=", name,
	    "", e) == -1)
		return -1;
	if (podman_call(p, "GET", path, NULL, &r, NULL, e) == -1)
		return -1;
	st = json_array_get(json_object_get(r, "Stats"), 0);
	v = json_integer_value(json_object_get(st, "MemUsage"));
	json_decref(r);
	if (st == NULL) {
		berr_set(e, 200, "no statistics for %s", name);
		return -1;
	}
	*bytes = v < 0 ? 0 : (unsigned long long)v;
	return 0;
}

/* ---------------------------------------------------------------- archive */

/*
 * Tar streams do not fit podman_call: they may be gigabytes, so they go
 * straight between the socket and a file descriptor, and only an error
 * answer is collected (to build the error from Podman's JSON).
 */
struct archive_io {
	CURL		*c;
	int		 fd;		/* GET: where the tar goes */
	podman_source	 source;	/* PUT */
	void		*source_arg;
	int		 aborted;	/* PUT: the source said stop */
	struct buf	 err;		/* the body of a non-2xx answer */
	int		 io_errno;	/* a failed write on fd */
};

static size_t
archive_sink(char *ptr, size_t size, size_t n, void *arg)
{
	struct archive_io	*a = arg;
	long			 status = 0;
	size_t			 len = size * n, off = 0;
	ssize_t			 w;

	curl_easy_getinfo(a->c, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status >= 300 || a->fd == -1)
		return buf_append(&a->err, ptr, len) == -1 ? 0 : len;
	while (off < len) {
		if ((w = write(a->fd, ptr + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			a->io_errno = errno;
			return 0;
		}
		off += (size_t)w;
	}
	return len;
}

static size_t
archive_source(char *ptr, size_t size, size_t n, void *arg)
{
	struct archive_io	*a = arg;
	ssize_t			 r;

	if ((r = a->source(a->source_arg, ptr, size * n)) < 0) {
		a->aborted = 1;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)r;
}

static int
archive_call(struct podman *p, int put, const char *name, const char *cpath,
    podman_source source, void *arg, int fd, struct berr *e)
{
	struct archive_io	 a = { .fd = -1, .err = BUF_INIT(1u << 16) };
	struct curl_slist	*hdrs = NULL;
	char			 pre[512], path[1024];
	char			 errbuf[CURL_ERROR_SIZE], *esc = NULL;
	const char		*method = put ? "PUT" : "GET";
	long			 status = 0;
	CURLcode		 rc;
	int			 ret = -1;

	memset(e, 0, sizeof(*e));
	if ((esc = curl_easy_escape(NULL, cpath, 0)) == NULL ||
	    path_fmt(pre, sizeof(pre), PODMAN_API "/containers/", name,
	    "/archive?path=", e) == -1 ||
	    (size_t)snprintf(path, sizeof(path), "%s%s", pre, esc) >=
	    sizeof(path)) {
		snprintf(e->msg, sizeof(e->msg), "archive path too long");
		goto fail;
	}
	if ((a.c = handle(p, path, errbuf)) == NULL) {
		snprintf(e->msg, sizeof(e->msg), "cannot set up a curl handle");
		goto fail;
	}
	a.fd = fd;
	a.source = source;
	a.source_arg = arg;
	curl_easy_setopt(a.c, CURLOPT_CONNECTTIMEOUT_MS, p->timeout_ms);
	curl_easy_setopt(a.c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(a.c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(a.c, CURLOPT_WRITEFUNCTION, archive_sink);
	curl_easy_setopt(a.c, CURLOPT_WRITEDATA, &a);
	hdrs = curl_slist_append(hdrs, "Expect:");
	if (put) {
		hdrs = curl_slist_append(hdrs, "Content-Type: application/x-tar");
		curl_easy_setopt(a.c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(a.c, CURLOPT_READFUNCTION, archive_source);
		curl_easy_setopt(a.c, CURLOPT_READDATA, &a);
	}
	curl_easy_setopt(a.c, CURLOPT_HTTPHEADER, hdrs);
	rc = curl_easy_perform(a.c);
	curl_easy_getinfo(a.c, CURLINFO_RESPONSE_CODE, &status);
	if (a.io_errno != 0) {
		snprintf(e->msg, sizeof(e->msg), "writing the tar stream: %s",
		    strerror(a.io_errno));
		goto fail;
	}
	if (a.aborted) {
		e->status = -1;
		snprintf(e->msg, sizeof(e->msg), "upload to %s aborted", name);
		goto fail;
	}
	if (rc != CURLE_OK && status == 0) {
		berr_unreachable(e, p, rc, errbuf);
		goto fail;
	}
	if (status < 200 || status >= 300) {
		berr_from_reply(e, method, path, status, &a.err);
		goto fail;
	}
	if (rc != CURLE_OK) {
		e->status = status;
		snprintf(e->msg, sizeof(e->msg), "%s %.200s broke off: %s",
		    method, path, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		goto fail;
	}
	ret = 0;
fail:
	if (ret == -1 && p->on_error != NULL)
		p->on_error(e);
	curl_free(esc);
	buf_release(&a.err);
	curl_slist_free_all(hdrs);
	if (a.c != NULL)
		curl_easy_cleanup(a.c);
	return ret;
}

/*
 * The last lines a container wrote (stdout and stderr), as text into out:
 * Podman sends them framed, 8 bytes (stream, 0, 0, 0, big-endian size)
 * before each piece.
 */
int
podman_container_logs(struct podman *p, const char *name, int tail,
    struct buf *out, struct berr *e)
{
	struct buf	 in = BUF_INIT(PODMAN_REPLY_MAX);
	const unsigned char *d;
	char		 path[512], post[64];
	size_t		 at = 0, n;
	int		 r;

	snprintf(post, sizeof(post), "/logs?stdout=true&stderr=true&tail=%d",
	    tail);
	if (path_fmt(path, sizeof(path), PODMAN_API "/containers/", name, post,
	    e) == -1)
		return -1;
	if ((r = call(p, "GET", path, NULL, &in, NULL, e)) == 0) {
		d = (const unsigned char *)in.data;
		while (at + 8 <= in.len) {
			n = (size_t)d[at + 4] << 24 | (size_t)d[at + 5] << 16 |
			    (size_t)d[at + 6] << 8 | d[at + 7];
			at += 8;
			if (n > in.len - at)
				n = in.len - at;
			if (buf_append(out, (const char *)d + at, n) == -1)
				break;
			at += n;
		}
	}
	buf_release(&in);
	return r;
}

int
podman_archive_get(struct podman *p, const char *name, const char *path,
    int out, struct berr *e)
{
	return archive_call(p, 0, name, path, NULL, NULL, out, e);
}

int
podman_archive_put(struct podman *p, const char *name, const char *path,
    podman_source source, void *arg, struct berr *e)
{
	return archive_call(p, 1, name, path, source, arg, -1, e);
}

/* The entry for namespace id 1 of an idMappings list: the first
 * subordinate id.  0 when there is none. */
static unsigned long
info_sub(const json_t *map, unsigned long *size)
{
	const json_t	*m;
	size_t		 i;

	json_array_foreach(map, i, m) {
		if (json_integer_value(json_object_get(m, "container_id")) != 1
		    || json_integer_value(json_object_get(m, "host_id")) <= 0
		    || json_integer_value(json_object_get(m, "size")) <= 0)
			continue;
		*size = (unsigned long)json_integer_value(json_object_get(m,
		    "size"));
		return (unsigned long)json_integer_value(json_object_get(m,
		    "host_id"));
	}
	*size = 0;
	return 0;
}

/* Whether an /info reply says the service is rootless; notes its
 * subordinate ranges. */
static int
info_rootless(struct podman *p, const json_t *info)
{
	const json_t	*ids;
	unsigned long	 us, gs;

	ids = json_object_get(json_object_get(info, "host"), "idMappings");
	p->sub_uid = info_sub(json_object_get(ids, "uidmap"), &us);
	p->sub_gid = info_sub(json_object_get(ids, "gidmap"), &gs);
	p->sub_size = us < gs ? us : gs;
	if (p->sub_uid == 0 || p->sub_gid == 0)
		p->sub_size = 0;
	return json_is_true(json_object_get(json_object_get(json_object_get(
	    info, "host"), "security"), "rootless"));
}

int
podman_limits_enforced(struct podman *p, char *why, size_t whylen,
    struct berr *e)
{
	static const char *const need[] = { "memory", "cpu", "pids" };
	json_t		*r = NULL, *host, *ctl;
	const char	*cg;
	size_t		 i, j;
	int		 ret = 1;

	if (podman_call(p, "GET", PODMAN_API "/info", NULL, &r, NULL, e) == -1)
		return -1;
	host = json_object_get(r, "host");
	cg = json_string_value(json_object_get(host, "cgroupVersion"));
	ctl = json_object_get(host, "cgroupControllers");
	why[0] = '\0';
	p->rootless = info_rootless(p, r);
	if (!p->rootless)
		goto done;
	if (cg != NULL && strcmp(cg, "v1") == 0) {
		snprintf(why, whylen, "Podman is rootless on a cgroup v1 host: "
		    "it ignores memory, CPU and PID limits, so a sandbox can use "
		    "all of the machine.  Use rootful Podman, or a cgroup v2 "
		    "host with the controllers delegated to this user");
		ret = 0;
		goto done;
	}
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		for (j = 0; j < json_array_size(ctl); j++)
			if (strcmp(json_string_value(json_array_get(ctl, j)) ?
			    json_string_value(json_array_get(ctl, j)) : "",
			    need[i]) == 0)
				break;
		if (j == json_array_size(ctl)) {
			snprintf(why, whylen, "rootless Podman has no \"%s\" "
			    "cgroup controller delegated to this user, so that "
			    "limit is not enforced (systemd: Delegate=memory "
			    "pids cpu for user@.service)", need[i]);
			ret = 0;
			goto done;
		}
	}
done:
	json_decref(r);
	return ret;
}

int
podman_runtime_runsc(struct podman *p, char *name, size_t namelen,
    struct berr *e)
{
	json_t		*r = NULL, *rt;
	const char	*path, *ver, *base;
	int		 ret;

	if (podman_call(p, "GET", PODMAN_API "/info", NULL, &r, NULL, e) == -1)
		return -1;
	rt = json_object_get(json_object_get(r, "host"), "ociRuntime");
	path = json_string_value(json_object_get(rt, "path"));
	ver = json_string_value(json_object_get(rt, "version"));
	snprintf(name, namelen, "%s", path != NULL ? path : "an unknown runtime");
	base = path != NULL && strrchr(path, '/') != NULL
	    ? strrchr(path, '/') + 1 : (path != NULL ? path : "");
	/* A wrapper (deploy/vivarium-runsc) reports runsc's own version. */
	ret = strstr(base, "runsc") != NULL
	    || (ver != NULL && strncmp(ver, "runsc ", 6) == 0);
	json_decref(r);
	return ret;
}

int
podman_rootless(struct podman *p, struct berr *e)
{
	json_t	*r = NULL;

	if (p->rootless != -1)
		return p->rootless;
	if (podman_call(p, "GET", PODMAN_API "/info", NULL, &r, NULL, e) == -1)
		return -1;
	p->rootless = info_rootless(p, r);
	json_decref(r);
	return p->rootless;
}

int
podman_err_exists(const struct berr *e)
{
	/*
	 * 4.3.1 says so in different ways: 409 for networks, 500 with
	 * "already exists" for volumes, 500 "name is in use" for containers.
	 */
	if (e->status == 409)
		return 1;
	if (e->status != 500)
		return 0;
	return strstr(e->cause, "already exists") != NULL
	    || strstr(e->cause, "in use") != NULL
	    || strstr(e->msg, "already exists") != NULL
	    || strstr(e->msg, "is already in use") != NULL;
}
