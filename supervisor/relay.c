/*
 * relay.c: an MCP request relayed to the user's agent, and its answer
 * streamed back as it comes.
 *
 * The front (front.c) has checked the request and collected its body; this
 * takes the user's sandbox from the pool, sends the request to its agent
 * (forward.c is the HTTP client that talks to it; relay_open, which file
 * links use too, asks the pool again once when nobody listens), and hands
 * back a libmicrohttpd response that reads the agent's answer piece by
 * piece, so an SSE stream reaches the client event by event.  The sandbox
 * stays held until the response is done; the agent connection goes back
 * to the pool when the answer was read to its end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "log.h"
#include "supervisor.h"
#include "backend.h"
#include "banned.h"

struct relay {
	struct agent_conn	 agent;
	struct pool_entry	*sb;
	size_t			 sent;
	unsigned long long	 max;	/* conf max_response */
};

/* The sandbox the reply comes from, as the log names it. */
static const char *
relay_where(const struct relay *r, char *dst, size_t len)
{
	return agent_addr_str(pool_addr(r->sb), dst, len);
}

static ssize_t
relay_read(void *cls, uint64_t pos, char *dst, size_t max)
{
	struct relay	*r = cls;
	char		 where[AGENT_ADDR_STRLEN];
	ssize_t		 n;

	n = agent_read(&r->agent, dst, max);
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n < 0 && r->agent.client_gone) {
		/* Closing the agent connection (relay_free) stops the run. */
		log_info("%s: the client went away after %zu bytes of the "
		    "reply", relay_where(r, where, sizeof(where)), r->sent);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	if (n < 0) {
		log_warnx("%s: the sandbox's reply broke off after %zu bytes",
		    relay_where(r, where, sizeof(where)), r->sent);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	r->sent += (size_t)n;
	if (r->sent > r->max) {
		log_warnx("%s: reply over the %llu-byte cap, cut off",
		    relay_where(r, where, sizeof(where)), r->max);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	return n;
}

static void
relay_free(void *cls)
{
	struct relay	*r = cls;

	if (agent_reusable(&r->agent)) {
		pool_conn_put(r->sb, r->agent.fd);
		r->agent.fd = -1;
	}
	agent_close(&r->agent);
	pool_release(r->sb);
	free(r);
}

int
relay_open(struct pool_entry **sb, const char *user, struct agent_conn *c,
    const struct agent_req *r, int kept, int timeout_ms, struct berr *pe)
{
	unsigned	 gen;
	int		 cf, attempt, rc;

	for (attempt = 0;; attempt++) {
		if (r->chunked)
			rc = agent_stream_open(c, pool_addr(*sb), r, timeout_ms,
			    &cf, pe->msg, sizeof(pe->msg));
		else
			rc = agent_open(c, pool_addr(*sb), r, kept ?
			    pool_conn_take(*sb) : -1, timeout_ms, &cf, pe->msg,
			    sizeof(pe->msg));
		if (rc == 0)
			return 0;
		pe->status = 502;
		if (c->client_gone || !cf || attempt > 0)
			return -1;
		/* Nobody listens: it died, was removed or stopped.  Look. */
		gen = pool_gen(*sb);
		pool_release(*sb);
		if ((*sb = pool_acquire(user, gen, pe)) == NULL)
			return -1;
	}
}

struct MHD_Response *
relay_mcp(const struct conf *conf, const char *user,
    const struct agent_req *ar, int *status, char *why, size_t whylen)
{
	struct berr		 perr;
	struct relay		*r;
	struct MHD_Response	*resp;
	struct pool_entry	*sb;
	const struct agent_head	*h;
	int			 timeout;

	*status = 0;
	/* A GET is a stream the server may keep open as long as it likes. */
	timeout = strcmp(ar->method, "GET") == 0 ? -1
	    : (int)(conf->agent_timeout * 1000);

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->max = conf->max_response;
	if ((sb = pool_acquire(user, 0, &perr)) == NULL) {
		free(r);
		*status = perr.status;
		snprintf(why, whylen, "%s", perr.msg);
		return NULL;
	}
	if (relay_open(&sb, user, &r->agent, ar, 1, timeout, &perr) == -1) {
		if (r->agent.client_gone)
			/* Nobody to answer; the agent saw its connection close. */
			log_info("%s: the client went away before the sandbox "
			    "answered", user);
		else if (sb != NULL) {
			*status = 502;
			snprintf(why, whylen, "the sandbox for \"%s\" did not "
			    "answer: %s", user, perr.msg);
		} else {
			*status = perr.status;
			snprintf(why, whylen, "%s", perr.msg);
		}
		if (sb != NULL)
			pool_release(sb);
		free(r);
		return NULL;
	}
	r->sb = sb;
	h = &r->agent.head;
	resp = MHD_create_response_from_callback(
	    h->content_length >= 0 ? (uint64_t)h->content_length
	    : MHD_SIZE_UNKNOWN, 32 * 1024, relay_read, r, relay_free);
	if (resp == NULL) {
		relay_free(r);
		return NULL;
	}
	if (h->content_type[0])
		MHD_add_response_header(resp, "Content-Type", h->content_type);
	if (h->session_id[0])
		MHD_add_response_header(resp, "Mcp-Session-Id", h->session_id);
	if (h->protocol_version[0])
		MHD_add_response_header(resp, "MCP-Protocol-Version",
		    h->protocol_version);
	if (h->cache_control[0])
		MHD_add_response_header(resp, "Cache-Control", h->cache_control);
	*status = h->status;
	return resp;
}
