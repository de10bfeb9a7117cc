/*
 * wsdiff.h: what a run changed in the workspace.
 *
 * Before a run the agent lists the workspace's regular files (size, mtime,
 * ctime, inode); after it, the files that are new or differ are what the
 * run wrote.  That one diff drives everything a result says about files:
 * the PNGs returned as images (images.h), the footer's `wrote:` and
 * `workspace:` lines and the structuredContent's files_written.  The
 * runner does not walk the workspace itself, so the lists cannot disagree,
 * and a run that is killed still returns its images.
 */
#ifndef VIVARIUM_WSDIFF_H
#define VIVARIUM_WSDIFF_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "buf.h"

/* ---------------------------------------------------------------- the walk */

/*
 * The one walk of a workspace, in workspace.c: list_files, the workspace
 * page (files.c) and a run's diff (below) all see the tree through it, so
 * what one skips the others skip too.  It never follows a symbolic link,
 * never enters <workspace>/.vivarium (the runner's; a .vivarium deeper down
 * is the user's) and stops at these bounds, for a workspace may hold
 * anything.
 */
#define WS_WALK_MAX_DEPTH	16	/* levels of entries seen */
#ifndef WS_WALK_MAX_ENTRIES	/* a test may set a small one */
#define WS_WALK_MAX_ENTRIES	200000	/* directory entries read, in all */
#endif
#define WS_STATE_DIR		".vivarium"

struct ws_entry {
	const char		*path;	/* relative to the workspace */
	const struct stat	*st;	/* of the entry itself (lstat) */
	int			 depth;	/* 0 for the workspace's own entries */
};

/* Returns 0 to go on; anything else ends the walk and is its result. */
typedef int	(*ws_walk_fn)(void *arg, const struct ws_entry *);

/*
 * Calls fn for each entry under the workspace, each directory's entries in
 * name order, a directory before what it holds.  *cut says a bound left
 * entries out (a path too long counts as one).  Returns 0, what fn
 * returned to end it, or -1 with errno (the workspace cannot be opened,
 * or memory ran out).
 */
int	ws_walk(const char *workspace, ws_walk_fn fn, void *arg, int *cut);

/* ---------------------------------------------------------------- the diff */

#define WS_WALK_MAX_FILES	50000	/* files a snapshot remembers */

struct ws_file {
	char		*path;		/* owned; relative to the workspace */
	off_t		 size;
	struct timespec	 mtime;
	struct timespec	 ctime;		/* code cannot set it back with utime */
	ino_t		 ino;
	dev_t		 dev;
};

struct ws_snap {
	struct ws_file	*files;		/* owned; sorted by path */
	size_t		 n, cap;
	int		 truncated;	/* a walk bound was reached */
	struct timespec	 started;	/* CLOCK_REALTIME when the walk began */
};

#define WS_SNAP_INIT	{ NULL, 0, 0, 0, { 0, 0 } }

/*
 * Lists the regular files under the workspace: recursive, without
 * following symlinks, without entering <workspace>/.vivarium (the
 * runner's; a .vivarium deeper down is the user's).  Returns 0, or -1 with
 * errbuf set when the workspace cannot be opened or memory ran out.
 */
int	ws_snap_take(struct ws_snap *, const char *workspace, char *errbuf,
	    size_t errlen);
void	ws_snap_release(struct ws_snap *);

/*
 * The files of `after` that are not in `before`, or whose size, mtime,
 * ctime or inode changed: newest first by mtime (ties by path).  When the
 * first walk stopped at a bound, a file it did not see counts only if it
 * was modified after that walk began.  *out is a new array of pointers
 * borrowed from `after` (free() the array only).  Returns the count, or -1
 * when out of memory.
 */
ssize_t	ws_snap_changed(const struct ws_snap *before,
	    const struct ws_snap *after, const struct ws_file ***out);

/* Does the name end in .png (any case)?  In a picture format (.png, .jpg,
 * .svg, ...)? */
int	ws_is_png(const char *path);
int	ws_is_image(const char *path);

/*
 * The footer's workspace lines, each ending in a newline: `wrote:` (the n
 * changed files with their sizes) and the share_file hint when one of them
 * is not an image, `uploaded by the user since the last call:` (taking
 * <workspace>/.vivarium/uploaded, which files.c appends to, so each upload
 * is named once), and `workspace:` (the count and the newest three).
 * Every line is bounded.  Returns 0, -1 when out is full.
 */
int	ws_footer(struct buf *out, const char *workspace,
	    const struct ws_snap *after, const struct ws_file *const *changed,
	    size_t n);

#endif
