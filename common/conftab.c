/*
 * conftab.c: settings read from a table of keys (see config.h): the YAML
 * file first, then the environment.  One wording for every program:
 *
 *	file:line: key: "value" is not <what it takes>
 *	file:line: unknown key "k" in section (known: a, b, c)
 *	VARIABLE="value": expected <what it takes>
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "banned.h"

/* "listen", "timeouts.header", "users.bob.memory" */
#define WHAT_MAX	128

static void *
field(void *base, const struct conf_key *k)
{
	return (char *)base + k->off;
}

/* What a key takes, for messages: "a whole number from 1 to 60". */
static void
describe(const struct conf_key *k, char *dst, size_t len)
{
	switch (k->type) {
	case CONF_LONG:
		snprintf(dst, len, "a whole number from %lld to %lld", k->min,
		    k->max);
		break;
	case CONF_DURATION:
		snprintf(dst, len, "a duration from %llds to %llds (e.g. 30s, "
		    "15m, 2h, or plain seconds)", k->min, k->max);
		break;
	case CONF_SIZE:
		snprintf(dst, len, "a size from %lld to %lld bytes (e.g. 512m, "
		    "2g)", k->min, k->max);
		break;
	case CONF_BOOL:
		snprintf(dst, len, "yes or no (true/false, on/off, 1/0)");
		break;
	case CONF_STR:
		snprintf(dst, len, "a value");
		break;
	default:
		snprintf(dst, len, "%s", k->desc != NULL ? k->desc : "valid");
		break;
	}
}

static int
set_str(char **dst, const char *v)
{
	char	*p;

	if ((p = strdup(v)) == NULL)
		return -1;
	free(*dst);
	*dst = p;
	return 0;
}

/*
 * Sets a scalar key from v: 0, or -1 when v is not what it takes (the
 * caller says so, in the file's words or the environment's).
 */
static int
set_scalar(const struct conf_key *k, void *base, const char *v)
{
	unsigned long long sz;
	long		 x;
	int		 b;

	switch (k->type) {
	case CONF_STR:
		if (*v == '\0')
			return -1;
		return set_str(field(base, k), v);
	case CONF_LONG:
		if (config_parse_long(v, (long)k->min, (long)k->max, &x) == -1)
			return -1;
		*(long *)field(base, k) = x;
		return 0;
	case CONF_DURATION:
		if (config_parse_duration(v, (long)k->max, &x) == -1 ||
		    x < k->min)
			return -1;
		*(long *)field(base, k) = x;
		return 0;
	case CONF_SIZE:
		if (config_parse_size(v, (unsigned long long)k->max, &sz) == -1 ||
		    sz < (unsigned long long)k->min)
			return -1;
		*(unsigned long long *)field(base, k) = sz;
		return 0;
	case CONF_BOOL:
		if (config_parse_bool(v, &b) == -1)
			return -1;
		*(int *)field(base, k) = b;
		return 0;
	case CONF_PARSE:
		return k->parse(base, v);
	default:
		return -1;
	}
}

/* ---------------------------------------------------------------- the file */

static void
join(char *dst, size_t len, const char *where, const char *key)
{
	if (where != NULL)
		snprintf(dst, len, "%s.%s", where, key);
	else
		snprintf(dst, len, "%s", key);
}

/* The list's items, one by one; a scalar is one item. */
static void
file_list(const struct conf_key *k, void *base, const struct ynode *n,
    const char *what, struct confdiag *d)
{
	const struct ynode *e;
	char		 desc[256];

	describe(k, desc, sizeof(desc));
	if (n->type == YNODE_MAP) {
		confdiag_add(d, n->line, "%s: expected a list of %s, not %s",
		    what, desc, yconf_type_name(n->type));
		return;
	}
	if (k->reset != NULL)
		k->reset(base);
	if (n->type == YNODE_SCALAR) {
		if (k->parse(base, n->value) == -1)
			confdiag_add(d, n->line, "%s: \"%s\" is not %s", what,
			    n->value, desc);
		return;
	}
	for (e = n->child; e != NULL; e = e->next) {
		if (e->type != YNODE_SCALAR)
			confdiag_add(d, e->line, "%s: expected %s, not %s",
			    what, desc, yconf_type_name(e->type));
		else if (k->parse(base, e->value) == -1)
			confdiag_add(d, e->line, "%s: \"%s\" is not %s", what,
			    e->value, desc);
	}
}

static void
file_key(const struct conf_key *k, void *base, const struct ynode *n,
    const char *what, struct confdiag *d)
{
	char	 desc[256];

	switch (k->type) {
	case CONF_SECTION:
		config_section(k->sub, k->nsub, field(base, k), n, what, d);
		return;
	case CONF_LIST:
		file_list(k, base, n, what, d);
		return;
	case CONF_NODE:
		k->node(base, n, d);
		return;
	default:
		break;
	}
	if (n->type != YNODE_SCALAR) {
		confdiag_add(d, n->line, "%s: expected a single value, not %s",
		    what, yconf_type_name(n->type));
		return;
	}
	if (k->type == CONF_STR && n->value[0] == '\0') {
		confdiag_add(d, n->line, "%s: must not be empty", what);
		return;
	}
	if (set_scalar(k, base, n->value) == -1) {
		describe(k, desc, sizeof(desc));
		confdiag_add(d, n->line, "%s: \"%s\" is not %s", what, n->value,
		    desc);
	}
}

static void
unknown(const struct conf_key *keys, size_t nkeys, const struct ynode *n,
    const char *where, struct confdiag *d)
{
	struct buf	 known = BUF_INIT(4096);
	size_t		 i;

	for (i = 0; i < nkeys; i++) {
		if (keys[i].name == NULL)
			continue;
		if (known.len > 0)
			(void)buf_appends(&known, ", ");
		(void)buf_appends(&known, keys[i].name);
	}
	confdiag_add(d, n->line, "unknown key \"%s\"%s%s (known: %s)", n->key,
	    where != NULL ? " in " : "", where != NULL ? where : "",
	    buf_str(&known));
	buf_release(&known);
}

void
config_section(const struct conf_key *keys, size_t nkeys, void *base,
    const struct ynode *map, const char *where, struct confdiag *d)
{
	const struct ynode *n;
	char		 what[WHAT_MAX];
	size_t		 i;

	/* "users:" with only comments under it: nothing to read. */
	if (map->type == YNODE_SCALAR && map->value[0] == '\0')
		return;
	if (map->type != YNODE_MAP) {
		confdiag_add(d, map->line, "%s: expected a mapping (key: value "
		    "lines), not %s", where != NULL ? where : "the top level",
		    yconf_type_name(map->type));
		return;
	}
	for (n = map->child; n != NULL; n = n->next) {
		for (i = 0; i < nkeys; i++)
			if (keys[i].name != NULL &&
			    strcmp(keys[i].name, n->key) == 0)
				break;
		if (i == nkeys) {
			unknown(keys, nkeys, n, where, d);
			continue;
		}
		join(what, sizeof(what), where, n->key);
		file_key(&keys[i], base, n, what, d);
	}
}

/* ---------------------------------------------------------------- environment */

struct env_item {
	const struct conf_key	*key;
	void			*base;
	const char		*value;
	struct confdiag		*diag;
};

static int
env_item(void *arg, const char *item)
{
	struct env_item	*e = arg;
	char		 desc[256];

	if (e->key->parse(e->base, item) == 0)
		return 0;
	describe(e->key, desc, sizeof(desc));
	confdiag_add(e->diag, 0, "%s=\"%s\": \"%s\" is not %s", e->key->env,
	    e->value, item, desc);
	return -1;
}

static void
env_list(const struct conf_key *k, void *base, const char *v,
    struct confdiag *d)
{
	struct env_item	 e = { k, base, v, d };
	int		 before = d->count;

	if (k->reset != NULL)
		k->reset(base);	/* the variable replaces the file's list */
	if (config_list_each(v, &e, env_item) == -1 && d->count == before)
		confdiag_add(d, 0, "%s=\"%s\": an item is too long", k->env, v);
}

static void
env_keys(const struct conf_key *keys, size_t nkeys, void *base,
    struct confdiag *d)
{
	const struct conf_key *k;
	const char	*v;
	char		 desc[256];
	size_t		 i;

	for (i = 0; i < nkeys; i++) {
		k = &keys[i];
		if (k->type == CONF_SECTION) {
			env_keys(k->sub, k->nsub, field(base, k), d);
			continue;
		}
		if (k->env == NULL || (v = config_env_str(k->env, NULL)) == NULL)
			continue;
		if (k->type == CONF_LIST) {
			env_list(k, base, v, d);
			continue;
		}
		if (set_scalar(k, base, v) == -1) {
			describe(k, desc, sizeof(desc));
			confdiag_add(d, 0, "%s=\"%s\": expected %s", k->env, v,
			    desc);
		}
	}
}

/* ---------------------------------------------------------------- load */

int
config_load(const struct conf_key *keys, size_t nkeys, void *base,
    const char *path, struct confdiag *d)
{
	struct confdiag	 env;
	struct ynode	*root;
	int		 before = d->count;

	if (path != NULL && (root = yconf_load(path, d)) != NULL) {
		config_section(keys, nkeys, base, root, NULL, d);
		yconf_free(root);
	}
	/* Variables are named in their own messages, without the file. */
	confdiag_init(&env, NULL);
	env_keys(keys, nkeys, base, &env);
	if (env.count > 0) {
		(void)buf_append(&d->text, env.text.data, env.text.len);
		d->count += env.count;
	}
	confdiag_release(&env);
	return d->count - before;
}
