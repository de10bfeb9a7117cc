/*
 * images.h: copies of the PNGs a run made (wsdiff.h finds them), sized for
 * a model.
 *
 * Each is decoded with libpng (any colour type, bit depth, interlace),
 * averaged down so its longest side fits, and encoded again: as a palette
 * PNG when quant.c's palette is faithful (charts nearly always are), and
 * smaller still when it must fit a byte budget.  The files in the
 * workspace are only read.
 */
#ifndef VIVARIUM_IMAGES_H
#define VIVARIUM_IMAGES_H

#include <stddef.h>

/*
 * Bounds on decoding, so that a decompression bomb (a small file declaring
 * a huge image) is refused before any pixel memory is spent.  Rows are
 * streamed through the scaler, so memory does not grow with the source
 * size, except for interlaced images, which libpng must hold whole.
 */
#define IMG_MAX_PIXELS		(64ULL << 20)
#define IMG_MAX_PIXELS_INTERLACED (16ULL << 20)
#define IMG_MAX_FILE_BYTES	(256ULL << 20)
#define IMG_MAX_OUTPUT_BYTES	(64u << 20)

/*
 * Fitting a byte budget: a palette is used when it is exact or its error
 * stays under what the eye notices on a chart (40 dB PSNR: anti-aliased
 * lines and text pass, photographs and noise do not).  Past the budget the
 * image is averaged down again, at most IMG_FIT_ATTEMPTS encodings in all,
 * never below IMG_MIN_SIDE on its longest side; one that lands under 60%
 * of the budget grows back toward the smallest size known to be over.
 */
#define IMG_QUANT_MIN_PSNR	40.0
#define IMG_MIN_SIDE		48
#define IMG_FIT_ATTEMPTS	8
#define IMG_FIT_GROWS		3	/* of them, back up after a shrink overshot */

struct img_thumb {
	unsigned char	*png;		/* owned; NULL when it did not fit */
	size_t		 len;		/* bytes (of the last attempt, if none fit) */
	int		 width, height;	/* as encoded */
	int		 orig_width, orig_height;
	int		 fit_width, fit_height;	/* after max_side alone */
	int		 colors;	/* palette size, 0 for truecolour */
	int		 shrunk;	/* made smaller than max_side to fit */
	int		 attempts;	/* encodings made */
};

/*
 * Reads workspace/rel (not following a symlink at the end) and makes a PNG
 * whose longest side is at most max_side (an image already small enough
 * keeps its size).  Returns 0, or -1 with errbuf set.
 */
int	img_thumb_file(const char *workspace, const char *rel, int max_side,
	    struct img_thumb *, char *errbuf, size_t errlen);
/* The same from an open descriptor (not closed). */
int	img_thumb_fd(int fd, int max_side, struct img_thumb *, char *errbuf,
	    size_t errlen);
/*
 * As img_thumb_*, and with max_bytes > 0 the PNG is palette-quantised when
 * faithful and made smaller until it is at most max_bytes long.  Returns 0,
 * -1 with errbuf set, or 1 when even the smallest attempt was over the
 * budget (t->png NULL; t->width, height and len say what that attempt was).
 * Memory: the decoder's (one row, or the image when interlaced), one
 * max_side RGBA copy, one smaller copy, and the encoded PNG.
 */
int	img_fit_fd(int fd, int max_side, size_t max_bytes, struct img_thumb *,
	    char *errbuf, size_t errlen);
int	img_fit_file(const char *workspace, const char *rel, int max_side,
	    size_t max_bytes, struct img_thumb *, char *errbuf, size_t errlen);
void	img_thumb_release(struct img_thumb *);

#endif
