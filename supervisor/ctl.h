/*
 * ctl.h: what vivariumctl's files share: the state main sets up, the
 * helpers every command uses (ctl.c) and the commands its table names
 * (ctl_user.c, ctl_data.c, ctl_admin.c).
 */
#ifndef VIVARIUM_CTL_H
#define VIVARIUM_CTL_H

#include <stdio.h>

#include <jansson.h>

#include "backend.h"

/* Exit codes; ctl.c's first comment says what each means to a script. */
#define EX_OK		0
#define EX_FAIL		1
#define EX_USAGE	2
#define EX_NOUSER	3
#define EX_PODMAN	4
#define EX_NOTRUNNING	5

/* Set up by main before a command runs (backend: NULL for CMD_NO_BACKEND). */
extern struct conf	 conf;
extern struct backend	*backend;
extern int		 json_out;	/* --json */
extern const char	*template_dir;	/* -t, or NULL */

/* --help, to stdout, or to stderr for a usage error. */
void	usage(FILE *);
/* The exit status for a backend error: EX_PODMAN when unreachable. */
int	exit_for(const struct berr *);
/* Says e for user (may be NULL), as JSON with --json; the exit status. */
int	fail(const struct berr *, const char *user);
int	refused(const char *command);
int	take_flag(int *argc, char ***argv, const char *flag);
int	check_id(const char *user);
int	check_user(char **user);
int	one_user(int argc, char **argv);
/* Prints j (stolen), indented. */
void	print_json(json_t *j);

/* The commands: the arguments after the name (and flag); an exit status. */
int	cmd_add(int, char **);
int	cmd_remove(int, char **);
int	cmd_list(int, char **);
int	cmd_start(int, char **);
int	cmd_stop(int, char **);
int	cmd_status(int, char **);
int	cmd_logs(int, char **);
int	cmd_export(int, char **);
int	cmd_import(int, char **);
int	cmd_backup(int, char **);
int	cmd_restore(int, char **);
int	cmd_upgrade(int, char **);
int	cmd_doctor(int, char **);
int	cmd_render(int, char **);
int	cmd_render_kube(int, char **);

#endif
