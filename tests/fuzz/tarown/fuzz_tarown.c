/*
 * fuzz_tarown.c: the tar vivariumctl import passes on (supervisor/tarown.c)
 * under libFuzzer.  The file is the operator's, but it may be a stranger's
 * backup: headers, sizes, PAX records and truncation must never crash or
 * overrun, and whatever passes is whole blocks with valid checksums.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../../supervisor/tarown.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A header tarown passed: its checksum must hold. */
static void
check(const char *h)
{
	unsigned long	 sum = 0, want;
	size_t		 i;

	for (i = 0; i < 512 && h[i] == '\0'; i++)
		;
	if (i == 512)
		return;
	for (i = 0; i < 512; i++)
		sum += (i >= 148 && i < 156) ? ' ' : (unsigned char)h[i];
	want = strtoul(h + 148, NULL, 8);
	if (sum != want)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char	 out[8192];
	struct tarown	 t;
	ssize_t		 r;
	size_t		 chunk;
	int		 fd;

	if ((fd = memfd_create("fuzz", 0)) == -1)
		return 0;
	if (write(fd, data, size) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return 0;
	}
	/* The reads' size varies with the input, as pipes' do. */
	chunk = 512 * (1 + (size % 16));
	if (tarown_open(&t, fd, 1000, 1000) == 0) {
		while ((r = tarown_source(&t, out, chunk)) > 0)
			if (t.pos == (unsigned long long)r)
				check(out);	/* the first header, rewritten */
		/* The end: an error said, or the end-of-archive blocks. */
		if ((r == -1 && t.err[0] == '\0') || (r == 0 && !t.ended))
			abort();
	}
	close(fd);
	return 0;
}
