/*
 * ctl.c: vivariumctl, the operator's tool for per-user sandboxes.  It reads
 * the supervisor's configuration and talks to the same backend (Podman,
 * or the Kubernetes API server) with the same client, so both see the
 * same objects.
 *
 * Exit codes (for scripts):
 *   0  done (status: the sandbox is running)
 *   1  the backend refused or something else failed
 *   2  usage or configuration error
 *   3  no such user (nothing labelled for it)
 *   4  Podman (or the API server) is not reachable
 *   5  status: the sandbox exists but is not running
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "buf.h"
#include "config.h"
#include "log.h"
#include "backend.h"
#include "tarown.h"
#include "banned.h"

#define EX_OK		0
#define EX_FAIL		1
#define EX_USAGE	2
#define EX_NOUSER	3
#define EX_PODMAN	4
#define EX_NOTRUNNING	5
#define EX_EXISTS	100	/* import_fd only: the user exists; never an exit code */

#define DEFAULT_CONF	"/etc/vivarium/supervisor.yaml"

static struct conf	 conf;
/* The sandboxes, through the backend only (render's quadlets open their
 * own Podman client, render.c). */
static struct backend	*backend;
static int		 json_out;

/*
 * The commands: one function each, found by name (render --kubernetes by
 * its flag too), with what --help says of it: the synopsis, then what it
 * does, as --help wraps it.
 */
#define CMD_NO_BACKEND	0x1	/* runs before the backend is made */

struct command {
	const char	*name;
	const char	*flag;		/* NULL, or the first argument it takes */
	int		(*fn)(int, char **);
	int		 flags;
	const char	*synopsis;
	const char	*help;
};

static const struct command	commands[];
static const char		*template_dir;	/* -t */

static void
usage(FILE *f)
{
	const struct command	*c;
	const char		*p, *nl;
	int			 first;

	fputs(
"usage: vivariumctl [-hvV] [-f config.yaml] [-t dir] [--json] COMMAND [ARGS]\n"
"\n"
"Manages the supervisor's sandboxes through its backend (Podman or\n"
"Kubernetes), one user at a time.\n"
"\n"
"Commands (USER: a user id, or the name LibreChat sends for one in\n"
"user_name_header, X-User-Name, where the command takes an existing user):\n",
	    f);
	for (c = commands; c->name != NULL; c++) {
		first = strlen(c->synopsis) < 26;
		fprintf(f, first ? "  %-26s" : "  %s\n", c->synopsis);
		for (p = c->help; *p != '\0'; p = *nl ? nl + 1 : nl) {
			if ((nl = strchr(p, '\n')) == NULL)
				nl = p + strlen(p);
			fprintf(f, "%*s%.*s\n", first ? 0 : 28, "",
			    (int)(nl - p), p);
			first = 0;
		}
	}
	fprintf(f,
"\n"
"Options:\n"
"  -f FILE        supervisor configuration (default %s when\n"
"                 present; not root: also\n"
"                 $XDG_CONFIG_HOME/vivarium/supervisor.yaml)\n"
"  -t DIR         template directory for render (default: templates/ next\n"
"                 to the program, then ../share/vivarium/templates from it,\n"
"                 then /usr/share/vivarium/templates)\n"
"  --json         machine-readable output\n"
"  -v             verbose logging\n"
"  -h, --help     print this text and exit\n"
"  -V, --version  print the version and exit\n"
"\n"
"Exit codes: 0 ok (status: running), 1 failed, 2 usage or config error,\n"
"3 no such user, 4 Podman (or the API server) not reachable, 5 status: not\n"
"running.\n",
	    DEFAULT_CONF);
}

static int
exit_for(const struct berr *e)
{
	return e->status == 0 ? EX_PODMAN : EX_FAIL;
}

static int
fail(const struct berr *e, const char *user)
{
	if (json_out) {
		json_t *j = json_pack("{s:s?, s:s, s:i}", "user", user, "error",
		    e->msg, "status", (int)e->status);
		json_dumpf(j, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(j);
	} else
		fprintf(stderr, "vivariumctl: %s%s%s\n", user ? user : "",
		    user ? ": " : "", e->msg);
	return exit_for(e);
}

/* True, said, when the backend does not do the command (backend.h). */
static int
refused(const char *command)
{
	const char	*why;

	if (backend->refuses == NULL
	    || (why = backend->refuses(backend, command)) == NULL)
		return 0;
	fprintf(stderr, "vivariumctl: %s\n", why);
	return 1;
}

/* A command's leading flag: taken off the arguments, 1 when it was there. */
static int
take_flag(int *argc, char ***argv, const char *flag)
{
	if (*argc == 0 || strcmp((*argv)[0], flag) != 0)
		return 0;
	(*argc)--;
	(*argv)++;
	return 1;
}

/* A user id, as a new user is named (add-user, import). */
static int
check_id(const char *user)
{
	if (user_id_valid(user, strlen(user)) == 0)
		return 0;
	fprintf(stderr, "vivariumctl: \"%s\": %s\n", user, user_id_rule);
	return -1;
}

/*
 * An existing user, by id or by the name LibreChat sent for them
 * (names.c): *user becomes the id.  An id wins over a name; a name two
 * users share is refused, with both ids.
 */
static int
check_user(char **user)
{
	char	 id[USER_ID_MAX + 1], *dup;
	int	 n;

	if (user_id_valid(*user, strlen(*user)) == 0)
		return 0;
	if (names_find(&conf, *user, id, sizeof(id), &n) == 0 && n == 1) {
		if ((dup = strdup(id)) == NULL)
			return -1;
		*user = dup;	/* lives as long as argv */
		return 0;
	}
	if (n > 1)
		fprintf(stderr, "vivariumctl: \"%s\" names %d users (%s, ...): "
		    "give the id (vivariumctl list)\n", *user, n, id);
	else
		fprintf(stderr, "vivariumctl: \"%s\" is neither a user id nor "
		    "the name of one (vivariumctl list shows both); %s\n",
		    *user, user_id_rule);
	return -1;
}

static void
print_json(json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(j);
}

/* ---------------------------------------------------------------- commands */

static int
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

static int
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

static int
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

	if (argc != 1) {
		usage(stderr);
		return EX_USAGE;
	}
	if (check_user(&argv[0]) == -1)
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

static int
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

static int
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
static int
cmd_status(int argc, char **argv)
{
	struct berr	 e;
	struct buf	 text = BUF_INIT(1 << 16);
	json_t		*d;
	const char	*state;
	long		 idle;
	int		 r, rc;

	if (argc != 1) {
		usage(stderr);
		return EX_USAGE;
	}
	if (check_user(&argv[0]) == -1)
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

/* ---------------------------------------------------------------- export */

/*
 * A user's workspace (their files and, in .vivarium/, the namespace
 * store) as one tar, straight from Podman's archive endpoint of the user's
 * container: it reads the volume whether the container runs or not.
 */
/* The user's workspace as a tar to fd; an exit status. */
static int
export_fd(const char *user, int fd)
{
	struct berr	 e;
	int		 r;

	if ((r = backend->exists(backend, user, &e)) == -1)
		return fail(&e, user);
	if (r == 0) {
		fprintf(stderr, "vivariumctl: %s: no such user\n", user);
		return EX_NOUSER;
	}
	if (backend->export_ws(backend, user, fd, &e) == -1) {
		if (e.status == 404 || e.status == 410)
			fprintf(stderr, "vivariumctl: %s: %s\n", user, e.msg);
		else
			(void)fail(&e, user);
		return e.status == 404 ? EX_NOUSER : exit_for(&e);
	}
	return EX_OK;
}

static int
cmd_export(int argc, char **argv)
{
	int		 r;

	json_out = 0;	/* standard output is the tar */
	if (argc != 1) {
		usage(stderr);
		return EX_USAGE;
	}
	if (check_user(&argv[0]) == -1)
		return EX_USAGE;
	if (isatty(STDOUT_FILENO)) {
		fprintf(stderr, "vivariumctl: export writes a tar to standard "
		    "output: vivariumctl export %s > %s.tar\n", argv[0], argv[0]);
		return EX_USAGE;
	}
	if ((r = export_fd(argv[0], STDOUT_FILENO)) == EX_OK)
		fprintf(stderr, "%s: workspace exported\n", argv[0]);
	return r;
}

/*
 * The reverse of export, into a user who has no workspace yet (made here as
 * add-user would); a user with one is refused unless --replace, which
 * deletes it (remove-user --purge) first: a merge of two workspaces and two
 * namespace stores would be neither.
 */
/*
 * A tar from export (read from fd, named what in messages) into the
 * user's new workspace; replace deletes an existing one first (*replaced
 * says whether there was one).  An exit status.
 */
static int
import_fd(const char *user, int fd, const char *what, int replace,
    int *replaced)
{
	struct berr	 e;
	struct agent_addr addr;
	struct tarown	 t;
	unsigned int	 uid = 0, gid = 0;
	int		 r, created;

	*replaced = 0;
	/*
	 * Checked before anything is changed: the first header.  A name
	 * for the sandbox's user, not ids: Podman gives them to it anyway.
	 */
	if (sscanf(conf.sandbox_user, "%u:%u", &uid, &gid) != 2)
		uid = gid = 0;
	if (tarown_open(&t, fd, uid, gid) == -1) {
		fprintf(stderr, "vivariumctl: %s: %s (vivariumctl export makes "
		    "one); nothing was changed\n", what, t.err);
		return EX_FAIL;
	}
	if ((r = backend->exists(backend, user, &e)) == -1)
		return fail(&e, user);
	if (r == 1 && !replace) {
		fprintf(stderr, "vivariumctl: %s already has a sandbox and a "
		    "workspace; importing would overwrite them.  --replace "
		    "deletes them first (export them before, to keep a copy)\n",
		    user);
		return EX_EXISTS;
	}
	if (r == 1 && backend->remove(backend, user, 1, &e) == -1)
		return fail(&e, user);
	*replaced = r == 1;
	if (backend->ensure(backend, user, &created, &addr, &e) == -1)
		return fail(&e, user);
	if (backend->import_ws(backend, user, tarown_source, &t, &e) == -1) {
		if (t.err[0] == '\0')
			return fail(&e, user);
		fprintf(stderr, "vivariumctl: %s: %s.  The workspace may hold "
		    "part of it: import --replace %s with a whole file\n",
		    user, t.err, user);
		return EX_FAIL;
	}
	return EX_OK;
}

static int
cmd_import(int argc, char **argv)
{
	int	 r, replace = 0, replaced;

	replace = take_flag(&argc, &argv, "--replace");
	if (argc != 1) {
		usage(stderr);
		return EX_USAGE;
	}
	if (check_id(argv[0]) == -1)
		return EX_USAGE;
	/* Refused before anything is made for the user. */
	if (refused("import"))
		return EX_FAIL;
	if (isatty(STDIN_FILENO)) {
		fprintf(stderr, "vivariumctl: import reads a tar from standard "
		    "input: vivariumctl import %s < %s.tar\n", argv[0], argv[0]);
		return EX_USAGE;
	}
	if ((r = import_fd(argv[0], STDIN_FILENO, "standard input", replace,
	    &replaced)) != EX_OK)
		return r == EX_EXISTS ? EX_FAIL : r;
	if (json_out)
		print_json(json_pack("{s:s, s:s, s:b}", "user", argv[0],
		    "result", "imported", "replaced", replaced));
	else
		printf("%s: workspace imported%s; the sandbox runs\n", argv[0],
		    replaced ? " (the old one deleted)" : "");
	return EX_OK;
}

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

static int
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

/* ---------------------------------------------------------------- logs */

static int
cmd_logs(int argc, char **argv)
{
	struct berr	 e;
	int		 r;

	if (argc != 1) {
		usage(stderr);
		return EX_USAGE;
	}
	if (check_user(&argv[0]) == -1)
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

/* ---------------------------------------------------------------- doctor */

static int
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

/* ---------------------------------------------------------------- backup */

/*
 * A backup is a directory: MANIFEST (what it holds, JSON), the config file,
 * the proxy's config, the token and the link key (0600), the users' names,
 * and each user's workspace as the tar export makes (their files and
 * namespace store: only what they hold, so a 5 GB sparse quota image with
 * 20 MB in it is a 20 MB tar).
 */
#define BACKUP_MANIFEST	"MANIFEST"

/* Copies src to dir/name with mode; 0, or -1 said. */
static int
copy_file(const char *src, const char *dir, const char *name, mode_t mode)
{
	char	 dst[PATH_MAX], buf[65536];
	ssize_t	 n;
	int	 in, out, r = 0;

	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	if ((in = open(src, O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(stderr, "vivariumctl: %s: %s\n", src, strerror(errno));
		return -1;
	}
	if ((out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, mode)) == -1) {
		fprintf(stderr, "vivariumctl: %s: %s\n", dst, strerror(errno));
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			r = -1;
			break;
		}
	if (n < 0 || fchmod(out, mode) == -1 || close(out) == -1)
		r = -1;
	close(in);
	if (r == -1)
		fprintf(stderr, "vivariumctl: writing %s: %s\n", dst,
		    strerror(errno));
	return r;
}

static int
cmd_backup(int argc, char **argv)
{
	struct berr	 e;
	json_t		*users, *u, *man, *list;
	const char	*id, *dir;
	char		 path[PATH_MAX], name[NAME_MAX_BYTES + 8];
	int		 fd, rc = EX_OK, r;

	if (argc != 1) {
		usage(stderr);
		return EX_USAGE;
	}
	dir = argv[0];
	if (refused("backup"))
		return EX_USAGE;
	/* A new directory, never one that holds anything. */
	if (mkdir(dir, 0700) == -1) {
		fprintf(stderr, "vivariumctl: backup %s: %s (give a directory "
		    "that does not exist yet)\n", dir, strerror(errno));
		return EX_USAGE;
	}
	snprintf(path, sizeof(path), "%s/users", dir);
	if (mkdir(path, 0700) == -1) {
		fprintf(stderr, "vivariumctl: %s: %s\n", path, strerror(errno));
		return EX_FAIL;
	}
	if ((users = backend->users(backend, &e)) == NULL)
		return fail(&e, NULL);
	list = json_array();
	man = json_pack("{s:s, s:I, s:o}", "vivarium", VIVARIUM_VERSION,
	    "created", (json_int_t)time(NULL), "users", list);
	if (conf.path != NULL && copy_file(conf.path, dir, "supervisor.yaml",
	    0600) == -1)
		rc = EX_FAIL;
	if (conf.egress_config != NULL && copy_file(conf.egress_config, dir,
	    "egress.yaml", 0600) == -1)
		rc = EX_FAIL;
	if (conf.token_file != NULL && copy_file(conf.token_file, dir, "token",
	    0600) == -1)
		rc = EX_FAIL;
	if (copy_file(conf.link_key_file, dir, "link.key", 0600) == -1)
		rc = EX_FAIL;
	json_object_foreach(users, id, u) {
		snprintf(path, sizeof(path), "%s/users/%s.tar", dir, id);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		    0600)) == -1) {
			fprintf(stderr, "vivariumctl: %s: %s\n", path,
			    strerror(errno));
			rc = EX_FAIL;
			continue;
		}
		r = export_fd(id, fd);
		if (close(fd) == -1 || r != EX_OK) {
			(void)unlink(path);
			fprintf(stderr, "vivariumctl: %s: not backed up\n", id);
			rc = EX_FAIL;
			continue;
		}
		u = json_pack("{s:s}", "user", id);
		if (names_get(&conf, id, name, sizeof(name)) == 0)
			json_object_set_new(u, "name", json_string(name));
		json_array_append_new(list, u);
		if (!json_out)
			printf("%s: workspace backed up%s%s\n", id,
			    json_object_get(u, "name") ? " " : "",
			    json_object_get(u, "name") ? name : "");
	}
	json_decref(users);
	snprintf(path, sizeof(path), "%s/" BACKUP_MANIFEST, dir);
	if (json_dump_file(man, path, JSON_INDENT(2)) == -1) {
		fprintf(stderr, "vivariumctl: cannot write %s\n", path);
		rc = EX_FAIL;
	}
	if (json_out)
		print_json(json_incref(man));
	else
		printf("backup in %s: %zu user(s)%s\n", dir, json_array_size(list),
		    rc == EX_OK ? "" : "; SOME PARTS FAILED (see above)");
	json_decref(man);
	return rc;
}

/* Puts a file of the backup where the config says it lives; one there
 * already that differs is kept beside it as NAME.before-restore. */
static int
restore_file(const char *dir, const char *name, const char *dst)
{
	char	 src[PATH_MAX], keep[PATH_MAX], cmd_dir[PATH_MAX], *slash;
	struct stat st;

	snprintf(src, sizeof(src), "%s/%s", dir, name);
	if (stat(src, &st) == -1)
		return 0;	/* not in this backup */
	if (stat(dst, &st) == 0) {
		snprintf(keep, sizeof(keep), "%s.before-restore", dst);
		if (rename(dst, keep) == -1) {
			fprintf(stderr, "vivariumctl: %s: %s\n", dst,
			    strerror(errno));
			return -1;
		}
		printf("%s: the one there was kept as %s\n", dst, keep);
	}
	snprintf(cmd_dir, sizeof(cmd_dir), "%s", dst);
	if ((slash = strrchr(cmd_dir, '/')) == NULL)
		return -1;
	*slash = '\0';
	if (copy_file(src, cmd_dir, slash + 1, 0600) == -1)
		return -1;
	printf("%s: restored\n", dst);
	return 0;
}

static int
cmd_restore(int argc, char **argv)
{
	json_t		*man, *u;
	json_error_t	 jerr;
	const char	*dir, *id, *name;
	char		 path[PATH_MAX];
	size_t		 i;
	int		 fd, replace = 0, replaced, rc = EX_OK, r;

	replace = take_flag(&argc, &argv, "--replace");
	if (argc != 1) {
		usage(stderr);
		return EX_USAGE;
	}
	dir = argv[0];
	if (refused("restore"))
		return EX_USAGE;
	/* Checked whole before anything changes. */
	snprintf(path, sizeof(path), "%s/" BACKUP_MANIFEST, dir);
	if ((man = json_load_file(path, 0, &jerr)) == NULL
	    || !json_is_array(json_object_get(man, "users"))) {
		fprintf(stderr, "vivariumctl: %s is not a backup of vivariumctl "
		    "backup (%s: %s); nothing was changed\n", dir, path,
		    man == NULL ? jerr.text : "no users list");
		json_decref(man);
		return EX_USAGE;
	}
	json_array_foreach(json_object_get(man, "users"), i, u) {
		id = json_string_value(json_object_get(u, "user"));
		if (id == NULL || user_id_valid(id, strlen(id)) == -1) {
			fprintf(stderr, "vivariumctl: %s lists a user id that is "
			    "not one; nothing was changed\n", path);
			json_decref(man);
			return EX_USAGE;
		}
	}
	/* The token LibreChat holds, and the key its links are signed with. */
	if (conf.token_file != NULL && restore_file(dir, "token",
	    conf.token_file) == -1)
		rc = EX_FAIL;
	if (restore_file(dir, "link.key", conf.link_key_file) == -1)
		rc = EX_FAIL;
	json_array_foreach(json_object_get(man, "users"), i, u) {
		id = json_string_value(json_object_get(u, "user"));
		snprintf(path, sizeof(path), "%s/users/%s.tar", dir, id);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
			fprintf(stderr, "vivariumctl: %s: %s\n", path,
			    strerror(errno));
			rc = EX_FAIL;
			continue;
		}
		r = import_fd(id, fd, path, replace, &replaced);
		close(fd);
		if (r == EX_EXISTS) {
			printf("%s: kept as it is (it exists; --replace "
			    "restores it over)\n", id);
			continue;
		}
		if (r != EX_OK) {
			rc = EX_FAIL;
			continue;
		}
		if ((name = json_string_value(json_object_get(u, "name")))
		    != NULL)
			(void)names_record(&conf, id, name);
		printf("%s: workspace restored%s\n", id, replaced ?
		    " (the one there deleted)" : "");
	}
	json_decref(man);
	printf("restore from %s: %s; the backed-up config files are there "
	    "(supervisor.yaml, egress.yaml) to compare with yours; restart "
	    "the supervisor so it reads the token and the link key\n", dir,
	    rc == EX_OK ? "done" : "SOME PARTS FAILED (see above)");
	return rc;
}

/* ---------------------------------------------------------------- render */

static int
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
static int
cmd_render_kube(int argc, char **argv)
{
	struct backend	*b;
	struct berr	 e;
	json_t		*d;
	long		 slot = 0;
	int		 userns = -1;

	if (argc != 1) {
		usage(stderr);
		return EX_USAGE;
	}
	if (check_user(&argv[0]) == -1)
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

/* ---------------------------------------------------------------- main */

static const struct command commands[] = {
	{ "add-user", NULL, cmd_add, 0,
	    "add-user USER...",
	    "create the user's network, volume and container,\n"
	    "and start it" },
	{ "remove-user", NULL, cmd_remove, 0,
	    "remove-user [--purge] USER...",
	    "remove container and network; --purge also\n"
	    "deletes the workspace volume (the user's files)" },
	{ "list", NULL, cmd_list, 0,
	    "list",
	    "every user: state, memory, disk used, idle\n"
	    "time, and whether its image is the current one" },
	{ "doctor", NULL, cmd_doctor, 0,
	    "doctor [--fetch URL]",
	    "check everything the service needs (Podman,\n"
	    "the image and its age, the egress proxy, the\n"
	    "links' address, limits, disk, the token file),\n"
	    "each fault with its fix; --fetch also gets URL\n"
	    "through the egress proxy as a sandbox would" },
	{ "logs", NULL, cmd_logs, 0,
	    "logs USER",
	    "the sandbox's log (its runs) and the egress\n"
	    "proxy's lines for it (what it fetched)" },
	{ "upgrade", NULL, cmd_upgrade, 0,
	    "upgrade USER... | --all",
	    "move sandboxes made from an older image to the\n"
	    "current one now (files and namespace kept): a\n"
	    "stopped one is made again, a running one only\n"
	    "while it serves nothing (a busy one moves at\n"
	    "its next idle stop, as without this command)" },
	{ "start", NULL, cmd_start, 0,
	    "start USER",
	    "start the sandbox and wait until it answers" },
	{ "stop", NULL, cmd_stop, 0,
	    "stop USER",
	    "stop the sandbox (files and namespace are kept)" },
	{ "status", NULL, cmd_status, 0,
	    "status USER",
	    "one user's sandbox in detail" },
	{ "export", NULL, cmd_export, 0,
	    "export USER > FILE.tar",
	    "the user's workspace (files and namespace store)\n"
	    "as a tar" },
	{ "import", NULL, cmd_import, 0,
	    "import [--replace] USER < FILE.tar",
	    "a tar from export into a new user's workspace;\n"
	    "--replace deletes an existing user's first" },
	{ "backup", NULL, cmd_backup, 0,
	    "backup DIR",
	    "everything into a new directory: the config,\n"
	    "the token, the link key, the names and each\n"
	    "user's workspace (files and namespace) as a tar" },
	{ "restore", NULL, cmd_restore, 0,
	    "restore [--replace] DIR",
	    "a backup back: the token and link key where the\n"
	    "config names them (the ones there kept aside),\n"
	    "each user's workspace (an existing user is left\n"
	    "alone unless --replace)" },
	{ "render", NULL, cmd_render, 0,
	    "render USER [DIR]",
	    "write vivarium-USER.container/.network quadlets\n"
	    "from the templates (for systemd-managed setups)" },
	{ "render", "--kubernetes", cmd_render_kube, CMD_NO_BACKEND,
	    "render --kubernetes USER",
	    "print the PersistentVolumeClaim, NetworkPolicy\n"
	    "and Pod the kubernetes backend makes for USER" },
	{ NULL, NULL, NULL, 0, NULL, NULL },
};

/* The command name names, the one with its flag when argv starts so. */
static const struct command *
command_find(const char *name, int argc, char **argv)
{
	const struct command	*c, *found = NULL;

	for (c = commands; c->name != NULL; c++) {
		if (strcmp(name, c->name) != 0)
			continue;
		if (c->flag == NULL && found == NULL)
			found = c;
		else if (c->flag != NULL && argc > 0
		    && strcmp(argv[0], c->flag) == 0)
			return c;
	}
	return found;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *c;
	struct confdiag	 diag;
	const char	*path = NULL, *cmd;
	char		 defconf[PATH_MAX];
	int		 ch, rc;

	log_init("vivariumctl", 0);
	/* "+": stop at the command, so its own flags (--purge) stay. */
	while ((ch = getopt_long(argc, argv, "+f:t:hvV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f': path = optarg; break;
		case 't': template_dir = optarg; break;
		case 'j': json_out = 1; break;
		case 'v': log_setverbose(1); break;
		case 'h': usage(stdout); return EX_OK;
		case 'V': printf("vivariumctl %s\n", VIVARIUM_VERSION); return EX_OK;
		default: usage(stderr); return EX_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage(stderr);
		return EX_USAGE;
	}
	cmd = argv[0];
	argc--;
	argv++;
	if (argc > 0 && strcmp(argv[argc - 1], "--json") == 0) {
		json_out = 1;
		argc--;
	}
	if (strcmp(cmd, "help") == 0) {
		usage(stdout);
		return EX_OK;
	}
	if ((c = command_find(cmd, argc, argv)) == NULL) {
		fprintf(stderr, "vivariumctl: unknown command \"%s\" "
		    "(vivariumctl --help lists them)\n", cmd);
		return EX_USAGE;
	}
	if (c->flag != NULL) {
		argc--;
		argv++;
	}
	if (path == NULL)
		path = conf_default_path(defconf, sizeof(defconf));
	/* vivariumctl needs no token: give the check one it will accept. */
	if (getenv("VIVARIUM_SUPERVISOR_TOKEN") == NULL)
		setenv("VIVARIUM_SUPERVISOR_TOKEN", CTL_NO_TOKEN, 0);
	confdiag_init(&diag, path);
	if (conf_load(&conf, path, &diag) == -1) {
		fputs(buf_str(&diag.text), stderr);
		confdiag_release(&diag);
		return EX_USAGE;
	}
	confdiag_release(&diag);
	{
		char err[512];

		/* Sandboxes made here sign links with the supervisor's key. */
		if (conf_link_keys(&conf, err, sizeof(err)) == -1)
			fprintf(stderr, "vivariumctl: %s; sandboxes it makes "
			    "have no file links\n", err);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (c->flags & CMD_NO_BACKEND)
		rc = c->fn(argc, argv);
	else if ((backend = backend_new(&conf, NULL)) == NULL)
		return EX_FAIL;
	else {
		rc = c->fn(argc, argv);
		backend->free(backend);
	}
	conf_release(&conf);
	curl_global_cleanup();
	return rc;
}
