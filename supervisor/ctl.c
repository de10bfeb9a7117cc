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
 *
 * This file holds main, the command table (--help is made from it) and the
 * helpers every command uses (ctl.h); the commands are in ctl_user.c (a
 * user's sandbox: add-user, remove-user, list, start, stop, status, logs),
 * ctl_data.c (export, import, backup, restore) and ctl_admin.c (upgrade,
 * doctor, render).
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "buf.h"
#include "config.h"
#include "log.h"
#include "ctl.h"
#include "banned.h"

#define DEFAULT_CONF	"/etc/vivarium/supervisor.yaml"

/* What the commands share (ctl.h). */
struct conf		 conf;
/* The sandboxes, through the backend only (render's quadlets open their
 * own Podman client, render.c). */
struct backend		*backend;
int			 json_out;
const char		*template_dir;	/* -t */

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

void
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

int
exit_for(const struct berr *e)
{
	return e->status == 0 ? EX_PODMAN : EX_FAIL;
}

int
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
int
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
int
take_flag(int *argc, char ***argv, const char *flag)
{
	if (*argc == 0 || strcmp((*argv)[0], flag) != 0)
		return 0;
	(*argc)--;
	(*argv)++;
	return 1;
}

/* A user id, as a new user is named (add-user, import). */
int
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
int
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

/* The one argument a command takes, an existing user (check_user); else
 * -1 with the usage or the refusal said. */
int
one_user(int argc, char **argv)
{
	if (argc != 1) {
		usage(stderr);
		return -1;
	}
	return check_user(&argv[0]);
}

void
print_json(json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(j);
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
	    "write vivarium-USER.container, .network and\n"
	    ".volume quadlets from the templates (for\n"
	    "systemd-managed setups)" },
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
