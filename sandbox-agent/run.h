/*
 * run.h: one run_python call, from code to result (see
 * docs/runner-contract.md for the Python side).  The MCP layer (tools.c)
 * turns a run_result into tool content; nothing here knows about JSON-RPC.
 */
#ifndef VIVARIUM_RUN_H
#define VIVARIUM_RUN_H

#include <stddef.h>

/* The agent's settings a run needs; filled from struct agent_config. */
struct run_limits {
	const char	*python;		/* VIVARIUM_PYTHON */
	const char	*pythonpath;		/* prepended to PYTHONPATH, or NULL */
	size_t		 output_limit;		/* characters kept per stream (the
						 * head and the tail, RUN_HEAD_SHARE) */
	int		 max_images;		/* VIVARIUM_MAX_IMAGES, 0 disables */
	int		 max_image_side;	/* VIVARIUM_MAX_IMAGE_SIDE, px */
	size_t		 max_image_bytes;	/* VIVARIUM_MAX_IMAGE_BYTES */
	size_t		 max_result_image_bytes; /* VIVARIUM_MAX_RESULT_IMAGE_BYTES */
	int		 persist_namespace;	/* passed to the runner */
	unsigned long long namespace_max_bytes;
	int		 state_summary;
	int		 warm;			/* VIVARIUM_WARM: fork runs from a
						 * warm interpreter (warm.h) */
	const char	*warm_imports;		/* VIVARIUM_WARM_IMPORTS, or NULL */
	const char	*warm_workspace;	/* where the first run will be, for
						 * run_warm_wait's zygote; or NULL */
};

struct run_request {
	const char	*code;			/* borrowed; valid UTF-8 without NUL */
	size_t		 code_len;
	long		 timeout_s;		/* already clamped to VIVARIUM_MAX_TIMEOUT */
	int		 fresh;
	const char	*workspace;		/* borrowed; absolute, exists */
	/* optional: polls readable when the run must stop (spawn.h's
	 * stop_fd); -1 for none */
	int		 stop_fd;
	/* optional: sees the output as it comes (stream 1 or 2), from the
	 * thread that runs; NULL for none */
	void		(*observe)(void *arg, int stream, const unsigned char *,
			    size_t);
	void		*observe_arg;
};

/*
 * One new or changed PNG: a copy sized for the model, or (png NULL,
 * omitted) the reason it was left out to keep the result in its budget.
 */
struct run_image {
	char		*name;			/* owned; path relative to the workspace */
	unsigned char	*png;			/* owned; NULL when omitted */
	size_t		 png_len;		/* when omitted: the smallest try */
	int		 width, height;		/* as returned (or last tried) */
	int		 orig_width, orig_height;
	int		 colors;		/* palette size; 0: truecolour */
	int		 shrunk;		/* made smaller than max_side to fit */
	int		 omitted;		/* no copy fit its budget */
	size_t		 budget;		/* the bytes it was allowed */
};

/* A PNG the runner saved for a figure (report.json's "figures"). */
struct run_figure {
	char		*name;			/* owned; relative to the workspace */
	char		*by;			/* owned; "plt.show()", "left open" */
};

/* What became of the runner's report.json (docs/runner-contract.md). */
enum run_report {
	RUN_REPORT_MISSING,	/* none: killed, timed out, os._exit(), not started */
	RUN_REPORT_OK,		/* read and checked; footer is its footer */
	RUN_REPORT_MALFORMED,	/* unreadable, over 1 MiB or wrong types: ignored */
	RUN_REPORT_VERSION,	/* another version: ignored (and logged) */
};

struct run_result {
	int		 exit_code;		/* valid when !signaled && !timed_out */
	int		 signaled;		/* killed by a signal other than ours */
	int		 signal;
	int		 timed_out;
	int		 stopped;		/* killed because stop_fd fired */
	int		 spawn_failed;		/* the interpreter could not start */
	double		 duration;		/* seconds, monotonic */
	char		*out;			/* owned; stdout, NUL-terminated */
	size_t		 out_len;
	unsigned long long out_cut;		/* characters dropped ... */
	size_t		 out_head;		/* ... after this many bytes of out
						 * (0: from the front) */
						/* (out/err: valid UTF-8, bad bytes as
						 * U+FFFD, at most output_limit code
						 * points; may hold NUL: use the length) */
	char		*err;			/* owned; stderr, as out */
	size_t		 err_len;
	unsigned long long err_cut;
	size_t		 err_head;
	char		*footer;		/* owned; report.json's, and the
						 * workspace lines; or NULL */
	char		**files;		/* owned; workspace paths new or
						 * changed, newest first (wsdiff.h),
						 * when there is a footer */
	size_t		 nfiles;
	struct run_image *images;		/* owned; at most max_images, in
						 * the order they were written */
	size_t		 nimages;		/* omitted ones included */
	size_t		 images_skipped;	/* changed PNGs over max_images */
	char		 skipped_names[300];	/* the first of them, "name (size)",
						 * ", "-separated */
	size_t		 pictures;		/* new or changed images that are not
						 * PNG (JPEG, SVG...): not returned */
	char		 picture_names[300];	/* as skipped_names */
	struct run_figure *figures;		/* owned; the runner's figure PNGs */
	size_t		 nfigures;
	char		 note[512];		/* a plain-words problem to report, or "" */
	char		 error[256];		/* report.json's "error": what the code
						 * ended with ("KeyError: 'x'"), or "" */
	int		 report;		/* enum run_report */
};

/*
 * Runs one call.  Returns 0 when the process ran (whatever its exit) and
 * also when the interpreter could not be started (spawn_failed, with the
 * reason in note); -1 when the agent could not set the run up (temporary
 * directory, workspace unreadable, fork failed, out of memory), with the
 * reason in errbuf.  res is always initialised and must be released.
 *
 * note holds sentences that add to what the flags say: why a SIGKILL
 * probably came from the OOM killer, that a killed run loses buffered
 * output, why there is no footer, which PNGs could not be shown, that a
 * process escaped the group.  It is cut at a character boundary.
 */
int	run_python(const struct run_limits *, const struct run_request *,
	    struct run_result *res, char *errbuf, size_t errlen);
void	run_result_init(struct run_result *);	/* empty; exit_code -1 */
void	run_result_release(struct run_result *);	/* frees; leaves it empty */
/* Adds a sentence to res->note, space-separated, cut at a character
 * boundary when the note is full. */
void	run_result_note(struct run_result *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/*
 * The whole CallToolResult of a run stays under RESULT_MAX_BYTES as JSON,
 * whatever the code prints or draws (LibreChat refuses a response over
 * 16 MiB and loses our text with it): images are capped by
 * VIVARIUM_MAX_RESULT_IMAGE_BYTES (at most 4 MiB), fixed text by
 * RESULT_TEXT_FIXED, and stdout and stderr share what is left.
 */
#define RESULT_MAX_BYTES	(8u << 20)
#define RESULT_TEXT_FIXED	(256u << 10)
#define RESULT_FOOTER_MAX	(128u << 10)	/* as JSON */
#define RUN_NAME_MAX		300	/* bytes of a file name in the text */
/* A stream longer than output_limit keeps its first 1/RUN_HEAD_SHARE (a
 * program's summary line comes first) and its tail (the last result, the
 * traceback), with the cut said between them. */
#define RUN_HEAD_SHARE		4

struct buf;
/* Bytes s takes as a JSON string's contents (counted high). */
size_t	run_text_json_len(const char *s, size_t n);
/* Drops the front of *text until the rest takes at most max_json bytes as
 * JSON, at a character boundary; adds the characters dropped to *cut. */
void	run_text_fit_tail(const char **text, size_t *len,
	    unsigned long long *cut, size_t max_json);
/* The length of the longest head of s that takes at most max_json. */
size_t	run_text_fit_head(const char *s, size_t n, size_t max_json);
/* "error: KeyError: 'x' (exit code 1)\n" for a run that exited non-zero;
 * nothing otherwise (timeouts, signals, failed starts have their own). */
void	run_result_error_line(struct buf *, const struct run_result *);
/* One line per image: shown (size, bytes, shrunk to fit, saved for a
 * figure), left out; the PNGs over max_images and the images that are not
 * PNG, by name and size. */
void	run_result_images_text(struct buf *, const struct run_result *,
	    long max_images);

/*
 * With lim->warm: starts the zygote if needed and waits at most `seconds`
 * until it is ready (runs do not wait: they run cold until then).  0 when
 * ready.  For tests and benchmarks.
 */
int	run_warm_wait(const struct run_limits *lim, double seconds);

#endif
