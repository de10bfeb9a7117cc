/*
 * ctl_user.c: vivariumctl's commands on users and their sandboxes: add-user,
 * remove-user, list, start, stop, status and logs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "ctl.h"
#include "banned.h"

int
cmd_add(int argc, char **argv)
{
	struct berr	 e;
	struct agent_addr addr;
	int		 i, rc = EX_OK, created;

	if (argc < 1) {
		usage(stderr);
		return EX_USAGE;
	}
	for (i = 0; i < argc; i++)
		if (check_id(argv[i]) == -1)
			return EX_USAGE;
	for (i = 0; i < argc; i++) {
		/*
		 * Started right away: that proves the image and limits work,
		 * and leaves no container in "created", which the supervisor
		 * takes for the remains of a crash.  Idle stop puts it to sleep.
		 */
		if (backend->ensure(backend, argv[i], &created, &addr,
		    &e) == -1) {
			rc = fail(&e, argv[i]);
			continue;
		}
		if (json_out)
			print_json(json_pack("{s:s, s:s}", "user", argv[i],
			    "result", "added"));
		else
			printf("%s: added and running (%s vivarium-%s)\n",
			    argv[i], backend->objects, argv[i]);
	}
	return rc;
}

int
cmd_remove(int argc, char **argv)
{
	struct berr	 e;
	int		 i, purge = 0, rc = EX_OK, r;

	purge = take_flag(&argc, &argv, "--purge");
	if (argc < 1) {
		usage(stderr);
		return EX_USAGE;
	}
	for (i = 0; i < argc; i++)
		if (check_user(&argv[i]) == -1)
			return EX_USAGE;
	for (i = 0; i < argc; i++) {
		if ((r = backend->exists(backend, argv[i], &e)) == -1) {
			rc = fail(&e, argv[i]);
			continue;
		}
		if (r == 0) {
			fprintf(stderr, "vivariumctl: %s: no such user\n",
			    argv[i]);
			rc = EX_NOUSER;
			continue;
		}
		if (backend->remove(backend, argv[i], purge, &e) == -1) {
			rc = fail(&e, argv[i]);
			continue;
		}
		if (purge)
			names_forget(&conf, argv[i]);
		if (json_out)
			print_json(json_pack("{s:s, s:s, s:b}", "user", argv[i],
			    "result", "removed", "purged", purge));
		else if (purge)
			printf("%s: removed, %s deleted\n", argv[i],
			    backend->storage);
		else
			printf("%s: removed (%s kept; --purge deletes it)\n",
			    argv[i], backend->storage);
	}
	return rc;
}

int
cmd_list(int argc, char **argv)
{
	struct berr	 e;
	json_t		*users, *arr, *u, *v;
	const char	*id, *state;
	unsigned long long mem;
	char		 ms[32], is[32], ds[32], img[48];
	char		 name[NAME_MAX_BYTES + 8];
	long		 idle;

	if (argc != 0) {
		usage(stderr);
		return EX_USAGE;
	}
	if ((users = backend->users(backend, &e)) == NULL)
		return fail(&e, NULL);
	arr = json_array();
	if (!json_out)
		printf("%-26s %-24s %-10s %8s %8s %6s  %s\n", "USER", "NAME",
		    "STATE", "MEMORY", "DISK", "IDLE", "IMAGE");
	json_object_foreach(users, id, u) {
		state = json_string_value(json_object_get(u, "state"));
		mem = (unsigned long long)json_integer_value(json_object_get(u,
		    "memory_bytes"));
		if ((v = json_object_get(u, "idle_seconds")) != NULL)
			idle = (long)json_integer_value(v);
		else if ((idle = backend_idle(&conf, id)) >= 0)
			json_object_set_new(u, "idle_seconds",
			    json_integer(idle));
		snprintf(ds, sizeof(ds), "-");
		if ((v = json_object_get(u, "disk_used_bytes")) != NULL)
			short_size((unsigned long long)json_integer_value(v),
			    ds, sizeof(ds));
		image_label(u, img, sizeof(img));
		if (names_get(&conf, id, name, sizeof(name)) == 0)
			json_object_set_new(u, "name", json_string(name));
		else
			snprintf(name, sizeof(name), "-");
		json_array_append(arr, u);
		if (!json_out) {
			if (mem > 0)
				short_size(mem, ms, sizeof(ms));
			else
				snprintf(ms, sizeof(ms), "-");
			short_time(idle, is, sizeof(is));
			printf("%-26s %-24s %-10s %8s %8s %6s  %s\n", id, name,
			    state, ms, ds, is, img);
		}
	}
	json_decref(users);
	if (json_out)
		print_json(arr);
	else
		json_decref(arr);
	return EX_OK;
}

/*
 * What start and stop begin with: one argument, a valid id, and something
 * in Podman for that user.  Returns EX_OK to go on, else the exit status.
 */
static int
known_user(int argc, char **argv)
{
	struct berr	 e;
	int		 r;

	if (one_user(argc, argv) == -1)
		return EX_USAGE;
	if ((r = backend->exists(backend, argv[0], &e)) == -1)
		return fail(&e, argv[0]);
	if (r == 0) {
		fprintf(stderr, "vivariumctl: %s: no such user (add-user "
		    "first)\n", argv[0]);
		return EX_NOUSER;
	}
	return EX_OK;
}

int
cmd_start(int argc, char **argv)
{
	struct berr	 e;
	struct agent_addr addr;
	int		 created, r;

	if ((r = known_user(argc, argv)) != EX_OK)
		return r;
	if (backend->ensure(backend, argv[0], &created, &addr, &e) == -1)
		return fail(&e, argv[0]);
	if (json_out)
		print_json(json_pack("{s:s, s:s}", "user", argv[0], "state",
		    "running"));
	else
		printf("%s: running and answering\n", argv[0]);
	return EX_OK;
}

int
cmd_stop(int argc, char **argv)
{
	struct berr	 e;
	int		 r;

	if ((r = known_user(argc, argv)) != EX_OK)
		return r;
	if (backend->stop(backend, argv[0], &e) == -1)
		return fail(&e, argv[0]);
	if (json_out)
		print_json(json_pack("{s:s, s:s}", "user", argv[0], "state",
		    "stopped"));
	else
		printf("%s: stopped\n", argv[0]);
	return EX_OK;
}

/* A JSON object for people: its fields one a line, sizes made short. */
static void
print_fields(json_t *d)
{
	json_t		*v;
	const char	*k;
	char		 s[64];

	json_object_foreach(d, k, v) {
		if (json_is_string(v))
			printf("%-22s %s\n", k, json_string_value(v));
		else if (json_is_boolean(v))
			printf("%-22s %s\n", k, json_is_true(v) ? "yes" : "no");
		else if (json_is_integer(v) && strstr(k, "bytes") != NULL) {
			short_size((unsigned long long)json_integer_value(v), s,
			    sizeof(s));
			printf("%-22s %s\n", k, s);
		} else if (json_is_object(v) || json_is_array(v)) {
			char *t = json_dumps(v, JSON_COMPACT);

			printf("%-22s %s\n", k, t != NULL ? t : "?");
			free(t);
		} else if (!json_is_null(v)) {
			char *t = json_dumps(v, JSON_ENCODE_ANY);

			printf("%-22s %s\n", k, t != NULL ? t : "?");
			free(t);
		}
	}
}

/*
 * The backend's describe, as JSON, in the backend's own layout, or its
 * fields one a line.
 */
int
cmd_status(int argc, char **argv)
{
	struct berr	 e;
	struct buf	 text = BUF_INIT(1 << 16);
	json_t		*d;
	const char	*state;
	long		 idle;
	int		 r, rc;

	if (one_user(argc, argv) == -1)
		return EX_USAGE;
	if ((r = backend->exists(backend, argv[0], &e)) == -1)
		return fail(&e, argv[0]);
	if (r == 0) {
		fprintf(stderr, "vivariumctl: %s: no such user\n", argv[0]);
		return EX_NOUSER;
	}
	if ((d = backend->describe(backend, argv[0], json_out ? NULL : &text,
	    &e)) == NULL) {
		buf_release(&text);
		return fail(&e, argv[0]);
	}
	state = json_string_value(json_object_get(d, "state"));
	rc = state != NULL && strcmp(state, "running") == 0 ? EX_OK
	    : EX_NOTRUNNING;
	if (json_object_get(d, "idle_seconds") == NULL
	    && (idle = backend_idle(&conf, argv[0])) >= 0)
		json_object_set_new(d, "idle_seconds", json_integer(idle));
	if (json_out) {
		print_json(d);
		return rc;
	}
	if (text.len > 0)
		fputs(buf_str(&text), stdout);
	else
		print_fields(d);
	buf_release(&text);
	json_decref(d);
	return rc;
}

/* ---------------------------------------------------------------- logs */

int
cmd_logs(int argc, char **argv)
{
	struct berr	 e;
	int		 r;

	if (one_user(argc, argv) == -1)
		return EX_USAGE;
	if ((r = backend->logs(backend, argv[0], &e)) != -1)
		return r == 0 ? EX_OK : EX_FAIL;
	if (e.status == 501) {
		fprintf(stderr, "vivariumctl: %s\n", e.msg);
		return EX_USAGE;
	}
	if (e.status == 404) {
		fprintf(stderr, "vivariumctl: %s: %s\n", argv[0], e.msg);
		return EX_NOUSER;
	}
	return fail(&e, argv[0]);
}
