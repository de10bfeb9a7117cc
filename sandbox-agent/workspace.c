/*
 * workspace.c: the files a caller may see, and the per-workspace run lock.
 *
 * Containment never works on path strings alone.  read_text_file walks the
 * path one component at a time with openat(O_NOFOLLOW) from a descriptor of
 * the workspace, so neither "..", an absolute path, a symlink (anywhere in
 * the path) nor a rename racing with us can lead outside it: every step is
 * relative to a directory already known to be inside.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "text.h"
#include "wsdiff.h"
#include "banned.h"

#define READ_MAX_PATH		4096

/* ------------------------------------------------------------ user ids */

int
workspace_user_id_valid(const char *id)
{
	size_t	 n = 0;

	if (id == NULL || *id == '\0' || *id == '.')
		return 0;
	for (; id[n] != '\0'; n++) {
		char c = id[n];

		if (n >= 64)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return 1;
}

/* Makes name (a directory) under dfd unless it exists; a new fd or -1. */
static int
mkdir_open(int dfd, const char *name)
{
	if (mkdirat(dfd, name, 0700) == -1 && errno != EEXIST)
		return -1;
	return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int
workspace_user_dir(const char *workdir, const char *id, char *out,
    size_t outlen, char *err, size_t errlen)
{
	int	 wfd = -1, ufd = -1, ifd = -1, r = -1, n;

	if (!workspace_user_id_valid(id)) {
		snprintf(err, errlen, "not a safe user id");
		return -1;
	}
	if ((wfd = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (ufd = mkdir_open(wfd, "users")) == -1 ||
	    (ifd = mkdir_open(ufd, id)) == -1) {
		snprintf(err, errlen, "cannot make the workspace users/%s: %s",
		    id, strerror(errno));
		goto fail;
	}
	n = snprintf(out, outlen, "%s/users/%s", workdir, id);
	if (n < 0 || (size_t)n >= outlen) {
		snprintf(err, errlen, "workspace path too long");
		goto fail;
	}
	r = 0;
fail:
	if (ifd != -1)
		close(ifd);
	if (ufd != -1)
		close(ufd);
	if (wfd != -1)
		close(wfd);
	return r;
}

/* ------------------------------------------------------------ the walk */

struct walk {
	ws_walk_fn	 fn;
	void		*arg;
	size_t		 seen;		/* entries read, against the bound */
	int		 cut;
	char		 path[PATH_MAX];
};

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Walks the directory open at fd (consumed), whose path w->path holds
 * (base bytes): reads its names, sorts them, then calls fn on each and
 * walks the directories among them.  At most WS_WALK_MAX_DEPTH
 * directories are open at once, and WS_WALK_MAX_ENTRIES names held.
 */
static int
walk_dir(struct walk *w, int fd, size_t base, int depth)
{
	DIR		*d;
	struct dirent	*de;
	struct ws_entry	 e;
	struct stat	 st;
	char		**names = NULL, **tmp;
	size_t		 n = 0, cap = 0, i, len;
	int		 sub, rc = 0, saved;

	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;	/* unreadable: nothing to see there */
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    (depth == 0 && strcmp(de->d_name, WS_STATE_DIR) == 0))
			continue;
		if (w->seen >= WS_WALK_MAX_ENTRIES) {
			w->cut = 1;
			break;
		}
		w->seen++;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((tmp = reallocarray(names, cap,
			    sizeof(*names))) == NULL) {
				rc = -1;
				goto done;
			}
			names = tmp;
		}
		if ((names[n] = strdup(de->d_name)) == NULL) {
			rc = -1;
			goto done;
		}
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	for (i = 0; i < n && rc == 0; i++) {
		len = strlen(names[i]);
		if (base + (base > 0) + len >= sizeof(w->path)) {
			w->cut = 1;
			continue;
		}
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (base > 0)
			w->path[base] = '/';
		memcpy(w->path + base + (base > 0), names[i], len + 1);
		e.path = w->path;
		e.st = &st;
		e.depth = depth;
		if ((rc = w->fn(w->arg, &e)) != 0)
			break;
		if (!S_ISDIR(st.st_mode))
			continue;
		if (depth + 1 >= WS_WALK_MAX_DEPTH) {
			w->cut = 1;
			continue;
		}
		sub = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (sub != -1)
			rc = walk_dir(w, sub, base + (base > 0) + len, depth + 1);
	}
done:
	saved = errno;
	w->path[base] = '\0';
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	errno = saved;
	return rc;
}

int
ws_walk(const char *workspace, ws_walk_fn fn, void *arg, int *cut)
{
	struct walk	 w;
	int		 fd, rc;

	*cut = 0;
	if ((fd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	w.fn = fn;
	w.arg = arg;
	w.seen = 0;
	w.cut = 0;
	w.path[0] = '\0';
	rc = walk_dir(&w, fd, 0, 0);
	*cut = w.cut;
	return rc;
}

/* ------------------------------------------------------------ list_files */

#define LIST_MAX_LINES		1000		/* entries shown by list_files */

struct listing {
	struct buf	 lines;
	struct buf	 path;		/* the path being shown */
	size_t		 shown, files, dirs, others;
	unsigned long long bytes;
	int		 cut;		/* some entries not shown */
};

static void
listing_line(struct listing *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
listing_line(struct listing *L, const char *fmt, ...)
{
	va_list ap;

	if (L->shown >= LIST_MAX_LINES) {
		L->cut = 1;
		return;
	}
	va_start(ap, fmt);
	if (buf_vappendf(&L->lines, fmt, ap) == -1)
		L->cut = 1;
	else
		L->shown++;
	va_end(ap);
}

/*
 * The path as the model can read it: a name that is not UTF-8 would make
 * the whole listing invalid JSON text.  Each name is escaped on its own,
 * and every name under an escaped one is escaped too.  1 when escaped.
 */
static int
shown_path(struct buf *out, const char *path)
{
	const char	*p = path, *slash;
	size_t		 n;
	int		 esc = 0, r;

	buf_reset(out);
	for (;;) {
		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if ((r = text_escape(out, p, n, ESCAPE_CONTROL |
		    (esc ? ESCAPE_ALWAYS : 0))) == -1)
			return -1;
		esc |= r;
		if (slash == NULL)
			return esc;
		if (buf_append(out, "/", 1) == -1)
			return -1;
		p = slash + 1;
	}
}

static int
list_entry(void *arg, const struct ws_entry *e)
{
	struct listing	*L = arg;
	const struct stat *st = e->st;
	const char	*path, *mark;
	char		 size[32];
	int		 esc;

	if ((esc = shown_path(&L->path, e->path)) == -1)
		return 0;
	path = buf_str(&L->path);
	mark = esc ? "  " NAME_ESCAPED_MARK : "";
	if (S_ISDIR(st->st_mode)) {
		L->dirs++;
		listing_line(L, "%s/%s\n", path, mark);
	} else if (S_ISREG(st->st_mode)) {
		L->files++;
		L->bytes += (unsigned long long)st->st_size;
		human_size((unsigned long long)st->st_size, size, sizeof(size));
		listing_line(L, "%s  %s%s\n", path, size, mark);
	} else if (S_ISLNK(st->st_mode)) {
		L->others++;
		listing_line(L, "%s  (symbolic link)%s\n", path, mark);
	} else {
		L->others++;
		listing_line(L, "%s  (not a regular file)%s\n", path, mark);
	}
	return 0;
}

int
workspace_list(const char *root, struct buf *out, char *err, size_t errlen)
{
	struct listing	 L;
	char		 total[32];
	int		 walk_cut, ret = -1;

	memset(&L, 0, sizeof(L));
	buf_init(&L.lines, 256 * 1024);
	buf_init(&L.path, PATH_MAX * 4 + 16);	/* \xNN a byte */
	if (ws_walk(root, list_entry, &L, &walk_cut) == -1) {
		if (errno == ENOENT) {
			buf_appends(out, "The workspace is empty.\n");
			ret = 0;
		} else
			snprintf(err, errlen, "cannot list the workspace: %s",
			    strerror(errno));
		goto done;
	}
	ret = 0;
	if (L.files + L.dirs + L.others == 0) {
		buf_appends(out, "The workspace is empty.\n");
		goto done;
	}
	human_size(L.bytes, total, sizeof(total));
	buf_appendf(out, "%s%zu file(s), %zu folder(s), %s in files%s:\n",
	    walk_cut ? "at least " : "", L.files, L.dirs, total,
	    walk_cut ? " (the walk stopped early)" : "");
	buf_append(out, L.lines.data ? L.lines.data : "", L.lines.len);
	if (L.cut)
		buf_appendf(out, "[listing cut after %zu entries; use "
		    "run_python (os.walk / glob) to look further]\n", L.shown);
done:
	buf_release(&L.lines);
	buf_release(&L.path);
	return ret;
}

/* ------------------------------------------------------------ read_text_file */

/*
 * Checks data[0..len) is text and finds where max_chars characters end.
 * at_eof says the data is the whole file (a cut-off sequence is then an
 * error).  Returns 0 with *cut_at (bytes) and *chars, or -1 with err.
 */
static int
text_scan(const unsigned char *data, size_t len, int at_eof, long max_chars,
    size_t *cut_at, long *chars, char *err, size_t errlen)
{
	size_t	 i = 0;
	long	 c = 0;
	int	 k;

	*cut_at = len;
	while (i < len) {
		if (data[i] == '\0') {
			snprintf(err, errlen, "it looks binary (it contains NUL "
			    "bytes); use run_python to inspect it");
			return -1;
		}
		k = utf8_seq(data + i, len - i);
		if (k == -1 && !at_eof) {
			*cut_at = i;
			break;
		}
		if (k <= 0) {
			snprintf(err, errlen, "it is not UTF-8 text (invalid "
			    "byte at offset %zu): binary, or another encoding; "
			    "use run_python to read it", i);
			return -1;
		}
		if (c == max_chars && *cut_at == len)
			*cut_at = i;		/* keep scanning for binary */
		if (c < max_chars)
			c++;
		i += (size_t)k;
	}
	*chars = c;
	return 0;
}

/* Opens path under rootfd one component at a time, never following links. */
static int
open_beneath(int rootfd, const char *path, char *err, size_t errlen)
{
	char		 comp[NAME_MAX + 1];
	const char	*p = path, *e;
	int		 fd, nfd, first = 1, dir_wanted;
	size_t		 n;

	fd = dup(rootfd);
	if (fd == -1)
		goto sys;
	for (;;) {
		while (*p == '/')
			p++;
		e = strchr(p, '/');
		if (e == NULL)
			e = p + strlen(p);
		n = (size_t)(e - p);
		if (n == 0) {
			/* "dir/" or "" or "." alone: not a file. */
			snprintf(err, errlen, "'%s' is not a file", path);
			close(fd);
			return -1;
		}
		if (n > NAME_MAX) {
			snprintf(err, errlen, "a component of '%s' is too long",
			    path);
			close(fd);
			return -1;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		/* "name/" names a directory (POSIX), never a file. */
		dir_wanted = *e == '/';
		while (*e == '/')
			e++;
		if (strcmp(comp, ".") == 0) {
			if (*e == '\0') {
				snprintf(err, errlen, "'%s' is not a file", path);
				close(fd);
				return -1;
			}
			p = e;
			continue;
		}
		if (strcmp(comp, "..") == 0) {
			snprintf(err, errlen, "'%s' leads outside the workspace "
			    "('..' is not allowed)", path);
			close(fd);
			return -1;
		}
		if (first && strcmp(comp, WS_STATE_DIR) == 0) {
			snprintf(err, errlen, "'%s' is the runner's private "
			    "state, not a workspace file", path);
			close(fd);
			return -1;
		}
		first = 0;
		if (*e == '\0' && !dir_wanted) {
			nfd = openat(fd, comp, O_RDONLY | O_NOFOLLOW |
			    O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		} else {
			nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd == -1) {
			int		 saved = errno;
			struct stat	 lst;

			if (saved == ENOTDIR && fstatat(fd, comp, &lst,
			    AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode))
				saved = ELOOP;
			close(fd);
			if (saved == ELOOP) {
				snprintf(err, errlen, "'%s' goes through a "
				    "symbolic link ('%s'); links are not followed "
				    "because they can lead outside the workspace",
				    path, comp);
			} else if (saved == ENOTDIR) {
				snprintf(err, errlen, "'%s': '%s' is not a "
				    "directory", path, comp);
			} else if (saved == ENOENT) {
				snprintf(err, errlen, "'%s' does not exist in the "
				    "workspace (list_files shows what does)", path);
			} else {
				snprintf(err, errlen, "cannot open '%s': %s", path,
				    strerror(saved));
			}
			return -1;
		}
		close(fd);
		fd = nfd;
		if (*e == '\0')
			return fd;
		p = e;
	}
sys:
	snprintf(err, errlen, "cannot open the workspace: %s", strerror(errno));
	return -1;
}

int
workspace_open_file(const char *root, const char *path, struct stat *st,
    char *err, size_t errlen)
{
	int	 rootfd, fd = -1;

	if (*path == '\0') {
		snprintf(err, errlen, "path is empty");
		return -1;
	}
	if (path[0] == '/') {
		snprintf(err, errlen, "'%s' is an absolute path; give a path "
		    "relative to the workspace (e.g. data/file.csv)", path);
		return -1;
	}
	if (strlen(path) > READ_MAX_PATH) {
		snprintf(err, errlen, "path is too long");
		return -1;
	}
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd == -1) {
		if (errno == ENOENT)
			snprintf(err, errlen, "'%s' does not exist in the "
			    "workspace (the workspace is empty)", path);
		else
			snprintf(err, errlen, "cannot open the workspace: %s",
			    strerror(errno));
		return -1;
	}
	fd = open_beneath(rootfd, path, err, errlen);
	close(rootfd);
	if (fd == -1)
		return -1;
	if (fstat(fd, st) == -1) {
		snprintf(err, errlen, "cannot read '%s': %s", path,
		    strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st->st_mode)) {
		snprintf(err, errlen, "'%s' is a directory; list_files shows "
		    "its contents", path);
		goto fail;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "'%s' is not a regular file", path);
		goto fail;
	}
	/* Opened O_NONBLOCK so a FIFO could not hang us; files read normally. */
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
fail:
	close(fd);
	return -1;
}

int
workspace_read_text(const char *root, const char *path, long max_chars,
    struct buf *out, char *err, size_t errlen)
{
	struct stat	 st;
	unsigned char	*data = NULL;
	size_t		 want, got = 0, cut_at;
	ssize_t		 r;
	long		 chars;
	int		 fd = -1, ret = -1;

	if ((fd = workspace_open_file(root, path, &st, err, errlen)) == -1)
		return -1;
	/* At most 4 bytes a character, plus one character to see a cut. */
	want = (size_t)max_chars * 4 + 4;
	if ((unsigned long long)st.st_size < want)
		want = (size_t)st.st_size;
	if ((data = malloc(want + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	while (got < want) {
		r = read(fd, data + got, want - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errlen, "cannot read '%s': %s", path,
			    strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (text_scan(data, got, got >= (size_t)st.st_size, max_chars, &cut_at,
	    &chars, err, errlen) == -1) {
		char reason[400];

		snprintf(reason, sizeof(reason), "%s", err);
		snprintf(err, errlen, "'%s' is not shown: %s", path, reason);
		goto fail;
	}
	if (buf_append(out, data, cut_at) == -1) {
		snprintf(err, errlen, "the text is too large to return");
		goto fail;
	}
	if (cut_at < (size_t)st.st_size)
		buf_appendf(out, "\n[truncated: showing the first %ld "
		    "characters of '%s' (%lld bytes); call read_text_file "
		    "with a larger max_chars, or read a part with run_python]\n",
		    chars, path, (long long)st.st_size);
	ret = 0;
fail:
	free(data);
	if (fd != -1)
		close(fd);
	return ret;
}

/* ------------------------------------------------------------ run lock */

/*
 * One entry per workspace with a run in progress or waiting; entries go away
 * when nobody holds or waits for them, so the table stays as small as the
 * number of busy workspaces.
 */
struct wslock {
	struct wslock	*next;
	char		*root;
	int		 refs;
	int		 held;
	pthread_cond_t	 cond;
};

static pthread_mutex_t	 wslock_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct wslock	*wslock_head;

struct wslock *
wslock_acquire(const char *root)
{
	struct wslock *l;

	pthread_mutex_lock(&wslock_mtx);
	for (l = wslock_head; l != NULL; l = l->next)
		if (strcmp(l->root, root) == 0)
			break;
	if (l == NULL) {
		if ((l = calloc(1, sizeof(*l))) == NULL ||
		    (l->root = strdup(root)) == NULL) {
			free(l);
			pthread_mutex_unlock(&wslock_mtx);
			return NULL;
		}
		pthread_cond_init(&l->cond, NULL);
		l->next = wslock_head;
		wslock_head = l;
	}
	l->refs++;
	while (l->held)
		pthread_cond_wait(&l->cond, &wslock_mtx);
	l->held = 1;
	pthread_mutex_unlock(&wslock_mtx);
	return l;
}

void
wslock_release(struct wslock *l)
{
	struct wslock **pp;

	pthread_mutex_lock(&wslock_mtx);
	l->held = 0;
	if (--l->refs > 0) {
		pthread_cond_signal(&l->cond);
		pthread_mutex_unlock(&wslock_mtx);
		return;
	}
	for (pp = &wslock_head; *pp != l; pp = &(*pp)->next)
		;
	*pp = l->next;
	pthread_mutex_unlock(&wslock_mtx);
	pthread_cond_destroy(&l->cond);
	free(l->root);
	free(l);
}
