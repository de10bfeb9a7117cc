/*
 * kube.h: the Kubernetes backend's pieces.  kspec.c builds the objects one
 * user's sandbox is made of (a PersistentVolumeClaim, a NetworkPolicy and a
 * Pod) as the JSON bodies POSTed to the API server, pure like
 * backend_podman_spec.c; kube.c is the API client (libcurl); backend_kube.c
 * maps the supervisor's operations (backend.h) onto them.  The names, labels
 * and shapes are the contract in docs/supervisor.md (Kubernetes backend).
 */
#ifndef VIVARIUM_KUBE_H
#define VIVARIUM_KUBE_H

#include <jansson.h>

#include "supervisor.h"

#define KUBE_MANAGED_BY		"app.kubernetes.io/managed-by"
#define KUBE_NAME		"app.kubernetes.io/name"
#define KUBE_USER		"vivarium.io/user"
#define KUBE_UID		"vivarium.io/uid"
#define KUBE_SPEC_HASH		"vivarium.io/spec-hash"
#define KUBE_MANAGER		"vivarium"
#define KUBE_APP		"vivarium-sandbox"
/* The list and adopt selector, URL-escaped for a query. */
#define KUBE_SELECTOR		KUBE_MANAGED_BY "=" KUBE_MANAGER "," \
				KUBE_NAME "=" KUBE_APP
#define KUBE_SELECTOR_Q		"app.kubernetes.io%2Fmanaged-by%3Dvivarium%2C" \
				"app.kubernetes.io%2Fname%3Dvivarium-sandbox"

/* The agent's secret, made at random with its Pod: 32 bytes in hex. */
#define KSPEC_SECRET_ENV	"VIVARIUM_AGENT_SECRET"
#define KSPEC_SECRET_HEX	64
/* What the agent takes (and struct agent_addr holds). */
#define KSPEC_SECRET_MAX	128
/* The highest id a Pod may name (runAsUser, fsGroup: the API's int32). */
#define KSPEC_ID_MAX		2147483647L
/* Inside a Pod's own user namespace: the image's user (Containerfile). */
#define KSPEC_USERNS_ID		1000

/* ---------------------------------------------------------------- kspec.c */

struct kube_names {
	char	pod[USER_ID_MAX + 16];		/* vivarium-U */
	char	pvc[USER_ID_MAX + 32];		/* vivarium-U-workspace */
	char	netpol[USER_ID_MAX + 16];	/* vivarium-U */
};

/* 0, or -1 when user is not a valid id (user_id_valid). */
int	kspec_names(const char *user, struct kube_names *);
/* The labels all three carry (new reference). */
json_t	*kspec_labels(const char *user);
/* The image Pods run: kubernetes.image, else the top-level image. */
const char *kspec_image(const struct conf *);
/*
 * A new agent secret: 32 random bytes in hex, made for each new Pod and
 * kept nowhere but in it (its env), where the supervisor reads it back
 * (kspec_secret_of), after a restart too.  0, or -1 (errno).
 */
int	kspec_secret_new(char out[KSPEC_SECRET_HEX + 1]);
/* The secret a Pod was made with (KSPEC_SECRET_ENV of its container):
 * 0, or -1 when it has none the agent would take. */
int	kspec_secret_of(const json_t *pod, char out[KSPEC_SECRET_MAX + 1]);
/* The uid of slot (1, 2, ...; 0: none given yet, as render prints). */
long	kspec_uid(const struct conf *, long slot);
/* The slot kept on a PVC (its KUBE_UID annotation), or 0 when it has none
 * that is ours (missing, malformed, below uid_base). */
long	kspec_slot_of(const struct conf *, const json_t *pvc);
/* The lowest slot no PVC of the list's items holds. */
long	kspec_free_slot(const struct conf *, const json_t *items);
/* The user an object's KUBE_USER label names (borrowed), or NULL. */
const char *kspec_user_of(const json_t *obj);
/* Its KUBE_SPEC_HASH annotation (borrowed), or NULL. */
const char *kspec_hash_of(const json_t *obj);

/* A claim's storage quantity ("5Gi", "5368709120") in bytes, or -1. */
long long kspec_quantity(const char *q);

/* The bodies (new references, NULL when out of memory). */
json_t	*kspec_pvc(const struct conf *, const char *user, long slot);
/* Like the Pod, the policy carries the spec hash (KUBE_SPEC_HASH). */
json_t	*kspec_netpol(const struct conf *, const char *user);
/*
 * The Pod, running as slot's uid (userns 0) or in a user namespace of its
 * own as KSPEC_USERNS_ID (userns 1: hostUsers false), told the proxy is at
 * proxy_addr (an address, or the configured name when it did not resolve;
 * NULL: no proxy variables) and that its agent's secret is secret.  It
 * carries the spec hash, made without the secret: a Pod whose hash
 * differs was made from another configuration.
 */
json_t	*kspec_pod(const struct conf *, const char *user, long slot,
	    const char *proxy_addr, const char *secret, int userns);
/*
 * The egress proxy's address as sandboxes are given it: the first
 * address getaddrinfo gives kubernetes.egress_proxy's host (IPv6 in
 * brackets), else the name itself (resolved = 0).  Not pure: DNS.
 */
void	kspec_proxy_addr(const struct conf *, char *dst, size_t len,
	    int *resolved);

/* ---------------------------------------------------------------- kube.c */

/*
 * An API server and how to prove who we are to it: in-cluster (the
 * service account's token, re-read at every request since bound tokens
 * rotate, and its CA), or a kubeconfig's current context.  Calls are
 * safe from several threads at once: each has its own curl handle.
 * Errors fill struct berr as podman.c does: status 0 when the server
 * cannot be reached, else the HTTP status, the Status reason in cause
 * ("AlreadyExists", "NotFound", ...) and a sentence for an operator.
 * The token is never logged nor put in a message.
 */
struct kube {
	char	*server;	/* https://host:port, no trailing slash */
	char	*where;		/* "in-cluster" or the kubeconfig's path */
	char	*ca_file;	/* or ca_data (PEM), or neither: the system's */
	char	*ca_data;
	size_t	 ca_len;
	int	 insecure;	/* insecure-skip-tls-verify */
	char	*token;		/* a fixed token, or */
	char	*token_file;	/* a file read at every request */
	char	*cert_file, *key_file;	/* client certificate, or */
	char	*cert_data, *key_data;	/* the same inline (PEM) */
	size_t	 cert_len, key_len;
	long	 timeout_ms;	/* per request but watches */
	void	(*on_error)(const struct berr *);
};

#define KUBE_SA_DIR	"/var/run/secrets/kubernetes.io/serviceaccount"

/*
 * From kubeconfig (NULL: in-cluster, from KUBERNETES_SERVICE_HOST and
 * _PORT and the files in sa_dir, KUBE_SA_DIR unless given).  NULL with
 * err when the configuration cannot be used.
 */
struct kube	*kube_new(const char *kubeconfig, const char *sa_dir,
		    long timeout_ms, struct berr *err);
void		 kube_free(struct kube *);

/*
 * One request: body (borrowed, may be NULL) sent as JSON, *reply a new
 * reference to the JSON answer (may be NULL), *status the HTTP status
 * (may be NULL).  2xx is success; else -1 with err.
 */
int	kube_call(struct kube *, const char *method, const char *path,
	    json_t *body, json_t **reply, long *status, struct berr *err);

/*
 * A watch: GET path (which holds watch=1 and timeoutSeconds), each
 * event handed to fn(arg, type, object) as it comes; fn returns 1 to
 * end the watch, 0 to go on, -1 for an error of its own (it fills err).
 * Returns KW_DONE (fn ended it), KW_ENDED (the server ended it: watch
 * again), KW_GONE (410 Gone: the resourceVersion is too old, list
 * again) or -1 with err.  timeout_ms bounds the whole watch.
 */
#define KW_ENDED	0
#define KW_DONE		1
#define KW_GONE		2
typedef int	(*kube_event_fn)(void *arg, const char *type,
		    const json_t *object, struct berr *err);
int	kube_watch(struct kube *, const char *path, long timeout_ms,
	    kube_event_fn fn, void *arg, struct berr *err);

/* A Status object (or a body that is not one) as a sentence: the verb
 * and resource named, so that a 403 says which RBAC rule is missing. */
void	kube_status_err(struct berr *, const char *method, const char *path,
	    long status, const char *body, size_t len);

#endif
