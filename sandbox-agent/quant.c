/*
 * quant.c: exact palettes and median cut (see quant.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"
#include "banned.h"

/* ---------------------------------------------------------------- exact */

/*
 * Open addressing over packed RGBA: 1024 slots hold 256 colours at a load
 * of a quarter, so probes stay short.  Slot value 0 means empty, else the
 * palette index + 1.
 */
#define EXACT_SLOTS	1024

static uint32_t
pack(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static size_t
slot_of(uint32_t c)
{
	/* Fibonacci hashing: the top bits of the product. */
	return (size_t)((c * 2654435769u) >> 22) & (EXACT_SLOTS - 1);
}

/* 1 when the image had at most max_colors colours (q filled), 0 if not. */
static int
quant_exact(const unsigned char *rgba, size_t n, int max_colors,
    struct quant_result *q)
{
	uint32_t	 key[EXACT_SLOTS];
	uint16_t	 val[EXACT_SLOTS];
	uint32_t	 c, last = 0;
	size_t		 i, s;
	int		 lastix = -1;

	memset(val, 0, sizeof(val));
	q->ncolors = 0;
	for (i = 0; i < n; i++) {
		c = pack(rgba + i * 4);
		if (lastix >= 0 && c == last) {
			q->index[i] = (unsigned char)lastix;
			continue;
		}
		for (s = slot_of(c); val[s] != 0 && key[s] != c;
		    s = (s + 1) & (EXACT_SLOTS - 1))
			;
		if (val[s] == 0) {
			if (q->ncolors >= max_colors)
				return 0;
			key[s] = c;
			val[s] = (uint16_t)(q->ncolors + 1);
			memcpy(q->palette[q->ncolors], rgba + i * 4, 4);
			q->ncolors++;
		}
		last = c;
		lastix = val[s] - 1;
		q->index[i] = (unsigned char)lastix;
	}
	return 1;
}

/* ------------------------------------------------------------ median cut */

struct cube {
	int		 bits;		/* per channel: 5 opaque, 4 with alpha */
	int		 chans;		/* 3 or 4 */
	uint32_t	 ncells;
	uint32_t	*count;		/* per cell */
	uint64_t	*sum;		/* per cell, chans sums */
	uint32_t	*cells;		/* the non-empty cells */
	uint32_t	 nused;
	unsigned char	*map;		/* per cell: palette index */
};

struct box {
	uint32_t	 start, end;	/* [start, end) in cube.cells */
	uint64_t	 pixels;
	int		 lo[4], hi[4];	/* cell coordinates */
};

static uint32_t
cell_of(const struct cube *cu, const unsigned char *p)
{
	int		 sh = 8 - cu->bits, c;
	uint32_t	 k = 0;

	for (c = 0; c < cu->chans; c++)
		k = k << cu->bits | (uint32_t)(p[c] >> sh);
	return k;
}

static int
coord(const struct cube *cu, uint32_t cell, int c)
{
	int	 shift = (cu->chans - 1 - c) * cu->bits;

	return (int)((cell >> shift) & ((1u << cu->bits) - 1));
}

static void
box_shrink(const struct cube *cu, struct box *b)
{
	uint32_t	 i;
	int		 c, v;

	b->pixels = 0;
	for (c = 0; c < cu->chans; c++) {
		b->lo[c] = 1 << cu->bits;
		b->hi[c] = -1;
	}
	for (i = b->start; i < b->end; i++) {
		b->pixels += cu->count[cu->cells[i]];
		for (c = 0; c < cu->chans; c++) {
			v = coord(cu, cu->cells[i], c);
			if (v < b->lo[c])
				b->lo[c] = v;
			if (v > b->hi[c])
				b->hi[c] = v;
		}
	}
}

/* The longest side of b, or -1 when it is one cell. */
static int
box_axis(const struct cube *cu, const struct box *b, int *len)
{
	int	 c, best = -1;

	*len = 0;
	for (c = 0; c < cu->chans; c++)
		if (b->hi[c] - b->lo[c] > *len) {
			*len = b->hi[c] - b->lo[c];
			best = c;
		}
	return best;
}

/*
 * Splits b at the pixel-weighted median of its longest side.  The cells
 * are reordered by a counting sort on that coordinate (at most 32 values).
 * Returns 0, or -1 when b cannot be split.
 */
static int
box_split(struct cube *cu, struct box *b, struct box *nb, uint32_t *tmp)
{
	uint64_t	 hist[32], half, acc;
	uint32_t	 pos[32], i, n = b->end - b->start, cut;
	int		 axis, len, v, split;

	if ((axis = box_axis(cu, b, &len)) < 0 || n < 2)
		return -1;
	memset(hist, 0, sizeof(hist));
	for (i = b->start; i < b->end; i++)
		hist[coord(cu, cu->cells[i], axis)] += cu->count[cu->cells[i]];
	/* The median value: the first whose running total reaches half. */
	half = b->pixels / 2;
	acc = 0;
	split = b->lo[axis];
	for (v = b->lo[axis]; v < b->hi[axis]; v++) {
		acc += hist[v];
		split = v;
		if (acc >= half)
			break;
	}
	/* Cells with coordinate <= split go left: both sides are non-empty,
	 * since split < hi and lo's cell has pixels. */
	memset(pos, 0, sizeof(pos));
	for (i = b->start; i < b->end; i++)
		pos[coord(cu, cu->cells[i], axis)]++;
	acc = 0;
	for (v = 0; v < 32; v++) {
		uint32_t k = pos[v];

		pos[v] = (uint32_t)acc;
		acc += k;
	}
	for (i = b->start; i < b->end; i++)
		tmp[pos[coord(cu, cu->cells[i], axis)]++] = cu->cells[i];
	memcpy(cu->cells + b->start, tmp, n * sizeof(*tmp));
	cut = b->start;
	while (cut < b->end && coord(cu, cu->cells[cut], axis) <= split)
		cut++;
	if (cut == b->start || cut == b->end)
		return -1;
	*nb = *b;
	nb->start = cut;
	b->end = cut;
	box_shrink(cu, b);
	box_shrink(cu, nb);
	return 0;
}

static void
cube_free(struct cube *cu)
{
	free(cu->count);
	free(cu->sum);
	free(cu->cells);
	free(cu->map);
}

static int
quant_cut(const unsigned char *rgba, size_t n, int max_colors, int alpha,
    struct quant_result *q)
{
	struct cube	 cu;
	struct box	*boxes = NULL;
	uint32_t	*tmp = NULL, cell, i;
	uint64_t	 s[4], cnt;
	int		 nboxes, b, c, best, len, k, rc = -1;
	size_t		 p;

	memset(&cu, 0, sizeof(cu));
	cu.bits = alpha ? 4 : 5;
	cu.chans = alpha ? 4 : 3;
	cu.ncells = 1u << (cu.bits * cu.chans);
	cu.count = calloc(cu.ncells, sizeof(*cu.count));
	cu.sum = calloc((size_t)cu.ncells * 4, sizeof(*cu.sum));
	cu.cells = calloc(cu.ncells, sizeof(*cu.cells));
	cu.map = calloc(cu.ncells, 1);
	tmp = calloc(cu.ncells, sizeof(*tmp));
	boxes = calloc((size_t)max_colors, sizeof(*boxes));
	if (cu.count == NULL || cu.sum == NULL || cu.cells == NULL ||
	    cu.map == NULL || tmp == NULL || boxes == NULL)
		goto done;

	for (p = 0; p < n; p++) {
		const unsigned char *px = rgba + p * 4;

		cell = cell_of(&cu, px);
		if (cu.count[cell]++ == 0)
			cu.cells[cu.nused++] = cell;
		for (c = 0; c < 4; c++)
			cu.sum[(size_t)cell * 4 + c] += px[c];
	}

	nboxes = 1;
	boxes[0].start = 0;
	boxes[0].end = cu.nused;
	box_shrink(&cu, &boxes[0]);
	while (nboxes < max_colors) {
		/* The box holding the most pixels times its longest side: big
		 * flat areas are not split for nothing, wide spreads are. */
		uint64_t	 w, bw = 0;

		best = -1;
		for (b = 0; b < nboxes; b++) {
			if (box_axis(&cu, &boxes[b], &len) < 0)
				continue;
			w = boxes[b].pixels * (uint64_t)len;
			if (best < 0 || w > bw) {
				best = b;
				bw = w;
			}
		}
		if (best < 0 || box_split(&cu, &boxes[best], &boxes[nboxes],
		    tmp) == -1)
			break;
		nboxes++;
	}

	/* Each box's colour: the exact mean of its pixels. */
	q->translucent = 0;
	for (b = 0; b < nboxes; b++) {
		memset(s, 0, sizeof(s));
		cnt = 0;
		for (i = boxes[b].start; i < boxes[b].end; i++) {
			cell = cu.cells[i];
			cnt += cu.count[cell];
			for (c = 0; c < 4; c++)
				s[c] += cu.sum[(size_t)cell * 4 + c];
		}
		for (c = 0; c < 4; c++)
			q->palette[b][c] = (unsigned char)((s[c] + cnt / 2) / cnt);
		if (q->palette[b][3] != 255)
			q->translucent = 1;
	}
	q->ncolors = nboxes;

	/* Each cell to the palette entry nearest its mean. */
	for (i = 0; i < cu.nused; i++) {
		uint64_t	 d, bd = UINT64_MAX;
		int64_t		 m[4], e;

		cell = cu.cells[i];
		cnt = cu.count[cell];
		for (c = 0; c < 4; c++)
			m[c] = (int64_t)((cu.sum[(size_t)cell * 4 + c] + cnt / 2) /
			    cnt);
		best = 0;
		for (k = 0; k < nboxes; k++) {
			d = 0;
			for (c = 0; c < 4; c++) {
				e = m[c] - q->palette[k][c];
				d += (uint64_t)(e * e);
			}
			if (d < bd) {
				bd = d;
				best = k;
			}
		}
		cu.map[cell] = (unsigned char)best;
	}
	for (p = 0; p < n; p++)
		q->index[p] = cu.map[cell_of(&cu, rgba + p * 4)];
	rc = 0;
done:
	cube_free(&cu);
	free(tmp);
	free(boxes);
	return rc;
}

/* ---------------------------------------------------------------- API */

/* The error over the channels that vary: alpha counts only when used. */
static void
quant_measure(const unsigned char *rgba, size_t n, int chans,
    struct quant_result *q)
{
	double		 sse = 0;
	size_t		 p;
	int		 c, e, maxe = 0;

	for (p = 0; p < n; p++) {
		const unsigned char *a = rgba + p * 4, *b = q->palette[q->index[p]];

		for (c = 0; c < chans; c++) {
			e = abs((int)a[c] - (int)b[c]);
			sse += (double)(e * e);
			if (e > maxe)
				maxe = e;
		}
	}
	q->max_err = maxe;
	q->psnr = sse == 0 ? INFINITY :
	    10.0 * log10(255.0 * 255.0 * (double)n * chans / sse);
}

int
quant_image(const unsigned char *rgba, uint32_t w, uint32_t h,
    int max_colors, struct quant_result *q)
{
	size_t		 n = (size_t)w * h, p;
	int		 alpha = 0;

	memset(q, 0, sizeof(*q));
	if (max_colors < 2)
		max_colors = 2;
	if (max_colors > QUANT_MAX_COLORS)
		max_colors = QUANT_MAX_COLORS;
	if ((q->index = malloc(n > 0 ? n : 1)) == NULL)
		return -1;
	if (quant_exact(rgba, n, max_colors, q)) {
		q->exact = 1;
		q->psnr = INFINITY;
		for (p = 0; p < (size_t)q->ncolors; p++)
			if (q->palette[p][3] != 255)
				q->translucent = 1;
		return 0;
	}
	for (p = 0; p < n && !alpha; p++)
		alpha = rgba[p * 4 + 3] != 255;
	if (quant_cut(rgba, n, max_colors, alpha, q) == -1) {
		quant_release(q);
		return -1;
	}
	quant_measure(rgba, n, alpha ? 4 : 3, q);
	return 0;
}

void
quant_release(struct quant_result *q)
{
	free(q->index);
	memset(q, 0, sizeof(*q));
}
