/*
 * egress.h: vivarium-egress, the forward proxy that lets sandboxes reach
 * public web servers and nothing else.
 *
 * Shape: one thread runs an epoll loop over non-blocking sockets (loop.c);
 * names are resolved by a small thread pool (resolve.c) so getaddrinfo never
 * blocks the loop.  Every address a name resolves to is classified
 * (policy.c); only a sockaddr that passed is ever handed to connect(2), and
 * it is the same sockaddr the check looked at.  Requests are parsed strictly
 * (common/http1.c); connections are driven by relay.c.
 */
#ifndef VIVARIUM_EGRESS_H
#define VIVARIUM_EGRESS_H

#include <sys/socket.h>
#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "http1.h"

/* ------------------------------------------------------------ conf.c */

struct cidr {
	int		family;		/* AF_INET or AF_INET6 */
	uint8_t		addr[16];	/* network order; 4 bytes used for v4 */
	int		plen;
};

#define EGRESS_MAX_LISTEN	8
#define EGRESS_MAX_PORTS	64
#define EGRESS_MAX_ALLOW	64

struct egress_conf {
	char		*listen[EGRESS_MAX_LISTEN];	/* owned: "host:port" */
	int		 nlisten;
	uint16_t	 ports[EGRESS_MAX_PORTS];
	int		 nports;
	struct cidr	 allow[EGRESS_MAX_ALLOW];
	int		 nallow;
	long		 header_timeout;	/* seconds */
	long		 connect_timeout;
	long		 idle_timeout;
	long		 max_conns;
	long		 max_per_client;
	long		 max_header_bytes;
	long		 resolver_threads;
	long		 workers;		/* event loop threads */
	char		*host_addresses;	/* owned: file of the host's addresses */
	int		 host_addresses_none;	/* "none": runs without that file */
	int		 host_addresses_given;	/* even if wrongly (said once) */
	char		*user_labels;		/* owned: file of labels; NULL: none */
	int		 verbose;
};

void	conf_defaults(struct egress_conf *);
/* Reads path (may be NULL: defaults only), then the environment.  Returns
 * 0, or -1 with every problem in *diag. */
int	conf_load(struct egress_conf *, const char *path, struct confdiag *);
void	conf_release(struct egress_conf *);
/* "10.0.0.0/8", "::1", "2001:db8::/32".  0 or -1. */
int	cidr_parse(const char *, struct cidr *);
/* "80,443" or one number.  0 or -1. */
int	conf_parse_ports(const char *, struct egress_conf *);

/* ------------------------------------------------------------ policy.c */

/*
 * Classifies one resolved address for a connection to port.  May rewrite
 * *ss in place (an IPv4-mapped IPv6 address becomes the plain IPv4 sockaddr
 * it stands for, so that what is dialled is what was checked).  Returns NULL
 * when the address may be dialled, else a static one-line reason.
 */
const char *policy_classify(const struct egress_conf *,
	    struct sockaddr_storage *ss, uint16_t port);
/* Learn the proxy's own addresses and networks (its interfaces); 0 or
 * -1. */
int	policy_refresh_self(void);
/* Reads them, and has the classifier read them again whenever the kernel
 * tells of an address change; 0 or -1 (errno) when it cannot listen. */
int	policy_watch_self(void);
void	policy_add_listener(const struct sockaddr_storage *);
/* The file listing the host's addresses (host_addresses): read at start
 * by policy_open_host, which fails (why in err) when the file is missing,
 * unreadable or lists nothing; then by policy_refresh_host every few
 * seconds, when it changed.  policy_set_host_file only names it (NULL:
 * none). */
int	policy_open_host(const char *path, char *err, size_t errsz);
void	policy_set_host_file(const char *);
int	policy_refresh_host(void);
size_t	policy_host_count(void);
void	policy_free(void);
int	policy_port_allowed(const struct egress_conf *, uint16_t);
/* Formats the address (no port) into out; returns out. */
const char *sockaddr_str(const struct sockaddr_storage *, char *out,
	    size_t outsz);

/* ------------------------------------------------------------ labels.c */

/*
 * Who is behind a client address, for the log lines (user=LABEL) and
 * never for a decision: the file user_labels names, "ADDRESS LABEL" a
 * line, written by the supervisor.  labels_open names it (NULL: none) and
 * reads it; labels_refresh reads it again when it changed (worker 0, at
 * most once a second).  A missing or bad file means no labels, logged
 * once; nothing here fails the proxy.
 */
#define LABEL_MAX	128	/* bytes of one label */
#define LABELS_MAX	4096	/* addresses in the file */
#define LABELS_LINE_MAX	255	/* bytes of a line, its newline not counted */

void	labels_open(const char *path);
void	labels_refresh(void);
/* The label of the client at ss into out (outsz > LABEL_MAX): 1, or 0
 * and "" when it has none. */
int	labels_find(const struct sockaddr_storage *, char *out, size_t outsz);
size_t	labels_count(void);
void	labels_free(void);

/* ------------------------------------------------------------ resolve.c */

struct conn;

struct rworker;

struct rclient;

struct resolve_job {
	struct conn		*conn;		/* NULL once cancelled */
	struct rworker		*w;		/* the worker to hand it back to */
	struct rclient		*client;	/* its client's queue; resolver's */
	int			 queued;	/* still waiting for a thread */
	char			 host[H1_MAX_HOST + 1];
	int			 err;		/* getaddrinfo's */
	struct addrinfo		*res;		/* owned */
	struct resolve_job	*next;
};

/* Starts nthreads threads, the number kept; more are started while
 * lookups hang (resolve.c says how many). */
int	resolver_start(int nthreads);
/* Each event loop thread registers once; returns the eventfd it polls for
 * its finished jobs, or -1. */
int	resolver_register(void);
/* Queues a lookup on the queue of the conn's client (its peer address);
 * 0 or -1. */
int	resolver_submit(struct conn *, const char *host,
	    struct resolve_job **jobp);
/* Cancels a job still owned by the resolver (the conn went away). */
void	resolver_cancel(struct resolve_job *);
/* Takes the finished jobs (a list the caller frees with resolve_job_free). */
struct resolve_job *resolver_take(void);
void	resolve_job_free(struct resolve_job *);

/* ------------------------------------------------------------ ev.c, loop.c */

/*
 * A socket in this thread's epoll set.  loop.c waits and calls each ready
 * ev's cb; whoever owns the socket (loop.c's listeners and resolver,
 * relay.c's connections) sets cb and ptr and says which events it wants
 * with ev_set.  So relay code never calls into the loop, and runs without
 * it in the unit tests.
 */
struct ev {
	void		(*cb)(struct ev *, uint32_t events);
	void		*ptr;		/* the owner's */
	int		 fd;
	int		 reg;		/* added to the epoll set */
	uint32_t	 mask;		/* registered epoll events */
	uint64_t	 added;		/* ev_turn of its EPOLL_CTL_ADD */
};

/* This thread's epoll set (-1: none yet), and the count of epoll_wait
 * returns: an ev added during a turn can have no event of its own in that
 * turn's batch (see ev_dispatch). */
extern _Thread_local int ev_epfd;
extern _Thread_local uint64_t ev_turn;
void	ev_set(struct ev *, uint32_t mask);
void	ev_close(struct ev *);
struct epoll_event;
/* Calls the callbacks of one epoll_wait's n events. */
void	ev_dispatch(const struct epoll_event *, int n);
/* Milliseconds on the monotonic clock. */
uint64_t now_ms(void);

int	loop_run(const struct egress_conf *);
/* Per-client connection counts; loop.c owns them. */
struct clientcount;

/* ------------------------------------------------------------ relay.c */

#define EGRESS_MAX_ADDRS	16

/*
 * A connection has two sides, each with its socket, and two directions
 * between them: direction d reads side d and writes the other one, so
 * DIR_UP carries the client's bytes to the upstream and DIR_DOWN the
 * upstream's back.  What each direction holds is one struct dir, so the
 * code moving bytes is written once, for either direction.
 */
enum { SIDE_CLIENT = 0, SIDE_UPSTREAM = 1 };
enum { DIR_UP = 0, DIR_DOWN = 1 };

struct dir {
	struct buf		 q;		/* bytes waiting for the destination */
	/* Bulk tunnels move data with splice(2) through a pipe, made
	 * once the direction has carried SPLICE_AFTER bytes. */
	int			 pipe[2];	/* -1 until made */
	size_t			 pend;		/* bytes in the pipe */
	int			 pfull;		/* the pipe took no more */
	int			 eof;		/* the source sent its end */
	int			 shut;		/* the destination was shut for writing */
	unsigned long long	 bytes;		/* delivered to the destination */
};

struct conn {
	struct ev		 ev[2];		/* [SIDE_UPSTREAM].fd -1 when none */
	struct dir		 dir[2];
	const struct egress_conf *conf;
	struct conn		*prev, *next;	/* all connections */
	/* Called once as the connection ends (loop.c gives the client's
	 * slot back); NULL: nothing to call. */
	void			(*release)(struct clientcount *);
	struct clientcount	*cc;

	int			 state;
	char			 client[64];	/* "addr:port" */
	char			 peer[INET6_ADDRSTRLEN];	/* "addr" */
	char			 user[LABEL_MAX + 1];	/* its label; "": none */
	char			 target[H1_MAX_HOST + 8];
	char			 addr[64];	/* the dialled address */
	char			 cur_host[H1_MAX_HOST + 1];
	uint16_t		 cur_port;
	const char		*verdict;
	char			 reason[320];
	int			 nreq;
	int			 up_connected;
	int			 client_reset;	/* the client aborted (RST) */
	int			 resp_sent;	/* bytes of this response sent */

	struct buf		 in;		/* bytes read from the client, unsent */
	struct buf		 uin;		/* response head bytes from upstream */

	struct resolve_job	*job;
	struct sockaddr_storage	 addrs[EGRESS_MAX_ADDRS];
	int			 naddrs, nexti;

	/* plain HTTP */
	int			 connect_method;
	struct body		 reqbody;
	struct body		 respbody;
	int			 req_done, resp_head_done, resp_done;
	int			 head_request;
	int			 want_close;
	/* A request sent on a reused upstream that it may be sent again on
	 * a fresh one (see relay_http_retry), kept until its response starts;
	 * empty otherwise. */
	struct buf		 resend;
	int			 retries;	/* requests sent again (logged) */

	uint64_t		 started;
	uint64_t		 deadline;	/* of the current phase; 0 = none */
	uint64_t		 last_io;
};

/* A connection for an accepted socket; its events go to relay.c through
 * the ev callbacks.  NULL on ENOMEM. */
struct conn *conn_new(const struct egress_conf *, int fd,
	    const struct sockaddr_storage *);
void	conn_resolved(struct resolve_job *);
/* Checks the connection's deadlines; may free it. */
void	conn_tick(struct conn *, uint64_t now);
void	conn_free(struct conn *);
/* Frees the connections closed during this loop turn. */
void	conn_reap(void);
/* Writes the log lines of the connections closed during this loop turn
 * (one write(2) for all of them). */
void	conn_log_flush(void);
/* Sends a short error reply and closes. */
void	conn_fail(struct conn *, int status, const char *reason);
/* The list of live connections, for timers. */
extern _Thread_local struct conn *conn_list;	/* this worker's */
extern _Atomic long conn_count;			/* all workers' */

/* What relay.c, the connection, and relay_http.c, the HTTP exchange on it,
 * use of each other. */
enum {
	ST_HEAD, ST_RESOLVE, ST_CONNECT, ST_TUNNEL, ST_HTTP, ST_CLOSING,
	ST_DEAD,
};

#define QUEUE_MAX	(1024 * 1024)
#define RESP_HEAD_MAX	(64 * 1024)
#define CLOSING_GRACE	2000	/* ms to flush a reply and drain */

void	relay_set_reason(struct conn *, const char *verdict,
	    const char *reason);
/* Sends in direction d (DIR_UP, DIR_DOWN), queueing what does not fit;
 * 0 or -1. */
int	relay_put(struct conn *, int d, const char *, size_t);
void	relay_update_masks(struct conn *);
void	relay_close_upstream(struct conn *);
/* Resolves (or reads as a literal) host and dials it. */
void	relay_begin_upstream(struct conn *, const char *host, uint16_t port);
/* Dials the next of the checked addresses in c->addrs. */
void	relay_dial_next(struct conn *, int lasterr);

/* Parses the request at the start of c->in and sets the exchange going. */
void	relay_http_parse(struct conn *);
/* Bytes from the client (the request's body) and from the upstream (the
 * response; n 0 at its EOF) during an exchange. */
void	relay_http_request(struct conn *, const char *, size_t n);
void	relay_http_response(struct conn *, const char *, size_t n);
/* Sends the request a stale kept-alive upstream dropped once more, on a
 * fresh connection; 0, or -1 when the caller must fail the exchange. */
int	relay_http_retry(struct conn *, int err);

#endif
