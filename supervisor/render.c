/*
 * render.c: vivariumctl render, one user's sandbox as quadlet files for
 * operators who let systemd own sandboxes.  The templates (templates/) hold
 * {{NAME}} placeholders; the values come from the same config and the same
 * builders (sbenv.c, backend_podman_spec.c) as the objects the supervisor makes
 * through the API: the names, labels and environment are never the templates'
 * own.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "kube.h"
#include "backend.h"
#include "podman.h"
#include "banned.h"

#define TEMPLATE_MAX	(1 << 20)

void
render_template_dir(const char *opt, char *dst, size_t len)
{
	char	 self[2048], *slash;
	ssize_t	 n;

	if (opt != NULL) {
		snprintf(dst, len, "%s", opt);
		return;
	}
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL)
			*slash = '\0';
		/* bin/vivariumctl or build/san/bin/vivariumctl in a checkout */
		snprintf(dst, len, "%s/../templates", self);
		if (access(dst, R_OK) == 0)
			return;
		snprintf(dst, len, "%s/../../../templates", self);
		if (access(dst, R_OK) == 0)
			return;
		/* make install: PREFIX/bin and PREFIX/share/vivarium */
		snprintf(dst, len, "%s/../share/vivarium/templates", self);
		if (access(dst, R_OK) == 0)
			return;
	}
	snprintf(dst, len, "/usr/share/vivarium/templates");
}

int
render_text(const char *text, const char *const *vars, struct buf *out)
{
	const char	*p, *end;
	size_t		 i, klen;

	for (p = text; *p != '\0'; ) {
		if (p[0] == '{' && p[1] == '{' && (end = strstr(p, "}}"))) {
			klen = (size_t)(end - p - 2);
			for (i = 0; vars[i] != NULL; i += 2)
				if (strlen(vars[i]) == klen
				    && strncmp(p + 2, vars[i], klen) == 0)
					break;
			if (vars[i] != NULL) {
				if (buf_appends(out, vars[i + 1]) == -1)
					return -1;
				p = end + 2;
				continue;
			}
		}
		/* Not a name we fill: kept as it is, braces and all. */
		if (buf_append(out, p, 1) == -1)
			return -1;
		p++;
	}
	return 0;
}

int
render_file(const char *tdir, const char *tname, const char *outdir,
    const char *outname, const char *const *vars)
{
	char		 path[PATH_MAX], *text = NULL;
	struct buf	 out = BUF_INIT(TEMPLATE_MAX);
	FILE		*f;
	long		 size;
	int		 rc = -1;

	snprintf(path, sizeof(path), "%s/%s", tdir, tname);
	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "vivariumctl: cannot read template %s: %s\n",
		    path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) == -1 || (size = ftell(f)) < 0
	    || size > TEMPLATE_MAX || fseek(f, 0, SEEK_SET) == -1
	    || (text = calloc(1, (size_t)size + 1)) == NULL
	    || fread(text, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "vivariumctl: cannot read template %s\n", path);
		goto done;
	}
	fclose(f);
	f = NULL;
	if (render_text(text, vars, &out) == -1) {
		fprintf(stderr, "vivariumctl: %s filled in is over %d bytes\n",
		    path, TEMPLATE_MAX);
		goto done;
	}
	snprintf(path, sizeof(path), "%s/%s", outdir, outname);
	if ((f = fopen(path, "w")) == NULL
	    || fwrite(out.data, 1, out.len, f) != out.len) {
		fprintf(stderr, "vivariumctl: cannot write %s: %s\n", path,
		    strerror(errno));
		goto done;
	}
	printf("wrote %s\n", path);
	rc = 0;
done:
	if (f != NULL)
		fclose(f);
	free(text);
	buf_release(&out);
	return rc;
}

/*
 * The sandbox's environment as Environment= lines, one a variable, quoted
 * as systemd unquotes them (\\ and \", and %% for its specifiers): the
 * same list the supervisor gives its containers (sbenv.c), sandbox.env
 * first.  But no file links: nothing writes the user's key into the run
 * directory before systemd starts the sandbox, and it may not sit in a
 * unit file.  A value with a control character has no way into a unit
 * line: refused.
 */
static int
env_lines(const struct conf *c, const char *user, const char *proxy_ip,
    struct buf *out)
{
	struct sbenv_how	 how = { .proxy = proxy_ip,
	    .proxy_port = c->egress_port, .key = SBENV_KEY_NONE };
	struct sbenv		 e;
	const char		*p;
	size_t			 i;
	int			 r = 0;

	if (sbenv_make(c, user, &how, &e) == -1)
		return -1;
	for (i = 0; i < e.n && r == 0; i++) {
		r = buf_appendf(out, "%sEnvironment=\"%s=", i > 0 ? "\n" : "",
		    e.v[i].name);
		for (p = e.v[i].value; *p != '\0' && r == 0; p++) {
			if ((unsigned char)*p < ' ' || *p == 0x7f) {
				fprintf(stderr, "vivariumctl: sandbox.env %s "
				    "holds a control character, which a unit "
				    "file cannot carry\n", e.v[i].name);
				sbenv_release(&e);
				return -1;
			}
			if (*p == '\\' || *p == '"')
				r = buf_appendf(out, "\\%c", *p);
			else if (*p == '%')
				r = buf_appends(out, "%%");
			else
				r = buf_append(out, p, 1);
		}
		if (r == 0)
			r = buf_appends(out, "\"");
	}
	sbenv_release(&e);
	if (r == -1)
		fprintf(stderr, "vivariumctl: sandbox.env is too long for a "
		    "unit file\n");
	return r;
}

/* The labels as Label= lines; the container's say what ids it runs as. */
static int
label_lines(const struct conf *c, const char *user, int container,
    struct buf *out)
{
	/* Neither a slot nor rootless: no user namespace of its own. */
	static const struct sandbox_host	 nons;
	struct sbenv_label			 l[SBENV_LABELS_MAX];
	char					 ids[64];
	size_t					 i, n;
	int					 r = 0;

	n = sbenv_labels(0, user, l);
	for (i = 0; i < n && r == 0; i++)
		r = buf_appendf(out, "%sLabel=%s=%s", i > 0 ? "\n" : "",
		    l[i].key, l[i].value);
	if (container && r == 0) {
		sandbox_ids_label(c, &nons, ids, sizeof(ids));
		r = buf_appendf(out, "\nLabel=" SANDBOX_IDS_LABEL "=%s", ids);
	}
	return r;
}

int
render_user(const struct conf *c, struct podman *p, const char *user,
    const char *tdir, const char *outdir)
{
	const struct limits	*l = conf_limits(c, user);
	struct sbenv_names	 sn;
	struct names		 n;
	struct buf		 egress = BUF_INIT(4096);
	struct buf		 env = BUF_INIT(1 << 16);
	struct buf		 nlabels = BUF_INIT(1024);
	struct buf		 clabels = BUF_INIT(1024);
	struct berr		 e;
	json_t			*net = NULL;
	char			 mem[32], cpus[32], pids[32], ip[64], tmp[32];
	char			 stop[32], br[16], cname[128], nname[128];
	char			 vname[128];
	int			 r, rc = -1;

	if (sbenv_names(user, &sn) == -1 || sandbox_names(c, user, &n) == -1)
		return -1;
	snprintf(mem, sizeof(mem), "%llum", l->memory >> 20);
	snprintf(cpus, sizeof(cpus), "%.2f", (double)l->cpus_milli / 1000.0);
	snprintf(pids, sizeof(pids), "%lld", sandbox_pids_limit(c, l));
	sandbox_bridge_name(user, br, sizeof(br));
	snprintf(tmp, sizeof(tmp), "%llu", c->tmp_size);
	snprintf(stop, sizeof(stop), "%ld", (long)c->stop_timeout);
	ip[0] = '\0';
	if (c->egress_container == NULL)
		r = buf_appends(&egress, "# no egress proxy configured");
	/* The proxy's fixed address comes from the network's subnet. */
	else if (podman_network_inspect(p, n.network, &net, &e) == 0
	    && net != NULL && sandbox_proxy_ip_of(net, ip, sizeof(ip)) == 0)
		r = buf_appendf(&egress, "# The egress proxy, connected with: "
		    "podman network connect --ip %s %s %s", ip, n.network,
		    c->egress_container);
	else
		r = buf_appendf(&egress, "# egress: the network %s does not "
		    "exist yet, so the proxy's address is not known: start it, "
		    "then render again", n.network);
	json_decref(net);
	if (r == -1) {
		fprintf(stderr, "vivariumctl: the egress settings are too long\n");
		goto done;
	}
	if (label_lines(c, user, 0, &nlabels) == -1
	    || label_lines(c, user, 1, &clabels) == -1) {
		fprintf(stderr, "vivariumctl: the labels are too long\n");
		goto done;
	}
	if (env_lines(c, user, ip[0] != '\0' ? ip : NULL, &env) == -1)
		goto done;
	{
		const char *vars[] = { "USER", user, "NAME", sn.sandbox,
		    "WORKSPACE", sn.workspace, "IMAGE", c->image,
		    "MEMORY", mem, "CPUS", cpus, "PIDS", pids,
		    "RUNDIR", n.rundir, "SANDBOX_USER", c->sandbox_user,
		    "EGRESS", buf_str(&egress), "ENVIRONMENT", buf_str(&env),
		    "LABELS", buf_str(&nlabels),
		    "CONTAINER_LABELS", buf_str(&clabels),
		    "TMP_SIZE", tmp, "STOP_TIMEOUT", stop, "BRIDGE", br,
		    /* The service's runtime, as the supervisor's own have. */
		    "RUNTIME", c->runsc ? "PodmanArgs=--runtime=runsc" :
		    "# The runtime: Podman's default",
		    /* Quadlets run with the host's podman: 4.6+ has strict. */
		    "ISOLATE", "true", NULL };

		snprintf(cname, sizeof(cname), "%s.container", sn.sandbox);
		snprintf(nname, sizeof(nname), "%s.network", sn.sandbox);
		snprintf(vname, sizeof(vname), "%s-workspace.volume",
		    sn.sandbox);
		if (render_file(tdir, "vivarium-user.network", outdir, nname,
		    vars) == -1 || render_file(tdir, "vivarium-user.volume",
		    outdir, vname, vars) == -1 || render_file(tdir,
		    "vivarium-user.container", outdir, cname, vars) == -1)
			goto done;
	}
	rc = 0;
done:
	buf_release(&egress);
	buf_release(&env);
	buf_release(&nlabels);
	buf_release(&clabels);
	return rc;
}

/* -------------------------------------------------------------- kubernetes */

static int
print_doc(FILE *out, json_t *doc)
{
	int	 r;

	if (doc == NULL)
		return -1;
	r = fputs("---\n", out) == EOF
	    || json_dumpf(doc, out, JSON_INDENT(2)) == -1
	    || fputc('\n', out) == EOF ? -1 : 0;
	json_decref(doc);
	return r;
}

int
render_kube(const struct conf *c, const char *user, long slot, int userns,
    FILE *out)
{
	char	 secret[KSPEC_SECRET_HEX + 1], proxy[320];
	int	 resolved, r, guessed = 0;

	if (!c->link_keys.have_master) {
		fprintf(stderr, "vivariumctl: no master link key (links.key_file "
		    "%s), so the sandbox's link key cannot be derived\n",
		    c->link_key_file);
		return -1;
	}
	/* As the backend makes a new Pod's: at random, each time. */
	if (kspec_secret_new(secret) == -1) {
		fprintf(stderr, "vivariumctl: cannot make the agent's secret: "
		    "%s\n", strerror(errno));
		return -1;
	}
	/* auto, no cluster to ask: as on one of 1.33 or newer. */
	if (userns == -1) {
		userns = c->kube.user_namespace != KUBE_USERNS_OFF;
		guessed = c->kube.user_namespace == KUBE_USERNS_AUTO;
	}
	kspec_proxy_addr(c, proxy, sizeof(proxy), &resolved);
	r = print_doc(out, kspec_pvc(c, user, slot)) == -1
	    || print_doc(out, kspec_netpol(c, user)) == -1
	    || print_doc(out, kspec_pod(c, user, slot, proxy, secret, userns))
	    == -1 ? -1 : 0;
	explicit_bzero(secret, sizeof(secret));
	if (r == -1)
		fprintf(stderr, "vivariumctl: cannot write the objects\n");
	else if (guessed)
		fprintf(stderr, "vivariumctl: kubernetes.user_namespace is auto "
		    "and the cluster's version is not known: the Pod is shown "
		    "with hostUsers: false, as on Kubernetes 1.33 and newer; "
		    "before 1.33 it runs as uid_base + its slot on the node\n");
	else if (!resolved)
		fprintf(stderr, "vivariumctl: %s does not resolve here: the Pod "
		    "names the proxy by it, where the supervisor would give its "
		    "address\n", c->kube.egress_host);
	return r;
}

int
render_quadlets(const struct conf *c, const char *user, const char *tdir,
    const char *outdir)
{
	struct podman	*p;
	int		 r;

	if ((p = podman_new(c->podman_socket, c->podman_timeout_ms)) == NULL) {
		fprintf(stderr, "vivariumctl: no Podman client: %s\n",
		    strerror(errno));
		return -1;
	}
	r = render_user(c, p, user, tdir, outdir);
	podman_free(p);
	return r;
}
