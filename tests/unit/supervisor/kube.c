/*
 * Unit tests for supervisor/kube.c (the API client) and backend_kube.c
 * (the kubernetes backend) against kube_server.h, a scripted fake API
 * server on loopback: kubeconfig and in-cluster configuration, the token
 * re-read at every request and never in a message, Status errors as
 * sentences naming the RBAC verb and resource, watches (events, 410,
 * the end of a stream), and ensure's order and answer.  The full fake
 * with TLS, watch and a kubelet running real agents is tests/k8s/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "shell.h"
#include "supervisor/kube_server.h"

#include "../../../supervisor/backend_kube.c"

#define S(x)	((char *)(uintptr_t)(x))

static char	 dir[] = "/tmp/viv-kube-test-XXXXXX";

static int
setup(void **state)
{
	assert_non_null(mkdtemp(dir));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

static int
teardown(void **state)
{
	sh("rm -rf %s", dir);
	curl_global_cleanup();
	return 0;
}

static const char *
write_file(const char *name, const char *text)
{
	static char	 path[512];
	FILE		*f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	return path;
}

/* A kubeconfig for server with the user's lines under "user:". */
static const char *
kubeconfig(const char *server, const char *user)
{
	char	 text[4096];

	snprintf(text, sizeof(text),
	    "apiVersion: v1\n"
	    "kind: Config\n"
	    "preferences: {}\n"
	    "current-context: test\n"
	    "contexts:\n"
	    "- name: other\n"
	    "  context: {cluster: nowhere, user: nobody}\n"
	    "- name: test\n"
	    "  context:\n"
	    "    cluster: c1\n"
	    "    user: u1\n"
	    "    namespace: ignored\n"
	    "clusters:\n"
	    "- name: c1\n"
	    "  cluster:\n"
	    "    server: %s\n"
	    "    certificate-authority: pki/ca.crt\n"
	    "users:\n"
	    "- name: u1\n"
	    "  user:\n%s", server, user);
	return write_file("kubeconfig", text);
}

static void
test_kubeconfig(void **state)
{
	struct kube	*k;
	struct berr	 e;
	char		 want[600];

	k = kube_new(kubeconfig("https://10.0.0.1:6443/", "    token: "
	    "abc.def\n"), NULL, 1000, &e);
	assert_non_null(k);
	assert_string_equal(k->server, "https://10.0.0.1:6443");
	snprintf(want, sizeof(want), "%s/pki/ca.crt", dir);
	assert_string_equal(k->ca_file, want);
	assert_string_equal(k->token, "abc.def");
	assert_null(k->token_file);
	kube_free(k);

	/* The -data forms, base64 over several lines, win over files. */
	k = kube_new(kubeconfig("https://k8s.example.org",
	    "    client-certificate-data: LS0tLS1CRUdJTiBDRVJU\n"
	    "    client-certificate: ignored.crt\n"
	    "    client-key-data: a2V5\n"), NULL, 1000, &e);
	assert_non_null(k);
	assert_int_equal(k->cert_len, 15);
	assert_memory_equal(k->cert_data, "-----BEGIN CERT", 15);
	assert_null(k->cert_file);
	assert_int_equal(k->key_len, 3);
	assert_memory_equal(k->key_data, "key", 3);
	kube_free(k);

	/* A token file that cannot be read is said at once. */
	assert_null(kube_new(kubeconfig("https://10.0.0.1",
	    "    tokenFile: missing-token\n"), NULL, 1000, &e));
	assert_non_null(strstr(e.msg, "missing-token"));
	/* Plugins are not run; plain HTTP only on this host. */
	assert_null(kube_new(kubeconfig("https://10.0.0.1",
	    "    exec:\n      command: aws\n"), NULL, 1000, &e));
	assert_int_equal(e.status, 400);
	assert_non_null(strstr(e.msg, "plugin"));
	assert_null(kube_new(kubeconfig("http://10.0.0.1:8080", "    token: "
	    "t\n"), NULL, 1000, &e));
	assert_non_null(strstr(e.msg, "must be https://"));
	assert_null(kube_new(kubeconfig("https://10.0.0.1",
	    "    client-key-data: \"%%%%\"\n"), NULL, 1000, &e));
	assert_non_null(strstr(e.msg, "not base64"));
	assert_null(kube_new(write_file("kubeconfig", "apiVersion: v1\n"),
	    NULL, 1000, &e));
	assert_non_null(strstr(e.msg, "no current-context"));
	assert_null(kube_new(write_file("kubeconfig", "current-context: x\n"),
	    NULL, 1000, &e));
	assert_non_null(strstr(e.msg, "no context \"x\""));
}

static void
test_in_cluster(void **state)
{
	struct kube	*k;
	struct berr	 e;
	char		 want[600];

	write_file("token", "sa-token\n");
	write_file("ca.crt", "-----BEGIN CERTIFICATE-----\n");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
	assert_non_null(k = kube_new(NULL, dir, 1000, &e));
	assert_string_equal(k->server, "https://[fd00::1]:6443");
	snprintf(want, sizeof(want), "%s/ca.crt", dir);
	assert_string_equal(k->ca_file, want);
	snprintf(want, sizeof(want), "%s/token", dir);
	assert_string_equal(k->token_file, want);
	assert_string_equal(k->where, "in-cluster");
	kube_free(k);
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_null(kube_new(NULL, dir, 1000, &e));
	assert_non_null(strstr(e.msg, "KUBERNETES_SERVICE_HOST"));
	unsetenv("KUBERNETES_SERVICE_PORT");
}

static struct kube *
fake_kube(int port)
{
	struct kube	*k;
	struct berr	 e;
	char		 server[64];

	snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
	write_file("sa-token", "tok-one\n");
	k = kube_new(kubeconfig(server, "    tokenFile: sa-token\n"), NULL,
	    5000, &e);
	if (k == NULL)
		fail_msg("%s", e.msg);
	return k;
}

#define FORBIDDEN \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\"," \
	"\"message\":\"networkpolicies.networking.k8s.io is forbidden: User " \
	"\\\"system:serviceaccount:ns:sv\\\" cannot create resource " \
	"\\\"networkpolicies\\\"\",\"reason\":\"Forbidden\",\"code\":403}"
#define EXISTS \
	"{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods " \
	"\\\"vivarium-alice\\\" already exists\",\"reason\":\"AlreadyExists\"," \
	"\"code\":409}"

static void
test_calls(void **state)
{
	static struct kfake_route r[] = {
		{ "GET", "/version", 200, "{\"gitVersion\":\"v1.29.2\"}", 0, 0 },
		{ "POST", "/apis/networking.k8s.io/v1/namespaces/ns/"
		    "networkpolicies", 403, FORBIDDEN, 0, 0 },
		{ "POST", "/api/v1/namespaces/ns/pods", 409, EXISTS, 0, 0 },
		{ "GET", "/api/v1/namespaces/ns/pods?", 401, "{\"kind\":"
		    "\"Status\",\"message\":\"Unauthorized\",\"code\":401}", 0, 0 },
		{ "GET", "/notjson", 200, "{oops", 0, 0 },
		{ NULL, NULL, 0, NULL, 0, 0 },
	};
	struct kube	*k;
	struct berr	 e;
	json_t		*v = NULL, *body;
	long		 status;
	int		 port;

	port = kfake_start(r);
	k = fake_kube(port);
	assert_int_equal(kube_call(k, "GET", "/version", NULL, &v, &status,
	    &e), 0);
	assert_int_equal(status, 200);
	assert_string_equal(json_string_value(json_object_get(v,
	    "gitVersion")), "v1.29.2");
	json_decref(v);
	assert_string_equal(kfake_req(0).authorization, "Bearer tok-one");
	/* A rotated token is used from the next request on. */
	write_file("sa-token", "tok-two");
	assert_int_equal(kube_call(k, "GET", "/version", NULL, NULL, NULL, &e),
	    0);
	assert_string_equal(kfake_req(1).authorization, "Bearer tok-two");

	/* 403: which verb on which resource, for the Role. */
	body = json_pack("{s:s}", "kind", "NetworkPolicy");
	assert_int_equal(kube_call(k, "POST", "/apis/networking.k8s.io/v1/"
	    "namespaces/ns/networkpolicies", body, NULL, &status, &e), -1);
	assert_int_equal(status, 403);
	assert_int_equal(e.status, 403);
	assert_string_equal(e.cause, "Forbidden");
	assert_non_null(strstr(e.msg, "the verb \"create\" on "
	    "\"networkpolicies\" of API group \"networking.k8s.io\""));
	assert_non_null(strstr(e.msg, "in namespace ns"));
	assert_null(strstr(e.msg, "tok-"));
	assert_string_equal(kfake_req(2).body, "{\"kind\":\"NetworkPolicy\"}");
	json_decref(body);
	/* 409 AlreadyExists: the reason, for "someone made it". */
	assert_int_equal(kube_call(k, "POST", "/api/v1/namespaces/ns/pods",
	    NULL, NULL, &status, &e), -1);
	assert_int_equal(status, 409);
	assert_string_equal(e.cause, "AlreadyExists");
	assert_non_null(strstr(e.msg, "already exists"));
	/* 401: the token, without saying it. */
	assert_int_equal(kube_call(k, "GET", "/api/v1/namespaces/ns/pods?"
	    "labelSelector=a%3Db", NULL, NULL, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "does not accept our credentials"));
	assert_non_null(strstr(e.msg, "list pods"));
	assert_null(strstr(e.msg, "tok-"));
	assert_int_equal(kube_call(k, "GET", "/notjson", NULL, &v, NULL, &e),
	    -1);
	assert_non_null(strstr(e.msg, "not JSON"));
	kfake_stop();
	/* Nobody there: status 0, which the pool answers with 503. */
	assert_int_equal(kube_call(k, "GET", "/version", NULL, NULL, NULL, &e),
	    -1);
	assert_int_equal(e.status, 0);
	assert_non_null(strstr(e.msg, "not reachable"));
	kube_free(k);
}

static void
test_status_words(void **state)
{
	struct berr	 e;
	const char	*body;

	kube_status_err(&e, "DELETE", "/api/v1/namespaces/sb/"
	    "persistentvolumeclaims/vivarium-bob-workspace", 403, "", 0);
	assert_non_null(strstr(e.msg, "forbids us to delete "
	    "persistentvolumeclaims vivarium-bob-workspace in namespace sb"));
	kube_status_err(&e, "GET", "/api/v1/namespaces/sb/pods?watch=1&"
	    "fieldSelector=metadata.name%3Dx", 403, "not json", 8);
	assert_non_null(strstr(e.msg, "the verb \"watch\" on \"pods\""));
	body = "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"message\":"
	    "\"pods \\\"vivarium-x\\\" not found\",\"code\":404}";
	kube_status_err(&e, "GET", "/api/v1/namespaces/sb/pods/vivarium-x",
	    404, body, strlen(body));
	assert_string_equal(e.cause, "NotFound");
	assert_non_null(strstr(e.msg, "404 NotFound to get pods vivarium-x"));
}

struct seen {
	int	 events;
	int	 stop_at;
};

static int
count_event(void *arg, const char *type, const json_t *obj, struct berr *e)
{
	struct seen	*s = arg;

	assert_true(json_is_object(obj));
	return ++s->events == s->stop_at;
}

#define EV(t)	"{\"type\":\"" t "\",\"object\":{\"kind\":\"Pod\"}}\n"

static void
test_watch(void **state)
{
	static struct kfake_route r[] = {
		{ "GET", "/w/three", 200, EV("ADDED") EV("MODIFIED")
		    "{\"type\":\"BOOKMARK\",\"object\":{}}\n"
		    "{\"type\":\"DELETED\",\"object\":{}}", 0, 0 },
		{ "GET", "/w/gone", 200, EV("MODIFIED") "{\"type\":\"ERROR\","
		    "\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":"
		    "\"Expired\"}}\n", 0, 0 },
		{ "GET", "/w/http410", 410, "{\"kind\":\"Status\",\"code\":410}",
		    0, 0 },
		{ "GET", "/w/error", 200, "{\"type\":\"ERROR\",\"object\":"
		    "{\"kind\":\"Status\",\"code\":500,\"message\":\"etcd\"}}\n",
		    0, 0 },
		{ "GET", "/w/garbage", 200, EV("ADDED") "not json\n", 0, 0 },
		{ "GET", "/w/forbidden", 403, FORBIDDEN, 0, 0 },
		{ "GET", "/w/cut", 200, "CUT:" EV("ADDED"), 0, 0 },
		{ NULL, NULL, 0, NULL, 0, 0 },
	};
	struct kube	*k;
	struct berr	 e;
	struct seen	 s;

	k = fake_kube(kfake_start(r));
	/* Every event, the last one without its newline; then the end. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(kube_watch(k, "/w/three", 5000, count_event, &s, &e),
	    KW_ENDED);
	assert_int_equal(s.events, 3);
	/* The callback ends it. */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(kube_watch(k, "/w/three", 5000, count_event, &s, &e),
	    KW_DONE);
	assert_int_equal(s.events, 2);
	/* 410 in the stream or as the answer: list again. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(kube_watch(k, "/w/gone", 5000, count_event, &s, &e),
	    KW_GONE);
	assert_int_equal(s.events, 1);
	assert_int_equal(kube_watch(k, "/w/http410", 5000, count_event, &s,
	    &e), KW_GONE);
	assert_int_equal(kube_watch(k, "/w/error", 5000, count_event, &s, &e),
	    -1);
	assert_non_null(strstr(e.msg, "etcd"));
	assert_int_equal(kube_watch(k, "/w/garbage", 5000, count_event, &s,
	    &e), -1);
	assert_non_null(strstr(e.msg, "not JSON"));
	assert_int_equal(kube_watch(k, "/w/forbidden", 5000, count_event, &s,
	    &e), -1);
	assert_int_equal(e.status, 403);
	/* A stream reset midway is an end, not an error: watch again. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(kube_watch(k, "/w/cut", 5000, count_event, &s, &e),
	    KW_ENDED);
	assert_int_equal(s.events, 1);
	kfake_stop();
	kube_free(k);
}

/* ---------------------------------------------------------------- backend */

static struct conf	 cf;

static void
conf_for(int port)
{
	char	 server[64];

	memset(&cf, 0, sizeof(cf));
	cf.image = S("localhost/vivarium-sandbox:test");
	cf.state_dir = S(dir);
	cf.tmp_size = 64ULL << 20;
	cf.stop_timeout = 1;
	cf.ready_timeout = 3;
	cf.limits.memory = 1ULL << 30;
	cf.limits.cpus_milli = 1000;
	cf.limits.workspace = 1ULL << 30;
	cf.kube.namespace = S("ns");
	cf.kube.agent_port = 8700;
	cf.kube.uid_base = 100000;
	cf.kube.user_namespace = KUBE_USERNS_OFF;
	cf.kube.ephemeral_storage = 1ULL << 30;
	cf.kube.egress_host = S("127.0.0.1");
	cf.kube.egress_port = 3128;
	cf.kube.egress_selector = S("app=egress");
	cf.kube.supervisor_selector = S("app=supervisor");
	cf.link_keys.have_master = 1;
	memset(cf.link_keys.master, 3, sizeof(cf.link_keys.master));
	snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
	write_file("sa-token", "tok\n");
	cf.kube.kubeconfig = S(kubeconfig(server, "    tokenFile: sa-token\n"));
}

#define PODS	"/api/v1/namespaces/ns/pods"
#define PVCS	"/api/v1/namespaces/ns/persistentvolumeclaims"
#define NETPOLS	"/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies"
/* The secret the Pod holds, as the API server has it. */
#define POD_SECRET	"feedfacefeedfacefeedfacefeedface" \
			"feedfacefeedfacefeedfacefeedface"
#define POD_SPEC(more) \
	"\"spec\":{" more "\"containers\":[{\"name\":\"sandbox\",\"env\":" \
	"[{\"name\":\"VIVARIUM_AGENT_SECRET\",\"value\":\"" POD_SECRET "\"}]}]}"
#define READY_POD_WITH(more) \
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"vivarium-alice\"," \
	"\"resourceVersion\":\"7\"}," POD_SPEC(more) ",\"status\":{\"phase\":" \
	"\"Running\",\"podIP\":\"10.1.2.3\",\"conditions\":[{\"type\":" \
	"\"Ready\",\"status\":\"True\"}]}}"
#define READY_POD	READY_POD_WITH("")

/* The end of a route table: no Pod, one made, then it is Ready. */
#define NEW_POD \
	{ "GET", PODS "/vivarium-alice", 404, "{\"code\":404}", 1, 0 }, \
	{ "POST", PODS, 201, "{}", 0, 0 }, \
	{ "GET", PODS "/vivarium-alice", 200, READY_POD, 0, 0 }, \
	{ NULL, NULL, 0, NULL, 0, 0 }

static int
index_of(const char *method, const char *prefix)
{
	int		 i;
	struct kfake_request q;

	for (i = 0; i < kfake_count(); i++) {
		q = kfake_req(i);
		if (strcmp(q.method, method) == 0
		    && strncmp(q.target, prefix, strlen(prefix)) == 0)
			return i;
	}
	return -1;
}

/* A new user: claim (with the lowest free uid), policy, Pod, in order. */
static void
test_ensure_new(void **state)
{
	static struct kfake_route r[] = {
		{ "GET", PVCS "/vivarium-alice-workspace", 404, "{\"kind\":"
		    "\"Status\",\"reason\":\"NotFound\",\"code\":404}", 0, 0 },
		{ "GET", PVCS "?labelSelector=app.kubernetes.io%2Fmanaged-by"
		    "%3Dvivarium%2Capp.kubernetes.io%2Fname%3Dvivarium-sandbox",
		    200, "{\"items\":[{\"metadata\":{\"annotations\":"
		    "{\"vivarium.io/uid\":\"100001\"}}}]}", 0, 0 },
		{ "POST", PVCS, 201, "{}", 0, 0 },
		{ "GET", NETPOLS "/vivarium-alice", 404, "{\"code\":404}", 0, 0 },
		{ "POST", NETPOLS, 201, "{}", 0, 0 },
		NEW_POD,
	};
	struct backend		*b;
	struct agent_addr	 a;
	struct berr		 e;
	char			 secret[KSPEC_SECRET_HEX + 1];
	char			 got[KSPEC_SECRET_MAX + 1];
	json_t			*pvc, *pod;
	int			 created, ipvc, inp, ipod;

	conf_for(kfake_start(r));
	b = kube_backend(&cf, NULL);
	if (b->ensure(b, "alice", &created, &a, &e) == -1)
		fail_msg("%s", e.msg);
	assert_int_equal(created, 1);
	assert_int_equal(a.kind, AGENT_TCP);
	assert_string_equal(a.host, "10.1.2.3");
	assert_int_equal(a.port, 8700);
	/* The secret of the Pod that is ready, read back from it. */
	assert_string_equal(a.secret, POD_SECRET);
	ipvc = index_of("POST", PVCS);
	inp = index_of("POST", NETPOLS);
	ipod = index_of("POST", PODS);
	assert_true(ipvc >= 0 && ipvc < inp && inp < ipod);
	pvc = json_loads(kfake_req(ipvc).body, 0, NULL);
	assert_non_null(pvc);
	assert_int_equal(kspec_slot_of(&cf, pvc), 2);
	json_decref(pvc);
	assert_non_null(strstr(kfake_req(ipod).body, "\"runAsUser\":100002"));
	assert_null(strstr(kfake_req(ipod).body, "hostUsers"));
	/* A new Pod's own: random, made here, not the user's. */
	pod = json_loads(kfake_req(ipod).body, 0, NULL);
	assert_non_null(pod);
	assert_int_equal(kspec_secret_of(pod, got), 0);
	assert_int_equal(strlen(got), KSPEC_SECRET_HEX);
	assert_int_equal(strspn(got, "0123456789abcdef"), KSPEC_SECRET_HEX);
	json_decref(pod);
	b->label(b, "alice", secret, sizeof(secret));
	assert_string_equal(secret, "ns/vivarium-alice");
	kfake_stop();
	b->free(b);
}

/*
 * user_namespace auto: the version is asked once; from 1.33 the Pod gets
 * hostUsers: false and the image's user inside.  An API server that drops
 * the field (the feature off) has the Pod deleted at once and the request
 * refused: never the image's uid on the node.
 */
static void
test_ensure_userns(void **state)
{
	static struct kfake_route r[] = {
		{ "GET", "/version", 200, "{\"major\":\"1\",\"minor\":\"33+\","
		    "\"gitVersion\":\"v1.33.2-gke.1\"}", 0, 0 },
		{ "GET", PVCS "/vivarium-alice-workspace", 200, "{\"metadata\":"
		    "{\"annotations\":{\"vivarium.io/uid\":\"100004\"}}}", 0, 0 },
		{ "GET", NETPOLS "/vivarium-alice", 404, "{\"code\":404}", 0, 0 },
		{ "POST", NETPOLS, 201, "{}", 0, 0 },
		/* First: the field dropped. */
		{ "GET", PODS "/vivarium-alice", 404, "{\"code\":404}", 1, 0 },
		{ "POST", PODS, 201, "{\"spec\":{}}", 1, 0 },
		{ "DELETE", PODS "/vivarium-alice", 200, "{}", 1, 0 },
		/* Then: kept. */
		{ "GET", PODS "/vivarium-alice", 404, "{\"code\":404}", 1, 0 },
		{ "POST", PODS, 201, "{\"spec\":{\"hostUsers\":false}}", 1, 0 },
		{ "GET", PODS "/vivarium-alice", 200,
		    READY_POD_WITH("\"hostUsers\":false,"), 0, 0 },
		{ NULL, NULL, 0, NULL, 0, 0 },
	};
	struct backend		*b;
	struct agent_addr	 a;
	struct berr		 e;
	int			 created, i, versions = 0, ipod;

	conf_for(kfake_start(r));
	cf.kube.user_namespace = KUBE_USERNS_AUTO;
	b = kube_backend(&cf, NULL);
	assert_int_equal(b->ensure(b, "alice", &created, &a, &e), -1);
	assert_int_equal(e.status, 500);
	assert_non_null(strstr(e.msg, "dropped hostUsers: false"));
	assert_non_null(strstr(e.msg, "kubernetes.user_namespace: false"));
	assert_true(index_of("DELETE", PODS "/vivarium-alice") >
	    index_of("POST", PODS));
	if (b->ensure(b, "alice", &created, &a, &e) == -1)
		fail_msg("%s", e.msg);
	assert_string_equal(a.secret, POD_SECRET);
	for (i = 0; i < kfake_count(); i++)
		if (strcmp(kfake_req(i).target, "/version") == 0)
			versions++;
	assert_int_equal(versions, 1);
	ipod = index_of("POST", PODS);
	assert_non_null(strstr(kfake_req(ipod).body, "\"hostUsers\":false"));
	assert_non_null(strstr(kfake_req(ipod).body, "\"runAsUser\":1000,"));
	kfake_stop();
	b->free(b);
	cf.kube.user_namespace = KUBE_USERNS_OFF;
}

/* A Pod that cannot pull its image fails at once, saying so. */
static void
test_ensure_stuck(void **state)
{
	static struct kfake_route r[] = {
		{ "GET", PVCS "/vivarium-alice-workspace", 200, "{\"metadata\":"
		    "{\"annotations\":{\"vivarium.io/uid\":\"100004\"}}}", 0, 0 },
		{ "GET", NETPOLS "/vivarium-alice", 200, NULL, 0, 0 },
		{ "GET", PODS "/vivarium-alice", 404, "{\"code\":404}", 1, 0 },
		{ "POST", PODS, 409, EXISTS, 0, 0 },
		{ "GET", PODS "/vivarium-alice", 200, "{\"metadata\":{},"
		    "\"status\":{\"phase\":\"Pending\",\"containerStatuses\":"
		    "[{\"state\":{\"waiting\":{\"reason\":\"ImagePullBackOff\","
		    "\"message\":\"Back-off pulling image\"}}}]}}", 0, 0 },
		{ NULL, NULL, 0, NULL, 0, 0 },
	};
	struct backend		*b;
	struct agent_addr	 a;
	struct berr		 e;
	json_t			*np;
	char			*text;
	int			 created;

	conf_for(kfake_start(r));
	/* The policy as this configuration makes it: taken as it is. */
	np = kspec_netpol(&cf, "alice");
	text = json_dumps(np, JSON_COMPACT);
	json_decref(np);
	r[1].body = text;
	b = kube_backend(&cf, NULL);
	assert_int_equal(b->ensure(b, "alice", &created, &a, &e), -1);
	assert_int_equal(created, 0);	/* 409: someone else made it */
	assert_int_equal(index_of("PUT", NETPOLS), -1);
	assert_non_null(strstr(e.msg, "ImagePullBackOff"));
	assert_non_null(strstr(kfake_req(index_of("POST", PODS)).body,
	    "\"runAsUser\":100004"));
	/* No claim or policy was made: they were there. */
	assert_int_equal(index_of("POST", PVCS), -1);
	assert_int_equal(index_of("POST", NETPOLS), -1);
	kfake_stop();
	b->free(b);
	free(text);
}

/*
 * A policy of another configuration (no hash of ours) is replaced by PUT
 * with the resourceVersion read; a 409 Conflict is read again and the
 * PUT sent once more with the new one; never a DELETE.
 */
static void
test_ensure_netpol_drift(void **state)
{
	static struct kfake_route r[] = {
		{ "GET", PVCS "/vivarium-alice-workspace", 200, "{\"metadata\":"
		    "{\"annotations\":{\"vivarium.io/uid\":\"100004\"}}}", 0, 0 },
		{ "GET", NETPOLS "/vivarium-alice", 200, "{\"metadata\":"
		    "{\"resourceVersion\":\"5\"},\"spec\":{}}", 1, 0 },
		{ "PUT", NETPOLS "/vivarium-alice", 409, "{\"kind\":\"Status\","
		    "\"reason\":\"Conflict\",\"code\":409}", 1, 0 },
		{ "GET", NETPOLS "/vivarium-alice", 200, "{\"metadata\":"
		    "{\"resourceVersion\":\"6\"},\"spec\":{}}", 1, 0 },
		{ "PUT", NETPOLS "/vivarium-alice", 200, "{}", 1, 0 },
		NEW_POD,
	};
	struct backend		*b;
	struct agent_addr	 a;
	struct berr		 e;
	json_t			*put, *want;
	int			 created, i, puts = 0, last = -1;

	conf_for(kfake_start(r));
	b = kube_backend(&cf, NULL);
	if (b->ensure(b, "alice", &created, &a, &e) == -1)
		fail_msg("%s", e.msg);
	for (i = 0; i < kfake_count(); i++) {
		assert_string_not_equal(kfake_req(i).method, "DELETE");
		if (strcmp(kfake_req(i).method, "PUT") == 0) {
			puts++;
			last = i;
		}
	}
	assert_int_equal(puts, 2);
	assert_true(last < index_of("POST", PODS));
	assert_int_equal(index_of("POST", NETPOLS), -1);
	put = json_loads(kfake_req(index_of("PUT", NETPOLS)).body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    put, "metadata"), "resourceVersion")), "5");
	json_decref(put);
	put = json_loads(kfake_req(last).body, 0, NULL);
	want = kspec_netpol(&cf, "alice");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    put, "metadata"), "resourceVersion")), "6");
	assert_true(json_equal(json_object_get(put, "spec"),
	    json_object_get(want, "spec")));
	assert_string_equal(kspec_hash_of(put), kspec_hash_of(want));
	json_decref(put);
	json_decref(want);
	kfake_stop();
	b->free(b);
}

/* Adopt: what is there is what ensure finds; list by label. */
static void
test_list_and_inspect(void **state)
{
	static struct kfake_route r[] = {
		{ "GET", PODS "?labelSelector=", 200, "{\"items\":["
		    "{\"metadata\":{\"labels\":{\"vivarium.io/user\":\"alice\"}}},"
		    "{\"metadata\":{\"labels\":{\"vivarium.io/user\":\"Bad/..\"}}},"
		    "{\"metadata\":{\"deletionTimestamp\":\"x\",\"labels\":"
		    "{\"vivarium.io/user\":\"carol\"}}}]}", 0, 0 },
		{ "GET", PVCS "?labelSelector=", 200, "{\"items\":["
		    "{\"metadata\":{\"labels\":{\"vivarium.io/user\":\"alice\"}}},"
		    "{\"metadata\":{\"labels\":{\"vivarium.io/user\":\"bob\"}}}]}",
		    0, 0 },
		{ "GET", PODS "/vivarium-alice", 200, READY_POD, 0, 0 },
		{ "GET", PODS "/", 404, "{\"code\":404}", 0, 0 },
		{ "GET", PVCS "/vivarium-bob-workspace", 200, "{}", 0, 0 },
		{ "GET", PVCS "/", 404, "{\"code\":404}", 0, 0 },
		{ "DELETE", PODS "/vivarium-alice", 200, "{}", 0, 0 },
		{ "DELETE", PODS "/", 404, "{\"code\":404}", 0, 0 },
		{ "GET", NETPOLS "/vivarium-alice", 200, "{}", 0, 0 },
		{ "GET", NETPOLS "/", 404, "{\"code\":404}", 0, 0 },
		{ NULL, NULL, 0, NULL, 0, 0 },
	};
	struct backend		*b;
	struct backend_sandbox	*v;
	struct backend_info	 info;
	struct berr		 e;
	json_t			*d;
	size_t			 n;

	conf_for(kfake_start(r));
	b = kube_backend(&cf, NULL);
	assert_int_equal(b->list(b, &v, &n, &e), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].user, "alice");
	assert_int_equal(v[0].state, BK_RUNNING);
	assert_string_equal(v[1].user, "carol");
	assert_int_equal(v[1].state, BK_STOPPED);
	assert_string_equal(v[2].user, "bob");
	assert_int_equal(v[2].state, BK_STOPPED);
	free(v);
	assert_int_equal(b->inspect(b, "alice", &info, &e), 0);
	assert_int_equal(info.state, BK_RUNNING);
	assert_int_equal(info.memory_known, 0);
	assert_int_equal(b->inspect(b, "bob", &info, &e), 0);
	assert_int_equal(info.state, BK_STOPPED);
	assert_int_equal(b->inspect(b, "dave", &info, &e), 0);
	assert_int_equal(info.state, BK_MISSING);
	/* vivariumctl status: what there is, and where its agent is. */
	d = b->describe(b, "alice", NULL, &e);
	assert_non_null(d);
	assert_string_equal(json_string_value(json_object_get(d, "state")),
	    "running");
	assert_string_equal(json_string_value(json_object_get(d, "agent")),
	    "10.1.2.3:8700");
	assert_true(json_is_true(json_object_get(d, "network_policy_exists")));
	assert_true(json_is_false(json_object_get(d, "claim_exists")));
	json_decref(d);
	d = b->describe(b, "dave", NULL, &e);
	assert_string_equal(json_string_value(json_object_get(d, "state")),
	    "missing");
	json_decref(d);
	assert_int_equal(b->registered(b, "bob", &e), 1);
	assert_int_equal(b->registered(b, "dave", &e), 0);
	/* Idle stop deletes the Pod only; a Pod already gone is fine. */
	assert_int_equal(b->stop(b, "alice", &e), 0);
	assert_int_equal(b->stop(b, "dave", &e), 0);
	assert_int_equal(index_of("DELETE", PVCS), -1);
	assert_int_equal(b->export_ws(b, "alice", 1, &e), -1);
	assert_int_equal(e.status, 501);
	kfake_stop();
	b->free(b);
}

static char	 said[4096];

static void
say_into(int level, const char *msg)
{
	snprintf(said + strlen(said), sizeof(said) - strlen(said), "%d %s\n",
	    level, msg);
}

/* Start-up: the version, one list of each kind, what it cannot check. */
static void
test_check(void **state)
{
	static struct kfake_route r[] = {
		{ "GET", "/version", 200, "{\"gitVersion\":\"v1.30.1\"}", 0, 0 },
		{ "GET", PODS "?labelSelector=", 200, "{\"items\":[]}", 0, 0 },
		{ "GET", PVCS "?labelSelector=", 200, "{\"items\":[]}", 0, 0 },
		{ "GET", NETPOLS "?labelSelector=", 403, FORBIDDEN, 0, 0 },
		{ NULL, NULL, 0, NULL, 0, 0 },
	};
	struct backend	*b;
	struct berr	 e;

	conf_for(kfake_start(r));
	b = kube_backend(&cf, NULL);
	said[0] = '\0';
	assert_int_equal(b->check(b, say_into, &e), 0);
	assert_non_null(strstr(said, "0 Kubernetes v1.30.1 at http://127.0.0.1:"));
	assert_non_null(strstr(said, "namespace ns"));
	/* A missing rule is said, with its verb, and the start goes on. */
	assert_non_null(strstr(said, "1 WARNING: the API server forbids us to "
	    "list networkpolicies"));
	assert_non_null(strstr(said, "1 WARNING: whether this cluster enforces "
	    "NetworkPolicy cannot be checked"));
	assert_non_null(strstr(said, "limits.pids"));
	assert_non_null(strstr(kfake_req(1).target, "&limit=1"));
	/* gVisor asked for, but not how: refused. */
	cf.runsc = 1;
	assert_int_equal(b->check(b, say_into, &e), -2);
	assert_non_null(strstr(e.msg, "kubernetes.runtime_class"));
	cf.runsc = 0;
	cf.link_keys.have_master = 0;
	assert_int_equal(b->check(b, say_into, &e), -2);
	assert_non_null(strstr(e.msg, "master link key"));
	kfake_stop();
	b->free(b);
}

/* A configuration that cannot be used stops the start, saying why. */
static void
test_check_refuses(void **state)
{
	struct backend	*b;
	struct berr	 e;

	conf_for(1);
	cf.kube.kubeconfig = S(write_file("kubeconfig", "apiVersion: v1\n"));
	b = kube_backend(&cf, NULL);
	assert_non_null(b);
	assert_int_equal(b->check(b, NULL, &e), -2);
	assert_non_null(strstr(e.msg, "current-context"));
	b->free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kubeconfig),
		cmocka_unit_test(test_in_cluster),
		cmocka_unit_test(test_calls),
		cmocka_unit_test(test_status_words),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_ensure_new),
		cmocka_unit_test(test_ensure_userns),
		cmocka_unit_test(test_ensure_stuck),
		cmocka_unit_test(test_ensure_netpol_drift),
		cmocka_unit_test(test_list_and_inspect),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_check_refuses),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
