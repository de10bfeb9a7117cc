/*
 * link.c: signing and checking capability links (link.h), and the key file.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link.h"
#include "base64.h"
#include "banned.h"

#define PAYLOAD_MAX	(LINK_PATH_MAX + LINK_USER_MAX + 64)

/* ------------------------------------------------------------ encodings */

int
url_escape(const char *s, int keep_slash, struct buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	char		 e[3];
	unsigned char	 c;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~' || (keep_slash && c == '/')) {
			if (buf_append(out, s, 1) == -1)
				return -1;
			continue;
		}
		e[0] = '%';
		e[1] = hex[c >> 4];
		e[2] = hex[c & 15];
		if (buf_append(out, e, 3) == -1)
			return -1;
	}
	return 0;
}

void
hex_encode(const unsigned char *in, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * len] = '\0';
}

static int
hex_decode(const char *s, size_t len, unsigned char *out, size_t outlen)
{
	size_t	 i;
	int	 hi, lo;

	if (len != outlen * 2)
		return -1;
	for (i = 0; i < outlen; i++) {
		hi = s[2 * i];
		lo = s[2 * i + 1];
#define HEXV(c) ((c) >= '0' && (c) <= '9' ? (c) - '0' : \
	    (c) >= 'a' && (c) <= 'f' ? (c) - 'a' + 10 : \
	    (c) >= 'A' && (c) <= 'F' ? (c) - 'A' + 10 : -1)
		hi = HEXV(hi);
		lo = HEXV(lo);
#undef HEXV
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* ------------------------------------------------------------ keys */

static int
key_create(const char *path, char *err, size_t errlen)
{
	unsigned char	 key[SHA256_LEN];
	char		 hex[LINK_KEY_HEX + 2];
	int		 fd;
	ssize_t		 w;

	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		snprintf(err, errlen, "cannot get random bytes: %s",
		    strerror(errno));
		return -1;
	}
	hex_encode(key, sizeof(key), hex);
	memset(key, 0, sizeof(key));
	hex[LINK_KEY_HEX] = '\n';
	/* O_EXCL: two processes starting at once keep one key between them. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1)
		return errno == EEXIST ? 0 : (snprintf(err, errlen, "cannot "
		    "create the link key %s: %s", path, strerror(errno)), -1);
	w = write(fd, hex, LINK_KEY_HEX + 1);
	if (w != LINK_KEY_HEX + 1 || fsync(fd) == -1) {
		snprintf(err, errlen, "cannot write the link key %s: %s", path,
		    w == -1 ? strerror(errno) : "short write");
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	return 0;
}

int
link_keys_load(struct link_keys *k, const char *path, char *err,
    size_t errlen)
{
	struct stat	 st;
	char		 text[LINK_KEY_HEX + 3];
	ssize_t		 n;
	int		 fd = -1;

	memset(k, 0, sizeof(*k));
	if (key_create(path, err, errlen) == -1)
		return -1;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "cannot open the link key %s: %s", path,
		    errno == ELOOP ? "it is a symbolic link" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "the link key %s is not a regular file",
		    path);
		goto fail;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "the link key %s is readable by others "
		    "(mode %04o); it must be 0600 (chmod 600 %s)", path,
		    (unsigned)(st.st_mode & 07777), path);
		goto fail;
	}
	n = read(fd, text, sizeof(text) - 1);
	if (n < 0)
		n = 0;
	text[n] = '\0';
	text[strcspn(text, "\r\n")] = '\0';
	if (hex_decode(text, strlen(text), k->master, sizeof(k->master)) == -1) {
		snprintf(err, errlen, "the link key %s does not hold a key (64 "
		    "hex digits); remove it to have a new one made (every link "
		    "made so far stops working)", path);
		goto fail;
	}
	k->have_master = 1;
	close(fd);
	memset(text, 0, sizeof(text));
	return 0;
fail:
	close(fd);
	memset(k, 0, sizeof(*k));
	return -1;
}

int
link_keys_set_user(struct link_keys *k, const char *user, const char *hex,
    char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	if (strlen(user) == 0 || strlen(user) > LINK_USER_MAX) {
		snprintf(err, errlen, "the link user must be 1 to %d characters",
		    LINK_USER_MAX);
		return -1;
	}
	if (hex_decode(hex, strlen(hex), k->user_key, sizeof(k->user_key))
	    == -1) {
		snprintf(err, errlen, "the link key must be %d hex digits",
		    LINK_KEY_HEX);
		return -1;
	}
	memcpy(k->user, user, strlen(user) + 1);
	return 0;
}

int
link_user_key(const struct link_keys *k, const char *user,
    unsigned char out[SHA256_LEN])
{
	static const char label[] = "vivarium user key\n";
	char		 msg[sizeof(label) + LINK_USER_MAX];
	size_t		 ul = strlen(user);

	if (ul == 0 || ul > LINK_USER_MAX)
		return -1;
	if (!k->have_master) {
		if (k->user[0] == '\0' || strcmp(k->user, user) != 0)
			return -1;
		memcpy(out, k->user_key, SHA256_LEN);
		return 0;
	}
	memcpy(msg, label, sizeof(label) - 1);
	memcpy(msg + sizeof(label) - 1, user, ul);
	hmac_sha256(k->master, sizeof(k->master), msg, sizeof(label) - 1 + ul,
	    out);
	return 0;
}

int
link_user_key_hex(const struct link_keys *k, const char *user,
    char out[LINK_KEY_HEX + 1])
{
	unsigned char key[SHA256_LEN];

	if (link_user_key(k, user, key) == -1)
		return -1;
	hex_encode(key, sizeof(key), out);
	memset(key, 0, sizeof(key));
	return 0;
}

/* ------------------------------------------------------------ tokens */

static int
payload(const struct link *l, struct buf *out)
{
	/* The fields are split on newlines: none may hold one. */
	if (strchr(l->user, '\n') != NULL || strchr(l->path, '\n') != NULL)
		return -1;
	return buf_appendf(out, "v1\n%c\n%s\n%lld\n%s", (char)l->purpose,
	    l->user, (long long)l->expires, l->path);
}

int
link_mint(const struct link_keys *k, const struct link *l, struct buf *out)
{
	struct buf	 p = BUF_INIT(PAYLOAD_MAX);
	unsigned char	 key[SHA256_LEN], mac[SHA256_LEN];
	int		 r = -1;

	if (link_user_key(k, l->user, key) == -1 || payload(l, &p) == -1)
		goto done;
	hmac_sha256(key, sizeof(key), p.data, p.len, mac);
	if (base64_encode(BASE64_URL, p.data, p.len, out) == -1 ||
	    buf_append(out, ".", 1) == -1 ||
	    base64_encode(BASE64_URL, mac, sizeof(mac), out) == -1)
		goto done;
	r = 0;
done:
	memset(key, 0, sizeof(key));
	buf_release(&p);
	return r;
}

/* Splits the next "\n"-terminated field off *p (len *n); NULL at the end. */
static const char *
field(const char **p, const char *end, size_t *n)
{
	const char *s = *p, *nl;

	if (s > end)
		return NULL;
	nl = memchr(s, '\n', (size_t)(end - s));
	if (nl == NULL)
		nl = end;
	*n = (size_t)(nl - s);
	*p = nl + 1;
	return s;
}

enum link_check
link_verify(const struct link_keys *k, const char *token, size_t len,
    time_t now, long max_lifetime, struct link *l)
{
	unsigned char	 p[PAYLOAD_MAX], mac[SHA256_LEN], want[SHA256_LEN],
			 key[SHA256_LEN];
	const char	*dot, *cur, *end, *f;
	char		 num[24];
	long		 plen, mlen;
	size_t		 n;
	long long	 exp;
	char		*e;

	memset(l, 0, sizeof(*l));
	if ((dot = memchr(token, '.', len)) == NULL)
		return LINK_MALFORMED;
	plen = base64_decode(BASE64_URL, 0, token, (size_t)(dot - token), p, sizeof(p) - 1);
	mlen = base64_decode(BASE64_URL, 0, dot + 1, len - (size_t)(dot + 1 - token), mac,
	    sizeof(mac));
	if (plen <= 0 || mlen != SHA256_LEN)
		return LINK_MALFORMED;
	cur = (const char *)p;
	end = cur + plen;
	if ((f = field(&cur, end, &n)) == NULL || n != 2 || memcmp(f, "v1", 2))
		return LINK_MALFORMED;
	if ((f = field(&cur, end, &n)) == NULL || n != 1 ||
	    (f[0] != LINK_DOWNLOAD && f[0] != LINK_UPLOAD &&
	    f[0] != LINK_WORKSPACE))
		return LINK_MALFORMED;
	l->purpose = (enum link_purpose)f[0];
	if ((f = field(&cur, end, &n)) == NULL || n == 0 || n > LINK_USER_MAX ||
	    memchr(f, '\0', n) != NULL)
		return LINK_MALFORMED;
	memcpy(l->user, f, n);
	if ((f = field(&cur, end, &n)) == NULL || n == 0 || n >= sizeof(num))
		return LINK_MALFORMED;
	memcpy(num, f, n);
	num[n] = '\0';
	if (strspn(num, "0123456789") != n)
		return LINK_MALFORMED;
	errno = 0;
	exp = strtoll(num, &e, 10);
	if (errno != 0 || *e != '\0')
		return LINK_MALFORMED;
	if (cur > end)
		n = 0;
	else
		n = (size_t)(end - cur);
	if (n > LINK_PATH_MAX || memchr(cur, '\0', n) != NULL ||
	    memchr(cur, '\n', n) != NULL)
		return LINK_MALFORMED;
	memcpy(l->path, cur, n);
	l->path[n] = '\0';
	if ((l->purpose == LINK_DOWNLOAD) != (n > 0))
		return LINK_MALFORMED;

	if (link_user_key(k, l->user, key) == -1) {
		memset(l, 0, sizeof(*l));
		return LINK_OTHER_USER;
	}
	hmac_sha256(key, sizeof(key), p, (size_t)plen, want);
	memset(key, 0, sizeof(key));
	if (!ct_equal(mac, want, sizeof(want))) {
		memset(l, 0, sizeof(*l));
		return LINK_FORGED;
	}
	/* Authentic from here on: what it says may be told to the user. */
	l->expires = (time_t)exp;
	if ((long long)now >= exp)
		return LINK_EXPIRED;
	if (exp - (long long)now > (long long)max_lifetime + 60)
		return LINK_TOO_LONG;
	return LINK_OK;
}

const char *
link_purpose_name(enum link_purpose p)
{
	switch (p) {
	case LINK_DOWNLOAD:	return "download";
	case LINK_UPLOAD:	return "upload";
	case LINK_WORKSPACE:	return "workspace";
	}
	return "unknown";
}
