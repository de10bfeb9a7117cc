/*
 * ctl_admin.c: vivariumctl's commands on the service as a whole: upgrade
 * (sandboxes onto the current image), doctor, and render (quadlets, or
 * with --kubernetes the objects the kubernetes backend makes).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ctl.h"
#include "banned.h"

/* ---------------------------------------------------------------- upgrade */

/*
 * Whether a running sandbox may be stopped now: its agent serves no other
 * request and runs nothing (background jobs included).  An agent from
 * before it said so answers a bare "ok": then no request for as long as
 * the longest one may last (agent_timeout; the supervisor marks the run
 * directory as each request starts and ends).  why gets the reason for no.
 */
static int
sandbox_idle(const char *user, char *why, size_t len)
{
	struct names	 n;
	struct agent_addr a;
	long		 idle;
	int		 requests, runs;

	if (sandbox_names(&conf, user, &n) == -1) {
		snprintf(why, len, "its run directory is not known");
		return 0;
	}
	agent_addr_unix(&a, n.sock);
	if (agent_busy(&a, 5000, &requests, &runs) == 0) {
		if (requests == 0 && runs == 0)
			return 1;
		snprintf(why, len, "busy: %d request%s and %d run%s in progress",
		    requests, requests == 1 ? "" : "s", runs, runs == 1 ? "" :
		    "s");
		return 0;
	}
	idle = backend_idle(&conf, user);
	if (idle >= (long)conf.agent_timeout)
		return 1;
	snprintf(why, len, "its agent does not say whether it is busy, and its "
	    "last request was %lds ago (less than agent_timeout, %lds)", idle,
	    (long)conf.agent_timeout);
	return 0;
}

/*
 * One user's sandbox onto the image the config names now, when it has
 * another.  A stopped one is made again, started until it answers and
 * stopped again, as it was; a running one only when idle (sandbox_idle):
 * stopped, made again and started; a busy one is left to move at its next
 * idle stop (the supervisor does that).  The workspace volume, and the
 * namespace store in it, are the same before and after.  Returns what was
 * done ("current", "upgraded", "busy", "missing") or NULL with e.
 */
static const char *
upgrade_one(json_t *u, char *why, size_t len, struct berr *e)
{
	struct agent_addr addr;
	const char	*id, *state, *image;
	int		 created;

	id = json_string_value(json_object_get(u, "user"));
	state = json_string_value(json_object_get(u, "state"));
	image = json_string_value(json_object_get(u, "image_id"));
	why[0] = '\0';
	if (image == NULL) {
		snprintf(why, len, "no container: one is made from the current "
		    "image at its next use");
		return "missing";
	}
	/* users() says whether it is the configured image, when it can. */
	if (!json_is_boolean(json_object_get(u, "image_current"))) {
		berr_set(e, 500, "the image %.64s of its container could not be "
		    "compared with %s", image, conf.image);
		return NULL;
	}
	if (json_is_true(json_object_get(u, "image_current")))
		return "current";
	if (strcmp(state, "running") == 0) {
		if (!sandbox_idle(id, why, len))
			return "busy";
		if (backend->stop(backend, id, e) == -1
		    || backend->ensure(backend, id, &created, &addr, e) == -1)
			return NULL;
		snprintf(why, len, "running again");
		return "upgraded";
	}
	if (backend->ensure(backend, id, &created, &addr, e) == -1
	    || backend->stop(backend, id, e) == -1)
		return NULL;
	snprintf(why, len, "stopped again, as it was");
	return "upgraded";
}

int
cmd_upgrade(int argc, char **argv)
{
	struct berr	 e;
	json_t		*users, *u, *out, *want = NULL;
	const char	*id, *done;
	char		 why[256];
	int		 all, i, rc = EX_OK;

	all = take_flag(&argc, &argv, "--all");
	if ((all && argc != 0) || (!all && argc == 0)) {
		usage(stderr);
		return EX_USAGE;
	}
	if (refused("upgrade"))
		return EX_USAGE;
	want = json_object();
	for (i = 0; i < argc; i++) {
		if (check_user(&argv[i]) == -1) {
			json_decref(want);
			return EX_USAGE;
		}
		json_object_set_new(want, argv[i], json_true());
	}
	if ((users = backend->users(backend, &e)) == NULL) {
		json_decref(want);
		return fail(&e, NULL);
	}
	for (i = 0; i < argc; i++)
		if (json_object_get(users, argv[i]) == NULL) {
			fprintf(stderr, "vivariumctl: %s: no such user\n",
			    argv[i]);
			rc = EX_NOUSER;
		}
	out = json_array();
	json_object_foreach(users, id, u) {
		if (!all && json_object_get(want, id) == NULL)
			continue;
		if ((done = upgrade_one(u, why, sizeof(why), &e)) == NULL) {
			json_array_append_new(out, json_pack("{s:s, s:s, s:s}",
			    "user", id, "result", "failed", "error", e.msg));
			if (!json_out)
				fprintf(stderr, "vivariumctl: %s: %s\n", id,
				    e.msg);
			rc = EX_FAIL;
			continue;
		}
		json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "user",
		    id, "result", done, "note", why));
		if (json_out)
			continue;
		if (strcmp(done, "current") == 0)
			printf("%s: already on the current image\n", id);
		else if (strcmp(done, "upgraded") == 0)
			printf("%s: made again from the current image, files and "
			    "namespace kept; %s\n", id, why);
		else if (strcmp(done, "busy") == 0)
			printf("%s: left as it is (%s); it moves to the current "
			    "image at its next idle stop\n", id, why);
		else
			printf("%s: %s\n", id, why);
	}
	if (json_out)
		print_json(out);
	else
		json_decref(out);
	json_decref(users);
	json_decref(want);
	return rc;
}

/* ---------------------------------------------------------------- doctor */

int
cmd_doctor(int argc, char **argv)
{
	struct berr	 e;
	const char	*fetch = NULL;
	int		 r;

	if (argc == 2 && strcmp(argv[0], "--fetch") == 0)
		fetch = argv[1];
	else if (argc != 0) {
		usage(stderr);
		return EX_USAGE;
	}
	if (fetch != NULL && strncmp(fetch, "http://", 7) != 0
	    && strncmp(fetch, "https://", 8) != 0) {
		fprintf(stderr, "vivariumctl: doctor --fetch \"%s\": expected "
		    "an http:// or https:// URL\n", fetch);
		return EX_USAGE;
	}
	if ((r = backend->doctor(backend, fetch, json_out, &e)) != -1)
		return r == 0 ? EX_OK : EX_FAIL;
	fprintf(stderr, "vivariumctl: %s\n", e.msg);
	return EX_USAGE;
}

/* ---------------------------------------------------------------- render */

int
cmd_render(int argc, char **argv)
{
	char	 tdir[PATH_MAX];

	if (argc < 1 || argc > 2) {
		usage(stderr);
		return EX_USAGE;
	}
	if (check_user(&argv[0]) == -1)
		return EX_USAGE;
	render_template_dir(template_dir, tdir, sizeof(tdir));
	if (render_quadlets(&conf, argv[0], tdir, argc == 2 ? argv[1] : ".")
	    == -1)
		return EX_FAIL;
	return EX_OK;
}

/*
 * No cluster needed: the objects are built from the configuration alone,
 * with the uid slot 0 (none given yet) unless the claim is known: with
 * backend: kubernetes, the cluster is asked for it when it can be.
 */
int
cmd_render_kube(int argc, char **argv)
{
	struct backend	*b;
	struct berr	 e;
	json_t		*d;
	long		 slot = 0;
	int		 userns = -1;

	if (one_user(argc, argv) == -1)
		return EX_USAGE;
	if (conf.backend == BACKEND_KUBERNETES
	    && (b = backend_new(&conf, NULL)) != NULL) {
		if ((d = b->describe(b, argv[0], NULL, &e)) == NULL)
			fprintf(stderr, "vivariumctl: the uid is not known (%s): "
			    "slot 0\n", e.msg);
		else if (json_integer_value(json_object_get(d, "uid")) >
		    conf.kube.uid_base)
			slot = (long)json_integer_value(json_object_get(d,
			    "uid")) - conf.kube.uid_base;
		if (json_is_boolean(json_object_get(d, "user_namespace")))
			userns = json_is_true(json_object_get(d,
			    "user_namespace"));
		json_decref(d);
		b->free(b);
	}
	return render_kube(&conf, argv[0], slot, userns, stdout) == -1 ? EX_FAIL
	    : EX_OK;
}
