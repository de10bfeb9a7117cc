/*
 * run.c: one run_python call (see run.h and docs/runner-contract.md).
 *
 * Make a private run directory with code.py, start the runner with the
 * contract's environment in the workspace, keep the tail of its output,
 * read its report, and say what it changed in the workspace: the PNGs it
 * made, the footer's workspace lines.  Memory stays bounded
 * whatever the code does: output goes through fixed-size rings, the report
 * is capped, images are decoded row by row under a pixel cap.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "images.h"
#include "log.h"
#include "run.h"
#include "spawn.h"
#include "text.h"
#include "warm.h"
#include "wsdiff.h"
#include "banned.h"

extern char **environ;

#define REPORT_MAX		(1u << 20)
/* Paths in the result's files_written. */
#define FILES_WRITTEN_MAX	200
#define RUNDIR_MAX_DEPTH	8
/* A budget under this is no image worth sending: the PNG is left out. */
#define IMAGE_MIN_BUDGET	1024
/* Decoding attempts past max_images, for PNGs that fail to load. */
#define IMAGE_EXTRA_TRIES	8
/* Figures read from a report, and the length of what saved one. */
#define FIGURES_MAX		64
#define FIGURE_BY_MAX		64

/* ---------------------------------------------------------------- UTF-8 */

/*
 * Characters are counted the way a decoder that replaces bad bytes with
 * U+FFFD would see them: a valid sequence is one character, and so is
 * each maximal invalid part (a lead byte with the continuation bytes that
 * fit it, or a stray byte), as Unicode recommends (ch. 3, "U+FFFD
 * substitution of maximal subparts").
 */

/* Streaming character count over every byte a stream produced. */
struct utf8_count {
	unsigned long long chars;
	int		 need;
	unsigned char	 lo, hi;
	/* the caller's observer, if any (run_request) */
	const struct run_request *rq;
	int		 stream;
	/* the stream's first bytes (spawn keeps only the tail) */
	unsigned char	*head;
	size_t		 head_len, head_cap;
};

static void
utf8_count_feed(void *arg, const unsigned char *p, size_t n)
{
	struct utf8_count *c = arg;
	size_t		 i;
	int		 need;

	if (c->rq != NULL && c->rq->observe != NULL)
		c->rq->observe(c->rq->observe_arg, c->stream, p, n);
	if (c->head_len < c->head_cap) {
		i = c->head_cap - c->head_len < n ? c->head_cap - c->head_len : n;
		memcpy(c->head + c->head_len, p, i);
		c->head_len += i;
	}
	for (i = 0; i < n; i++) {
		/* Runs of ASCII, eight bytes at a time: output is mostly that. */
		if (c->need == 0) {
			uint64_t w;

			while (n - i >= 8) {
				memcpy(&w, p + i, 8);
				if (w & 0x8080808080808080ULL)
					break;
				c->chars += 8;
				i += 8;
			}
			if (i == n)
				break;
		}
		if (c->need > 0) {
			if (p[i] >= c->lo && p[i] <= c->hi) {
				c->need--;
				c->lo = 0x80;
				c->hi = 0xbf;
				continue;
			}
			c->need = 0;	/* broken: p[i] starts afresh */
		}
		c->chars++;
		need = utf8_lead(p[i], &c->lo, &c->hi);
		c->need = need > 0 ? need : 0;
	}
}

/*
 * Appends p as valid UTF-8 (bad bytes become U+FFFD), at most max
 * characters of it; returns the characters appended, or -1.
 */
static long long
text_valid(struct buf *b, const unsigned char *p, size_t n, size_t max)
{
	size_t		 i, k, chars = 0;
	int		 ok;

	for (i = 0; i < n && chars < max; i += k) {
		k = utf8_next(p + i, n - i, &ok);
		if (ok == 1 ? buf_append(b, p + i, k) :
		    buf_append(b, "\xef\xbf\xbd", 3))
			return -1;
		chars++;
	}
	return (long long)chars;
}

/*
 * Makes the text shown for one stream from the bytes kept of it: valid
 * UTF-8, at most `limit` characters, the tail.  `dropped`: bytes were
 * lost before p, so p may start inside a character.  total_chars counts
 * the whole stream; *cut gets what is not shown.
 */
static int
tail_text(const unsigned char *p, size_t n, int dropped,
    unsigned long long total_chars, size_t limit, char **out, size_t *outlen,
    unsigned long long *cut)
{
	struct buf	 b = BUF_INIT((size_t)-1 / 4);
	size_t		 i = 0, chars, skip, start;
	long long	 got;

	*out = NULL;
	*outlen = 0;
	/* The rest of a character whose start was dropped. */
	if (dropped)
		while (i < n && i < 3 && (p[i] & 0xc0) == 0x80)
			i++;
	if ((got = text_valid(&b, p + i, n - i, (size_t)-1)) == -1)
		goto fail;
	chars = (size_t)got;
	start = 0;
	if (chars > limit) {
		/* Keep the last `limit` characters: skip to a lead byte. */
		for (skip = chars - limit; start < b.len; start++)
			if (((unsigned char)b.data[start] & 0xc0) != 0x80 &&
			    skip-- == 0)
				break;
		chars = limit;
	}
	buf_consume(&b, start);
	*cut = total_chars > chars ? total_chars - chars : 0;
	*out = buf_detach(&b, outlen);
	return *out != NULL ? 0 : -1;
fail:
	buf_release(&b);
	return -1;
}

/* ---------------------------------------------------------------- run dir */

/* Removes dir/name and everything under it; returns -1 if some remains. */
static int
rm_tree_at(int dfd, const char *name, int depth)
{
	DIR		*d;
	struct dirent	*de;
	int		 fd, rc = 0;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (depth >= RUNDIR_MAX_DEPTH)
		return -1;
	fchmodat(dfd, name, 0700, 0);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (rm_tree_at(dirfd(d), de->d_name, depth + 1) == -1)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) == -1 && errno != ENOENT)
		rc = -1;
	return rc;
}

static int
write_all(int fd, const char *p, size_t n)
{
	ssize_t	 w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Makes the private run directory holding code.py. */
static int
rundir_make(char *dir, size_t dirlen, const char *code, size_t code_len,
    char *errbuf, size_t errlen)
{
	const char	*tmp = getenv("TMPDIR");
	char		 path[PATH_MAX];
	int		 fd, n;

	if (tmp == NULL || *tmp != '/')
		tmp = "/tmp";
	n = snprintf(dir, dirlen, "%s/vivarium-run-XXXXXX", tmp);
	if (n < 0 || (size_t)n >= dirlen) {
		snprintf(errbuf, errlen, "TMPDIR is too long");
		return -1;
	}
	/* mkdtemp makes it 0700. */
	if (mkdtemp(dir) == NULL) {
		snprintf(errbuf, errlen, "cannot make a run directory in %s: %s",
		    tmp, strerror(errno));
		dir[0] = '\0';
		return -1;
	}
	snprintf(path, sizeof(path), "%s/code.py", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1 || write_all(fd, code, code_len) == -1 ||
	    close(fd) == -1) {
		snprintf(errbuf, errlen, "cannot write %s: %s", path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static void
rundir_remove(const char *dir)
{
	if (dir[0] == '\0')
		return;
	if (rm_tree_at(AT_FDCWD, dir, 0) == -1)
		log_warnx("run directory %s: could not remove all of it", dir);
}

/* ---------------------------------------------------------------- environment */

static const char *const env_ours[] = {
	"VIVARIUM_RUN_DIR", "VIVARIUM_STATE_DIR", "VIVARIUM_FRESH",
	"VIVARIUM_PERSIST_NAMESPACE", "VIVARIUM_NAMESPACE_MAX_BYTES",
	"VIVARIUM_STATE_SUMMARY", "MPLBACKEND", "PYTHONPATH", "PYTHONUNBUFFERED",
	NULL,
};

struct envv {
	char	**v;		/* owned array; entries in `own` are owned */
	size_t	 n, cap;
	char	**own;
	size_t	 nown;
};

static int
env_push(struct envv *e, char *s, int owned)
{
	char	**v;

	if (e->n + 2 > e->cap) {
		e->cap = e->cap ? e->cap * 2 : 64;
		if ((v = reallocarray(e->v, e->cap, sizeof(*v))) == NULL)
			return -1;
		e->v = v;
		if ((v = reallocarray(e->own, e->cap, sizeof(*v))) == NULL)
			return -1;
		e->own = v;
	}
	e->v[e->n++] = s;
	e->v[e->n] = NULL;
	if (owned)
		e->own[e->nown++] = s;
	return 0;
}

static int
env_pushf(struct envv *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
env_pushf(struct envv *e, const char *fmt, ...)
{
	struct buf	 b = BUF_INIT(1 << 20);
	va_list		 ap;
	int		 r;
	char		*s;

	va_start(ap, fmt);
	r = buf_vappendf(&b, fmt, ap);
	va_end(ap);
	if (r == -1 || (s = buf_detach(&b, NULL)) == NULL) {
		buf_release(&b);
		return -1;
	}
	if (env_push(e, s, 1) == -1) {
		free(s);
		return -1;
	}
	return 0;
}

static void
env_free(struct envv *e)
{
	size_t	 i;

	for (i = 0; i < e->nown; i++)
		free(e->own[i]);
	free(e->own);
	free(e->v);
	memset(e, 0, sizeof(*e));
}

static int
env_is_ours(const char *kv)
{
	const char *const *k;
	size_t		 n;

	for (k = env_ours; *k != NULL; k++) {
		n = strlen(*k);
		if (strncmp(kv, *k, n) == 0 && kv[n] == '=')
			return 1;
	}
	return 0;
}

/*
 * What every interpreter the agent starts gets: the agent's environment
 * minus what the contract sets (and, for the zygote, minus
 * VIVARIUM_WARM_IMPORTS, which it gets from lim), MPLBACKEND and PYTHONPATH.
 */
static int
env_base(struct envv *e, const struct run_limits *lim, int zygote)
{
	static const char wi[] = "VIVARIUM_WARM_IMPORTS=";
	const char	*pp = getenv("PYTHONPATH");
	char		**p;

	for (p = environ; p != NULL && *p != NULL; p++)
		if (!env_is_ours(*p) && !(zygote &&
		    strncmp(*p, wi, sizeof(wi) - 1) == 0) &&
		    env_push(e, *p, 0) == -1)
			return -1;
	if (env_pushf(e, "MPLBACKEND=Agg") == -1)
		return -1;
	if (zygote && lim->warm_imports != NULL &&
	    env_pushf(e, "%s%s", wi, lim->warm_imports) == -1)
		return -1;
	if (lim->pythonpath != NULL && *lim->pythonpath != '\0') {
		if (pp != NULL && *pp != '\0')
			return env_pushf(e, "PYTHONPATH=%s:%s", lim->pythonpath, pp);
		return env_pushf(e, "PYTHONPATH=%s", lim->pythonpath);
	}
	if (pp != NULL && *pp != '\0')
		return env_pushf(e, "PYTHONPATH=%s", pp);
	return 0;
}

/* A run's environment: the base plus the contract's variables. */
static int
env_build(struct envv *e, const struct run_limits *lim,
    const struct run_request *rq, const char *rundir)
{
	if (env_base(e, lim, 0) == -1 ||
	    env_pushf(e, "VIVARIUM_RUN_DIR=%s", rundir) == -1 ||
	    env_pushf(e, "VIVARIUM_STATE_DIR=%s/.vivarium", rq->workspace) == -1 ||
	    env_pushf(e, "VIVARIUM_FRESH=%d", rq->fresh ? 1 : 0) == -1 ||
	    env_pushf(e, "VIVARIUM_PERSIST_NAMESPACE=%d",
	    lim->persist_namespace ? 1 : 0) == -1 ||
	    env_pushf(e, "VIVARIUM_NAMESPACE_MAX_BYTES=%llu",
	    lim->namespace_max_bytes) == -1 ||
	    env_pushf(e, "VIVARIUM_STATE_SUMMARY=%d",
	    lim->state_summary ? 1 : 0) == -1 ||
	    /* What a run printed is there when it is killed (the runner
	     * makes its own streams so; this is for the Pythons it starts). */
	    env_pushf(e, "PYTHONUNBUFFERED=1") == -1)
		return -1;
	return 0;
}

/*
 * Sets sp up to start through the zygote when warm runs are on and it is
 * ready; otherwise sp stays cold.
 */
static void
warm_setup(const struct run_limits *lim, struct spawn *sp,
    struct warm_run *wr)
{
	struct envv	 zenv;

	if (!lim->warm)
		return;
	memset(&zenv, 0, sizeof(zenv));
	if (env_base(&zenv, lim, 1) == 0 &&
	    warm_ready(sp->argv[0], zenv.v, 0) == 0) {
		sp->starter = &warm_starter;
		sp->starter_arg = wr;
	}
	env_free(&zenv);
}

/* ---------------------------------------------------------------- report */

/*
 * The report's "error" as one line of at most errlen - 1 bytes: control
 * characters (a multi-line message, a NUL) become spaces, and a cut falls
 * between characters (the string is UTF-8: jansson checked it).
 */
static void
report_error(json_t *e, char *error, size_t errlen)
{
	const char	*s;
	size_t		 n, i;

	error[0] = '\0';
	if (!json_is_string(e) || errlen == 0)
		return;
	s = json_string_value(e);
	n = json_string_length(e);
	if (n > errlen - 1)
		n = utf8_floor(s, errlen - 1);
	for (i = 0; i < n; i++)
		error[i] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
	error[n] = '\0';
}

/*
 * The report's "figures": [{"name", "by"}], the PNGs the runner saved for
 * plt.show() and figures left open.  Entries of the wrong shape are
 * skipped; at most FIGURES_MAX are kept (more cannot be shown anyway).
 */
/* "by" goes into the text as it is: short printable ASCII only. */
static int
by_ok(const char *s, size_t n)
{
	size_t	 i;

	if (n == 0 || n > FIGURE_BY_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

static void
report_figures(json_t *a, struct run_result *res)
{
	json_t		*f, *name, *by;
	size_t		 i;
	struct run_figure *fig;

	if (!json_is_array(a) || json_array_size(a) == 0)
		return;
	if ((res->figures = calloc(FIGURES_MAX, sizeof(*res->figures))) == NULL)
		return;
	json_array_foreach(a, i, f) {
		if (res->nfigures == FIGURES_MAX)
			break;
		name = json_object_get(f, "name");
		by = json_object_get(f, "by");
		if (!json_is_string(name) || !json_is_string(by) ||
		    json_string_length(name) > PATH_MAX ||
		    !by_ok(json_string_value(by), json_string_length(by)))
			continue;
		fig = &res->figures[res->nfigures];
		if ((fig->name = strdup(json_string_value(name))) == NULL ||
		    (fig->by = strdup(json_string_value(by))) == NULL) {
			free(fig->name);
			fig->name = NULL;
			break;
		}
		res->nfigures++;
	}
}

/*
 * Reads the runner's report.json: never trusted, capped, type-checked.
 * Returns RUN_REPORT_OK with *footer set (owned, or NULL) and res->error
 * filled, or another status with the reason in why.
 */
static int
report_read(const char *rundir, int exit_code, char **footer,
    struct run_result *res, char *why, size_t whylen)
{
	char		 path[PATH_MAX];
	struct buf	 b = BUF_INIT(REPORT_MAX);
	char		 chunk[65536];
	struct stat	 st;
	json_error_t	 jerr;
	json_t		*root = NULL, *v, *x, *f;
	ssize_t		 n;
	int		 fd, rc = RUN_REPORT_MALFORMED;

	*footer = NULL;
	why[0] = '\0';
	snprintf(path, sizeof(path), "%s/report.json", rundir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		snprintf(why, whylen, "%s", strerror(errno));
		return errno == ENOENT ? RUN_REPORT_MISSING : RUN_REPORT_MALFORMED;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		goto done;
	}
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(why, whylen, "%s", strerror(errno));
			goto done;
		}
		if (n == 0)
			break;
		if (buf_append(&b, chunk, (size_t)n) == -1) {
			snprintf(why, whylen, "larger than %u bytes", REPORT_MAX);
			goto done;
		}
	}
	root = json_loadb(buf_str(&b), b.len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		snprintf(why, whylen, "not JSON: %s", jerr.text);
		goto done;
	}
	if (!json_is_object(root)) {
		snprintf(why, whylen, "not a JSON object");
		goto done;
	}
	v = json_object_get(root, "version");
	if (!json_is_integer(v)) {
		snprintf(why, whylen, "'version' is missing or not an integer");
		goto done;
	}
	if (json_integer_value(v) != 1) {
		snprintf(why, whylen, "version %lld, this agent reads version 1",
		    (long long)json_integer_value(v));
		rc = RUN_REPORT_VERSION;
		goto done;
	}
	x = json_object_get(root, "exit_code");
	if (!json_is_integer(x)) {
		snprintf(why, whylen, "'exit_code' is missing or not an integer");
		goto done;
	}
	if (json_integer_value(x) != exit_code)
		log_warnx("report.json says exit code %lld, the process exited "
		    "with %d; using the process's", (long long)json_integer_value(x),
		    exit_code);
	f = json_object_get(root, "footer");
	if (f != NULL && !json_is_null(f) && !json_is_string(f)) {
		snprintf(why, whylen, "'footer' is neither a string nor null");
		goto done;
	}
	if (json_is_string(f) && (*footer = strndup(json_string_value(f),
	    json_string_length(f))) == NULL) {
		snprintf(why, whylen, "out of memory");
		goto done;
	}
	/* Optional: older runners do not write it. */
	report_error(json_object_get(root, "error"), res->error,
	    sizeof(res->error));
	report_figures(json_object_get(root, "figures"), res);
	rc = RUN_REPORT_OK;
done:
	json_decref(root);
	buf_release(&b);
	close(fd);
	return rc;
}

/* ---------------------------------------------------------------- images */

/*
 * Adds "name (size)" to a ", "-separated list of names while there is
 * room, and counts it either way.
 */
static void
names_add(char *list, size_t listlen, size_t *count, const struct ws_file *f)
{
	size_t	 used = strlen(list);
	char	 size[32];

	(*count)++;
	human_size((unsigned long long)f->size, size, sizeof(size));
	if (used + strlen(f->path) + strlen(size) + 6 < listlen)
		snprintf(list + used, listlen - used, "%s%s (%s)",
		    used ? ", " : "", f->path, size);
}

/*
 * The budget of the next image: its share of what is left of the result's,
 * so that one large image cannot starve the ones after it, and never more
 * than the per-image budget.  Unused shares roll over.
 */
static size_t
images_budget(const struct run_limits *lim, size_t used, size_t left)
{
	size_t	 rest, share;

	if (lim->max_image_bytes == 0 && lim->max_result_image_bytes == 0)
		return 0;	/* tests and benchmarks: no budget at all */
	rest = lim->max_result_image_bytes > used ?
	    lim->max_result_image_bytes - used : 0;
	share = left > 0 ? rest / left : rest;
	if (lim->max_image_bytes > 0 && share > lim->max_image_bytes)
		share = lim->max_image_bytes;
	return share;
}

static void
images_collect(const struct run_limits *lim, const struct run_request *rq,
    const struct ws_file *const *changed, size_t nchanged,
    struct run_result *res)
{
	const struct ws_file **ch = NULL;
	struct img_thumb t;
	struct run_image *im;
	char		 err[256];
	ssize_t		 n = 0, i;
	size_t		 tries = 0, max = (size_t)lim->max_images, used = 0;
	size_t		 left, budget, k;
	int		 rc;

	if ((ch = calloc(nchanged + 1, sizeof(*ch))) == NULL)
		return;
	/*
	 * Oldest first (changed is newest first), so that the images come in
	 * the order they were written, which is the order the code printed
	 * about them (the chart helpers' descriptions), and so that past
	 * max_images the first ones are kept: usually the main chart.
	 */
	for (k = nchanged; k-- > 0;) {
		if (ws_is_png(changed[k]->path))
			ch[n++] = changed[k];
		else if (ws_is_image(changed[k]->path))
			names_add(res->picture_names, sizeof(res->picture_names),
			    &res->pictures, changed[k]);
	}
	if (n == 0)
		goto done;
	if ((res->images = calloc(max, sizeof(*res->images))) == NULL)
		goto done;
	for (i = 0; i < n; i++) {
		if (res->nimages >= max || tries >= max + IMAGE_EXTRA_TRIES) {
			names_add(res->skipped_names, sizeof(res->skipped_names),
			    &res->images_skipped, ch[i]);
			continue;
		}
		tries++;
		left = max - res->nimages;
		if ((size_t)(n - i) < left)
			left = (size_t)(n - i);
		budget = images_budget(lim, used, left);
		im = &res->images[res->nimages];
		memset(&t, 0, sizeof(t));
		if (budget > 0 && budget < IMAGE_MIN_BUDGET) {
			/* Nothing worth seeing fits in what is left. */
			rc = 1;
		} else {
			rc = img_fit_file(rq->workspace, ch[i]->path,
			    lim->max_image_side, budget, &t, err, sizeof(err));
			if (rc == -1) {
				run_result_note(res, "%s could not be shown: %s.",
				    ch[i]->path, err);
				continue;
			}
		}
		if ((im->name = strdup(ch[i]->path)) == NULL) {
			img_thumb_release(&t);
			names_add(res->skipped_names, sizeof(res->skipped_names),
			    &res->images_skipped, ch[i]);
			continue;
		}
		im->png = t.png;
		im->png_len = t.len;
		im->width = t.width;
		im->height = t.height;
		im->orig_width = t.orig_width;
		im->orig_height = t.orig_height;
		im->colors = t.colors;
		im->shrunk = t.shrunk;
		im->omitted = rc == 1;
		im->budget = budget;
		if (rc == 0)
			used += t.len;
		res->nimages++;
	}
done:
	free(ch);
}

/*
 * What the run changed, once for all: the PNGs to return and, when the
 * runner wrote a footer, the footer's workspace lines and files_written
 * (a killed run has neither, as it has no footer).
 */
static void
workspace_diff(const struct run_limits *lim, const struct run_request *rq,
    const struct ws_snap *before, struct run_result *res)
{
	struct ws_snap	 after = WS_SNAP_INIT;
	const struct ws_file **ch = NULL;
	struct buf	 f = BUF_INIT(64 * 1024);
	char		 err[256];
	ssize_t		 n;
	size_t		 i, nf;

	if (ws_snap_take(&after, rq->workspace, err, sizeof(err)) == -1) {
		log_warnx("workspace: %s", err);
		return;
	}
	if (after.truncated)
		log_warnx("workspace: %s: the walk stopped at its bounds",
		    rq->workspace);
	if ((n = ws_snap_changed(before, &after, &ch)) == -1)
		goto done;
	if (lim->max_images > 0)
		images_collect(lim, rq, ch, (size_t)n, res);
	if (res->footer == NULL)
		goto done;	/* no summary, or the run ended before it */
	if (n > 0) {
		nf = (size_t)n < FILES_WRITTEN_MAX ? (size_t)n : FILES_WRITTEN_MAX;
		if ((res->files = calloc(nf, sizeof(*res->files))) == NULL)
			goto done;
		for (i = 0; i < nf; i++) {
			if ((res->files[i] = strdup(ch[i]->path)) == NULL)
				goto done;
			res->nfiles++;
		}
	}
	if (buf_appends(&f, res->footer) == -1 || buf_appends(&f, "\n") == -1 ||
	    ws_footer(&f, rq->workspace, &after,
	    (const struct ws_file *const *)ch, (size_t)n) == -1)
		goto done;
	/* The lines end in newlines; the runner's footer does not. */
	if (f.len > 0 && f.data[f.len - 1] == '\n')
		f.data[--f.len] = '\0';
	free(res->footer);
	res->footer = buf_detach(&f, NULL);
done:
	buf_release(&f);
	free(ch);
	ws_snap_release(&after);
}

/* ---------------------------------------------------------------- the run */

/*
 * Turns a stream's kept bytes into the result's text: all of it when it
 * fits in limit characters, else its head and its tail (*head: the bytes
 * of *out before the cut).
 */
static int
stream_text(struct spawn_stream *s, const struct utf8_count *cnt,
    size_t limit, char **out, size_t *outlen, size_t *head,
    unsigned long long *cut)
{
	struct buf	 b = BUF_INIT((size_t)-1 / 4);
	const unsigned char *p;
	char		*tail;
	size_t		 n, hlimit = limit / RUN_HEAD_SHARE, tlen;
	long long	 hchars;

	*head = 0;
	p = spawn_stream_take(s, &n);
	if (cnt->chars <= limit || hlimit == 0 || cnt->head == NULL)
		return tail_text(p, n, s->total > n, cnt->chars, limit, out,
		    outlen, cut);
	if ((hchars = text_valid(&b, cnt->head, cnt->head_len, hlimit)) == -1 ||
	    tail_text(p, n, s->total > n, cnt->chars - (size_t)hchars,
	    limit - hlimit, &tail, &tlen, cut) == -1)
		goto fail;
	*head = b.len;
	if (buf_append(&b, tail, tlen) == -1) {
		free(tail);
		goto fail;
	}
	free(tail);
	*out = buf_detach(&b, outlen);
	return *out != NULL ? 0 : -1;
fail:
	buf_release(&b);
	*out = NULL;
	*outlen = 0;
	return -1;
}

int
run_python(const struct run_limits *lim, const struct run_request *rq,
    struct run_result *res, char *errbuf, size_t errlen)
{
	char		 rundir[PATH_MAX], why[256], serr[512];
	char		*argv[5];
	struct envv	 env;
	struct spawn	 sp = SPAWN_INIT;
	struct warm_run	 wr = WARM_RUN_INIT;
	struct utf8_count cout, cerr;
	struct ws_snap	 before = WS_SNAP_INIT;
	size_t		 cap;
	int		 rc = -1, walk, rs;

	run_result_init(res);
	memset(&env, 0, sizeof(env));
	memset(&cout, 0, sizeof(cout));
	memset(&cerr, 0, sizeof(cerr));
	rundir[0] = '\0';
	if (errlen > 0)
		errbuf[0] = '\0';

	walk = lim->max_images > 0 || lim->state_summary;
	if (walk && ws_snap_take(&before, rq->workspace, serr,
	    sizeof(serr)) == -1) {
		snprintf(errbuf, errlen, "workspace: %s", serr);
		goto done;
	}
	if (rundir_make(rundir, sizeof(rundir), rq->code, rq->code_len,
	    errbuf, errlen) == -1)
		goto done;
	if (env_build(&env, lim, rq, rundir) == -1) {
		snprintf(errbuf, errlen, "out of memory");
		goto done;
	}

	argv[0] = (char *)(uintptr_t)(lim->python != NULL && *lim->python ?
	    lim->python : "python3");
	argv[1] = (char *)(uintptr_t)"-P";
	argv[2] = (char *)(uintptr_t)"-m";
	argv[3] = (char *)(uintptr_t)"vivarium._runner";
	argv[4] = NULL;
	sp.argv = argv;
	sp.envp = env.v;
	sp.cwd = rq->workspace;
	sp.timeout = rq->timeout_s > 0 ? (double)rq->timeout_s : 0;
	/* A character is at most 4 bytes; keep enough for `limit` of them. */
	cap = lim->output_limit > (SIZE_MAX - 8) / 4 ? SIZE_MAX - 8 :
	    lim->output_limit * 4 + 4;
	sp.out.cap = sp.err.cap = cap;
	sp.out.observe = sp.err.observe = utf8_count_feed;
	sp.out.observe_arg = &cout;
	sp.err.observe_arg = &cerr;
	cout.rq = cerr.rq = rq;
	cout.stream = 1;
	cerr.stream = 2;
	cout.head_cap = cerr.head_cap = lim->output_limit / RUN_HEAD_SHARE *
	    4 + 4;
	if ((cout.head = malloc(cout.head_cap)) == NULL ||
	    (cerr.head = malloc(cerr.head_cap)) == NULL) {
		snprintf(errbuf, errlen, "out of memory");
		goto done;
	}
	sp.stop_fd = rq->stop_fd;

	warm_setup(lim, &sp, &wr);
	rs = spawn_run(&sp, serr, sizeof(serr));
	if (rs == -1 && sp.starter != NULL && wr.failed) {
		/* The zygote's fault, never the user's: run cold instead. */
		warm_broken(&wr, serr);
		sp.starter = NULL;
		sp.starter_arg = NULL;
		rs = spawn_run(&sp, serr, sizeof(serr));
	}
	if (rs == -1) {
		if (sp.exec_errno == 0 && sp.pid == -1) {
			/* pipe or fork failed: the agent's problem, not the code's */
			snprintf(errbuf, errlen, "%s", serr);
			goto done;
		}
		res->spawn_failed = 1;
		if (sp.chdir_failed)
			run_result_note(res, "Cannot enter the workspace: %s.", serr);
		else
			run_result_note(res, "%s. VIVARIUM_PYTHON names the interpreter "
			    "(\"%s\" now%s).", serr, argv[0],
			    strchr(argv[0], '/') == NULL ?
			    ", looked up in PATH" : "");
		rc = 0;
		goto done;
	}
	res->duration = sp.duration;
	res->timed_out = sp.timed_out;
	res->stopped = sp.stopped;
	res->signaled = sp.signaled;
	res->signal = sp.signal;
	if (sp.exited)
		res->exit_code = sp.exit_code;

	if (stream_text(&sp.out, &cout, lim->output_limit, &res->out,
	    &res->out_len, &res->out_head, &res->out_cut) == -1 ||
	    stream_text(&sp.err, &cerr, lim->output_limit, &res->err,
	    &res->err_len, &res->err_head, &res->err_cut) == -1) {
		snprintf(errbuf, errlen, "out of memory");
		goto done;
	}

	if (sp.timed_out || sp.stopped) {
		/* Runs write unbuffered: what they printed is all here. */
		res->report = RUN_REPORT_MISSING;
	} else if (sp.signaled) {
		res->report = RUN_REPORT_MISSING;
		/* Which signal it was is the error line's (tools.c). */
		if (sp.signal == SIGKILL)
			run_result_note(res, "The agent did not send that SIGKILL; it "
			    "usually comes from the kernel's out-of-memory "
			    "killer, meaning the code needed more memory than "
			    "the sandbox allows. Work on less data at a time.");
	} else {
		rs = report_read(rundir, sp.exit_code, &res->footer, res, why,
		    sizeof(why));
		res->report = rs;
		if (rs == RUN_REPORT_MISSING)
			run_result_note(res, "No state summary: the process ended "
			    "(exit code %d) before the runner wrote its report, "
			    "for example through os._exit() or because the "
			    "runner could not start (see stderr).", sp.exit_code);
		else if (rs == RUN_REPORT_MALFORMED) {
			log_warnx("report.json: %s", why);
			run_result_note(res, "No state summary: the runner's report "
			    "was unusable (%s).", why);
		} else if (rs == RUN_REPORT_VERSION)
			log_warnx("report.json: %s; ignored", why);
	}
	if (sp.lingered)
		run_result_note(res, "A process started by the code left the run's "
		    "process group and kept its output open; what it prints "
		    "after the run is not shown.");

	if (walk)
		workspace_diff(lim, rq, &before, res);
	rc = 0;
done:
	free(cout.head);
	free(cerr.head);
	spawn_release(&sp);
	env_free(&env);
	ws_snap_release(&before);
	rundir_remove(rundir);
	return rc;
}

int
run_warm_wait(const struct run_limits *lim, double seconds)
{
	struct envv	 zenv;
	int		 rc = -1;

	memset(&zenv, 0, sizeof(zenv));
	if (lim->warm_workspace != NULL)
		warm_hint(lim->warm_workspace);
	if (env_base(&zenv, lim, 1) == 0)
		rc = warm_ready(lim->python != NULL && *lim->python ?
		    lim->python : "python3", zenv.v, seconds);
	env_free(&zenv);
	return rc;
}
