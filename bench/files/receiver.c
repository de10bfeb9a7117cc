/*
 * bench/files/receiver.c: the upload ceiling for bench/files.  The least a
 * server can do with an upload: take one HTTP POST at a time on loopback,
 * write its body as it comes (no form parsing, one buffer, no flushing
 * ahead) to DIR/receiver.bin, fsync it, answer 204.  What curl -F reaches
 * into it is what any server could reach here, as python3 -m http.server
 * is for downloads.  Not a server: one client, trusted, no limits.
 *
 * usage: receiver DIR   (prints the port it listens on, then serves)
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define BUFSZ	(1u << 20)	/* what dd bs=1M writes at a time */
#define HEADMAX	(64u * 1024)

static char	buf[BUFSZ];

static int
write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
say(int c, const char *s)
{
	return write_all(c, s, strlen(s));
}

/* One request: 0 when its body was written and synced, -1 otherwise. */
static int
serve(int c, const char *path)
{
	size_t		 have = 0;
	long long	 len = -1, got;
	char		*end = NULL, *h;
	ssize_t		 n;
	int		 fd, rc = -1;

	while (end == NULL) {
		if (have >= HEADMAX)
			return -1;
		if ((n = recv(c, buf + have, HEADMAX - have, 0)) <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	*end = '\0';
	for (h = strstr(buf, "\r\n"); h != NULL; h = strstr(h + 2, "\r\n")) {
		if (strncasecmp(h + 2, "content-length:", 15) == 0)
			len = strtoll(h + 17, NULL, 10);
		else if (strncasecmp(h + 2, "expect: 100-continue", 20) == 0 &&
		    say(c, "HTTP/1.1 100 Continue\r\n\r\n") == -1)
			return -1;
	}
	if (len < 0)
		return -1;
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) == -1)
		return -1;
	got = (long long)(buf + have - (end + 4));
	if (write_all(fd, end + 4, (size_t)got) == -1)
		goto done;
	while (got < len) {
		if ((n = recv(c, buf, BUFSZ, 0)) <= 0)
			goto done;
		if (write_all(fd, buf, (size_t)n) == -1)
			goto done;
		got += n;
	}
	if (fsync(fd) == 0)
		rc = 0;
done:
	close(fd);
	return rc;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in	 sin;
	socklen_t		 slen = sizeof(sin);
	char			 path[PATH_MAX];
	int			 s, c;

	if (argc != 2) {
		fprintf(stderr, "usage: receiver DIR\n");
		return 2;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/receiver.bin", argv[1]) >=
	    sizeof(path)) {
		fprintf(stderr, "receiver: %s: path too long\n", argv[1]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);	/* a client gone: write fails, EPIPE */
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(s, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(s, 4) == -1 ||
	    getsockname(s, (struct sockaddr *)&sin, &slen) == -1) {
		perror("receiver: listen");
		return 1;
	}
	printf("%u\n", ntohs(sin.sin_port));
	fflush(stdout);
	for (;;) {
		if ((c = accept(s, NULL, NULL)) == -1) {
			if (errno == EINTR)
				continue;
			perror("receiver: accept");
			return 1;
		}
		if (serve(c, path) == 0)
			(void)say(c, "HTTP/1.1 204 No Content\r\n"
			    "Connection: close\r\n\r\n");
		else
			(void)say(c, "HTTP/1.1 500 Internal Server Error\r\n"
			    "Content-Length: 0\r\nConnection: close\r\n\r\n");
		close(c);
	}
}
