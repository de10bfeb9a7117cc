/*
 * agent.h: vivarium-agent's private header (everything the agent's files
 * share).  run.h is the run half's API; this is the MCP/HTTP half.
 */
#ifndef VIVARIUM_AGENT_H
#define VIVARIUM_AGENT_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "buf.h"
#include "config.h"

/* Protocol versions we speak, newest first. */
#define MCP_LATEST_VERSION	"2025-11-25"
/* What a request without MCP-Protocol-Version is assumed to use. */
#define MCP_DEFAULT_VERSION	"2025-03-26"

/* Request bodies over this get 413; 8 MiB leaves room for data pasted into code. */
#define AGENT_MAX_BODY		(8u * 1024 * 1024)

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
};

/* Fills cfg from the environment; every problem goes to diag. 0 or -1. */
int	agent_config_load(struct agent_config *cfg, struct confdiag *diag);
void	agent_config_release(struct agent_config *);

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

/* Serialises runs per workspace: lock and unlock by the workspace path. */
struct wslock;
struct wslock *wslock_acquire(const char *root);	/* blocks; NULL on ENOMEM */
void	wslock_release(struct wslock *);

/* ------------------------------------------------------------ sweep.c */

/*
 * VIVARIUM_SWEEP (containers only): when the last run in flight ends, every
 * process but the agent, PID 1 and the warm zygote is killed with one
 * kill(-1, SIGKILL).  1 with the reason in why when this process must not
 * do that (it is PID 1 or root).
 */
int	sweep_refused(char *why, size_t whylen);
/* Turns sweeping on or off; keep() names a process to spare (the zygote's
 * pid, or -1), killed() is called when a kill took it too.  Both may be NULL. */
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
};

#define RPC_PARSE_ERROR		-32700
#define RPC_INVALID_REQUEST	-32600
#define RPC_METHOD_NOT_FOUND	-32601
#define RPC_INVALID_PARAMS	-32602
#define RPC_INTERNAL_ERROR	-32603

/* What one request runs against. */
struct agent_ctx {
	const struct agent_config *cfg;
	const char	*workspace;		/* absolute path of this caller's workspace */
	const char	*label;			/* for logs: "workspace" or "user <id>" */
};

/* New {tools: [...]}. */
json_t	*tools_list(void);
/* New CallToolResult, or NULL with err filled (unknown tool, bad arguments). */
json_t	*tools_call(const struct agent_ctx *, const char *name,
	    json_t *arguments, struct rpc_error *err);

/* ------------------------------------------------------------ mcp.c */

/*
 * Handles one POST body.  protocol_version is the MCP-Protocol-Version
 * header (NULL when absent).  Returns the HTTP status and sets *reply to a
 * new JSON body, or to NULL for 202 (nothing to answer).
 */
unsigned int mcp_handle(const struct agent_ctx *, const char *protocol_version,
	    const char *body, size_t len, json_t **reply);
/* 1 when version is one we speak. */
int	mcp_version_supported(const char *version);
/* New JSON-RPC error response (id borrowed, may be NULL). */
json_t	*mcp_error(json_t *id, int code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------ http.c */

/* Starts the listeners; 0, or -1 (logged). */
int	agent_http_start(const struct agent_config *);
/* Stops accepting, waits up to grace seconds for requests in progress, stops. */
void	agent_http_stop(double grace);

#endif
