/*
 * elicit.h: pending URL elicitations (uploads inside the chat turn).
 *
 * A tool that needs the user to do something in a browser (upload_link:
 * open the upload page) asks the client to show a URL, the client waits
 * for the user and calls the same tool again.  Between the two calls the
 * agent remembers, per workspace, that it asked and what has arrived
 * since.  Only this, in memory, bounded and expiring with the link; the
 * agent keeps no MCP session.  2025-11-25 carries the elicitation as error
 * -32042; the 2026-07-28 era as an input_required result: both build it
 * with elicit_begin and find it again with elicit_find/elicit_take.
 */
#ifndef VIVARIUM_ELICIT_H
#define VIVARIUM_ELICIT_H

#include <time.h>

#include <jansson.h>

#define ELICIT_MAX		64	/* pending at once; the oldest goes */
#define ELICIT_FILES		16	/* files remembered per elicitation */
#define ELICIT_ID_SIZE		33	/* 32 hex + NUL */

struct elicit_file {
	char			 name[256];	/* where in the workspace */
	unsigned long long	 size;
};

/* What a pending elicitation became; a copy, nothing borrowed. */
struct elicit_state {
	char			 id[ELICIT_ID_SIZE];
	char			 url[4096];
	time_t			 expires;
	size_t			 nfiles;	/* arrived, up to ELICIT_FILES */
	size_t			 more;		/* arrived beyond those */
	struct elicit_file	 files[ELICIT_FILES];
};

/*
 * Remembers a new elicitation for workspace ws (replacing one pending
 * there) until expires, and makes its wire form into *elicitation (new):
 * {mode: "url", elicitationId, url, message}.  0, or -1 (no memory or no
 * randomness) with *elicitation NULL.
 */
int	elicit_begin(const char *ws, const char *url, const char *message,
	    time_t expires, json_t **elicitation);
/* The unexpired elicitation pending for ws into *out: 0, or -1 if none. */
int	elicit_find(const char *ws, struct elicit_state *out);
/* As elicit_find, and forgets it: the call it answers has come. */
int	elicit_take(const char *ws, struct elicit_state *out);
/* The one of id, only if it belongs to ws: 0, or -1 (unknown, expired,
 * another workspace's). */
int	elicit_find_id(const char *ws, const char *id, struct elicit_state *out);
/* A file arrived in ws (any upload path): noted if something is pending. */
void	elicit_arrived(const char *ws, const char *name,
	    unsigned long long size);
/* Forgets everything (tests). */
void	elicit_reset(void);

#endif
