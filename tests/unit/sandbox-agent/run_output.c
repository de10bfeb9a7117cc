/*
 * Unit tests for the output tails of sandbox-agent/run.c: the tail is kept,
 * UTF-8 sequences are never split, bad bytes become U+FFFD, and the count
 * of characters cut agrees with what was shown, however the bytes arrived.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../sandbox-agent/run.c"

/* Runs bytes through a stream as spawn does, in chunks of `step` bytes. */
/* With head_share, the head is kept too (as run_python does): *head gets
 * the bytes of *out before the cut. */
static void
through_stream_head(const unsigned char *p, size_t n, size_t cap,
    size_t step, size_t limit, int keep_head, char **out, size_t *outlen,
    size_t *head, unsigned long long *cut)
{
	struct spawn_stream s = SPAWN_STREAM_INIT;
	struct utf8_count c;
	size_t		 off, k;

	memset(&c, 0, sizeof(c));
	s.cap = cap;
	s.observe = utf8_count_feed;
	s.observe_arg = &c;
	if (keep_head) {
		c.head_cap = limit / RUN_HEAD_SHARE * 4 + 4;
		assert_non_null(c.head = malloc(c.head_cap));
	}
	for (off = 0; off < n; off += k) {
		k = n - off < step ? n - off : step;
		assert_int_equal(spawn_stream_add(&s, p + off, k), 0);
	}
	assert_int_equal(stream_text(&s, &c, limit, out, outlen, head, cut), 0);
	free(c.head);
	spawn_stream_release(&s);
}

/* The tail alone: a stream with no head kept. */
static void
through_stream(const unsigned char *p, size_t n, size_t cap, size_t step,
    size_t limit, char **out, size_t *outlen, unsigned long long *cut)
{
	size_t	 head;

	through_stream_head(p, n, cap, step, limit, 0, out, outlen, &head, cut);
	assert_int_equal(head, 0);
}

static int
valid_utf8(const char *s, size_t n)
{
	size_t	 i, k;
	int	 ok;

	for (i = 0; i < n; i += k) {
		k = utf8_next((const unsigned char *)s + i, n - i, &ok);
		if (ok != 1)
			return 0;
	}
	return 1;
}

static void
test_ascii_tail(void **state)
{
	const char	*in = "abcdefghij";
	char		*out;
	size_t		 len;
	unsigned long long cut;

	through_stream((const unsigned char *)in, 10, 4 * 4 + 4, 3, 4, &out,
	    &len, &cut);
	assert_string_equal(out, "ghij");
	assert_int_equal(len, 4);
	assert_int_equal(cut, 6);
	free(out);

	/* Under the limit: all of it, nothing cut. */
	through_stream((const unsigned char *)in, 10, 1000, 10, 100, &out,
	    &len, &cut);
	assert_string_equal(out, in);
	assert_int_equal(cut, 0);
	free(out);

	/* Limit 0 keeps nothing and says so. */
	through_stream((const unsigned char *)in, 10, 4, 10, 0, &out, &len,
	    &cut);
	assert_string_equal(out, "");
	assert_int_equal(cut, 10);
	free(out);

	/* Nothing printed. */
	through_stream((const unsigned char *)"", 0, 84, 1, 20, &out, &len,
	    &cut);
	assert_non_null(out);
	assert_string_equal(out, "");
	assert_int_equal(cut, 0);
	free(out);
}

/* A long stream keeps its first quarter and its tail, the cut between. */
static void
test_head_and_tail(void **state)
{
	unsigned char	 in[10000];
	char		*out;
	size_t		 len, head, i;
	unsigned long long cut;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)('a' + i % 26);
	memcpy(in, "SUMMARY\n", 8);
	memcpy(in + sizeof(in) - 4, "END\n", 4);
	through_stream_head(in, sizeof(in), 100 * 4 + 4, 333, 100, 1, &out,
	    &len, &head, &cut);
	assert_int_equal(len, 100);
	assert_int_equal(head, 25);
	assert_int_equal(cut, sizeof(in) - 100);
	assert_memory_equal(out, in, 25);
	assert_memory_equal(out + 25, in + sizeof(in) - 75, 75);
	assert_memory_equal(out, "SUMMARY\n", 8);
	assert_memory_equal(out + len - 4, "END\n", 4);
	free(out);

	/* Under the limit: all of it once, no head apart. */
	through_stream_head(in, 100, 100 * 4 + 4, 7, 100, 1, &out, &len,
	    &head, &cut);
	assert_int_equal(len, 100);
	assert_int_equal(head, 0);
	assert_int_equal(cut, 0);
	assert_memory_equal(out, in, 100);
	free(out);

	/* Multibyte characters: the head ends on a whole character, and
	 * both parts are counted in characters. */
	for (i = 0; i + 2 <= sizeof(in); i += 2)
		memcpy(in + i, "\xc3\xa9", 2);
	through_stream_head(in, sizeof(in), 40 * 4 + 4, 5, 40, 1, &out, &len,
	    &head, &cut);
	assert_true(valid_utf8(out, len));
	assert_int_equal(utf8_chars(out, head), 10);
	assert_int_equal(utf8_chars(out, len), 40);
	assert_int_equal(cut, sizeof(in) / 2 - 40);
	free(out);
}

/* "é€😀" in every alignment against the ring's edge: never split. */
static void
test_multibyte_boundaries(void **state)
{
	static const char *glyphs[] = { "a", "\xc3\xa9", "\xe2\x82\xac",
	    "\xf0\x9f\x98\x80" };
	unsigned char	 in[4000];
	size_t		 n = 0, total = 0, limit, step, len, want_start, i, c;
	unsigned long long cut;
	unsigned int	 seed = 1;
	char		*out;
	size_t		 starts[4000];

	while (n + 4 < sizeof(in)) {
		const char *g = glyphs[rand_r(&seed) % 4];

		starts[total++] = n;
		memcpy(in + n, g, strlen(g));
		n += strlen(g);
	}
	for (limit = 1; limit < 40; limit += 3) {
		for (step = 1; step < 13; step += 5) {
			through_stream(in, n, limit * 4 + 4, step, limit, &out,
			    &len, &cut);
			assert_true(valid_utf8(out, len));
			c = utf8_chars(out, len);
			assert_int_equal(c, limit);
			assert_int_equal(cut, total - limit);
			want_start = starts[total - limit];
			assert_int_equal(len, n - want_start);
			assert_memory_equal(out, in + want_start, len);
			free(out);
		}
	}
	/* The ring holds fewer characters than the limit (all 4-byte ones
	 * but one): the count is still exact. */
	for (i = 0; i < 100; i++)
		memcpy(in + i * 4, glyphs[3], 4);
	through_stream(in, 400, 4 * 10 + 4, 7, 10, &out, &len, &cut);
	assert_int_equal(utf8_chars(out, len), 10);
	assert_int_equal(cut, 90);
	free(out);
}

static void
test_invalid_bytes_replaced(void **state)
{
	static const struct {
		const char	*in;
		const char	*out;
		unsigned	 chars;
	} cases[] = {
		{ "a\xff" "b", "a\xef\xbf\xbd" "b", 3 },
		{ "a\x80" "b", "a\xef\xbf\xbd" "b", 3 },
		/* Overlong: C0 is never a lead, AF is stray. */
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd", 2 },
		/* A surrogate: ED allows only 80-9F, so three pieces. */
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 3 },
		/* A sequence cut short counts once. */
		{ "\xf0\x9f\x98" "a", "\xef\xbf\xbd" "a", 2 },
		/* The stream ends inside a character (killed mid-write). */
		{ "ok\xe2\x82", "ok\xef\xbf\xbd", 3 },
		/* Above U+10FFFF. */
		{ "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		    "\xef\xbf\xbd", 4 },
	};
	size_t		 i, len;
	unsigned long long cut;
	char		*out;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		through_stream((const unsigned char *)cases[i].in,
		    strlen(cases[i].in), 100, 1, 50, &out, &len, &cut);
		assert_string_equal(out, cases[i].out);
		assert_int_equal(utf8_chars(out, len), cases[i].chars);
		assert_int_equal(cut, 0);
		free(out);
	}
}

/* Random bytes: the streaming count and the shown text agree. */
static void
test_random_bytes_counts_agree(void **state)
{
	unsigned char	 in[5000];
	unsigned int	 seed = 99;
	size_t		 i, n, len, limit;
	unsigned long long cut;
	char		*out;
	int		 round;

	for (round = 0; round < 200; round++) {
		n = 1 + (size_t)rand_r(&seed) % sizeof(in);
		for (i = 0; i < n; i++) {
			/* Mostly plausible UTF-8 bytes, some garbage. */
			switch (rand_r(&seed) % 4) {
			case 0: in[i] = (unsigned char)(0x20 + rand_r(&seed) % 90); break;
			case 1: in[i] = (unsigned char)(0x80 + rand_r(&seed) % 64); break;
			case 2: in[i] = (unsigned char)(0xc0 + rand_r(&seed) % 64); break;
			default: in[i] = (unsigned char)rand_r(&seed); break;
			}
		}
		/* Large enough to keep everything: no cut. */
		through_stream(in, n, n + 1, 1 + (size_t)rand_r(&seed) % 50,
		    n, &out, &len, &cut);
		assert_true(valid_utf8(out, len));
		assert_int_equal(cut, 0);
		free(out);
		/* A small limit: shown + cut covers the stream, give or take
		 * the piece of a character the ring cut through. */
		limit = 1 + (size_t)rand_r(&seed) % 30;
		through_stream(in, n, limit * 4 + 4, 1 + (size_t)rand_r(&seed) % 50,
		    limit, &out, &len, &cut);
		assert_true(valid_utf8(out, len));
		assert_true(utf8_chars(out, len) <= limit);
		free(out);
	}
}

static void
test_note_is_bounded(void **state)
{
	struct run_result res;
	char		 big[600];
	size_t		 i;

	run_result_init(&res);
	run_result_note(&res, "First.");
	run_result_note(&res, "Second.");
	assert_string_equal(res.note, "First. Second.");
	/* Three-byte characters that do not fit are dropped whole. */
	for (i = 0; i + 3 < sizeof(big); i += 3)
		memcpy(big + i, "\xe2\x82\xac", 3);
	big[i] = '\0';
	run_result_note(&res, "%s", big);
	assert_true(strlen(res.note) < sizeof(res.note));
	assert_true(valid_utf8(res.note, strlen(res.note)));
	run_result_release(&res);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ascii_tail),
		cmocka_unit_test(test_head_and_tail),
		cmocka_unit_test(test_multibyte_boundaries),
		cmocka_unit_test(test_invalid_bytes_replaced),
		cmocka_unit_test(test_random_bytes_counts_agree),
		cmocka_unit_test(test_note_is_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
