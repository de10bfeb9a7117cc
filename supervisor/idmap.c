/*
 * idmap.c: which host ids a user's sandbox runs as.
 *
 * Each user owns a slot: UID_RANGE host uids and gids from
 * uid_base + slot * UID_RANGE, mapped onto ids 0..UID_RANGE-1 inside the
 * sandbox's user namespace.  Two sandboxes then never share a host uid,
 * so neither can reach the other's socket or files, and RLIMIT_NPROC
 * counts each on its own.  The slot must outlive the container (the
 * workspace's files belong to it), so it is kept on disk, not in Podman:
 * <state_dir>/slots/<n> is a symbolic link whose target is the user id.
 * symlinkat() either makes a slot or fails with EEXIST, so the supervisor
 * and vivariumctl can both hand out slots without a lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "banned.h"

#define SLOTS_DIR	"slots"

static void
idmap_err(struct berr *e, const char *what, const struct conf *c)
{
	int	 saved = errno;

	memset(e, 0, sizeof(*e));
	e->status = 500;
	snprintf(e->msg, sizeof(e->msg), "%s %s/" SLOTS_DIR ": %s", what,
	    c->state_dir, strerror(saved));
}

long
idmap_max_slot(const struct conf *c)
{
	return (long)((UINT32_MAX - 1 - (unsigned long)c->uid_base)
	    / UID_RANGE) - 1;
}

/* <state_dir>/slots, made 0700 if missing; a descriptor, or -1 with e. */
static int
slots_open(const struct conf *c, struct berr *e)
{
	struct stat	 st;
	int		 sfd, dfd;

	if (mkdir(c->state_dir, 0700) == -1 && errno != EEXIST) {
		idmap_err(e, "cannot create", c);
		return -1;
	}
	if ((sfd = open(c->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
	    == -1) {
		idmap_err(e, "cannot open", c);
		return -1;
	}
	if (mkdirat(sfd, SLOTS_DIR, 0700) == -1 && errno != EEXIST) {
		idmap_err(e, "cannot create", c);
		close(sfd);
		return -1;
	}
	dfd = openat(sfd, SLOTS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(sfd);
	if (dfd == -1) {
		idmap_err(e, "cannot open", c);
		return -1;
	}
	/* Whoever can write here could move a user into another's ids. */
	if (fstat(dfd, &st) == -1 || st.st_uid != geteuid()
	    || (st.st_mode & 022) != 0) {
		errno = EPERM;
		idmap_err(e, "refusing to use", c);
		close(dfd);
		return -1;
	}
	return dfd;
}

/* The lowest slot that names user, or 0 when none does; -1 on error. */
static long
slots_find(int dfd, const char *user)
{
	DIR		*d;
	struct dirent	*de;
	char		 target[USER_ID_MAX + 2], *end;
	ssize_t		 n;
	long		 slot, best = 0;
	int		 fd;

	if ((fd = dup(dfd)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		errno = 0;
		slot = strtol(de->d_name, &end, 10);
		if (*end != '\0' || end == de->d_name || errno != 0 || slot < 1)
			continue;
		n = readlinkat(dfd, de->d_name, target, sizeof(target) - 1);
		if (n <= 0 || (size_t)n >= sizeof(target) - 1)
			continue;
		target[n] = '\0';
		if (strcmp(target, user) == 0 && (best == 0 || slot < best))
			best = slot;
	}
	closedir(d);
	return best;
}

int
idmap_slot(const struct conf *c, const char *user, int create, long *slot,
    struct berr *e)
{
	char	 name[32];
	long	 n, max = idmap_max_slot(c), found;
	int	 dfd, r = -1;

	*slot = 0;
	if ((dfd = slots_open(c, e)) == -1)
		return -1;
	if ((found = slots_find(dfd, user)) == -1) {
		idmap_err(e, "cannot read", c);
		goto fail;
	}
	if (found > 0 || !create) {
		*slot = found;
		r = 0;
		goto fail;
	}
	for (n = 1; n <= max; n++) {
		snprintf(name, sizeof(name), "%ld", n);
		if (symlinkat(user, dfd, name) == 0)
			break;
		if (errno != EEXIST) {
			idmap_err(e, "cannot write", c);
			goto fail;
		}
	}
	if (n > max) {
		memset(e, 0, sizeof(*e));
		e->status = 503;
		snprintf(e->msg, sizeof(e->msg), "no free id range left for "
		    "\"%s\": all %ld slots from uid_base %ld are taken", user,
		    max, c->uid_base);
		goto fail;
	}
	/*
	 * Another process may have given the same user a slot meanwhile:
	 * the lowest wins, and the loser gives its own back.
	 */
	found = slots_find(dfd, user);
	if (found > 0 && found < n) {
		(void)unlinkat(dfd, name, 0);
		n = found;
	}
	*slot = n;
	r = 0;
fail:
	close(dfd);
	return r;
}

int
idmap_release(const struct conf *c, const char *user)
{
	struct berr	 e;
	char		 name[32];
	long		 slot;
	int		 dfd;

	if ((dfd = slots_open(c, &e)) == -1)
		return -1;
	while ((slot = slots_find(dfd, user)) > 0) {
		snprintf(name, sizeof(name), "%ld", slot);
		if (unlinkat(dfd, name, 0) == -1)
			break;
	}
	close(dfd);
	return slot == 0 ? 0 : -1;
}

unsigned long
idmap_host_id(const struct conf *c, long slot, unsigned int id)
{
	return (unsigned long)c->uid_base + (unsigned long)slot * UID_RANGE
	    + id;
}
