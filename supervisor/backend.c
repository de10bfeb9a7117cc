/*
 * backend.c: the backend conf->backend names (backend.h), and what the
 * implementations share.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

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

static const char *
state_name(enum backend_state s)
{
	switch (s) {
	case BK_MISSING:	return "missing";
	case BK_CREATED:	return "created";
	case BK_RUNNING:	return "running";
	case BK_STOPPED:	return "stopped";
	case BK_OTHER:		break;
	}
	return "starting";
}

json_t *
backend_users(struct backend *b, struct berr *e)
{
	struct backend_sandbox	*v;
	struct backend_info	 info;
	json_t			*users;
	size_t			 i, n;

	if (b->list(b, &v, &n, e) == -1)
		return NULL;
	users = json_object();
	for (i = 0; i < n; i++) {
		if (b->inspect(b, v[i].user, &info, e) == -1) {
			json_decref(users);
			free(v);
			return NULL;
		}
		json_object_set_new(users, v[i].user, json_pack("{s:s, s:s}",
		    "user", v[i].user, "state", state_name(info.state)));
		if (info.memory_known)
			json_object_set_new(json_object_get(users, v[i].user),
			    "memory_bytes",
			    json_integer((json_int_t)info.memory_bytes));
	}
	free(v);
	return users;
}

long
backend_idle(const struct conf *c, const char *user)
{
	struct names	 n;
	struct stat	 st;

	if (sandbox_names(c, user, &n) == -1 || stat(n.rundir, &st) == -1)
		return -1;
	return (long)(time(NULL) - st.st_mtime);
}

void
short_size(unsigned long long b, char *dst, size_t len)
{
	if (b >= 1ULL << 30)
		snprintf(dst, len, "%.1fG", (double)b / (double)(1ULL << 30));
	else if (b >= 1ULL << 20)
		snprintf(dst, len, "%.0fM", (double)b / (double)(1ULL << 20));
	else
		snprintf(dst, len, "%lluK", b >> 10);
}

void
short_time(long s, char *dst, size_t len)
{
	if (s < 0)
		snprintf(dst, len, "-");
	else if (s < 120)
		snprintf(dst, len, "%lds", s);
	else if (s < 7200)
		snprintf(dst, len, "%ldm", s / 60);
	else
		snprintf(dst, len, "%ldh", s / 3600);
}

void
image_label(const json_t *u, char *dst, size_t len)
{
	json_t	*cur = json_object_get(u, "image_current");
	json_t	*age = json_object_get(u, "image_age_seconds");
	char	 a[32];

	if (!json_is_boolean(cur)) {
		snprintf(dst, len, "-");
		return;
	}
	if (json_is_integer(age))
		short_time((long)json_integer_value(age), a, sizeof(a));
	else
		snprintf(a, sizeof(a), "?");
	snprintf(dst, len, "%s %s", json_is_true(cur) ? "current" : "OLD", a);
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
