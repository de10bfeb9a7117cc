/*
 * fdpass.c: one descriptor over a unix socket (fdpass.h).
 */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fdpass.h"
#include "banned.h"

/* Room for a few: more than one is refused, but each must be closed. */
#define FDS_MAX	8

ssize_t
fdpass_sendv(int sock, const void *payload, size_t len, const int *fds,
    int nfds, int flags)
{
	union {
		struct cmsghdr	 h;
		char		 buf[CMSG_SPACE(FDPASS_MAX * sizeof(int))];
	} u;
	struct msghdr	 msg;
	struct cmsghdr	*cm;
	struct iovec	 iov;
	ssize_t		 n;

	if (nfds < 1 || nfds > FDPASS_MAX || len == 0) {
		errno = EINVAL;
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	memset(&u, 0, sizeof(u));
	iov.iov_base = (void *)(uintptr_t)payload;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.buf;
	msg.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL | flags);
	while (n == -1 && errno == EINTR);
	return n;
}

int
fdpass_send(int sock, int fd)
{
	struct pollfd	 p = { .fd = sock, .events = POLLOUT };
	char		 mark = FDPASS_MARK;
	ssize_t		 n;

	for (;;) {
		n = fdpass_sendv(sock, &mark, 1, &fd, 1, MSG_DONTWAIT);
		if (n == 1)
			return 0;
		/* The socket may be non-blocking; one byte waits little. */
		if (n == -1 && errno == EAGAIN && poll(&p, 1, 10000) == 1)
			continue;
		if (n == 0 || (n == -1 && errno == EAGAIN))
			errno = ETIMEDOUT;
		return -1;
	}
}

int
fdpass_recv(int sock, char *byte, int *fd)
{
	union {
		struct cmsghdr	 h;
		char		 buf[CMSG_SPACE(FDS_MAX * sizeof(int))];
	} u;
	struct msghdr	 msg;
	struct cmsghdr	*cm;
	struct iovec	 iov;
	int		 got[FDS_MAX], k, i, ngot = 0;
	ssize_t		 n;

	*fd = -1;
	memset(&msg, 0, sizeof(msg));
	iov.iov_base = byte;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	do
		n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n <= 0)
		return (int)n;
	/* Every descriptor that arrived, whatever else is wrong. */
	for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < k && ngot < FDS_MAX; i++)
			memcpy(&got[ngot++], CMSG_DATA(cm) + i * sizeof(int),
			    sizeof(int));
	}
	if ((msg.msg_flags & MSG_CTRUNC) || ngot > 1 ||
	    (*byte == FDPASS_MARK) != (ngot == 1)) {
		for (i = 0; i < ngot; i++)
			close(got[i]);
		errno = EBADMSG;
		return -1;
	}
	if (ngot == 1)
		*fd = got[0];
	return 1;
}
