/*
 * fdpass.h: one open file handed over a unix socket (SCM_RIGHTS).
 *
 * The agent gives the supervisor the file of a link, opened under the
 * agent's own path rules, so that the bytes go between the volume and
 * the link holder's connection without a second process copying them
 * (docs/agent.md, "Files by descriptor").  On the wire it is one byte,
 * FDPASS_MARK, which no HTTP reply starts with, carrying the descriptor;
 * the HTTP answer follows on the same connection.
 */
#ifndef VIVARIUM_FDPASS_H
#define VIVARIUM_FDPASS_H

#include <sys/types.h>

#define FDPASS_MARK	'\0'
#define FDPASS_MAX	4	/* descriptors in one message */

/*
 * One sendmsg of len bytes of payload carrying nfds (1 to FDPASS_MAX)
 * descriptors, flags added to MSG_NOSIGNAL, EINTR retried: what sendmsg
 * returns.  The one place SCM_RIGHTS are written.
 */
ssize_t	fdpass_sendv(int sock, const void *payload, size_t len,
	    const int *fds, int nfds, int flags);

/* Sends FDPASS_MARK carrying fd on the unix socket sock; 0, or -1. */
int	fdpass_send(int sock, int fd);
/*
 * One recvmsg of one byte, not waiting (MSG_DONTWAIT): 1 with the byte in
 * *byte and in *fd the descriptor it carried (close-on-exec), or -1 when
 * it carried none; 0 at end of file; -1 with errno (EAGAIN: nothing yet).
 * A byte carrying more than one descriptor, or FDPASS_MARK carrying none,
 * or anything but FDPASS_MARK carrying one, is refused (-1, EBADMSG), and
 * every descriptor that came with it closed: the other side may be code
 * in the sandbox.
 */
int	fdpass_recv(int sock, char *byte, int *fd);

#endif
