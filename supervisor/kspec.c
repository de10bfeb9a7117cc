/*
 * kspec.c: what one user's Kubernetes objects are to be, as the JSON
 * bodies POSTed to the API server: a PersistentVolumeClaim for the
 * workspace, a NetworkPolicy that walls the Pod in, and the Pod.  Pure
 * but for kspec_proxy_addr (DNS): no API server, no clock, so that
 * backend_kube.c and `vivariumctl render --kubernetes` build the same
 * objects, and the unit tests check every wall by value.
 */
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sha256.h"
#include "kube.h"
#include "banned.h"

#define POD_CONTAINER	"sandbox"
#define POD_LOGIN	"sandbox"	/* the image's user (Containerfile) */

int
kspec_names(const char *user, struct kube_names *n)
{
	if (user_id_valid(user, strlen(user)) == -1)
		return -1;
	snprintf(n->pod, sizeof(n->pod), "vivarium-%s", user);
	snprintf(n->pvc, sizeof(n->pvc), "vivarium-%s-workspace", user);
	snprintf(n->netpol, sizeof(n->netpol), "vivarium-%s", user);
	return 0;
}

json_t *
kspec_labels(const char *user)
{
	return json_pack("{s:s, s:s, s:s}", KUBE_MANAGED_BY, KUBE_MANAGER,
	    KUBE_NAME, KUBE_APP, KUBE_USER, user);
}

const char *
kspec_image(const struct conf *c)
{
	return c->kube.image != NULL ? c->kube.image : c->image;
}

int
kspec_secret_new(char out[KSPEC_SECRET_HEX + 1])
{
	unsigned char	 r[KSPEC_SECRET_HEX / 2];

	out[0] = '\0';
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -1;
	hex_encode(r, sizeof(r), out);
	memset(r, 0, sizeof(r));
	return 0;
}

/* The env entry of the agent's secret in a Pod (borrowed), or NULL. */
static json_t *
secret_entry(const json_t *pod)
{
	const json_t	*ctr;
	json_t		*e;
	const char	*name;
	size_t		 i;

	ctr = json_array_get(json_object_get(json_object_get(pod, "spec"),
	    "containers"), 0);
	json_array_foreach(json_object_get(ctr, "env"), i, e) {
		name = json_string_value(json_object_get(e, "name"));
		if (name != NULL && strcmp(name, KSPEC_SECRET_ENV) == 0)
			return e;
	}
	return NULL;
}

int
kspec_secret_of(const json_t *pod, char out[KSPEC_SECRET_MAX + 1])
{
	const char	*v;
	size_t		 i, n;

	out[0] = '\0';
	v = json_string_value(json_object_get(secret_entry(pod), "value"));
	if (v == NULL || (n = strlen(v)) < 32 || n > KSPEC_SECRET_MAX)
		return -1;
	/* What the agent takes and a header line can carry. */
	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] <= ' ' || (unsigned char)v[i] > '~')
			return -1;
	memcpy(out, v, n + 1);
	return 0;
}

long
kspec_uid(const struct conf *c, long slot)
{
	return c->kube.uid_base + slot;
}

long
kspec_slot_of(const struct conf *c, const json_t *pvc)
{
	const char	*v;
	char		*end;
	long		 uid;

	v = json_string_value(json_object_get(json_object_get(
	    json_object_get(pvc, "metadata"), "annotations"), KUBE_UID));
	if (v == NULL || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	uid = strtol(v, &end, 10);
	if (*end != '\0' || errno != 0 || uid <= c->kube.uid_base
	    || uid - c->kube.uid_base > (1L << 30) || uid > KSPEC_ID_MAX)
		return 0;
	return uid - c->kube.uid_base;
}

/*
 * Lowest free first: the slots stay dense, so uid_base + the number of
 * users bounds the ids in use.  Quadratic in the number of claims, which
 * is the number of users of one namespace: hundreds.
 */
long
kspec_free_slot(const struct conf *c, const json_t *items)
{
	const json_t	*it;
	size_t		 i;
	long		 slot;
	int		 taken;

	for (slot = 1; ; slot++) {
		taken = 0;
		json_array_foreach(items, i, it)
			if (kspec_slot_of(c, it) == slot) {
				taken = 1;
				break;
			}
		if (!taken)
			return slot;
	}
}

const char *
kspec_user_of(const json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(
	    json_object_get(obj, "metadata"), "labels"), KUBE_USER));
}

const char *
kspec_hash_of(const json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(
	    json_object_get(obj, "metadata"), "annotations"), KUBE_SPEC_HASH));
}

static json_t *
metadata(const struct conf *c, const char *name, const char *user)
{
	return json_pack("{s:s, s:s, s:o}", "name", name, "namespace",
	    c->kube.namespace, "labels", kspec_labels(user));
}

/* Quantities as plain integers (bytes), which the API takes as they are. */
static json_t *
quantity(unsigned long long v)
{
	char	 s[32];

	snprintf(s, sizeof(s), "%llu", v);
	return json_string(s);
}

/*
 * A storage quantity as the API server gives it back (it rewrites ours in
 * canonical form, 5368709120 as "5Gi"): whole digits and an optional
 * binary (Ki..Ei) or decimal (k..E) suffix.  Bytes, or -1 for anything
 * else (fractions, exponents, millis: never a claim size of ours).
 */
long long
kspec_quantity(const char *q)
{
	static const struct {
		const char	*sfx;
		int		 base, exp;
	} units[] = {
		{ "", 1, 0 }, { "Ki", 1024, 1 }, { "Mi", 1024, 2 },
		{ "Gi", 1024, 3 }, { "Ti", 1024, 4 }, { "Pi", 1024, 5 },
		{ "Ei", 1024, 6 }, { "k", 1000, 1 }, { "M", 1000, 2 },
		{ "G", 1000, 3 }, { "T", 1000, 4 }, { "P", 1000, 5 },
		{ "E", 1000, 6 },
	};
	unsigned long long	 v = 0;
	size_t			 i;
	int			 e;

	if (q == NULL || *q < '0' || *q > '9')
		return -1;
	for (; *q >= '0' && *q <= '9'; q++) {
		if (v > (unsigned long long)(LLONG_MAX - 9) / 10)
			return -1;
		v = v * 10 + (unsigned long long)(*q - '0');
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(q, units[i].sfx) != 0)
			continue;
		for (e = 0; e < units[i].exp; e++) {
			if (v > (unsigned long long)LLONG_MAX / (unsigned)
			    units[i].base)
				return -1;
			v *= (unsigned)units[i].base;
		}
		return (long long)v;
	}
	return -1;
}

json_t *
kspec_pvc(const struct conf *c, const char *user, long slot)
{
	const struct limits	*l = conf_limits(c, user);
	struct kube_names	 n;
	json_t			*pvc, *md;
	char			 uid[32];

	if (kspec_names(user, &n) == -1)
		return NULL;
	if ((md = metadata(c, n.pvc, user)) == NULL)
		return NULL;
	/* The uid, not the slot: the files on the claim are its. */
	snprintf(uid, sizeof(uid), "%ld", kspec_uid(c, slot));
	json_object_set_new(md, "annotations", json_pack("{s:s}", KUBE_UID,
	    uid));
	pvc = json_pack("{s:s, s:s, s:o, s:{s:[s], s:{s:{s:o}}}}",
	    "apiVersion", "v1", "kind", "PersistentVolumeClaim",
	    "metadata", md,
	    "spec", "accessModes", "ReadWriteOnce",
		"resources", "requests", "storage", quantity(l->workspace));
	if (pvc != NULL && c->kube.storage_class != NULL)
		json_object_set_new(json_object_get(pvc, "spec"),
		    "storageClassName", json_string(c->kube.storage_class));
	return pvc;
}

/*
 * The hash of what an object is made of (its spec and labels), so that
 * ensure sees a Pod or a NetworkPolicy made from another configuration
 * (image, limits, uid, proxy; selectors, ports) and replaces it.  Sorted
 * keys: the same spec always gives the same text.
 */
static void
spec_hash(const json_t *obj, char out[2 * SHA256_LEN + 1])
{
	unsigned char	 h[SHA256_LEN];
	struct sha256	 s;
	char		*text;

	sha256_init(&s);
	text = json_dumps(json_object_get(obj, "spec"), JSON_COMPACT
	    | JSON_SORT_KEYS);
	if (text != NULL)
		sha256_update(&s, text, strlen(text));
	free(text);
	text = json_dumps(json_object_get(json_object_get(obj, "metadata"),
	    "labels"), JSON_COMPACT | JSON_SORT_KEYS);
	if (text != NULL)
		sha256_update(&s, text, strlen(text));
	free(text);
	sha256_final(&s, h);
	/* 16 bytes are plenty to tell configurations apart. */
	hex_encode(h, 16, out);
}

/*
 * Only the supervisor may reach the agent's port, and the Pod may reach
 * only the proxy's: no DNS either (the supervisor gives the proxy by
 * address), so names outside cannot leak what the sandbox holds.
 */
json_t *
kspec_netpol(const struct conf *c, const char *user)
{
	struct kube_names	 n;
	json_t			*sup, *egr, *np;
	char			 hash[2 * SHA256_LEN + 1];

	if (kspec_names(user, &n) == -1)
		return NULL;
	/* Checked by conf_load: these are selectors. */
	sup = conf_match_labels(c->kube.supervisor_selector);
	egr = conf_match_labels(c->kube.egress_selector);
	if (sup == NULL || egr == NULL) {
		json_decref(sup);
		json_decref(egr);
		return NULL;
	}
	np = json_pack("{s:s, s:s, s:o, s:{s:{s:{s:s, s:s, s:s}}, s:[s, s],"
	    " s:[{s:[{s:{s:o}}], s:[{s:s, s:I}]}],"
	    " s:[{s:[{s:{s:o}}], s:[{s:s, s:I}]}]}}",
	    "apiVersion", "networking.k8s.io/v1", "kind", "NetworkPolicy",
	    "metadata", metadata(c, n.netpol, user),
	    "spec",
		"podSelector", "matchLabels", KUBE_MANAGED_BY, KUBE_MANAGER,
		    KUBE_NAME, KUBE_APP, KUBE_USER, user,
		"policyTypes", "Ingress", "Egress",
		"ingress", "from", "podSelector", "matchLabels", sup,
		    "ports", "protocol", "TCP",
		    "port", (json_int_t)c->kube.agent_port,
		"egress", "to", "podSelector", "matchLabels", egr,
		    "ports", "protocol", "TCP",
		    "port", (json_int_t)c->kube.egress_port);
	if (np == NULL)
		return NULL;
	/* As on Pods: ensure replaces a policy whose hash differs, so a
	 * changed selector or port reaches the users who have one. */
	spec_hash(np, hash);
	json_object_set_new(json_object_get(np, "metadata"), "annotations",
	    json_pack("{s:s}", KUBE_SPEC_HASH, hash));
	return np;
}

/*
 * The Podman sandbox's environment (spec.c's pieces: sandbox.env, the
 * proxy, the file links) with the agent on TCP instead of a socket, and
 * its secret.  As in spec.c, ours come last: sandbox.env cannot undo
 * them.  As a Pod's [{name, value}].
 */
static json_t *
pod_env(const struct conf *c, const char *user, const char *proxy_addr,
    const char *secret)
{
	json_t		*env, *px, *arr, *v;
	const char	*k;
	char		 port[16];
	size_t		 i;

	if ((env = json_object()) == NULL)
		return NULL;
	/*
	 * The Pod's uid has no passwd line (Podman adds one, a kubelet does
	 * not), so getpass.getuser() and tools that want a login name would
	 * fail: they get the image's user name, which sandbox.env may change.
	 */
	json_object_set_new(env, "USER", json_string(POD_LOGIN));
	json_object_set_new(env, "LOGNAME", json_string(POD_LOGIN));
	for (i = 0; i < c->nenv; i++)
		json_object_set_new(env, c->env[i].key,
		    json_string(c->env[i].value));
	snprintf(port, sizeof(port), "%ld", c->kube.agent_port);
	json_object_set_new(env, "VIVARIUM_HOST", json_string("0.0.0.0"));
	json_object_set_new(env, "VIVARIUM_PORT", json_string(port));
	/* A unix socket does not cross nodes: none here. */
	json_object_del(env, "VIVARIUM_SOCKET");
	json_object_set_new(env, KSPEC_SECRET_ENV, json_string(secret));
	if (proxy_addr != NULL) {
		px = sandbox_proxy_env(proxy_addr, c->kube.egress_port);
		json_object_update(env, px);
		json_decref(px);
	}
	sandbox_link_env(c, user, env);
	arr = json_array();
	json_object_foreach(env, k, v)
		json_array_append_new(arr, json_pack("{s:s, s:O}", "name", k,
		    "value", v));
	json_decref(env);
	return arr;
}

/* Requests equal to limits: the Guaranteed class, never evicted first. */
static json_t *
resources(const struct conf *c, const struct limits *l)
{
	char	 cpu[32];
	json_t	*lim;

	snprintf(cpu, sizeof(cpu), "%ldm", l->cpus_milli);
	lim = json_pack("{s:o, s:s, s:o}", "memory", quantity(l->memory),
	    "cpu", cpu, "ephemeral-storage",
	    quantity(c->kube.ephemeral_storage));
	/* A copy: the two are edited apart by anyone who reads them back. */
	return json_pack("{s:o, s:o}", "limits", lim, "requests",
	    json_deep_copy(lim));
}

json_t *
kspec_pod(const struct conf *c, const char *user, long slot,
    const char *proxy_addr, const char *secret, int userns)
{
	const struct limits	*l = conf_limits(c, user);
	struct kube_names	 n;
	json_t			*pod, *spec, *env;
	json_int_t		 uid = (json_int_t)kspec_uid(c, slot);
	json_int_t		 port = (json_int_t)c->kube.agent_port;
	char			 hash[2 * SHA256_LEN + 1];

	/*
	 * In a user namespace of its own the Pod's ids are 0-65535, which the
	 * kubelet maps onto host ids no other Pod has: every user may be the
	 * image's user inside, and the claim is idmapped to it.
	 */
	if (userns)
		uid = KSPEC_USERNS_ID;
	/* The secret is no configuration: the hash is made without it. */
	if (kspec_names(user, &n) == -1
	    || (env = pod_env(c, user, proxy_addr, "")) == NULL)
		return NULL;
	pod = json_pack("{s:s, s:s, s:o, s:{s:b, s:b, s:s, s:I,"
	    " s:{s:b, s:I, s:I, s:I, s:{s:s}},"
	    " s:[{s:s, s:s, s:s, s:o,"
	    "  s:[{s:s, s:I, s:s}],"
	    "  s:{s:{s:s, s:I}, s:I, s:I, s:I},"
	    "  s:o,"
	    "  s:{s:b, s:b, s:{s:[s]}, s:b},"
	    "  s:[{s:s, s:s}, {s:s, s:s}]}],"
	    " s:[{s:s, s:{s:s}}, {s:s, s:{s:s, s:o}}]}}",
	    "apiVersion", "v1", "kind", "Pod",
	    "metadata", metadata(c, n.pod, user),
	    "spec",
		/* Nothing in the sandbox may talk to the API server. */
		"automountServiceAccountToken", 0,
		"enableServiceLinks", 0,
		"restartPolicy", "Always",
		"terminationGracePeriodSeconds", (json_int_t)c->stop_timeout,
		"securityContext",
		    "runAsNonRoot", 1, "runAsUser", uid, "runAsGroup", uid,
		    "fsGroup", uid,
		    "seccompProfile", "type", "RuntimeDefault",
		"containers",
		    "name", POD_CONTAINER, "image", kspec_image(c),
		    "workingDir", "/workspace", "env", env,
		    "ports", "name", "agent", "containerPort", port,
			"protocol", "TCP",
		    "readinessProbe", "httpGet", "path", "/health", "port", port,
			"periodSeconds", (json_int_t)1,
			"timeoutSeconds", (json_int_t)2,
			"failureThreshold", (json_int_t)3,
		    "resources", resources(c, l),
		    "securityContext", "allowPrivilegeEscalation", 0,
			"readOnlyRootFilesystem", 1,
			"capabilities", "drop", "ALL",
			"runAsNonRoot", 1,
		    "volumeMounts", "name", "workspace", "mountPath",
			"/workspace", "name", "tmp", "mountPath", "/tmp",
		"volumes",
		    "name", "workspace", "persistentVolumeClaim", "claimName",
			n.pvc,
		    "name", "tmp", "emptyDir", "medium", "Memory",
			"sizeLimit", quantity(c->tmp_size));
	if (pod == NULL)
		return NULL;
	spec = json_object_get(pod, "spec");
	if (c->kube.runtime_class != NULL)
		json_object_set_new(spec, "runtimeClassName",
		    json_string(c->kube.runtime_class));
	if (userns)
		json_object_set_new(spec, "hostUsers", json_false());
	spec_hash(pod, hash);
	json_object_set_new(json_object_get(pod, "metadata"), "annotations",
	    json_pack("{s:s}", KUBE_SPEC_HASH, hash));
	if (json_object_set_new(secret_entry(pod), "value",
	    json_string(secret)) == -1) {
		json_decref(pod);
		return NULL;
	}
	return pod;
}

void
kspec_proxy_addr(const struct conf *c, char *dst, size_t len, int *resolved)
{
	struct addrinfo	 hints, *res = NULL;
	char		 a[INET6_ADDRSTRLEN];
	const void	*in = NULL;

	*resolved = 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(c->kube.egress_host, NULL, &hints, &res) == 0
	    && res != NULL) {
		if (res->ai_family == AF_INET)
			in = &((struct sockaddr_in *)(void *)
			    res->ai_addr)->sin_addr;
		else if (res->ai_family == AF_INET6)
			in = &((struct sockaddr_in6 *)(void *)
			    res->ai_addr)->sin6_addr;
		if (in != NULL && inet_ntop(res->ai_family, in, a,
		    sizeof(a)) != NULL) {
			snprintf(dst, len, res->ai_family == AF_INET6 ? "[%s]"
			    : "%s", a);
			*resolved = 1;
		}
	}
	if (res != NULL)
		freeaddrinfo(res);
	if (!*resolved)
		snprintf(dst, len, "%s", c->kube.egress_host);
}
