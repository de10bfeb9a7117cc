/*
 * render.c: vivariumctl render, one user's sandbox as quadlet files for
 * operators who let systemd own sandboxes.  The templates (templates/) hold
 * {{NAME}} placeholders; the values come from the same config and the same
 * builders (spec.c) as the objects the supervisor makes through the API.
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
 * The template's PROXY_ENV line: the variables the sandbox spec sets
 * (sandbox_proxy_env), so a quadlet sandbox and an API one name the
 * proxy alike, and how the proxy gets onto the network at that address.
 */
static int
proxy_env(const struct conf *c, const char *network, const char *ip,
    struct buf *out)
{
	const char	*k, *sep = "";
	json_t		*env, *v;
	int		 r;

	if ((env = sandbox_proxy_env(ip, c->egress_port)) == NULL)
		return -1;
	r = buf_appendf(out, "# The egress proxy, connected with: podman "
	    "network connect --ip %s %s %s\nEnvironment=", ip, network,
	    c->egress_container);
	/* Quadlet splits Environment= at spaces; no value here has one. */
	json_object_foreach(env, k, v) {
		if (r == 0)
			r = buf_appendf(out, "%s%s=%s", sep, k,
			    json_string_value(v));
		sep = " ";
	}
	json_decref(env);
	return r;
}

/*
 * sandbox.env as Environment= lines, one a variable, quoted as systemd
 * unquotes them (\\ and \", and %% for its specifiers).  A value with a
 * control character has no way into a unit line: refused.
 */
static int
sandbox_env_lines(const struct conf *c, struct buf *out)
{
	const char	*p;
	size_t		 i;
	int		 r = 0;

	if (c->nenv == 0)
		return buf_appends(out, "# sandbox.env: none");
	for (i = 0; i < c->nenv && r == 0; i++) {
		r = buf_appendf(out, "%sEnvironment=\"%s=", i > 0 ? "\n" : "",
		    c->env[i].key);
		for (p = c->env[i].value; *p != '\0' && r == 0; p++) {
			if ((unsigned char)*p < ' ' || *p == 0x7f) {
				fprintf(stderr, "vivariumctl: sandbox.env %s "
				    "holds a control character, which a unit "
				    "file cannot carry\n", c->env[i].key);
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
	if (r == -1)
		fprintf(stderr, "vivariumctl: sandbox.env is too long for a "
		    "unit file\n");
	return r;
}

int
render_user(const struct conf *c, struct podman *p, const char *user,
    const char *tdir, const char *outdir)
{
	const struct limits	*l = conf_limits(c, user);
	struct names		 n;
	struct buf		 proxy = BUF_INIT(4096);
	struct buf		 senv = BUF_INIT(1 << 16);
	struct berr		 e;
	json_t			*net = NULL;
	char			 mem[32], cpus[32], pids[32], ip[64], tmp[32];
	char			 cname[128], nname[128];
	int			 r, rc = -1;

	if (sandbox_names(c, user, &n) == -1)
		return -1;
	snprintf(mem, sizeof(mem), "%llum", l->memory >> 20);
	snprintf(cpus, sizeof(cpus), "%.2f", (double)l->cpus_milli / 1000.0);
	snprintf(pids, sizeof(pids), "%ld", l->pids);
	snprintf(tmp, sizeof(tmp), "%llu", c->tmp_size);
	if (sandbox_env_lines(c, &senv) == -1)
		goto done;
	if (c->egress_container == NULL)
		r = buf_appends(&proxy, "# no egress proxy configured");
	/* The proxy's fixed address comes from the network's subnet. */
	else if (podman_network_inspect(p, n.network, &net, &e) == 0
	    && net != NULL && sandbox_proxy_ip_of(net, ip, sizeof(ip)) == 0)
		r = proxy_env(c, n.network, ip, &proxy);
	else
		r = buf_appendf(&proxy, "# egress: the network %s does not "
		    "exist yet, so the proxy's address is not known: start it, "
		    "then render again", n.network);
	json_decref(net);
	if (r == -1) {
		fprintf(stderr, "vivariumctl: the egress settings are too long\n");
		goto done;
	}
	{
		const char *vars[] = { "USER", user, "IMAGE", c->image,
		    "MEMORY", mem, "CPUS", cpus, "PIDS", pids,
		    "RUNDIR", n.rundir, "SANDBOX_USER", c->sandbox_user,
		    "PROXY_ENV", buf_str(&proxy),
		    "SANDBOX_ENV", buf_str(&senv), "TMP_SIZE", tmp,
		    /* Quadlets run with the host's podman: 4.6+ has strict. */
		    "ISOLATE", "true", NULL };

		snprintf(cname, sizeof(cname), "vivarium-%s.container", user);
		snprintf(nname, sizeof(nname), "vivarium-%s.network", user);
		if (render_file(tdir, "vivarium-user.network", outdir, nname,
		    vars) == -1 || render_file(tdir, "vivarium-user.container",
		    outdir, cname, vars) == -1)
			goto done;
	}
	rc = 0;
done:
	buf_release(&proxy);
	buf_release(&senv);
	return rc;
}

/* ---------------------------------------------------------------- kubernetes */

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
