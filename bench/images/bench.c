/*
 * bench/images/bench.c: what each returned PNG costs before and after the
 * byte budgets, on the same files in one run.  "before" is the thumbnail
 * as it was (averaged to max_side, truecolour); "after" is what the agent
 * returns now (palette when faithful, smaller until it fits max_bytes).
 *
 * usage: bench DIR MAX_SIDE MAX_BYTES FILE...   (files relative to DIR)
 * VIVARIUM_BENCH_SHORT=1 (the short mode make test runs): one round each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "images.h"

static int	rounds = 3;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The fastest of `rounds` runs, in ms; t keeps the last result. */
static double
measure(const char *dir, const char *file, int side, size_t max_bytes,
    struct img_thumb *t, int *rc)
{
	char	 err[256];
	double	 best = 0, t0, dt;
	int	 i;

	for (i = 0; i < rounds; i++) {
		if (i > 0)
			img_thumb_release(t);
		t0 = now();
		*rc = img_fit_file(dir, file, side, max_bytes, t, err, sizeof(err));
		dt = (now() - t0) * 1000;
		if (*rc == -1) {
			fprintf(stderr, "%s: %s\n", file, err);
			exit(1);
		}
		if (i == 0 || dt < best)
			best = dt;
	}
	return best;
}

int
main(int argc, char **argv)
{
	struct img_thumb before, after;
	const char	*s;
	double		 tb, ta;
	size_t		 max_bytes, sum_b = 0, sum_a = 0;
	int		 i, side, rb, ra;

	if (argc < 5) {
		fprintf(stderr, "usage: bench DIR MAX_SIDE MAX_BYTES FILE...\n");
		return 2;
	}
	if ((s = getenv("VIVARIUM_BENCH_SHORT")) != NULL && strcmp(s, "1") == 0) {
		rounds = 1;
		printf("SHORT mode: one round, the figures only show that it "
		    "runs\n");
	}
	side = atoi(argv[2]);
	max_bytes = (size_t)strtoull(argv[3], NULL, 10);
	printf("%-16s %11s %11s | %-9s %7s %6s | %-9s %7s %6s %s\n", "figure",
	    "source", "px", "before", "bytes", "ms", "after", "bytes", "ms",
	    "how");
	for (i = 4; i < argc; i++) {
		char	 src[32], szb[24], sza[24];

		tb = measure(argv[1], argv[i], side, 0, &before, &rb);
		ta = measure(argv[1], argv[i], side, max_bytes, &after, &ra);
		snprintf(src, sizeof(src), "%dx%d", before.orig_width,
		    before.orig_height);
		snprintf(szb, sizeof(szb), "%dx%d", before.width, before.height);
		snprintf(sza, sizeof(sza), "%dx%d", after.width, after.height);
		printf("%-16s %11s %11s | %-9s %7zu %6.1f | %-9s %7zu %6.1f %s%s\n",
		    argv[i], "", src, szb, before.len, tb, sza, after.len, ta,
		    ra == 1 ? "left out (over budget)" : after.colors > 0 ?
		    "palette" : "truecolour", after.shrunk ? ", shrunk" : "");
		sum_b += before.len;
		sum_a += ra == 0 ? after.len : 0;
		img_thumb_release(&before);
		img_thumb_release(&after);
	}
	printf("total returned: before %zu bytes, after %zu bytes (budget %zu "
	    "per image)\n", sum_b, sum_a, max_bytes);
	return 0;
}
