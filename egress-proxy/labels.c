/*
 * labels.c: whose sandbox a client address is, for the log lines only.
 *
 * Sandboxes reach the proxy from addresses on their users' networks, which
 * say nothing to an operator reading the log.  The supervisor knows which
 * user each address belongs to and writes a file (user_labels) of one line
 * per sandbox address:
 *
 *	10.89.1.5 alice@example.org/665f0c2a9d3e4b1c8f7a6e5d
 *
 * and each log line of a client listed there carries user=LABEL after
 * client=.  A label never decides anything: a file that is missing or bad
 * only means lines without user=, said once until the file changes.
 *
 * The file is parsed strictly (a writer that wrote one bad line may have
 * written others wrong): one address, one space, one label; '#' comments
 * and empty lines; at most LABELS_MAX addresses, each once, and lines of
 * at most LABELS_LINE_MAX bytes.  A label is UTF-8 of at most LABEL_MAX
 * bytes with no space, quote, backslash, control or invisible character,
 * so that it can go into a log line as it is and ends at the next space.
 *
 * It is read off the connections' path: worker 0's tick stats it at most
 * once a second and reads it again when it changed (inode, size or
 * modification time: writers replace it by rename).  The table is an array
 * sorted by address, swapped whole under a rwlock; a connection looks its
 * client up once, when it is accepted.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "text.h"
#include "banned.h"

/* The file as a whole, which bounds what one reading costs. */
#define LABELS_FILE_MAX	(LABELS_MAX * (LABELS_LINE_MAX + 1) + 4096)

struct label {
	int		 family;
	uint8_t		 addr[16];
	char		 text[LABEL_MAX + 1];
};

static pthread_rwlock_t labels_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct label *table;		/* sorted by label_cmp; labels_lock */
static size_t	 ntable;
static const char *labelfile;		/* borrowed from the conf */
static struct stat labelfile_st;	/* of the version looked at last */
static int	 looked;		/* labelfile_st holds a stat */
static int	 missing;		/* said that it is missing */

static int
label_cmp(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

/* An address of the file or of a client, as the table keys it: an
 * IPv4-mapped IPv6 address is the IPv4 address (a dual-stack listener
 * sees IPv4 clients so). */
static void
key_set(struct label *k, int family, const uint8_t *addr)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	    0xff, 0xff };

	memset(k, 0, sizeof(*k));
	if (family == AF_INET6 && memcmp(addr, mapped, 12) == 0) {
		k->family = AF_INET;
		memcpy(k->addr, addr + 12, 4);
	} else if (family == AF_INET) {
		k->family = AF_INET;
		memcpy(k->addr, addr, 4);
	} else {
		k->family = AF_INET6;
		memcpy(k->addr, addr, 16);
	}
}

/* 1 when s (n bytes) may be a label. */
static int
label_valid(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	int			 k;

	if (n == 0 || n > LABEL_MAX)
		return 0;
	while (n > 0) {
		if ((k = utf8_seq(p, n)) <= 0)
			return 0;
		if (k == 1 && (*p <= ' ' || *p == 0x7f || *p == '"' ||
		    *p == '\\'))
			return 0;
		if (k > 1 && unicode_invisible(utf8_code(p, k)))
			return 0;
		p += k;
		n -= (size_t)k;
	}
	return 1;
}

/*
 * One line of the file (n bytes, no newline) into *l: 1 when it holds an
 * entry, 0 for a comment or an empty line, -1 with why when it is bad.
 */
static int
line_parse(const char *s, size_t n, struct label *l, char *why, size_t whysz)
{
	const char	*sp;
	char		 a[INET6_ADDRSTRLEN];
	uint8_t		 bytes[16];
	size_t		 alen;
	int		 family;

	if (memchr(s, '\0', n) != NULL) {
		snprintf(why, whysz, "a NUL byte");
		return -1;
	}
	if (n == 0 || s[0] == '#')
		return 0;
	if ((sp = memchr(s, ' ', n)) == NULL) {
		snprintf(why, whysz, "not \"ADDRESS LABEL\"");
		return -1;
	}
	alen = (size_t)(sp - s);
	if (alen == 0 || alen >= sizeof(a)) {
		snprintf(why, whysz, "not an address");
		return -1;
	}
	memcpy(a, s, alen);
	a[alen] = '\0';
	if (inet_pton(AF_INET, a, bytes) == 1)
		family = AF_INET;
	else if (inet_pton(AF_INET6, a, bytes) == 1)
		family = AF_INET6;
	else {
		snprintf(why, whysz, "not an address");
		return -1;
	}
	s = sp + 1;
	n -= alen + 1;
	if (!label_valid(s, n)) {
		if (n == 0)
			snprintf(why, whysz, "no label");
		else if (n > LABEL_MAX)
			snprintf(why, whysz, "a label longer than %d bytes",
			    LABEL_MAX);
		else
			snprintf(why, whysz, "a label with a space, quote, "
			    "backslash, control or invisible character, or "
			    "not UTF-8");
		return -1;
	}
	key_set(l, family, bytes);
	memcpy(l->text, s, n);
	l->text[n] = '\0';
	return 1;
}

/*
 * The text of a labels file (len bytes) into a sorted table (*out, *nout;
 * the caller frees *out).  0, or -1 with why ("line N: ...") when the
 * file is not taken; then *out is NULL.
 */
static int
labels_parse(const char *text, size_t len, struct label **out, size_t *nout,
    char *why, size_t whysz)
{
	struct label	*t = NULL, *more, l;
	const char	*p = text, *end = text + len, *nl;
	char		 msg[160];
	size_t		 n = 0, cap = 0, ll, i;
	int		 lineno = 0, r;

	*out = NULL;
	*nout = 0;
	while (p < end) {
		lineno++;
		nl = memchr(p, '\n', (size_t)(end - p));
		ll = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (ll > LABELS_LINE_MAX) {
			snprintf(msg, sizeof(msg), "longer than %d bytes",
			    LABELS_LINE_MAX);
			goto bad;
		}
		if ((r = line_parse(p, ll, &l, msg, sizeof(msg))) == -1)
			goto bad;
		p += ll + (nl != NULL);
		if (r == 0)
			continue;
		if (n == LABELS_MAX) {
			snprintf(msg, sizeof(msg), "more than %d addresses",
			    LABELS_MAX);
			goto bad;
		}
		if (n == cap) {
			cap = cap == 0 ? 16 : cap * 2;
			if ((more = reallocarray(t, cap, sizeof(*t))) == NULL) {
				snprintf(msg, sizeof(msg), "%s",
				    strerror(errno));
				goto bad;
			}
			t = more;
		}
		t[n++] = l;
	}
	if (n > 1)
		qsort(t, n, sizeof(*t), label_cmp);
	for (i = 1; i < n; i++)
		if (label_cmp(&t[i - 1], &t[i]) == 0) {
			inet_ntop(t[i].family, t[i].addr, msg, sizeof(msg));
			snprintf(why, whysz, "%s is listed twice", msg);
			free(t);
			return -1;
		}
	*out = t;
	*nout = n;
	return 0;
bad:
	snprintf(why, whysz, "line %d: %s", lineno, msg);
	free(t);
	return -1;
}

/* Replaces the table (NULL: none). */
static void
table_set(struct label *t, size_t n)
{
	struct label	*old;

	pthread_rwlock_wrlock(&labels_lock);
	old = table;
	table = t;
	ntable = n;
	pthread_rwlock_unlock(&labels_lock);
	free(old);
}

/* The whole file into *text (bounded); 0, or -1 with errno. */
static int
file_read(int fd, char **text, size_t *len)
{
	char	*b;
	size_t	 n = 0;
	ssize_t	 r;

	*text = NULL;
	if ((b = malloc(LABELS_FILE_MAX + 1)) == NULL)
		return -1;
	while (n <= LABELS_FILE_MAX) {
		if ((r = read(fd, b + n, LABELS_FILE_MAX + 1 - n)) == -1) {
			if (errno == EINTR)
				continue;
			free(b);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > LABELS_FILE_MAX) {
		free(b);
		errno = EFBIG;
		return -1;
	}
	*text = b;
	*len = n;
	return 0;
}

static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * Reads the file when it changed since the last look.  Whatever goes
 * wrong leaves no labels, said once until the file changes again.
 */
void
labels_refresh(void)
{
	struct label	*t;
	struct stat	 st;
	char		*text, why[256];
	size_t		 len, n;
	int		 fd;

	if (labelfile == NULL)
		return;
	if (stat(labelfile, &st) == -1) {
		if (!missing)
			log_warnx("user labels %s: %s: log lines name no user "
			    "until it exists", labelfile, strerror(errno));
		missing = 1;
		looked = 0;
		table_set(NULL, 0);
		return;
	}
	missing = 0;
	if (looked && same_file(&st, &labelfile_st))
		return;
	looked = 1;
	labelfile_st = st;
	if ((fd = open(labelfile, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1 ||
	    fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    file_read(fd, &text, &len) == -1) {
		snprintf(why, sizeof(why), "%s", fd != -1 &&
		    !S_ISREG(st.st_mode) ? "not a file" : strerror(errno));
		if (fd != -1)
			close(fd);
		goto bad;
	}
	close(fd);
	labelfile_st = st;	/* the one read, should it have moved */
	if (labels_parse(text, len, &t, &n, why, sizeof(why)) == -1) {
		free(text);
		goto bad;
	}
	free(text);
	table_set(t, n);
	log_info("user labels: %zu from %s", n, labelfile);
	return;
bad:
	table_set(NULL, 0);
	log_warnx("user labels %s: %s: not taken, log lines name no user "
	    "until it changes", labelfile, why);
}

void
labels_open(const char *path)
{
	labelfile = path;
	looked = missing = 0;
	labels_refresh();
}

int
labels_find(const struct sockaddr_storage *ss, char *out, size_t outsz)
{
	struct label	 k;
	const struct label *hit;
	int		 found = 0;

	out[0] = '\0';
	if (ss->ss_family == AF_INET)
		key_set(&k, AF_INET, (const uint8_t *)
		    &((const struct sockaddr_in *)(const void *)ss)->sin_addr);
	else if (ss->ss_family == AF_INET6)
		key_set(&k, AF_INET6, ((const struct sockaddr_in6 *)
		    (const void *)ss)->sin6_addr.s6_addr);
	else
		return 0;
	pthread_rwlock_rdlock(&labels_lock);
	if (ntable > 0 && (hit = bsearch(&k, table, ntable, sizeof(*table),
	    label_cmp)) != NULL) {
		snprintf(out, outsz, "%s", hit->text);
		found = 1;
	}
	pthread_rwlock_unlock(&labels_lock);
	return found;
}

size_t
labels_count(void)
{
	size_t	 n;

	pthread_rwlock_rdlock(&labels_lock);
	n = ntable;
	pthread_rwlock_unlock(&labels_lock);
	return n;
}

void
labels_free(void)
{
	table_set(NULL, 0);
	labelfile = NULL;
}
