/*
 * tarown.c: the tar vivariumctl import passes to the backend.  Its headers
 * are checked as they pass (magic, checksum) and it must reach the
 * end-of-archive blocks, so a cut-off or corrupt file is an error and not
 * a silently half-imported workspace.  Podman cannot be asked to undo what
 * it got by then, so the caller's message says what to do.
 *
 * Every member's owner is set to the sandbox user on the way (uid, gid,
 * names, and PAX uid= and gid= records).  The files are the sandbox
 * user's in the end anyway, but Podman first maps the ids it finds into
 * the container's user namespace and refuses any outside it: 4.3.1's
 * archive of a container with a user namespace carries host ids, which
 * another user's sandbox, with other ids, cannot map.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tarown.h"
#include "banned.h"

/* Reads up to len bytes, short only at end of input; -1 on error. */
static ssize_t
read_full(int fd, char *dst, size_t len)
{
	size_t	 off = 0;
	ssize_t	 r;

	while (off < len) {
		if ((r = read(fd, dst + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		off += (size_t)r;
	}
	return (ssize_t)off;
}

static unsigned long long
tar_number(const char *f, size_t len)
{
	unsigned long long	 v = 0;
	size_t			 i;

	if ((unsigned char)f[0] & 0x80) {	/* GNU base-256, for > 8 GiB */
		for (i = 1; i < len; i++)
			v = (v << 8) | (unsigned char)f[i];
		return v;
	}
	for (i = 0; i < len && (f[i] == ' ' || f[i] == '\0'); i++)
		;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++)
		v = v * 8 + (unsigned long long)(f[i] - '0');
	return v;
}

/* One complete header block, at byte at: 0, or -1 with t->err. */
static int
tar_header(struct tarown *t, unsigned long long at)
{
	unsigned long long	 sum = 0, size;
	size_t			 i;

	for (i = 0; i < 512 && t->block[i] == '\0'; i++)
		;
	if (i == 512) {
		t->next += 512;
		if (++t->zeros == 2)
			t->ended = 1;
		return 0;
	}
	t->zeros = 0;
	for (i = 0; i < 512; i++)
		sum += (i >= 148 && i < 156) ? ' ' : (unsigned char)t->block[i];
	if (memcmp(t->block + 257, "ustar", 5) != 0 ||
	    sum != tar_number(t->block + 148, 8)) {
		snprintf(t->err, sizeof(t->err), "the tar is corrupt at byte %llu",
		    at);
		return -1;
	}
	size = tar_number(t->block + 124, 12);
	t->next += 512 + (size + 511) / 512 * 512;
	return 0;
}

/* Writes v as a zero-padded octal field of len bytes (NUL-ended). */
static void
tar_octal(char *f, size_t len, unsigned long v)
{
	size_t	 i;

	f[len - 1] = '\0';
	for (i = len - 1; i-- > 0; v >>= 3)
		f[i] = (char)('0' + (v & 7));
}

/* The checked header at h (a copy is in t->block) owned by t's user. */
static void
tar_own(const struct tarown *t, char *h)
{
	unsigned long	 sum = 0;
	size_t		 i;

	tar_octal(h + 108, 8, t->uid);
	tar_octal(h + 116, 8, t->gid);
	memset(h + 265, 0, 32);		/* uname */
	memset(h + 297, 0, 32);		/* gname */
	memset(h + 148, ' ', 8);
	for (i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	tar_octal(h + 148, 7, sum);
	h[155] = ' ';
}

/*
 * PAX records in one block: the value of each " uid=" and " gid=" becomes
 * the owner's id, zero-padded to the same width (the record's length
 * stays right).  A record split over two blocks is left as it is.
 */
static void
tar_pax_own(const struct tarown *t, char *b, size_t len)
{
	char		 num[24];
	size_t		 i, j, w, k;
	unsigned int	 v;

	for (i = 0; i + 5 < len; i++) {
		if (b[i] != ' ' || (memcmp(b + i + 1, "uid=", 4) != 0
		    && memcmp(b + i + 1, "gid=", 4) != 0))
			continue;
		v = b[i + 1] == 'u' ? t->uid : t->gid;
		for (j = i + 5; j < len && b[j] >= '0' && b[j] <= '9'; j++)
			;
		if (j == len || b[j] != '\n')
			continue;
		w = j - (i + 5);
		k = (size_t)snprintf(num, sizeof(num), "%u", v);
		if (k > w)
			continue;
		memset(b + i + 5, '0', w - k);
		memcpy(b + i + 5 + w - k, num, k);
	}
}

int
tarown_open(struct tarown *t, int fd, unsigned int uid, unsigned int gid)
{
	ssize_t	 got;

	memset(t, 0, sizeof(*t));
	t->fd = fd;
	t->uid = uid;
	t->gid = gid;
	if ((got = read_full(fd, t->head, sizeof(t->head))) == -1) {
		snprintf(t->err, sizeof(t->err), "reading it: %s",
		    strerror(errno));
		return -1;
	}
	memcpy(t->block, t->head, sizeof(t->block));
	if (got < (ssize_t)sizeof(t->head) || tar_header(t, 0) == -1 ||
	    t->zeros) {
		snprintf(t->err, sizeof(t->err), "it is not a tar file");
		return -1;
	}
	/* Checked: the stream is walked from its start again. */
	t->next = 0;
	t->zeros = 0;
	return 0;
}

ssize_t
tarown_source(void *arg, char *dst, size_t len)
{
	struct tarown	*t = arg;
	ssize_t		 r;
	size_t		 i;
	char		 type;

	len -= len % 512;
	if (len == 0) {
		snprintf(t->err, sizeof(t->err), "a read of less than one tar "
		    "block");
		return -1;
	}
	/* Whole blocks but at the end: every header comes in one piece. */
	if (t->headoff < sizeof(t->head)) {
		memcpy(dst, t->head, sizeof(t->head));
		t->headoff = sizeof(t->head);
		r = (ssize_t)sizeof(t->head);
	} else if ((r = read_full(t->fd, dst, len)) == -1) {
		snprintf(t->err, sizeof(t->err), "reading standard input: %s",
		    strerror(errno));
		return -1;
	}
	if (r == 0) {
		if (!t->ended) {
			snprintf(t->err, sizeof(t->err), "the tar ends early, "
			    "after %llu bytes (cut off?)", t->pos);
			return -1;
		}
		return 0;
	}
	for (i = 0; i + 512 <= (size_t)r && !t->ended; i += 512) {
		unsigned long long at = t->pos + i;

		if (at < t->next) {		/* inside a member */
			if (at < t->pax_end)
				tar_pax_own(t, dst + i, (size_t)(t->pax_end - at
				    < 512 ? t->pax_end - at : 512));
			continue;
		}
		memcpy(t->block, dst + i, sizeof(t->block));
		if (tar_header(t, at) == -1)
			return -1;
		if (t->zeros)
			continue;
		type = t->block[156];
		if (type == 'x' || type == 'g')
			t->pax_end = t->next;
		tar_own(t, dst + i);
	}
	t->pos += (unsigned long long)r;
	return r;
}
