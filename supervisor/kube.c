/*
 * kube.c: a small client for the Kubernetes API server (see kube.h), on
 * libcurl like podman.c: JSON requests, Status errors as sentences, and
 * watches read as newline-delimited events.  Where the server is and
 * how to authenticate comes from the service account's files in a Pod
 * or from a kubeconfig (libyaml through common/yconf.c); only what a
 * supervisor needs of either: no exec plugins, no kubectl.
 *
 * One curl easy handle per call, as in podman.c: calls come from several
 * threads, and a watch holds its handle for as long as it waits.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "buf.h"
#include "config.h"
#include "log.h"
#include "backend.h"
#include "kube.h"
#include "base64.h"
#include "banned.h"

#define KUBE_REPLY_MAX	(32u << 20)	/* a list of a few thousand Pods */
#define KUBE_EVENT_MAX	(4u << 20)	/* one watch event: one object */
#define KUBE_FILE_MAX	(1u << 20)	/* a token, a CA bundle, a config */
#define KUBE_TOKEN_MAX	16384

/* ---------------------------------------------------------------- files */

/* The whole file, NUL-terminated, into a new buffer; NULL with errno. */
static char *
slurp(const char *path, size_t *lenp)
{
	struct buf	 b = BUF_INIT(KUBE_FILE_MAX);
	char		 chunk[4096];
	size_t		 n;
	FILE		*f;
	int		 err = 0;

	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_append(&b, chunk, n) == -1) {
			err = EFBIG;
			break;
		}
	if (ferror(f))
		err = EIO;
	fclose(f);
	if (err != 0 || buf_append(&b, "", 1) == -1) {
		buf_release(&b);
		errno = err != 0 ? err : EFBIG;
		return NULL;
	}
	if (lenp != NULL)
		*lenp = b.len - 1;
	return buf_detach(&b, NULL);
}

/* The token in a file (the projected service account token rotates). */
static int
read_token(const char *path, char *dst, size_t len, struct berr *e)
{
	char	*t;
	size_t	 n;

	if ((t = slurp(path, &n)) == NULL) {
		berr_set(e, 500, "cannot read the API token %s: %s", path,
		    strerror(errno));
		return -1;
	}
	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r'
	    || t[n - 1] == ' '))
		n--;
	if (n == 0 || n >= len || memchr(t, '\n', n) != NULL) {
		berr_set(e, 500, "the API token %s is %s", path, n == 0
		    ? "empty" : "not one line of a token");
		memset(t, 0, n);
		free(t);
		return -1;
	}
	memcpy(dst, t, n);
	dst[n] = '\0';
	memset(t, 0, n);
	free(t);
	return 0;
}

/* ---------------------------------------------------------------- config */

/* Standard base64 (the kubeconfig's *-data), blanks skipped; a new
 * NUL-ended buffer, or NULL when it is not base64 or memory ran out. */
static char *
b64_decode(const char *s, size_t *lenp)
{
	size_t	 cap = strlen(s) / 4 * 3 + 3;
	char	*out;
	long	 n;

	if ((out = malloc(cap + 1)) == NULL)
		return NULL;
	if ((n = base64_decode(BASE64_STD, BASE64_BLANKS, s, strlen(s),
	    (unsigned char *)out, cap)) == -1) {
		free(out);
		return NULL;
	}
	out[n] = '\0';
	*lenp = (size_t)n;
	return out;
}

static const struct ynode *
named(const struct ynode *seq, const char *name)
{
	const struct ynode	*n, *nm;

	if (seq == NULL || seq->type != YNODE_SEQ)
		return NULL;
	for (n = seq->child; n != NULL; n = n->next)
		if ((nm = yconf_get(n, "name")) != NULL
		    && nm->type == YNODE_SCALAR && strcmp(nm->value, name) == 0)
			return n;
	return NULL;
}

static const char *
scalar(const struct ynode *map, const char *key)
{
	const struct ynode	*n = yconf_get(map, key);

	return n != NULL && n->type == YNODE_SCALAR && n->value[0] != '\0'
	    ? n->value : NULL;
}

/* A path in a kubeconfig is relative to the file's directory. */
static char *
path_near(const char *kubeconfig, const char *p)
{
	const char	*slash = strrchr(kubeconfig, '/');
	char		*r;
	size_t		 dl;

	if (p[0] == '/' || slash == NULL)
		return strdup(p);
	dl = (size_t)(slash - kubeconfig);
	if ((r = malloc(dl + strlen(p) + 2)) == NULL)
		return NULL;
	memcpy(r, kubeconfig, dl);
	r[dl] = '/';
	memcpy(r + dl + 1, p, strlen(p) + 1);
	return r;
}

/* The *-data form, else the file form, of a PEM: 0, or -1 with e. */
static int
pem_of(const char *path, const struct ynode *m,
    const char *datakey, const char *filekey, char **data, size_t *len,
    char **file, struct berr *e)
{
	const char	*v;

	if ((v = scalar(m, datakey)) != NULL) {
		if ((*data = b64_decode(v, len)) == NULL) {
			berr_set(e, 400, "%s: %s is not base64", path, datakey);
			return -1;
		}
	} else if ((v = scalar(m, filekey)) != NULL
	    && (*file = path_near(path, v)) == NULL) {
		berr_set(e, 500, "out of memory");
		return -1;
	}
	return 0;
}

static int
from_kubeconfig(struct kube *k, const char *path, struct berr *e)
{
	struct confdiag		 d;
	struct ynode		*root;
	const struct ynode	*ctx, *cl, *us;
	const char		*cur, *cname, *uname, *v;
	int			 rc = -1, b;

	confdiag_init(&d, path);
	if ((root = yconf_load(path, &d)) == NULL) {
		berr_set(e, 400, "kubeconfig %s: %s", path, buf_str(&d.text));
		confdiag_release(&d);
		return -1;
	}
	confdiag_release(&d);
	if ((cur = scalar(root, "current-context")) == NULL) {
		berr_set(e, 400, "kubeconfig %s has no current-context", path);
		goto done;
	}
	ctx = yconf_get(named(yconf_get(root, "contexts"), cur), "context");
	if (ctx == NULL || (cname = scalar(ctx, "cluster")) == NULL) {
		berr_set(e, 400, "kubeconfig %s: no context \"%s\" with a "
		    "cluster", path, cur);
		goto done;
	}
	cl = yconf_get(named(yconf_get(root, "clusters"), cname), "cluster");
	if (cl == NULL || (v = scalar(cl, "server")) == NULL) {
		berr_set(e, 400, "kubeconfig %s: no cluster \"%s\" with a "
		    "server", path, cname);
		goto done;
	}
	if ((k->server = strdup(v)) == NULL)
		goto oom;
	if ((v = scalar(cl, "insecure-skip-tls-verify")) != NULL
	    && config_parse_bool(v, &b) == 0)
		k->insecure = b;
	if (pem_of(path, cl, "certificate-authority-data",
	    "certificate-authority", &k->ca_data, &k->ca_len, &k->ca_file,
	    e) == -1)
		goto done;
	uname = scalar(ctx, "user");
	us = uname != NULL ? yconf_get(named(yconf_get(root, "users"), uname),
	    "user") : NULL;
	if (uname != NULL && us == NULL) {
		berr_set(e, 400, "kubeconfig %s: no user \"%s\"", path, uname);
		goto done;
	}
	if (yconf_get(us, "exec") != NULL
	    || yconf_get(us, "auth-provider") != NULL) {
		berr_set(e, 400, "kubeconfig %s: user \"%s\" authenticates with "
		    "a plugin (exec or auth-provider), which the supervisor "
		    "does not run: give it a token, tokenFile or a client "
		    "certificate", path, uname);
		goto done;
	}
	if ((v = scalar(us, "token")) != NULL && (k->token = strdup(v)) == NULL)
		goto oom;
	if ((v = scalar(us, "tokenFile")) != NULL
	    && (k->token_file = path_near(path, v)) == NULL)
		goto oom;
	if (pem_of(path, us, "client-certificate-data",
	    "client-certificate", &k->cert_data, &k->cert_len, &k->cert_file,
	    e) == -1 || pem_of(path, us, "client-key-data", "client-key",
	    &k->key_data, &k->key_len, &k->key_file, e) == -1)
		goto done;
	rc = 0;
	goto done;
oom:
	berr_set(e, 500, "out of memory");
done:
	yconf_free(root);
	return rc;
}

static int
in_cluster(struct kube *k, const char *dir, struct berr *e)
{
	const char	*host = getenv("KUBERNETES_SERVICE_HOST");
	const char	*port = getenv("KUBERNETES_SERVICE_PORT");
	char		 url[320], path[512];

	if (host == NULL || *host == '\0') {
		berr_set(e, 400, "not running in a Kubernetes Pod "
		    "(KUBERNETES_SERVICE_HOST is not set) and no "
		    "kubernetes.kubeconfig is given");
		return -1;
	}
	snprintf(url, sizeof(url), strchr(host, ':') != NULL
	    ? "https://[%s]:%s" : "https://%s:%s", host,
	    port != NULL && *port != '\0' ? port : "443");
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	if ((k->server = strdup(url)) == NULL
	    || (k->ca_file = strdup(path)) == NULL)
		goto oom;
	snprintf(path, sizeof(path), "%s/token", dir);
	if ((k->token_file = strdup(path)) == NULL)
		goto oom;
	return 0;
oom:
	berr_set(e, 500, "out of memory");
	return -1;
}

struct kube *
kube_new(const char *kubeconfig, const char *sa_dir, long timeout_ms,
    struct berr *e)
{
	struct kube	*k;
	char		 tok[KUBE_TOKEN_MAX];
	size_t		 n;

	memset(e, 0, sizeof(*e));
	if ((k = calloc(1, sizeof(*k))) == NULL) {
		berr_set(e, 500, "out of memory");
		return NULL;
	}
	k->timeout_ms = timeout_ms;
	k->where = strdup(kubeconfig != NULL ? kubeconfig : "in-cluster");
	if (k->where == NULL || (kubeconfig != NULL
	    ? from_kubeconfig(k, kubeconfig, e)
	    : in_cluster(k, sa_dir != NULL ? sa_dir : KUBE_SA_DIR, e)) == -1)
		goto fail;
	while ((n = strlen(k->server)) > 0 && k->server[n - 1] == '/')
		k->server[n - 1] = '\0';
	/* Plain HTTP only on this host (kubectl proxy): never in clear
	 * over a network, credentials or not. */
	if (strncmp(k->server, "https://", 8) != 0
	    && strncmp(k->server, "http://127.", 11) != 0
	    && strncmp(k->server, "http://[::1]", 12) != 0
	    && strncmp(k->server, "http://localhost:", 17) != 0) {
		berr_set(e, 400, "%s: the API server %s must be https:// (plain "
		    "http:// only on this host, as kubectl proxy serves it)",
		    k->where, k->server);
		goto fail;
	}
	/* A token file that cannot be read is said now, not per request. */
	if (k->token_file != NULL
	    && read_token(k->token_file, tok, sizeof(tok), e) == -1)
		goto fail;
	memset(tok, 0, sizeof(tok));
	return k;
fail:
	kube_free(k);
	return NULL;
}

static void
free_secret(char *s, size_t len)
{
	if (s == NULL)
		return;
	memset(s, 0, len);
	free(s);
}

void
kube_free(struct kube *k)
{
	if (k == NULL)
		return;
	free(k->server);
	free(k->where);
	free(k->ca_file);
	free(k->ca_data);
	free_secret(k->token, k->token ? strlen(k->token) : 0);
	free(k->token_file);
	free(k->cert_file);
	free(k->key_file);
	free(k->cert_data);
	free_secret(k->key_data, k->key_len);
	free(k);
}

/* ---------------------------------------------------------------- errors */

/*
 * What a request was, in RBAC's words: the verb ("create"), the
 * resource ("networkpolicies"), its API group ("" or "networking.k8s.io"),
 * the object's name and the namespace, from the path.
 */
struct what {
	char	 verb[16];
	char	 resource[64];
	char	 group[64];
	char	 name[256];
	char	 ns[64];
};

static void
what_of(const char *method, const char *path, struct what *w)
{
	char		 p[1024], *seg[8], *q, *save = NULL;
	size_t		 n = 0, i;
	int		 watch;

	memset(w, 0, sizeof(*w));
	snprintf(p, sizeof(p), "%s", path);
	watch = (q = strchr(p, '?')) != NULL && strstr(q, "watch=1") != NULL;
	if (q != NULL)
		*q = '\0';
	for (q = strtok_r(p, "/", &save); q != NULL && n < 8;
	    q = strtok_r(NULL, "/", &save))
		seg[n++] = q;
	/* api/v1/... or apis/GROUP/VERSION/... */
	i = n > 0 && strcmp(seg[0], "apis") == 0 ? 3 : 2;
	if (i == 3 && n > 1)
		snprintf(w->group, sizeof(w->group), "%s", seg[1]);
	if (n > i + 1 && strcmp(seg[i], "namespaces") == 0) {
		snprintf(w->ns, sizeof(w->ns), "%s", seg[i + 1]);
		i += 2;
	}
	if (n > i)
		snprintf(w->resource, sizeof(w->resource), "%s", seg[i]);
	else if (n > 0)
		snprintf(w->resource, sizeof(w->resource), "%s", seg[n - 1]);
	if (n > i + 1)
		snprintf(w->name, sizeof(w->name), "%s", seg[i + 1]);
	if (strcmp(method, "GET") == 0)
		snprintf(w->verb, sizeof(w->verb), "%s", w->name[0] != '\0'
		    ? "get" : watch ? "watch" : "list");
	else if (strcmp(method, "POST") == 0)
		snprintf(w->verb, sizeof(w->verb), "create");
	else if (strcmp(method, "PUT") == 0)
		snprintf(w->verb, sizeof(w->verb), "update");
	else
		for (i = 0; method[i] != '\0' && i + 1 < sizeof(w->verb); i++)
			w->verb[i] = (char)(method[i] | 0x20);
}

void
kube_status_err(struct berr *e, const char *method, const char *path,
    long status, const char *body, size_t len)
{
	struct what	 w;
	json_t		*j;
	const char	*reason = NULL, *msg = NULL;
	char		 obj[400];

	memset(e, 0, sizeof(*e));
	e->status = status;
	what_of(method, path, &w);
	j = json_loadb(body != NULL ? body : "", len, 0, NULL);
	if (j != NULL && json_is_object(j)) {
		reason = json_string_value(json_object_get(j, "reason"));
		msg = json_string_value(json_object_get(j, "message"));
	}
	if (reason != NULL)
		snprintf(e->cause, sizeof(e->cause), "%s", reason);
	snprintf(obj, sizeof(obj), "%s%s%s%s%s%s%s", w.resource,
	    w.name[0] ? " " : "", w.name, w.group[0] ? " (" : "", w.group,
	    w.group[0] ? ")" : "", w.ns[0] ? " in namespace " : "");
	if (w.ns[0])
		snprintf(obj + strlen(obj), sizeof(obj) - strlen(obj), "%s",
		    w.ns);
	if (status == 403)
		snprintf(e->msg, sizeof(e->msg), "the API server forbids us to "
		    "%s %s: the supervisor's Role needs the verb \"%s\" on "
		    "\"%s\"%s%s%s (docs/kubernetes.md): %.200s", w.verb, obj,
		    w.verb, w.resource, w.group[0] ? " of API group \"" : "",
		    w.group, w.group[0] ? "\"" : "", msg != NULL ? msg : "");
	else if (status == 401)
		snprintf(e->msg, sizeof(e->msg), "the API server does not accept "
		    "our credentials (401) to %s %s: an expired or wrong token? "
		    "%.200s", w.verb, obj, msg != NULL ? msg : "");
	else if (msg != NULL && *msg != '\0')
		snprintf(e->msg, sizeof(e->msg), "the API server answered %ld%s%s "
		    "to %s %s: %.300s", status, reason ? " " : "",
		    reason ? reason : "", w.verb, obj, msg);
	else
		snprintf(e->msg, sizeof(e->msg), "the API server answered %ld to "
		    "%s %s: %.200s", status, w.verb, obj, len > 0 && body != NULL
		    ? body : "(empty body)");
	json_decref(j);
}

/* ---------------------------------------------------------------- requests */

static size_t
to_buf(char *ptr, size_t size, size_t n, void *arg)
{
	if (buf_append(arg, ptr, size * n) == -1)
		return 0;	/* curl reports CURLE_WRITE_ERROR */
	return size * n;
}

struct req {
	CURL			*c;
	struct curl_slist	*hdrs;
	char			 errbuf[CURL_ERROR_SIZE];
	char			*payload;
};

static void
req_done(struct req *r)
{
	if (r->c != NULL)
		curl_easy_cleanup(r->c);
	curl_slist_free_all(r->hdrs);
	free(r->payload);
	memset(r, 0, sizeof(*r));
}

/* A PEM inline (curl copies it) or from a file, when there is one. */
static void
pem(CURL *c, const char *data, size_t len, CURLoption blobopt,
    const char *file, CURLoption fileopt)
{
	struct curl_blob	 blob;

	if (data != NULL) {
		blob.data = (void *)(uintptr_t)data;
		blob.len = len;
		blob.flags = CURL_BLOB_COPY;
		curl_easy_setopt(c, blobopt, &blob);
	} else if (file != NULL)
		curl_easy_setopt(c, fileopt, file);
}

/* A handle for method path with the server's TLS and our credentials. */
static int
req_init(struct kube *k, struct req *r, const char *method, const char *path,
    json_t *body, long timeout_ms, struct berr *e)
{
	char			 url[2048], tok[KUBE_TOKEN_MAX + 32];
	char			 t[KUBE_TOKEN_MAX];
	CURL			*c;

	memset(r, 0, sizeof(*r));
	if ((r->c = c = curl_easy_init()) == NULL) {
		berr_set(e, 500, "cannot set up a curl handle");
		return -1;
	}
	snprintf(url, sizeof(url), "%s%s", k->server, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000
	    ? timeout_ms : 10000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	if (k->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	} else
		pem(c, k->ca_data, k->ca_len, CURLOPT_CAINFO_BLOB, k->ca_file,
		    CURLOPT_CAINFO);
	pem(c, k->cert_data, k->cert_len, CURLOPT_SSLCERT_BLOB, k->cert_file,
	    CURLOPT_SSLCERT);
	pem(c, k->key_data, k->key_len, CURLOPT_SSLKEY_BLOB, k->key_file,
	    CURLOPT_SSLKEY);
	r->hdrs = curl_slist_append(r->hdrs, "Accept: application/json");
	r->hdrs = curl_slist_append(r->hdrs, "Content-Type: application/json");
	r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	/* Read now: a projected token is replaced before it expires. */
	if (k->token_file != NULL) {
		if (read_token(k->token_file, t, sizeof(t), e) == -1)
			return -1;
	} else if (k->token != NULL)
		snprintf(t, sizeof(t), "%s", k->token);
	else
		t[0] = '\0';
	if (t[0] != '\0') {
		snprintf(tok, sizeof(tok), "Authorization: Bearer %s", t);
		r->hdrs = curl_slist_append(r->hdrs, tok);
		memset(tok, 0, sizeof(tok));
		memset(t, 0, sizeof(t));
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->hdrs);
	if (body != NULL) {
		if ((r->payload = json_dumps(body, JSON_COMPACT)) == NULL) {
			berr_set(e, 500, "cannot encode the request");
			return -1;
		}
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->payload);
	}
	return 0;
}

/* curl failed before an answer: unreachable (status 0), said with why. */
static void
curl_err(struct kube *k, struct req *r, CURLcode rc, const char *method,
    const char *path, struct berr *e)
{
	struct what	 w;
	const char	*why = r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc);

	what_of(method, path, &w);
	if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE
	    || rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CONNECT_ERROR)
		berr_set(e, 0, "the API server %s (%s) cannot be trusted or "
		    "spoken to over TLS: %s: check the cluster's CA and the "
		    "client certificate", k->server, k->where, why);
	else
		berr_set(e, 0, "the API server %s (%s) is not reachable to %s "
		    "%s: %s", k->server, k->where, w.verb, w.resource, why);
}

static void
failed(struct kube *k, const struct berr *e)
{
	/* Never the token: no message is built from a request header. */
	log_debug("kube: %s", e->msg);
	if (k->on_error != NULL)
		k->on_error(e);
}

int
kube_call(struct kube *k, const char *method, const char *path, json_t *body,
    json_t **reply, long *statusp, struct berr *e)
{
	struct req	 r;
	struct buf	 in = BUF_INIT(KUBE_REPLY_MAX);
	json_error_t	 jerr;
	long		 status = 0;
	CURLcode	 rc;
	int		 ret = -1;

	if (reply != NULL)
		*reply = NULL;
	if (statusp != NULL)
		*statusp = 0;
	memset(e, 0, sizeof(*e));
	if (req_init(k, &r, method, path, body, k->timeout_ms, e) == -1)
		goto done;
	curl_easy_setopt(r.c, CURLOPT_WRITEFUNCTION, to_buf);
	curl_easy_setopt(r.c, CURLOPT_WRITEDATA, &in);
	if ((rc = curl_easy_perform(r.c)) != CURLE_OK) {
		if (rc == CURLE_WRITE_ERROR)
			berr_set(e, 502, "the API server's answer to %s %s is over "
			    "%u bytes", method, path, KUBE_REPLY_MAX);
		else
			curl_err(k, &r, rc, method, path, e);
		goto done;
	}
	curl_easy_getinfo(r.c, CURLINFO_RESPONSE_CODE, &status);
	if (statusp != NULL)
		*statusp = status;
	if (status < 200 || status >= 300) {
		kube_status_err(e, method, path, status, in.data, in.len);
		goto done;
	}
	if (reply != NULL && in.len > 0
	    && (*reply = json_loadb(in.data, in.len, 0, &jerr)) == NULL) {
		berr_set(e, 502, "the API server's answer to %s %s is not JSON: "
		    "%s", method, path, jerr.text);
		goto done;
	}
	ret = 0;
done:
	if (ret == -1)
		failed(k, e);
	buf_release(&in);
	req_done(&r);
	return ret;
}

/* ---------------------------------------------------------------- watch */

struct watch {
	CURL		*c;
	const char	*path;
	kube_event_fn	 fn;
	void		*arg;
	struct berr	*e;
	struct buf	 line;
	long		 status;	/* of the answer, once its head came */
	int		 result;	/* KW_* or -1 */
	int		 stopped;	/* we ended it (result is set) */
};

/* One complete line: an event {"type", "object"}; 0 to go on, else -1. */
static int
watch_event(struct watch *w, const char *s, size_t len)
{
	json_t		*ev;
	json_error_t	 jerr;
	const char	*type;
	const json_t	*obj;
	json_int_t	 code;
	int		 r;

	if (len == 0)
		return 0;
	if ((ev = json_loadb(s, len, 0, &jerr)) == NULL) {
		berr_set(w->e, 502, "a watch event from the API server is not "
		    "JSON: %s", jerr.text);
		w->result = -1;
		return -1;
	}
	type = json_string_value(json_object_get(ev, "type"));
	obj = json_object_get(ev, "object");
	if (type == NULL || !json_is_object(obj)) {
		berr_set(w->e, 502, "a watch event from the API server has no "
		    "type or object");
		w->result = -1;
	} else if (strcmp(type, "ERROR") == 0) {
		code = json_integer_value(json_object_get(obj, "code"));
		if (code == 410)
			w->result = KW_GONE;
		else {
			char *text = json_dumps(obj, JSON_COMPACT);

			kube_status_err(w->e, "GET", w->path, (long)code, text,
			    text != NULL ? strlen(text) : 0);
			free(text);
			w->result = -1;
		}
	} else if (strcmp(type, "BOOKMARK") == 0) {
		json_decref(ev);
		return 0;
	} else if ((r = w->fn(w->arg, type, obj, w->e)) == 0) {
		json_decref(ev);
		return 0;
	} else
		w->result = r == 1 ? KW_DONE : -1;
	json_decref(ev);
	return -1;
}

static size_t
watch_write(char *ptr, size_t size, size_t n, void *arg)
{
	struct watch	*w = arg;
	size_t		 len = size * n, used;
	char		*nl;

	if (w->status == 0)
		curl_easy_getinfo(w->c, CURLINFO_RESPONSE_CODE, &w->status);
	if (buf_append(&w->line, ptr, len) == -1) {
		berr_set(w->e, 502, "a watch event from the API server is over "
		    "%u bytes", KUBE_EVENT_MAX);
		w->result = -1;
		w->stopped = 1;
		return 0;
	}
	/* An error answer is one Status, read whole after the transfer. */
	if (w->status != 200)
		return len;
	while ((nl = memchr(w->line.data, '\n', w->line.len)) != NULL) {
		used = (size_t)(nl - w->line.data) + 1;
		if (watch_event(w, w->line.data, used - 1) == -1) {
			w->stopped = 1;
			return 0;
		}
		buf_consume(&w->line, used);
	}
	return len;
}

int
kube_watch(struct kube *k, const char *path, long timeout_ms,
    kube_event_fn fn, void *arg, struct berr *e)
{
	struct req	 r;
	struct watch	 w;
	CURLcode	 rc;
	int		 ret = -1;

	memset(e, 0, sizeof(*e));
	memset(&w, 0, sizeof(w));
	buf_init(&w.line, KUBE_EVENT_MAX);
	w.path = path;
	w.fn = fn;
	w.arg = arg;
	w.e = e;
	if (req_init(k, &r, "GET", path, NULL, timeout_ms, e) == -1)
		goto done;
	w.c = r.c;
	curl_easy_setopt(r.c, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(r.c, CURLOPT_WRITEDATA, &w);
	rc = curl_easy_perform(r.c);
	if (w.stopped) {
		ret = w.result;
		goto done;
	}
	/* A head with no body yet: watch_write never saw the status. */
	if (w.status == 0)
		curl_easy_getinfo(r.c, CURLINFO_RESPONSE_CODE, &w.status);
	/*
	 * Our bound, or a stream cut after it began (an API server that
	 * restarts, a load balancer's idle timeout), or a connection closed
	 * with no reply at all (status 0): the caller reads the object again,
	 * which tells a server that is really gone, and watches again.
	 */
	if ((w.status == 200 || w.status == 0) && (rc == CURLE_OPERATION_TIMEDOUT
	    || rc == CURLE_RECV_ERROR || rc == CURLE_PARTIAL_FILE
	    || rc == CURLE_GOT_NOTHING)) {
		ret = KW_ENDED;
		goto done;
	}
	if (rc != CURLE_OK) {
		curl_err(k, &r, rc, "GET", path, e);
		goto done;
	}
	curl_easy_getinfo(r.c, CURLINFO_RESPONSE_CODE, &w.status);
	if (w.status == 410) {
		ret = KW_GONE;
		goto done;
	}
	if (w.status != 200) {
		kube_status_err(e, "GET", path, w.status, w.line.data,
		    w.line.len);
		goto done;
	}
	/* A last line without its newline is an event too. */
	if (w.line.len > 0 && watch_event(&w, w.line.data, w.line.len) == -1) {
		ret = w.result;
		goto done;
	}
	ret = KW_ENDED;
done:
	if (ret == -1)
		failed(k, e);
	buf_release(&w.line);
	req_done(&r);
	return ret;
}
