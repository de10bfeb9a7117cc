/*
 * wsdiff.c: the workspace before and after a run, what changed, and the
 * footer lines that say so (see wsdiff.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "text.h"
#include "wsdiff.h"
#include "banned.h"

/* ---------------------------------------------------------------- snapshot */

int
ws_is_png(const char *name)
{
	size_t	 n = strlen(name);

	return n > 4 && strcasecmp(name + n - 4, ".png") == 0;
}

static int
snap_add(struct ws_snap *s, const char *path, const struct stat *st)
{
	struct ws_file	*f;
	size_t		 cap;

	if (s->n == s->cap) {
		cap = s->cap ? s->cap * 2 : 64;
		if ((f = reallocarray(s->files, cap, sizeof(*f))) == NULL)
			return -1;
		s->files = f;
		s->cap = cap;
	}
	f = &s->files[s->n];
	if ((f->path = strdup(path)) == NULL)
		return -1;
	f->size = st->st_size;
	f->mtime = st->st_mtim;
	f->ctime = st->st_ctim;
	f->ino = st->st_ino;
	f->dev = st->st_dev;
	s->n++;
	return 0;
}

/* The regular files, until WS_WALK_MAX_FILES of them. */
static int
snap_entry(void *arg, const struct ws_entry *e)
{
	struct ws_snap	*s = arg;

	if (!S_ISREG(e->st->st_mode))
		return 0;
	if (s->n >= WS_WALK_MAX_FILES) {
		s->truncated = 1;
		return 1;
	}
	return snap_add(s, e->path, e->st);
}

static int
file_cmp_path(const void *a, const void *b)
{
	const struct ws_file *fa = a, *fb = b;

	return strcmp(fa->path, fb->path);
}

int
ws_snap_take(struct ws_snap *s, const char *workspace, char *errbuf,
    size_t errlen)
{
	int		 cut;

	ws_snap_release(s);
	clock_gettime(CLOCK_REALTIME, &s->started);
	if (ws_walk(workspace, snap_entry, s, &cut) == -1) {
		snprintf(errbuf, errlen, "%s: %s", workspace, strerror(errno));
		ws_snap_release(s);
		return -1;
	}
	s->truncated |= cut;
	if (s->n > 1)
		qsort(s->files, s->n, sizeof(*s->files), file_cmp_path);
	return 0;
}

void
ws_snap_release(struct ws_snap *s)
{
	size_t	 i;

	for (i = 0; i < s->n; i++)
		free(s->files[i].path);
	free(s->files);
	memset(s, 0, sizeof(*s));
}

static int
ts_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	if (a->tv_nsec != b->tv_nsec)
		return a->tv_nsec < b->tv_nsec ? -1 : 1;
	return 0;
}

/* Newest first, ties by path. */
static int
file_cmp_newest(const struct ws_file *fa, const struct ws_file *fb)
{
	int	 c = ts_cmp(&fb->mtime, &fa->mtime);

	return c != 0 ? c : strcmp(fa->path, fb->path);
}

static int
file_ptr_cmp_newest(const void *a, const void *b)
{
	return file_cmp_newest(*(const struct ws_file *const *)a,
	    *(const struct ws_file *const *)b);
}

static int
file_same(const struct ws_file *a, const struct ws_file *b)
{
	return a->size == b->size && a->ino == b->ino && a->dev == b->dev &&
	    ts_cmp(&a->mtime, &b->mtime) == 0 &&
	    ts_cmp(&a->ctime, &b->ctime) == 0;
}

ssize_t
ws_snap_changed(const struct ws_snap *before, const struct ws_snap *after,
    const struct ws_file ***out)
{
	const struct ws_file **v, *old, *f;
	size_t		 i, n = 0;

	*out = NULL;
	if (after->n == 0)
		return 0;
	if ((v = calloc(after->n, sizeof(*v))) == NULL)
		return -1;
	for (i = 0; i < after->n; i++) {
		f = &after->files[i];
		old = before->n == 0 ? NULL : bsearch(f, before->files,
		    before->n, sizeof(*before->files), file_cmp_path);
		if (old != NULL && file_same(old, f))
			continue;
		/* Past the first walk's bound, an old file is not news. */
		if (old == NULL && before->truncated &&
		    ts_cmp(&f->mtime, &before->started) < 0)
			continue;
		v[n++] = f;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), file_ptr_cmp_newest);
	if (n == 0) {
		free(v);
		v = NULL;
	}
	*out = v;
	return (ssize_t)n;
}

/* ---------------------------------------------------------------- footer */

#define LIST_MAX	300	/* characters on a list line */
#define ELLIPSIS	"\xe2\x80\xa6"	/* U+2026 */

static const char *const image_exts[] = {
	".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".tif",
	".tiff", NULL
};

/*
 * Appends a file name for the footer: valid UTF-8 without control
 * characters (a newline would forge a line), and past max characters cut
 * to max - 1 and an ellipsis.
 */
static int
put_name(struct buf *out, const char *name, size_t max)
{
	struct buf	 t = BUF_INIT(16384);
	size_t		 i, k = 0;
	int		 rc = -1;

	if (text_escape(&t, name, strlen(name), ESCAPE_CONTROL) == -1)
		goto done;
	if (utf8_chars(buf_str(&t), t.len) <= max) {
		rc = buf_append(out, buf_str(&t), t.len);
		goto done;
	}
	for (i = 0; i < t.len; i++)
		if ((((unsigned char)t.data[i] & 0xc0) != 0x80) && k++ == max - 1)
			break;
	rc = buf_append(out, t.data, i) == -1 ||
	    buf_appends(out, ELLIPSIS) == -1 ? -1 : 0;
done:
	buf_release(&t);
	return rc;
}

/*
 * A list line of at most LIST_MAX characters after its prefix: items
 * joined by ", "; when the next one would not fit (with room kept for the
 * count), "… N more" ends it.
 */
struct list {
	struct buf	*out;
	size_t		 total, i, used;
	int		 done;
};

static int
list_add(struct list *l, const char *item, size_t len)
{
	char		 more[32];
	size_t		 add, rest, tail;
	int		 m;

	if (l->done)
		return 0;
	add = utf8_chars(item, len) + (l->i > 0 ? 2 : 0);
	rest = l->total - l->i;
	m = snprintf(more, sizeof(more), ELLIPSIS " %zu more", rest);
	tail = 2 + utf8_chars(more, (size_t)m);
	if (l->i > 0 && l->used + add + (rest > 1 ? tail : 0) > LIST_MAX) {
		l->done = 1;
		return buf_appendf(l->out, ", %s", more);
	}
	l->i++;
	l->used += add;
	return buf_appendf(l->out, "%s%.*s", l->i > 1 ? ", " : "", (int)len,
	    item);
}

/* One "name (size)" item. */
static int
list_add_file(struct list *l, const char *name, unsigned long long size)
{
	struct buf	 it = BUF_INIT(1024);
	char		 hs[32];
	int		 rc;

	human_size(size, hs, sizeof(hs));
	rc = put_name(&it, name, 80) == -1 ||
	    buf_appendf(&it, " (%s)", hs) == -1 ||
	    list_add(l, buf_str(&it), it.len) == -1 ? -1 : 0;
	buf_release(&it);
	return rc;
}

int
ws_is_image(const char *name)
{
	size_t	 n = strlen(name), e;
	int	 i;

	for (i = 0; image_exts[i] != NULL; i++) {
		e = strlen(image_exts[i]);
		if (n >= e && strcasecmp(name + n - e, image_exts[i]) == 0)
			return 1;
	}
	return 0;
}

static int
footer_wrote(struct buf *out, const struct ws_file *const *ch, size_t n)
{
	struct list	 l = { out, n, 0, 0, 0 };
	size_t		 i;
	int		 other = 0;

	if (n == 0)
		return 0;
	if (buf_appends(out, "wrote: ") == -1)
		return -1;
	for (i = 0; i < n; i++) {
		if (list_add_file(&l, ch[i]->path,
		    (unsigned long long)ch[i]->size) == -1)
			return -1;
		other |= !ws_is_png(ch[i]->path);
	}
	if (buf_appends(out, "\n") == -1)
		return -1;
	/* PNGs reach the model anyway; other files need a link. */
	if (other && buf_appends(out, "to give the user a file: "
	    "share_file(path) makes a download link to put in your answer\n")
	    == -1)
		return -1;
	return 0;
}

/*
 * The uploads files.c noted since the last footer, one "path<TAB>size"
 * line each; the note is renamed away first, so an upload arriving while
 * it is read goes to a new note and is named next time.
 */
static int
footer_uploaded(struct buf *out, const char *workspace)
{
	char		 note[4096], taken[4200];
	struct buf	 data = BUF_INIT(256 * 1024);
	struct list	 l = { out, 0, 0, 0, 0 };
	const char	*p, *end, *nl, *tab;
	unsigned long long size;
	char		 name[4096], *e;
	size_t		 at;
	int		 fd, pass, rc = -1;

	snprintf(note, sizeof(note), "%s/%s/uploaded", workspace,
	    WS_STATE_DIR);
	snprintf(taken, sizeof(taken), "%s.%ld", note, (long)getpid());
	if (rename(note, taken) == -1)
		return 0;
	fd = open(taken, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	unlink(taken);
	if (fd == -1)
		return 0;
	for (;;) {
		char	 chunk[8192];
		ssize_t	 r = read(fd, chunk, sizeof(chunk));

		if (r <= 0 || buf_append(&data, chunk, (size_t)r) == -1)
			break;
	}
	close(fd);
	/* Two passes: the count first, for "… N more". */
	at = out->len;
	for (pass = 0; pass < 2; pass++) {
		p = buf_str(&data);
		end = p + data.len;
		for (; p < end; p = nl + 1) {
			if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
				nl = end;
			tab = memrchr(p, '\t', (size_t)(nl - p));
			if (tab == NULL || tab == p || tab + 1 == nl ||
			    (size_t)(tab - p) >= sizeof(name))
				continue;
			errno = 0;
			size = strtoull(tab + 1, &e, 10);
			if (e != nl || errno != 0 || tab[1] < '0' ||
			    tab[1] > '9' || memchr(p, '\0', (size_t)(tab - p)))
				continue;
			if (pass == 0) {
				l.total++;
				continue;
			}
			memcpy(name, p, (size_t)(tab - p));
			name[tab - p] = '\0';
			if (l.i == 0 && !l.done && buf_appends(out,
			    "uploaded by the user since the last call: ") == -1)
				goto done;
			if (list_add_file(&l, name, size) == -1)
				goto done;
		}
	}
	if (out->len > at && buf_appends(out, "\n") == -1)
		goto done;
	rc = 0;
done:
	buf_release(&data);
	return rc;
}

static int
footer_workspace(struct buf *out, const struct ws_snap *s)
{
	const struct ws_file *top[3] = { NULL, NULL, NULL }, *f;
	size_t		 i;
	int		 j, k;

	if (buf_appendf(out, "workspace: %zu%s file%s", s->n,
	    s->truncated ? "+" : "", s->n == 1 && !s->truncated ? "" : "s")
	    == -1)
		return -1;
	/* The newest three, without sorting them all. */
	for (i = 0; i < s->n; i++) {
		f = &s->files[i];
		for (j = 0; j < 3; j++)
			if (top[j] == NULL || file_cmp_newest(f, top[j]) < 0)
				break;
		if (j == 3)
			continue;
		for (k = 2; k > j; k--)
			top[k] = top[k - 1];
		top[j] = f;
	}
	for (j = 0; j < 3 && top[j] != NULL; j++)
		if (buf_appends(out, j == 0 ? ", newest: " : ", ") == -1 ||
		    put_name(out, top[j]->path, 60) == -1)
			return -1;
	return buf_appends(out, "\n");
}

int
ws_footer(struct buf *out, const char *workspace, const struct ws_snap *after,
    const struct ws_file *const *changed, size_t n)
{
	if (footer_wrote(out, changed, n) == -1 ||
	    footer_uploaded(out, workspace) == -1 ||
	    footer_workspace(out, after) == -1)
		return -1;
	return 0;
}
