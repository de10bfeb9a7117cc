/*
 * images.c: thumbnails made with libpng, palette-quantised and shrunk to a
 * byte budget (see images.h).  Which PNGs a run made is wsdiff.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <png.h>

#include "buf.h"
#include "images.h"
#include "quant.h"
#include "banned.h"

/* ---------------------------------------------------------------- scaling */

/*
 * Area averaging with exact integer weights.  Measured in units of
 * 1/(sw*dw) of the width, source column x spans [x*dw, (x+1)*dw) and output
 * column o spans [o*sw, (o+1)*sw) (rows likewise).  Shrinking, a source pixel touches at most two
 * output pixels, and every output pixel gathers weight sw*sh in total.
 * Colour is averaged premultiplied by alpha, so transparent pixels do not
 * bleed their (meaningless) colour into the edges.
 */
struct scaler {
	uint32_t	 sw, sh, dw, dh;
	uint32_t	*col_o;		/* per source column: first output column */
	uint32_t	*col_w;		/* its weight; the rest goes to the next */
	uint64_t	*tmp;		/* one source row reduced to dw pixels */
	uint64_t	*acc[2];	/* output rows cur and cur + 1 */
	uint32_t	 y, cur;
	unsigned char	*out;		/* dw * dh RGBA */
	int		 translucent;	/* some output alpha < 255 */
};

static void
scaler_free(struct scaler *sc)
{
	free(sc->col_o);
	free(sc->col_w);
	free(sc->tmp);
	free(sc->acc[0]);
	free(sc->acc[1]);
	free(sc->out);
	memset(sc, 0, sizeof(*sc));
}

static int
scaler_init(struct scaler *sc, uint32_t sw, uint32_t sh, uint32_t dw,
    uint32_t dh)
{
	uint64_t	 x, o, b;

	memset(sc, 0, sizeof(*sc));
	sc->sw = sw;
	sc->sh = sh;
	sc->dw = dw;
	sc->dh = dh;
	sc->col_o = calloc(sw, sizeof(*sc->col_o));
	sc->col_w = calloc(sw, sizeof(*sc->col_w));
	sc->tmp = calloc((size_t)dw * 4, sizeof(*sc->tmp));
	sc->acc[0] = calloc((size_t)dw * 4, sizeof(uint64_t));
	sc->acc[1] = calloc((size_t)dw * 4, sizeof(uint64_t));
	sc->out = calloc((size_t)dw * dh, 4);
	if (sc->col_o == NULL || sc->col_w == NULL || sc->tmp == NULL ||
	    sc->acc[0] == NULL || sc->acc[1] == NULL || sc->out == NULL) {
		scaler_free(sc);
		return -1;
	}
	for (x = 0; x < sw; x++) {
		o = x * dw / sw;
		b = (o + 1) * sw;
		sc->col_o[x] = (uint32_t)o;
		sc->col_w[x] = b >= (x + 1) * dw ? dw : (uint32_t)(b - x * dw);
	}
	return 0;
}

static void
scaler_emit(struct scaler *sc, const uint64_t *acc, uint32_t oy)
{
	uint64_t	 area = (uint64_t)sc->sw * sc->sh, a;
	unsigned char	*p = sc->out + (size_t)oy * sc->dw * 4;
	uint32_t	 o;
	int		 c;

	for (o = 0; o < sc->dw; o++, p += 4, acc += 4) {
		a = acc[3];
		if (a == 0) {
			p[0] = p[1] = p[2] = p[3] = 0;
			sc->translucent = 1;
			continue;
		}
		for (c = 0; c < 3; c++)
			p[c] = (unsigned char)((acc[c] + a / 2) / a);
		p[3] = (unsigned char)((a + area / 2) / area);
		if (p[3] != 255)
			sc->translucent = 1;
	}
}

/* Feeds one source row of RGBA pixels. */
static void
scaler_row(struct scaler *sc, const unsigned char *row)
{
	uint64_t	 y = sc->y, b, wy0, wy1, v[4];
	uint32_t	 x, o, w0, w1;
	uint64_t	*t = sc->tmp, *tmp;
	size_t		 k, n = (size_t)sc->dw * 4;
	int		 c;

	if (sc->y >= sc->sh)
		return;
	memset(t, 0, n * sizeof(*t));
	for (x = 0; x < sc->sw; x++, row += 4) {
		v[3] = row[3];
		for (c = 0; c < 3; c++)
			v[c] = (uint64_t)row[c] * row[3];
		o = sc->col_o[x];
		w0 = sc->col_w[x];
		w1 = sc->dw - w0;
		for (c = 0; c < 4; c++)
			t[o * 4 + c] += v[c] * w0;
		if (w1 > 0)
			for (c = 0; c < 4; c++)
				t[(o + 1) * 4 + c] += v[c] * w1;
	}
	b = ((uint64_t)sc->cur + 1) * sc->sh;
	wy0 = b >= (y + 1) * sc->dh ? sc->dh : b - y * sc->dh;
	wy1 = sc->dh - wy0;
	for (k = 0; k < n; k++)
		sc->acc[0][k] += t[k] * wy0;
	if (wy1 > 0)
		for (k = 0; k < n; k++)
			sc->acc[1][k] += t[k] * wy1;
	sc->y++;
	if ((y + 1) * sc->dh >= b) {
		scaler_emit(sc, sc->acc[0], sc->cur);
		tmp = sc->acc[0];
		sc->acc[0] = sc->acc[1];
		sc->acc[1] = tmp;
		memset(sc->acc[1], 0, n * sizeof(uint64_t));
		sc->cur++;
	}
}

/* ---------------------------------------------------------------- libpng */

struct pngctx {
	png_structp	 png;
	png_infop	 info;
	FILE		*f;
	char		 msg[200];
	unsigned char	*row;
	unsigned char	*image;		/* interlaced only */
	png_bytep	*rows;
	struct scaler	 sc;		/* the first scaling: max_side */
	struct scaler	 sc2;		/* a smaller one, to fit max_bytes */
	struct buf	 out;
	int		 max_side;
	size_t		 max_bytes;	/* 0: none */
	uint32_t	 w, h;
};

static void
png_ctx_error(png_structp png, png_const_charp msg)
{
	struct pngctx	*ctx = png_get_error_ptr(png);

	snprintf(ctx->msg, sizeof(ctx->msg), "%s", msg);
	png_longjmp(png, 1);
}

static void
png_ctx_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;	/* a bad ancillary chunk is no reason to complain */
}

static void
png_ctx_write(png_structp png, png_bytep p, size_t n)
{
	struct pngctx	*ctx = png_get_io_ptr(png);

	if (buf_append(&ctx->out, p, n) == -1)
		png_error(png, "encoded image too large");
}

static void
png_ctx_flush(png_structp png)
{
	(void)png;
}

static void
fit(uint32_t w, uint32_t h, int max_side, uint32_t *dw, uint32_t *dh)
{
	uint64_t	 m = (uint64_t)max_side;

	*dw = w;
	*dh = h;
	if (max_side <= 0 || (w <= m && h <= m))
		return;
	if (w >= h) {
		*dw = (uint32_t)m;
		*dh = (uint32_t)(((uint64_t)h * m + w / 2) / w);
	} else {
		*dh = (uint32_t)m;
		*dw = (uint32_t)(((uint64_t)w * m + h / 2) / h);
	}
	if (*dw == 0)
		*dw = 1;
	if (*dh == 0)
		*dh = 1;
}

/* Decodes ctx->f into ctx->sc; libpng errors come back as -1. */
static int
png_decode(struct pngctx *ctx)
{
	png_uint_32	 w, h, y;
	int		 depth, ctype, interlace, passes;
	uint32_t	 dw, dh;
	uint64_t	 pixels;

	ctx->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, ctx,
	    png_ctx_error, png_ctx_warning);
	if (ctx->png == NULL || (ctx->info = png_create_info_struct(ctx->png)) == NULL) {
		snprintf(ctx->msg, sizeof(ctx->msg), "out of memory");
		return -1;
	}
	if (setjmp(png_jmpbuf(ctx->png)))
		return -1;
	png_set_user_limits(ctx->png, 1000000, 1000000);
	png_set_chunk_malloc_max(ctx->png, 8u << 20);
	png_set_chunk_cache_max(ctx->png, 1000);
	png_init_io(ctx->png, ctx->f);
	png_set_sig_bytes(ctx->png, 8);
	png_read_info(ctx->png, ctx->info);
	png_get_IHDR(ctx->png, ctx->info, &w, &h, &depth, &ctype, &interlace,
	    NULL, NULL);
	pixels = (uint64_t)w * h;
	if (pixels > (interlace != PNG_INTERLACE_NONE ?
	    IMG_MAX_PIXELS_INTERLACED : IMG_MAX_PIXELS)) {
		snprintf(ctx->msg, sizeof(ctx->msg), "image too large to "
		    "return (%ux%u pixels%s)", (unsigned)w, (unsigned)h,
		    interlace != PNG_INTERLACE_NONE ? ", interlaced" : "");
		return -1;
	}
	ctx->w = w;
	ctx->h = h;

	/* Whatever it is, make it 8-bit RGBA. */
	if (ctype == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(ctx->png);
	if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8)
		png_set_expand_gray_1_2_4_to_8(ctx->png);
	if (png_get_valid(ctx->png, ctx->info, PNG_INFO_tRNS))
		png_set_tRNS_to_alpha(ctx->png);
	else if (!(ctype & PNG_COLOR_MASK_ALPHA))
		png_set_add_alpha(ctx->png, 0xff, PNG_FILLER_AFTER);
	if (depth == 16)
		png_set_scale_16(ctx->png);
	if (ctype == PNG_COLOR_TYPE_GRAY || ctype == PNG_COLOR_TYPE_GRAY_ALPHA)
		png_set_gray_to_rgb(ctx->png);
	passes = png_set_interlace_handling(ctx->png);
	png_read_update_info(ctx->png, ctx->info);
	if (png_get_rowbytes(ctx->png, ctx->info) != (size_t)w * 4) {
		snprintf(ctx->msg, sizeof(ctx->msg), "unexpected row layout");
		return -1;
	}

	fit(w, h, ctx->max_side, &dw, &dh);
	if (scaler_init(&ctx->sc, w, h, dw, dh) == -1) {
		snprintf(ctx->msg, sizeof(ctx->msg), "out of memory");
		return -1;
	}
	if (passes == 1) {
		/* Row by row: memory stays at one source row. */
		if ((ctx->row = malloc((size_t)w * 4)) == NULL) {
			snprintf(ctx->msg, sizeof(ctx->msg), "out of memory");
			return -1;
		}
		for (y = 0; y < h; y++) {
			png_read_row(ctx->png, ctx->row, NULL);
			scaler_row(&ctx->sc, ctx->row);
		}
	} else {
		ctx->image = malloc((size_t)pixels * 4);
		ctx->rows = calloc(h, sizeof(*ctx->rows));
		if (ctx->image == NULL || ctx->rows == NULL) {
			snprintf(ctx->msg, sizeof(ctx->msg), "out of memory");
			return -1;
		}
		for (y = 0; y < h; y++)
			ctx->rows[y] = ctx->image + (size_t)y * w * 4;
		png_read_image(ctx->png, ctx->rows);
		for (y = 0; y < h; y++)
			scaler_row(&ctx->sc, ctx->rows[y]);
	}
	return 0;
}

/*
 * Encodes w x h RGBA pixels into ctx->out: as a palette PNG when q is not
 * NULL (its indices and colours), else as RGB, or RGBA when translucent.
 */
static int
png_encode(struct pngctx *ctx, const unsigned char *px, uint32_t w,
    uint32_t h, int translucent, const struct quant_result *q)
{
	png_color	 plte[QUANT_MAX_COLORS];
	png_byte	 trns[QUANT_MAX_COLORS];
	uint32_t	 y;
	int		 i, depth = 8;

	buf_reset(&ctx->out);
	ctx->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx,
	    png_ctx_error, png_ctx_warning);
	if (ctx->png == NULL || (ctx->info = png_create_info_struct(ctx->png)) == NULL) {
		snprintf(ctx->msg, sizeof(ctx->msg), "out of memory");
		return -1;
	}
	if (setjmp(png_jmpbuf(ctx->png)))
		return -1;
	png_set_write_fn(ctx->png, ctx, png_ctx_write, png_ctx_flush);
	if (q != NULL) {
		/* The fewest bits that hold the indices: a two-colour chart
		 * packs eight pixels a byte. */
		depth = q->ncolors <= 2 ? 1 : q->ncolors <= 4 ? 2 :
		    q->ncolors <= 16 ? 4 : 8;
		png_set_IHDR(ctx->png, ctx->info, w, h, depth,
		    PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE,
		    PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
		for (i = 0; i < q->ncolors; i++) {
			plte[i].red = q->palette[i][0];
			plte[i].green = q->palette[i][1];
			plte[i].blue = q->palette[i][2];
			trns[i] = q->palette[i][3];
		}
		png_set_PLTE(ctx->png, ctx->info, plte, q->ncolors);
		if (q->translucent)
			png_set_tRNS(ctx->png, ctx->info, trns, q->ncolors, NULL);
		/* Filters rarely help indices (the PNG spec's advice). */
		png_set_filter(ctx->png, 0, PNG_FILTER_NONE);
		png_set_compression_level(ctx->png, 9);
	} else
		png_set_IHDR(ctx->png, ctx->info, w, h, 8,
		    translucent ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB,
		    PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		    PNG_FILTER_TYPE_DEFAULT);
	png_write_info(ctx->png, ctx->info);
	if (q != NULL) {
		if (depth < 8)
			png_set_packing(ctx->png);
		for (y = 0; y < h; y++)
			png_write_row(ctx->png, q->index + (size_t)y * w);
	} else {
		/* Opaque: the rows stay RGBA here and libpng drops the alpha. */
		if (!translucent)
			png_set_filler(ctx->png, 0, PNG_FILLER_AFTER);
		for (y = 0; y < h; y++)
			png_write_row(ctx->png, px + (size_t)y * w * 4);
	}
	png_write_end(ctx->png, NULL);
	return 0;
}

/*
 * One encoding of w x h pixels: palette-quantised when a byte budget is
 * set and the palette is faithful, else truecolour.
 */
static int
fit_encode(struct pngctx *ctx, const unsigned char *px, uint32_t w,
    uint32_t h, int translucent, int *colors)
{
	struct quant_result q;
	int		 rc, use;

	*colors = 0;
	if (ctx->max_bytes == 0) {
		rc = png_encode(ctx, px, w, h, translucent, NULL);
		png_destroy_write_struct(&ctx->png, &ctx->info);
		return rc;
	}
	if (quant_image(px, w, h, QUANT_MAX_COLORS, &q) == -1) {
		snprintf(ctx->msg, sizeof(ctx->msg), "out of memory");
		return -1;
	}
	use = q.exact || q.psnr >= IMG_QUANT_MIN_PSNR;
	rc = png_encode(ctx, px, w, h, translucent, use ? &q : NULL);
	png_destroy_write_struct(&ctx->png, &ctx->info);
	if (rc == 0 && use)
		*colors = q.ncolors;
	quant_release(&q);
	return rc;
}

/* Averages ctx->sc.out down to w x h into ctx->sc2 (from the first
 * scaling each time, so blur does not add up over attempts). */
static int
fit_rescale(struct pngctx *ctx, uint32_t w, uint32_t h)
{
	uint32_t	 y;

	scaler_free(&ctx->sc2);
	if (scaler_init(&ctx->sc2, ctx->sc.dw, ctx->sc.dh, w, h) == -1) {
		snprintf(ctx->msg, sizeof(ctx->msg), "out of memory");
		return -1;
	}
	for (y = 0; y < ctx->sc.dh; y++)
		scaler_row(&ctx->sc2, ctx->sc.out + (size_t)y * ctx->sc.dw * 4);
	return 0;
}

/* The scale that should bring len to about max bytes (bytes grow about
 * with the pixel count), with a margin, within [lo, hi]. */
static double
fit_factor(size_t len, size_t max, double lo, double hi)
{
	double	 f = sqrt((double)max / (double)len * 0.85);

	return f < lo ? lo : f > hi ? hi : f;
}

/*
 * Encodes the decoded image, smaller each time until it fits
 * ctx->max_bytes.  An attempt that lands well under the budget after a
 * shrink grows once toward the smallest size known to be over, so noise
 * (whose bytes fall faster than its pixels once averaged) is not returned
 * as a thumbnail of a quarter of its budget.  The best fitting PNG is
 * kept in ctx->out.  Returns 0 when one fits (or no budget is set), 1 when
 * even the smallest attempt did not, -1 on error.
 */
static int
fit_budget(struct pngctx *ctx, struct img_thumb *t)
{
	const unsigned char *px = ctx->sc.out;
	unsigned char	*best = NULL;
	size_t		 best_len = 0;
	uint32_t	 w = ctx->sc.dw, h = ctx->sc.dh, longest, over = 0, next;
	uint32_t	 l0 = w > h ? w : h, best_long = 0;
	int		 attempt, colors, translucent = ctx->sc.translucent;
	int		 best_w = 0, best_h = 0, best_colors = 0, grows = 0, rc = 1;
	double		 f;

	for (attempt = 0;; attempt++) {
		if (fit_encode(ctx, px, w, h, translucent, &colors) == -1) {
			free(best);
			return -1;
		}
		t->attempts = attempt + 1;
		longest = w > h ? w : h;
		if (ctx->max_bytes == 0 || ctx->out.len <= ctx->max_bytes) {
			t->width = (int)w;
			t->height = (int)h;
			t->colors = colors;
			t->len = ctx->out.len;
			if (attempt == 0)
				return 0;
			free(best);
			best = (unsigned char *)buf_detach(&ctx->out, &best_len);
			if (best == NULL)
				return -1;
			best_w = (int)w;
			best_h = (int)h;
			best_long = longest;
			best_colors = colors;
			rc = 0;
			f = fit_factor(best_len, ctx->max_bytes, 1.0, 4.0);
			next = (uint32_t)((double)longest * f);
		} else {
			if (over == 0 || longest < over)
				over = longest;
			t->width = (int)w;
			t->height = (int)h;
			t->len = ctx->out.len;
			if (best == NULL && longest <= IMG_MIN_SIDE)
				return 1;
			f = fit_factor(ctx->out.len, ctx->max_bytes, 0.2, 0.9);
			next = (uint32_t)((double)longest * f);
			if (next < IMG_MIN_SIDE)
				next = IMG_MIN_SIDE;
		}
		if (best != NULL) {
			/* Grow back toward the smallest size known to be over,
			 * bisecting once a guess overshot. */
			if (best_len * 10 >= ctx->max_bytes * 6 ||
			    grows >= IMG_FIT_GROWS)
				break;
			if (over > 0 && (next >= over || longest != best_long))
				next = best_long + (over - best_long) / 2;
			if (next <= best_long + 2)
				break;
			grows++;
		}
		if (attempt + 1 >= IMG_FIT_ATTEMPTS) {
			if (best == NULL)
				return 1;
			break;
		}
		w = (uint32_t)(((uint64_t)ctx->sc.dw * next + l0 / 2) / l0);
		h = (uint32_t)(((uint64_t)ctx->sc.dh * next + l0 / 2) / l0);
		if (w < 1)
			w = 1;
		if (h < 1)
			h = 1;
		if (fit_rescale(ctx, w, h) == -1) {
			free(best);
			return -1;
		}
		px = ctx->sc2.out;
		translucent = ctx->sc2.translucent;
		t->shrunk = 1;
	}
	/* The best fit goes back into ctx->out for the caller. */
	buf_reset(&ctx->out);
	if (buf_append(&ctx->out, best, best_len) == -1) {
		free(best);
		return -1;
	}
	free(best);
	t->width = best_w;
	t->height = best_h;
	t->colors = best_colors;
	t->len = best_len;
	return rc;
}

int
img_fit_fd(int fd, int max_side, size_t max_bytes, struct img_thumb *t,
    char *errbuf, size_t errlen)
{
	struct pngctx	*ctx;
	unsigned char	 sig[8];
	struct stat	 st;
	int		 dfd = -1, rc = -1, fit;
	size_t		 n;

	memset(t, 0, sizeof(*t));
	if ((ctx = calloc(1, sizeof(*ctx))) == NULL) {
		snprintf(errbuf, errlen, "out of memory");
		return -1;
	}
	buf_init(&ctx->out, IMG_MAX_OUTPUT_BYTES);
	ctx->max_side = max_side;
	ctx->max_bytes = max_bytes;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(errbuf, errlen, "not a regular file");
		goto done;
	}
	if ((unsigned long long)st.st_size > IMG_MAX_FILE_BYTES) {
		snprintf(errbuf, errlen, "file too large to return (%lld bytes)",
		    (long long)st.st_size);
		goto done;
	}
	if ((dfd = dup(fd)) == -1 || lseek(dfd, 0, SEEK_SET) == -1 ||
	    (ctx->f = fdopen(dfd, "rb")) == NULL) {
		snprintf(errbuf, errlen, "%s", strerror(errno));
		if (dfd != -1)
			close(dfd);
		goto done;
	}
	n = fread(sig, 1, sizeof(sig), ctx->f);
	if (n != sizeof(sig) || png_sig_cmp(sig, 0, sizeof(sig)) != 0) {
		snprintf(errbuf, errlen, "not a PNG file");
		goto done;
	}
	if (png_decode(ctx) == -1) {
		snprintf(errbuf, errlen, "cannot decode: %s", ctx->msg);
		png_destroy_read_struct(&ctx->png, &ctx->info, NULL);
		goto done;
	}
	png_destroy_read_struct(&ctx->png, &ctx->info, NULL);
	/* The source rows are not needed past the first scaling. */
	free(ctx->row);
	free(ctx->image);
	free(ctx->rows);
	ctx->row = ctx->image = NULL;
	ctx->rows = NULL;
	t->orig_width = (int)ctx->w;
	t->orig_height = (int)ctx->h;
	t->fit_width = (int)ctx->sc.dw;
	t->fit_height = (int)ctx->sc.dh;
	if ((fit = fit_budget(ctx, t)) == -1) {
		snprintf(errbuf, errlen, "cannot encode: %s", ctx->msg);
		png_destroy_write_struct(&ctx->png, &ctx->info);
		goto done;
	}
	if (fit == 1) {
		snprintf(errbuf, errlen, "%zu bytes even at %dx%d, over the "
		    "%zu-byte budget", t->len, t->width, t->height, max_bytes);
		rc = 1;
		goto done;
	}
	t->png = (unsigned char *)buf_detach(&ctx->out, &t->len);
	rc = t->png != NULL ? 0 : -1;
done:
	if (ctx->f != NULL)
		fclose(ctx->f);
	free(ctx->row);
	free(ctx->image);
	free(ctx->rows);
	scaler_free(&ctx->sc);
	scaler_free(&ctx->sc2);
	buf_release(&ctx->out);
	free(ctx);
	return rc;
}

int
img_thumb_fd(int fd, int max_side, struct img_thumb *t, char *errbuf,
    size_t errlen)
{
	return img_fit_fd(fd, max_side, 0, t, errbuf, errlen);
}

int
img_fit_file(const char *workspace, const char *rel, int max_side,
    size_t max_bytes, struct img_thumb *t, char *errbuf, size_t errlen)
{
	int	 wfd, fd, rc;

	memset(t, 0, sizeof(*t));
	if ((wfd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(errbuf, errlen, "%s: %s", workspace, strerror(errno));
		return -1;
	}
	fd = openat(wfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(wfd);
	if (fd == -1) {
		snprintf(errbuf, errlen, "%s", strerror(errno));
		return -1;
	}
	rc = img_fit_fd(fd, max_side, max_bytes, t, errbuf, errlen);
	close(fd);
	return rc;
}

int
img_thumb_file(const char *workspace, const char *rel, int max_side,
    struct img_thumb *t, char *errbuf, size_t errlen)
{
	return img_fit_file(workspace, rel, max_side, 0, t, errbuf, errlen);
}

void
img_thumb_release(struct img_thumb *t)
{
	free(t->png);
	memset(t, 0, sizeof(*t));
}
