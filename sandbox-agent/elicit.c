/*
 * elicit.c: the pending URL elicitations of elicit.h -- a small table in
 * memory, keyed by workspace path, guarded by one mutex (MCP requests and
 * uploads arrive on different threads).
 *
 * Keyed by workspace, not by MCP session: the retried tool call may come
 * on another connection, and the upload through a signed link knows only
 * its user's workspace.  An entry lives until the retried call takes it or
 * its link expires; when the table is full the oldest is dropped, and a
 * dropped or expired one only means the next call asks again.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "elicit.h"
#include "banned.h"

struct entry {
	int			 used;
	char			 ws[PATH_MAX];
	time_t			 born;
	struct elicit_state	 st;
};

static struct entry	 table[ELICIT_MAX];
static pthread_mutex_t	 mtx = PTHREAD_MUTEX_INITIALIZER;

/* The live entry of ws, or NULL; expired ones are cleared on the way. */
static struct entry *
lookup(const char *ws, time_t now)
{
	size_t i;

	for (i = 0; i < ELICIT_MAX; i++) {
		if (table[i].used && table[i].st.expires <= now)
			table[i].used = 0;
		if (table[i].used && strcmp(table[i].ws, ws) == 0)
			return &table[i];
	}
	return NULL;
}

int
elicit_begin(const char *ws, const char *url, const char *message,
    time_t expires, json_t **elicitation)
{
	struct entry	*e;
	unsigned char	 r[16];
	char		 id[ELICIT_ID_SIZE];
	time_t		 now = time(NULL);
	size_t		 i;

	*elicitation = NULL;
	if (strlen(ws) >= sizeof(e->ws) || strlen(url) >= sizeof(e->st.url) ||
	    getentropy(r, sizeof(r)) == -1)
		return -1;
	for (i = 0; i < sizeof(r); i++)
		snprintf(id + 2 * i, 3, "%02x", r[i]);
	if ((*elicitation = json_pack("{s:s, s:s, s:s, s:s}", "mode", "url",
	    "elicitationId", id, "url", url, "message", message)) == NULL)
		return -1;
	pthread_mutex_lock(&mtx);
	if ((e = lookup(ws, now)) == NULL) {
		for (i = 0; i < ELICIT_MAX && table[i].used; i++)
			;
		if (i == ELICIT_MAX) {		/* full: the oldest goes */
			size_t old = 0;

			for (i = 1; i < ELICIT_MAX; i++)
				if (table[i].born < table[old].born)
					old = i;
			i = old;
		}
		e = &table[i];
	}
	memset(e, 0, sizeof(*e));
	e->used = 1;
	e->born = now;
	snprintf(e->ws, sizeof(e->ws), "%s", ws);
	snprintf(e->st.id, sizeof(e->st.id), "%s", id);
	snprintf(e->st.url, sizeof(e->st.url), "%s", url);
	e->st.expires = expires;
	pthread_mutex_unlock(&mtx);
	return 0;
}

static int
get(const char *ws, const char *id, int take, struct elicit_state *out)
{
	struct entry	*e;
	int		 r = -1;

	pthread_mutex_lock(&mtx);
	if ((e = lookup(ws, time(NULL))) != NULL && (id == NULL ||
	    strcmp(e->st.id, id) == 0)) {
		*out = e->st;
		if (take)
			e->used = 0;
		r = 0;
	}
	pthread_mutex_unlock(&mtx);
	return r;
}

int
elicit_find(const char *ws, struct elicit_state *out)
{
	return get(ws, NULL, 0, out);
}

int
elicit_take(const char *ws, struct elicit_state *out)
{
	return get(ws, NULL, 1, out);
}

int
elicit_find_id(const char *ws, const char *id, struct elicit_state *out)
{
	if (id == NULL)
		return -1;
	return get(ws, id, 0, out);
}

void
elicit_arrived(const char *ws, const char *name, unsigned long long size)
{
	struct entry	*e;
	struct elicit_file *f;

	pthread_mutex_lock(&mtx);
	if ((e = lookup(ws, time(NULL))) != NULL) {
		if (e->st.nfiles < ELICIT_FILES) {
			f = &e->st.files[e->st.nfiles++];
			snprintf(f->name, sizeof(f->name), "%s", name);
			f->size = size;
		} else
			e->st.more++;
	}
	pthread_mutex_unlock(&mtx);
}

void
elicit_reset(void)
{
	pthread_mutex_lock(&mtx);
	memset(table, 0, sizeof(table));
	pthread_mutex_unlock(&mtx);
}
