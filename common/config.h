/*
 * config.h: reading configuration, from the environment and from YAML.
 *
 * Programs parse their configuration once into a plain struct of their own.
 * These helpers do the strict parsing and collect every problem, so that one
 * run reports all of them ("file:line: message" for files, the variable's
 * name for the environment).
 */
#ifndef VIVARIUM_CONFIG_H
#define VIVARIUM_CONFIG_H

#include <stddef.h>

#include "buf.h"

/* Collected diagnostics: one line each, counted. */
struct confdiag {
	const char	*file;		/* borrowed; NULL for the environment */
	int		 count;
	struct buf	 text;
};

void	confdiag_init(struct confdiag *, const char *file);
void	confdiag_release(struct confdiag *);
/* Adds "file:line: msg" (or just "msg" when line is 0 or file is NULL). */
void	confdiag_add(struct confdiag *, int line, const char *, ...)
	    __attribute__((format(printf, 3, 4)));

/*
 * Strict scalar parsing: the whole string, decimal, no sign unless min < 0,
 * no surrounding blanks.  Returns 0, or -1 when malformed or out of range.
 */
int	config_parse_long(const char *, long min, long max, long *out);
/* "yes"/"no", "true"/"false", "on"/"off", "1"/"0" (any case). */
int	config_parse_bool(const char *, int *out);
/* Bytes with an optional k, m, g suffix (powers of 1024): "512m". */
int	config_parse_size(const char *, unsigned long long max,
	    unsigned long long *out);

/* "15m", "30s", "2h", "7d", or plain seconds, at most max seconds. */
int	config_parse_duration(const char *, long max, long *out);

/*
 * Environment variables.  Unset or empty means the default.  A bad value
 * adds a diagnostic naming the variable and what it accepts, and leaves *out
 * at the default; the return is 0 or -1 accordingly.
 */
int	config_env_long(struct confdiag *, const char *name, long def,
	    long min, long max, long *out);
int	config_env_bool(struct confdiag *, const char *name, int def, int *out);
int	config_env_size(struct confdiag *, const char *name,
	    unsigned long long def, unsigned long long max,
	    unsigned long long *out);
int	config_env_duration(struct confdiag *, const char *name, long def,
	    long min, long max, long *out);
/* Returns the value, or def when unset or empty (borrowed either way). */
const char *config_env_str(const char *name, const char *def);

/*
 * A YAML document as a small tree with line numbers (libyaml underneath).
 * Anchors, aliases and tags are refused; keys must be scalars and unique.
 */
enum ynode_type {
	YNODE_SCALAR,
	YNODE_MAP,
	YNODE_SEQ,
};

struct ynode {
	enum ynode_type	 type;
	int		 line;		/* 1-based line of the node */
	char		*key;		/* owned; set when the node is a map value */
	char		*value;		/* owned; set for scalars */
	struct ynode	*child;		/* owned; first entry of a map or sequence */
	struct ynode	*next;		/* owned; next sibling */
};

/* Returns a new tree (the root of an empty file is an empty map), or NULL
 * with a diagnostic added. */
struct ynode	*yconf_load(const char *path, struct confdiag *);
struct ynode	*yconf_load_string(const char *text, size_t len,
		    struct confdiag *);
void		 yconf_free(struct ynode *);
/* Borrowed child of a map by key, or NULL. */
const struct ynode *yconf_get(const struct ynode *map, const char *key);
const char	*yconf_type_name(enum ynode_type);

#endif
