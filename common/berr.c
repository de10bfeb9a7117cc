/*
 * berr.c: struct berr (berr.h), in common/ so that the supervisor's
 * backends, the Podman and Kubernetes clients under them and the file
 * links of both programs fill the same error.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "berr.h"
#include "banned.h"

void
berr_set(struct berr *e, long status, const char *fmt, ...)
{
	va_list	 ap;

	memset(e, 0, sizeof(*e));
	e->status = status;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}
