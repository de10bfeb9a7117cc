/*
 * Unit tests for common/http1.c, the one HTTP/1.1 parser: requests the proxy must accept, the
 * hostile ones it must refuse (with the right status), the head it sends
 * upstream, the response head it sends the client, and body framing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "http1.h"

#define MAX	16384

static struct h1_req r;

static int
parse(const char *s)
{
	return h1_parse_request(s, strlen(s), MAX, &r);
}

static void
test_connect(void **state)
{
	assert_int_equal(parse("CONNECT Example.COM:443 HTTP/1.1\r\n"
	    "Host: example.com:443\r\n\r\n"), H1_DONE);
	assert_true(r.connect);
	assert_string_equal(r.host, "example.com");
	assert_int_equal(r.port, 443);
	assert_int_equal(r.minor, 1);

	/* Python's http.client may send no Host with CONNECT */
	assert_int_equal(parse("CONNECT [2001:db8::1]:8443 HTTP/1.0\r\n\r\n"),
	    H1_DONE);
	assert_true(r.host_v6);
	assert_string_equal(r.host, "2001:db8::1");
	assert_int_equal(r.port, 8443);

	assert_int_equal(parse("CONNECT a.b:1 HTTP/1.1\r\n\r\n"), H1_DONE);
	assert_int_equal(parse("CONNECT a.b:65535 HTTP/1.1\r\n\r\n"), H1_DONE);
	assert_int_equal(r.port, 65535);
}

/* Bytes after the head are not part of it: head_len stops at the empty
 * line, whatever follows (a TLS hello after CONNECT). */
static void
test_connect_pipelined(void **state)
{
	const char *s = "CONNECT x.org:443 HTTP/1.1\r\nHost: x.org\r\n\r\n"
	    "\x16\x03\x01\x02\x00GET / HTTP/1.1\r\n";

	assert_int_equal(h1_parse_request(s, strlen(s) , MAX, &r), H1_DONE);
	assert_int_equal(r.head_len, strlen("CONNECT x.org:443 HTTP/1.1\r\n"
	    "Host: x.org\r\n\r\n"));
}

static void
test_absolute_form(void **state)
{
	const char	*s;

	s = "GET http://example.com/a/b?c=d HTTP/1.1\r\nHost: example.com\r\n"
	    "User-Agent: t\r\n\r\n";
	assert_int_equal(parse(s), H1_DONE);
	assert_false(r.connect);
	assert_string_equal(r.host, "example.com");
	assert_int_equal(r.port, 80);
	assert_int_equal(r.path.len, strlen("/a/b?c=d"));
	assert_memory_equal(s + r.path.off, "/a/b?c=d", r.path.len);
	assert_int_equal(r.nfields, 2);
	assert_false(r.close);

	assert_int_equal(parse("HEAD HTTP://EXAMPLE.com:8080 HTTP/1.0\r\n\r\n"),
	    H1_DONE);
	assert_string_equal(r.host, "example.com");
	assert_int_equal(r.port, 8080);
	assert_int_equal(r.path.len, 0);
	assert_true(r.close);	/* HTTP/1.0 without keep-alive */

	assert_int_equal(parse("GET http://[::1]:81/ HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n"), H1_DONE);
	assert_string_equal(r.host, "::1");
	assert_true(r.close);

	assert_int_equal(parse("POST http://a.io/ HTTP/1.1\r\nHost: a.io\r\n"
	    "Content-Length: 12\r\n\r\n"), H1_DONE);
	assert_int_equal(r.content_length, 12);
	assert_int_equal(parse("POST http://a.io/ HTTP/1.1\r\nHost: a.io\r\n"
	    "Transfer-Encoding: Chunked\r\n\r\n"), H1_DONE);
	assert_true(r.chunked);

	/* Field values: obs-text and inner blanks pass; OWS is trimmed. */
	s = "GET http://a.io/ HTTP/1.1\r\nHost:a.io\r\nX-A: \t caf\xc3\xa9 x \t\r\n"
	    "X-Empty:\r\n\r\n";
	assert_int_equal(parse(s), H1_DONE);
	assert_int_equal(r.fields[1].value.len, strlen("caf\xc3\xa9 x"));
	assert_int_equal(r.fields[2].value.len, 0);
}

static void
test_incomplete(void **state)
{
	assert_int_equal(parse(""), H1_NEED_MORE);
	assert_int_equal(parse("CONNECT a.b:443 HTTP/1.1\r\n"), H1_NEED_MORE);
	assert_int_equal(parse("CONNECT a.b:443 HTTP/1.1\r\nHost: a"),
	    H1_NEED_MORE);
	assert_int_equal(parse("CONNECT a.b:443 HTTP/1.1\r\n\r"),
	    H1_NEED_MORE);
}

struct bad {
	const char	*req;
	int		 status;
	const char	*why;		/* part of the reason */
};

#define H "\r\nHost: a.io\r\n\r\n"

static const struct bad bad[] = {
	/* the target */
	{ "CONNECT user@example.com:443 HTTP/1.1\r\n\r\n", 400, "userinfo" },
	{ "CONNECT user:pw@example.com:443 HTTP/1.1\r\n\r\n", 400, "userinfo" },
	{ "GET http://u:p@example.com/ HTTP/1.1" H, 400, "userinfo" },
	{ "GET http://example.com@evil.io/ HTTP/1.1" H, 400, "userinfo" },
	{ "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", 400, "zone" },
	{ "CONNECT [fe80::1%eth0]:443 HTTP/1.1\r\n\r\n", 400, "zone" },
	{ "GET http://[fe80::1%25eth0]/ HTTP/1.1" H, 400, "zone" },
	{ "CONNECT a.io:0443 HTTP/1.1\r\n\r\n", 400, "port" },
	{ "CONNECT a.io:65536 HTTP/1.1\r\n\r\n", 400, "port" },
	{ "CONNECT a.io:+443 HTTP/1.1\r\n\r\n", 400, "port" },
	{ "CONNECT a.io:-443 HTTP/1.1\r\n\r\n", 400, "port" },
	{ "CONNECT a.io:0 HTTP/1.1\r\n\r\n", 400, "port" },
	{ "CONNECT a.io:443a HTTP/1.1\r\n\r\n", 400, "port" },
	{ "CONNECT a.io:4430000 HTTP/1.1\r\n\r\n", 400, "port" },
	{ "CONNECT a.io: HTTP/1.1\r\n\r\n", 400, "port" },
	{ "CONNECT a.io:443:443 HTTP/1.1\r\n\r\n", 400, "port" },
	{ "CONNECT a.io HTTP/1.1\r\n\r\n", 400, "missing port" },
	{ "GET http://a.io:0x50/ HTTP/1.1" H, 400, "port" },
	{ "GET http://a.io:/ HTTP/1.1" H, 400, "port" },
	{ "CONNECT :443 HTTP/1.1\r\n\r\n", 400, "empty host" },
	{ "CONNECT a%2eio:443 HTTP/1.1\r\n\r\n", 400, "bad character" },
	{ "CONNECT a!io:443 HTTP/1.1\r\n\r\n", 400, "bad character" },
	{ "CONNECT [::1:443 HTTP/1.1\r\n\r\n", 400, "unterminated" },
	{ "CONNECT [::g]:443 HTTP/1.1\r\n\r\n", 400, "IPv6" },
	{ "CONNECT [1.2.3.4]:443 HTTP/1.1\r\n\r\n", 400, "IPv6" },
	{ "CONNECT []:443 HTTP/1.1\r\n\r\n", 400, "IPv6" },
	{ "CONNECT [::1]x:443 HTTP/1.1\r\n\r\n", 400, "junk" },
	{ "GET / HTTP/1.1" H, 400, "absolute" },
	{ "OPTIONS * HTTP/1.1" H, 400, "absolute" },
	{ "GET https://a.io/ HTTP/1.1" H, 400, "CONNECT" },
	{ "GET ftp://a.io/ HTTP/1.1" H, 400, "scheme" },
	{ "GET http://a.io/#frag HTTP/1.1" H, 400, "fragment" },
	{ "GET http:///x HTTP/1.1" H, 400, "empty host" },
	/* the request line */
	{ "GET  http://a.io/ HTTP/1.1" H, 400, "request line" },
	{ "GET http://a.io/  HTTP/1.1" H, 400, "version" },
	{ "GET http://a.io/ HTTP/2.0" H, 400, "version" },
	{ "GET http://a.io/ http/1.1" H, 400, "version" },
	{ "GET http://a.io/ HTTP/1.1 " H, 400, "version" },
	{ "GET http://a.io/ HTTP/1.10" H, 400, "version" },
	{ "GET http://a.io/" H, 400, "request line" },
	{ "G(T http://a.io/ HTTP/1.1" H, 400, "method" },
	{ " GET http://a.io/ HTTP/1.1" H, 400, "method" },
	{ "GET http://a.io/\x7f HTTP/1.1" H, 400, "target" },
	{ "GET http://a.io/\xc3\xa9 HTTP/1.1" H, 400, "target" },
	{ "\r\nGET http://a.io/ HTTP/1.1" H, 400, "method" },
	/* line endings and bytes */
	{ "GET http://a.io/ HTTP/1.1\nHost: a.io\n\n", 400, "bare" },
	{ "GET http://a.io/ HTTP/1.1\r\nHost: a.io\n\r\n", 400, "bare" },
	{ "GET http://a.io/ HTTP/1.1\r\nX: a\rb\r\nHost: a.io\r\n\r\n", 400,
	    "bare" },
	{ "GET http://a.io/ HTTP/1.1\r\nX: a\x01" "b" H, 400, "control" },
	{ "GET http://a.io/ HTTP/1.1\r\nX: a\x7f" H, 400, "control" },
	{ "GET http://a.io/ HTTP/1.1\r\nX: a\x1b[0m" H, 400, "control" },
	/* fields */
	{ "GET http://a.io/ HTTP/1.1\r\nHost: a.io\r\nX: a\r\n folded\r\n\r\n",
	    400, "folding" },
	{ "GET http://a.io/ HTTP/1.1\r\nHost: a.io\r\n\tX: a\r\n\r\n", 400,
	    "folding" },
	{ "GET http://a.io/ HTTP/1.1\r\nHost : a.io\r\n\r\n", 400,
	    "whitespace before colon" },
	{ "GET http://a.io/ HTTP/1.1\r\nHost\t: a.io\r\n\r\n", 400,
	    "whitespace before colon" },
	{ "GET http://a.io/ HTTP/1.1\r\n: a.io\r\n\r\n", 400, "field name" },
	{ "GET http://a.io/ HTTP/1.1\r\nX(y): 1" H, 400, "field name" },
	{ "GET http://a.io/ HTTP/1.1\r\nNoColon" H, 400, "field name" },
	{ "GET http://a.io/ HTTP/1.1\r\nHost: a.io\r\nhost: b.io\r\n\r\n", 400,
	    "duplicate Host" },
	{ "GET http://a.io/ HTTP/1.1\r\nX: y\r\n\r\n", 400, "missing Host" },
	{ "POST http://a.io/ HTTP/1.1\r\nContent-Length: 1\r\n"
	    "Content-Length: 1" H, 400, "duplicate Content-Length" },
	{ "POST http://a.io/ HTTP/1.1\r\nContent-Length: 1, 1" H, 400,
	    "malformed Content-Length" },
	{ "POST http://a.io/ HTTP/1.1\r\nContent-Length: +1" H, 400,
	    "malformed Content-Length" },
	{ "POST http://a.io/ HTTP/1.1\r\nContent-Length: -1" H, 400,
	    "malformed Content-Length" },
	{ "POST http://a.io/ HTTP/1.1\r\nContent-Length: " H, 400,
	    "malformed Content-Length" },
	{ "POST http://a.io/ HTTP/1.1\r\nContent-Length: 99999999999999999999"
	    H, 400, "malformed Content-Length" },
	{ "POST http://a.io/ HTTP/1.1\r\nContent-Length: 3\r\n"
	    "Transfer-Encoding: chunked" H, 400, "both" },
	{ "POST http://a.io/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 3" H, 400, "both" },
	{ "POST http://a.io/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked" H,
	    400, "Transfer-Encoding" },
	{ "POST http://a.io/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: chunked" H, 400, "duplicate Transfer-Encoding" },
	{ "POST http://a.io/ HTTP/1.1\r\nTransfer-Encoding: xchunked" H, 400,
	    "Transfer-Encoding" },
	{ "CONNECT a.io:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n", 400,
	    "body" },
	{ "CONNECT a.io:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
	    400, "body" },
};

static void
test_hostile(void **state)
{
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = h1_parse_request(bad[i].req, strlen(bad[i].req),
		    MAX, &r);

		if (rc != H1_ERROR)
			fail_msg("accepted (%d): %s", rc, bad[i].req);
		if (r.status != bad[i].status || strstr(r.reason,
		    bad[i].why) == NULL)
			fail_msg("%s: got %d \"%s\", want %d \"%s\"",
			    bad[i].req, r.status, r.reason, bad[i].status,
			    bad[i].why);
	}
}

static void
test_nul_byte(void **state)
{
	static const char s[] = "GET http://a.io/ HTTP/1.1\r\nX: a\0b" H;

	assert_int_equal(h1_parse_request(s, sizeof(s) - 1, MAX, &r),
	    H1_ERROR);
	assert_int_equal(r.status, 400);
}

static void
test_too_large(void **state)
{
	struct buf	 b = BUF_INIT(1 << 20);
	int		 i;

	/* a head that never ends inside the limit */
	assert_int_equal(buf_appends(&b, "GET http://a.io/ HTTP/1.1\r\n"), 0);
	while (b.len < MAX + 10)
		assert_int_equal(buf_appends(&b, "X-Pad: 0123456789abcdef\r\n"),
		    0);
	assert_int_equal(h1_parse_request(b.data, b.len, MAX, &r),
	    H1_ERROR);
	assert_int_equal(r.status, 431);
	/* exactly at the limit, still open: refused, not waited for */
	assert_int_equal(h1_parse_request(b.data, MAX, MAX, &r), H1_ERROR);
	assert_int_equal(r.status, 431);

	/* too many fields, though small */
	buf_reset(&b);
	assert_int_equal(buf_appends(&b, "GET http://a.io/ HTTP/1.1\r\n"
	    "Host: a.io\r\n"), 0);
	for (i = 0; i < H1_MAX_HEADERS; i++)
		assert_int_equal(buf_appends(&b, "X: 1\r\n"), 0);
	assert_int_equal(buf_appends(&b, "\r\n"), 0);
	assert_int_equal(h1_parse_request(b.data, b.len, MAX, &r),
	    H1_ERROR);
	assert_int_equal(r.status, 431);

	/* A response at the field limit is forwarded as it is, but not with
	 * our Connection line added: that head would be one field too many
	 * for this parser (and for Python's http.client).  The fuzzer found
	 * it. */
	{
		struct h1_resp	 resp, again;
		struct buf		 out = BUF_INIT(MAX + 64);

		buf_reset(&b);
		assert_int_equal(buf_appends(&b, "HTTP/1.1 200 OK\r\n"), 0);
		for (i = 0; i < H1_MAX_HEADERS - 1; i++)
			assert_int_equal(buf_appends(&b, "X: 1\r\n"), 0);
		assert_int_equal(buf_appends(&b, "\r\n"), 0);
		assert_int_equal(h1_parse_response(b.data, b.len, MAX, &resp),
		    H1_DONE);
		assert_int_equal(h1_rewrite_response(b.data, &resp, 1, &out), 0);
		assert_int_equal(h1_parse_response(out.data, out.len, MAX,
		    &again), H1_DONE);
		assert_int_equal(again.nfields, H1_MAX_HEADERS);
		/* one more field: still accepted, but not rewritten with close */
		b.len -= 2;
		assert_int_equal(buf_appends(&b, "X: 1\r\n\r\n"), 0);
		assert_int_equal(h1_parse_response(b.data, b.len, MAX, &resp),
		    H1_DONE);
		buf_reset(&out);
		assert_int_equal(h1_rewrite_response(b.data, &resp, 1, &out), -1);
		buf_reset(&out);
		assert_int_equal(h1_rewrite_response(b.data, &resp, 0, &out), 0);
		buf_release(&out);
	}

	/* a host name longer than DNS allows */
	buf_reset(&b);
	assert_int_equal(buf_appends(&b, "CONNECT "), 0);
	for (i = 0; i < 300; i++)
		assert_int_equal(buf_appends(&b, "a"), 0);
	assert_int_equal(buf_appends(&b, ":443 HTTP/1.1\r\n\r\n"), 0);
	assert_int_equal(h1_parse_request(b.data, b.len, MAX, &r),
	    H1_ERROR);
	assert_int_equal(r.status, 400);
	buf_release(&b);
}

static void
test_rewrite(void **state)
{
	const char *s =
	    "POST http://Example.com/p?q=1 HTTP/1.1\r\n"
	    "Host: ignored.example\r\n"
	    "Proxy-Authorization: Basic eA==\r\n"
	    "Proxy-Connection: keep-alive\r\n"
	    "Connection: close, X-Secret\r\n"
	    "Keep-Alive: 300\r\n"
	    "TE: trailers\r\n"
	    "Upgrade: websocket\r\n"
	    "X-Secret: 1\r\n"
	    "Content-Length: 2\r\n"
	    "Accept: */*\r\n\r\n";
	struct buf	 out = BUF_INIT(4096);

	assert_int_equal(parse(s), H1_DONE);
	assert_int_equal(h1_rewrite_request(s, &r, &out), 0);
	assert_string_equal(buf_str(&out),
	    "POST /p?q=1 HTTP/1.1\r\n"
	    "Host: example.com\r\n"
	    "Content-Length: 2\r\n"
	    "Accept: */*\r\n"
	    "Connection: close\r\n\r\n");

	buf_reset(&out);
	s = "GET http://[2001:db8::1]:8080?x HTTP/1.1\r\nHost: h\r\n\r\n";
	assert_int_equal(parse(s), H1_DONE);
	assert_int_equal(h1_rewrite_request(s, &r, &out), 0);
	assert_string_equal(buf_str(&out),
	    "GET /?x HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n\r\n");
	buf_release(&out);
}

static void
test_response(void **state)
{
	struct h1_resp resp;
	const char	*s;

	s = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_DONE);
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.content_length, 3);
	assert_int_equal(resp.head_len, strlen(s) - 3);
	assert_false(resp.close);

	s = "HTTP/1.0 404 Not Found\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_DONE);
	assert_true(resp.close);

	s = "HTTP/1.1 204\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_DONE);
	assert_int_equal(resp.status, 204);

	s = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 10\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_DONE);
	assert_true(resp.chunked);
	assert_true(resp.close);
	assert_int_equal(resp.content_length, -1);

	s = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_ERROR);
	s = "HTTP/1.1 20 OK\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_ERROR);
	s = "ICY 200 OK\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_ERROR);
	s = "HTTP/1.1 200 OK\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_NEED_MORE);
}

/* What a stricter reader (the supervisor) needs: why a head was refused,
 * which framing was ambiguous, and the fields by name. */
static void
test_response_reasons(void **state)
{
	static const struct {
		const char	*head;
		const char	*reason;
	} refused[] = {
		{ "HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\n",
		    "malformed Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		    "malformed Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
		    "Content-Length: 1\r\n\r\n", "duplicate Content-Length" },
		{ "HTTP/1.1 2000 OK\r\n\r\n", "malformed status line" },
		{ "HTTP/1.1 099 Early\r\n\r\n", "malformed status line" },
		{ "HTTP/2 200 OK\r\n\r\n", "malformed status line" },
		{ "HTTP/1.1  200 OK\r\n\r\n", "malformed status line" },
		{ "HTTP/1.1 200 OK\nX: y\r\n\r\n",
		    "bare CR, bare LF or NUL in response head" },
		{ "HTTP/1.1 200 OK\r\nX : y\r\n\r\n",
		    "whitespace before colon" },
		{ "HTTP/1.1 200 OK\r\nX: y\r\n z\r\n\r\n",
		    "obsolete line folding" },
	};
	struct h1_resp resp;
	struct h1_span v;
	const char	*s;
	size_t		 i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		s = refused[i].head;
		assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
		    H1_ERROR);
		assert_non_null(resp.reason);
		assert_string_equal(resp.reason, refused[i].reason);
	}
	s = "HTTP/1.1 200 OK\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), 10, &resp),
	    H1_ERROR);
	assert_string_equal(resp.reason, "response head too large");

	s = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 10\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_DONE);
	assert_string_equal(resp.ambiguous,
	    "both Content-Length and Transfer-Encoding");
	s = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_DONE);
	assert_string_equal(resp.ambiguous, "unsupported Transfer-Encoding");
	assert_false(resp.chunked);
	assert_true(resp.close);

	s = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n"
	    "Mcp-Session-Id:  s-1 \r\nX: 1\r\nmcp-session-id: s-2\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_DONE);
	assert_null(resp.ambiguous);
	assert_int_equal(resp.minor, 0);
	assert_false(resp.close);
	assert_int_equal(h1_field_find(s, resp.fields, resp.nfields,
	    "MCP-Session-ID", &v), 2);
	assert_int_equal(v.len, 3);
	assert_memory_equal(s + v.off, "s-1", 3);
	assert_int_equal(h1_field_find(s, resp.fields, resp.nfields,
	    "Content-Type", NULL), 0);
}

/* Parses s as a response head and returns its rewrite (static storage). */
static const char *
rewrite_response(const char *s, int close)
{
	static struct buf out = BUF_INIT(4096);
	static struct h1_resp resp;

	buf_reset(&out);
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_DONE);
	assert_int_equal(h1_rewrite_response(s, &resp, close, &out), 0);
	return buf_str(&out);
}

static void
test_rewrite_response(void **state)
{
	const char	*s;

	/* Every hop-by-hop field goes, whatever its case; the status line
	 * and the end-to-end fields stay byte for byte (their own spacing
	 * included), in order; the framing fields stay. */
	s = "HTTP/1.1 200  Fine Thanks\r\n"
	    "Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n"
	    "connection: X-Secret ,\tkeep-alive, X-Other\r\n"
	    "Keep-Alive: timeout=5\r\n"
	    "X-Secret: 1\r\n"
	    "Proxy-Authenticate: Basic\r\n"
	    "PROXY-Foo: 1\r\n"
	    "Proxy-Connection: keep-alive\r\n"
	    "TE: trailers\r\n"
	    "Trailer: X-T\r\n"
	    "Upgrade: h2c\r\n"
	    "x-other:2\r\n"
	    "X-Kept:  spaced  value \t\r\n"
	    "Transfer-Encoding: chunked\r\n"
	    "X-Secret-Not: 3\r\n"
	    "Set-Cookie: a=1\r\n"
	    "Set-Cookie: b=2\r\n\r\n";
	assert_string_equal(rewrite_response(s, 0),
	    "HTTP/1.1 200  Fine Thanks\r\n"
	    "Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n"
	    "X-Kept:  spaced  value \t\r\n"
	    "Transfer-Encoding: chunked\r\n"
	    "X-Secret-Not: 3\r\n"
	    "Set-Cookie: a=1\r\n"
	    "Set-Cookie: b=2\r\n\r\n");

	/* Connection may name the framing fields: they stay all the same,
	 * or the client could not find the end of the body. */
	s = "HTTP/1.1 200 OK\r\nConnection: Content-Length, close\r\n"
	    "Content-Length: 3\r\nClose: x\r\n\r\n";
	assert_string_equal(rewrite_response(s, 0),
	    "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n");
	s = "HTTP/1.1 200 OK\r\nConnection: transfer-encoding\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n";
	assert_string_equal(rewrite_response(s, 0),
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");

	/* Asked to, the proxy says it will close; the upstream's own
	 * Connection never passes, so there is one such field. */
	s = "HTTP/1.1 404 Not Found\r\nConnection: close\r\n"
	    "Content-Length: 0\r\n\r\n";
	assert_string_equal(rewrite_response(s, 1),
	    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
	    "Connection: close\r\n\r\n");
	assert_string_equal(rewrite_response("HTTP/1.0 200 OK\r\n\r\n", 1),
	    "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n");
	assert_string_equal(rewrite_response("HTTP/1.1 204\r\n\r\n", 0),
	    "HTTP/1.1 204\r\n\r\n");

	/* 1xx heads are rewritten the same way. */
	s = "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n"
	    "Keep-Alive: 1\r\n\r\n";
	assert_string_equal(rewrite_response(s, 0),
	    "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n");

	/* Only the head is rewritten: what follows it is not looked at. */
	s = "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n"
	    "Connection: x\r\n\r\n";
	assert_string_equal(rewrite_response(s, 0),
	    "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n");
}

static void
test_rewrite_response_refused(void **state)
{
	static const char *const heads[] = {
		"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX : a\r\n\r\n",
		"HTTP/1.1 200 OK\nConnection: close\n\n",
		"HTTP/1.1 200 OK\r\nX: a\rConnection: close\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: \x01\r\n\r\n",
		"HTTP/1.1 200 OK\r\n: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/2 200\r\n\r\n",
	};
	static const char nul[] = "HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n";
	struct h1_resp resp;
	struct buf	 out = BUF_INIT(4096), small = BUF_INIT(20);
	const char	*s;
	size_t		 i;

	/* Malformed heads never reach the rewrite. */
	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++)
		if (h1_parse_response(heads[i], strlen(heads[i]), MAX,
		    &resp) != H1_ERROR)
			fail_msg("accepted: %s", heads[i]);
	assert_int_equal(h1_parse_response(nul, sizeof(nul) - 1, MAX,
	    &resp), H1_ERROR);

	/* A head that was not accepted is not rewritten. */
	s = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_NEED_MORE);
	assert_int_equal(h1_rewrite_response(s, &resp, 0, &out), -1);
	assert_int_equal(out.len, 0);

	/* The output is bounded like every buffer: too small, refused. */
	s = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n";
	assert_int_equal(h1_parse_response(s, strlen(s), MAX, &resp),
	    H1_DONE);
	assert_int_equal(h1_rewrite_response(s, &resp, 1, &small), -1);
	buf_release(&out);
	buf_release(&small);
}

static void
test_chunked(void **state)
{
	static const char body[] = "5;ext=1\r\nhello\r\n1A\r\n"
	    "abcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: t\r\n\r\n";
	const char	*s = body;
	struct body	 b;
	size_t		 i, n = sizeof(body) - 1;
	char		 both[256];

	/* all at once, with the next request right behind */
	snprintf(both, sizeof(both), "%sGET http://next/ HTTP/1.1\r\n", body);
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_feed(&b, both, strlen(both)), (long)n);
	assert_true(b.done);

	/* one byte at a time */
	body_init(&b, BODY_CHUNKED, 0);
	for (i = 0; i < n; i++) {
		assert_false(b.done);
		assert_int_equal(body_feed(&b, s + i, 1), 1);
	}
	assert_true(b.done);

	/* malformed framing */
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_feed(&b, "zz\r\n", 4), -1);
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_feed(&b, "3\r\nabcX\r\n", 9), -1);
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_feed(&b, "3\nabc\r\n", 7), -1);
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_feed(&b, "ffffffffffffffffff\r\n", 20), -1);
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_feed(&b, "0\r\n folded\r\n\r\n", 15), -1);
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_feed(&b, "0\r\nno colon\r\n\r\n", 16), -1);
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_feed(&b, "0\r\nX :y\r\n\r\n", 12), -1);
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_feed(&b, "0\r\nX:\r\n\r\n", 9), 9);
	assert_true(b.done);

	/* fixed length */
	body_init(&b, BODY_LENGTH, 3);
	assert_int_equal(body_feed(&b, "ab", 2), 2);
	assert_false(b.done);
	assert_int_equal(body_feed(&b, "cdef", 4), 1);
	assert_true(b.done);
	body_init(&b, BODY_LENGTH, 0);
	assert_true(b.done);
	body_init(&b, BODY_NONE, 0);
	assert_true(b.done);
	assert_int_equal(body_feed(&b, "x", 1), 0);
}

/* Decodes body (a chunked body) with body_next, max payload bytes a call
 * and step input bytes at a time; returns the payload. */
static const char *
decode(const char *body, size_t step, size_t max)
{
	static char	 out[256];
	struct body	 b;
	size_t		 n = strlen(body), i = 0, o = 0, off, len, have = 0;
	long		 k;

	body_init(&b, BODY_CHUNKED, 0);
	while (!b.done) {
		if (have == 0) {
			assert_true(i < n);
			have = n - i < step ? n - i : step;
		}
		k = body_next(&b, body + i, have, max, &off, &len);
		if (k < 0)
			return NULL;
		assert_true(len <= max && off + len <= (size_t)k);
		memcpy(out + o, body + i + off, len);
		o += len;
		i += (size_t)k;
		have -= (size_t)k;
	}
	out[o] = '\0';
	return out;
}

static void
test_chunked_decode(void **state)
{
	static const char body[] = "5;ext=1\r\nhello\r\n1A\r\n"
	    "abcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: t\r\n\r\n";
	struct body	 b;
	size_t		 step, max, off, len;

	for (step = 1; step < sizeof(body); step += 3)
		for (max = 1; max < 40; max += 7)
			assert_string_equal(decode(body, step, max),
			    "helloabcdefghijklmnopqrstuvwxyz");
	/* What strtoll would have taken as a size. */
	assert_null(decode("0x5\r\nhello\r\n0\r\n\r\n", 64, 64));
	assert_null(decode(" 5\r\nhello\r\n0\r\n\r\n", 64, 64));
	assert_null(decode("+5\r\nhello\r\n0\r\n\r\n", 64, 64));
	assert_null(decode("-5\r\nhello\r\n0\r\n\r\n", 64, 64));
	assert_null(decode("5junk\r\nhello\r\n0\r\n\r\n", 64, 64));
	assert_null(decode("5\r\nhelloX\r\n0\r\n\r\n", 64, 64));

	/* Payload that may be read raw: only inside a chunk's data. */
	body_init(&b, BODY_CHUNKED, 0);
	assert_int_equal(body_raw(&b), 0);
	assert_int_equal(body_next(&b, "10\r\n", 4, 64, &off, &len), 4);
	assert_int_equal(len, 0);
	assert_int_equal(body_raw(&b), 16);
	body_init(&b, BODY_LENGTH, 7);
	assert_int_equal(body_raw(&b), 7);
	assert_int_equal(body_next(&b, "abcdefghij", 10, 4, &off, &len), 4);
	assert_int_equal(off, 0);
	assert_int_equal(len, 4);
	assert_int_equal(body_raw(&b), 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_connect_pipelined),
		cmocka_unit_test(test_absolute_form),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_rewrite),
		cmocka_unit_test(test_response),
		cmocka_unit_test(test_rewrite_response),
		cmocka_unit_test(test_rewrite_response_refused),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_chunked_decode),
		cmocka_unit_test(test_response_reasons),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
