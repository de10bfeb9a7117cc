/*
 * ctl_data.c: vivariumctl's commands that move a workspace, or everything,
 * in and out: export, import, backup and restore.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ctl.h"
#include "tarown.h"
#include "banned.h"

#define EX_EXISTS	100	/* import_fd only: the user exists; never an exit code */

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

int
cmd_export(int argc, char **argv)
{
	int		 r;

	json_out = 0;	/* standard output is the tar */
	if (one_user(argc, argv) == -1)
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

int
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

int
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

int
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
