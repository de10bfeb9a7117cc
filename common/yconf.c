/*
 * yconf.c: a YAML tree with line numbers built on libyaml's event parser
 * (see config.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "config.h"
#include "banned.h"

#define YCONF_MAXDEPTH	32

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
