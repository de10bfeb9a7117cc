/*
 * libFuzzer driver for sandbox-agent/images.c: any bytes as a workspace
 * PNG.  img_thumb_fd must not crash or leak, must stay under its pixel and
 * memory caps (libFuzzer's -rss_limit_mb), and a thumbnail it returns fits
 * the side asked for, and the byte budget when one is set.  The first byte
 * picks that side (1 to 64) and, when odd, a budget of 1 KB (so the palette
 * and the shrinking run too); the rest is the file.  Seeds: tests/data/png.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "images.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct img_thumb t;
	char		 err[256];
	size_t		 budget;
	int		 fd, side, rc;

	if (size < 1)
		return 0;
	side = 1 + data[0] % 64;
	budget = data[0] & 1 ? 1024 : 0;
	if ((fd = memfd_create("png", MFD_CLOEXEC)) == -1 ||
	    write(fd, data + 1, size - 1) != (ssize_t)(size - 1))
		abort();
	rc = img_fit_fd(fd, side, budget, &t, err, sizeof(err));
	if (rc == 0) {
		if (t.png == NULL || t.width < 1 || t.height < 1 ||
		    t.width > side || t.height > side ||
		    (budget > 0 && t.len > budget))
			abort();
	} else if (rc == 1 && (budget == 0 || t.png != NULL))
		abort();
	img_thumb_release(&t);
	close(fd);
	return 0;
}
