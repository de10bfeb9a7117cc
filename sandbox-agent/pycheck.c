/*
 * pycheck.c: what the agent's Python has, asked once at start.
 *
 * On a host (the single-user mode) the interpreter is whatever python3 the
 * machine has.  A new user whose python3 had no pandas saw nothing at start
 * and a ModuleNotFoundError inside the first run; the model then tried to
 * pip-install it.  So before serving, one short child asks the interpreter
 * which of the runner's and the data stack's modules it cannot find
 * (importlib.util.find_spec: nothing is imported, so it takes a Python
 * start-up, not the seconds pandas takes), and the log names them with the
 * line that installs them.  The agent serves either way: plain Python and
 * files still work.
 *
 * The same child also answers for the libraries a model usually reaches
 * for, and the instructions say which of them import and which do not:
 * a fixed list described one image, not the Python that actually runs
 * (a host without openpyxl failed the instructions' own XLSX example).
 * That part runs in the image too; the log lines do not (VIVARIUM_SWEEP:
 * everything the runner needs is there by construction).
 *
 * The answer can be kept in a file (VIVARIUM_PYCHECK_CACHE): the image
 * writes it when it is built (`vivarium-agent --pycheck`), so a sandbox's
 * start does not wait ~30 ms for a Python start-up before it answers.  The
 * file says what it answers for (the interpreter's path and file, its
 * PYTHONPATH, the question); any other key asks the interpreter again.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "hash.h"
#include "log.h"
#include "spawn.h"
#include "banned.h"

#define CACHE_MAGIC	"vivarium-pycheck 1"

extern char **environ;

/* module, Debian package; the first is the runner itself. */
static const char *const modules[][2] = {
	{ "vivarium._runner",	NULL },
	{ "numpy",		"python3-numpy" },
	{ "pandas",		"python3-pandas" },
	{ "matplotlib",		"python3-matplotlib" },
	{ "cloudpickle",	"python3-cloudpickle" },
	{ "PIL",		"python3-pil" },
};
#define NMODULES	(sizeof(modules) / sizeof(modules[0]))

/*
 * The usual libraries: the module, how the instructions name it, and what
 * to do instead when it is missing (NULL: nothing to say).
 */
static const struct {
	const char	*module, *name, *instead;
} usual[] = {
	{ "pandas",	"pandas",		NULL },
	{ "numpy",	"numpy",		NULL },
	{ "matplotlib",	"matplotlib",		NULL },
	{ "scipy",	"scipy",		NULL },
	{ "statsmodels", "statsmodels",		NULL },
	{ "seaborn",	"seaborn",		NULL },
	{ "sklearn",	"scikit-learn",		NULL },
	{ "sympy",	"sympy",		NULL },
	{ "networkx",	"networkx",		NULL },
	{ "openpyxl",	"openpyxl",		"write CSV instead of XLSX" },
	{ "xlsxwriter",	"xlsxwriter",		NULL },
	{ "xlrd",	"xlrd",			NULL },
	{ "odf",	"odfpy",		NULL },
	{ "requests",	"requests",		"use urllib.request" },
	{ "bs4",	"beautifulsoup4 (bs4)",	NULL },
	{ "lxml",	"lxml",			NULL },
	{ "pypdf",	"pypdf",		NULL },
	{ "pdfminer",	"pdfminer.six",		NULL },
	{ "pymupdf",	"pymupdf",		NULL },
	{ "pdfplumber",	"pdfplumber",		"use pdfminer.high_level."
						"extract_text or pymupdf" },
	{ "docx",	"python-docx",		NULL },
	{ "pptx",	"python-pptx",		NULL },
	{ "PIL",	"Pillow (PIL)",		NULL },
	{ "SimPy",	"SimPy 2 (import SimPy)", NULL },
	{ "simpy",	"simpy 4",		NULL },
	{ "pyarrow",	"pyarrow",		"pandas.read_parquet fails" },
	{ "polars",	"polars",		"use pandas" },
	{ "duckdb",	"duckdb",		"use pandas or sqlite3" },
};
#define NUSUAL		(sizeof(usual) / sizeof(usual[0]))

/* Written once by pycheck, before the listeners start; read after. */
static char	 modules_line[2048];

const char *
pycheck_modules(void)
{
	return modules_line;
}

/* Prints the missing ones by index, then the version: "1 3 |3.11.2". */
static const char script[] =
    "import importlib.util as u, sys\n"
    "def f(m):\n"
    "    try:\n"
    "        return u.find_spec(m) is None\n"
    "    except Exception:\n"
    "        return True\n"
    "print(' '.join(str(i) for i, m in enumerate(sys.argv[1:]) if f(m)),"
    " '|' + sys.version.split()[0])\n";

/* The instructions' lines from the usual modules' missing flags. */
static void
modules_say(const char *missing)
{
	struct buf	 yes = BUF_INIT(sizeof(modules_line) / 2);
	struct buf	 no = BUF_INIT(sizeof(modules_line) / 2);
	size_t		 i;

	for (i = 0; i < NUSUAL; i++) {
		if (!missing[i])
			buf_appendf(&yes, "%s%s", yes.len ? ", " : "",
			    usual[i].name);
		else if (usual[i].instead != NULL)
			buf_appendf(&no, "%s%s (%s)", no.len ? ", " : "",
			    usual[i].name, usual[i].instead);
		else
			buf_appendf(&no, "%s%s", no.len ? ", " : "",
			    usual[i].name);
	}
	snprintf(modules_line, sizeof(modules_line), "Installed: %s.%s%s%s",
	    yes.len ? buf_str(&yes) : "none of the usual data libraries",
	    no.len ? "\nNot installed: " : "", buf_str(&no),
	    no.len ? "." : "");
	buf_release(&yes);
	buf_release(&no);
}

/*
 * What a cached answer must match: the interpreter (its path as found in
 * PATH, the file's size and mtime), PYTHONPATH and the question.
 * 0, or -1 when the interpreter is not found (then nothing is cached).
 */
static int
cache_key(char *const *argv, char *key, size_t len)
{
	char		 path[4096];
	struct stat	 st;
	const char	*pp = getenv("PYTHONPATH");
	uint64_t	 h = HASH_INIT;
	int64_t		 f[3];

	if (spawn_find(argv[0], environ, NULL, path, sizeof(path)) != 0 ||
	    stat(path, &st) == -1)
		return -1;
	/* Not the device or inode: an image's layers are mounted anew, with
	 * other numbers, in every container and in the build's own. */
	f[0] = (int64_t)st.st_size;
	f[1] = (int64_t)st.st_mtim.tv_sec;
	f[2] = (int64_t)st.st_mtim.tv_nsec;
	h = hash_bytes(h, path, strlen(path) + 1);
	h = hash_bytes(h, f, sizeof(f));
	h = hash_bytes(h, pp != NULL ? pp : "", pp != NULL ? strlen(pp) + 1 : 0);
	for (; *argv != NULL; argv++)
		h = hash_bytes(h, *argv, strlen(*argv) + 1);
	snprintf(key, len, "%s %016" PRIx64, CACHE_MAGIC, h);
	return 0;
}

/* The cached answer for key into out (a line), or -1. */
static int
cache_read(const char *file, const char *key, char *out, size_t len)
{
	char	 buf[4096], *nl;
	ssize_t	 n;
	int	 fd;

	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if ((nl = strchr(buf, '\n')) == NULL)
		return -1;
	*nl = '\0';
	if (strcmp(buf, key) != 0 || strchr(nl + 1, '|') == NULL ||
	    strchr(nl + 1, '\n') == NULL)
		return -1;
	snprintf(out, len, "%s", nl + 1);
	return 0;
}

/* Keeps answer for key in file, replacing it whole; -1 with errno. */
static int
cache_write(const char *file, const char *key, const char *answer)
{
	char	 tmp[4200];
	FILE	*f;
	int	 fd, ok;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%d", file, (int)getpid()) >=
	    sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) ==
	    -1)
		return -1;
	if ((f = fdopen(fd, "w")) == NULL) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	ok = fprintf(f, "%s\n%s", key, answer) > 0;
	if (fclose(f) != 0 || !ok || rename(tmp, file) == -1) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int
pycheck(const struct agent_config *cfg)
{
	struct spawn	 sp = SPAWN_INIT;
	struct buf	 mods = BUF_INIT(1024), pkgs = BUF_INIT(1024);
	char		*argv[NMODULES + NUSUAL + 4], errbuf[256], *end;
	char		*pp = NULL, version[32], missing[NUSUAL];
	char		 key[64], answer[1024];
	const char	*out, *v;
	size_t		 i, len;
	int		 runner = 0, keyed, rc = -1;

	/* The runs' PYTHONPATH: ours in front of the caller's. */
	if ((v = getenv("PYTHONPATH")) != NULL && (pp = strdup(v)) == NULL)
		return -1;
	if (cfg->pythonpath != NULL) {
		char pv[4096];

		snprintf(pv, sizeof(pv), "%s%s%s", cfg->pythonpath,
		    pp && *pp ? ":" : "", pp && *pp ? pp : "");
		setenv("PYTHONPATH", pv, 1);
	}
	argv[0] = (char *)(uintptr_t)cfg->python;
	argv[1] = (char *)(uintptr_t)"-c";
	argv[2] = (char *)(uintptr_t)script;
	for (i = 0; i < NMODULES; i++)
		argv[3 + i] = (char *)(uintptr_t)modules[i][0];
	for (i = 0; i < NUSUAL; i++)
		argv[3 + NMODULES + i] = (char *)(uintptr_t)usual[i].module;
	argv[3 + NMODULES + NUSUAL] = NULL;
	memset(missing, 0, sizeof(missing));
	keyed = cfg->pycheck_cache != NULL &&
	    cache_key(argv, key, sizeof(key)) == 0;
	if (keyed && cache_read(cfg->pycheck_cache, key, answer,
	    sizeof(answer)) == 0) {
		out = answer;
		log_debug("%s: the answer kept in %s", cfg->python,
		    cfg->pycheck_cache);
		goto parse;
	}
	sp.argv = argv;
	sp.timeout = 20;
	sp.out.cap = 4096;
	sp.err.cap = 4096;
	if (spawn_run(&sp, errbuf, sizeof(errbuf)) == -1) {
		log_warnx("%s cannot be run (%s): every run_python call will "
		    "fail; set VIVARIUM_PYTHON to a python3", cfg->python,
		    errbuf);
		goto done;
	}
	out = (const char *)spawn_stream_take(&sp.out, &len);
	if (!sp.exited || sp.exit_code != 0 || strchr(out, '|') == NULL ||
	    strchr(out, '\n') == NULL) {
		log_warnx("%s did not answer the start-up check (%s): runs may "
		    "fail", cfg->python, (const char *)spawn_stream_take(&sp.err,
		    &len));
		goto done;
	}
	if (keyed && cache_write(cfg->pycheck_cache, key, out) == -1)
		log_debug("cannot keep the answer in %s: %s",
		    cfg->pycheck_cache, strerror(errno));
parse:
	snprintf(version, sizeof(version), "%s", strchr(out, '|') + 1);
	version[strcspn(version, "\r\n")] = '\0';
	while (*out != '|' && *out != '\0') {
		unsigned long k = strtoul(out, &end, 10);

		if (end == out)
			break;
		out = end + strspn(end, " ");
		if (k >= NMODULES) {
			if (k < NMODULES + NUSUAL)
				missing[k - NMODULES] = 1;
			continue;
		}
		if (modules[k][1] == NULL) {
			runner = 1;
			continue;
		}
		buf_appendf(&mods, "%s%s", mods.len ? ", " : "", modules[k][0]);
		buf_appendf(&pkgs, " %s", modules[k][1]);
	}
	modules_say(missing);
	rc = runner || mods.len > 0;
	if (cfg->sweep)
		goto done;	/* the image: what the runner needs is there */
	if (runner)
		log_warnx("the runner (python package vivarium) is not where %s "
		    "looks: set VIVARIUM_PYTHONPATH to the python/ folder of a "
		    "checkout, or PREFIX/lib/vivarium/python after make install",
		    cfg->python);
	if (mods.len > 0)
		log_warnx("%s (Python %s) lacks %s: runs that import them "
		    "fail.  Install with: sudo apt-get install%s  (or set "
		    "VIVARIUM_PYTHON to a python3 that has them)", cfg->python,
		    version, buf_str(&mods), buf_str(&pkgs));
	else if (!runner)
		log_debug("%s has the runner and the data stack", cfg->python);
done:
	if (cfg->pythonpath != NULL) {
		if (pp != NULL)
			setenv("PYTHONPATH", pp, 1);
		else
			unsetenv("PYTHONPATH");
	}
	free(pp);
	buf_release(&mods);
	buf_release(&pkgs);
	spawn_release(&sp);
	return rc;
}
