/*
 * config.c: strict scalar parsing, environment helpers, and a YAML tree with
 * line numbers built on libyaml's event parser.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "buf.h"
#include "config.h"
#include "banned.h"

#define CONFDIAG_MAX	(64 * 1024)
#define YCONF_MAXDEPTH	32

/* ---------------------------------------------------------------- diagnostics */

void
confdiag_init(struct confdiag *d, const char *file)
{
	d->file = file;
	d->count = 0;
	buf_init(&d->text, CONFDIAG_MAX);
}

void
confdiag_release(struct confdiag *d)
{
	buf_release(&d->text);
	d->count = 0;
}

void
confdiag_add(struct confdiag *d, int line, const char *fmt, ...)
{
	va_list	 ap;

	d->count++;
	if (d->file != NULL && line > 0)
		(void)buf_appendf(&d->text, "%s:%d: ", d->file, line);
	else if (d->file != NULL)
		(void)buf_appendf(&d->text, "%s: ", d->file);
	va_start(ap, fmt);
	(void)buf_vappendf(&d->text, fmt, ap);
	va_end(ap);
	(void)buf_append(&d->text, "\n", 1);
}

/* ---------------------------------------------------------------- scalars */

int
config_parse_long(const char *s, long min, long max, long *out)
{
	char	*end;
	long	 v;

	if (s == NULL || *s == '\0')
		return -1;
	/* strtol accepts blanks and '+'; we do not. */
	if (!(isdigit((unsigned char)s[0]) || (s[0] == '-' && min < 0 &&
	    isdigit((unsigned char)s[1]))))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int
config_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };
	size_t	 i;

	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

int
config_parse_size(const char *s, unsigned long long max,
    unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char	*end;

	if (s == NULL || !isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'k':
		mul = 1ULL << 10;
		break;
	case 'm':
		mul = 1ULL << 20;
		break;
	case 'g':
		mul = 1ULL << 30;
		break;
	default:
		return -1;
	}
	if (*end != '\0') {
		end++;
		/* Accept "512m", "512mb", "512MiB" alike. */
		if (tolower((unsigned char)*end) == 'i')
			end++;
		if (tolower((unsigned char)*end) == 'b')
			end++;
		if (*end != '\0')
			return -1;
	}
	if (v > ULLONG_MAX / mul || v * mul > max)
		return -1;
	*out = v * mul;
	return 0;
}

/* ---------------------------------------------------------------- environment */

const char *
config_env_str(const char *name, const char *def)
{
	const char	*v = getenv(name);

	return (v == NULL || *v == '\0') ? def : v;
}

int
config_env_long(struct confdiag *d, const char *name, long def, long min,
    long max, long *out)
{
	const char	*v = config_env_str(name, NULL);

	*out = def;
	if (v == NULL)
		return 0;
	if (config_parse_long(v, min, max, out) == -1) {
		*out = def;
		confdiag_add(d, 0, "%s=\"%s\": expected a whole number from %ld "
		    "to %ld", name, v, min, max);
		return -1;
	}
	return 0;
}

int
config_env_bool(struct confdiag *d, const char *name, int def, int *out)
{
	const char	*v = config_env_str(name, NULL);

	*out = def;
	if (v == NULL)
		return 0;
	if (config_parse_bool(v, out) == -1) {
		*out = def;
		confdiag_add(d, 0, "%s=\"%s\": expected 1 or 0 (yes/no, "
		    "true/false, on/off)", name, v);
		return -1;
	}
	return 0;
}

int
config_env_size(struct confdiag *d, const char *name, unsigned long long def,
    unsigned long long max, unsigned long long *out)
{
	const char	*v = config_env_str(name, NULL);

	*out = def;
	if (v == NULL)
		return 0;
	if (config_parse_size(v, max, out) == -1) {
		*out = def;
		confdiag_add(d, 0, "%s=\"%s\": expected a size in bytes up to "
		    "%llu (a k, m or g suffix is allowed)", name, v, max);
		return -1;
	}
	return 0;
}

int
config_parse_duration(const char *s, long max, long *out)
{
	char		 num[32];
	size_t		 n = strlen(s);
	long		 mul = 1, v;

	if (n == 0 || n >= sizeof(num))
		return -1;
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 's': mul = 1; num[n - 1] = '\0'; break;
	case 'm': mul = 60; num[n - 1] = '\0'; break;
	case 'h': mul = 3600; num[n - 1] = '\0'; break;
	case 'd': mul = 86400; num[n - 1] = '\0'; break;
	default: break;
	}
	if (config_parse_long(num, 0, max / mul, &v) == -1)
		return -1;
	*out = v * mul;
	return 0;
}

int
config_env_duration(struct confdiag *d, const char *name, long def, long min,
    long max, long *out)
{
	const char	*v = config_env_str(name, NULL);

	*out = def;
	if (v == NULL)
		return 0;
	if (config_parse_duration(v, max, out) == -1 || *out < min) {
		*out = def;
		confdiag_add(d, 0, "%s=\"%s\": expected a duration from %lds to "
		    "%lds: seconds, or a number with s, m, h or d (e.g. 15m, "
		    "24h)", name, v, min, max);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- YAML tree */

const char *
yconf_type_name(enum ynode_type t)
{
	switch (t) {
	case YNODE_SCALAR:
		return "a scalar";
	case YNODE_MAP:
		return "a mapping";
	case YNODE_SEQ:
		return "a list";
	}
	return "?";
}

void
yconf_free(struct ynode *n)
{
	struct ynode	*next;

	while (n != NULL) {
		next = n->next;
		yconf_free(n->child);
		free(n->key);
		free(n->value);
		free(n);
		n = next;
	}
}

const struct ynode *
yconf_get(const struct ynode *map, const char *key)
{
	const struct ynode *n;

	if (map == NULL || map->type != YNODE_MAP)
		return NULL;
	for (n = map->child; n != NULL; n = n->next)
		if (strcmp(n->key, key) == 0)
			return n;
	return NULL;
}

struct yparse {
	yaml_parser_t	 parser;
	struct confdiag	*diag;
	int		 failed;
};

static int
yp_next(struct yparse *yp, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&yp->parser, ev)) {
		confdiag_add(yp->diag, (int)yp->parser.problem_mark.line + 1,
		    "YAML syntax: %s%s%s",
		    yp->parser.problem ? yp->parser.problem : "malformed",
		    yp->parser.context ? " " : "",
		    yp->parser.context ? yp->parser.context : "");
		yp->failed = 1;
		return -1;
	}
	return 0;
}

static struct ynode *
ynode_new(enum ynode_type t, int line)
{
	struct ynode	*n;

	if ((n = calloc(1, sizeof(*n))) == NULL)
		return NULL;
	n->type = t;
	n->line = line;
	return n;
}

/*
 * Builds the node that starts with event ev (already read; this function
 * deletes it).  Returns the node or NULL on error.
 */
static struct ynode *
yp_node(struct yparse *yp, yaml_event_t *ev, int depth)
{
	struct ynode	*n = NULL, *item, **tail;
	yaml_event_t	 e;
	int		 line = (int)ev->start_mark.line + 1;

	if (depth > YCONF_MAXDEPTH) {
		confdiag_add(yp->diag, line, "nested too deeply");
		goto fail;
	}
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		confdiag_add(yp->diag, line, "aliases are not supported");
		goto fail;
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor != NULL) {
			confdiag_add(yp->diag, line, "anchors are not supported");
			goto fail;
		}
		if ((n = ynode_new(YNODE_SCALAR, line)) == NULL)
			goto nomem;
		n->value = strndup((const char *)ev->data.scalar.value,
		    ev->data.scalar.length);
		if (n->value == NULL)
			goto nomem;
		if (strlen(n->value) != ev->data.scalar.length) {
			confdiag_add(yp->diag, line, "NUL byte in a value");
			goto fail;
		}
		yaml_event_delete(ev);
		return n;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		break;
	default:
		confdiag_add(yp->diag, line, "unexpected YAML structure");
		goto fail;
	}

	n = ynode_new(ev->type == YAML_MAPPING_START_EVENT ? YNODE_MAP :
	    YNODE_SEQ, line);
	if (n == NULL)
		goto nomem;
	yaml_event_delete(ev);
	tail = &n->child;
	for (;;) {
		char	*key = NULL;

		if (yp_next(yp, &e) == -1)
			goto fail_nodel;
		if (e.type == YAML_MAPPING_END_EVENT ||
		    e.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&e);
			return n;
		}
		if (n->type == YNODE_MAP) {
			int	 kline = (int)e.start_mark.line + 1;

			if (e.type != YAML_SCALAR_EVENT) {
				confdiag_add(yp->diag, kline,
				    "keys must be plain words");
				yaml_event_delete(&e);
				goto fail_nodel;
			}
			key = strndup((const char *)e.data.scalar.value,
			    e.data.scalar.length);
			yaml_event_delete(&e);
			if (key == NULL)
				goto nomem_nodel;
			if (yconf_get(n, key) != NULL) {
				confdiag_add(yp->diag, kline,
				    "\"%s\" is given twice", key);
				free(key);
				goto fail_nodel;
			}
			if (yp_next(yp, &e) == -1) {
				free(key);
				goto fail_nodel;
			}
		}
		if ((item = yp_node(yp, &e, depth + 1)) == NULL) {
			free(key);
			goto fail_nodel;
		}
		item->key = key;
		*tail = item;
		tail = &item->next;
	}

nomem:
	confdiag_add(yp->diag, line, "out of memory");
fail:
	yaml_event_delete(ev);
	yconf_free(n);
	yp->failed = 1;
	return NULL;
nomem_nodel:
	confdiag_add(yp->diag, line, "out of memory");
fail_nodel:
	yconf_free(n);
	yp->failed = 1;
	return NULL;
}

static struct ynode *
yconf_parse(struct yparse *yp)
{
	struct ynode	*root = NULL;
	yaml_event_t	 e;

	for (;;) {
		if (yp_next(yp, &e) == -1)
			goto fail;
		switch (e.type) {
		case YAML_STREAM_START_EVENT:
		case YAML_DOCUMENT_START_EVENT:
			yaml_event_delete(&e);
			continue;
		case YAML_DOCUMENT_END_EVENT:
			yaml_event_delete(&e);
			continue;
		case YAML_STREAM_END_EVENT:
			yaml_event_delete(&e);
			if (root == NULL)
				root = ynode_new(YNODE_MAP, 1);
			if (root == NULL)
				confdiag_add(yp->diag, 0, "out of memory");
			return root;
		default:
			if (root != NULL) {
				confdiag_add(yp->diag,
				    (int)e.start_mark.line + 1,
				    "only one YAML document is allowed");
				yaml_event_delete(&e);
				goto fail;
			}
			if ((root = yp_node(yp, &e, 0)) == NULL)
				goto fail;
			if (root->type != YNODE_MAP) {
				confdiag_add(yp->diag, root->line,
				    "the top level must be a mapping of "
				    "settings, not %s",
				    yconf_type_name(root->type));
				goto fail;
			}
		}
	}
fail:
	yconf_free(root);
	return NULL;
}

struct ynode *
yconf_load_string(const char *text, size_t len, struct confdiag *d)
{
	struct yparse	 yp;
	struct ynode	*root;

	memset(&yp, 0, sizeof(yp));
	yp.diag = d;
	if (!yaml_parser_initialize(&yp.parser)) {
		confdiag_add(d, 0, "cannot start the YAML parser");
		return NULL;
	}
	yaml_parser_set_input_string(&yp.parser, (const unsigned char *)text,
	    len);
	root = yconf_parse(&yp);
	yaml_parser_delete(&yp.parser);
	return root;
}

struct ynode *
yconf_load(const char *path, struct confdiag *d)
{
	struct yparse	 yp;
	struct ynode	*root;
	FILE		*fp;

	if ((fp = fopen(path, "r")) == NULL) {
		confdiag_add(d, 0, "cannot open: %s", strerror(errno));
		return NULL;
	}
	memset(&yp, 0, sizeof(yp));
	yp.diag = d;
	if (!yaml_parser_initialize(&yp.parser)) {
		fclose(fp);
		confdiag_add(d, 0, "cannot start the YAML parser");
		return NULL;
	}
	yaml_parser_set_input_file(&yp.parser, fp);
	root = yconf_parse(&yp);
	yaml_parser_delete(&yp.parser);
	fclose(fp);
	return root;
}
