/*
 * result.c: the life of a struct run_result (run.h), apart from run.c so
 * that whoever adds to a result (the tools after a sweep, tests with a
 * scripted run_python) does it the same way.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "run.h"
#include "text.h"

#include "banned.h"

void
run_result_init(struct run_result *res)
{
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	res->report = RUN_REPORT_MISSING;
}

void
run_result_release(struct run_result *res)
{
	size_t	 i;

	free(res->out);
	free(res->err);
	free(res->footer);
	for (i = 0; i < res->nfiles; i++)
		free(res->files[i]);
	free(res->files);
	for (i = 0; i < res->nimages; i++) {
		free(res->images[i].name);
		free(res->images[i].png);
	}
	free(res->images);
	for (i = 0; i < res->nfigures; i++) {
		free(res->figures[i].name);
		free(res->figures[i].by);
	}
	free(res->figures);
	run_result_init(res);
}

/* Appends a sentence to res->note, cutting at a character boundary. */
void
run_result_note(struct run_result *res, const char *fmt, ...)
{
	char		 line[512];
	size_t		 used = strlen(res->note), room, n;
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (used > 0 && used + 1 < sizeof(res->note))
		res->note[used++] = ' ';
	room = sizeof(res->note) - 1 - used;
	n = strlen(line);
	if (n > room)
		n = utf8_floor(line, room);
	memcpy(res->note + used, line, n);
	res->note[used + n] = '\0';
}

/* ---------------------------------------------------------------- wording */

/* Bytes c takes inside a JSON string (jansson's escapes, counted high). */
static size_t
json_char_len(unsigned char c)
{
	if (c == '"' || c == '\\')
		return 2;
	if (c < 0x20)
		return 6;
	return 1;
}

size_t
run_text_json_len(const char *s, size_t n)
{
	size_t	 i, j = 0;

	for (i = 0; i < n; i++)
		j += json_char_len((unsigned char)s[i]);
	return j;
}

void
run_text_fit_tail(const char **text, size_t *len, unsigned long long *cut,
    size_t max_json)
{
	const char	*s = *text;
	size_t		 n = *len, j = 0, start = n;

	/* Walk back from the end while the tail still fits. */
	while (start > 0) {
		j += json_char_len((unsigned char)s[start - 1]);
		if (j > max_json)
			break;
		start--;
	}
	if (start == 0)
		return;
	/* Start at a character, not inside one. */
	while (start < n && ((unsigned char)s[start] & 0xc0) == 0x80)
		start++;
	*cut += utf8_chars(s, start);
	*text = s + start;
	*len = n - start;
}

size_t
run_text_fit_head(const char *s, size_t n, size_t max_json)
{
	size_t	 i, j = 0;

	for (i = 0; i < n; i++) {
		j += json_char_len((unsigned char)s[i]);
		if (j > max_json)
			break;
	}
	return i < n ? utf8_floor(s, i) : i;
}

/*
 * Appends a workspace path for the text, at most RUN_NAME_MAX bytes (an
 * ellipsis past that).  A name that is not UTF-8, or holds a control
 * character, is escaped (text_escape); returns 1 then, so the line can
 * carry NAME_ESCAPED_MARK.
 */
static int
append_name(struct buf *b, const char *name)
{
	size_t	 n = strlen(name), cut = n;
	int	 r;

	if (cut > RUN_NAME_MAX)
		cut = utf8_floor(name, RUN_NAME_MAX);
	r = text_escape(b, name, cut, ESCAPE_CONTROL);
	if (cut < n)
		buf_appends(b, "\xe2\x80\xa6");
	return r == 1;
}

/* "14.9 KB": human_size, as list_files and the footer say sizes. */
static void
append_size(struct buf *b, size_t n)
{
	char	 s[32];

	human_size(n, s, sizeof(s));
	buf_appends(b, s);
}

void
run_result_error_line(struct buf *b, const struct run_result *res)
{
	if (res->spawn_failed || res->timed_out || res->signaled ||
	    res->exit_code == 0)
		return;		/* those say so in their own first line */
	buf_appends(b, "error: ");
	if (res->error[0] != '\0')
		buf_appendf(b, "%s (exit code %d)\n", res->error, res->exit_code);
	else
		buf_appendf(b, "exit code %d\n", res->exit_code);
}

static size_t
names_listed(const char *s)
{
	size_t	 n = *s != '\0';

	while ((s = strstr(s, ", ")) != NULL) {
		n++;
		s += 2;
	}
	return n;
}

/* A list of "name (size)" items (names_add in run.c), and "…" when it
 * names fewer than count. */
static void
names_line(struct buf *b, const char *names, size_t count)
{
	if (append_name(b, names))
		buf_appends(b, " " NAME_ESCAPED_MARK);
	if (count > names_listed(names))
		buf_appends(b, ", …");
}

/* What the runner saved the PNG name for ("plt.show()"), or NULL. */
static const char *
figure_by(const struct run_result *res, const char *name)
{
	size_t	 i;

	for (i = 0; i < res->nfigures; i++)
		if (strcmp(res->figures[i].name, name) == 0)
			return res->figures[i].by;
	return NULL;
}

void
run_result_images_text(struct buf *b, const struct run_result *res,
    long max_images)
{
	const char *by;
	size_t	 i, shown = 0, k = 0;
	int	 escaped;

	for (i = 0; i < res->nimages; i++)
		if (!res->images[i].omitted)
			shown++;
	for (i = 0; i < res->nimages; i++) {
		const struct run_image *im = &res->images[i];

		if (im->omitted) {
			buf_appends(b, "image left out: ");
			escaped = append_name(b, im->name);
			if (im->width > 0) {
				buf_appendf(b, " (%dx%d): still ", im->orig_width,
				    im->orig_height);
				append_size(b, im->png_len);
				buf_appendf(b, " at %dx%d, over the ", im->width,
				    im->height);
			} else
				buf_appends(b, ": only ");
			append_size(b, im->budget);
			buf_appends(b, im->width > 0 ? " it could have" :
			    " of the result's image budget was left");
			buf_appends(b, "; the file is in the workspace at full "
			    "size.");
			buf_appends(b, escaped ? " " NAME_ESCAPED_MARK "\n" : "\n");
			continue;
		}
		if (shown > 1)
			buf_appendf(b, "image %zu of %zu: ", ++k, shown);
		else
			buf_appends(b, "image: ");
		escaped = append_name(b, im->name);
		buf_appendf(b, " (%dx%d", im->orig_width, im->orig_height);
		if (im->shrunk) {
			buf_appendf(b, ", shrunk to %dx%d to fit ", im->width,
			    im->height);
			append_size(b, im->budget);
		} else if (im->width != im->orig_width ||
		    im->height != im->orig_height)
			buf_appendf(b, ", shown at %dx%d", im->width, im->height);
		buf_appends(b, ", ");
		append_size(b, im->png_len);
		by = figure_by(res, im->name);
		if (by != NULL && strcmp(by, "left open") == 0)
			buf_appends(b, "; a figure left open, saved by vivarium");
		else if (by != NULL && strcmp(by, "last line") == 0)
			buf_appends(b, "; the figure on the last line, saved by "
			    "vivarium");
		else if (by != NULL)
			buf_appendf(b, "; saved by vivarium for %.64s", by);
		buf_appends(b, escaped ? ") " NAME_ESCAPED_MARK "\n" : ")\n");
	}
	if (shown > 1)
		buf_appendf(b, "The %zu images are attached after this text in "
		    "that order.\n", shown);
	if (res->images_skipped > 0) {
		buf_appendf(b, "%zu more new or changed PNG file(s) not shown "
		    "(at most %ld images per call): ", res->images_skipped,
		    max_images);
		names_line(b, res->skipped_names, res->images_skipped);
		buf_appends(b, "; they are in the workspace: show one in a "
		    "later call, or share_file(path) gives the user a link.\n");
	}
	if (res->pictures > 0) {
		buf_appendf(b, "not shown, only PNG files come back as images: ");
		names_line(b, res->picture_names, res->pictures);
		buf_appends(b, "; save charts as .png to see them, and "
		    "share_file(path) gives the user a link.\n");
	}
}
