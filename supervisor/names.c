/*
 * names.c: people, not ids.  LibreChat's user ids are 24 hex digits nobody
 * can map to a person; the paste block has LibreChat send a second header
 * (user_name_header, X-User-Name: "{{LIBRECHAT_USER_EMAIL}}"), and the
 * supervisor keeps the last name it saw for each user in
 * <state_dir>/names/<user>, one line.  vivariumctl shows it and takes it
 * wherever it takes a user.  The id stays the key: a name is only ever
 * looked up, never used to route a request.
 *
 * A name is what a person reads in a terminal, so it is cleaned first:
 * control characters and Unicode format characters (bidi overrides, zero
 * widths) go, as do bytes that are not UTF-8; at most NAME_MAX_BYTES.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>

#include "log.h"
#include "text.h"
#include "supervisor.h"
#include "banned.h"

#define NAMES_DIR	"names"

int
name_clean(const char *in, char *out, size_t len)
{
	const unsigned char	*s = (const unsigned char *)in;
	size_t			 n = strlen(in), o = 0;
	unsigned long		 cp;
	int			 k;

	if (len == 0)
		return -1;
	while (n > 0) {
		/* Not UTF-8 (or cut off): that byte goes. */
		if ((k = utf8_seq(s, n)) <= 0) {
			s++, n--;
			continue;
		}
		cp = utf8_code(s, k);
		if (cp >= 0x20 && cp != 0x7f && !unicode_invisible(cp)
		    && !(o == 0 && cp == ' ')) {
			if (o + (size_t)k >= len || o + (size_t)k > NAME_MAX_BYTES)
				break;
			memcpy(out + o, s, (size_t)k);
			o += (size_t)k;
		}
		s += k, n -= (size_t)k;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
	return o > 0 ? 0 : -1;
}

static void
name_path(const struct conf *c, const char *user, char *dst, size_t len)
{
	snprintf(dst, len, "%s/" NAMES_DIR "/%s", c->state_dir, user);
}

int
names_get(const struct conf *c, const char *user, char *dst, size_t len)
{
	char	 path[STATE_DIR_MAX + USER_ID_MAX + 16];
	ssize_t	 n;
	int	 fd;

	dst[0] = '\0';
	name_path(c, user, path, sizeof(path));
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, dst, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	dst[n] = '\0';
	dst[strcspn(dst, "\n")] = '\0';
	return dst[0] != '\0' ? 0 : -1;
}

int
names_record(const struct conf *c, const char *user, const char *raw)
{
	char	 name[NAME_MAX_BYTES + 8], had[NAME_MAX_BYTES + 8];
	char	 dir[STATE_DIR_MAX + 16], path[STATE_DIR_MAX + USER_ID_MAX + 16];
	char	 tmp[STATE_DIR_MAX + USER_ID_MAX + 48];
	size_t	 n;
	int	 fd;

	if (name_clean(raw, name, sizeof(name)) == -1)
		return -1;
	if (names_get(c, user, had, sizeof(had)) == 0
	    && strcmp(had, name) == 0)
		return 0;
	snprintf(dir, sizeof(dir), "%s/" NAMES_DIR, c->state_dir);
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		log_warn("%s", dir);
		return -1;
	}
	name_path(c, user, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.%ld.%lx", path, (long)getpid(),
	    (unsigned long)pthread_self());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1) {
		log_warn("%s", tmp);
		return -1;
	}
	n = strlen(name);
	name[n] = '\n';
	if (write(fd, name, n + 1) != (ssize_t)(n + 1) || close(fd) == -1
	    || rename(tmp, path) == -1) {
		log_warn("%s", path);
		(void)unlink(tmp);
		return -1;
	}
	name[n] = '\0';
	log_info("%s: is %s (%s)", user, name, c->user_name_header);
	return 0;
}

int
names_find(const struct conf *c, const char *name, char *user, size_t len,
    int *count)
{
	char		 dir[STATE_DIR_MAX + 16], got[NAME_MAX_BYTES + 8];
	DIR		*d;
	struct dirent	*de;

	*count = 0;
	user[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/" NAMES_DIR, c->state_dir);
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(d)) != NULL) {
		if (user_id_valid(de->d_name, strlen(de->d_name)) == -1)
			continue;	/* ".", "..", a file being written */
		if (names_get(c, de->d_name, got, sizeof(got)) == 0
		    && strcasecmp(got, name) == 0) {
			if (++*count == 1)
				snprintf(user, len, "%s", de->d_name);
		}
	}
	closedir(d);
	return 0;
}

void
names_forget(const struct conf *c, const char *user)
{
	char	 path[STATE_DIR_MAX + USER_ID_MAX + 16];

	name_path(c, user, path, sizeof(path));
	(void)unlink(path);
}
