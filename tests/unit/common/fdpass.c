/*
 * Unit tests for common/fdpass.c: a descriptor handed over a socketpair
 * arrives as the same file; whatever else arrives (a mark without a file,
 * a file on another byte, two files on one byte) is refused and leaves no
 * descriptor open in the receiver.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <cmocka.h>

#include "../../../common/fdpass.c"

static int	 sp[2];

static int
setup(void **state)
{
	return socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
}

static int
teardown(void **state)
{
	close(sp[0]);
	close(sp[1]);
	return 0;
}

static int
open_fds(void)
{
	DIR	*d = opendir("/proc/self/fd");
	int	 n = 0;

	assert_non_null(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

/* Sends byte carrying nfds copies of fd (nfds may be 0). */
static void
send_raw(char byte, int fd, int nfds)
{
	int	 fds[FDPASS_MAX] = { fd, fd, fd, fd };

	if (nfds == 0)
		assert_int_equal(send(sp[0], &byte, 1, 0), 1);
	else
		assert_int_equal(fdpass_sendv(sp[0], &byte, 1, fds, nfds, 0), 1);
}

/* Several descriptors and a longer payload in one message, in order. */
static void
test_sendv(void **state)
{
	union {
		struct cmsghdr	 h;
		char		 buf[CMSG_SPACE(FDPASS_MAX * sizeof(int))];
	} u;
	struct msghdr	 msg;
	struct cmsghdr	*cm;
	struct iovec	 iov;
	struct stat	 a, b;
	char		 got[8];
	int		 fds[3], in[3], i;

	fds[0] = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	fds[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[2] = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(fdpass_sendv(sp[0], "spare", 5, fds, 3, 0), 5);
	memset(&msg, 0, sizeof(msg));
	iov.iov_base = got;
	iov.iov_len = sizeof(got);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	assert_int_equal(recvmsg(sp[1], &msg, MSG_CMSG_CLOEXEC), 5);
	assert_memory_equal(got, "spare", 5);
	cm = CMSG_FIRSTHDR(&msg);
	assert_non_null(cm);
	assert_int_equal(cm->cmsg_len, CMSG_LEN(3 * sizeof(int)));
	memcpy(in, CMSG_DATA(cm), sizeof(in));
	for (i = 0; i < 3; i++) {
		assert_int_equal(fstat(fds[i], &a), 0);
		assert_int_equal(fstat(in[i], &b), 0);
		assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
		close(fds[i]);
		close(in[i]);
	}
	/* None, too many, or no payload: refused before sending. */
	assert_int_equal(fdpass_sendv(sp[0], "x", 1, fds, 0, 0), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(fdpass_sendv(sp[0], "x", 1, fds, FDPASS_MAX + 1, 0),
	    -1);
	assert_int_equal(fdpass_sendv(sp[0], "", 0, fds, 1, 0), -1);
}

static void
test_handed_over(void **state)
{
	struct stat	 a, b;
	char		 byte = 'x';
	int		 fd, got = -1;

	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fdpass_send(sp[0], fd), 0);
	assert_int_equal(fdpass_recv(sp[1], &byte, &got), 1);
	assert_int_equal(byte, FDPASS_MARK);
	assert_true(got >= 0 && got != fd);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(got, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	assert_true(fcntl(got, F_GETFD) & FD_CLOEXEC);
	close(fd);
	close(got);
}

static void
test_plain_byte(void **state)
{
	char	 byte;
	int	 got = 7;

	send_raw('H', -1, 0);
	assert_int_equal(fdpass_recv(sp[1], &byte, &got), 1);
	assert_int_equal(byte, 'H');
	assert_int_equal(got, -1);
	/* Nothing more: not waiting. */
	assert_int_equal(fdpass_recv(sp[1], &byte, &got), -1);
	assert_int_equal(errno, EAGAIN);
	close(sp[0]);
	sp[0] = -1;
	assert_int_equal(fdpass_recv(sp[1], &byte, &got), 0);
}

static void
test_refused(void **state)
{
	char	 byte;
	int	 fd, got, before;

	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	before = open_fds();
	/* The mark without a file. */
	send_raw(FDPASS_MARK, -1, 0);
	assert_int_equal(fdpass_recv(sp[1], &byte, &got), -1);
	assert_int_equal(errno, EBADMSG);
	assert_int_equal(got, -1);
	/* A file on another byte (the start of an HTTP answer). */
	send_raw('H', fd, 1);
	assert_int_equal(fdpass_recv(sp[1], &byte, &got), -1);
	assert_int_equal(errno, EBADMSG);
	/* Two files on the mark; and more than there is room for. */
	send_raw(FDPASS_MARK, fd, 2);
	assert_int_equal(fdpass_recv(sp[1], &byte, &got), -1);
	assert_int_equal(errno, EBADMSG);
	send_raw(FDPASS_MARK, fd, 4);
	assert_int_equal(fdpass_recv(sp[1], &byte, &got), -1);
	assert_int_equal(open_fds(), before);
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_handed_over, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plain_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sendv, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
