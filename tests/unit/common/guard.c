/*
 * Unit tests for common/guard.c: which connection makes room, which link
 * transfer is admitted, and when a slow head, body or transfer is cut;
 * and a sendfile download whose file shrank.
 * The decisions are plain functions of the guard's list; no daemon runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../common/guard.c"

#define N	8

static struct http_guard	 g;
static struct guard_conn	 cs[N];

/* n connections, oldest first, all idle, from 10.0.0.(i % 4 + 1). */
static void
setup(unsigned n, const struct http_guard_limits *lim)
{
	unsigned i;

	memset(&g, 0, sizeof(g));
	memset(cs, 0, sizeof(cs));
	g.lim = *lim;
	for (i = 0; i < n; i++) {
		cs[i].g = &g;
		cs[i].fd = 100 + (int)i;
		cs[i].cls = GC_IDLE;
		cs[i].addr[10] = cs[i].addr[11] = 0xff;
		cs[i].addr[12] = 10;
		cs[i].addr[15] = (unsigned char)(i % 4 + 1);
		cs[i].prev = i > 0 ? &cs[i - 1] : NULL;
		cs[i].next = i + 1 < n ? &cs[i + 1] : NULL;
	}
	g.head = &cs[0];
	g.tail = &cs[n - 1];
	g.open = n;
}

static const struct http_guard_limits lim = {
	.soft = 4, .deadline = 10, .xfer_max = 3, .xfer_per_address = 2,
	.xfer_per_link = 2, .min_rate = 1000, .grace = 30,
};

static void
link_of(unsigned char d[16], int which)
{
	memset(d, 0, 16);
	d[0] = (unsigned char)which;
}

static void
test_victim_order(void **state)
{
	setup(6, &lim);
	/* Under the soft limit: nobody. */
	g.open = 4;
	assert_null(guard_victim(&g, &cs[5]));
	g.open = 6;
	/* The oldest idle one first... */
	cs[0].cls = GC_WORKING;
	cs[1].cls = GC_TRANSFER;
	cs[2].cls = GC_RECEIVING;
	assert_ptr_equal(guard_victim(&g, &cs[5]), &cs[3]);
	/* ... never the newcomer, nor one already shut down ... */
	cs[3].evicted = 1;
	cs[4].cls = GC_WORKING;
	assert_ptr_equal(guard_victim(&g, &cs[5]), &cs[2]);
	/* ... then receiving, then a transfer: a valid link earns no
	 * exemption. */
	cs[2].cls = GC_WORKING;
	assert_ptr_equal(guard_victim(&g, &cs[5]), &cs[1]);
	/* Working ones never make room. */
	cs[1].cls = GC_WORKING;
	assert_null(guard_victim(&g, &cs[5]));
}

static void
test_admit_caps(void **state)
{
	unsigned char	 a[16], b[16];
	char		 why[160];

	link_of(a, 1);
	link_of(b, 2);
	setup(8, &lim);
	/* cs[0] and cs[4] share an address (10.0.0.1). */
	assert_int_equal(guard_admit(&g, &cs[0], a, why, sizeof(why)), 0);
	cs[0].cls = GC_TRANSFER;
	memcpy(cs[0].link, a, 16);
	assert_int_equal(guard_admit(&g, &cs[4], b, why, sizeof(why)), 0);
	cs[4].cls = GC_TRANSFER;
	memcpy(cs[4].link, b, 16);
	/* A third from 10.0.0.1: the per-address cap. */
	cs[0].addr[15] = 1;
	memcpy(cs[7].addr, cs[0].addr, 16);
	assert_int_equal(guard_admit(&g, &cs[7], b, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "from your address"));
	/* From elsewhere, through link a again: the per-link cap is 2. */
	assert_int_equal(guard_admit(&g, &cs[1], a, why, sizeof(why)), 0);
	cs[1].cls = GC_TRANSFER;
	memcpy(cs[1].link, a, 16);
	/* Three under way: the total. */
	assert_int_equal(guard_admit(&g, &cs[2], b, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "as many as this server takes"));
	/* One cut and going away no longer counts. */
	cs[4].evicted = 1;
	assert_int_equal(guard_admit(&g, &cs[2], a, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "through this link"));
	assert_int_equal(guard_admit(&g, &cs[2], b, why, sizeof(why)), 0);
	/* A connection's own earlier transfer (keep-alive) is not counted
	 * against it. */
	assert_int_equal(guard_admit(&g, &cs[1], a, why, sizeof(why)), 0);
}

static void
test_head_deadline(void **state)
{
	char why[160];

	setup(1, &lim);
	cs[0].mark = 500;		/* bytes received when it went idle */
	/* Silent: no deadline (MHD's own timeout and eviction see to it). */
	assert_int_equal(guard_check(&g, &cs[0], 100, 1, 500, 500, why,
	    sizeof(why)), 0);
	assert_int_equal(guard_check(&g, &cs[0], 1000, 1, 500, 500, why,
	    sizeof(why)), 0);
	/* A byte comes at 1000: the head must be in by 1010. */
	assert_int_equal(guard_check(&g, &cs[0], 1000, 1, 501, 501, why,
	    sizeof(why)), 0);
	assert_int_equal(guard_check(&g, &cs[0], 1010, 1, 700, 700, why,
	    sizeof(why)), 0);
	assert_int_equal(guard_check(&g, &cs[0], 1011, 1, 800, 800, why,
	    sizeof(why)), 1);
	assert_non_null(strstr(why, "head"));
	/* Without the kernel's counts (a unix socket): no rule. */
	setup(1, &lim);
	assert_int_equal(guard_check(&g, &cs[0], 1000, 0, 0, 0, why,
	    sizeof(why)), 0);
	cs[0].started = 1;
	assert_int_equal(guard_check(&g, &cs[0], 1000, 0, 0, 0, why,
	    sizeof(why)), 0);
}

static void
test_body_deadline(void **state)
{
	char why[160];

	setup(1, &lim);
	cs[0].cls = GC_RECEIVING;
	cs[0].since = 50;
	/* Moving or not, the body must be in within the deadline. */
	assert_int_equal(guard_check(&g, &cs[0], 60, 1, 1 << 20, 1 << 20,
	    why, sizeof(why)), 0);
	assert_int_equal(guard_check(&g, &cs[0], 61, 1, 2 << 20, 2 << 20,
	    why, sizeof(why)), 1);
	assert_non_null(strstr(why, "body"));
	assert_int_equal(guard_check(&g, &cs[0], 61, 0, 0, 0, why,
	    sizeof(why)), 1);
	/* Working: never. */
	cs[0].cls = GC_WORKING;
	assert_int_equal(guard_check(&g, &cs[0], 1e6, 1, 0, 0, why,
	    sizeof(why)), 0);
	/* No deadline configured: never. */
	g.lim.deadline = 0;
	cs[0].cls = GC_RECEIVING;
	assert_int_equal(guard_check(&g, &cs[0], 1e6, 1, 0, 0, why,
	    sizeof(why)), 0);
}

static void
test_rate_floor(void **state)
{
	char why[160];

	setup(1, &lim);
	cs[0].cls = GC_TRANSFER;
	cs[0].mark_at = 0;
	cs[0].mark = 100;
	/* Within the first window nothing is decided, stalled or not. */
	assert_int_equal(guard_check(&g, &cs[0], 29, 1, 0, 100, why,
	    sizeof(why)), 0);
	/* 30 s at >= 1000 bytes/s: kept pace, a new window from there. */
	assert_int_equal(guard_check(&g, &cs[0], 30, 1, 0, 30100, why,
	    sizeof(why)), 0);
	assert_true(cs[0].mark_at == 30);
	assert_int_equal(cs[0].mark, 30100);
	/* Slow but moving, above the floor: never cut. */
	assert_int_equal(guard_check(&g, &cs[0], 61, 1, 0, 30100 + 31100,
	    why, sizeof(why)), 0);
	/* Then it stalls: cut at the end of that window. */
	assert_int_equal(guard_check(&g, &cs[0], 80, 1, 0, 61300, why,
	    sizeof(why)), 0);
	assert_int_equal(guard_check(&g, &cs[0], 91, 1, 0, 61300, why,
	    sizeof(why)), 1);
	assert_non_null(strstr(why, "under the floor of 1000 bytes/s"));
	/* Just under the floor is under it. */
	setup(1, &lim);
	cs[0].cls = GC_TRANSFER;
	assert_int_equal(guard_check(&g, &cs[0], 30, 1, 0, 29999, why,
	    sizeof(why)), 1);
	/* Cut once: not again. */
	cs[0].evicted = 1;
	assert_int_equal(guard_check(&g, &cs[0], 90, 1, 0, 29999, why,
	    sizeof(why)), 0);
	/* No counts from the kernel, or no floor: no rule. */
	setup(1, &lim);
	cs[0].cls = GC_TRANSFER;
	assert_int_equal(guard_check(&g, &cs[0], 300, 0, 0, 0, why,
	    sizeof(why)), 0);
	g.lim.min_rate = 0;
	assert_int_equal(guard_check(&g, &cs[0], 300, 1, 0, 0, why,
	    sizeof(why)), 0);
}

/* The kernel's counts on a real loopback connection; none on a pipe. */
static void
test_tcp_bytes(void **state)
{
	struct sockaddr_in	 sa;
	socklen_t		 sl = sizeof(sa);
	uint64_t		 rx = 0, moved = 0;
	int			 l, c, s, p[2];
	char			 buf[100];

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((l = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	assert_true((c = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_true((s = accept(l, NULL, NULL)) >= 0);
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(write(c, buf, sizeof(buf)), sizeof(buf));
	assert_int_equal(read(s, buf, sizeof(buf)), sizeof(buf));
	assert_int_equal(tcp_bytes(s, &rx, &moved), 0);
	assert_int_equal(rx, 100);
	assert_int_equal(moved, 100);
	assert_int_equal(write(s, buf, 40), 40);
	assert_int_equal(read(c, buf, 40), 40);
	/* Acknowledged by now on loopback, or soon. */
	for (int i = 0; i < 100 && moved < 140; i++) {
		clock_sleep_ms(10);
		assert_int_equal(tcp_bytes(s, &rx, &moved), 0);
	}
	assert_int_equal(moved, 140);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(tcp_bytes(p[0], &rx, &moved), -1);
	assert_int_equal(tcp_bytes(-1, &rx, &moved), -1);
	close(p[0]);
	close(p[1]);
	close(c);
	close(s);
	close(l);
}

/* A download's file, watched: cut once shorter than its answer said. */
static void
test_file_shrank(void **state)
{
	struct guard_conn	 c;
	char			 path[] = "/tmp/viv-guard-XXXXXX";
	int			 fd;

	memset(&c, 0, sizeof(c));
	c.file_fd = -1;
	assert_false(guard_file_shrank(&c));
	assert_true((fd = mkstemp(path)) >= 0);
	unlink(path);
	assert_int_equal(ftruncate(fd, 1000), 0);
	c.file_fd = dup(fd);
	c.file_size = 1000;
	assert_false(guard_file_shrank(&c));
	assert_int_equal(ftruncate(fd, 2000), 0);	/* grew: still sent */
	assert_false(guard_file_shrank(&c));
	assert_int_equal(ftruncate(fd, 0), 0);		/* rewritten */
	assert_true(guard_file_shrank(&c));
	guard_file_drop(&c);
	assert_int_equal(c.file_fd, -1);
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_shrank),
		cmocka_unit_test(test_victim_order),
		cmocka_unit_test(test_admit_caps),
		cmocka_unit_test(test_head_deadline),
		cmocka_unit_test(test_body_deadline),
		cmocka_unit_test(test_rate_floor),
		cmocka_unit_test(test_tcp_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
