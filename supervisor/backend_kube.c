/*
 * backend_kube.c: the Kubernetes backend (backend.h).  A user's sandbox
 * is three objects in one namespace (kspec.c builds them): a claim for
 * the workspace, which stays when the sandbox sleeps, a NetworkPolicy,
 * made before the Pod so that the Pod is never without it, and the Pod.
 * Stopping deletes the Pod; the next request makes it again, with the
 * same uid (kept on the claim) and a new random secret; the secret of a
 * Pod is read back from it, so a restarted supervisor adopts what it
 * finds by label.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "backend.h"
#include "kube.h"
#include "banned.h"

#define KUBE_TIMEOUT_MS		30000L
/* How long a deleted Pod may take to go, beyond its grace period. */
#define GONE_SLACK		30
#define PATH_MAX_K		1024

enum kind { K_POD, K_PVC, K_NETPOL };

static const struct {
	const char	*api;
	const char	*resource;
} collection[] = {
	[K_POD] = { "/api/v1", "pods" },
	[K_PVC] = { "/api/v1", "persistentvolumeclaims" },
	[K_NETPOL] = { "/apis/networking.k8s.io/v1", "networkpolicies" },
};

struct kstate {
	const struct conf	*conf;
	struct kube		*kube;		/* owned; NULL: init_err says */
	struct berr		 init_err;
	/* Two first requests must not take the same uid slot. */
	pthread_mutex_t		 slot_lock;
	/* The proxy's last good address: a DNS hiccup must not change
	 * every Pod's spec (and so replace them). */
	pthread_mutex_t		 proxy_lock;
	char			 proxy[320];
	int			 proxy_known;
	int			 warned_slot;
	/* The users told that their claim keeps its old size: once each. */
	pthread_mutex_t		 size_lock;
	json_t			*warned_size;
	/* user_namespace auto, as the API server's version decided it
	 * (under proxy_lock); -1: not asked yet. */
	int			 userns;
};

static struct kstate *
st(struct backend *b)
{
	return b->state;
}

/* ---------------------------------------------------------------- objects */

static void
coll_path(const struct conf *c, enum kind k, char *dst, size_t len)
{
	snprintf(dst, len, "%s/namespaces/%s/%s", collection[k].api,
	    c->kube.namespace, collection[k].resource);
}

static void
obj_path(const struct conf *c, enum kind k, const char *name, char *dst,
    size_t len)
{
	snprintf(dst, len, "%s/namespaces/%s/%s/%s", collection[k].api,
	    c->kube.namespace, collection[k].resource, name);
}

static int
ready(struct kstate *s, struct berr *e)
{
	if (s->kube != NULL)
		return 0;
	*e = s->init_err;
	return -1;
}

/* 1 with *out (may be NULL: not wanted), 0 when there is none, -1. */
static int
get(struct kstate *s, enum kind k, const char *name, json_t **out,
    struct berr *e)
{
	char	 p[PATH_MAX_K];
	json_t	*o = NULL;
	long	 status;

	if (out != NULL)
		*out = NULL;
	if (ready(s, e) == -1)
		return -1;
	obj_path(s->conf, k, name, p, sizeof(p));
	if (kube_call(s->kube, "GET", p, NULL, &o, &status, e) == -1)
		return status == 404 ? 0 : -1;
	if (out != NULL)
		*out = o;
	else
		json_decref(o);
	return 1;
}

/* 0 made (*out, when not NULL, the object as stored); 1 there already
 * (409: someone made it meanwhile); -1.  body is borrowed. */
static int
create(struct kstate *s, enum kind k, json_t *body, json_t **out,
    struct berr *e)
{
	char	 p[PATH_MAX_K];
	long	 status;

	if (out != NULL)
		*out = NULL;
	if (body == NULL) {
		berr_set(e, 500, "out of memory");
		return -1;
	}
	coll_path(s->conf, k, p, sizeof(p));
	if (kube_call(s->kube, "POST", p, body, out, &status, e) == -1)
		return status == 409 && strcmp(e->cause, "AlreadyExists") == 0
		    ? 1 : -1;
	return 0;
}

/* create, with body a new reference that it takes. */
static int
create_new(struct kstate *s, enum kind k, json_t *body, struct berr *e)
{
	int	 r = create(s, k, body, NULL, e);

	json_decref(body);
	return r;
}

/* 0 deleted or not there; -1. */
static int
del(struct kstate *s, enum kind k, const char *name, struct berr *e)
{
	char	 p[PATH_MAX_K];
	long	 status;

	if (ready(s, e) == -1)
		return -1;
	obj_path(s->conf, k, name, p, sizeof(p));
	if (kube_call(s->kube, "DELETE", p, NULL, NULL, &status, e) == -1)
		return status == 404 ? 0 : -1;
	return 0;
}

/* The managed objects of a kind (new reference to the items), or NULL. */
static json_t *
list(struct kstate *s, enum kind k, struct berr *e)
{
	char	 p[PATH_MAX_K], q[PATH_MAX_K + 128];
	json_t	*l = NULL, *items;

	if (ready(s, e) == -1)
		return NULL;
	coll_path(s->conf, k, p, sizeof(p));
	snprintf(q, sizeof(q), "%s?labelSelector=%s", p, KUBE_SELECTOR_Q);
	if (kube_call(s->kube, "GET", q, NULL, &l, NULL, e) == -1)
		return NULL;
	items = json_incref(json_object_get(l, "items"));
	json_decref(l);
	if (!json_is_array(items)) {
		json_decref(items);
		berr_set(e, 502, "the API server's list of %s has no items",
		    strrchr(p, '/') + 1);
		return NULL;
	}
	return items;
}

/* ---------------------------------------------------------------- Pods */

static const json_t *
pod_field(const json_t *pod, const char *a, const char *b)
{
	return json_object_get(json_object_get(pod, a), b);
}

static int
pod_terminating(const json_t *pod)
{
	return pod_field(pod, "metadata", "deletionTimestamp") != NULL;
}

/* The condition of that type's status is "True". */
static int
pod_condition(const json_t *pod, const char *type, const char **reason,
    const char **msg)
{
	const json_t	*c;
	const char	*t, *v;
	size_t		 i;

	json_array_foreach(pod_field(pod, "status", "conditions"), i, c) {
		t = json_string_value(json_object_get(c, "type"));
		if (t == NULL || strcmp(t, type) != 0)
			continue;
		v = json_string_value(json_object_get(c, "status"));
		if (reason != NULL)
			*reason = json_string_value(json_object_get(c, "reason"));
		if (msg != NULL)
			*msg = json_string_value(json_object_get(c, "message"));
		return v != NULL && strcmp(v, "True") == 0;
	}
	return 0;
}

static const char *
pod_ip(const json_t *pod)
{
	return json_string_value(pod_field(pod, "status", "podIP"));
}

static int
pod_ready(const json_t *pod)
{
	return !pod_terminating(pod) && pod_ip(pod) != NULL
	    && pod_condition(pod, "Ready", NULL, NULL);
}

static int
pod_ended(const json_t *pod)
{
	const char *ph = json_string_value(pod_field(pod, "status", "phase"));

	return ph != NULL && (strcmp(ph, "Failed") == 0
	    || strcmp(ph, "Succeeded") == 0);
}

/*
 * Why a Pod will not become ready by waiting, into why: an image that
 * cannot be pulled, a container that keeps crashing.  1 when so.
 */
static int
pod_stuck(const json_t *pod, char *why, size_t len)
{
	static const char *const fatal[] = { "ImagePullBackOff",
	    "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError",
	    "CreateContainerError", "CrashLoopBackOff", "RunContainerError" };
	const json_t	*cs, *w;
	const char	*reason, *msg;
	size_t		 i, k;

	json_array_foreach(pod_field(pod, "status", "containerStatuses"), i,
	    cs) {
		w = json_object_get(json_object_get(cs, "state"), "waiting");
		reason = json_string_value(json_object_get(w, "reason"));
		msg = json_string_value(json_object_get(w, "message"));
		if (reason == NULL)
			continue;
		for (k = 0; k < sizeof(fatal) / sizeof(fatal[0]); k++)
			if (strcmp(reason, fatal[k]) == 0) {
				snprintf(why, len, "%s%s%.300s", reason,
				    msg != NULL ? ": " : "", msg != NULL ? msg
				    : "");
				return 1;
			}
	}
	return 0;
}

/* What keeps it waiting so far (for the timeout's message). */
static void
pod_waiting(const json_t *pod, char *why, size_t len)
{
	const json_t	*cs;
	const char	*reason = NULL, *msg = NULL, *ph;
	size_t		 i;

	if (!pod_condition(pod, "PodScheduled", &reason, &msg)
	    && reason != NULL) {
		snprintf(why, len, "not scheduled: %s%s%.300s", reason,
		    msg != NULL ? ": " : "", msg != NULL ? msg : "");
		return;
	}
	json_array_foreach(pod_field(pod, "status", "containerStatuses"), i,
	    cs) {
		reason = json_string_value(json_object_get(json_object_get(
		    json_object_get(cs, "state"), "waiting"), "reason"));
		if (reason != NULL) {
			snprintf(why, len, "its container is waiting: %s", reason);
			return;
		}
	}
	ph = json_string_value(pod_field(pod, "status", "phase"));
	snprintf(why, len, "phase %s, not ready", ph != NULL ? ph : "unknown");
}

struct waitctx {
	int	 gone;		/* waiting for the Pod to be deleted */
};

static int
on_event(void *arg, const char *type, const json_t *obj, struct berr *e)
{
	struct waitctx	*w = arg;
	char		 why[8];

	(void)e;
	if (strcmp(type, "DELETED") == 0)
		return 1;
	if (w->gone)
		return 0;
	return pod_ready(obj) || pod_ended(obj) || pod_stuck(obj, why,
	    sizeof(why)) || pod_terminating(obj);
}

/*
 * Waits until the Pod is ready (gone = 0; *out its last state) or gone
 * (gone = 1), until the deadline: a GET, then a watch from its
 * resourceVersion, and again (410, the watch's own timeout).  0 or -1.
 */
static int
pod_wait(struct kstate *s, const char *name, int gone, double deadline,
    json_t **out, struct berr *e)
{
	struct waitctx	 w = { gone };
	char		 p[PATH_MAX_K], q[PATH_MAX_K + 256], why[512];
	const char	*rv;
	json_t		*pod = NULL;
	double		 t0, left;
	int		 r;

	why[0] = '\0';
	coll_path(s->conf, K_POD, p, sizeof(p));
	for (;;) {
		json_decref(pod);
		pod = NULL;
		if ((r = get(s, K_POD, name, &pod, e)) == -1)
			return -1;
		if (gone && r == 0)
			return 0;
		if (!gone) {
			if (r == 0) {
				berr_set(e, 500, "Pod %s was deleted while it "
				    "started", name);
				return -1;
			}
			if (pod_ready(pod)) {
				*out = pod;
				return 0;
			}
			if (pod_terminating(pod) || pod_ended(pod)) {
				berr_set(e, 500, "Pod %s %s while it started",
				    name, pod_terminating(pod) ? "is being "
				    "deleted" : "ended");
				json_decref(pod);
				return -1;
			}
			if (pod_stuck(pod, why, sizeof(why))) {
				berr_set(e, 500, "Pod %s cannot start: %s", name,
				    why);
				json_decref(pod);
				return -1;
			}
			pod_waiting(pod, why, sizeof(why));
		}
		left = deadline - clock_mono();
		if (left <= 0) {
			berr_set(e, 504, "Pod %s was not %s within the time "
			    "allowed%s%s", name, gone ? "gone" : "ready",
			    why[0] ? ": " : "", why);
			json_decref(pod);
			return -1;
		}
		rv = json_string_value(pod_field(pod, "metadata",
		    "resourceVersion"));
		/* Whole seconds, rounded up: the deadline is waited in full. */
		snprintf(q, sizeof(q), "%s?watch=1&fieldSelector=metadata.name"
		    "%%3D%s&resourceVersion=%s&timeoutSeconds=%ld", p, name,
		    rv != NULL ? rv : "0", (long)left + 1);
		t0 = clock_mono();
		r = kube_watch(s->kube, q, (long)(left * 1000) + 2000, on_event,
		    &w, e);
		if (r == -1) {
			json_decref(pod);
			return -1;
		}
		/* A watch that ends at once, again and again, is not polled
		 * in a tight loop. */
		if (r != KW_DONE && clock_mono() - t0 < 1.0)
			clock_sleep_ms(250);
	}
}

/* ---------------------------------------------------------------- ensure */

/*
 * Does this /version have user namespaces on by default?  "1", "33" (some
 * providers write "33+").  Unknown is no: the uid of our own then.
 */
static int
version_userns(const json_t *v)
{
	const char	*maj = json_string_value(json_object_get(v, "major"));
	const char	*min = json_string_value(json_object_get(v, "minor"));
	long		 a, b;

	if (maj == NULL || min == NULL || *maj < '0' || *maj > '9'
	    || *min < '0' || *min > '9')
		return 0;
	a = strtol(maj, NULL, 10);
	b = strtol(min, NULL, 10);
	return a > 1 || (a == 1 && b >= KUBE_USERNS_SINCE_MINOR);
}

/* What auto decided from v, said once. */
static int
userns_from(struct kstate *s, const json_t *v)
{
	const char	*gv = json_string_value(json_object_get(v, "gitVersion"));
	int		 on = version_userns(v), first;

	pthread_mutex_lock(&s->proxy_lock);
	first = s->userns == -1;
	s->userns = on;
	pthread_mutex_unlock(&s->proxy_lock);
	if (first)
		log_info("kubernetes.user_namespace auto: Kubernetes %s, so "
		    "sandbox Pods %s", gv != NULL ? gv : "(version unknown)",
		    on ? "get a user namespace of their own (hostUsers: false)"
		    : "run as uid_base + their slot on the node (user "
		    "namespaces are on by default from 1.33)");
	return on;
}

/*
 * Whether a Pod gets a user namespace of its own: kubernetes.user_namespace,
 * auto asking the API server's version once.  1, 0, or -1 with e.
 */
static int
userns(struct kstate *s, struct berr *e)
{
	json_t	*v = NULL;
	int	 on;

	if (s->conf->kube.user_namespace != KUBE_USERNS_AUTO)
		return s->conf->kube.user_namespace == KUBE_USERNS_ON;
	pthread_mutex_lock(&s->proxy_lock);
	on = s->userns;
	pthread_mutex_unlock(&s->proxy_lock);
	if (on != -1)
		return on;
	if (kube_call(s->kube, "GET", "/version", NULL, &v, NULL, e) == -1)
		return -1;
	on = userns_from(s, v);
	json_decref(v);
	return on;
}

/*
 * A Pod asked for with hostUsers: false, as the API server has it: an API
 * server without the feature drops the field, and the Pod would run as
 * KSPEC_USERNS_ID, a real uid on the node.  1 when it kept it.
 */
static int
userns_held(const json_t *pod)
{
	return json_is_false(pod_field(pod, "spec", "hostUsers"));
}

static void
userns_refused(const char *name, struct berr *e)
{
	berr_set(e, 500, "the API server dropped hostUsers: false from Pod %s: "
	    "user namespaces are off in this cluster (the UserNamespacesSupport "
	    "feature gate; on by default from Kubernetes 1.33); set "
	    "kubernetes.user_namespace: false, or turn the feature on", name);
}

/* The address sandboxes are given the proxy by; see kstate.proxy. */
static void
proxy_addr(struct kstate *s, char *dst, size_t len)
{
	char	 a[320];
	int	 resolved;

	kspec_proxy_addr(s->conf, a, sizeof(a), &resolved);
	pthread_mutex_lock(&s->proxy_lock);
	if (resolved) {
		if (s->proxy_known && strcmp(s->proxy, a) != 0)
			log_info("the egress proxy %s is now at %s (was %s)",
			    s->conf->kube.egress_host, a, s->proxy);
		snprintf(s->proxy, sizeof(s->proxy), "%s", a);
		s->proxy_known = 1;
	} else if (!s->proxy_known)
		log_warnx("the egress proxy's name %s does not resolve: "
		    "sandboxes are given the name, which they cannot resolve "
		    "(no DNS): check kubernetes.egress_proxy",
		    s->conf->kube.egress_host);
	snprintf(dst, len, "%s", s->proxy_known ? s->proxy : a);
	pthread_mutex_unlock(&s->proxy_lock);
}

/*
 * A claim is never resized by us: shrinking is impossible, and growing
 * needs a storage class that allows expansion, which only the operator
 * knows.  So a changed limits.workspace is only said, once per user.
 */
static void
check_pvc_size(struct kstate *s, const char *user, const json_t *pvc)
{
	const char	*have = json_string_value(json_object_get(json_object_get(
	    pod_field(pvc, "spec", "resources"), "requests"), "storage"));
	long long	 want = (long long)conf_limits(s->conf, user)->workspace;
	long long	 n = kspec_quantity(have);
	int		 first;

	if (n == -1 || n == want)
		return;
	pthread_mutex_lock(&s->size_lock);
	if (s->warned_size == NULL)
		s->warned_size = json_object();
	first = json_object_get(s->warned_size, user) == NULL;
	if (first)
		json_object_set_new(s->warned_size, user, json_true());
	pthread_mutex_unlock(&s->size_lock);
	if (!first)
		return;
	log_warnx("%s: claim %s keeps its size %s (limits.workspace is now "
	    "%lld bytes): claims are never resized; to grow it, `kubectl -n "
	    "%s edit pvc %s` (spec.resources.requests.storage), if its storage "
	    "class allows volume expansion; a claim cannot shrink", user,
	    json_string_value(pod_field(pvc, "metadata", "name")), have, want,
	    s->conf->kube.namespace,
	    json_string_value(pod_field(pvc, "metadata", "name")));
}

/* The claim, made with the lowest free uid slot when missing; *slot. */
static int
ensure_pvc(struct kstate *s, const char *user, long *slot, struct berr *e)
{
	struct kube_names	 n;
	json_t			*pvc = NULL, *items;
	int			 r;

	(void)kspec_names(user, &n);
	if ((r = get(s, K_PVC, n.pvc, &pvc, e)) == -1)
		return -1;
	if (r == 0) {
		pthread_mutex_lock(&s->slot_lock);
		if ((items = list(s, K_PVC, e)) == NULL) {
			pthread_mutex_unlock(&s->slot_lock);
			return -1;
		}
		*slot = kspec_free_slot(s->conf, items);
		json_decref(items);
		r = create_new(s, K_PVC, kspec_pvc(s->conf, user, *slot), e);
		pthread_mutex_unlock(&s->slot_lock);
		if (r == -1)
			return -1;
		if (r == 0) {
			log_info("%s: made claim %s (uid %ld)", user, n.pvc,
			    kspec_uid(s->conf, *slot));
			return 0;
		}
		/* Someone else made it: theirs is the slot. */
		if (get(s, K_PVC, n.pvc, &pvc, e) != 1)
			return -1;
	}
	*slot = kspec_slot_of(s->conf, pvc);
	check_pvc_size(s, user, pvc);
	json_decref(pvc);
	if (*slot == 0 && !s->warned_slot) {
		s->warned_slot = 1;
		log_warnx("%s: claim %s has no %s annotation of ours: its "
		    "sandbox runs as uid %ld (uid_base), shared with any other "
		    "such claim", user, n.pvc, KUBE_UID, s->conf->kube.uid_base);
	}
	return 0;
}

/*
 * What differs between the policy we have and the one we want, for the
 * log: the spec's fields (ingress, egress, ...) and the labels.  A real
 * API server may add defaults, so this names more at worst, never less.
 */
static void
netpol_diff(const json_t *have, const json_t *want, char *dst, size_t len)
{
	const json_t	*hs = json_object_get(have, "spec");
	const char	*k;
	json_t		*v;
	size_t		 o = 0;

	dst[0] = '\0';
	json_object_foreach(json_object_get(want, "spec"), k, v)
		if (!json_equal(v, json_object_get(hs, k)) && o < len)
			o += (size_t)snprintf(dst + o, len - o, "%s%s",
			    o ? ", " : "", k);
	if (!json_equal(pod_field(want, "metadata", "labels"),
	    pod_field(have, "metadata", "labels")) && o < len)
		o += (size_t)snprintf(dst + o, len - o, "%slabels", o ? ", " :
		    "");
	if (o == 0)
		snprintf(dst, len, "only its hash");
}

/*
 * PUT want in place of have, with have's resourceVersion (optimistic
 * concurrency).  0 replaced; 1 someone changed or deleted it since we
 * read it (409 Conflict, 404): read it again; -1.
 */
static int
replace(struct kstate *s, enum kind k, const char *name, const json_t *have,
    const json_t *want, struct berr *e)
{
	char		 p[PATH_MAX_K];
	const json_t	*rv = pod_field(have, "metadata", "resourceVersion");
	json_t		*body;
	long		 status;
	int		 r;

	if ((body = json_deep_copy(want)) == NULL) {
		berr_set(e, 500, "out of memory");
		return -1;
	}
	if (json_is_string(rv))
		json_object_set_new(json_object_get(body, "metadata"),
		    "resourceVersion", json_string(json_string_value(rv)));
	obj_path(s->conf, k, name, p, sizeof(p));
	r = kube_call(s->kube, "PUT", p, body, NULL, &status, e);
	json_decref(body);
	if (r == -1)
		return status == 409 || status == 404 ? 1 : -1;
	return 0;
}

/*
 * The policy, made when missing, replaced in place when it was made from
 * another configuration (its hash differs or it has none): a changed
 * selector or port must reach users who have a policy, and a PUT leaves
 * no moment without one, as a delete and create would.  Someone else's
 * change between our read and our write is read again, once.
 */
static int
ensure_netpol(struct kstate *s, const char *user, struct berr *e)
{
	struct kube_names	 n;
	json_t			*want, *have = NULL;
	const char		*h;
	char			 diff[256];
	int			 r, tries, rc = -1;

	(void)kspec_names(user, &n);
	if ((want = kspec_netpol(s->conf, user)) == NULL) {
		berr_set(e, 500, "out of memory");
		return -1;
	}
	for (tries = 0; tries < 2; tries++) {
		json_decref(have);
		have = NULL;
		if ((r = get(s, K_NETPOL, n.netpol, &have, e)) == -1)
			goto done;
		if (r == 0) {
			/* 1: someone made it meanwhile; compare theirs. */
			if ((r = create(s, K_NETPOL, want, NULL, e)) != 1) {
				rc = r;
				goto done;
			}
			continue;
		}
		h = kspec_hash_of(have);
		if (h != NULL && strcmp(h, kspec_hash_of(want)) == 0) {
			rc = 0;
			goto done;
		}
		netpol_diff(have, want, diff, sizeof(diff));
		if ((r = replace(s, K_NETPOL, n.netpol, have, want, e)) == 0) {
			log_info("%s: replaced NetworkPolicy %s (%s: %s)", user,
			    n.netpol, h == NULL ? "it had no spec hash of ours"
			    : "made from another configuration", diff);
			rc = 0;
			goto done;
		}
		if (r == -1)
			goto done;
	}
	berr_set(e, 409, "NetworkPolicy %s changed under us twice while we "
	    "replaced it: try again", n.netpol);
done:
	json_decref(want);
	json_decref(have);
	return rc;
}

static int
kb_ensure(struct backend *b, const char *user, int *created,
    struct agent_addr *addr, struct berr *e)
{
	struct kstate		*s = st(b);
	const struct conf	*c = s->conf;
	struct kube_names	 n;
	char			 secret[KSPEC_SECRET_MAX + 1], proxy[320];
	json_t			*want = NULL, *pod = NULL;
	const char		*have, *why;
	long			 slot;
	int			 r, ns, rc = -1;

	*created = 0;
	memset(e, 0, sizeof(*e));
	if (kspec_names(user, &n) == -1) {
		berr_set(e, 400, "\"%s\" is not a valid user id", user);
		return -1;
	}
	if (ready(s, e) == -1)
		return -1;
	if ((ns = userns(s, e)) == -1)
		return -1;
	/* The policy before the Pod: never a moment without walls. */
	if (ensure_pvc(s, user, &slot, e) == -1
	    || ensure_netpol(s, user, e) == -1)
		goto done;
	proxy_addr(s, proxy, sizeof(proxy));
	/* A new Pod's: one that is adopted keeps its own (below). */
	if (kspec_secret_new(secret) == -1) {
		berr_set(e, 500, "cannot make the agent's secret: no random "
		    "bytes (%s)", strerror(errno));
		goto done;
	}
	if ((want = kspec_pod(c, user, slot, proxy, secret, ns)) == NULL) {
		berr_set(e, 500, "out of memory");
		goto done;
	}
	if ((r = get(s, K_POD, n.pod, &pod, e)) == -1)
		goto done;
	if (r == 1) {
		have = kspec_hash_of(pod);
		why = pod_ended(pod) ? "it ended" : have == NULL
		    || strcmp(have, kspec_hash_of(want)) != 0 ? "made from "
		    "another configuration" : kspec_secret_of(pod, secret) == -1
		    ? "it has no agent secret to read back" : ns
		    && !userns_held(pod) ? "it has no user namespace" : NULL;
		if (!pod_terminating(pod) && why == NULL)
			goto wait;	/* adopted as it is */
		if (!pod_terminating(pod)) {
			log_info("%s: replacing Pod %s (%s)", user, n.pod, why);
			if (del(s, K_POD, n.pod, e) == -1)
				goto done;
		}
		if (pod_wait(s, n.pod, 1, clock_mono() + c->stop_timeout
		    + GONE_SLACK, NULL, e) == -1)
			goto done;
	}
	json_decref(pod);
	if ((r = create(s, K_POD, want, &pod, e)) == -1)
		goto done;
	*created = r == 0;
	if (r == 0 && ns && !userns_held(pod)) {
		struct berr	 de;

		/* Gone before the kubelet starts it, if we are quick. */
		if (del(s, K_POD, n.pod, &de) == -1)
			log_warnx("%s: %s", user, de.msg);
		userns_refused(n.pod, e);
		goto done;
	}
wait:
	json_decref(pod);
	pod = NULL;
	if (pod_wait(s, n.pod, 0, clock_mono() + c->ready_timeout, &pod, e)
	    == -1)
		goto done;
	/*
	 * The secret is the one of the Pod that is ready, as the API server
	 * has it: made by us just now, or by an earlier start.  The agent
	 * proves it holds it before anything is sent (forward.c).
	 */
	if (kspec_secret_of(pod, secret) == -1) {
		berr_set(e, 500, "Pod %s has no agent secret (%s) to reach its "
		    "agent with: delete it so that it is made again", n.pod,
		    KSPEC_SECRET_ENV);
		goto done;
	}
	if (ns && !userns_held(pod)) {
		userns_refused(n.pod, e);
		goto done;
	}
	agent_addr_tcp(addr, pod_ip(pod), (int)c->kube.agent_port, secret);
	rc = 0;
done:
	explicit_bzero(secret, sizeof(secret));
	json_decref(want);
	json_decref(pod);
	return rc;
}

/* ---------------------------------------------------------------- the rest */

/* Idle stop: the Pod goes, the claim stays. */
static int
kb_stop(struct backend *b, const char *user, struct berr *e)
{
	struct kube_names	 n;

	if (kspec_names(user, &n) == -1) {
		berr_set(e, 400, "\"%s\" is not a valid user id", user);
		return -1;
	}
	return del(st(b), K_POD, n.pod, e);
}

/* The policy only once the Pod is gone: it walls the Pod in to the end. */
static int
kb_remove(struct backend *b, const char *user, int purge, struct berr *e)
{
	struct kstate		*s = st(b);
	struct kube_names	 n;

	if (kspec_names(user, &n) == -1) {
		berr_set(e, 400, "\"%s\" is not a valid user id", user);
		return -1;
	}
	if (del(s, K_POD, n.pod, e) == -1 || pod_wait(s, n.pod, 1, clock_mono()
	    + s->conf->stop_timeout + GONE_SLACK, NULL, e) == -1
	    || del(s, K_NETPOL, n.netpol, e) == -1)
		return -1;
	return purge ? del(s, K_PVC, n.pvc, e) : 0;
}

/* The claim is the user: it outlives the Pod. */
static int
kb_registered(struct backend *b, const char *user, struct berr *e)
{
	struct kube_names	 n;

	if (kspec_names(user, &n) == -1)
		return 0;
	return get(st(b), K_PVC, n.pvc, NULL, e);
}

static enum backend_state
pod_state(const json_t *pod)
{
	if (pod_terminating(pod))
		return BK_OTHER;
	if (pod_ended(pod))
		return BK_STOPPED;
	return pod_ready(pod) ? BK_RUNNING : BK_OTHER;
}

static int
kb_inspect(struct backend *b, const char *user, struct backend_info *out,
    struct berr *e)
{
	struct kube_names	 n;
	json_t			*pod = NULL;
	int			 r;

	memset(out, 0, sizeof(*out));
	if (kspec_names(user, &n) == -1)
		return 0;
	if ((r = get(st(b), K_POD, n.pod, &pod, e)) == -1)
		return -1;
	if (r == 1) {
		out->state = pod_state(pod);
		json_decref(pod);
		return 0;
	}
	/* No Pod: asleep when its claim is there. */
	if ((r = get(st(b), K_PVC, n.pvc, NULL, e)) == -1)
		return -1;
	out->state = r == 1 ? BK_STOPPED : BK_MISSING;
	return 0;
}

/* The Pod or its claim. */
static int
kb_exists(struct backend *b, const char *user, struct berr *e)
{
	struct backend_info	 info;

	if (kb_inspect(b, user, &info, e) == -1)
		return -1;
	return info.state != BK_MISSING;
}

/*
 * Every Pod as running (adopted: the first request checks it, the idle
 * reaper deletes it when nobody comes; one that is still starting or has
 * ended is no different), and every claim without a Pod as stopped.
 */
static int
kb_list(struct backend *b, struct backend_sandbox **out, size_t *nout,
    struct berr *e)
{
	struct kstate		*s = st(b);
	struct backend_sandbox	*v;
	json_t			*pods, *pvcs, *o;
	const char		*u;
	size_t			 i, j, k = 0;
	int			 kind, dup;

	*out = NULL;
	*nout = 0;
	if ((pods = list(s, K_POD, e)) == NULL)
		return -1;
	if ((pvcs = list(s, K_PVC, e)) == NULL) {
		json_decref(pods);
		return -1;
	}
	v = calloc(json_array_size(pods) + json_array_size(pvcs) + 1,
	    sizeof(*v));
	if (v == NULL) {
		json_decref(pods);
		json_decref(pvcs);
		berr_set(e, 500, "out of memory");
		return -1;
	}
	for (kind = 0; kind < 2; kind++) {
		json_array_foreach(kind == 0 ? pods : pvcs, i, o) {
			u = kspec_user_of(o);
			if (u == NULL || user_id_valid(u, strlen(u)) == -1)
				continue;
			for (j = 0, dup = 0; j < k && !dup; j++)
				dup = strcmp(v[j].user, u) == 0;
			if (dup)
				continue;
			snprintf(v[k].user, sizeof(v[k].user), "%s", u);
			v[k].state = kind == 0 && !pod_terminating(o)
			    ? BK_RUNNING : BK_STOPPED;
			k++;
		}
	}
	json_decref(pods);
	json_decref(pvcs);
	*out = v;
	*nout = k;
	return 0;
}

static const char *
state_word(const json_t *pod)
{
	if (pod_terminating(pod))
		return "stopping";
	if (pod_ended(pod))
		return "exited";
	return pod_ready(pod) ? "running" : "starting";
}

static json_t *
kb_describe(struct backend *b, const char *user, struct buf *text,
    struct berr *e)
{
	struct kstate		*s = st(b);
	const struct conf	*c = s->conf;
	const struct limits	*l = conf_limits(c, user);
	struct kube_names	 n;
	json_t			*pod = NULL, *pvc = NULL, *np = NULL, *out;
	char			 why[512], addr[300];
	struct berr		 ue;
	int			 rp, rc, rn, ns;
	long			 slot;

	if (kspec_names(user, &n) == -1) {
		berr_set(e, 400, "\"%s\" is not a valid user id", user);
		return NULL;
	}
	if ((rp = get(s, K_POD, n.pod, &pod, e)) == -1
	    || (rc = get(s, K_PVC, n.pvc, &pvc, e)) == -1
	    || (rn = get(s, K_NETPOL, n.netpol, &np, e)) == -1) {
		json_decref(pod);
		json_decref(pvc);
		return NULL;
	}
	out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:b,"
	    " s:{s:I, s:f, s:I}}",
	    "user", user, "state", rp ? state_word(pod) : rc ? "stopped"
	    : "missing", "namespace", c->kube.namespace, "pod", n.pod,
	    "claim", n.pvc, "pod_exists", rp, "claim_exists", rc,
	    "network_policy_exists", rn,
	    "limits", "memory_bytes", (json_int_t)l->memory,
	    "cpus", (double)l->cpus_milli / 1000.0,
	    "workspace_bytes", (json_int_t)l->workspace);
	if (out == NULL)
		goto done;
	if ((ns = userns(s, &ue)) != -1)
		json_object_set_new(out, "user_namespace", json_boolean(ns));
	if (rc) {
		slot = kspec_slot_of(c, pvc);
		json_object_set_new(out, "uid", json_integer(
		    (json_int_t)kspec_uid(c, slot)));
		json_object_set_new(out, "claim_phase", json_deep_copy(
		    pod_field(pvc, "status", "phase")));
		json_object_set_new(out, "workspace_capacity", json_deep_copy(
		    json_object_get(pod_field(pvc, "status", "capacity"),
		    "storage")));
	}
	if (rp) {
		json_object_set_new(out, "image", json_deep_copy(
		    json_object_get(json_array_get(pod_field(pod, "spec",
		    "containers"), 0), "image")));
		json_object_set_new(out, "node", json_deep_copy(
		    pod_field(pod, "spec", "nodeName")));
		json_object_set_new(out, "phase", json_deep_copy(
		    pod_field(pod, "status", "phase")));
		if (pod_ip(pod) != NULL) {
			snprintf(addr, sizeof(addr), strchr(pod_ip(pod), ':')
			    ? "[%s]:%ld" : "%s:%ld", pod_ip(pod),
			    c->kube.agent_port);
			json_object_set_new(out, "agent", json_string(addr));
		}
		if (!pod_ready(pod) && !pod_terminating(pod)) {
			if (!pod_stuck(pod, why, sizeof(why)))
				pod_waiting(pod, why, sizeof(why));
			json_object_set_new(out, "waiting", json_string(why));
		}
	}
done:
	json_decref(pod);
	json_decref(pvc);
	json_decref(np);
	if (out == NULL)
		berr_set(e, 500, "out of memory");
	return out;
}

static int
kb_export(struct backend *b, const char *user, int out, struct berr *e)
{
	berr_set(e, 501, "export is not supported on the kubernetes backend: "
	    "copy the workspace from Pod %s-%s with `kubectl cp`, or back up "
	    "its claim with the cluster's volume snapshots", "vivarium", user);
	return -1;
}

static int
kb_logs(struct backend *b, const char *user, struct berr *e)
{
	berr_set(e, 501, "logs reads Podman's logs; on Kubernetes: kubectl "
	    "logs the user's Pod");
	return -1;
}

static int
kb_doctor(struct backend *b, const char *fetch, int json, struct berr *e)
{
	berr_set(e, 501, "doctor checks the Podman backend; on Kubernetes, "
	    "kubectl describe the Pods");
	return -1;
}

/* What vivariumctl does with Podman only, and what to do here instead. */
static const char *
kb_refuses(struct backend *b, const char *command)
{
	static const struct {
		const char	*command, *why;
	} no[] = {
		{ "import", "import is not supported on the kubernetes backend: "
		    "copy files into the user's Pod with `kubectl cp`" },
		{ "upgrade", "upgrade is for Podman; the kubernetes backend "
		    "makes a Pod again whenever its spec (the image among it) "
		    "changes, at its next start" },
		{ "backup", "backup is for the Podman backend; on Kubernetes, "
		    "back up the PersistentVolumeClaims" },
		{ "restore", "restore is for the Podman backend" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (strcmp(command, no[i].command) == 0)
			return no[i].why;
	return NULL;
}

static int
kb_import(struct backend *b, const char *user, backend_source source,
    void *arg, struct berr *e)
{
	berr_set(e, 501, "import is not supported on the kubernetes backend: "
	    "copy files into Pod vivarium-%s with `kubectl cp`", user);
	return -1;
}

static void
kb_label(struct backend *b, const char *user, char *dst, size_t len)
{
	snprintf(dst, len, "%s/vivarium-%s", st(b)->conf->kube.namespace, user);
}

/* As the Podman backend: vivariumctl, run in the supervisor's Pod, reads
 * the idle time from the run directory's mtime. */
static void
kb_used(struct backend *b, const char *user)
{
	struct names	 n;

	if (sandbox_names(st(b)->conf, user, &n) == -1)
		return;
	if (utimensat(AT_FDCWD, n.rundir, NULL, 0) == -1 && errno == ENOENT) {
		char dir[STATE_DIR_MAX + 16];

		snprintf(dir, sizeof(dir), "%s/" SANDBOX_USERS_DIR,
		    st(b)->conf->state_dir);
		(void)mkdir(st(b)->conf->state_dir, 0700);
		(void)mkdir(dir, 0700);
		(void)mkdir(n.rundir, 0700);
	}
}

/* ---------------------------------------------------------------- check */

static int
check_list(struct kstate *s, enum kind k, backend_say say, struct berr *e)
{
	char	 p[PATH_MAX_K], q[PATH_MAX_K + 160];

	coll_path(s->conf, k, p, sizeof(p));
	snprintf(q, sizeof(q), "%s?labelSelector=%s&limit=1", p,
	    KUBE_SELECTOR_Q);
	if (kube_call(s->kube, "GET", q, NULL, NULL, NULL, e) == 0)
		return 0;
	if (e->status == 0)
		return -1;
	backend_sayf(say, 1, "WARNING: %s", e->msg);
	return 0;
}

static int
kb_check(struct backend *b, backend_say say, struct berr *e)
{
	struct kstate		*s = st(b);
	const struct conf	*c = s->conf;
	json_t			*v = NULL;
	char			 a[320];
	int			 resolved;
	enum kind		 k;

	if (ready(s, e) == -1) {
		e->status = 400;
		return -2;
	}
	if (!c->link_keys.have_master) {
		berr_set(e, 400, "the kubernetes backend derives each sandbox's "
		    "link key from the master link key, and there is none "
		    "(links.key_file)");
		return -2;
	}
	if (c->runsc && c->kube.runtime_class == NULL) {
		berr_set(e, 400, "sandbox.runtime is runsc, which the kubernetes "
		    "backend cannot ask Podman for: set kubernetes.runtime_class "
		    "to the cluster's gVisor RuntimeClass (e.g. gvisor)");
		return -2;
	}
	if (kube_call(s->kube, "GET", "/version", NULL, &v, NULL, e) == -1)
		return -1;
	backend_sayf(say, 0, "Kubernetes %s at %s (%s), namespace %s",
	    json_string_value(json_object_get(v, "gitVersion")) != NULL
	    ? json_string_value(json_object_get(v, "gitVersion")) : "(unknown)",
	    s->kube->server, s->kube->where, c->kube.namespace);
	if (c->kube.user_namespace == KUBE_USERNS_AUTO)
		(void)userns_from(s, v);
	json_decref(v);
	for (k = K_POD; k <= K_NETPOL; k++)
		if (check_list(s, k, say, e) == -1)
			return -1;
	backend_sayf(say, 1, "WARNING: whether this cluster enforces NetworkPolicy "
	    "cannot be checked from here: without a network plugin that does "
	    "(Calico, Cilium, ...) sandboxes reach anything on the network "
	    "(docs/kubernetes.md)");
	backend_sayf(say, 1, "WARNING: sandbox process limits (limits.pids) are not "
	    "set per Pod on Kubernetes: the kubelet's podPidsLimit bounds "
	    "them");
	if (c->kube.runtime_class != NULL)
		backend_sayf(say, 0, "sandboxes run with runtimeClassName %s (a Pod is "
		    "refused where the cluster has no such RuntimeClass)",
		    c->kube.runtime_class);
	kspec_proxy_addr(c, a, sizeof(a), &resolved);
	if (resolved)
		backend_sayf(say, 0, "egress proxy %s at %s:%ld", c->kube.egress_host, a,
		    c->kube.egress_port);
	else
		backend_sayf(say, 1, "WARNING: the egress proxy %s does not resolve: "
		    "sandboxes get no way out until it does", c->kube.egress_host);
	return 0;
}

/* ---------------------------------------------------------------- new */

static void
kb_free(struct backend *b)
{
	if (b == NULL)
		return;
	kube_free(st(b)->kube);
	pthread_mutex_destroy(&st(b)->slot_lock);
	pthread_mutex_destroy(&st(b)->proxy_lock);
	pthread_mutex_destroy(&st(b)->size_lock);
	json_decref(st(b)->warned_size);
	free(b->state);
	free(b);
}

static const struct backend kube_ops = {
	.name = "kubernetes",
	.objects = "claim, network policy and Pod",
	.storage = "workspace claim",
	.check = kb_check,
	.ensure = kb_ensure,
	.stop = kb_stop,
	.remove = kb_remove,
	.registered = kb_registered,
	.inspect = kb_inspect,
	.list = kb_list,
	.export_ws = kb_export,
	.import_ws = kb_import,
	.exists = kb_exists,
	.describe = kb_describe,
	.users = backend_users,
	.logs = kb_logs,
	.doctor = kb_doctor,
	.refuses = kb_refuses,
	.label = kb_label,
	.used = kb_used,
	.free = kb_free,
};

/*
 * A configuration that cannot be used (no cluster, a bad kubeconfig) is
 * not an error here but in check, which says why and stops the start.
 */
struct backend *
kube_backend(const struct conf *c, void (*on_error)(const struct berr *))
{
	struct backend	*b;
	struct kstate	*s;

	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		free(b);
		return NULL;
	}
	s->conf = c;
	s->userns = -1;
	pthread_mutex_init(&s->slot_lock, NULL);
	pthread_mutex_init(&s->proxy_lock, NULL);
	pthread_mutex_init(&s->size_lock, NULL);
	s->kube = kube_new(c->kube.kubeconfig, getenv("VIVARIUM_KUBE_SA_DIR"),
	    KUBE_TIMEOUT_MS, &s->init_err);
	if (s->kube != NULL)
		s->kube->on_error = on_error;
	*b = kube_ops;
	b->state = s;
	return b;
}
