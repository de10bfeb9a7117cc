/*
 * cancel.c: which job a notifications/cancelled means.
 *
 * The notification names a request id, and comes on another HTTP request
 * (often another connection) than the tools/call it cancels.  The agent has
 * no sessions, so the id is looked up within the caller's workspace: with
 * a user header, each user's requests are their own; clients sharing one
 * workspace that reuse ids at the same moment could stop each other's run,
 * which is what sharing a workspace means anyway.  A request that is not
 * running (finished, never seen, another user's) is ignored, as the spec
 * asks.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "log.h"
#include "banned.h"

struct tracked {
	struct tracked	*next;
	char		*scope;		/* owned: the workspace */
	char		*key;		/* owned: the id as compact JSON */
	struct job	*job;		/* borrowed: the caller holds a ref */
};

static pthread_mutex_t	 mtx = PTHREAD_MUTEX_INITIALIZER;
static struct tracked	*head;

/* The id as text: 7 and "7" stay distinct.  New string, or NULL. */
static char *
id_key(json_t *id)
{
	if (!json_is_string(id) && !json_is_integer(id))
		return NULL;
	return json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
}

int
cancel_track(const char *scope, json_t *id, struct job *job)
{
	struct tracked	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -1;
	if ((t->scope = strdup(scope)) == NULL ||
	    (t->key = id_key(id)) == NULL) {
		free(t->scope);
		free(t);
		return -1;
	}
	t->job = job;
	pthread_mutex_lock(&mtx);
	t->next = head;
	head = t;
	pthread_mutex_unlock(&mtx);
	return 0;
}

void
cancel_untrack(struct job *job)
{
	struct tracked	**pp, *t;

	pthread_mutex_lock(&mtx);
	for (pp = &head; (t = *pp) != NULL; pp = &t->next)
		if (t->job == job) {
			*pp = t->next;
			break;
		}
	pthread_mutex_unlock(&mtx);
	if (t != NULL) {
		free(t->scope);
		free(t->key);
		free(t);
	}
}

int
cancel_request(const char *scope, json_t *id, const char *why)
{
	struct tracked	*t;
	char		*key;
	int		 n = 0;

	if ((key = id_key(id)) == NULL)
		return 0;
	pthread_mutex_lock(&mtx);
	/* job_stop only takes the job's own lock: safe under ours. */
	for (t = head; t != NULL; t = t->next)
		if (strcmp(t->key, key) == 0 && strcmp(t->scope, scope) == 0) {
			job_stop(t->job, why);
			n++;
		}
	pthread_mutex_unlock(&mtx);
	free(key);
	return n;
}
