/*
 * libFuzzer driver for egress-proxy/labels.c: the user labels file.  Built
 * by `make test-fuzz-egress` beside the others.
 *
 * The input is the file's text.  Besides the sanitizers it checks what the
 * log lines rely on, with rules written out here on their own: a table is
 * taken only whole, holds at most LABELS_MAX addresses, each once, sorted;
 * every label is 1 to LABEL_MAX bytes with no byte a log line could be
 * broken or forged with (controls, space, quote, backslash, DEL); and each
 * entry's label stands in the input after a space, at the end of a line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../../egress-proxy/labels.c"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Whether "<space>label" ends a line of data. */
static int
in_input(const uint8_t *data, size_t size, const char *label)
{
	size_t	 n = strlen(label), i;

	for (i = 1; i + n <= size; i++)
		if (data[i - 1] == ' ' && memcmp(data + i, label, n) == 0 &&
		    (i + n == size || data[i + n] == '\n'))
			return 1;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct label	*t;
	size_t		 n, i, k;
	char		 why[256];

	if (labels_parse((const char *)data, size, &t, &n, why,
	    sizeof(why)) == -1) {
		if (t != NULL || why[0] == '\0')
			abort();
		return 0;
	}
	if (n > LABELS_MAX || (n > 0 && t == NULL))
		abort();
	for (i = 0; i < n; i++) {
		k = strlen(t[i].text);
		if (k == 0 || k > LABEL_MAX)
			abort();
		for (; k > 0; k--) {
			unsigned char c = (unsigned char)t[i].text[k - 1];

			if (c <= ' ' || c == 0x7f || c == '"' || c == '\\')
				abort();
		}
		if (t[i].family != AF_INET && t[i].family != AF_INET6)
			abort();
		if (i > 0 && label_cmp(&t[i - 1], &t[i]) >= 0)
			abort();
		if (!in_input(data, size, t[i].text))
			abort();
	}
	free(t);
	return 0;
}
