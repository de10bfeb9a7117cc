/*
 * config.c: the agent's settings, read once from VIVARIUM_* variables.
 * Every problem is collected so one start reports all of them.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "origin.h"
#include "spawn.h"
#include "banned.h"

/* An HTTP header name is an RFC 9110 token. */
static int
header_name_valid(const char *s)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	if (*s == '\0' || strlen(s) > 128)
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL)
			return 0;
	return 1;
}

/* Is name an executable, directly or on PATH? */
static int
executable_found(const char *name)
{
	char	 full[PATH_MAX];

	return spawn_find(name, NULL, NULL, full, sizeof(full)) == 0 &&
	    access(full, X_OK) == 0;
}

/*
 * The default VIVARIUM_PYTHONPATH: the python/ folder beside the bin/ the
 * binary is in (a checkout: bin/vivarium-agent next to python/vivarium),
 * else lib/vivarium/python there (make install: PREFIX/bin, PREFIX/lib).
 */
static char *
default_pythonpath(void)
{
	char		 exe[PATH_MAX], dir[PATH_MAX];
	ssize_t		 n;
	char		*slash;
	struct stat	 st;
	int		 r;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) == NULL)
		return NULL;
	*slash = '\0';				/* .../bin */
	if ((slash = strrchr(exe, '/')) == NULL)
		return NULL;
	*slash = '\0';				/* ... */
	r = snprintf(dir, sizeof(dir), "%s/python", exe[0] ? exe : "");
	if (r < 0 || (size_t)r >= sizeof(dir))
		return NULL;
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return strdup(dir);
	r = snprintf(dir, sizeof(dir), "%s/lib/vivarium/python", exe);
	if (r < 0 || (size_t)r >= sizeof(dir))
		return NULL;
	if (stat(dir, &st) == -1 || !S_ISDIR(st.st_mode))
		return NULL;
	return strdup(dir);
}

static void
load_listen(struct agent_config *cfg, struct confdiag *d)
{
	struct addrinfo	 hints, *res;
	const char	*v;
	int		 rc;

	cfg->host = config_env_str("VIVARIUM_HOST", "127.0.0.1");
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	rc = getaddrinfo(cfg->host, NULL, &hints, &res);
	if (rc != 0)
		confdiag_add(d, 0, "VIVARIUM_HOST=\"%s\": not an address this "
		    "machine can listen on (%s)", cfg->host, gai_strerror(rc));
	else
		freeaddrinfo(res);

	v = config_env_str("VIVARIUM_PORT", NULL);
	if (v != NULL && strcasecmp(v, "off") == 0)
		cfg->port = -1;
	else if (v != NULL && config_parse_long(v, 0, 65535, &cfg->port) == -1) {
		confdiag_add(d, 0, "VIVARIUM_PORT=\"%s\": expected a port "
		    "from 0 to 65535 (0 picks a free one), or \"off\"", v);
		cfg->port = 8000;
	} else if (v == NULL)
		cfg->port = 8000;

	cfg->socket = config_env_str("VIVARIUM_SOCKET", NULL);
	if (cfg->socket != NULL) {
		if (strlen(cfg->socket) >= sizeof(((struct sockaddr_un *)0)->sun_path))
			confdiag_add(d, 0, "VIVARIUM_SOCKET: the path is "
			    "longer than a unix socket path may be (%zu bytes)",
			    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		else if (cfg->socket[0] != '/')
			confdiag_add(d, 0, "VIVARIUM_SOCKET=\"%s\": expected an "
			    "absolute path", cfg->socket);
	}
	cfg->socket_mode = 0600;
	v = config_env_str("VIVARIUM_SOCKET_MODE", NULL);
	if (v != NULL) {
		char	*end;
		long	 m;

		errno = 0;
		m = strtol(v, &end, 8);
		if (errno != 0 || end == v || *end != '\0' || *v == '-' ||
		    *v == '+' || m < 0 || m > 0777 || (m & 0600) != 0600)
			confdiag_add(d, 0, "VIVARIUM_SOCKET_MODE=\"%s\": expected "
			    "an octal mode from 0600 to 0777 that keeps the "
			    "owner's rw (e.g. 0660)", v);
		else
			cfg->socket_mode = (mode_t)m;
	}
	if (cfg->port == -1 && cfg->socket == NULL)
		confdiag_add(d, 0, "VIVARIUM_PORT=off needs VIVARIUM_SOCKET: "
		    "the agent would listen nowhere");
}

/*
 * VIVARIUM_AGENT_SECRET: 32 to 128 printable ASCII characters, no spaces.
 * The messages never quote it: a refused start must not print a secret
 * that was one typo away from right.
 */
static int
secret_valid(const char *s, size_t len, const char *name, struct confdiag *d)
{
	size_t	 i;

	if (len < AGENT_SECRET_MIN || len > AGENT_SECRET_MAX) {
		confdiag_add(d, 0, "%s: %zu characters; expected %d to %d "
		    "printable ASCII characters without spaces (e.g. 64 hex "
		    "digits)", name, len, AGENT_SECRET_MIN, AGENT_SECRET_MAX);
		return 0;
	}
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] > '~') {
			confdiag_add(d, 0, "%s: character %zu is a space, a "
			    "control character or not ASCII; expected printable "
			    "ASCII without spaces", name, i + 1);
			return 0;
		}
	return 1;
}

/* A secret from a file: one line; a final newline is not part of it. */
static void
secret_from_file(const char *var, const char *path, char *out,
    size_t *outlen, struct confdiag *d)
{
	char		 b[AGENT_SECRET_MAX + 4];
	struct stat	 st;
	ssize_t		 n;
	size_t		 len = 0;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		confdiag_add(d, 0, "%s=\"%s\": %s", var, path, strerror(errno));
		return;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		/* A FIFO would block the start; a directory says nothing. */
		confdiag_add(d, 0, "%s=\"%s\": not a regular file", var, path);
		goto done;
	}
	while (len < sizeof(b) && (n = read(fd, b + len, sizeof(b) - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			confdiag_add(d, 0, "%s=\"%s\": %s", var, path,
			    strerror(errno));
			goto done;
		}
		len += (size_t)n;
	}
	if (len == sizeof(b)) {
		/* Filled the buffer: longer than any secret and its newline. */
		confdiag_add(d, 0, "%s=\"%s\": longer than %d characters; "
		    "expected one line of %d to %d printable ASCII characters",
		    var, path, AGENT_SECRET_MAX, AGENT_SECRET_MIN,
		    AGENT_SECRET_MAX);
		goto done;
	}
	if (len > 0 && b[len - 1] == '\n')
		len--;
	if (len > 0 && b[len - 1] == '\r')
		len--;
	if (secret_valid(b, len, var, d)) {
		memcpy(out, b, len);
		out[len] = '\0';
		*outlen = len;
	}
done:
	explicit_bzero(b, sizeof(b));
	close(fd);
}

/*
 * A bearer value from var or var_FILE into out (AGENT_SECRET_MAX + 1
 * bytes).  Copied, then wiped from the environment block and removed
 * from the environment, so no run inherits it and even this process's
 * /proc/PID/environ no longer shows it.
 */
static void
load_bearer(const char *var, const char *filevar, char *out, size_t *outlen,
    struct confdiag *d)
{
	char	*v = getenv(var);
	const char *file = config_env_str(filevar, NULL);
	size_t	 len;

	if (v != NULL && *v != '\0' && file != NULL)
		confdiag_add(d, 0, "%s and %s are both set; set one", var,
		    filevar);
	else if (v != NULL && *v != '\0') {
		len = strlen(v);
		if (secret_valid(v, len, var, d)) {
			memcpy(out, v, len + 1);
			*outlen = len;
		}
	} else if (file != NULL)
		secret_from_file(filevar, file, out, outlen, d);
	if (v != NULL)
		explicit_bzero(v, strlen(v));
	unsetenv(var);
	unsetenv(filevar);
}

/*
 * The per-sandbox secret of the TCP listener (docs/agent.md, "Reached over
 * a network"), and the token of a standalone agent reached beyond
 * loopback ("Listening beyond loopback").
 */
static void
load_secret(struct agent_config *cfg, struct confdiag *d)
{
	load_bearer("VIVARIUM_AGENT_SECRET", "VIVARIUM_AGENT_SECRET_FILE",
	    cfg->secret, &cfg->secret_len, d);
	load_bearer("VIVARIUM_AGENT_TOKEN", "VIVARIUM_AGENT_TOKEN_FILE",
	    cfg->token, &cfg->token_len, d);
	if (cfg->secret_len > 0 && cfg->port < 0)
		confdiag_add(d, 0, "VIVARIUM_AGENT_SECRET guards the TCP "
		    "listener, and VIVARIUM_PORT=off turns it off");
	if (cfg->token_len > 0 && cfg->port < 0)
		confdiag_add(d, 0, "VIVARIUM_AGENT_TOKEN guards the TCP "
		    "listener, and VIVARIUM_PORT=off turns it off");
	if (cfg->secret_len > 0 && cfg->token_len > 0)
		confdiag_add(d, 0, "VIVARIUM_AGENT_SECRET and "
		    "VIVARIUM_AGENT_TOKEN are both set: the secret makes the "
		    "TCP listener the supervisor's, the token guards a "
		    "standalone agent's; set one");
}

const char agent_exposed_warning[] = "the TCP listener (VIVARIUM_HOST) is "
    "reachable beyond loopback with no token: anyone who reaches it runs "
    "code as this user.  Set VIVARIUM_AGENT_TOKEN (clients send "
    "Authorization: Bearer <it>), or leave VIVARIUM_HOST unset to listen on "
    "127.0.0.1 only";

/*
 * 1 when the TCP listener's address is reachable from beyond this
 * machine: anything but 127.0.0.0/8 and ::1 (0.0.0.0 and :: are every
 * address).
 */
int
agent_config_exposed(const struct agent_config *cfg)
{
	struct addrinfo	 hints, *res, *ai;
	const unsigned char *a;
	int		 exposed = 0;

	if (cfg->port < 0)
		return 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(cfg->host, NULL, &hints, &res) != 0)
		return 1;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			a = (const unsigned char *)&((const struct sockaddr_in *)
			    (const void *)ai->ai_addr)->sin_addr;
			exposed |= a[0] != 127;
		} else if (ai->ai_family == AF_INET6)
			exposed |= !IN6_IS_ADDR_LOOPBACK(&((const struct
			    sockaddr_in6 *)(const void *)ai->ai_addr)->sin6_addr);
		else
			exposed = 1;
	}
	freeaddrinfo(res);
	return exposed;
}

static void
load_workdir(struct agent_config *cfg, struct confdiag *d)
{
	const char	*v = config_env_str("VIVARIUM_WORKDIR", "/workspace");
	struct stat	 st;

	if (stat(v, &st) == -1) {
		confdiag_add(d, 0, "VIVARIUM_WORKDIR=\"%s\": %s", v,
		    strerror(errno));
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		confdiag_add(d, 0, "VIVARIUM_WORKDIR=\"%s\": not a directory", v);
		return;
	}
	cfg->workdir = realpath(v, NULL);
	if (cfg->workdir == NULL)
		confdiag_add(d, 0, "VIVARIUM_WORKDIR=\"%s\": %s", v,
		    strerror(errno));
}

static void
load_python(struct agent_config *cfg, struct confdiag *d)
{
	const char	*v;
	struct stat	 st;

	cfg->python = config_env_str("VIVARIUM_PYTHON", "python3");
	if (!executable_found(cfg->python))
		confdiag_add(d, 0, "VIVARIUM_PYTHON=\"%s\": no such executable%s",
		    cfg->python, strchr(cfg->python, '/') ? "" : " on PATH");

	cfg->pycheck_cache = config_env_str("VIVARIUM_PYCHECK_CACHE", NULL);
	if (cfg->pycheck_cache != NULL && cfg->pycheck_cache[0] != '/')
		confdiag_add(d, 0, "VIVARIUM_PYCHECK_CACHE=\"%s\": not an "
		    "absolute path", cfg->pycheck_cache);

	v = config_env_str("VIVARIUM_PYTHONPATH", NULL);
	if (v == NULL) {
		cfg->pythonpath = default_pythonpath();
		return;
	}
	if (stat(v, &st) == -1 || !S_ISDIR(st.st_mode)) {
		confdiag_add(d, 0, "VIVARIUM_PYTHONPATH=\"%s\": not a directory",
		    v);
		return;
	}
	cfg->pythonpath = strdup(v);
	if (cfg->pythonpath == NULL)
		confdiag_add(d, 0, "out of memory");
}

/* VIVARIUM_WARM_IMPORTS: comma-separated dotted module names. */
static int
imports_valid(const char *s)
{
	int	 start = 1;

	for (; *s != '\0'; s++) {
		if (*s == ',' || *s == '.') {
			if (start && *s == '.')
				return 0;
			start = 1;
		} else if (isalnum((unsigned char)*s) || *s == '_') {
			if (start && isdigit((unsigned char)*s))
				return 0;
			start = 0;
		} else if (*s != ' ')
			return 0;
	}
	return 1;
}

static void
load_warm(struct agent_config *cfg, struct confdiag *d)
{
	config_env_bool(d, "VIVARIUM_WARM", 1, &cfg->warm);
	cfg->warm_imports = config_env_str("VIVARIUM_WARM_IMPORTS",
	    "numpy,pandas,matplotlib,matplotlib.pyplot");
	if (!imports_valid(cfg->warm_imports))
		confdiag_add(d, 0, "VIVARIUM_WARM_IMPORTS=\"%s\": expected "
		    "module names separated by commas (e.g. numpy,pandas,"
		    "matplotlib.pyplot)", cfg->warm_imports);
}

/*
 * One user's key from the file VIVARIUM_LINK_KEY_FILE (with
 * VIVARIUM_LINK_USER), which the supervisor writes into the run directory
 * before every start: read once and removed, so runs find it neither
 * there nor in any process's environment.  Missing or unreadable (the
 * container was started by hand, not by the supervisor): links are off,
 * said in the log.
 */
static int
user_key_take(const char *file, char hex[LINK_KEY_HEX + 2],
    struct confdiag *d)
{
	ssize_t	 n;
	int	 fd;

	if ((fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC))
	    == -1) {
		/* The sandbox still runs code: said, not fatal. */
		log_warnx("VIVARIUM_LINK_KEY_FILE=%s: %s (the supervisor "
		    "writes it at every start): file links are off", file,
		    strerror(errno));
		return -1;
	}
	n = read(fd, hex, LINK_KEY_HEX + 1);
	close(fd);
	if (unlink(file) == -1)
		log_warn("VIVARIUM_LINK_KEY_FILE=%s: removing it", file);
	if (n > 0 && hex[n - 1] == '\n')
		n--;
	if (n != LINK_KEY_HEX) {
		explicit_bzero(hex, LINK_KEY_HEX + 2);
		confdiag_add(d, 0, "VIVARIUM_LINK_KEY_FILE=%s: expected %d hex "
		    "digits, one user's key", file, LINK_KEY_HEX);
		return -1;
	}
	hex[n] = '\0';
	return 0;
}

/*
 * File links.  In a sandbox the supervisor hands over one user's key
 * (VIVARIUM_LINK_KEY, VIVARIUM_LINK_USER) and its own public URL; an agent
 * that serves its own links on TCP keeps a master key in a file, made on
 * first start.  With neither, the link tools say links are not set up.
 */
static void
load_links(struct agent_config *cfg, struct confdiag *d)
{
	const char	*hex, *file, *url;
	char		 def[PATH_MAX], err[512], filehex[LINK_KEY_HEX + 2];


	config_env_duration(d, "VIVARIUM_DOWNLOAD_LIFETIME", 86400, 60,
	    365L * 86400, &cfg->download_lifetime);
	config_env_duration(d, "VIVARIUM_UPLOAD_LIFETIME", 3600, 60,
	    365L * 86400, &cfg->upload_lifetime);
	config_env_duration(d, "VIVARIUM_LINK_MAX_LIFETIME", 7 * 86400, 60,
	    365L * 86400, &cfg->link_max_lifetime);
	config_env_size(d, "VIVARIUM_UPLOAD_MAX_BYTES", 2ULL << 30, 1ULL << 40,
	    &cfg->upload_max);
	if (cfg->download_lifetime > cfg->link_max_lifetime ||
	    cfg->upload_lifetime > cfg->link_max_lifetime)
		confdiag_add(d, 0, "VIVARIUM_DOWNLOAD_LIFETIME and "
		    "VIVARIUM_UPLOAD_LIFETIME may not be longer than "
		    "VIVARIUM_LINK_MAX_LIFETIME");

	url = config_env_str("VIVARIUM_PUBLIC_URL", NULL);
	if (url != NULL && strncmp(url, "http://", 7) != 0 &&
	    strncmp(url, "https://", 8) != 0)
		confdiag_add(d, 0, "VIVARIUM_PUBLIC_URL=\"%s\": expected the "
		    "address people's browsers use, http://host[:port] or "
		    "https://... (a reverse proxy in front)", url);
	cfg->public_url = url;

	hex = config_env_str("VIVARIUM_LINK_KEY", NULL);
	cfg->link_user = config_env_str("VIVARIUM_LINK_USER", NULL);
	file = config_env_str("VIVARIUM_LINK_KEY_FILE", NULL);
	if (hex == NULL && cfg->link_user != NULL && file != NULL) {
		/* The supervisor's way: a file in the run directory. */
		if (user_key_take(file, filehex, d) == -1) {
			cfg->link_user = NULL;
			return;
		}
		hex = filehex;
	}
	if (hex != NULL || cfg->link_user != NULL) {
		if (hex == NULL || cfg->link_user == NULL)
			confdiag_add(d, 0, "VIVARIUM_LINK_KEY and "
			    "VIVARIUM_LINK_USER go together (the supervisor "
			    "sets both)");
		else if (link_keys_set_user(&cfg->link_keys, cfg->link_user,
		    hex, err, sizeof(err)) == -1)
			confdiag_add(d, 0, "VIVARIUM_LINK_KEY: %s", err);
		else
			cfg->links = 1;
		/*
		 * Copied: runs need not inherit it (a print(os.environ) would
		 * put it in the chat), and wiped where it was, which is what
		 * /proc/<pid>/environ shows.  From the environment PID 1 keeps
		 * it too: the supervisor passes a file instead.
		 */
		if (hex == filehex)
			explicit_bzero(filehex, sizeof(filehex));
		else
			explicit_bzero((char *)(uintptr_t)hex, strlen(hex));
		unsetenv("VIVARIUM_LINK_KEY");
		return;
	}
	if (cfg->port < 0 || cfg->secret_len > 0 || cfg->workdir == NULL)
		return;		/* nobody to serve links: none are made */
	file = config_env_str("VIVARIUM_LINK_KEY_FILE", NULL);
	if (file == NULL) {
		/* In the runner's state directory, which is never listed. */
		snprintf(def, sizeof(def), "%s/.vivarium/link.key",
		    cfg->workdir);
		file = def;
	}
	if ((cfg->link_key_file = strdup(file)) == NULL)
		confdiag_add(d, 0, "out of memory");
}

int
agent_config_links(struct agent_config *cfg, char *err, size_t errlen)
{
	char	 dir[PATH_MAX];

	if (cfg->links || cfg->link_key_file == NULL)
		return 0;
	snprintf(dir, sizeof(dir), "%s/.vivarium", cfg->workdir);
	(void)mkdir(dir, 0700);
	if (link_keys_load(&cfg->link_keys, cfg->link_key_file, err,
	    errlen) == -1)
		return -1;
	cfg->links = 1;
	return 0;
}

int
agent_config_load(struct agent_config *cfg, struct confdiag *d)
{
	char	 err[512];
	int	 before = d->count;

	memset(cfg, 0, sizeof(*cfg));
	load_workdir(cfg, d);
	load_listen(cfg, d);
	load_secret(cfg, d);
	config_env_long(d, "VIVARIUM_MAX_TIMEOUT", 300, 1, 7 * 24 * 3600,
	    &cfg->max_timeout);
	/* Characters per stream; 10M characters is up to 40 MB held per stream. */
	config_env_long(d, "VIVARIUM_OUTPUT_LIMIT", 20000, 0, 10000000,
	    &cfg->output_limit);
	config_env_long(d, "VIVARIUM_MAX_IMAGES", 4, 0, 100, &cfg->max_images);
	config_env_long(d, "VIVARIUM_MAX_IMAGE_SIDE", 1280, 16, 16384,
	    &cfg->max_image_side);
	/*
	 * Defaults that let a chart through LibreChat to a model of a 32k
	 * context (docs/agent.md); the upper bound keeps a whole result under
	 * RESULT_MAX_BYTES (tools.c) whatever the code draws.
	 */
	config_env_long(d, "VIVARIUM_MAX_IMAGE_BYTES", 25600, 1024, 4194304,
	    &cfg->max_image_bytes);
	config_env_long(d, "VIVARIUM_MAX_RESULT_IMAGE_BYTES", 102400, 1024,
	    4194304, &cfg->max_result_image_bytes);
	config_env_bool(d, "VIVARIUM_PERSIST_NAMESPACE", 1,
	    &cfg->persist_namespace);
	config_env_size(d, "VIVARIUM_NAMESPACE_MAX_BYTES", 268435456ULL,
	    1ULL << 40, &cfg->namespace_max_bytes);
	config_env_bool(d, "VIVARIUM_STATE_SUMMARY", 1, &cfg->state_summary);

	cfg->user_header = config_env_str("VIVARIUM_USER_HEADER", NULL);
	if (cfg->user_header != NULL && !header_name_valid(cfg->user_header))
		confdiag_add(d, 0, "VIVARIUM_USER_HEADER=\"%s\": not an HTTP "
		    "header name (letters, digits and -, e.g. X-User-ID)",
		    cfg->user_header);

	cfg->allowed_origins = config_env_str("VIVARIUM_ALLOWED_ORIGINS", "");
	if (origins_check(cfg->allowed_origins, err, sizeof(err)) == -1)
		confdiag_add(d, 0, "VIVARIUM_ALLOWED_ORIGINS: %s", err);

	load_python(cfg, d);
	load_warm(cfg, d);
	load_links(cfg, d);

	config_env_bool(d, "VIVARIUM_SWEEP", 0, &cfg->sweep);
	if (cfg->sweep && sweep_refused(err, sizeof(err)))
		confdiag_add(d, 0, "VIVARIUM_SWEEP=1 (kill every leftover "
		    "process after runs, for containers only) refused: %s", err);
	return d->count == before ? 0 : -1;
}

void
agent_config_release(struct agent_config *cfg)
{
	free(cfg->workdir);
	free(cfg->pythonpath);
	free(cfg->link_key_file);
	explicit_bzero(cfg->secret, sizeof(cfg->secret));
	explicit_bzero(cfg->token, sizeof(cfg->token));
	/* Wipes the link keys with the rest. */
	memset(cfg, 0, sizeof(*cfg));
}
