/*
 * quant.h: a palette of at most 256 colours for an RGBA image, so that a
 * chart can be returned as an 8-bit palette PNG (a third of the bytes, or
 * less) when that keeps it faithful.
 *
 * An image with at most 256 distinct colours gets them exactly (lossless).
 * Otherwise the colours are counted on a reduced cube (5 bits per channel
 * for opaque images, 4 per channel with alpha) and the cube is cut by median
 * cut (Heckbert 1982) into at most 256 boxes, each box's colour the exact
 * mean of the pixels in it.  Each pixel then takes the palette entry nearest
 * its cell's mean.  The caller decides whether the result is faithful from
 * the error measured against the original pixels (quant_result.psnr).
 *
 * Written here rather than taken from libimagequant, pngquant's library,
 * whose licence (GPL-3.0+) vivarium does not take on.  Memory: the index
 * map (one byte a pixel) and a fixed histogram of at most 64 Ki cells.
 */
#ifndef VIVARIUM_QUANT_H
#define VIVARIUM_QUANT_H

#include <stddef.h>
#include <stdint.h>

#define QUANT_MAX_COLORS	256

struct quant_result {
	unsigned char	 palette[QUANT_MAX_COLORS][4];	/* RGBA */
	int		 ncolors;
	int		 exact;		/* every pixel kept its colour */
	int		 translucent;	/* some palette alpha < 255 */
	unsigned char	*index;		/* owned; w * h palette indices */
	double		 psnr;		/* dB over RGBA against the input;
					 * INFINITY when exact */
	double		 max_err;	/* largest channel difference of any pixel */
};

/*
 * Quantises w x h RGBA pixels (rows packed, 4 bytes a pixel) to at most
 * max_colors (2..256) colours.  Returns 0, or -1 when out of memory.
 */
int	quant_image(const unsigned char *rgba, uint32_t w, uint32_t h,
	    int max_colors, struct quant_result *);
void	quant_release(struct quant_result *);

#endif
