/*
 * multipart.c: multipart/form-data, read as it streams in (multipart.h).
 *
 * A body is a preamble, delimiters each followed by a part (headers, a
 * blank line, data), and a closing delimiter with an epilogue after it.
 * The reader starts as if a CRLF had just been read, so that a body that
 * opens with its first delimiter (as every client's does) needs no case
 * of its own: the preamble is a part nobody is told about.
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "multipart.h"

enum {
	S_BODY,		/* a part's data (or the preamble) */
	S_AFTER,	/* just past a delimiter */
	S_DASH,		/* "-": the closing delimiter's second "-" next */
	S_PAD,		/* blanks before the delimiter's line end */
	S_LF,		/* its CR read, its LF next */
	S_HEADERS,	/* a part's header block */
	S_EPILOGUE,	/* past the closing delimiter: ignored */
	S_FAILED
};

static int
is_bchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') || (c != '\0' && strchr("'()+_,-./:=? ",
	    c) != NULL);
}

/*
 * Skips or reads a parameter's value at s, a token or a quoted string
 * (a backslash quotes the next character): returns what follows it, or
 * NULL for a quote never closed.  With out, the value is written there,
 * NUL-terminated, cut to outlen.
 */
static const char *
param_value(const char *s, char *out, size_t outlen)
{
	size_t	 w = 0;
	char	 c;

	if (*s != '"') {
		while (*s != '\0' && strchr(" \t;", *s) == NULL) {
			if (out != NULL && w + 1 < outlen)
				out[w++] = *s;
			s++;
		}
	} else {
		for (s++; *s != '"'; s++) {
			if (*s == '\0')
				return NULL;
			if (*s == '\\' && s[1] != '\0')
				s++;
			c = *s;
			if (out != NULL && w + 1 < outlen)
				out[w++] = c;
		}
		s++;
	}
	if (out != NULL && outlen > 0)
		out[w] = '\0';
	return s;
}

/*
 * A Content-Disposition value: "form-data" and its parameters.  name and
 * filename (the first of each) are written into vals, NUL-terminated
 * each; a value cannot be longer than the header that holds it.
 */
static void
disposition(const char *s, char *vals, size_t valslen, const char **name,
    const char **filename)
{
	const char	**to;
	size_t		 klen, used = 0;

	s += strspn(s, " \t");
	if (strncasecmp(s, "form-data", 9) != 0)
		return;
	for (s += 9;;) {
		s += strspn(s, " \t");
		if (*s != ';')
			return;
		s++;
		s += strspn(s, " \t");
		klen = strcspn(s, "= \t;");
		to = NULL;
		if (klen == 4 && strncasecmp(s, "name", 4) == 0 && *name == NULL)
			to = name;
		else if (klen == 8 && strncasecmp(s, "filename", 8) == 0 &&
		    *filename == NULL)
			to = filename;
		s += klen;
		s += strspn(s, " \t");
		if (*s != '=')
			return;
		s++;
		s += strspn(s, " \t");
		if (to == NULL)
			s = param_value(s, NULL, 0);
		else {
			*to = vals + used;
			s = param_value(s, vals + used, valslen - used);
			if (s == NULL) {
				*to = NULL;
				return;
			}
			used += strlen(*to) + 1;
		}
		if (s == NULL)
			return;
	}
}

/* The header block is in: the part begins. */
static int
part_begin(struct multipart *m, const struct mp_handler *h)
{
	char		*line, *eol, *end = m->hdr + m->hlen;
	char		 vals[MP_HEADER_MAX];
	const char	*name = NULL, *filename = NULL;
	int		 seen = 0;

	/* Every line ends in CRLF: the block ends in an empty one. */
	for (line = m->hdr; line < end; line = eol + 2) {
		eol = memmem(line, (size_t)(end - line), "\r\n", 2);
		if (eol == NULL)
			break;
		if (!seen && eol - line >= 20 &&
		    strncasecmp(line, "content-disposition:", 20) == 0) {
			*eol = '\0';
			disposition(line + 20, vals, sizeof(vals), &name,
			    &filename);
			seen = 1;
		}
	}
	m->in_part = 1;
	m->held = 0;
	m->state = S_BODY;
	return h->begin(h->arg, name, filename);
}

/* A delimiter has been read; what follows it says whether it is one. */
static void
delimiter(struct multipart *m)
{
	m->held = 0;
	m->state = S_AFTER;
	m->pad = 0;
}

/* The delimiter's line end, or the closing "--": the part is whole. */
static int
part_end(struct multipart *m, const struct mp_handler *h)
{
	if (!m->in_part)
		return 0;		/* the preamble */
	m->in_part = 0;
	return h->end(h->arg);
}

static int
emit(struct multipart *m, const struct mp_handler *h, const char *p,
    size_t n)
{
	if (n == 0 || !m->in_part)
		return 0;
	return h->data(h->arg, p, n);
}

/*
 * Part data: passes on all of p[0..n) but a delimiter and what may be
 * the start of one at the end.  Returns the bytes taken, or -1.
 */
static long
body(struct multipart *m, const char *p, size_t n, const struct mp_handler *h)
{
	const char	*q, *end = p + n;
	size_t		 want, tail;

	if (m->held > 0) {
		want = m->dlen - m->held;
		if (want > n)
			want = n;
		if (memcmp(p, m->delim + m->held, want) == 0) {
			m->held += want;
			if (m->held < m->dlen)
				return (long)n;
			delimiter(m);
			return (long)want;
		}
		/*
		 * Not a delimiter after all: what was held was data.  The
		 * only CR in it is its first byte, so no delimiter starts
		 * inside it either.
		 */
		if (emit(m, h, m->delim, m->held) == -1)
			return -1;
		m->held = 0;
	}
	if ((q = memmem(p, n, m->delim, m->dlen)) != NULL) {
		if (emit(m, h, p, (size_t)(q - p)) == -1)
			return -1;
		delimiter(m);
		return (long)(q - p) + (long)m->dlen;
	}
	/*
	 * The end may be the start of a delimiter.  A delimiter has one CR,
	 * its first byte, so only the last CR of the final dlen - 1 bytes
	 * can start one.
	 */
	tail = n < m->dlen - 1 ? n : m->dlen - 1;
	q = memrchr(end - tail, '\r', tail);
	if (q != NULL && memcmp(q, m->delim, (size_t)(end - q)) == 0) {
		if (emit(m, h, p, (size_t)(q - p)) == -1)
			return -1;
		m->held = (size_t)(end - q);
		return (long)n;
	}
	return emit(m, h, p, n) == -1 ? -1 : (long)n;
}

static int
fail(struct multipart *m, const char *why)
{
	m->error = why;
	m->state = S_FAILED;
	return -1;
}

int
mp_init(struct multipart *m, const char *ctype)
{
	const char	*p, *v;
	size_t		 n, i;

	memset(m, 0, sizeof(*m));
	m->state = S_FAILED;
	m->error = "it is not multipart/form-data";
	if (ctype == NULL || strncasecmp(ctype, "multipart/form-data", 19) != 0)
		return -1;
	m->error = "its Content-Type has no boundary";
	for (p = ctype + 19;;) {
		p += strspn(p, " \t");
		if (*p != ';')
			return -1;
		p++;
		p += strspn(p, " \t");
		if (strncasecmp(p, "boundary=", 9) == 0)
			break;
		p += strcspn(p, "=;");
		if (*p == '=' && (p = param_value(p + 1, NULL, 0)) == NULL)
			return -1;
	}
	v = p + 9;
	if (*v == '"') {
		v++;
		n = strcspn(v, "\"");
		if (v[n] != '"')
			return -1;
	} else
		n = strcspn(v, " \t;");
	m->error = "its boundary is not 1 to 70 of the characters RFC 2046 "
	    "allows";
	if (n == 0 || n > MP_BOUNDARY_MAX || v[n - 1] == ' ')
		return -1;
	for (i = 0; i < n; i++)
		if (!is_bchar((unsigned char)v[i]))
			return -1;
	memcpy(m->delim, "\r\n--", 4);
	memcpy(m->delim + 4, v, n);
	m->dlen = 4 + n;
	m->held = 2;		/* the first delimiter may open the body */
	m->state = S_BODY;
	m->error = NULL;
	return 0;
}

int
mp_feed(struct multipart *m, const char *p, size_t n,
    const struct mp_handler *h)
{
	const char	*end = p + n;
	long		 k;
	char		 c;

	while (p < end) {
		switch (m->state) {
		case S_BODY:
			if ((k = body(m, p, (size_t)(end - p), h)) == -1)
				goto stopped;
			p += k;
			continue;
		case S_HEADERS:
			if (m->hlen == sizeof(m->hdr))
				return fail(m, "a part's headers are longer than "
				    "8192 bytes");
			m->hdr[m->hlen++] = *p++;
			if (m->hlen >= 2 && memcmp(m->hdr + m->hlen - 2, "\r\n",
			    2) == 0 && (m->hlen == 2 || (m->hlen >= 4 &&
			    memcmp(m->hdr + m->hlen - 4, "\r\n", 2) == 0)) &&
			    part_begin(m, h) == -1)
				goto stopped;
			continue;
		case S_EPILOGUE:
			return 0;
		case S_FAILED:
			return -1;
		}
		c = *p++;
		switch (m->state) {
		case S_AFTER:
			if (c == '-')
				m->state = S_DASH;
			else if (c == ' ' || c == '\t') {
				m->state = S_PAD;
				m->pad = 1;
			}
			else if (c == '\r')
				m->state = S_LF;
			else
				return fail(m, "a delimiter is not followed by "
				    "a line end");
			break;
		case S_DASH:
			if (c != '-')
				return fail(m, "a delimiter is not followed by "
				    "a line end");
			m->state = S_EPILOGUE;
			if (part_end(m, h) == -1)
				goto stopped;
			break;
		case S_PAD:
			if (c == '\r')
				m->state = S_LF;
			else if ((c != ' ' && c != '\t') || ++m->pad > MP_PAD_MAX)
				return fail(m, "a delimiter is not followed by "
				    "a line end");
			break;
		case S_LF:
			if (c != '\n')
				return fail(m, "a line ends in a CR without an LF");
			m->state = S_HEADERS;
			m->hlen = 0;
			if (part_end(m, h) == -1)
				goto stopped;
			break;
		}
	}
	return 0;
stopped:
	m->error = NULL;
	m->state = S_FAILED;
	return -1;
}

int
mp_complete(const struct multipart *m)
{
	return m->state == S_EPILOGUE;
}
