/*
 * berr.c: the backend seam's error (struct berr, backend.h), apart from
 * backend.c so that the clients under the backends (podman.c, kube.c) and
 * their tests link it without the backends.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
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
