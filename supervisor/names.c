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
#include "supervisor.h"
#include "banned.h"

#define NAMES_DIR	"names"

/* One UTF-8 sequence at s (n bytes left): its length and code point, or 0. */
static size_t
utf8_one(const unsigned char *s, size_t n, unsigned long *cp)
{
	size_t	 len, i;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, *cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, *cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, *cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = (*cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && *cp < 0x800) || (len == 4 && (*cp < 0x10000 ||
	    *cp > 0x10ffff)) || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* Unicode's format characters (Cf) that hide or reorder text. */
static int
is_format(unsigned long cp)
{
	return cp == 0xad || (cp >= 0x600 && cp <= 0x605) || cp == 0x61c
	    || cp == 0x6dd || cp == 0x70f || cp == 0x180e
	    || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e)
	    || (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff
	    || (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe007f);
}

int
name_clean(const char *in, char *out, size_t len)
{
	const unsigned char	*s = (const unsigned char *)in;
	size_t			 n = strlen(in), k, o = 0;
	unsigned long		 cp;

	if (len == 0)
		return -1;
	while (n > 0) {
		if ((k = utf8_one(s, n, &cp)) == 0) {
			s++, n--;
			continue;
		}
		if (cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp < 0xa0)
		    && !is_format(cp) && !(o == 0 && cp == ' ')) {
			if (o + k >= len || o + k > NAME_MAX_BYTES)
				break;
			memcpy(out + o, s, k);
			o += k;
		}
		s += k, n -= k;
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
		if (route_user_valid(de->d_name, strlen(de->d_name)) == -1)
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
