/*
 * ui.c: the MCP Apps view (extension io.modelcontextprotocol/ui): the one
 * ui:// resource, resources/list and resources/read, and what tools/list
 * says about it.
 *
 * The view is sandbox-agent/ui/workspace.html, embedded at build time
 * (ui_html.c, made by module.mk).  A host shows it in a sandboxed iframe;
 * it reaches us only through the host (tools/call of workspace_view, a
 * tool for the view alone), and reaches the link origin only for what the
 * link pages serve anyway: previews, downloads and uploads under a signed
 * /ws/ link, which is why that origin, and no other, is in its CSP.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "base64.h"
#include "link.h"
#include "log.h"
#include "origin.h"
#include "sha256.h"
#include "banned.h"

/* The generated file (ui_html.c). */
extern const unsigned char ui_workspace_html[];
extern const size_t ui_workspace_html_len;

static const char *const view_tools[] = {
	"run_python", "share_file", "workspace_link", NULL
};

json_t *
ui_resources_list(void)
{
	return json_pack("{s:[{s:s, s:s, s:s, s:s, s:{s:{s:b}}}]}",
	    "resources",
	    "uri", UI_WORKSPACE_URI,
	    "name", "workspace",
	    "title", "Workspace files and charts",
	    "mimeType", UI_MIME_TYPE,
	    "_meta", "ui", "prefersBorder", 1);
}

/*
 * 'sha256-<base64>' of the text between the first open and the next close
 * (the CSP's hash source), into out; -1 when there is no such element.
 */
static int
element_hash(const char *html, const char *open, const char *close,
    char *out, size_t outlen)
{
	struct sha256	 c;
	unsigned char	 h[SHA256_LEN];
	struct buf	 b = BUF_INIT(outlen - 1);
	const char	*s, *e;
	int		 rc = -1;

	if ((s = strstr(html, open)) == NULL ||
	    (e = strstr(s += strlen(open), close)) == NULL)
		return -1;
	sha256_init(&c);
	sha256_update(&c, s, (size_t)(e - s));
	sha256_final(&c, h);
	if (buf_appends(&b, "sha256-") == 0 &&
	    base64_encode(BASE64_STD, h, sizeof(h), &b) == 0) {
		memcpy(out, buf_str(&b), b.len + 1);
		rc = 0;
	}
	buf_release(&b);
	return rc;
}

/* The hashes of the view's one script and one style: the view is compiled
 * in, so they are worked out once. */
static pthread_once_t	 hashes_once = PTHREAD_ONCE_INIT;
static char		 script_hash[64], style_hash[64];	/* "": none */

static void
hashes_init(void)
{
	const char *html = (const char *)ui_workspace_html;

	if (element_hash(html, "<script>", "</script>", script_hash,
	    sizeof(script_hash)) == -1)
		script_hash[0] = '\0';
	if (element_hash(html, "<style>", "</style>", style_hash,
	    sizeof(style_hash)) == -1)
		style_hash[0] = '\0';
}

/*
 * The view's HTML with its CSP filled in: the hashes of its one style and
 * one script (so nothing else inline runs) and the links' origin, or
 * 'none'.  NULL when out of memory (or the view lacks its script or
 * style, which the build would have caught).
 */
static char *
view_html(const char *origin, size_t *lenp)
{
	const char	*html = (const char *)ui_workspace_html, *p, *at;
	struct buf	 out = BUF_INIT(ui_workspace_html_len + 4096);
	int		 rc = 0;

	pthread_once(&hashes_once, hashes_init);
	if (script_hash[0] == '\0' || style_hash[0] == '\0')
		return NULL;
	for (p = html; rc == 0 && (at = strchr(p, '@')) != NULL; p = at) {
		rc = buf_append(&out, p, (size_t)(at - p));
		if (strncmp(at, "@SCRIPT_HASH@", 13) == 0) {
			rc = rc ? rc : buf_appends(&out, script_hash);
			at += 13;
		} else if (strncmp(at, "@STYLE_HASH@", 12) == 0) {
			rc = rc ? rc : buf_appends(&out, style_hash);
			at += 12;
		} else if (strncmp(at, "@LINK_ORIGIN@", 13) == 0) {
			rc = rc ? rc : buf_appends(&out, origin);
			at += 13;
		} else {
			rc = rc ? rc : buf_append(&out, "@", 1);
			at++;
		}
	}
	if (rc == 0)
		rc = buf_appends(&out, p);
	if (rc == -1) {
		buf_release(&out);
		return NULL;
	}
	return buf_detach(&out, lenp);
}

json_t *
ui_resource_read(const char *uri, const char *link_base,
    struct rpc_error *err)
{
	json_t	*csp, *res = NULL;
	char	 origin[512], *html;
	size_t	 len;

	if (strcmp(uri, UI_WORKSPACE_URI) != 0) {
		err->code = RPC_RESOURCE_NOT_FOUND;
		snprintf(err->message, sizeof(err->message), "Resource not "
		    "found: '%.200s' (this server has %s)", uri,
		    UI_WORKSPACE_URI);
		err->data = json_pack("{s:s}", "uri", uri);
		return NULL;
	}
	/* Without links the view still lists files; it cannot fetch. */
	if (link_base != NULL && origin_of_url(link_base, origin,
	    sizeof(origin)) == 0)
		csp = json_pack("{s:[s], s:[s]}", "connectDomains", origin,
		    "resourceDomains", origin);
	else {
		snprintf(origin, sizeof(origin), "'none'");
		csp = json_object();
	}
	if ((html = view_html(origin, &len)) != NULL)
		res = json_pack("{s:[{s:s, s:s, s:s%, s:{s:{s:o, s:b}}}]}",
		    "contents",
		    "uri", UI_WORKSPACE_URI,
		    "mimeType", UI_MIME_TYPE,
		    "text", html, len,
		    "_meta", "ui", "csp", csp, "prefersBorder", 1);
	else
		json_decref(csp);
	free(html);
	if (res == NULL) {
		err->code = RPC_INTERNAL_ERROR;
		snprintf(err->message, sizeof(err->message), "out of memory");
	}
	return res;
}

/*
 * The tools a view shows get _meta.ui.resourceUri; a client with the
 * extension also gets workspace_view, which only the view calls.  A
 * client without it sees no new tool: _meta is for whoever reads it.
 */
int
ui_tools_decorate(json_t *list, int with_app_tools)
{
	json_t		*tools = json_object_get(list, "tools"), *t, *meta;
	const char	*name;
	size_t		 i, j;

	json_array_foreach(tools, i, t) {
		name = json_string_value(json_object_get(t, "name"));
		for (j = 0; name != NULL && view_tools[j] != NULL; j++)
			if (strcmp(name, view_tools[j]) == 0)
				break;
		if (name == NULL || view_tools[j] == NULL)
			continue;
		meta = json_pack("{s:{s:s}}", "ui", "resourceUri",
		    UI_WORKSPACE_URI);
		if (meta == NULL || json_object_set_new(t, "_meta", meta) == -1)
			return -1;
	}
	if (!with_app_tools)
		return 0;
	t = tools_def("workspace_view");	/* sandbox-agent/tools/ */
	if (t == NULL || json_array_append_new(tools, t) == -1)
		return -1;
	return 0;
}
