/*
 * backend.c: the backend conf->backend names (backend.h), and what the
 * implementations share.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "backend.h"
#include "banned.h"

void
backend_sayf(backend_say say, int level, const char *fmt, ...)
{
	char	 msg[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	say(level, msg);
}

struct backend *
backend_new(const struct conf *c, void (*on_error)(const struct berr *))
{
	switch (c->backend) {
	case BACKEND_PODMAN:
		return podman_backend(c, on_error);
	case BACKEND_KUBERNETES:
		return kube_backend(c, on_error);
	}
	errno = EINVAL;
	return NULL;
}
