/*
 * Unit tests for supervisor/kspec.c: the PersistentVolumeClaim, the
 * NetworkPolicy and the Pod the kubernetes backend POSTs for one user.
 * These are the sandbox's walls on a cluster (no service account token,
 * non-root with its own uid, read-only root, no capabilities, seccomp,
 * limits, a memory /tmp, ingress only from the supervisor, egress only
 * to the proxy), so each is checked by value, and so is the secret.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../supervisor/kspec.c"

#define S(x)	((char *)(uintptr_t)(x))

static struct conf	 cf;
static struct user_conf	 big;
static struct kv	 extra[3];

static int
setup(void **state)
{
	memset(&cf, 0, sizeof(cf));
	cf.image = S("localhost/vivarium-sandbox:test");
	cf.tmp_size = 256ULL << 20;
	cf.stop_timeout = 7;
	cf.limits.memory = 2ULL << 30;
	cf.limits.cpus_milli = 2000;
	cf.limits.pids = 128;
	cf.limits.workspace = 5ULL << 30;
	snprintf(big.id, sizeof(big.id), "big");
	big.limits.memory = 8ULL << 30;
	big.limits.cpus_milli = 500;
	big.limits.pids = 512;
	big.limits.workspace = 20ULL << 30;
	cf.users = &big;
	cf.nusers = 1;
	/* sandbox.env, two of them trying to undo ours */
	extra[0].key = S("LANG");
	extra[0].value = S("C.UTF-8");
	extra[1].key = S("VIVARIUM_PORT");
	extra[1].value = S("off");
	extra[2].key = S("VIVARIUM_SOCKET");
	extra[2].value = S("/run/x.sock");
	cf.env = extra;
	cf.nenv = 3;
	cf.kube.namespace = S("sandboxes");
	cf.kube.agent_port = 8700;
	cf.kube.uid_base = 100000;
	cf.kube.ephemeral_storage = 1ULL << 30;
	cf.kube.egress_host = S("vivarium-egress");
	cf.kube.egress_port = 3128;
	cf.kube.egress_selector = S("app.kubernetes.io/name=vivarium-egress");
	cf.kube.supervisor_selector =
	    S("app.kubernetes.io/name=vivarium-supervisor,tier=front");
	cf.link_keys.have_master = 1;
	memset(cf.link_keys.master, 1, sizeof(cf.link_keys.master));
	cf.public_url = S("https://files.example.org");
	return 0;
}

/*
 * The value at a path of keys and indexes split at dots: the longest
 * prefix that is a key wins, so that "metadata.labels.vivarium.io/user"
 * finds the label whose name has dots.
 */
static const json_t *
at(const json_t *o, const char *path)
{
	char		 key[128];
	const json_t	*v;
	size_t		 n;

	while (o != NULL && *path != '\0') {
		if (json_is_array(o)) {
			n = strcspn(path, ".");
			o = json_array_get(o, strtoul(path, NULL, 10));
			path += n + (path[n] == '.');
			continue;
		}
		for (n = strlen(path); n > 0; n--) {
			if (path[n] != '\0' && path[n] != '.')
				continue;
			snprintf(key, sizeof(key), "%.*s", (int)n, path);
			if ((v = json_object_get(o, key)) != NULL)
				break;
		}
		if (n == 0)
			return NULL;
		o = v;
		path += n + (path[n] == '.');
	}
	return o;
}

static const char *
str(const json_t *o, const char *path)
{
	const json_t	*v = at(o, path);

	assert_non_null(v);
	return json_string_value(v);
}

static json_int_t
num(const json_t *o, const char *path)
{
	const json_t	*v = at(o, path);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static void
assert_false_at(const json_t *o, const char *path)
{
	assert_true(json_is_false(at(o, path)));
}

static void
assert_true_at(const json_t *o, const char *path)
{
	assert_true(json_is_true(at(o, path)));
}

/* The value of env variable name in the Pod's container, or NULL. */
static const char *
env_of(const json_t *pod, const char *name)
{
	const json_t	*e;
	size_t		 i, seen = 0;
	const char	*v = NULL;

	json_array_foreach(at(pod, "spec.containers.0.env"), i, e)
		if (strcmp(str(e, "name"), name) == 0) {
			v = str(e, "value");
			seen++;
		}
	assert_true(seen <= 1);
	return v;
}

static void
assert_labels(const json_t *labels, const char *user)
{
	assert_int_equal(json_object_size(labels), 3);
	assert_string_equal(str(labels, "app.kubernetes.io/managed-by"),
	    "vivarium");
	assert_string_equal(str(labels, "app.kubernetes.io/name"),
	    "vivarium-sandbox");
	assert_string_equal(str(labels, "vivarium.io/user"), user);
}

static void
test_names(void **state)
{
	struct kube_names	 n;

	assert_int_equal(kspec_names("alice", &n), 0);
	assert_string_equal(n.pod, "vivarium-alice");
	assert_string_equal(n.pvc, "vivarium-alice-workspace");
	assert_string_equal(n.netpol, "vivarium-alice");
	/* Bad ids never become names or objects. */
	assert_int_equal(kspec_names("../etc", &n), -1);
	assert_int_equal(kspec_names("Alice", &n), -1);
	assert_int_equal(kspec_names("", &n), -1);
	assert_null(kspec_pod(&cf, "a/b", 1, NULL, "x", 0));
	assert_null(kspec_pvc(&cf, "a b", 1));
	assert_null(kspec_netpol(&cf, "-x"));
}

static void
test_secret(void **state)
{
	char	 s[KSPEC_SECRET_HEX + 1], t[KSPEC_SECRET_HEX + 1];
	char	 got[KSPEC_SECRET_MAX + 1], key[LINK_KEY_HEX + 1];
	json_t	*p, *e = NULL, *env;
	size_t	 i;

	/* At random: 64 hex digits, never twice the same. */
	assert_int_equal(kspec_secret_new(s), 0);
	assert_int_equal(kspec_secret_new(t), 0);
	assert_int_equal(strlen(s), KSPEC_SECRET_HEX);
	assert_int_equal(strspn(s, "0123456789abcdef"), KSPEC_SECRET_HEX);
	assert_string_not_equal(s, t);
	/* Not derived from anything the sandbox holds: not its link key. */
	assert_int_equal(link_user_key_hex(&cf.link_keys, "alice", key), 0);
	assert_string_not_equal(s, key);

	/* Read back from the Pod it was made with. */
	p = kspec_pod(&cf, "alice", 1, NULL, s, 0);
	assert_int_equal(kspec_secret_of(p, got), 0);
	assert_string_equal(got, s);
	/* One the agent would refuse, or none, is none. */
	env = json_object_get(json_array_get(json_object_get(json_object_get(
	    p, "spec"), "containers"), 0), "env");
	json_array_foreach(env, i, e)
		if (strcmp(str(e, "name"), "VIVARIUM_AGENT_SECRET") == 0)
			break;
	assert_non_null(e);
	json_object_set_new(e, "value", json_string("short"));
	assert_int_equal(kspec_secret_of(p, got), -1);
	assert_string_equal(got, "");
	json_object_set_new(e, "value", json_string("0123456789abcdef0123"
	    "456789abcdef\r\nX-Evil: 1"));
	assert_int_equal(kspec_secret_of(p, got), -1);
	json_object_set_new(e, "value", json_string("0123456789abcdef0123"
	    "456789abcdef 0123"));
	assert_int_equal(kspec_secret_of(p, got), -1);
	json_object_del(e, "value");
	json_object_set_new(e, "valueFrom", json_object());
	assert_int_equal(kspec_secret_of(p, got), -1);
	json_array_clear(env);
	assert_int_equal(kspec_secret_of(p, got), -1);
	json_decref(p);
	assert_int_equal(kspec_secret_of(NULL, got), -1);
}

/* A Pod in a user namespace of its own: hostUsers false, the image's
 * user inside (0-65535 is all a Pod's namespace maps). */
static void
test_pod_userns(void **state)
{
	json_t		*p, *q;
	const json_t	*sc;

	p = kspec_pod(&cf, "alice", 3, "10.96.0.9", "s3cr3t", 1);
	assert_false_at(p, "spec.hostUsers");
	sc = at(p, "spec.securityContext");
	assert_true_at(sc, "runAsNonRoot");
	assert_int_equal(num(sc, "runAsUser"), 1000);
	assert_int_equal(num(sc, "runAsGroup"), 1000);
	assert_int_equal(num(sc, "fsGroup"), 1000);
	/* Another Pod than without: adopt replaces one made the other way. */
	q = kspec_pod(&cf, "alice", 3, "10.96.0.9", "s3cr3t", 0);
	assert_null(at(q, "spec.hostUsers"));
	assert_int_equal(num(q, "spec.securityContext.runAsUser"), 100003);
	assert_string_not_equal(kspec_hash_of(p), kspec_hash_of(q));
	json_decref(p);
	json_decref(q);
}

static void
test_pod_walls(void **state)
{
	json_t		*p;
	const json_t	*sc, *cs, *c;

	p = kspec_pod(&cf, "alice", 3, "10.96.0.9", "s3cr3t", 0);
	assert_non_null(p);
	assert_string_equal(str(p, "apiVersion"), "v1");
	assert_string_equal(str(p, "kind"), "Pod");
	assert_string_equal(str(p, "metadata.name"), "vivarium-alice");
	assert_string_equal(str(p, "metadata.namespace"), "sandboxes");
	assert_labels(at(p, "metadata.labels"), "alice");
	assert_false_at(p, "spec.automountServiceAccountToken");
	assert_false_at(p, "spec.enableServiceLinks");
	assert_string_equal(str(p, "spec.restartPolicy"), "Always");
	assert_int_equal(num(p, "spec.terminationGracePeriodSeconds"), 7);
	assert_null(at(p, "spec.serviceAccountName"));
	assert_null(at(p, "spec.hostNetwork"));
	assert_null(at(p, "spec.hostPID"));
	assert_null(at(p, "spec.runtimeClassName"));
	sc = at(p, "spec.securityContext");
	assert_true_at(sc, "runAsNonRoot");
	assert_int_equal(num(sc, "runAsUser"), 100003);
	assert_int_equal(num(sc, "runAsGroup"), 100003);
	assert_int_equal(num(sc, "fsGroup"), 100003);
	assert_string_equal(str(sc, "seccompProfile.type"), "RuntimeDefault");
	cs = at(p, "spec.containers");
	assert_int_equal(json_array_size(cs), 1);
	c = json_array_get(cs, 0);
	assert_string_equal(str(c, "name"), "sandbox");
	assert_string_equal(str(c, "image"), "localhost/vivarium-sandbox:test");
	sc = at(c, "securityContext");
	assert_false_at(sc, "allowPrivilegeEscalation");
	assert_true_at(sc, "readOnlyRootFilesystem");
	assert_true_at(sc, "runAsNonRoot");
	assert_null(at(sc, "privileged"));
	assert_null(at(sc, "capabilities.add"));
	assert_int_equal(json_array_size(at(sc, "capabilities.drop")), 1);
	assert_string_equal(str(sc, "capabilities.drop.0"), "ALL");
	assert_int_equal(num(c, "ports.0.containerPort"), 8700);
	assert_string_equal(str(c, "ports.0.protocol"), "TCP");
	assert_null(at(c, "ports.0.hostPort"));
	assert_string_equal(str(c, "readinessProbe.httpGet.path"), "/health");
	assert_int_equal(num(c, "readinessProbe.httpGet.port"), 8700);
	json_decref(p);

	/* The options: gVisor or Kata, another image, another port. */
	cf.kube.runtime_class = S("gvisor");
	cf.kube.image = S("registry.example.org/vivarium-sandbox:1");
	cf.kube.agent_port = 9000;
	p = kspec_pod(&cf, "alice", 1, NULL, "s3cr3t", 0);
	assert_string_equal(str(p, "spec.runtimeClassName"), "gvisor");
	assert_string_equal(str(p, "spec.containers.0.image"),
	    "registry.example.org/vivarium-sandbox:1");
	assert_int_equal(num(p, "spec.containers.0.ports.0.containerPort"),
	    9000);
	assert_int_equal(num(p, "spec.containers.0.readinessProbe.httpGet."
	    "port"), 9000);
	assert_string_equal(env_of(p, "VIVARIUM_PORT"), "9000");
	assert_int_equal(num(p, "spec.securityContext.runAsUser"), 100001);
	json_decref(p);
	cf.kube.runtime_class = NULL;
	cf.kube.image = NULL;
	cf.kube.agent_port = 8700;
}

static void
test_pod_limits_and_volumes(void **state)
{
	json_t		*p;
	const json_t	*r, *v, *m;

	p = kspec_pod(&cf, "big", 1, NULL, "s", 0);
	r = at(p, "spec.containers.0.resources");
	assert_string_equal(str(r, "limits.memory"), "8589934592");
	assert_string_equal(str(r, "limits.cpu"), "500m");
	assert_string_equal(str(r, "limits.ephemeral-storage"), "1073741824");
	/* Requests are the limits: nothing is overcommitted. */
	assert_true(json_equal(at(r, "limits"), at(r, "requests")));
	assert_true(at(r, "limits") != at(r, "requests"));
	json_decref(p);
	p = kspec_pod(&cf, "alice", 1, NULL, "s", 0);
	r = at(p, "spec.containers.0.resources");
	assert_string_equal(str(r, "limits.memory"), "2147483648");
	assert_string_equal(str(r, "limits.cpu"), "2000m");
	v = at(p, "spec.volumes");
	assert_int_equal(json_array_size(v), 2);
	assert_string_equal(str(v, "0.name"), "workspace");
	assert_string_equal(str(v, "0.persistentVolumeClaim.claimName"),
	    "vivarium-alice-workspace");
	assert_null(at(v, "0.persistentVolumeClaim.readOnly"));
	assert_string_equal(str(v, "1.name"), "tmp");
	assert_string_equal(str(v, "1.emptyDir.medium"), "Memory");
	assert_string_equal(str(v, "1.emptyDir.sizeLimit"), "268435456");
	m = at(p, "spec.containers.0.volumeMounts");
	assert_int_equal(json_array_size(m), 2);
	assert_string_equal(str(m, "0.name"), "workspace");
	assert_string_equal(str(m, "0.mountPath"), "/workspace");
	assert_string_equal(str(m, "1.name"), "tmp");
	assert_string_equal(str(m, "1.mountPath"), "/tmp");
	assert_string_equal(str(p, "spec.containers.0.workingDir"),
	    "/workspace");
	json_decref(p);
}

static void
test_pod_env(void **state)
{
	json_t	*p;
	char	 key[LINK_KEY_HEX + 1];

	p = kspec_pod(&cf, "alice", 1, "10.96.0.9", "s3cr3t", 0);
	assert_string_equal(env_of(p, "LANG"), "C.UTF-8");
	/* No passwd line for the Pod's uid: a login name all the same. */
	assert_string_equal(env_of(p, "USER"), "sandbox");
	assert_string_equal(env_of(p, "LOGNAME"), "sandbox");
	/* sandbox.env cannot undo ours: TCP, not a socket. */
	assert_string_equal(env_of(p, "VIVARIUM_HOST"), "0.0.0.0");
	assert_string_equal(env_of(p, "VIVARIUM_PORT"), "8700");
	assert_null(env_of(p, "VIVARIUM_SOCKET"));
	assert_string_equal(env_of(p, "VIVARIUM_AGENT_SECRET"), "s3cr3t");
	assert_null(env_of(p, "VIVARIUM_AGENT_SECRET_FILE"));
	/* The proxy by address, everything through it. */
	assert_string_equal(env_of(p, "http_proxy"), "http://10.96.0.9:3128");
	assert_string_equal(env_of(p, "HTTPS_PROXY"), "http://10.96.0.9:3128");
	assert_string_equal(env_of(p, "no_proxy"), "");
	assert_string_equal(env_of(p, "NO_PROXY"), "");
	/* The user's link key, never the master key. */
	assert_int_equal(link_user_key_hex(&cf.link_keys, "alice", key), 0);
	assert_string_equal(env_of(p, "VIVARIUM_LINK_KEY"), key);
	assert_string_equal(env_of(p, "VIVARIUM_LINK_USER"), "alice");
	assert_string_equal(env_of(p, "VIVARIUM_PUBLIC_URL"),
	    "https://files.example.org");
	json_decref(p);
	/* An IPv6 ClusterIP, as kspec_proxy_addr writes it. */
	p = kspec_pod(&cf, "alice", 1, "[fd00::9]", "s", 0);
	assert_string_equal(env_of(p, "https_proxy"), "http://[fd00::9]:3128");
	json_decref(p);
	p = kspec_pod(&cf, "alice", 1, NULL, "s", 0);
	assert_null(env_of(p, "http_proxy"));
	json_decref(p);
}

static void
test_pod_hash(void **state)
{
	json_t	*a, *b;
	char	 h[64];

	a = kspec_pod(&cf, "alice", 1, "10.96.0.9", "s", 0);
	b = kspec_pod(&cf, "alice", 1, "10.96.0.9", "s", 0);
	assert_non_null(kspec_hash_of(a));
	assert_int_equal(strlen(kspec_hash_of(a)), 32);
	assert_string_equal(kspec_hash_of(a), kspec_hash_of(b));
	snprintf(h, sizeof(h), "%s", kspec_hash_of(a));
	json_decref(b);
	/* The secret is no configuration: another one, the same Pod. */
	b = kspec_pod(&cf, "alice", 1, "10.96.0.9", "another", 0);
	assert_string_equal(kspec_hash_of(b), h);
	json_decref(b);
	/* Each of these makes another Pod: adopt replaces it. */
	b = kspec_pod(&cf, "alice", 2, "10.96.0.9", "s", 0);
	assert_string_not_equal(kspec_hash_of(b), h);
	json_decref(b);
	b = kspec_pod(&cf, "alice", 1, "10.96.0.10", "s", 0);
	assert_string_not_equal(kspec_hash_of(b), h);
	json_decref(b);
	cf.kube.image = S("other:1");
	b = kspec_pod(&cf, "alice", 1, "10.96.0.9", "s", 0);
	assert_string_not_equal(kspec_hash_of(b), h);
	json_decref(b);
	cf.kube.image = NULL;
	cf.limits.memory = 1ULL << 30;
	b = kspec_pod(&cf, "alice", 1, "10.96.0.9", "s", 0);
	assert_string_not_equal(kspec_hash_of(b), h);
	json_decref(b);
	cf.limits.memory = 2ULL << 30;
	json_decref(a);
}

static void
test_pvc(void **state)
{
	json_t	*p;

	p = kspec_pvc(&cf, "big", 4);
	assert_string_equal(str(p, "apiVersion"), "v1");
	assert_string_equal(str(p, "kind"), "PersistentVolumeClaim");
	assert_string_equal(str(p, "metadata.name"), "vivarium-big-workspace");
	assert_string_equal(str(p, "metadata.namespace"), "sandboxes");
	assert_labels(at(p, "metadata.labels"), "big");
	assert_string_equal(str(p, "metadata.annotations.vivarium.io/uid"),
	    "100004");
	assert_int_equal(json_array_size(at(p, "spec.accessModes")), 1);
	assert_string_equal(str(p, "spec.accessModes.0"), "ReadWriteOnce");
	assert_string_equal(str(p, "spec.resources.requests.storage"),
	    "21474836480");
	assert_null(at(p, "spec.storageClassName"));
	assert_int_equal(kspec_slot_of(&cf, p), 4);
	json_decref(p);
	cf.kube.storage_class = S("fast");
	p = kspec_pvc(&cf, "alice", 1);
	assert_string_equal(str(p, "spec.storageClassName"), "fast");
	assert_string_equal(str(p, "spec.resources.requests.storage"),
	    "5368709120");
	json_decref(p);
	cf.kube.storage_class = NULL;
}

static void
test_slots(void **state)
{
	json_t	*items;
	size_t	 i;
	static const char *const uids[] = { "100001", "100003", "bogus",
	    "99999", "100000", "100003x", "-100004" };

	items = json_array();
	assert_int_equal(kspec_free_slot(&cf, items), 1);
	for (i = 0; i < sizeof(uids) / sizeof(uids[0]); i++)
		json_array_append_new(items, json_pack("{s:{s:{s:s}}}",
		    "metadata", "annotations", KUBE_UID, uids[i]));
	/* A claim without the annotation holds no slot. */
	json_array_append_new(items, json_pack("{s:{s:s}}", "metadata",
	    "name", "x"));
	assert_int_equal(kspec_slot_of(&cf, json_array_get(items, 0)), 1);
	assert_int_equal(kspec_slot_of(&cf, json_array_get(items, 2)), 0);
	assert_int_equal(kspec_slot_of(&cf, json_array_get(items, 3)), 0);
	assert_int_equal(kspec_slot_of(&cf, json_array_get(items, 4)), 0);
	assert_int_equal(kspec_slot_of(&cf, json_array_get(items, 5)), 0);
	assert_int_equal(kspec_slot_of(&cf, json_array_get(items, 6)), 0);
	assert_int_equal(kspec_free_slot(&cf, items), 2);
	json_array_append_new(items, json_pack("{s:{s:{s:s}}}", "metadata",
	    "annotations", KUBE_UID, "100002"));
	assert_int_equal(kspec_free_slot(&cf, items), 4);
	json_decref(items);
}

static void
test_netpol(void **state)
{
	json_t		*p;
	const json_t	*s;

	p = kspec_netpol(&cf, "alice");
	assert_non_null(p);
	assert_string_equal(str(p, "apiVersion"), "networking.k8s.io/v1");
	assert_string_equal(str(p, "kind"), "NetworkPolicy");
	assert_string_equal(str(p, "metadata.name"), "vivarium-alice");
	assert_labels(at(p, "metadata.labels"), "alice");
	assert_int_equal(json_object_size(at(p, "metadata.annotations")), 1);
	assert_string_equal(str(p, "metadata.annotations.vivarium.io/spec-hash"),
	    kspec_hash_of(p));
	s = at(p, "spec");
	/* This user's Pod only, and never another user's. */
	assert_labels(at(s, "podSelector.matchLabels"), "alice");
	assert_int_equal(json_array_size(at(s, "policyTypes")), 2);
	assert_string_equal(str(s, "policyTypes.0"), "Ingress");
	assert_string_equal(str(s, "policyTypes.1"), "Egress");
	/* In: the supervisor, to the agent's port; nothing else. */
	assert_int_equal(json_array_size(at(s, "ingress")), 1);
	assert_int_equal(json_array_size(at(s, "ingress.0.from")), 1);
	assert_int_equal(json_object_size(at(s, "ingress.0.from.0")), 1);
	assert_int_equal(json_object_size(at(s,
	    "ingress.0.from.0.podSelector.matchLabels")), 2);
	assert_string_equal(str(s, "ingress.0.from.0.podSelector.matchLabels."
	    "app.kubernetes.io/name"), "vivarium-supervisor");
	assert_string_equal(str(s, "ingress.0.from.0.podSelector.matchLabels."
	    "tier"), "front");
	assert_int_equal(json_array_size(at(s, "ingress.0.ports")), 1);
	assert_string_equal(str(s, "ingress.0.ports.0.protocol"), "TCP");
	assert_int_equal(num(s, "ingress.0.ports.0.port"), 8700);
	/* Out: the proxy's port on the proxy's Pods; no DNS, nothing else. */
	assert_int_equal(json_array_size(at(s, "egress")), 1);
	assert_int_equal(json_array_size(at(s, "egress.0.to")), 1);
	assert_int_equal(json_object_size(at(s, "egress.0.to.0")), 1);
	assert_string_equal(str(s, "egress.0.to.0.podSelector.matchLabels."
	    "app.kubernetes.io/name"), "vivarium-egress");
	assert_null(at(s, "egress.0.to.0.ipBlock"));
	assert_int_equal(json_array_size(at(s, "egress.0.ports")), 1);
	assert_string_equal(str(s, "egress.0.ports.0.protocol"), "TCP");
	assert_int_equal(num(s, "egress.0.ports.0.port"), 3128);
	json_decref(p);
}

/* The policy's hash: the same configuration the same hash; each of the
 * selectors and ports another one, so ensure replaces the policy. */
static void
test_netpol_hash(void **state)
{
	json_t		*a, *b;
	char		 h[64];
	char		*sup = cf.kube.supervisor_selector;
	char		*egr = cf.kube.egress_selector;

	a = kspec_netpol(&cf, "alice");
	b = kspec_netpol(&cf, "alice");
	assert_non_null(kspec_hash_of(a));
	assert_int_equal(strlen(kspec_hash_of(a)), 32);
	assert_string_equal(kspec_hash_of(a), kspec_hash_of(b));
	snprintf(h, sizeof(h), "%s", kspec_hash_of(a));
	json_decref(a);
	json_decref(b);
	b = kspec_netpol(&cf, "bob");
	assert_string_not_equal(kspec_hash_of(b), h);
	json_decref(b);
	cf.kube.supervisor_selector = S("app.kubernetes.io/name=sup");
	b = kspec_netpol(&cf, "alice");
	assert_string_not_equal(kspec_hash_of(b), h);
	json_decref(b);
	cf.kube.supervisor_selector = sup;
	cf.kube.egress_selector = S("app.kubernetes.io/name=egr");
	b = kspec_netpol(&cf, "alice");
	assert_string_not_equal(kspec_hash_of(b), h);
	json_decref(b);
	cf.kube.egress_selector = egr;
	cf.kube.agent_port = 9000;
	b = kspec_netpol(&cf, "alice");
	assert_string_not_equal(kspec_hash_of(b), h);
	json_decref(b);
	cf.kube.agent_port = 8700;
	cf.kube.egress_port = 8080;
	b = kspec_netpol(&cf, "alice");
	assert_string_not_equal(kspec_hash_of(b), h);
	json_decref(b);
	cf.kube.egress_port = 3128;
	/* What the Pod's hash depends on does not touch the policy. */
	cf.limits.memory = 1ULL << 30;
	b = kspec_netpol(&cf, "alice");
	assert_string_equal(kspec_hash_of(b), h);
	json_decref(b);
	cf.limits.memory = 2ULL << 30;
}

static void
test_quantity(void **state)
{
	static const char *const bad[] = { "", "G", "5g", "5 Gi", "-5Gi",
	    "1.5Gi", "5e9", "500m", "5Gix", "16Ei", "99999999999999999999",
	    "5Zi" };
	size_t	 i;

	assert_true(kspec_quantity("5368709120") == 5368709120LL);
	assert_true(kspec_quantity("5Gi") == 5368709120LL);
	assert_true(kspec_quantity("5120Mi") == 5368709120LL);
	assert_true(kspec_quantity("5G") == 5000000000LL);
	assert_true(kspec_quantity("16Ki") == 16384);
	assert_true(kspec_quantity("3k") == 3000);
	assert_true(kspec_quantity("0") == 0);
	assert_true(kspec_quantity("7Ei") == 7LL << 60);
	assert_true(kspec_quantity(NULL) == -1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (kspec_quantity(bad[i]) != -1)
			fail_msg("accepted quantity \"%s\"", bad[i]);
}

static void
test_selectors(void **state)
{
	static const char *const bad[] = { "", "a", "=b", ",", "a==b",
	    "a=b c", "-a=b", "a=-b", "Pre/x=y", "a/=b", "/a=b",
	    "a=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
	    "a!=b", "a in (b)" };
	json_t	*m;
	size_t	 i;

	m = conf_match_labels("app.kubernetes.io/name=x, tier=front,e=");
	assert_non_null(m);
	assert_int_equal(json_object_size(m), 3);
	assert_string_equal(str(m, "tier"), "front");
	assert_string_equal(str(m, "e"), "");
	json_decref(m);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = conf_match_labels(bad[i]);
		if (m != NULL)
			fail_msg("accepted selector \"%s\"", bad[i]);
	}
}

static void
test_proxy_addr(void **state)
{
	char	 a[320];
	int	 resolved;

	cf.kube.egress_host = S("10.96.0.9");
	kspec_proxy_addr(&cf, a, sizeof(a), &resolved);
	assert_int_equal(resolved, 1);
	assert_string_equal(a, "10.96.0.9");
	cf.kube.egress_host = S("fd00::9");
	kspec_proxy_addr(&cf, a, sizeof(a), &resolved);
	assert_int_equal(resolved, 1);
	assert_string_equal(a, "[fd00::9]");
	cf.kube.egress_host = S("vivarium-egress");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_secret),
		cmocka_unit_test(test_pod_userns),
		cmocka_unit_test(test_pod_walls),
		cmocka_unit_test(test_pod_limits_and_volumes),
		cmocka_unit_test(test_pod_env),
		cmocka_unit_test(test_pod_hash),
		cmocka_unit_test(test_pvc),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_netpol),
		cmocka_unit_test(test_netpol_hash),
		cmocka_unit_test(test_quantity),
		cmocka_unit_test(test_selectors),
		cmocka_unit_test(test_proxy_addr),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
