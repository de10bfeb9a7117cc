/*
 * metrics.c: counters for /metrics, rendered in Prometheus' text format.
 * No user ids appear in labels: the endpoint needs no token.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "supervisor.h"
#include "banned.h"

static const double spawn_bounds[] = { 0.25, 0.5, 1, 2, 5, 10, 30, 60 };
#define NBOUNDS	(sizeof(spawn_bounds) / sizeof(spawn_bounds[0]))

static pthread_mutex_t	 mlock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long	 requests[600];
static unsigned long	 spawn_buckets[NBOUNDS];
static unsigned long	 spawn_count;
static double		 spawn_sum;
static unsigned long	 backend_errors;
static const char	*backend_name = "podman";	/* the label's value */

void
metrics_request(int status)
{
	if (status < 100 || status > 599)
		return;
	pthread_mutex_lock(&mlock);
	requests[status]++;
	pthread_mutex_unlock(&mlock);
}

void
metrics_spawn(double s)
{
	size_t	 i;

	pthread_mutex_lock(&mlock);
	for (i = 0; i < NBOUNDS; i++)
		if (s <= spawn_bounds[i])
			spawn_buckets[i]++;
	spawn_count++;
	spawn_sum += s;
	pthread_mutex_unlock(&mlock);
}

void
metrics_backend(const char *name)
{
	pthread_mutex_lock(&mlock);
	backend_name = name;
	pthread_mutex_unlock(&mlock);
}

void
metrics_backend_error(void)
{
	pthread_mutex_lock(&mlock);
	backend_errors++;
	pthread_mutex_unlock(&mlock);
}

void
metrics_render(struct buf *b)
{
	long	 states[SB_NSTATES];
	size_t	 i;
	int	 s;

	pool_count_states(states);
	pthread_mutex_lock(&mlock);
	(void)buf_appends(b,
	    "# HELP vivarium_requests_total HTTP requests answered, by status.\n"
	    "# TYPE vivarium_requests_total counter\n");
	for (s = 100; s < 600; s++)
		if (requests[s] > 0)
			(void)buf_appendf(b, "vivarium_requests_total{code=\"%d\"} "
			    "%lu\n", s, requests[s]);
	(void)buf_appends(b,
	    "# HELP vivarium_sandboxes Sandboxes known to the supervisor, by "
	    "state.\n# TYPE vivarium_sandboxes gauge\n");
	for (i = 0; i < SB_NSTATES; i++)
		(void)buf_appendf(b, "vivarium_sandboxes{state=\"%s\"} %ld\n",
		    pool_state_name((enum sb_state)i), states[i]);
	(void)buf_appends(b,
	    "# HELP vivarium_spawn_seconds Time from first request to a new "
	    "sandbox answering.\n# TYPE vivarium_spawn_seconds histogram\n");
	for (i = 0; i < NBOUNDS; i++)
		(void)buf_appendf(b, "vivarium_spawn_seconds_bucket{le=\"%g\"} "
		    "%lu\n", spawn_bounds[i], spawn_buckets[i]);
	(void)buf_appendf(b, "vivarium_spawn_seconds_bucket{le=\"+Inf\"} %lu\n"
	    "vivarium_spawn_seconds_sum %.6f\nvivarium_spawn_seconds_count %lu\n",
	    spawn_count, spawn_sum, spawn_count);
	(void)buf_appendf(b,
	    "# HELP vivarium_backend_errors_total Failed calls to the "
	    "backend's engine (Podman, the Kubernetes API server).\n"
	    "# TYPE vivarium_backend_errors_total counter\n"
	    "vivarium_backend_errors_total{backend=\"%s\"} %lu\n",
	    backend_name, backend_errors);
	/* The old name, kept for one release (0.2 drops it). */
	(void)buf_appendf(b,
	    "# HELP vivarium_podman_errors_total Deprecated: "
	    "vivarium_backend_errors_total.\n"
	    "# TYPE vivarium_podman_errors_total counter\n"
	    "vivarium_podman_errors_total %lu\n", backend_errors);
	pthread_mutex_unlock(&mlock);
}
