/*
 * Unit tests for common/multipart.c: boundaries from the Content-Type,
 * parts and their names, data that looks like a delimiter, every way a
 * body can be cut into pieces, refusals, and a handler that stops.
 *
 * What a reader reports is written to a log: "<name|filename>" when a part
 * begins, its data as it is, "</>" when it ends; each body is read whole,
 * cut in two at every offset, and a byte at a time, and the logs must be
 * the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "multipart.h"

struct log {
	char		 text[1 << 19];
	size_t		 len;
	const char	*lo, *hi;	/* the piece fed */
	int		 outside;	/* a data run not in the piece or reader */
	const struct multipart *m;
	int		 stop_at;	/* the begin (1...) that returns -1 */
	int		 begins;
	int		 runs;
};

static void
log_add(struct log *l, const char *p, size_t n)
{
	assert_true(l->len + n < sizeof(l->text));
	memcpy(l->text + l->len, p, n);
	l->len += n;
	l->text[l->len] = '\0';
}

static int
on_begin(void *arg, const char *name, const char *filename)
{
	struct log	*l = arg;
	char		 s[512];

	snprintf(s, sizeof(s), "<%s|%s>", name ? name : "(none)",
	    filename ? filename : "(none)");
	log_add(l, s, strlen(s));
	return ++l->begins == l->stop_at ? -1 : 0;
}

static int
on_data(void *arg, const char *p, size_t n)
{
	struct log	*l = arg;
	const char	*d = l->m->delim;

	assert_true(n > 0);
	if (!((p >= l->lo && p + n <= l->hi) ||
	    (p >= d && p + n <= d + sizeof(l->m->delim))))
		l->outside = 1;
	log_add(l, p, n);
	l->runs++;
	return 0;
}

static int
on_end(void *arg)
{
	log_add(arg, "</>", 3);
	return 0;
}

/*
 * Reads body in pieces: cut at cut (whole: cut = len), or step bytes at
 * a time when step > 0.  Returns mp_feed's last result; the log in l.
 */
static int
read_body(const char *ctype, const char *body, size_t len, size_t cut,
    size_t step, struct log *l, struct multipart *m)
{
	struct mp_handler h = { on_begin, on_data, on_end, l };
	size_t	 i, n;
	int	 rc = 0, stop = l->stop_at;

	memset(l, 0, sizeof(*l));
	l->stop_at = stop;
	l->m = m;
	assert_int_equal(mp_init(m, ctype), 0);
	for (i = 0; i < len && rc == 0; i += n) {
		n = step ? step : i < cut ? cut - i : len - i;
		if (n > len - i)
			n = len - i;
		l->lo = body + i;
		l->hi = body + i + n;
		rc = mp_feed(m, body + i, n, &h);
	}
	assert_false(l->outside);
	return rc;
}

/*
 * Reads body every way: each gives want (NULL: the log is not checked),
 * the result rc and completeness complete.
 */
static void
check_body(const char *ctype, const char *body, const char *want, int rc,
    int complete)
{
	static struct log	 whole, l;
	static struct multipart	 m;
	size_t			 len = strlen(body), cut;

	whole.stop_at = 0;
	assert_int_equal(read_body(ctype, body, len, len, 0, &whole, &m), rc);
	assert_int_equal(mp_complete(&m), complete);
	if (want != NULL && strcmp(whole.text, want) != 0)
		fail_msg("read as\n%s\nwanted\n%s", whole.text, want);
	for (cut = 0; cut <= len; cut++) {
		l.stop_at = 0;
		assert_int_equal(read_body(ctype, body, len, cut, 0, &l, &m),
		    rc);
		if (strcmp(l.text, whole.text) != 0)
			fail_msg("cut at %zu: read as\n%s", cut, l.text);
		assert_int_equal(mp_complete(&m), complete);
	}
	l.stop_at = 0;
	assert_int_equal(read_body(ctype, body, len, len, 1, &l, &m), rc);
	if (strcmp(l.text, whole.text) != 0)
		fail_msg("a byte at a time: read as\n%s", l.text);
	assert_int_equal(mp_complete(&m), complete);
}

#define CT	"multipart/form-data; boundary=XyZ"

static void
test_one_file(void **state)
{
	check_body(CT, "--XyZ\r\n"
	    "Content-Disposition: form-data; name=\"file\"; "
	    "filename=\"data.csv\"\r\n"
	    "Content-Type: text/csv\r\n\r\n"
	    "a,b\r\n1,2\r\n"
	    "\r\n--XyZ--\r\n",
	    "<file|data.csv>a,b\r\n1,2\r\n</>", 0, 1);
}

static void
test_several_parts(void **state)
{
	check_body(CT, "preamble, ignored\r\n--XyZ\r\n"
	    "Content-Disposition: form-data; name=\"note\"\r\n\r\n"
	    "hello"
	    "\r\n--XyZ  \t\r\n"		/* transport padding */
	    "content-disposition:form-data;name=file;filename=a.bin\r\n\r\n"
	    "\r\n--XyZ\r\n"		/* an empty file */
	    "Content-Disposition: form-data; name=\"file\"; filename=\"\"\r\n"
	    "\r\n"
	    "\r\n--XyZ\r\n"
	    "\r\n"			/* no headers at all */
	    "x"
	    "\r\n--XyZ--epilogue\r\n--XyZ\r\nignored too",
	    "<note|(none)>hello</><file|a.bin></><file|></>"
	    "<(none)|(none)>x</>", 0, 1);
}

/* Data that starts a delimiter and does not finish it is data. */
static void
test_near_delimiters(void **state)
{
	check_body(CT, "--XyZ\r\n"
	    "Content-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n"
	    "\r\n"
	    "\r\r\n\r\n-\r\n--\r\n--X\r\n--Xy\r\n-XyZ\n--XyZ\r--XyZ--XyZ\r"
	    "\r\n--XyZ--",
	    "<file|f>\r\r\n\r\n-\r\n--\r\n--X\r\n--Xy\r\n-XyZ\n--XyZ\r--XyZ"
	    "--XyZ\r</>", 0, 1);
	/* The same body with its data ending where a delimiter could. */
	check_body(CT, "--XyZ\r\n\r\n\r\n--Xy", "<(none)|(none)>", 0, 0);
}

/* Binary data, every byte value, goes through as it is. */
static void
test_binary(void **state)
{
	static char		 body[2048], want[2048];
	static struct log	 l;
	static struct multipart	 m;
	const char		*head = "--XyZ\r\n\r\n", *tail = "\r\n--XyZ--";
	size_t			 i, n = 0, hl = strlen(head);

	memcpy(body, head, hl);
	for (i = 0; i < 512; i++)
		body[hl + i] = want[i] = (char)(i * 7 + (i >> 8));
	n = hl + 512;
	memcpy(body + n, tail, strlen(tail));
	n += strlen(tail);
	for (i = 1; i < 40; i += 3) {
		l.stop_at = 0;
		assert_int_equal(read_body(CT, body, n, n, i, &l, &m), 0);
		assert_true(mp_complete(&m));
		/* "<(none)|(none)>" + data + "</>" */
		assert_int_equal(l.len, 15 + 512 + 3);
		assert_memory_equal(l.text + 15, want, 512);
	}
}

/* A large part is passed on in runs as large as the pieces fed. */
static void
test_large_runs(void **state)
{
	static char		 body[300000];
	static struct log	 l;
	static struct multipart	 m;
	struct mp_handler	 h = { on_begin, on_data, on_end, &l };
	const char		*head = "--XyZ\r\n\r\n";
	size_t			 hl = strlen(head), n;

	memcpy(body, head, hl);
	memset(body + hl, 'a', sizeof(body) - hl);
	memset(&l, 0, sizeof(l));
	l.m = &m;
	l.lo = body;
	l.hi = body + sizeof(body);
	assert_int_equal(mp_init(&m, CT), 0);
	n = sizeof(body) - 100000;
	assert_int_equal(mp_feed(&m, body, n, &h), 0);
	/* All of it but the header: no CR at the end, nothing held. */
	assert_int_equal(l.len, 15 + n - hl);
	assert_int_equal(m.held, 0);
	assert_int_equal(l.runs, 1);
}

static void
test_boundaries(void **state)
{
	struct multipart m;
	char	 ct[256];

	assert_int_equal(mp_init(&m, "multipart/form-data; boundary=abc"), 0);
	assert_int_equal(m.dlen, 7);
	assert_memory_equal(m.delim, "\r\n--abc", 7);
	assert_int_equal(mp_init(&m, "Multipart/Form-Data;charset=utf-8;"
	    "BOUNDARY=\"a b'()+_,-./:=?\""), 0);
	assert_memory_equal(m.delim + 4, "a b'()+_,-./:=?", 15);
	/* Another parameter with a quoted value holding "boundary=". */
	assert_int_equal(mp_init(&m, "multipart/form-data; x=\"; boundary=no\"; "
	    "boundary=yes"), 0);
	assert_memory_equal(m.delim + 4, "yes", 3);
	assert_int_equal(mp_init(&m, "multipart/form-data; boundary=abc; x=1"),
	    0);
	assert_int_equal(m.dlen, 7);
	memset(ct, 0, sizeof(ct));
	snprintf(ct, sizeof(ct), "multipart/form-data; boundary=%070d", 7);
	assert_int_equal(mp_init(&m, ct), 0);
	assert_int_equal(m.dlen, 74);

	/* Refused, each with a reason. */
	snprintf(ct, sizeof(ct), "multipart/form-data; boundary=%071d", 7);
	assert_int_equal(mp_init(&m, ct), -1);
	assert_non_null(m.error);
	assert_int_equal(mp_init(&m, NULL), -1);
	assert_int_equal(mp_init(&m, "text/plain; boundary=abc"), -1);
	assert_int_equal(mp_init(&m, "multipart/form-data"), -1);
	assert_int_equal(mp_init(&m, "multipart/form-data; charset=x"), -1);
	assert_int_equal(mp_init(&m, "multipart/form-data; boundary="), -1);
	assert_int_equal(mp_init(&m, "multipart/form-data; boundary=\"\""), -1);
	assert_int_equal(mp_init(&m, "multipart/form-data; boundary=\"abc"), -1);
	assert_int_equal(mp_init(&m, "multipart/form-data; boundary=\"ab \""),
	    -1);
	assert_int_equal(mp_init(&m, "multipart/form-data; boundary=a\rb"), -1);
	assert_int_equal(mp_init(&m, "multipart/form-data; boundary=a\"b"), -1);
	assert_int_equal(mp_init(&m, "multipart/form-data; boundary=\xc3\xa9"),
	    -1);
	assert_int_equal(mp_init(&m, "multipart/form-data; x=\"unclosed; "
	    "boundary=abc"), -1);
	assert_int_equal(mp_init(&m, "multipart/form-dataX; boundary=abc"), -1);
	/* A refused reader takes nothing. */
	assert_int_equal(mp_feed(&m, "--abc\r\n", 7, NULL), -1);
}

static void
test_disposition(void **state)
{
	check_body(CT, "--XyZ\r\n"
	    "X-Other: form-data; name=\"no\"\r\n"
	    "Content-Disposition: form-data; filename=\"a\\\"b\\\\c.csv\"; "
	    "name=\"file\"; name=\"second\"; filename*=UTF-8''x.csv\r\n"
	    "Content-Disposition: form-data; name=\"third\"\r\n\r\n"
	    "\r\n--XyZ\r\n"
	    "Content-Disposition: attachment; name=\"file\"\r\n\r\n"
	    "\r\n--XyZ\r\n"
	    "Content-Disposition: form-data; name=\"file\"; filename=\"open\r\n"
	    "\r\n"
	    "\r\n--XyZ\r\n"
	    "Content-Disposition: form-data; name; filename=\"x\"\r\n\r\n"
	    "\r\n--XyZ\r\n"
	    "Content-Disposition: form-data;name = f ; filename = \"g h\"\r\n"
	    "\r\n"
	    "\r\n--XyZ--",
	    "<file|a\"b\\c.csv></><(none)|(none)></><file|(none)></>"
	    "<(none)|(none)></><f|g h></>", 0, 1);
}

static void
test_refusals(void **state)
{
	static struct multipart	 m;
	static char		 big[MP_HEADER_MAX + 64];
	static struct log	 l;
	size_t			 n;

	check_body(CT, "--XyZx\r\n\r\n", NULL, -1, 0);
	check_body(CT, "--XyZ\r\n\r\ndata\r\n--XyZ-x", NULL, -1, 0);
	check_body(CT, "--XyZ\rx", NULL, -1, 0);
	check_body(CT, "--XyZ \tx\r\n", NULL, -1, 0);
	/* The data before a refusal was passed on; the part never ended:
	 * a delimiter counts once what follows it is right. */
	check_body(CT, "--XyZ\r\n\r\nkept\r\n--XyZ!\r\n", "<(none)|(none)>kept",
	    -1, 0);
	/* Cut off: nothing wrong yet, but not complete. */
	check_body(CT, "--XyZ\r\n\r\nhalf", "<(none)|(none)>half", 0, 0);
	check_body(CT, "--XyZ\r\nContent-Disp", "", 0, 0);
	check_body(CT, "", "", 0, 0);

	/* Headers past the cap. */
	n = (size_t)snprintf(big, sizeof(big), "--XyZ\r\n");
	memset(big + n, 'h', MP_HEADER_MAX);
	n += MP_HEADER_MAX;
	l.stop_at = 0;
	assert_int_equal(read_body(CT, big, n, n, 0, &l, &m), 0);
	assert_int_equal(read_body(CT, big, n + 1, n + 1, 0, &l, &m), -1);
	assert_non_null(m.error);
	assert_non_null(strstr(m.error, "headers"));
	/* Padding past its cap. */
	memset(big, 0, sizeof(big));
	n = (size_t)snprintf(big, sizeof(big), "--XyZ");
	memset(big + n, ' ', MP_PAD_MAX);
	n += MP_PAD_MAX;
	memcpy(big + n, "\r\n\r\n", 4);
	assert_int_equal(read_body(CT, big, n + 4, n + 4, 0, &l, &m), 0);
	assert_int_equal(l.begins, 1);
	memmove(big + n + 1, big + n, 4);
	big[n] = ' ';
	assert_int_equal(read_body(CT, big, n + 5, n + 5, 0, &l, &m), -1);
	/* After a refusal nothing more is taken. */
	assert_int_equal(mp_feed(&m, "x", 1, NULL), -1);
}

/* A handler's -1 stops the reader, with no error of its own. */
static void
test_handler_stops(void **state)
{
	static struct log	 l;
	static struct multipart	 m;
	const char		*body = "--XyZ\r\n\r\none\r\n--XyZ\r\n\r\ntwo"
				    "\r\n--XyZ--";
	size_t			 n = strlen(body);

	l.stop_at = 2;
	assert_int_equal(read_body(CT, body, n, n, 0, &l, &m), -1);
	assert_null(m.error);
	assert_string_equal(l.text, "<(none)|(none)>one</><(none)|(none)>");
	assert_false(mp_complete(&m));
	assert_int_equal(mp_feed(&m, "x", 1, NULL), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_file),
		cmocka_unit_test(test_several_parts),
		cmocka_unit_test(test_near_delimiters),
		cmocka_unit_test(test_binary),
		cmocka_unit_test(test_large_runs),
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_disposition),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_handler_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
