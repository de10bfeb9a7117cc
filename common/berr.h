/*
 * berr.h: an error a person can act on: an HTTP-like status and a
 * sentence, filled by the layer that knows what went wrong.  The
 * supervisor's backend seam (supervisor/backend.h) passes it up from
 * Podman and Kubernetes; the file links (fileweb.h) turn it into a page.
 */
#ifndef VIVARIUM_BERR_H
#define VIVARIUM_BERR_H

#define BERR_MSGLEN	512

struct berr {
	/*
	 * HTTP-like.  From a backend, 0 means it cannot be reached at all
	 * (backend.h); on a file page it is the page's HTTP status.
	 */
	long	 status;
	char	 cause[128];	/* an engine's short reason, when it sent one */
	char	 msg[BERR_MSGLEN];
};

/* Fills e with status, no cause, and the message from fmt. */
void	berr_set(struct berr *e, long status, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

#endif
