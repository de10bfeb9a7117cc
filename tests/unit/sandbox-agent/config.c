/*
 * Unit tests for sandbox-agent/config.c: defaults, every variable's checks,
 * and all problems reported in one go.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../sandbox-agent/config.c"

static const char *const vars[] = {
	"VIVARIUM_WORKDIR", "VIVARIUM_HOST", "VIVARIUM_PORT", "VIVARIUM_SOCKET",
	"VIVARIUM_MAX_TIMEOUT", "VIVARIUM_OUTPUT_LIMIT", "VIVARIUM_MAX_IMAGES",
	"VIVARIUM_MAX_IMAGE_SIDE", "VIVARIUM_MAX_IMAGE_BYTES",
	"VIVARIUM_MAX_RESULT_IMAGE_BYTES", "VIVARIUM_PERSIST_NAMESPACE",
	"VIVARIUM_NAMESPACE_MAX_BYTES", "VIVARIUM_STATE_SUMMARY",
	"VIVARIUM_USER_HEADER", "VIVARIUM_ALLOWED_ORIGINS", "VIVARIUM_PYTHON",
	"VIVARIUM_PYTHONPATH", "VIVARIUM_SOCKET_MODE", "VIVARIUM_SWEEP",
	"VIVARIUM_PUBLIC_URL", "VIVARIUM_LINK_KEY", "VIVARIUM_LINK_USER",
	"VIVARIUM_LINK_KEY_FILE", "VIVARIUM_DOWNLOAD_LIFETIME",
	"VIVARIUM_UPLOAD_LIFETIME", "VIVARIUM_LINK_MAX_LIFETIME",
	"VIVARIUM_UPLOAD_MAX_BYTES", "VIVARIUM_AGENT_SECRET",
	"VIVARIUM_AGENT_SECRET_FILE", "VIVARIUM_AGENT_TOKEN",
	"VIVARIUM_AGENT_TOKEN_FILE", NULL
};

static int
clean_env(void **state)
{
	size_t i;

	for (i = 0; vars[i] != NULL; i++)
		unsetenv(vars[i]);
	setenv("VIVARIUM_WORKDIR", "/tmp", 1);
	setenv("VIVARIUM_PYTHON", "/bin/sh", 1);
	return 0;
}

/* Loads; returns the diagnostics text (static) and the count in *n. */
static const char *
load(struct agent_config *c, int *n)
{
	static char	 text[4096];
	struct confdiag	 d;

	confdiag_init(&d, NULL);
	agent_config_load(c, &d);
	*n = d.count;
	snprintf(text, sizeof(text), "%s", buf_str(&d.text));
	confdiag_release(&d);
	return text;
}

static void
test_defaults(void **state)
{
	struct agent_config	 c;
	int			 n;

	load(&c, &n);
	assert_int_equal(n, 0);
	assert_string_equal(c.workdir, "/tmp");
	/* Loopback unless told otherwise. */
	assert_string_equal(c.host, "127.0.0.1");
	assert_false(agent_config_exposed(&c));
	assert_int_equal(c.port, 8000);
	assert_null(c.socket);
	assert_int_equal(c.max_timeout, 300);
	assert_int_equal(c.output_limit, 20000);
	assert_int_equal(c.max_images, 4);
	assert_int_equal(c.max_image_side, 1280);
	assert_int_equal(c.max_image_bytes, 25600);
	assert_int_equal(c.max_result_image_bytes, 102400);
	assert_int_equal(c.persist_namespace, 1);
	assert_int_equal(c.namespace_max_bytes, 268435456ULL);
	assert_int_equal(c.state_summary, 1);
	assert_null(c.user_header);
	assert_string_equal(c.allowed_origins, "");
	agent_config_release(&c);

	unsetenv("VIVARIUM_PYTHON");
	load(&c, &n);
	assert_string_equal(c.python, "python3");
	agent_config_release(&c);
}

static void
test_values(void **state)
{
	struct agent_config	 c;
	int			 n;

	setenv("VIVARIUM_PORT", "off", 1);
	setenv("VIVARIUM_SOCKET", "/run/vivarium/agent.sock", 1);
	setenv("VIVARIUM_MAX_TIMEOUT", "30", 1);
	setenv("VIVARIUM_MAX_IMAGES", "0", 1);
	setenv("VIVARIUM_MAX_IMAGE_BYTES", "50000", 1);
	setenv("VIVARIUM_MAX_RESULT_IMAGE_BYTES", "4194304", 1);
	setenv("VIVARIUM_PERSIST_NAMESPACE", "no", 1);
	setenv("VIVARIUM_NAMESPACE_MAX_BYTES", "64m", 1);
	setenv("VIVARIUM_USER_HEADER", "X-User-ID", 1);
	setenv("VIVARIUM_ALLOWED_ORIGINS", "https://chat.example.org", 1);
	setenv("VIVARIUM_PYTHONPATH", "/tmp", 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.port, -1);
	assert_string_equal(c.socket, "/run/vivarium/agent.sock");
	assert_int_equal(c.socket_mode, 0600);
	assert_int_equal(c.max_timeout, 30);
	assert_int_equal(c.max_images, 0);
	assert_int_equal(c.max_image_bytes, 50000);
	assert_int_equal(c.max_result_image_bytes, 4194304);
	assert_int_equal(c.persist_namespace, 0);
	assert_int_equal(c.namespace_max_bytes, 64ULL << 20);
	assert_string_equal(c.user_header, "X-User-ID");
	assert_string_equal(c.pythonpath, "/tmp");
	agent_config_release(&c);
}

static void
test_all_problems_at_once(void **state)
{
	struct agent_config	 c;
	const char		*t;
	int			 n;

	setenv("VIVARIUM_WORKDIR", "/nonexistent/dir", 1);
	setenv("VIVARIUM_PORT", "80000", 1);
	setenv("VIVARIUM_MAX_TIMEOUT", "-5", 1);
	setenv("VIVARIUM_OUTPUT_LIMIT", "lots", 1);
	setenv("VIVARIUM_MAX_IMAGES", "4.5", 1);
	setenv("VIVARIUM_MAX_IMAGE_SIDE", "0", 1);
	/* Under a kilobyte is no image; over 4 MiB breaks the result cap. */
	setenv("VIVARIUM_MAX_IMAGE_BYTES", "100", 1);
	setenv("VIVARIUM_MAX_RESULT_IMAGE_BYTES", "4194305", 1);
	setenv("VIVARIUM_PERSIST_NAMESPACE", "maybe", 1);
	setenv("VIVARIUM_NAMESPACE_MAX_BYTES", "-1", 1);
	setenv("VIVARIUM_STATE_SUMMARY", "2", 1);
	setenv("VIVARIUM_USER_HEADER", "X User", 1);
	setenv("VIVARIUM_ALLOWED_ORIGINS", "chat.example.org", 1);
	setenv("VIVARIUM_PYTHON", "/nonexistent/python3", 1);
	setenv("VIVARIUM_PYTHONPATH", "/nonexistent", 1);
	setenv("VIVARIUM_SOCKET", "relative.sock", 1);
	setenv("VIVARIUM_SOCKET_MODE", "0400", 1);
	t = load(&c, &n);
	assert_int_equal(n, 17);
	assert_non_null(strstr(t, "VIVARIUM_MAX_IMAGE_BYTES"));
	assert_non_null(strstr(t, "VIVARIUM_MAX_RESULT_IMAGE_BYTES"));
	assert_non_null(strstr(t, "VIVARIUM_SOCKET_MODE"));
	assert_non_null(strstr(t, "VIVARIUM_WORKDIR"));
	assert_non_null(strstr(t, "VIVARIUM_PORT"));
	assert_non_null(strstr(t, "VIVARIUM_MAX_TIMEOUT"));
	assert_non_null(strstr(t, "VIVARIUM_OUTPUT_LIMIT"));
	assert_non_null(strstr(t, "VIVARIUM_MAX_IMAGES="));
	assert_non_null(strstr(t, "VIVARIUM_MAX_IMAGE_SIDE"));
	assert_non_null(strstr(t, "VIVARIUM_PERSIST_NAMESPACE"));
	assert_non_null(strstr(t, "VIVARIUM_NAMESPACE_MAX_BYTES"));
	assert_non_null(strstr(t, "VIVARIUM_STATE_SUMMARY"));
	assert_non_null(strstr(t, "VIVARIUM_USER_HEADER"));
	assert_non_null(strstr(t, "VIVARIUM_ALLOWED_ORIGINS"));
	assert_non_null(strstr(t, "VIVARIUM_PYTHON="));
	assert_non_null(strstr(t, "VIVARIUM_PYTHONPATH"));
	assert_non_null(strstr(t, "VIVARIUM_SOCKET="));
	agent_config_release(&c);
}

static void
test_socket_mode(void **state)
{
	static const char *const bad[] = { "0400", "0644x", "888", "-0600",
	    "01777", "0o660", NULL };
	struct agent_config	 c;
	size_t			 i;
	int			 n;

	setenv("VIVARIUM_SOCKET_MODE", "0660", 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.socket_mode, 0660);
	agent_config_release(&c);
	for (i = 0; bad[i] != NULL; i++) {
		setenv("VIVARIUM_SOCKET_MODE", bad[i], 1);
		assert_non_null(strstr(load(&c, &n), "VIVARIUM_SOCKET_MODE"));
		assert_int_equal(n, 1);
		agent_config_release(&c);
	}
}

static void
test_port_off_needs_socket(void **state)
{
	struct agent_config	 c;
	int			 n;

	setenv("VIVARIUM_PORT", "off", 1);
	assert_non_null(strstr(load(&c, &n), "VIVARIUM_SOCKET"));
	assert_int_equal(n, 1);
	agent_config_release(&c);
}

static void
test_warm(void **state)
{
	static const char *const bad[] = { "numpy;rm", "1numpy", ".numpy",
	    "numpy..x", "num py-x", NULL };
	struct agent_config	 c;
	size_t			 i;
	int			 n;

	unsetenv("VIVARIUM_WARM");
	unsetenv("VIVARIUM_WARM_IMPORTS");
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.warm, 1);
	assert_string_equal(c.warm_imports,
	    "numpy,pandas,matplotlib,matplotlib.pyplot");
	agent_config_release(&c);

	setenv("VIVARIUM_WARM", "off", 1);
	setenv("VIVARIUM_WARM_IMPORTS", "numpy, scipy.stats,sklearn", 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.warm, 0);
	assert_string_equal(c.warm_imports, "numpy, scipy.stats,sklearn");
	agent_config_release(&c);

	setenv("VIVARIUM_WARM", "sometimes", 1);
	assert_non_null(strstr(load(&c, &n), "VIVARIUM_WARM"));
	assert_int_equal(n, 1);
	agent_config_release(&c);
	unsetenv("VIVARIUM_WARM");
	for (i = 0; bad[i] != NULL; i++) {
		setenv("VIVARIUM_WARM_IMPORTS", bad[i], 1);
		assert_non_null(strstr(load(&c, &n), "VIVARIUM_WARM_IMPORTS"));
		assert_int_equal(n, 1);
		agent_config_release(&c);
	}
	unsetenv("VIVARIUM_WARM_IMPORTS");
}

/* Off by default; a bad value and, as root (as these tests run), 1 refused. */
static void
test_sweep(void **state)
{
	struct agent_config	 c;
	const char		*t;
	int			 n;

	unsetenv("VIVARIUM_SWEEP");
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.sweep, 0);
	agent_config_release(&c);

	setenv("VIVARIUM_SWEEP", "sometimes", 1);
	assert_non_null(strstr(load(&c, &n), "VIVARIUM_SWEEP"));
	assert_int_equal(n, 1);
	agent_config_release(&c);

	setenv("VIVARIUM_SWEEP", "0", 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	agent_config_release(&c);

	setenv("VIVARIUM_SWEEP", "1", 1);
	t = load(&c, &n);
	if (getuid() == 0 || geteuid() == 0) {
		assert_int_equal(n, 1);
		assert_non_null(strstr(t, "VIVARIUM_SWEEP=1"));
		assert_non_null(strstr(t, "root"));
	} else {
		assert_int_equal(n, 0);
		assert_int_equal(c.sweep, 1);
	}
	agent_config_release(&c);
	unsetenv("VIVARIUM_SWEEP");
}

static int
key_file_write(char *path, const char *text)
{
	int	 fd;

	snprintf(path, 32, "/tmp/vlkXXXXXX");
	if ((fd = mkstemp(path)) == -1)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)
	    || write(fd, "\n", 1) != 1) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void
test_links(void **state)
{
	static const char key[] = "00112233445566778899aabbccddeeff"
	    "00112233445566778899aabbccddeeff";
	struct agent_config	 c;
	const char		*t;
	char			 kf[32];
	int			 n;

	/* Defaults: a key file in the state dir, not made by loading. */
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.links, 0);
	assert_string_equal(c.link_key_file, "/tmp/.vivarium/link.key");
	assert_int_equal(c.download_lifetime, 86400);
	assert_int_equal(c.upload_lifetime, 3600);
	assert_int_equal(c.link_max_lifetime, 7 * 86400);
	assert_int_equal(c.upload_max, 2ULL << 30);
	assert_null(c.public_url);
	agent_config_release(&c);

	/* The supervisor's form: one user's key, not passed on to runs. */
	setenv("VIVARIUM_LINK_KEY", key, 1);
	setenv("VIVARIUM_LINK_USER", "alice", 1);
	setenv("VIVARIUM_PORT", "off", 1);
	setenv("VIVARIUM_SOCKET", "/tmp/x.sock", 1);
	setenv("VIVARIUM_PUBLIC_URL", "https://box.lan/", 1);
	setenv("VIVARIUM_DOWNLOAD_LIFETIME", "2h", 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.links, 1);
	assert_string_equal(c.link_user, "alice");
	assert_null(getenv("VIVARIUM_LINK_KEY"));
	assert_int_equal(c.download_lifetime, 7200);
	agent_config_release(&c);

	/*
	 * With Podman the key comes in a file, read and removed at start, so
	 * no process's environment shows it; one that is gone (the container
	 * started again without the supervisor) turns links off, not fatal.
	 */
	unsetenv("VIVARIUM_LINK_KEY");
	assert_int_equal(key_file_write(kf, key), 0);
	setenv("VIVARIUM_LINK_KEY_FILE", kf, 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.links, 1);
	assert_string_equal(c.link_user, "alice");
	assert_int_equal(access(kf, F_OK), -1);
	agent_config_release(&c);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.links, 0);
	agent_config_release(&c);
	assert_int_equal(key_file_write(kf, "not a key"), 0);
	setenv("VIVARIUM_LINK_KEY_FILE", kf, 1);
	t = load(&c, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(t, "VIVARIUM_LINK_KEY_FILE="));
	assert_non_null(strstr(t, "expected 64 hex digits"));
	assert_int_equal(access(kf, F_OK), -1);
	agent_config_release(&c);
	unsetenv("VIVARIUM_LINK_KEY_FILE");

	/* Every problem, at once, each naming its variable. */
	setenv("VIVARIUM_LINK_KEY", "abc", 1);
	setenv("VIVARIUM_PUBLIC_URL", "ftp://box", 1);
	setenv("VIVARIUM_UPLOAD_LIFETIME", "30d", 1);
	setenv("VIVARIUM_UPLOAD_MAX_BYTES", "lots", 1);
	t = load(&c, &n);
	assert_int_equal(n, 4);
	assert_non_null(strstr(t, "VIVARIUM_LINK_KEY: the link key must be 64 hex"));
	assert_non_null(strstr(t, "VIVARIUM_PUBLIC_URL=\"ftp://box\""));
	assert_non_null(strstr(t, "may not be longer than"));
	assert_non_null(strstr(t, "VIVARIUM_UPLOAD_MAX_BYTES"));
	agent_config_release(&c);
	unsetenv("VIVARIUM_LINK_USER");
	setenv("VIVARIUM_LINK_KEY", key, 1);
	unsetenv("VIVARIUM_UPLOAD_LIFETIME");
	unsetenv("VIVARIUM_UPLOAD_MAX_BYTES");
	unsetenv("VIVARIUM_PUBLIC_URL");
	t = load(&c, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(t, "go together"));
	agent_config_release(&c);
}

/* A file holding data, for VIVARIUM_AGENT_SECRET_FILE; its path (static). */
static const char *
secret_file(const char *data, size_t len)
{
	static char	 path[64];
	FILE		*f;

	snprintf(path, sizeof(path), "/tmp/vivarium-secret-test.%ld",
	    (long)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
	return path;
}

/*
 * Sets name to value, loads, and checks the one problem reported says want
 * and quotes none of hidden (the secret or a piece of it); both variables
 * are gone from the environment afterwards either way.
 */
static void
secret_refused(const char *name, const char *value, const char *want,
    const char *hidden)
{
	struct agent_config	 c;
	const char		*t;
	int			 n;

	setenv(name, value, 1);
	t = load(&c, &n);
	if (n != 1 || strstr(t, want) == NULL)
		fail_msg("%s: %d problem(s), not one saying \"%s\":\n%s", name, n,
		    want, t);
	if (hidden != NULL && strstr(t, hidden) != NULL)
		fail_msg("%s: the message quotes the secret:\n%s", name, t);
	assert_null(getenv("VIVARIUM_AGENT_SECRET"));
	assert_null(getenv("VIVARIUM_AGENT_SECRET_FILE"));
	agent_config_release(&c);
}

/* Loads with a secret expected to pass; its length. */
static size_t
secret_taken(const char *name, const char *value)
{
	struct agent_config	 c;
	size_t			 len;
	int			 n;

	setenv(name, value, 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_null(getenv("VIVARIUM_AGENT_SECRET"));
	assert_null(getenv("VIVARIUM_AGENT_SECRET_FILE"));
	len = c.secret_len;
	agent_config_release(&c);
	return len;
}

static void
test_secret(void **state)
{
	static const char s64[] = "0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef";
	char			 s128[129], s129[130], v[256];
	struct agent_config	 c;
	const char		*path;
	int			 n;

	/* None by default; links still served on an open TCP port. */
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.secret_len, 0);
	assert_non_null(c.link_key_file);
	agent_config_release(&c);

	/* Taken, then gone from the environment runs inherit. */
	setenv("VIVARIUM_AGENT_SECRET", s64, 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_string_equal(c.secret, s64);
	assert_null(getenv("VIVARIUM_AGENT_SECRET"));
	/* Reached only by the supervisor: no link pages of its own. */
	assert_null(c.link_key_file);
	agent_config_release(&c);

	/* The bounds: 32 and 128 pass, 31 and 129 do not. */
	memset(s128, 'x', 128);
	s128[128] = '\0';
	memset(s129, 'x', 129);
	s129[129] = '\0';
	assert_int_equal(secret_taken("VIVARIUM_AGENT_SECRET", s128), 128);
	assert_int_equal(secret_taken("VIVARIUM_AGENT_SECRET", s128 + 96), 32);
	secret_refused("VIVARIUM_AGENT_SECRET", s128 + 97,
	    "VIVARIUM_AGENT_SECRET: 31 characters", "xxxxxxxx");
	secret_refused("VIVARIUM_AGENT_SECRET", s129, "129 characters",
	    "xxxxxxxx");

	/* A space, a control character, a byte past ASCII. */
	snprintf(v, sizeof(v), "%.40s %.20s", s64, s64);
	secret_refused("VIVARIUM_AGENT_SECRET", v, "character 41 is a space",
	    "0123456789");
	snprintf(v, sizeof(v), "%.40s\t%.20s", s64, s64);
	secret_refused("VIVARIUM_AGENT_SECRET", v, "control character",
	    "0123456789");
	snprintf(v, sizeof(v), "%.40s\xc3\xa9%.20s", s64, s64);
	secret_refused("VIVARIUM_AGENT_SECRET", v, "not ASCII", "0123456789");

	/* From a file: a final newline (or CRLF) is not part of it. */
	snprintf(v, sizeof(v), "%s\n", s64);
	path = secret_file(v, strlen(v));
	setenv("VIVARIUM_AGENT_SECRET_FILE", path, 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_string_equal(c.secret, s64);
	assert_null(getenv("VIVARIUM_AGENT_SECRET_FILE"));
	agent_config_release(&c);
	snprintf(v, sizeof(v), "%s\r\n", s64);
	assert_int_equal(secret_taken("VIVARIUM_AGENT_SECRET_FILE",
	    secret_file(v, strlen(v))), 64);
	assert_int_equal(secret_taken("VIVARIUM_AGENT_SECRET_FILE",
	    secret_file(s64, 64)), 64);
	snprintf(v, sizeof(v), "%s%s\n", s64, s64 + 10);
	assert_int_equal(secret_taken("VIVARIUM_AGENT_SECRET_FILE",
	    secret_file(v, strlen(v))), 118);
	/* Two lines, a long one, an empty file, none at all, a directory. */
	snprintf(v, sizeof(v), "%s\n%s\n", s64, s64);
	secret_refused("VIVARIUM_AGENT_SECRET_FILE", secret_file(v, strlen(v)),
	    "129 characters", "0123456789");
	snprintf(v, sizeof(v), "%s%s%s", s64, s64, s64);
	secret_refused("VIVARIUM_AGENT_SECRET_FILE", secret_file(v, strlen(v)),
	    "longer than 128", "0123456789");
	path = secret_file("", 0);
	secret_refused("VIVARIUM_AGENT_SECRET_FILE", path,
	    "VIVARIUM_AGENT_SECRET_FILE: 0 characters", NULL);
	unlink(path);
	secret_refused("VIVARIUM_AGENT_SECRET_FILE", path, "No such file", NULL);
	secret_refused("VIVARIUM_AGENT_SECRET_FILE", "/tmp",
	    "not a regular file", NULL);

	/* Both at once, or with no TCP listener to guard: refused. */
	path = secret_file(s64, 64);
	setenv("VIVARIUM_AGENT_SECRET_FILE", path, 1);
	secret_refused("VIVARIUM_AGENT_SECRET", s64, "both set", "0123456789");
	unlink(path);
	setenv("VIVARIUM_PORT", "off", 1);
	setenv("VIVARIUM_SOCKET", "/tmp/x.sock", 1);
	secret_refused("VIVARIUM_AGENT_SECRET", s64, "VIVARIUM_PORT=off",
	    "0123456789");
	unsetenv("VIVARIUM_PORT");
	unsetenv("VIVARIUM_SOCKET");
	/* Empty counts as unset. */
	assert_int_equal(secret_taken("VIVARIUM_AGENT_SECRET", ""), 0);
}

/* The standalone agent's token: the secret's rules, its own names. */
static void
test_token(void **state)
{
	static const char s64[] = "0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef";
	struct agent_config	 c;
	const char		*path;
	int			 n;

	setenv("VIVARIUM_AGENT_TOKEN", s64, 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_int_equal(c.token_len, 64);
	assert_string_equal(c.token, s64);
	assert_int_equal(c.secret_len, 0);
	/* Gone from the environment: no run inherits it. */
	assert_null(getenv("VIVARIUM_AGENT_TOKEN"));
	agent_config_release(&c);
	path = secret_file(s64, 64);
	setenv("VIVARIUM_AGENT_TOKEN_FILE", path, 1);
	load(&c, &n);
	assert_int_equal(n, 0);
	assert_string_equal(c.token, s64);
	agent_config_release(&c);
	unlink(path);
	secret_refused("VIVARIUM_AGENT_TOKEN", "short", "VIVARIUM_AGENT_TOKEN: 5 "
	    "characters", "short");
	setenv("VIVARIUM_AGENT_SECRET", s64, 1);
	secret_refused("VIVARIUM_AGENT_TOKEN", s64, "VIVARIUM_AGENT_SECRET and "
	    "VIVARIUM_AGENT_TOKEN are both set", "0123456789");
	unsetenv("VIVARIUM_AGENT_SECRET");
	setenv("VIVARIUM_PORT", "off", 1);
	setenv("VIVARIUM_SOCKET", "/tmp/x.sock", 1);
	secret_refused("VIVARIUM_AGENT_TOKEN", s64, "VIVARIUM_AGENT_TOKEN guards",
	    "0123456789");
	unsetenv("VIVARIUM_PORT");
	unsetenv("VIVARIUM_SOCKET");
}

/* Which listen addresses reach beyond this machine. */
static void
test_exposed(void **state)
{
	static const struct {
		const char	*host;
		int		 exposed;
	} cases[] = {
		{ "127.0.0.1", 0 }, { "127.0.0.2", 0 }, { "::1", 0 },
		{ "localhost", 0 }, { "0.0.0.0", 1 }, { "::", 1 },
	};
	struct agent_config	 c;
	size_t			 i;

	memset(&c, 0, sizeof(c));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c.host = cases[i].host;
		c.port = 8000;
		if (agent_config_exposed(&c) != cases[i].exposed)
			fail_msg("%s: exposed should be %d", cases[i].host,
			    cases[i].exposed);
		c.port = -1;	/* no TCP listener: nothing exposed */
		assert_false(agent_config_exposed(&c));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_defaults, clean_env),
		cmocka_unit_test_setup(test_values, clean_env),
		cmocka_unit_test_setup(test_all_problems_at_once, clean_env),
		cmocka_unit_test_setup(test_port_off_needs_socket, clean_env),
		cmocka_unit_test_setup(test_socket_mode, clean_env),
		cmocka_unit_test_setup(test_warm, clean_env),
		cmocka_unit_test_setup(test_sweep, clean_env),
		cmocka_unit_test_setup(test_links, clean_env),
		cmocka_unit_test_setup(test_secret, clean_env),
		cmocka_unit_test_setup(test_token, clean_env),
		cmocka_unit_test_setup(test_exposed, clean_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
