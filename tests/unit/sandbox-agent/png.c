/*
 * Unit tests for sandbox-agent/images.c, the thumbnails: every colour
 * type, bit depth and interlace of the fixtures in tests/data/png (made by
 * gen.py there), exact averages, hostile files.  Which files count as the
 * run's output is tests/unit/sandbox-agent/wsdiff.c.
 */
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <png.h>

#include "../../../sandbox-agent/images.c"

#define FIXTURES	"tests/data/png"

static char	 ws[] = "/tmp/vivarium-png-test-XXXXXX";

static int
setup(void **state)
{
	struct stat st;

	if (stat(FIXTURES "/gen.py", &st) == -1) {
		fprintf(stderr, "run from the top of the tree (%s missing)\n",
		    FIXTURES);
		return -1;
	}
	return mkdtemp(ws) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char	 cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ws);
	return system(cmd) == 0 ? 0 : -1;
}

static void
mkd(const char *rel)
{
	char	 path[512];

	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

/* ---------------------------------------------------------------- thumbs */

/* Decodes a PNG from memory to RGBA; returns the pixels (free them). */
static unsigned char *
decode(const unsigned char *p, size_t n, int *w, int *h, int *alpha)
{
	png_image	 im;
	unsigned char	*px;

	memset(&im, 0, sizeof(im));
	im.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&im, p, n))
		return NULL;
	*alpha = (im.format & PNG_FORMAT_FLAG_ALPHA) != 0;
	im.format = PNG_FORMAT_RGBA;
	px = malloc(PNG_IMAGE_SIZE(im));
	if (px == NULL || !png_image_finish_read(&im, NULL, px, 0, NULL)) {
		free(px);
		png_image_free(&im);
		return NULL;
	}
	*w = (int)im.width;
	*h = (int)im.height;
	return px;
}

static void
expect_size(int ow, int oh, int max, int *w, int *h)
{
	if (ow <= max && oh <= max) {
		*w = ow;
		*h = oh;
	} else if (ow >= oh) {
		*w = max;
		*h = (oh * max + ow / 2) / ow;
	} else {
		*h = max;
		*w = (ow * max + oh / 2) / oh;
	}
	if (*w < 1)
		*w = 1;
	if (*h < 1)
		*h = 1;
}

static const struct {
	const char	*name;
	int		 w, h;
} fixtures[] = {
	{ "gray1.png", 64, 48 },
	{ "gray2.png", 33, 17 },
	{ "gray8.png", 300, 200 },
	{ "gray8_trns.png", 120, 80 },
	{ "gray16_interlaced.png", 257, 131 },
	{ "gray_alpha8.png", 150, 100 },
	{ "rgb8.png", 320, 240 },
	{ "rgb8_interlaced.png", 203, 97 },
	{ "rgb16.png", 160, 120 },
	{ "rgba8.png", 240, 180 },
	{ "rgba16_interlaced.png", 130, 190 },
	{ "palette4_trns.png", 90, 60 },
	{ "palette8_interlaced.png", 211, 77 },
	{ "tall.png", 50, 2000 },
	{ "solid.png", 400, 300 },
	{ "checker.png", 200, 200 },
	{ "halfalpha.png", 200, 100 },
};

static void
test_thumb_every_fixture(void **state)
{
	static const int sides[] = { 100, 64, 1280, 1 };
	struct img_thumb t;
	unsigned char	*px;
	char		 err[256];
	size_t		 i, k;
	int		 w, h, ew, eh, alpha;

	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		for (k = 0; k < sizeof(sides) / sizeof(sides[0]); k++) {
			if (img_thumb_file(FIXTURES, fixtures[i].name, sides[k],
			    &t, err, sizeof(err)) != 0)
				fail_msg("%s: %s", fixtures[i].name, err);
			expect_size(fixtures[i].w, fixtures[i].h, sides[k],
			    &ew, &eh);
			assert_int_equal(t.orig_width, fixtures[i].w);
			assert_int_equal(t.orig_height, fixtures[i].h);
			assert_int_equal(t.width, ew);
			assert_int_equal(t.height, eh);
			px = decode(t.png, t.len, &w, &h, &alpha);
			if (px == NULL)
				fail_msg("%s: the thumbnail does not decode",
				    fixtures[i].name);
			assert_int_equal(w, ew);
			assert_int_equal(h, eh);
			free(px);
			img_thumb_release(&t);
		}
	}
}

/* Unscaled, the pixels are the source's, normalised to 8-bit RGBA. */
static void
test_thumb_exact_pixels(void **state)
{
	struct img_thumb t;
	unsigned char	*px, *p;
	char		 err[256];
	int		 w, h, alpha, x;

	assert_int_equal(img_thumb_file(FIXTURES, "gray8.png", 1280, &t, err,
	    sizeof(err)), 0);
	px = decode(t.png, t.len, &w, &h, &alpha);
	assert_non_null(px);
	assert_false(alpha);	/* opaque images are sent as RGB */
	for (x = 0; x < 36; x++) {
		p = px + ((size_t)3 * w + x) * 4;
		assert_int_equal(p[0], (x * 7) % 256);
		assert_int_equal(p[1], p[0]);
		assert_int_equal(p[2], p[0]);
		assert_int_equal(p[3], 255);
	}
	free(px);
	img_thumb_release(&t);

	/* 16-bit samples v*257 come back as v. */
	assert_int_equal(img_thumb_file(FIXTURES, "rgb16.png", 1280, &t, err,
	    sizeof(err)), 0);
	px = decode(t.png, t.len, &w, &h, &alpha);
	assert_non_null(px);
	p = px + ((size_t)2 * w + 5) * 4;
	assert_int_equal(p[0], 35);
	assert_int_equal(p[1], 10);
	assert_int_equal(p[2], 21);
	free(px);
	img_thumb_release(&t);

	/* Palette entry 0 is transparent (tRNS), entry 1 half. */
	assert_int_equal(img_thumb_file(FIXTURES, "palette4_trns.png", 1280,
	    &t, err, sizeof(err)), 0);
	px = decode(t.png, t.len, &w, &h, &alpha);
	assert_non_null(px);
	assert_true(alpha);
	assert_int_equal(px[3], 0);			/* (0,0): index 0 */
	assert_int_equal(px[3 * 4 + 3], 128);		/* (3,0): index 1 */
	free(px);
	img_thumb_release(&t);
}

static void
test_thumb_averages(void **state)
{
	struct img_thumb t;
	unsigned char	*px, *p;
	char		 err[256];
	int		 w, h, alpha, i, x, y;

	assert_int_equal(img_thumb_file(FIXTURES, "solid.png", 100, &t, err,
	    sizeof(err)), 0);
	px = decode(t.png, t.len, &w, &h, &alpha);
	assert_non_null(px);
	assert_int_equal(w, 100);
	assert_int_equal(h, 75);
	for (i = 0; i < w * h; i++) {
		p = px + (size_t)i * 4;
		if (p[0] != 200 || p[1] != 100 || p[2] != 50 || p[3] != 255)
			fail_msg("solid: pixel %d is %d,%d,%d,%d", i, p[0],
			    p[1], p[2], p[3]);
	}
	free(px);
	img_thumb_release(&t);

	/* A 1-pixel checkerboard halved: every output pixel is mid grey. */
	assert_int_equal(img_thumb_file(FIXTURES, "checker.png", 100, &t, err,
	    sizeof(err)), 0);
	px = decode(t.png, t.len, &w, &h, &alpha);
	assert_non_null(px);
	for (i = 0; i < w * h; i++)
		if (px[i * 4] < 127 || px[i * 4] > 128)
			fail_msg("checker: pixel %d is %d", i, px[i * 4]);
	free(px);
	img_thumb_release(&t);

	/* Scaled by 200/67: each output pixel covers about 3x3 source
	 * pixels, 4 or 5 of them white, so 4/9 to 5/9 of full scale. */
	assert_int_equal(img_thumb_file(FIXTURES, "checker.png", 67, &t, err,
	    sizeof(err)), 0);
	px = decode(t.png, t.len, &w, &h, &alpha);
	assert_non_null(px);
	for (i = 0; i < w * h; i++)
		if (px[i * 4] < 112 || px[i * 4] > 143)
			fail_msg("checker/3: pixel %d is %d", i, px[i * 4]);
	free(px);
	img_thumb_release(&t);

	/* Transparent green beside opaque blue: no green leaks. */
	assert_int_equal(img_thumb_file(FIXTURES, "halfalpha.png", 64, &t, err,
	    sizeof(err)), 0);
	px = decode(t.png, t.len, &w, &h, &alpha);
	assert_non_null(px);
	assert_true(alpha);
	assert_int_equal(w, 64);
	assert_int_equal(h, 32);
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			p = px + ((size_t)y * w + x) * 4;
			assert_int_equal(p[1], 0);
			if (x < 31)
				assert_int_equal(p[3], 0);
			if (x > 32) {
				assert_int_equal(p[2], 255);
				assert_int_equal(p[3], 255);
			}
			if (p[3] != 0)
				assert_int_equal(p[2], 255);
		}
	free(px);
	img_thumb_release(&t);
}

static void
test_thumb_hostile(void **state)
{
	struct img_thumb t;
	char		 err[256], path[512], real[PATH_MAX];
	struct timespec	 t0, t1;
	struct stat	 before, after;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(img_thumb_file(FIXTURES, "bomb.png", 100, &t, err,
	    sizeof(err)), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_non_null(strstr(err, "too large"));
	assert_non_null(strstr(err, "100000x100000"));
	assert_true(t1.tv_sec - t0.tv_sec < 2);
	assert_null(t.png);

	assert_int_equal(img_thumb_file(FIXTURES, "truncated.png", 100, &t,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot decode"));
	assert_int_equal(img_thumb_file(FIXTURES, "notpng.png", 100, &t, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "not a PNG file");
	assert_int_equal(img_thumb_file(FIXTURES, "missing.png", 100, &t, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));

	/* A symlink is not followed; a directory is not a file. */
	snprintf(path, sizeof(path), "%s/solid-link.png", ws);
	assert_non_null(realpath(FIXTURES "/solid.png", real));
	assert_int_equal(symlink(real, path), 0);
	assert_int_equal(img_thumb_file(ws, "solid-link.png", 100, &t, err,
	    sizeof(err)), -1);
	mkd("dir.png");
	assert_int_equal(img_thumb_file(ws, "dir.png", 100, &t, err,
	    sizeof(err)), -1);

	/* The workspace file is only read. */
	assert_int_equal(stat(FIXTURES "/rgb8.png", &before), 0);
	assert_int_equal(img_thumb_file(FIXTURES, "rgb8.png", 50, &t, err,
	    sizeof(err)), 0);
	img_thumb_release(&t);
	assert_int_equal(stat(FIXTURES "/rgb8.png", &after), 0);
	assert_int_equal(before.st_size, after.st_size);
	assert_int_equal(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
	assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
}

/* ---------------------------------------------------------------- budgets */

enum synth { SYN_CHART, SYN_SCATTER, SYN_NOISE, SYN_GRADIENT };

/* Writes ws/name: w x h RGB of the kind asked for. */
static void
synth_png(const char *name, enum synth kind, int w, int h, unsigned seed)
{
	png_image	 im;
	unsigned char	*px = malloc((size_t)w * h * 3), *p;
	char		 path[512];
	double		 t, d;
	int		 x, y, c, i;

	assert_non_null(px);
	srand(seed);
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			p = px + ((size_t)y * w + x) * 3;
			switch (kind) {
			case SYN_CHART:		/* a line, anti-aliased */
				t = h / 2 + h / 3 * sin(x / 60.0);
				d = fabs(y - t);
				d = d < 1 ? 1 : d > 2.5 ? 0 : (2.5 - d) / 1.5;
				p[0] = (unsigned char)(255 - d * 224);
				p[1] = (unsigned char)(255 - d * 136);
				p[2] = (unsigned char)(255 - d * 75);
				if (y == h - 40 || x == 60)
					p[0] = p[1] = p[2] = 40;
				break;
			case SYN_SCATTER:	/* white, dots put on below */
				p[0] = p[1] = p[2] = 255;
				break;
			case SYN_NOISE:
				for (c = 0; c < 3; c++)
					p[c] = (unsigned char)rand();
				break;
			case SYN_GRADIENT:	/* smooth, with a little grain */
				p[0] = (unsigned char)(128 + 100 *
				    sin(x / 150.0) * cos(y / 200.0));
				p[1] = (unsigned char)(255 * y / (h - 1));
				p[2] = (unsigned char)(255 - 255 * x / (w - 1));
				for (c = 0; c < 3; c++) {
					int v = p[c] + rand() % 7 - 3;

					p[c] = (unsigned char)(v < 0 ? 0 :
					    v > 255 ? 255 : v);
				}
				break;
			}
		}
	if (kind == SYN_SCATTER)
		for (i = 0; i < 20000; i++) {
			int cx = rand() % (w - 4), cy = rand() % (h - 4), dx, dy;

			for (dy = 0; dy < 4; dy++)
				for (dx = 0; dx < 4; dx++) {
					p = px + ((size_t)(cy + dy) * w + cx +
					    dx) * 3;
					p[0] = (unsigned char)(p[0] / 2 + 15);
					p[1] = (unsigned char)(p[1] / 2 + 60);
					p[2] = (unsigned char)(p[2] / 2 + 90);
				}
		}
	memset(&im, 0, sizeof(im));
	im.version = PNG_IMAGE_VERSION;
	im.width = (png_uint_32)w;
	im.height = (png_uint_32)h;
	im.format = PNG_FORMAT_RGB;
	snprintf(path, sizeof(path), "%s/%s", ws, name);
	assert_true(png_image_write_to_file(&im, path, 0, px, 0, NULL));
	free(px);
}

/* Fits ws/name into max_bytes and checks what comes back decodes as said. */
static void
fit_ok(const char *name, size_t max_bytes, struct img_thumb *t)
{
	unsigned char	*px;
	char		 err[256];
	int		 w, h, alpha, rc;

	rc = img_fit_file(ws, name, 1280, max_bytes, t, err, sizeof(err));
	if (rc != 0)
		fail_msg("%s: %d %s", name, rc, err);
	assert_non_null(t->png);
	assert_true(t->len <= max_bytes);
	px = decode(t->png, t->len, &w, &h, &alpha);
	assert_non_null(px);
	assert_int_equal(w, t->width);
	assert_int_equal(h, t->height);
	assert_true(t->width <= 1280 && t->height <= 1280);
	free(px);
}

static void
test_fit_budgets(void **state)
{
	struct img_thumb t, full;
	char		 err[256];
	int		 i;

	/* The ordinary chart: a palette, its size kept, well under budget. */
	synth_png("chart.png", SYN_CHART, 960, 540, 1);
	fit_ok("chart.png", 25600, &t);
	assert_int_equal(t.width, 960);
	assert_int_equal(t.height, 540);
	assert_false(t.shrunk);
	assert_true(t.colors > 0);
	assert_int_equal(img_thumb_file(ws, "chart.png", 1280, &full, err,
	    sizeof(err)), 0);
	assert_true(t.len * 2 < full.len);	/* what the palette saves */
	img_thumb_release(&full);
	img_thumb_release(&t);

	/* 3000 x 1500: to 1280 for the side, then smaller for the bytes. */
	synth_png("scatter.png", SYN_SCATTER, 3000, 1500, 2);
	fit_ok("scatter.png", 25600, &t);
	assert_int_equal(t.orig_width, 3000);
	assert_int_equal(t.fit_width, 1280);
	assert_int_equal(t.fit_height, 640);
	assert_true(t.width <= 1280);
	/* The aspect survives the shrinking. */
	assert_true(abs(t.width - 2 * t.height) <= 2);
	img_thumb_release(&t);

	/* Noise: no faithful palette, so truecolour, much smaller. */
	for (i = 0; i < 4; i++) {
		char name[32];

		snprintf(name, sizeof(name), "noise%d.png", i);
		synth_png(name, SYN_NOISE, 1280, 1280, 10 + (unsigned)i);
		fit_ok(name, 25600, &t);
		assert_true(t.shrunk);
		assert_true(t.width < 200);
		assert_true(t.attempts <= IMG_FIT_ATTEMPTS);
		img_thumb_release(&t);
	}

	/* A photo-like gradient: shrunk, whatever it is encoded as. */
	synth_png("gradient.png", SYN_GRADIENT, 1280, 1024, 3);
	fit_ok("gradient.png", 25600, &t);
	assert_true(t.shrunk);
	assert_true(abs(t.width * 1024 - t.height * 1280) <= 1280 * 2);
	img_thumb_release(&t);

	/* A budget nothing fits: the smallest attempt is reported, no PNG. */
	assert_int_equal(img_fit_file(ws, "noise0.png", 1280, 1024, &t, err,
	    sizeof(err)), 1);
	assert_null(t.png);
	assert_int_equal(t.width, IMG_MIN_SIDE);
	assert_int_equal(t.height, IMG_MIN_SIDE);
	assert_true(t.len > 1024);
	assert_non_null(strstr(err, "over the 1024-byte budget"));
	img_thumb_release(&t);
}

/* Few colours: the palette is exact, so the pixels are the unbudgeted
 * thumbnail's, not an approximation. */
static void
test_fit_exact_palette_is_lossless(void **state)
{
	static const char *const names[] = { "solid.png", "checker.png",
	    "halfalpha.png", "palette4_trns.png", "gray8.png" };
	struct img_thumb a, b;
	unsigned char	*pa, *pb;
	char		 err[256];
	int		 wa, ha, wb, hb, al;
	size_t		 i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_int_equal(img_thumb_file(FIXTURES, names[i], 1280, &a,
		    err, sizeof(err)), 0);
		assert_int_equal(img_fit_file(FIXTURES, names[i], 1280, 1 << 20,
		    &b, err, sizeof(err)), 0);
		if (b.colors == 0)
			fail_msg("%s: not given a palette", names[i]);
		pa = decode(a.png, a.len, &wa, &ha, &al);
		pb = decode(b.png, b.len, &wb, &hb, &al);
		assert_non_null(pa);
		assert_non_null(pb);
		assert_int_equal(wa, wb);
		assert_int_equal(ha, hb);
		if (memcmp(pa, pb, (size_t)wa * ha * 4) != 0) {
			size_t k;

			for (k = 0; k < (size_t)wa * ha * 4; k++)
				if (pa[k] != pb[k])
					break;
			fail_msg("%s: the palette copy differs at byte %zu: "
			    "%d %d %d %d vs %d %d %d %d", names[i], k,
			    pa[k / 4 * 4], pa[k / 4 * 4 + 1], pa[k / 4 * 4 + 2],
			    pa[k / 4 * 4 + 3], pb[k / 4 * 4], pb[k / 4 * 4 + 1],
			    pb[k / 4 * 4 + 2], pb[k / 4 * 4 + 3]);
		}
		free(pa);
		free(pb);
		img_thumb_release(&a);
		img_thumb_release(&b);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thumb_every_fixture),
		cmocka_unit_test(test_thumb_exact_pixels),
		cmocka_unit_test(test_thumb_averages),
		cmocka_unit_test(test_thumb_hostile),
		cmocka_unit_test(test_fit_budgets),
		cmocka_unit_test(test_fit_exact_palette_is_lossless),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
