/*
 * result.c: the life of a struct run_result (run.h), apart from run.c so
 * that whoever adds to a result (the tools after a sweep, tests with a
 * scripted run_python) does it the same way.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#include "banned.h"

void
run_result_init(struct run_result *res)
{
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	res->report = RUN_REPORT_MISSING;
}

void
run_result_release(struct run_result *res)
{
	size_t	 i;

	free(res->out);
	free(res->err);
	free(res->footer);
	for (i = 0; i < res->nfiles; i++)
		free(res->files[i]);
	free(res->files);
	for (i = 0; i < res->nimages; i++) {
		free(res->images[i].name);
		free(res->images[i].png);
	}
	free(res->images);
	run_result_init(res);
}

/* Appends a sentence to res->note, cutting at a character boundary. */
void
run_result_note(struct run_result *res, const char *fmt, ...)
{
	char		 line[512];
	size_t		 used = strlen(res->note), room, n;
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (used > 0 && used + 1 < sizeof(res->note))
		res->note[used++] = ' ';
	room = sizeof(res->note) - 1 - used;
	n = strlen(line);
	if (n > room) {
		n = room;
		while (n > 0 && ((unsigned char)line[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(res->note + used, line, n);
	res->note[used + n] = '\0';
}
