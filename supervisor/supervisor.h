/*
 * supervisor.h: the private header of vivarium-supervisor and vivariumctl.
 */
#ifndef VIVARIUM_SUPERVISOR_H
#define VIVARIUM_SUPERVISOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <jansson.h>

#include "config.h"
#include "http1.h"
#include "link.h"
#include "proof.h"

/*
 * The error every layer fills: struct berr (berr.h; backend.h says what
 * its status means there).  The Podman client is podman.h, for the files
 * that drive it.
 */
struct berr;
struct podman;

#define USER_ID_MAX	63
/* Sockets are reached through /proc/self/fd (forward.c), so sun_path's
 * 108 bytes do not bound the directory; this only sizes the buffers. */
#define STATE_DIR_MAX	256

/* ---------------------------------------------------------------- conf.c */

enum provisioning {
	PROV_AUTO,
	PROV_ALLOWLIST,
	PROV_MANUAL,
};

struct limits {
	unsigned long long	 memory;	/* bytes */
	long			 cpus_milli;	/* 2000 = 2 CPUs */
	long			 pids;
	unsigned long long	 workspace;	/* bytes: the workspace quota */
};

/*
 * Each sandbox gets UID_RANGE host ids of its own, from uid_base up: slot
 * 0 is the egress proxy's (deploy/), user slots start at 1 (idmap.c).
 */
#define UID_RANGE	65536
#define DEF_UID_BASE	1000000000L
#define UID_BASE_MAX	4000000000L

struct user_conf {
	char		 id[USER_ID_MAX + 1];
	struct limits	 limits;
};

struct kv {
	char	*key;		/* owned */
	char	*value;		/* owned */
};

/* Where the sandboxes run (backend.h). */
enum backend_kind {
	BACKEND_PODMAN,
	BACKEND_KUBERNETES,
};

/*
 * kubernetes.user_namespace: Pods with hostUsers: false (each its own
 * host ids, from the kubelet) or not (the user's uid on the node);
 * auto: on from the Kubernetes version where the feature is on by default.
 */
enum kube_userns {
	KUBE_USERNS_AUTO,
	KUBE_USERNS_ON,
	KUBE_USERNS_OFF,
};
/* Kubernetes 1.33: UserNamespacesSupport beta, on by default. */
#define KUBE_USERNS_SINCE_MINOR	33

/* The default kubernetes.uid_base: above the ranges useradd (100000 and
 * up, 65536 each), the kubelet (65536 and up, 65536 a Pod) and systemd
 * (container ranges up to 0x6FFFFFFF) hand out as subordinate ids, below
 * the 2^31 a Pod's runAsUser may not reach. */
#define KUBE_UID_BASE		0x78000000L
#define KUBE_UID_BASE_MAX	0x7FFF0000L

/* kubernetes: in the config (backend_kube.c, kspec.c; docs/supervisor.md). */
struct kube_conf {
	char		*kubeconfig;		/* owned; NULL: in-cluster */
	char		*namespace;		/* owned; conf_load fills it */
	char		*image;			/* owned; NULL: conf.image */
	char		*runtime_class;		/* owned; NULL: the default */
	char		*storage_class;		/* owned; NULL: the default */
	long		 agent_port;
	long		 uid_base;
	enum kube_userns user_namespace;
	unsigned long long ephemeral_storage;	/* bytes, per Pod */
	char		*egress_proxy;		/* owned: "host:port" */
	char		*egress_host;		/* owned: its host part */
	long		 egress_port;		/* and its port */
	char		*egress_selector;	/* owned: "k=v,k=v" */
	char		*supervisor_selector;	/* owned */
};

struct conf {
	char		*path;		/* owned; NULL: built-in defaults only */
	enum backend_kind backend;
	char		*listen_host;	/* owned */
	int		 listen_port;
	char		*token;		/* owned */
	char		*token_file;	/* owned; NULL: not from a file */
	char		*user_header;	/* owned */
	char		*user_name_header;	/* owned: the person's name (names.c) */
	char		*origins;	/* owned: comma-separated (origin.h) */
	char		*podman_socket;	/* owned */
	long		 podman_timeout_ms;
	char		*state_dir;	/* owned: users/<id>/ for agent sockets */
	char		*image;		/* owned */
	char		*sandbox_user;	/* owned: "uid:gid" */
	unsigned long long tmp_size;
	long		 uid_base;	/* first host id of slot 0; 0: no userns */
	int		 runsc;	/* sandbox.runtime: runsc (gVisor), checked */
	enum provisioning provisioning;
	long		 idle_stop_after;	/* seconds; 0: never */
	long		 ready_timeout;		/* seconds */
	long		 stop_timeout;		/* seconds */
	long		 agent_timeout;		/* seconds, per forwarded POST */
	unsigned long long max_body;
	unsigned long long max_response;
	struct limits	 limits;
	struct user_conf *users;	/* owned */
	size_t		 nusers;
	struct kv	*env;		/* owned: extra sandbox environment */
	size_t		 nenv;
	char		*egress_container;	/* owned; NULL: no proxy */
	long		 egress_port;		/* the proxy's port */
	char		*egress_alias;		/* owned */
	/* egress: manage: the supervisor makes and keeps the proxy (egress.c) */
	int		 egress_manage;
	char		*egress_image;		/* owned; NULL: image */
	char		*egress_config;		/* owned; NULL: the proxy's defaults */
	char		*egress_network;	/* owned: its way out */
	char		*egress_bridge;		/* owned: that network's bridge */
	char		*egress_host_extra;	/* owned: "addr,cidr,..."; NULL: none */
	long		 max_connections;
	long		 max_per_address;	/* connections from one address */
	long		 auth_timeout;		/* seconds idle before the token */
	/* File links (links: in the file; docs/supervisor.md). */
	char		*public_url;		/* owned; no trailing slash */
	char		*link_key_file;		/* owned */
	long		 download_lifetime;	/* seconds */
	long		 upload_lifetime;
	long		 link_max_lifetime;
	unsigned long long upload_max;		/* bytes per upload */
	/* Link transfers: caps, and the floor they must keep (http_guard). */
	long		 link_max_transfers;
	long		 link_max_per_address;
	long		 link_max_per_link;
	unsigned long long link_min_rate;	/* bytes a second */
	long		 link_rate_grace;	/* seconds */
	struct link_keys link_keys;		/* conf_link_keys() fills it */
	struct kube_conf kube;
};

/* Defaults, then the file (when path is not NULL), then the environment.
 * Every problem goes to diag; returns 0, or -1 when diag has errors. */
int	conf_load(struct conf *, const char *path, struct confdiag *diag);
void	conf_release(struct conf *);
/* The config file used without -f: /etc/vivarium/supervisor.yaml, or for
 * a user other than root $XDG_CONFIG_HOME/vivarium/supervisor.yaml (as
 * make install writes them); NULL when neither exists. */
const char *conf_default_path(char *dst, size_t len);
/* Loads (on first start: makes) the link key; 0, or -1 with err. */
int	conf_link_keys(struct conf *, char *err, size_t errlen);
/* Seconds between the reaper's looks: idle_stop_after / 10, 1 to 30. */
long	reaper_tick(const struct conf *);
/* The user's limits: an override from users: or the defaults. */
const struct limits *conf_limits(const struct conf *, const char *user);
/* Listed under users: (the allowlist). */
int	conf_user_listed(const struct conf *, const char *user);
const char *conf_provisioning_name(enum provisioning);
/* --check's line: "configuration OK", where from, and what it names. */
void	conf_print_summary(const struct conf *, const char *path);
/*
 * A label selector of equality terms, "k=v,k2=v2" (kubernetes.*_selector),
 * as a matchLabels object (new reference), or NULL when it is not one:
 * keys an optional DNS prefix and "/" then a name of at most 63 of
 * [A-Za-z0-9._-], values the same or empty.
 */
json_t	*conf_match_labels(const char *selector);

/* --------------------------------------------------------------- endpoint.c */

enum endpoint {
	ENDPOINT_NONE,
	ENDPOINT_HEALTH,
	ENDPOINT_METRICS,
	ENDPOINT_MCP,		/* /mcp: the user comes from a header */
	ENDPOINT_USER_MCP,	/* /u/<user>/mcp */
};

/* The endpoint a URL path names; for ENDPOINT_USER_MCP, *user / *userlen
 * point into url. */
enum endpoint endpoint_match(const char *url, const char **user,
	    size_t *userlen);
/* 0 when id is DNS-safe (see docs/supervisor.md), else -1. */
int	user_id_valid(const char *id, size_t len);
extern const char user_id_rule[];
/* Constant-time check of "Bearer <token>"; 1 when it matches. */
int	token_ok(const char *authorization, const char *token);

/* ---------------------------------------------------------------- forward.c */

/*
 * How to reach a sandbox's agent, as its backend says (backend.h): a unix
 * socket on this host (Podman), or later host:port with a secret the agent
 * checks, since a socket does not cross the nodes of a cluster.
 */
enum agent_kind {
	AGENT_UNIX,
	AGENT_TCP,	/* sent Authorization: Bearer <secret> every time */
};

struct agent_addr {
	enum agent_kind	 kind;
	char		 path[STATE_DIR_MAX + USER_ID_MAX + 24];	/* unix */
	char		 host[256];	/* tcp: an IPv4 or IPv6 literal */
	int		 port;
	/* tcp: up to 128 printable characters (VIVARIUM_AGENT_SECRET's
	 * bound); a TCP agent is never reached without one */
	char		 secret[129];
};

/* A unix address for path (truncated to fit; sockets are named by us). */
void	agent_addr_unix(struct agent_addr *, const char *path);
/* A TCP address (host a literal, "[v6]" taken too) with its secret. */
void	agent_addr_tcp(struct agent_addr *, const char *host, int port,
	    const char *secret);
/* For messages: the path, or host:port, into dst of AGENT_ADDR_STRLEN. */
#define AGENT_ADDR_STRLEN	(STATE_DIR_MAX + USER_ID_MAX + 24 + 256 + 16)
const char *agent_addr_str(const struct agent_addr *, char *dst, size_t len);

/* A parsed response head from the agent. */
struct agent_head {
	int	 status;
	long long content_length;	/* -1: unknown */
	int	 chunked;
	char	 content_type[128];
	char	 session_id[256];
	char	 protocol_version[64];
	char	 cache_control[64];
	char	 proof[PROOF_HEX + 2];	/* PROOF_ANSWER: one too many tells */
};

/* A streaming read of an agent's response body. */
struct agent_conn {
	int		 fd;
	struct agent_head head;
	char		 rbuf[16384];
	size_t		 rpos, rlen;
	struct body	 body;		/* framing of the reply's body */
	int		 done;
	int		 keepalive;	/* the agent keeps the connection */
	int		 timeout_ms;	/* per read; -1: none */
	int		 client_fd;	/* watched while waiting; -1: none */
	int		 client_gone;	/* a wait ended because it closed */
	int		 secret_sent;	/* a TCP agent's: its 401 is ours */
	int		 stale;		/* not (any more) the sandbox's agent */
	/* A file the agent handed over (want_fd), owned: closed by
	 * agent_close unless taken (then clear passed). */
	int		 passed;
	int		 passed_fd;
};

/* Header values the supervisor passes on to the agent (NULL: absent). */
struct agent_req {
	const char	*method;
	const char	*path;
	const char	*content_type;
	const char	*accept;
	const char	*session_id;
	const char	*protocol_version;
	const char	*mcp_method, *mcp_name;	/* 2026-07-28's, passed on */
	const char	*last_event_id;
	const char	*body;
	size_t		 body_len;
	int		 chunked;	/* the body follows: agent_stream_* */
	/*
	 * On a unix socket: the agent may hand over an open file before its
	 * answer (common/fdpass.h), which lands in agent_conn.passed_fd.
	 * Ignored on TCP, where the agent sends bytes instead.
	 */
	int		 want_fd;
	/*
	 * The client's connection, or NULL: while the agent has not
	 * answered, its closing ends the wait, and the agent connection is
	 * closed so that the agent stops the run it is doing for it.
	 */
	const int	*client_fd;
};

/*
 * Sends on reuse_fd (a kept connection, or -1) or a new connection and
 * reads the head; 0, or -1 with err filled and *connect_failed set when
 * the address is not (or no longer) the sandbox's agent: nobody listens
 * there, or, over TCP, what answers does not prove that it holds the
 * secret (a new connection is challenged before anything is sent on it,
 * common/proof.h) or refuses the secret (401).  The caller then asks the
 * backend again, once.  reuse_fd is consumed either way.
 */
int	agent_open(struct agent_conn *, const struct agent_addr *,
	    const struct agent_req *, int reuse_fd, int timeout_ms,
	    int *connect_failed, char *err, size_t errlen);
/*
 * A request whose body is sent as it comes (chunked): open connects
 * (proving a TCP agent as agent_open does; *stale as its *connect_failed)
 * and sends the head, write sends a piece, close ends the body and reads
 * the answer's head (then agent_read as usual).  0, or -1 with err.
 * With want_fd on a unix socket, open also waits for the agent's first
 * byte: a file handed over (c->passed), or else its answer, whose head
 * it reads at once (then the request is over: close the connection).
 */
int	agent_stream_open(struct agent_conn *, const struct agent_addr *,
	    const struct agent_req *, int timeout_ms, int *stale, char *err,
	    size_t errlen);
int	agent_stream_write(struct agent_conn *, const char *, size_t);
int	agent_stream_close(struct agent_conn *, char *err, size_t errlen);
/* The whole reply was read and the agent keeps the connection. */
int	agent_reusable(const struct agent_conn *);
/* Next piece of the body: >0 bytes, 0 at the end, -1 on error. */
ssize_t	agent_read(struct agent_conn *, char *dst, size_t max);
void	agent_close(struct agent_conn *);
/*
 * GET /health at the address: the agent's requests and runs in progress,
 * 0 with both; 1 when it answers 200 without them (an older agent); -1
 * when it does not answer, or not 200.
 */
int	agent_busy(const struct agent_addr *, int timeout_ms, int *requests,
	    int *runs);
/* agent_busy without the counts: 0 when the agent answers 200, else -1. */
int	agent_probe(const struct agent_addr *, int timeout_ms);

/* ---------------------------------------------------------------- relay.c */

struct MHD_Response;
struct berr;
struct pool_entry;

/*
 * Opens r on the agent of the user's sandbox *sb (from pool_acquire):
 * agent_stream_open when r->chunked, else agent_open, on a connection the
 * pool kept when kept.  When nobody listens at the address (the sandbox
 * died, was removed or stopped; a Pod's address went to another), *sb is
 * given back, the pool asked once more and r sent again.  0; or -1 with
 * pe: the agent's failure (502; c->client_gone when the client went
 * away), or the pool's when *sb is NULL.
 */
int	relay_open(struct pool_entry **sb, const char *user,
	    struct agent_conn *c, const struct agent_req *r, int kept,
	    int timeout_ms, struct berr *pe);
/*
 * The request ar relayed to the user's agent (the sandbox taken from the
 * pool and held until the response is done): a response to queue, which
 * streams the agent's answer, its status in *status.  NULL with *status
 * and why to answer with, or *status 0 when there is nobody to answer
 * (the client went away) or no memory.
 */
struct MHD_Response *relay_mcp(const struct conf *, const char *user,
	    const struct agent_req *ar, int *status, char *why, size_t whylen);

/* ---------------------------------------------------------------- front.c */

/* Serves the endpoints on conf's listen address; 0, or -1 with err. */
int	front_start(const struct conf *, char *err, size_t errlen);
void	front_stop(void);

/* ---------------------------------------------------------------- files.c */

struct MHD_Connection;

/* The file links (common/fileweb.h), relayed to each user's agent. */
void	files_init(const struct conf *);
int	files_match(const char *url);
int	files_access(struct MHD_Connection *, const char *url,
	    const char *method, const char *upload_data,
	    size_t *upload_data_size, void **con_cls);

/* ---------------------------------------------------------------- sbenv.c */

/*
 * One user's sandbox as every backend has it (Podman, Kubernetes,
 * quadlets), in plain strings: the names, the labels, the environment.
 */
struct sbenv_names {
	char	sandbox[USER_ID_MAX + 16];	/* vivarium-U: container, Pod */
	char	workspace[USER_ID_MAX + 32];	/* vivarium-U-workspace */
};
/* 0, or -1 when user is not a valid id (user_id_valid). */
int	sbenv_names(const char *user, struct sbenv_names *);

#define SBENV_LABEL_MANAGED	"io.vivarium.managed"
#define SBENV_LABEL_USER	"io.vivarium.user"
#define SBENV_LABELS_MAX	3
struct sbenv_label {
	const char	*key, *value;		/* borrowed */
};
/* The labels every object of the user's sandbox carries, on Podman (and
 * quadlets) or on Kubernetes (kube 1); how many, out borrows user. */
size_t	sbenv_labels(int kube, const char *user,
	    struct sbenv_label out[SBENV_LABELS_MAX]);
/* The same as a JSON object, as both APIs take them (new reference). */
json_t	*sbenv_label_object(int kube, const char *user);

/* The environment, in order; owned strings, values wiped when freed. */
struct sbenv_var {
	char	*name, *value;
};
struct sbenv {
	struct sbenv_var	*v;
	size_t			 n, cap;
};
#define SBENV_INIT	{ NULL, 0, 0 }

/* Where the user's link key goes: nowhere (links off), in a file of the
 * run directory, or in the environment itself. */
enum sbenv_key {
	SBENV_KEY_NONE,
	SBENV_KEY_FILE,
	SBENV_KEY_ENV,
};
/* What differs between backends. */
struct sbenv_how {
	const char	*login;		/* USER and LOGNAME, or NULL */
	long		 tcp_port;	/* the agent on TCP; 0: on its socket */
	const char	*secret;	/* on TCP: the agent's secret */
	const char	*proxy;		/* the egress proxy's address, or NULL */
	long		 proxy_port;
	enum sbenv_key	 key;
	const char	*socket_mode;	/* VIVARIUM_SOCKET_MODE, or NULL */
};
/* The sandbox's environment: sandbox.env, then ours.  0, or -1 (out of
 * memory; e is then empty).  e is made anew: sbenv_release it. */
int	sbenv_make(const struct conf *, const char *user,
	    const struct sbenv_how *, struct sbenv *e);
/* Of that, the proxy's variables and the file links', added to e. */
int	sbenv_proxy(struct sbenv *e, const char *addr, long port);
int	sbenv_links(struct sbenv *e, const struct conf *, const char *user,
	    enum sbenv_key);
/* The value of name in e (borrowed), or NULL. */
const char *sbenv_get(const struct sbenv *e, const char *name);
void	sbenv_release(struct sbenv *e);

/* --------------------------------------------------- backend_podman_spec.c */

/* Under <state_dir>: the run directories, one per user. */
#define SANDBOX_USERS_DIR	"users"

/* On the container: the host ids it runs as (sandbox_ids_label). */
#define SANDBOX_IDS_LABEL	"io.vivarium.ids"

/*
 * What backend_podman_objects.c found out about the host for one user, so that
 * the spec builders stay pure: the user's id slot (idmap.c; 0: no user
 * namespace of its own, as under rootless Podman or with uid_base 0) and its
 * workspace image (quota.c; NULL: a plain volume, without a quota); rootless
 * when Podman is.  Rootless, sub_size ids of the user's subordinate range (host
 * ids from sub_uid and sub_gid, its namespace's ids 1..sub_size) are the
 * container's 0..sub_size-1; with none that fit, the sandbox user is mapped
 * onto ours (keep-id).
 */
struct sandbox_host {
	long		 slot;
	const char	*image;
	int		 rootless;
	unsigned long	 sub_uid, sub_gid, sub_size;
};

/* Rootless: the most ids of the subordinate range a sandbox gets. */
#define ROOTLESS_IDS	65536UL

/* Names and paths of one user's objects. */
struct names {
	char	container[USER_ID_MAX + 16];
	char	network[USER_ID_MAX + 16];
	char	volume[USER_ID_MAX + 32];
	char	rundir[STATE_DIR_MAX + USER_ID_MAX + 8];	/* <state_dir>/users/<id> */
	char	sock[STATE_DIR_MAX + USER_ID_MAX + 24];
};

int	sandbox_names(const struct conf *, const char *user, struct names *);
/*
 * New references to the request bodies for the user's objects.  isolate:
 * the network's "isolate" option, podman_isolate_value() of the Podman
 * that makes it.
 */
json_t	*sandbox_network_spec(const struct conf *, const char *user,
	    const char *isolate);
/* The network's bridge on the host (IFNAMSIZ: len 16 is enough). */
void	sandbox_bridge_name(const char *user, char *dst, size_t len);
/* The container's pids limit: the user's, scaled under gVisor. */
long long sandbox_pids_limit(const struct conf *, const struct limits *);
/* The user's link key, for the agent to read and remove at start. */
#define SANDBOX_LINK_KEY	"link.key"
#define SANDBOX_LINK_KEY_IN	"/run/vivarium/" SANDBOX_LINK_KEY
int	sandbox_rootless_ids(const struct conf *, const struct podman *,
	    unsigned long *uid, unsigned long *gid, unsigned long *size);
json_t	*sandbox_volume_spec(const char *user, const struct sandbox_host *);
/* A user namespace of its own for spec: ids 0..size-1 inside are base and
 * up in Podman's namespace. */
void	spec_userns(json_t *spec, json_int_t base, json_int_t size);
/* proxy_ip: the egress proxy's address on the user's network, or NULL. */
json_t	*sandbox_container_spec(const struct conf *, const char *user,
	    const char *proxy_ip, const struct sandbox_host *);
/* The value of SANDBOX_IDS_LABEL: "<first host id>+<count>" or "shared". */
void	sandbox_ids_label(const struct conf *, const struct sandbox_host *,
	    char *dst, size_t len);
/* The environment the sandbox gets (new reference; sbenv_make's). */
json_t	*sandbox_env(const struct conf *, const char *user,
	    const char *proxy_ip);
/* Of that, the file-link variables, added to env; none without a key. */
void	sandbox_link_env_file(const struct conf *, const char *user,
	    json_t *env);
/*
 * The egress proxy's fixed address on a network: the last usable address
 * of its IPv4 subnet (Podman hands out addresses from the low end).  From
 * the network's inspect JSON; 0, or -1 when it has no usable subnet.
 */
int	sandbox_proxy_ip_of(const json_t *net, char *dst, size_t len);
/* The user of a labelled Podman object (borrowed), or NULL. */
const char *sandbox_label_user(const json_t *obj);

/* ------------------------------------------------ backend_podman_objects.c */

/*
 * Brings the user's sandbox to "running and answering": creates what is
 * missing (network, volume, runtime dir, container), removes a container
 * stuck in "created", starts a stopped one, connects the egress proxy, and
 * waits for the agent to answer.  *created says whether a container was
 * made.  0, or -1 with err.  Not thread-safe per user: callers serialise.
 */
/*
 * Whether workspaces get their quota here: 1 yes; 0 no, with why for a
 * loud warning (rootless Podman cannot loop-mount; no mkfs.ext4), or
 * quietly when limits.workspace is 0; -1 when Podman cannot be asked.
 * why may be NULL.
 */
int	sandbox_quota_usable(const struct conf *, struct podman *, char *why,
	    size_t len);
int	sandbox_ensure(const struct conf *, struct podman *, const char *user,
	    int *created, struct berr *err);
/* Creates network, volume and container without starting; 0 or -1. */
int	sandbox_create(const struct conf *, struct podman *, const char *user,
	    struct berr *err);
int	sandbox_stop(const struct conf *, struct podman *, const char *user,
	    struct berr *err);
/* Removes container and network; the volume too when purge. */
int	sandbox_remove(const struct conf *, struct podman *, const char *user,
	    int purge, struct berr *err);

/*
 * About the image a sandbox runs (id: its full id): whether it is want
 * (the id of the image the config names now, podman_image_id; NULL: looked
 * up here), and when it was built (seconds since the epoch, -1 unknown).
 * 0, or -1 with err.
 */
int	sandbox_image_info(const struct conf *, struct podman *, const char *id,
	    const char *want, int *current, long long *built, struct berr *);
/* Removes the image id when nothing names it any more (a rebuild took its
 * tag) and no container uses it; else leaves it. */
void	image_drop_unnamed(struct podman *, const char *id);
/* Bytes the user's workspace image holds on disk (sparse), or -1 when the
 * workspace has no image (no quota). */
long long sandbox_disk_used(const struct conf *, const char *user);
/* Puts the egress proxy back on the network of every running sandbox (a
 * new proxy container is on none; a stopped sandbox gets it when it
 * starts); 0, or -1 with err (the first failure). */
int	sandbox_egress_reconnect(const struct conf *, struct podman *,
	    struct berr *err);

/* ---------------------------------------------------------------- egress.c */

struct buf;
/*
 * egress: manage: makes the proxy's network, writes this host's addresses
 * (<state_dir>/egress/host-addresses) and makes, replaces or starts its
 * container as needed; *replaced when the container is new (on no user's
 * network yet).  Nothing without manage.  0, or -1 with err.
 */
int	egress_keep(const struct conf *, struct podman *, int *replaced,
	    struct berr *err);
/* This host's addresses as the proxy reads them, appended to out. */
int	egress_host_list(const struct conf *, struct buf *out, struct berr *err);
int	egress_write_hosts(const struct conf *, struct berr *err);
/* The proxy's container spec (new reference); rootful: its own ids. */
json_t	*egress_container_spec(const struct conf *, int rootful);
/*
 * Whose sandbox each address is, for the proxy's log lines:
 * <state_dir>/egress/user-labels, "ADDRESS LABEL" a line, one per user.
 * egress_labels_note gives user's sandbox the address addr (NULL: forgets
 * the user; user NULL: neither, the names are only written again, as they
 * may have changed).  0, or -1 with err.
 */
#define LABEL_NAME_MAX	64	/* bytes of the name in a label: with "/" and
				   USER_ID_MAX, the 128 the proxy takes */
int	egress_labels_note(const struct conf *, const char *user,
	    const char *addr, struct berr *err);
/* name made safe for a log line, then "/" and user (the id alone without
 * a name, or when nothing of it is left), into dst. */
void	egress_label(const char *name, const char *user, char *dst,
	    size_t len);

/* ---------------------------------------------------------------- names.c */

#define NAME_MAX_BYTES	128
/* in, cleaned for a terminal (no controls, no format characters, UTF-8
 * only, trimmed, NAME_MAX_BYTES at most) into out; -1 when nothing is left. */
int	name_clean(const char *in, char *out, size_t len);
/* Keeps raw (cleaned) as the user's name when it changed; 0 or -1. */
int	names_record(const struct conf *, const char *user, const char *raw);
/* The user's name into dst; -1 when none is known. */
int	names_get(const struct conf *, const char *user, char *dst, size_t len);
/* The users named name (case-insensitive): *count of them, the first into
 * user.  0, or -1 when the names cannot be read. */
int	names_find(const struct conf *, const char *name, char *user,
	    size_t len, int *count);
void	names_forget(const struct conf *, const char *user);

/* ---------------------------------------------------------------- doctor.c */

/* The token vivariumctl gives the config check when none is set. */
#define CTL_NO_TOKEN	"unused-by-vivariumctl"
/* vivariumctl doctor: prints each check (JSON when json); 0 when nothing
 * failed, else 1.  fetch: a URL to get through the egress proxy, or NULL. */
int	doctor_run(const struct conf *, struct podman *, const char *fetch,
	    int json);

/* ---------------------------------------------------------------- idmap.c */

/*
 * The user's slot (1, 2, ...; its host ids in idmap_host_id), given on
 * first use when create, else 0 when it has none; 0, or -1 with err.
 */
int	idmap_slot(const struct conf *, const char *user, int create,
	    long *slot, struct berr *err);
/* Gives the user's slot back (remove-user --purge); 0 or -1. */
int	idmap_release(const struct conf *, const char *user);
/* The host id that id inside a sandbox of that slot is. */
unsigned long idmap_host_id(const struct conf *, long slot, unsigned int id);
long	idmap_max_slot(const struct conf *);

/* ---------------------------------------------------------------- quota.c */

/* 1 when mkfs.ext4 can be run, else 0 with why (for the warning). */
int	quota_tools(char *why, size_t len);
/*
 * The user's workspace image (<state_dir>/workspaces/<user>.img): made as
 * an empty ext4 filesystem of size bytes whose root is uid:gid when
 * missing; its path into path.  1 made, 0 there already, -1 with err.
 */
int	quota_image_ensure(const struct conf *, const char *user,
	    unsigned long long size, unsigned long uid, unsigned long gid,
	    char *path, size_t pathlen, struct berr *err);
void	quota_image_path(const struct conf *, const char *user, char *dst,
	    size_t len);
void	quota_image_remove(const struct conf *, const char *user);

/* ---------------------------------------------------------------- render.c */

/* vivariumctl render: the templates' directory (-t, else next to the
 * program, else the installed one) into dst. */
void	render_template_dir(const char *opt, char *dst, size_t len);
/* text with each {{NAME}} of vars (NAME, value, ..., NULL) replaced,
 * appended to out; other braces stay.  0, or -1 when out is full. */
int	render_text(const char *text, const char *const *vars, struct buf *out);
/* tdir/tname filled in, written to outdir/outname; 0, or -1 said on stderr. */
int	render_file(const char *tdir, const char *tname, const char *outdir,
	    const char *outname, const char *const *vars);
/* The user's .network and .container quadlets into outdir; the proxy's
 * address is asked of Podman.  0, or -1 said on stderr. */
/* render_user with a Podman client of its own (the network's address). */
int	render_quadlets(const struct conf *, const char *user,
	    const char *tdir, const char *outdir);
int	render_user(const struct conf *, struct podman *, const char *user,
	    const char *tdir, const char *outdir);
/*
 * vivariumctl render --kubernetes: the PVC, the NetworkPolicy and the Pod
 * the kubernetes backend would POST for user (slot: the uid slot, 0 when
 * none is known; userns: whether the Pod gets a user namespace, -1 when
 * the cluster could not be asked) as a YAML stream of JSON documents,
 * with a fresh random agent secret.  0, or -1 said on stderr.
 */
int	render_kube(const struct conf *, const char *user, long slot,
	    int userns, FILE *out);

/* ---------------------------------------------------------------- pool.c */

enum sb_state {
	SB_UNKNOWN,	/* not looked at yet */
	SB_STARTING,
	SB_READY,
	SB_STOPPING,
	SB_STOPPED,
	SB_FAILED,
	SB_NSTATES,
};

struct pool_entry;
struct backend;

struct berr;		/* backend.h: status, and a sentence for people */

/* The backend (backend.h) is borrowed and outlives the pool. */
int	pool_init(const struct conf *, struct backend *);
/* Lists the backend's sandboxes and adopts them. */
int	pool_adopt(void);
/*
 * Returns the user's sandbox, running and ready, counted as in use until
 * pool_release.  NULL with err (400 refused, 503 backend down, 500 other).
 * stale_gen: 0, or the pool_gen of a sandbox whose agent the caller could
 * not reach: then it is looked at again unless someone already did.
 */
struct pool_entry *pool_acquire(const char *user, unsigned stale_gen,
	    struct berr *err);
void	pool_release(struct pool_entry *);
/* How to reach its agent: what the backend's last ensure said. */
const struct agent_addr *pool_addr(const struct pool_entry *);
/* A kept connection to the sandbox's agent, or -1; and giving one back. */
int	pool_conn_take(struct pool_entry *);
void	pool_conn_put(struct pool_entry *, int fd);
unsigned pool_gen(const struct pool_entry *);
/* Stops sandboxes idle for idle_stop_after; called by the reaper thread. */
void	pool_reap(void);
void	pool_count_states(long counts[SB_NSTATES]);
const char *pool_state_name(enum sb_state);
void	pool_shutdown(void);

/* ---------------------------------------------------------------- metrics.c */

void	metrics_request(int status);
void	metrics_spawn(double seconds);
/* The backend's name (backend.h), the errors' label; "podman" until set. */
void	metrics_backend(const char *name);
/* A call to the backend's engine failed (unreachable, or a 5xx). */
void	metrics_backend_error(void);
/*
 * Appends the Prometheus text: a few kilobytes (at most 500 status codes,
 * the states, the histogram), so a buffer of 1 MiB always holds it.
 */
void	metrics_render(struct buf *);

#endif
