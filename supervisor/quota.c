/*
 * quota.c: a workspace that cannot grow past its quota.
 *
 * The host's filesystem cannot count one volume's bytes (ext4 without the
 * project feature here; no XFS), and a full host disk takes Podman, the
 * supervisor and every other user down with it.  So each workspace is a
 * filesystem of its own: a sparse ext4 image of the quota's size,
 * <state_dir>/workspaces/<user>.img, which Podman's local volume driver
 * loop-mounts when the sandbox starts (type=ext4, o=loop).  The image
 * takes only the blocks written (discard gives deleted ones back), and
 * a sandbox that fills it gets ENOSPC in its own filesystem, nowhere else.
 *
 * Podman mounts it, not us: the supervisor may run in a container
 * without the right to mount anything; only making the image (mkfs.ext4,
 * from e2fsprogs) happens here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "spawn.h"
#include "backend.h"
#include "banned.h"

#define WORKSPACES_DIR	"workspaces"
#define MKFS		"mkfs.ext4"
#define DEBUGFS		"debugfs"

void
quota_image_path(const struct conf *c, const char *user, char *dst,
    size_t len)
{
	snprintf(dst, len, "%s/" WORKSPACES_DIR "/%s.img", c->state_dir, user);
}

/* Runs argv, 0 when it exited 0; else -1 with its stderr's tail in e. */
static int
run(const char *const argv[], struct berr *e)
{
	struct spawn		 sp = SPAWN_INIT;
	const unsigned char	*out;
	char			*av[16], err[256];
	size_t			 len, i;
	int			 r = -1;

	/* spawn's argv is execvp's: not const, though never written. */
	for (i = 0; argv[i] != NULL && i < sizeof(av) / sizeof(av[0]) - 1; i++)
		av[i] = (char *)(uintptr_t)argv[i];
	av[i] = NULL;
	sp.argv = av;
	sp.timeout = 60;
	sp.err.cap = 400;
	if (spawn_run(&sp, err, sizeof(err)) == -1) {
		berr_set(e, 500, "cannot run %s: %s", argv[0], err);
		goto done;
	}
	if (!sp.exited || sp.exit_code != 0) {
		out = spawn_stream_take(&sp.err, &len);
		while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
			len--;
		berr_set(e, 500, "%s failed (%s %d): %.*s", argv[0],
		    sp.exited ? "exit" : "signal",
		    sp.exited ? sp.exit_code : sp.signal, (int)len,
		    out != NULL ? (const char *)out : "");
		goto done;
	}
	r = 0;
done:
	spawn_release(&sp);
	return r;
}

int
quota_tools(char *why, size_t len)
{
	const char *const argv[] = { MKFS, "-V", NULL };
	struct berr	 e;

	if (run(argv, &e) == 0)
		return 1;
	snprintf(why, len, "workspace quotas need %s (e2fsprogs) beside the "
	    "supervisor: %s", MKFS, e.msg);
	return 0;
}

int
quota_image_ensure(const struct conf *c, const char *user,
    unsigned long long size, unsigned long uid, unsigned long gid,
    char *path, size_t pathlen, struct berr *e)
{
	struct stat	 st;
	char		 owner[64], name[USER_ID_MAX + 8];
	const char *const mkfs[] = { MKFS, "-q", "-F", "-m", "0", "-L",
			    "workspace", "-E", owner, path, NULL };
	const char *const rmlf[] = { DEBUGFS, "-w", "-R", "rmdir lost+found",
			    path, NULL };
	int		 sfd = -1, dfd = -1, fd = -1, r = -1;

	quota_image_path(c, user, path, pathlen);
	snprintf(name, sizeof(name), "%s.img", user);
	snprintf(owner, sizeof(owner), "root_owner=%lu:%lu,nodiscard", uid,
	    gid);
	if (mkdir(c->state_dir, 0700) == -1 && errno != EEXIST) {
		berr_set(e, 500, "cannot create %s: %s", c->state_dir,
		    strerror(errno));
		goto fail;
	}
	if ((sfd = open(c->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
	    == -1 || (mkdirat(sfd, WORKSPACES_DIR, 0700) == -1
	    && errno != EEXIST) || (dfd = openat(sfd, WORKSPACES_DIR,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		berr_set(e, 500, "cannot make %s/" WORKSPACES_DIR ": %s",
		    c->state_dir, strerror(errno));
		goto fail;
	}
	if (fstat(dfd, &st) == -1 || st.st_uid != geteuid()
	    || (st.st_mode & 022) != 0) {
		berr_set(e, 500, "%s/" WORKSPACES_DIR " is not the supervisor's "
		    "own directory: refusing to use it", c->state_dir);
		goto fail;
	}
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1 && errno == EEXIST) {
		/* Made before; a link or a device planted here is refused. */
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1
		    || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			berr_set(e, 500, "%s is not a workspace image: refusing to "
			    "use it", path);
			goto fail;
		}
		r = 0;
		goto fail;
	}
	if (fd == -1 || ftruncate(fd, (off_t)size) == -1) {
		berr_set(e, 500, "cannot make %s: %s", path, strerror(errno));
		goto undo;
	}
	close(fd);
	fd = -1;
	if (run(mkfs, e) == -1)
		goto undo;
	/* Not the model's to see: it could not even open it. */
	if (run(rmlf, e) == -1)
		goto undo;
	log_info("%s: made a workspace of %llu MiB", path, size >> 20);
	r = 1;
	goto fail;
undo:
	/* Half made: the next attempt starts again. */
	(void)unlinkat(dfd, name, 0);
fail:
	if (fd != -1)
		close(fd);
	if (dfd != -1)
		close(dfd);
	if (sfd != -1)
		close(sfd);
	return r;
}

void
quota_image_remove(const struct conf *c, const char *user)
{
	char	 path[STATE_DIR_MAX + USER_ID_MAX + 32];

	quota_image_path(c, user, path, sizeof(path));
	if (unlink(path) == -1 && errno != ENOENT)
		log_warn("%s", path);
}
