/*
 * sbenv.c: what one user's sandbox is on every backend: its names, its labels
 * and the environment its agent gets, as plain strings.  backend_podman_spec.c
 * (Podman), kspec.c (Kubernetes) and render.c (quadlets) each put these into
 * their own shape, so that none of them spells a variable, a label or a name of
 * its own and the three cannot drift apart.  Pure: no Podman, no API server, no
 * files, no clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sha256.h"
#include "kube.h"
#include "supervisor.h"
#include "banned.h"

/* Where the agent listens in a Podman sandbox (the run directory). */
#define AGENT_SOCK_IN	"/run/vivarium/agent.sock"
/* The list grows by this many: ours, the proxy's and the links' fit. */
#define GROW_BY	32

int
sbenv_names(const char *user, struct sbenv_names *n)
{
	if (user_id_valid(user, strlen(user)) == -1)
		return -1;
	snprintf(n->sandbox, sizeof(n->sandbox), "vivarium-%s", user);
	snprintf(n->workspace, sizeof(n->workspace), "vivarium-%s-workspace",
	    user);
	return 0;
}

/*
 * Podman's objects (and quadlets) carry io.vivarium.*, which podman.c's
 * list filter and the uninstaller look for; Kubernetes objects the
 * recommended app.kubernetes.io labels, which kube.h's selector names.
 */
size_t
sbenv_labels(int kube, const char *user,
    struct sbenv_label out[SBENV_LABELS_MAX])
{
	if (kube) {
		out[0] = (struct sbenv_label){ KUBE_MANAGED_BY, KUBE_MANAGER };
		out[1] = (struct sbenv_label){ KUBE_NAME, KUBE_APP };
		out[2] = (struct sbenv_label){ KUBE_USER, user };
		return 3;
	}
	out[0] = (struct sbenv_label){ SBENV_LABEL_MANAGED, "true" };
	out[1] = (struct sbenv_label){ SBENV_LABEL_USER, user };
	return 2;
}

/* Both APIs take labels as a JSON object (new reference). */
json_t *
sbenv_label_object(int kube, const char *user)
{
	struct sbenv_label	 l[SBENV_LABELS_MAX];
	json_t			*o;
	size_t			 i, n;

	n = sbenv_labels(kube, user, l);
	if ((o = json_object()) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		json_object_set_new(o, l[i].key, json_string(l[i].value));
	return o;
}

/* ---------------------------------------------------------------- the list */

const char *
sbenv_get(const struct sbenv *e, const char *name)
{
	size_t	 i;

	for (i = 0; i < e->n; i++)
		if (strcmp(e->v[i].name, name) == 0)
			return e->v[i].value;
	return NULL;
}

/* A value is wiped before it is freed: it may be a link key or a secret. */
static void
wipe(char *v)
{
	explicit_bzero(v, strlen(v));
	free(v);
}

/*
 * A name set twice keeps its first place and takes the last value, as
 * a JSON object does: what comes later (ours) wins over sandbox.env.
 */
static int
set(struct sbenv *e, const char *name, const char *value)
{
	struct sbenv_var	*nv;
	char			*v;
	size_t			 i;

	if ((v = strdup(value)) == NULL)
		return -1;
	for (i = 0; i < e->n; i++)
		if (strcmp(e->v[i].name, name) == 0) {
			wipe(e->v[i].value);
			e->v[i].value = v;
			return 0;
		}
	if (e->n == e->cap) {
		if ((nv = reallocarray(e->v, e->cap + GROW_BY,
		    sizeof(*nv))) == NULL) {
			free(v);
			return -1;
		}
		e->v = nv;
		e->cap += GROW_BY;
	}
	if ((e->v[e->n].name = strdup(name)) == NULL) {
		free(v);
		return -1;
	}
	e->v[e->n++].value = v;
	return 0;
}

static int
setn(struct sbenv *e, const char *name, long long v)
{
	char	 s[32];

	snprintf(s, sizeof(s), "%lld", v);
	return set(e, name, s);
}

static void
del(struct sbenv *e, const char *name)
{
	size_t	 i;

	for (i = 0; i < e->n; i++)
		if (strcmp(e->v[i].name, name) == 0) {
			free(e->v[i].name);
			wipe(e->v[i].value);
			memmove(&e->v[i], &e->v[i + 1], (e->n - i - 1)
			    * sizeof(e->v[0]));
			e->n--;
			return;
		}
}

void
sbenv_release(struct sbenv *e)
{
	size_t	 i;

	for (i = 0; i < e->n; i++) {
		free(e->v[i].name);
		wipe(e->v[i].value);
	}
	free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
}

/* ------------------------------------------------------------------ pieces */

/*
 * With no DNS the proxy can only be named by its address (on Kubernetes
 * a Service's name that did not resolve: kspec_proxy_addr); nothing is
 * local but the proxy, so everything goes to it (no_proxy empty).  Both
 * cases, since programs differ in which they read.
 */
int
sbenv_proxy(struct sbenv *e, const char *addr, long port)
{
	static const char *const names[] = { "http_proxy", "https_proxy",
	    "HTTP_PROXY", "HTTPS_PROXY" };
	char	 url[320];
	size_t	 i;

	snprintf(url, sizeof(url), "http://%s:%ld", addr, port);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (set(e, names[i], url) == -1)
			return -1;
	return set(e, "no_proxy", "") == -1 || set(e, "NO_PROXY", "") == -1
	    ? -1 : 0;
}

/*
 * What the agent needs to make file links: this user's key (never the
 * master key: a sandbox can only sign links to its own workspace), where
 * browsers reach the supervisor, and the lifetimes.  Without a loaded key
 * (vivariumctl before the supervisor ever started) links stay off.
 *
 * SBENV_KEY_FILE: the key itself goes in a file of the run directory
 * (backend_podman_objects.c writes it at every start; the agent reads and
 * removes it): in the environment, PID 1 and every process of the sandbox would
 * show it in /proc/<pid>/environ.  A digest of it stays, so that a changed key
 * still tells an old container from a new one.  SBENV_KEY_ENV: in the
 * environment, where the agent is PID 1 and wipes it (Kubernetes).
 */
int
sbenv_links(struct sbenv *e, const struct conf *c, const char *user,
    enum sbenv_key key)
{
	struct sha256	 s;
	unsigned char	 d[SHA256_LEN];
	char		 hex[LINK_KEY_HEX + 1], sum[17];
	int		 i, r;

	if (key == SBENV_KEY_NONE
	    || link_user_key_hex(&c->link_keys, user, hex) == -1)
		return 0;
	r = set(e, "VIVARIUM_LINK_USER", user) == -1
	    || (key == SBENV_KEY_ENV && set(e, "VIVARIUM_LINK_KEY", hex) == -1)
	    || (c->public_url != NULL
	    && set(e, "VIVARIUM_PUBLIC_URL", c->public_url) == -1)
	    || setn(e, "VIVARIUM_DOWNLOAD_LIFETIME", c->download_lifetime) == -1
	    || setn(e, "VIVARIUM_UPLOAD_LIFETIME", c->upload_lifetime) == -1
	    || setn(e, "VIVARIUM_LINK_MAX_LIFETIME", c->link_max_lifetime) == -1
	    || setn(e, "VIVARIUM_UPLOAD_MAX_BYTES", (long long)c->upload_max)
	    == -1 ? -1 : 0;
	if (r == 0 && key == SBENV_KEY_FILE) {
		sha256_init(&s);
		sha256_update(&s, "vivarium link key digest\n", 25);
		sha256_update(&s, hex, strlen(hex));
		sha256_final(&s, d);
		for (i = 0; i < 8; i++)
			snprintf(sum + 2 * i, 3, "%02x", d[i]);
		r = set(e, "VIVARIUM_LINK_KEY_FILE", SANDBOX_LINK_KEY_IN) == -1
		    || set(e, "VIVARIUM_LINK_KEY_SUM", sum) == -1 ? -1 : 0;
	}
	explicit_bzero(hex, sizeof(hex));
	return r;
}

/* ---------------------------------------------------------------- the whole */

/*
 * sandbox.env, then ours, which come last so that sandbox.env cannot undo
 * them: how the agent is reached, the proxy, the file links.
 */
int
sbenv_make(const struct conf *c, const char *user, const struct sbenv_how *h,
    struct sbenv *e)
{
	size_t	 i;

	*e = (struct sbenv)SBENV_INIT;
	/*
	 * Where the uid has no passwd line (Podman adds one, a kubelet does
	 * not), getpass.getuser() and tools that want a login name would
	 * fail: they get the image's user name, which sandbox.env may change.
	 */
	if (h->login != NULL && (set(e, "USER", h->login) == -1
	    || set(e, "LOGNAME", h->login) == -1))
		goto fail;
	for (i = 0; i < c->nenv; i++)
		if (set(e, c->env[i].key, c->env[i].value) == -1)
			goto fail;
	if (h->tcp_port == 0) {
		/* The socket only: nothing in the sandbox listens on TCP. */
		if (set(e, "VIVARIUM_SOCKET", AGENT_SOCK_IN) == -1
		    || set(e, "VIVARIUM_PORT", "off") == -1)
			goto fail;
	} else {
		/* A unix socket does not cross nodes: none here. */
		if (set(e, "VIVARIUM_HOST", "0.0.0.0") == -1
		    || setn(e, "VIVARIUM_PORT", h->tcp_port) == -1)
			goto fail;
		del(e, "VIVARIUM_SOCKET");
		if (set(e, KSPEC_SECRET_ENV, h->secret != NULL ? h->secret
		    : "") == -1)
			goto fail;
	}
	if (h->proxy != NULL && sbenv_proxy(e, h->proxy, h->proxy_port) == -1)
		goto fail;
	if (sbenv_links(e, c, user, h->key) == -1)
		goto fail;
	if (h->socket_mode != NULL && set(e, "VIVARIUM_SOCKET_MODE",
	    h->socket_mode) == -1)
		goto fail;
	return 0;
fail:
	sbenv_release(e);
	return -1;
}
