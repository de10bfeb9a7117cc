/*
 * libFuzzer driver for what a link's token and an upload's file name go
 * through before anything else looks at them: link_verify (common/link.c)
 * and fw_clean_name (common/fileweb.c).  Both take bytes from anyone with
 * a browser.  Besides the sanitizers it checks their promises: only a
 * token signed with our key passes, whatever else the input holds; a
 * cleaned name is never empty, never has a '/', a control character, an
 * invisible one (bidi, zero-width) or a leading dot, is valid UTF-8 and is
 * stable (cleaning it again changes
 * nothing).  Built and run by `make test-fuzz-agent`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fileweb.h"
#include "link.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
utf8_ok(const unsigned char *s)
{
	size_t n;

	while (*s) {
		if (*s < 0x80)
			n = 1;
		else if ((*s & 0xe0) == 0xc0)
			n = 2;
		else if ((*s & 0xf0) == 0xe0)
			n = 3;
		else if ((*s & 0xf8) == 0xf0)
			n = 4;
		else
			return 0;
		while (--n > 0)
			if ((*++s & 0xc0) != 0x80)
				return 0;
		s++;
	}
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct link_keys	 k;
	struct link		 l;
	struct buf		 t = BUF_INIT(1 << 16);
	char			*s, out[256], again[256];
	size_t			 i;
	int			 seq;

	if (!k.have_master) {
		memset(k.master, 0x5a, sizeof(k.master));
		k.have_master = 1;
	}
	/* Any bytes as a token: never accepted unless it is our own. */
	if (link_verify(&k, (const char *)data, size, 1800000000, 86400, &l)
	    == LINK_OK) {
		if (link_mint(&k, &l, &t) != 0 || t.len != size ||
		    memcmp(t.data, data, size) != 0)
			abort();	/* accepted something we did not sign */
	}
	buf_release(&t);

	/* Any bytes as a file name. */
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	fw_clean_name(s, out, sizeof(out));
	if (out[0] == '\0' || out[0] == '.' || out[0] == ' ' ||
	    strchr(out, '/') != NULL || strchr(out, '\\') != NULL ||
	    !utf8_ok((const unsigned char *)out))
		abort();
	for (i = 0; out[i] != '\0'; i += (size_t)seq) {
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			abort();
		seq = utf8_seq((const unsigned char *)out + i, strlen(out + i));
		if (seq <= 0 || unicode_invisible(utf8_code(
		    (const unsigned char *)out + i, seq)))
			abort();
	}
	fw_clean_name(out, again, sizeof(again));
	if (strcmp(out, again) != 0)
		abort();
	free(s);
	return 0;
}
