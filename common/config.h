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
 * "host:port", "[v6]:port" or ":port" (any address), as the programs
 * listen: the host (without brackets; "" for any) into host, the port
 * (1 to 65535) into *port.  The host must be a numeric address, as the
 * programs bind it without a lookup.  0, or -1 when it is not one.
 */
int	config_parse_hostport(const char *, char *host, size_t hostlen,
	    long *port);

/*
 * The next item of a comma-separated list at *pp, blanks trimmed: 1 with
 * *item and *n set (n may be 0 for an empty item, "a,,b"), 0 at the end.
 */
int	config_list_next(const char **pp, const char **item, size_t *n);
/* fn(arg, item) for each item that is not empty, NUL-terminated; -1 when
 * fn failed for one (the rest are still done) or an item is over 255
 * bytes, else 0. */
int	config_list_each(const char *list, void *arg,
	    int (*fn)(void *arg, const char *item));

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

/*
 * A program's settings as a table (conftab.c): each key names a YAML key,
 * an environment variable, or both, a type and where the value goes (an
 * offset into the program's struct, or into a section's sub-struct).
 * config_load reads the file, then the variables, which win; every
 * problem is reported, with its line for the file, and an unknown key
 * names the known ones.  Adding a setting is adding a line to a table.
 */
enum conf_type {
	CONF_STR,	/* char *, owned (the old value is freed); not empty */
	CONF_LONG,	/* long, min to max */
	CONF_DURATION,	/* long seconds ("15m", "2h", "30"), min to max */
	CONF_SIZE,	/* unsigned long long bytes ("512m"), min to max */
	CONF_BOOL,	/* int, 0 or 1 (yes/no, true/false, on/off, 1/0) */
	CONF_PARSE,	/* parse(section, value); desc says what it takes */
	CONF_LIST,	/* a YAML scalar or list, a comma-separated variable:
			 * reset(section), then parse(section, item) each */
	CONF_SECTION,	/* a YAML mapping of the keys in sub, whose offsets
			 * are into the sub-struct at off */
	CONF_NODE,	/* YAML only: node(section, n, diag) does it all */
};

struct conf_key {
	const char	*name;		/* YAML key; NULL: environment only */
	const char	*env;		/* variable; NULL: the file only */
	enum conf_type	 type;
	size_t		 off;		/* the field (or sub-struct) */
	long long	 min, max;	/* CONF_LONG, _DURATION, _SIZE */
	const char	*desc;		/* CONF_PARSE, CONF_LIST: "a port ..." */
	int		(*parse)(void *section, const char *value);
	void		(*reset)(void *section);
	void		(*node)(void *section, const struct ynode *,
			    struct confdiag *);
	const struct conf_key *sub;	/* CONF_SECTION */
	size_t		 nsub;
};

#define CONF_KEYS(a)	(a), (sizeof(a) / sizeof((a)[0]))
/* Table lines: a plain value; a parsed one; a YAML node; a section. */
#define CONF_VALUE(n, e, t, o, lo, hi) \
	{ .name = (n), .env = (e), .type = (t), .off = (o), .min = (lo), \
	  .max = (hi) }
#define CONF_PARSED(n, e, fn, what) \
	{ .name = (n), .env = (e), .type = CONF_PARSE, .parse = (fn), \
	  .desc = (what) }
#define CONF_NODE_FN(n, fn) \
	{ .name = (n), .type = CONF_NODE, .node = (fn) }
#define CONF_SECTION_OF(n, o, keys) \
	{ .name = (n), .type = CONF_SECTION, .off = (o), .sub = (keys), \
	  .nsub = sizeof(keys) / sizeof((keys)[0]) }

/* The file at path (none when NULL), then the environment, into base;
 * returns the number of problems added to d. */
int	config_load(const struct conf_key *, size_t nkeys, void *base,
	    const char *path, struct confdiag *d);
/* A mapping's keys into base (for a CONF_NODE that holds sections, such
 * as one per user); where names it in messages ("users.bob"). */
void	config_section(const struct conf_key *, size_t nkeys, void *base,
	    const struct ynode *map, const char *where, struct confdiag *d);

#endif
