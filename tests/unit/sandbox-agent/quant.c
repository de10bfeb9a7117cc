/*
 * Unit tests for sandbox-agent/quant.c: exact palettes are exact, median
 * cut stays within 256 colours and close on smooth images, noise is far
 * (so the caller refuses the palette there), alpha survives, odd sizes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../sandbox-agent/quant.c"

static unsigned char *
image(uint32_t w, uint32_t h)
{
	unsigned char	*p = calloc((size_t)w * h, 4);

	assert_non_null(p);
	return p;
}

/* Every pixel's palette colour against the source: the largest difference. */
static int
worst(const unsigned char *px, size_t n, const struct quant_result *q)
{
	size_t	 i;
	int	 c, e, m = 0;

	for (i = 0; i < n; i++) {
		assert_true(q->index[i] < q->ncolors);
		for (c = 0; c < 4; c++) {
			e = abs((int)px[i * 4 + c] -
			    (int)q->palette[q->index[i]][c]);
			if (e > m)
				m = e;
		}
	}
	return m;
}

static void
test_exact_when_few_colours(void **state)
{
	struct quant_result q;
	unsigned char	*px = image(97, 31);
	size_t		 i, n = 97 * 31;

	/* 200 colours, scattered: the palette holds each exactly. */
	for (i = 0; i < n; i++) {
		unsigned v = (unsigned)((i * 7919) % 200);

		px[i * 4] = (unsigned char)v;
		px[i * 4 + 1] = (unsigned char)(255 - v);
		px[i * 4 + 2] = (unsigned char)(v * 3);
		px[i * 4 + 3] = 255;
	}
	assert_int_equal(quant_image(px, 97, 31, 256, &q), 0);
	assert_true(q.exact);
	assert_int_equal(q.ncolors, 200);
	assert_false(q.translucent);
	assert_true(isinf(q.psnr));
	assert_int_equal(worst(px, n, &q), 0);
	quant_release(&q);

	/* Asked for fewer colours than there are: no longer exact. */
	assert_int_equal(quant_image(px, 97, 31, 16, &q), 0);
	assert_false(q.exact);
	assert_true(q.ncolors <= 16 && q.ncolors >= 2);
	assert_true(q.psnr < 60);
	worst(px, n, &q);
	quant_release(&q);
	free(px);
}

static void
test_one_colour_and_one_pixel(void **state)
{
	struct quant_result q;
	unsigned char	*px = image(1, 1);

	memcpy(px, "\x10\x20\x30\x80", 4);
	assert_int_equal(quant_image(px, 1, 1, 256, &q), 0);
	assert_true(q.exact);
	assert_int_equal(q.ncolors, 1);
	assert_true(q.translucent);
	assert_memory_equal(q.palette[0], "\x10\x20\x30\x80", 4);
	quant_release(&q);
	free(px);
}

static void
test_median_cut_on_a_gradient(void **state)
{
	struct quant_result q;
	uint32_t	 w = 512, h = 256, x, y;
	unsigned char	*px = image(w, h), *p;

	/* 512 x 256 distinct colours, smooth: 256 of them land close. */
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			p = px + ((size_t)y * w + x) * 4;
			p[0] = (unsigned char)(x / 2);
			p[1] = (unsigned char)y;
			p[2] = (unsigned char)(255 - x / 2);
			p[3] = 255;
		}
	assert_int_equal(quant_image(px, w, h, 256, &q), 0);
	assert_false(q.exact);
	assert_true(q.ncolors > 200 && q.ncolors <= 256);
	assert_false(q.translucent);
	assert_true(q.psnr > 30);
	assert_true(worst(px, (size_t)w * h, &q) <= 40);
	assert_true(q.max_err <= 40);
	quant_release(&q);
	free(px);
}

static void
test_noise_is_not_faithful(void **state)
{
	struct quant_result q;
	uint32_t	 w = 256, h = 256;
	unsigned char	*px = image(w, h);
	size_t		 i;

	srand(7);
	for (i = 0; i < (size_t)w * h; i++) {
		px[i * 4] = (unsigned char)rand();
		px[i * 4 + 1] = (unsigned char)rand();
		px[i * 4 + 2] = (unsigned char)rand();
		px[i * 4 + 3] = 255;
	}
	assert_int_equal(quant_image(px, w, h, 256, &q), 0);
	assert_int_equal(q.ncolors, 256);
	/* Uniform noise over 256 boxes: about 8 levels per channel each. */
	assert_true(q.psnr < 40);
	worst(px, (size_t)w * h, &q);
	quant_release(&q);
	free(px);
}

static void
test_translucent_cut(void **state)
{
	struct quant_result q;
	uint32_t	 w = 300, h = 200, x, y;
	unsigned char	*px = image(w, h), *p;

	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			p = px + ((size_t)y * w + x) * 4;
			p[0] = (unsigned char)(x * 255 / w);
			p[1] = (unsigned char)(y * 255 / h);
			p[2] = 40;
			p[3] = (unsigned char)(x < 150 ? 255 : y);
		}
	assert_int_equal(quant_image(px, w, h, 256, &q), 0);
	assert_false(q.exact);
	assert_true(q.translucent);
	assert_true(q.ncolors <= 256);
	assert_true(q.psnr > 25);
	worst(px, (size_t)w * h, &q);
	quant_release(&q);
	free(px);
}

/* A chart: a few flat colours, and anti-aliased edges between them. */
static void
test_chart_like_is_faithful(void **state)
{
	struct quant_result q;
	uint32_t	 w = 960, h = 540, x, y;
	unsigned char	*px = image(w, h), *p;
	double		 t, d;

	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			p = px + ((size_t)y * w + x) * 4;
			/* White, with two lines: blue and orange, blended at
			 * their edges over a pixel and a half. */
			t = 270 + 200 * sin(x / 80.0);
			d = fabs((double)y - t);
			d = d < 1 ? 1 : d > 2.5 ? 0 : (2.5 - d) / 1.5;
			p[0] = (unsigned char)(255 - d * (255 - 31));
			p[1] = (unsigned char)(255 - d * (255 - 119));
			p[2] = (unsigned char)(255 - d * (255 - 180));
			t = 200 + 100 * cos(x / 50.0);
			d = fabs((double)y - t);
			d = d < 1 ? 1 : d > 2.5 ? 0 : (2.5 - d) / 1.5;
			p[0] = (unsigned char)(p[0] - d * (p[0] - 255));
			p[1] = (unsigned char)(p[1] - d * (p[1] - 127));
			p[2] = (unsigned char)(p[2] - d * (p[2] - 14));
			p[3] = 255;
		}
	assert_int_equal(quant_image(px, w, h, 256, &q), 0);
	assert_true(q.psnr >= 40);
	quant_release(&q);
	free(px);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_when_few_colours),
		cmocka_unit_test(test_one_colour_and_one_pixel),
		cmocka_unit_test(test_median_cut_on_a_gradient),
		cmocka_unit_test(test_noise_is_not_faithful),
		cmocka_unit_test(test_translucent_cut),
		cmocka_unit_test(test_chart_like_is_faithful),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
