/*
 * agent.h: vivarium-agent's private header (everything the agent's files
 * share).  run.h is the run half's API; this is the MCP/HTTP half.
 */
#ifndef VIVARIUM_AGENT_H
#define VIVARIUM_AGENT_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/stat.h>

#include <jansson.h>

#include "buf.h"
#include "config.h"
#include "link.h"
#include "text.h"

/* Protocol versions we speak, newest first. */
#define MCP_LATEST_VERSION	"2025-11-25"	/* the newest with initialize */
#define MCP_STATELESS_VERSION	"2026-07-28"	/* per-request _meta, no session */
/* What a request without MCP-Protocol-Version is assumed to use. */
#define MCP_DEFAULT_VERSION	"2025-03-26"

/* Request bodies over this get 413; 8 MiB leaves room for data pasted into code. */
#define AGENT_MAX_BODY		(8u * 1024 * 1024)

/* VIVARIUM_AGENT_SECRET's length bounds (printable ASCII, no spaces). */
#define AGENT_SECRET_MIN	32
#define AGENT_SECRET_MAX	128

/* ------------------------------------------------------------ config.c */

/* Parsed once at startup from VIVARIUM_* (see docs/agent.md). */
struct agent_config {
	char		*workdir;		/* owned; absolute, exists */
	const char	*host;			/* borrowed from environ */
	long		 port;			/* -1: no TCP listener */
	const char	*socket;		/* borrowed; NULL: no unix socket */
	mode_t		 socket_mode;		/* VIVARIUM_SOCKET_MODE, default 0600 */
	long		 max_timeout;		/* seconds */
	long		 output_limit;		/* characters per stream */
	long		 max_images;
	long		 max_image_side;
	long		 max_image_bytes;	/* per returned PNG */
	long		 max_result_image_bytes; /* all PNGs of one result */
	int		 persist_namespace;
	unsigned long long namespace_max_bytes;
	int		 state_summary;
	const char	*user_header;		/* borrowed; NULL: one shared workspace */
	const char	*allowed_origins;	/* borrowed; "" when unset */
	const char	*python;		/* borrowed */
	char		*pythonpath;		/* owned; NULL when none */
	int		 warm;			/* VIVARIUM_WARM */
	const char	*warm_imports;		/* borrowed; VIVARIUM_WARM_IMPORTS */
	int		 sweep;			/* VIVARIUM_SWEEP */
	const char	*pycheck_cache;		/* VIVARIUM_PYCHECK_CACHE */
	/* File links (files.c, docs/agent.md "Files in and out"). */
	const char	*public_url;		/* borrowed; NULL: from the listener */
	int		 links;			/* 1: a key to sign links with */
	char		*link_key_file;		/* owned; NULL: none to load */
	struct link_keys link_keys;
	const char	*link_user;		/* borrowed; the one user, or NULL */
	long		 download_lifetime;	/* seconds */
	long		 upload_lifetime;
	long		 link_max_lifetime;
	unsigned long long upload_max;		/* bytes per upload */
	/*
	 * VIVARIUM_AGENT_SECRET(_FILE): what every TCP request but /health
	 * must carry as Authorization: Bearer (a sandbox reached over a
	 * cluster's network, docs/agent.md).  secret_len 0: none.
	 */
	char		 secret[AGENT_SECRET_MAX + 1];
	size_t		 secret_len;
	/*
	 * VIVARIUM_AGENT_TOKEN(_FILE): what /mcp requests on TCP must carry
	 * as Authorization: Bearer, for a standalone agent reached beyond
	 * loopback; link pages and /health stay open.  token_len 0: none.
	 */
	char		 token[AGENT_SECRET_MAX + 1];
	size_t		 token_len;
};

/* Fills cfg from the environment; every problem goes to diag. 0 or -1. */
int	agent_config_load(struct agent_config *cfg, struct confdiag *diag);
void	agent_config_release(struct agent_config *);
/* 1 when the TCP listener is reachable beyond loopback (VIVARIUM_HOST). */
int	agent_config_exposed(const struct agent_config *);
/* What is logged at start when it is, with no token or secret. */
extern const char agent_exposed_warning[];
/* Loads (on first start: makes) the link key file; 0, or -1 with err. */
int	agent_config_links(struct agent_config *, char *err, size_t errlen);

/* ------------------------------------------------------------ workspace.c */

/* The user-id rule of VIVARIUM_USER_HEADER: 1 when id is a safe name. */
int	workspace_user_id_valid(const char *id);
/*
 * Makes sure users/<id>/ exists under workdir (without following links) and
 * writes its path to out.  0, or -1 with the reason in err.
 */
int	workspace_user_dir(const char *workdir, const char *id, char *out,
	    size_t outlen, char *err, size_t errlen);

/* The workspace listing as text into out (bounded). 0, or -1 with err. */
int	workspace_list(const char *root, struct buf *out, char *err,
	    size_t errlen);
/*
 * The text of the file at path (relative to root) into out, at most
 * max_chars characters, truncation marked.  Returns 0; -1 when refused or
 * failed, with a plain-words reason in err.
 */
int	workspace_read_text(const char *root, const char *path, long max_chars,
	    struct buf *out, char *err, size_t errlen);

/*
 * Opens the regular file at path (relative to root) for reading, by the
 * read_text_file rules: no absolute path, no "..", no symbolic link
 * anywhere, not the runner's .vivarium.  A descriptor with *st filled, or
 * -1 with a plain-words reason in err.
 */
int	workspace_open_file(const char *root, const char *path, struct stat *st,
	    char *err, size_t errlen);


/* Serialises runs per workspace: lock and unlock by the workspace path. */
struct wslock;
struct wslock *wslock_acquire(const char *root);	/* blocks; NULL on ENOMEM */
void	wslock_release(struct wslock *);

/* ------------------------------------------------------------ init.c */

/*
 * As PID 1 (a Pod, podman kube play: no --init), forks: returns in the
 * child, which is the agent; PID 1 reaps, passes signals on to it and
 * exits with its status.  Elsewhere returns at once.  Before any thread.
 */
void	init_maybe(void);

/* ------------------------------------------------------------ sweep.c */

/*
 * VIVARIUM_SWEEP (containers only): when the last run in flight ends, every
 * process but the agent, PID 1 and the warm zygote is killed with one
 * kill(-1, SIGKILL).  1 with the reason in why when this process must not
 * do that (it is PID 1 or root).
 */
int	sweep_refused(char *why, size_t whylen);
/* Turns sweeping on or off; keep() names a process to spare (the zygote's
 * pid, or -1) with its children (waiters) and their live children (the
 * spare); killed() is called when a kill took it too.  Both may be NULL. */
void	sweep_setup(int enabled, pid_t (*keep)(void), void (*killed)(void));
/* Around every run: begin before anything starts, end after it is reaped.
 * end sweeps when it was the last run in flight and returns how many
 * stray processes it killed (0 when none or when sweeping is off). */
void	sweep_run_begin(void);
int	sweep_run_end(void);

/* ------------------------------------------------------------ tools.c */

/* A JSON-RPC error to answer instead of a result. */
struct rpc_error {
	int		 code;
	char		 message[512];
	json_t		*data;		/* error.data, owned (new), or NULL */
};

#define RPC_PARSE_ERROR		-32700
#define RPC_INVALID_REQUEST	-32600
#define RPC_METHOD_NOT_FOUND	-32601
#define RPC_INVALID_PARAMS	-32602
#define RPC_INTERNAL_ERROR	-32603
/*
 * URL elicitation required (MCP 2025-11-25): data is {elicitations:
 * [{mode: "url", elicitationId, url, message}]}.  A tool says it so in
 * every era; mcp.c answers it as the era does (an error before
 * 2026-07-28, an input_required result since).
 */
#define RPC_URL_ELICITATION	-32042
/* MCP 2026-07-28: headers that disagree with the body (HTTP 400), and a
 * per-request protocol version this server does not speak. */
#define RPC_HEADER_MISMATCH	-32020
#define RPC_UNSUPPORTED_VERSION	-32022
/* Not an error code: the request was cancelled, so nothing is answered. */
#define RPC_NO_REPLY		1

/*
 * How a long call reaches its client while it runs (http.c, sse.c fill
 * it; NULL in agent_ctx when nobody listens, as in tests).
 */
struct call_io {
	int		 hangup_fd;		/* the client's connection, watched
						 * for its closing; -1: none */
	int		 abandon_fd;		/* polls readable when the answer is
						 * no longer wanted; -1: none */
	/* NULL unless the client asked for progress: called about once a
	 * second with the seconds so far and the last line printed */
	void		(*progress)(void *arg, double elapsed, const char *line);
	void		*arg;
};

/* What one request runs against. */
struct agent_ctx {
	const struct agent_config *cfg;
	const char	*workspace;		/* absolute path of this caller's workspace */
	const char	*label;			/* for logs: "workspace" or "user <id>" */
	const char	*user;			/* VIVARIUM_USER_HEADER's id, or NULL */
	const struct call_io *io;		/* borrowed, or NULL */
	json_t		*request_id;		/* borrowed: the tools/call's id */
	unsigned int	 client;		/* CLIENT_* the client declared */
	char		*session_out;		/* initialize writes the id to mint
						   here (MCP_SESSION_SIZE), or NULL */
	/* 2026-07-28 (mcp.c): the Mcp-Method and Mcp-Name headers (NULL
	 * when absent); and, on a tools/call retried after input_required,
	 * the client's params.inputResponses (borrowed, or NULL). */
	const char	*hdr_method, *hdr_name;
	json_t		*input_responses;
};

/*
 * What the client said it can do, as far as our tools care.  A 2026-07-28
 * request says it in its _meta; before that era only initialize does, so
 * the agent mints a session id that carries these bits (mcp_session_*):
 * no table, nothing to expire, and any agent of the image reads it back.
 * A forged id can only make a client receive what it says it handles.
 */
#define CLIENT_ELICIT_URL	0x01u	/* capabilities.elicitation.url */
#define CLIENT_UI		0x02u	/* extensions io.modelcontextprotocol/ui */
#define MCP_SESSION_SIZE	32	/* "vv1-FF-" + 16 hex + NUL fits */

/* Reads the tools' definitions (sandbox-agent/tools/NAME.json, compiled in);
 * 0, or -1 with the file and why in ebuf.  At start-up: else the first
 * tools_list or tools_def does, and a broken file fails only that. */
int	 tools_load(char *ebuf, size_t len);
/* New {tools: [...]}; the schemas say cfg's limits. */
json_t	*tools_list(const struct agent_config *cfg);
/* New copy of one tool's definition, as its file says (workspace_view,
 * which ui.c lists); NULL when there is none. */
json_t	*tools_def(const char *name);
/* New CallToolResult, or NULL with err filled (unknown tool, bad arguments). */
json_t	*tools_call(const struct agent_ctx *, const char *name,
	    json_t *arguments, struct rpc_error *err);
/* With VIVARIUM_WARM, starts the zygote (and its first spare) without
 * waiting for it, so that the first run after a start is warm whenever
 * the client's first request is not a run. */
void	tools_warm_start(const struct agent_config *);

/* ------------------------------------------------------------ files.c */

struct MHD_Connection;

/* Once, before the listeners start; files_listening gives the TCP address
 * that makes the default public URL. */
void	files_init(const struct agent_config *);
void	files_listening(const char *host, int port);
/* The link pages on TCP (/f/, /up/, /ws/: common/fileweb.h). */
int	files_serve_links(struct MHD_Connection *, const char *url,
	    const char *method, const char *upload_data,
	    size_t *upload_data_size, void **con_cls);
/* /_files/raw, /_files/list, /_files/upload: the unix socket, and TCP
 * with VIVARIUM_AGENT_SECRET (what only the supervisor reaches); on the
 * unix socket (on_unix) also files by descriptor: /_files/raw?fd=1 and
 * /_files/receive (docs/agent.md). */
int	files_internal(struct MHD_Connection *, int on_unix, const char *ws,
	    const char *url, const char *method, const char *upload_data,
	    size_t *upload_data_size, void **con_cls);
/* The link tools' results (CallToolResult, new reference). */
json_t	*files_tool_share(const struct agent_ctx *, json_t *args);
/* NULL with err -32042 (data: the elicitation) for a client that shows
 * URL elicitations and has not been asked yet; elicit.h. */
json_t	*files_tool_upload(const struct agent_ctx *, json_t *args,
	    struct rpc_error *err);
json_t	*files_tool_workspace(const struct agent_ctx *, json_t *args);

json_t	*files_tool_view(const struct agent_ctx *, json_t *args);
/* The links' base URL (no trailing slash), or NULL when there are no
 * links (no key or no public address). */
const char *files_link_base(void);

/* ------------------------------------------------------------ ui.c */

/* The MCP Apps view (docs/agent.md, "The workspace view"). */
#define UI_WORKSPACE_URI	"ui://vivarium/workspace"
#define UI_MIME_TYPE		"text/html;profile=mcp-app"
#define UI_EXTENSION		"io.modelcontextprotocol/ui"
/* MCP's error for resources/read of an unknown uri. */
#define RPC_RESOURCE_NOT_FOUND	-32002

/* New {resources: [...]}, or NULL when out of memory. */
json_t	*ui_resources_list(void);
/* New ReadResourceResult for uri, or NULL with err filled.  link_base
 * (may be NULL) is the links' base URL, whose origin the CSP allows. */
json_t	*ui_resource_read(const char *uri, const char *link_base,
	    struct rpc_error *err);
/* Adds _meta.ui to the tools the view shows, and with with_app_tools the
 * app-only workspace_view.  0, or -1 when out of memory. */
int	ui_tools_decorate(json_t *tools_list_result, int with_app_tools);

/* ------------------------------------------------------------ jobs.c */

#define JOB_ID_LEN	24		/* hex digits */
#define JOB_KEEP_S	3600		/* an uncollected result is kept this long */
#define JOBS_MAX	32		/* background jobs kept at once */
#define JOBS_PER_USER	8		/* of those, one user's (per-user mode) */

struct job;
struct run_limits;
struct run_result;
struct run_request;

enum { JOB_WAIT_DONE, JOB_WAIT_TIMEOUT, JOB_WAIT_HANGUP };

/* A run, not started yet; copies code and strings.  NULL when out of memory. */
struct job *job_new(const struct run_limits *, const char *code,
	    size_t code_len, long timeout_s, long asked_s, int fresh,
	    const char *workspace, const char *label);
/* Starts its thread (it waits for the workspace lock).  0, or -1 with err. */
int	job_start(struct job *, char *err, size_t errlen);
/* Kills the run (or makes it not start); 1 the first time, 0 after or
 * when it is done already.  why goes into the result's note. */
int	job_stop(struct job *, const char *why);
int	job_stop_asked(struct job *);
int	job_done(struct job *);
double	job_elapsed(struct job *);
/*
 * Waits up to seconds (< 0: no limit) for the end, watching io's
 * descriptors: JOB_WAIT_DONE, JOB_WAIT_TIMEOUT, or JOB_WAIT_HANGUP when
 * the client went away.
 */
int	job_wait(struct job *, double seconds, const struct call_io *io);
/* Once done: the result (borrowed from the job), rc as run_python's and
 * its errbuf; NULL while it runs. */
const struct run_result *job_result(struct job *, int *rc,
	    const char **errbuf);
const struct run_request *job_request(struct job *, long *asked_s);
/* The last line printed so far, and the tail of the output (valid UTF-8). */
void	job_last_line(struct job *, char *out, size_t outlen);
void	job_output_so_far(struct job *, char *out, size_t outlen,
	    unsigned long long *total);
void	job_unref(struct job *);
/*
 * Background jobs: registering gives it an id; find takes a reference.
 * Refused (-1, err naming the cap and the workspace's jobs) when the
 * table holds JOBS_MAX jobs, or per_workspace of the job's workspace.
 */
int	job_register(struct job *, int per_workspace, char *err,
	    size_t errlen);
const char *job_id(struct job *);
struct job *job_find(const char *workspace, const char *id);
/* The oldest background job of the workspace not done yet (it runs, or
 * waits for the workspace), with a reference; NULL when there is none. */
struct job *job_busy(const char *workspace);
void	job_forget(struct job *);
/* Runs started and not done yet, foreground and background. */
int	jobs_running(void);
/* Stops every background job and waits up to grace seconds for them. */
void	jobs_shutdown(double grace);

/* ------------------------------------------------------------ cancel.c */

/* While a tools/call runs, its id (within scope, the workspace) names
 * its job.  0 or -1. */
int	cancel_track(const char *scope, json_t *id, struct job *);
void	cancel_untrack(struct job *);
/* notifications/cancelled: stops what id names; how many it stopped. */
int	cancel_request(const char *scope, json_t *id, const char *why);

/* ------------------------------------------------------------ mcp.c */

/*
 * Handles one POST body.  protocol_version is the MCP-Protocol-Version
 * header (NULL when absent).  Returns the HTTP status and sets *reply to a
 * new JSON body, or to NULL for 202 (nothing to answer).
 */
unsigned int mcp_handle(const struct agent_ctx *, const char *protocol_version,
	    const char *body, size_t len, json_t **reply);
/*
 * What mcp_handle would refuse before answering (a 2026-07-28 request with
 * a bad envelope or headers): its HTTP status with *reply (new) set, or 0.
 * For answers that begin before the call runs (sse.c).
 */
unsigned int mcp_refused(const struct agent_ctx *, const char *protocol_version,
	    const char *body, size_t len, json_t **reply);
/* 1 when version is one we speak with initialize (the 2025 versions). */
int	mcp_version_supported(const char *version);
/*
 * On a tools/call retried after an input_required result (2026-07-28):
 * the action ("accept", "decline", "cancel") the client answered to the
 * input request named key (a URL elicitation's elicitationId), or NULL.
 * What the client says is a claim: a tool checks what it can see itself.
 */
/* CLIENT_* bits from an initialize's params.capabilities. */
unsigned int mcp_client_caps(json_t *capabilities);
/* Writes a new session id carrying client into out (MCP_SESSION_SIZE);
 * 0, or -1 when no randomness could be had. */
int	mcp_session_mint(unsigned int client, char *out);
/* The CLIENT_* bits a session id carries; 0 for NULL or a foreign id. */
unsigned int mcp_session_client(const char *session_id);

/* ------------------------------------------------------------ sse.c */

struct MHD_Connection;
/*
 * 1 when this POST must be answered as an SSE stream: one tools/call
 * with params._meta.progressToken, from a client that accepts
 * text/event-stream.
 */
int	sse_wanted(const char *accept, const char *body, size_t len);
/* Answers it so (progress notifications, then the response).  ctx's
 * strings are copied. */
int	sse_serve(struct MHD_Connection *, const struct agent_ctx *,
	    const char *protocol_version, const char *body, size_t len);

/* ------------------------------------------------------------ http.c */

/* Starts the listeners; 0, or -1 (logged). */
/*
 * pycheck.c: asks the runs' Python once at start which modules it has.
 * Off the image (no VIVARIUM_SWEEP) it logs what the runner needs and
 * lacks; everywhere it keeps a line for the instructions saying which of
 * the usual libraries import and which do not.
 */
/* 0: all there, 1: the runner or the data stack lacking, -1: no answer. */
int	pycheck(const struct agent_config *);
/* "Installed: ...\nNot installed: ...", or "" when the check failed. */
const char *pycheck_modules(void);

int	agent_http_start(const struct agent_config *);
/* Stops accepting, waits up to grace seconds for requests in progress, stops. */
void	agent_http_stop(double grace);

#endif
