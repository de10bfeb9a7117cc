/*
 * Unit tests for supervisor/tarown.c: the tar vivariumctl import passes
 * on is checked as it goes, and every member comes out owned by the
 * sandbox's user with valid checksums.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../../supervisor/tarown.h"

#define UID	1000
#define GID	1001

/* A ustar header for name of size bytes (type '0', 'x', ...). */
static void
header(char *h, const char *name, unsigned long size, char type,
    unsigned int uid)
{
	unsigned long	 sum = 0;
	size_t		 i;

	memset(h, 0, 512);
	snprintf(h, 100, "%s", name);
	snprintf(h + 100, 8, "%07o", 0644);
	snprintf(h + 108, 8, "%07o", uid);
	snprintf(h + 116, 8, "%07o", uid);
	snprintf(h + 124, 12, "%011lo", size & 077777777777ul);
	snprintf(h + 136, 12, "%011o", 0);
	h[156] = type;
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	snprintf(h + 265, 32, "hostuser");
	snprintf(h + 297, 32, "hostgroup");
	memset(h + 148, ' ', 8);
	for (i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06lo", sum);
}

struct tar {
	char	 b[512 * 16];
	size_t	 len;
};

/* Appends a member with its data, padded to blocks. */
static void
add(struct tar *t, const char *name, const char *data, char type)
{
	size_t	 n = strlen(data);

	header(t->b + t->len, name, n, type, 123456);
	t->len += 512;
	memset(t->b + t->len, 0, (n + 511) / 512 * 512);
	memcpy(t->b + t->len, data, n);
	t->len += (n + 511) / 512 * 512;
}

static void
finish(struct tar *t)
{
	memset(t->b + t->len, 0, 1024);
	t->len += 1024;
}

static int
memfd(const char *data, size_t len)
{
	int	 fd = memfd_create("tar", 0);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* Everything tarown_source gives, read with chunk-sized calls. */
static ssize_t
drain(struct tarown *t, char *out, size_t cap, size_t chunk)
{
	size_t	 off = 0;
	ssize_t	 r;

	while ((r = tarown_source(t, out + off, chunk < cap - off ? chunk :
	    cap - off)) > 0)
		off += (size_t)r;
	return r == -1 ? -1 : (ssize_t)off;
}

static unsigned long
octal(const char *f)
{
	return strtoul(f, NULL, 8);
}

static void
assert_checksum(const char *h)
{
	unsigned long	 sum = 0;
	size_t		 i;

	for (i = 0; i < 512; i++)
		sum += (i >= 148 && i < 156) ? ' ' : (unsigned char)h[i];
	assert_int_equal(sum, octal(h + 148));
}

static void
test_owner_rewritten(void **state)
{
	static struct tar	 t;
	static char		 out[sizeof(t.b)];
	struct tarown		 o;
	const char		*pax = "20 uid=123456789\n20 gid=123456789\n";
	int			 fd;

	t.len = 0;
	add(&t, "PaxHeaders/a.csv", pax, 'x');
	add(&t, "a.csv", "x,y\n1,2\n", '0');
	add(&t, "b.txt", "hello", '0');
	finish(&t);
	fd = memfd(t.b, t.len);
	assert_int_equal(tarown_open(&o, fd, UID, GID), 0);
	/* Odd chunk sizes: only whole blocks pass, every header in one piece. */
	assert_int_equal(drain(&o, out, sizeof(out), 512 * 3 + 100),
	    (ssize_t)t.len);
	/* Headers at 0, 1024, 2048: owned by UID:GID, no names, valid sums. */
	assert_int_equal(octal(out + 108), UID);
	assert_int_equal(octal(out + 116), GID);
	assert_int_equal(octal(out + 1024 + 108), UID);
	assert_int_equal(octal(out + 2048 + 116), GID);
	assert_int_equal(out[1024 + 265], '\0');
	assert_int_equal(out[2048 + 297], '\0');
	assert_checksum(out);
	assert_checksum(out + 1024);
	assert_checksum(out + 2048);
	/* PAX ids: zero-padded to the same width, so lengths stay right. */
	assert_memory_equal(out + 512, "20 uid=000001000\n20 gid=000001001\n",
	    strlen(pax));
	/* Data untouched. */
	assert_memory_equal(out + 1536, "x,y\n1,2\n", 8);
	assert_memory_equal(out + 2560, "hello", 5);
	close(fd);
}

static void
test_not_a_tar(void **state)
{
	struct tarown	 o;
	char		 junk[2048];
	int		 fd;

	memset(junk, 'A', sizeof(junk));
	fd = memfd(junk, sizeof(junk));
	assert_int_equal(tarown_open(&o, fd, UID, GID), -1);
	assert_non_null(strstr(o.err, "not a tar"));
	close(fd);
	/* Short, or all zeros (an empty archive is nothing to import). */
	fd = memfd("abc", 3);
	assert_int_equal(tarown_open(&o, fd, UID, GID), -1);
	close(fd);
	memset(junk, 0, sizeof(junk));
	fd = memfd(junk, sizeof(junk));
	assert_int_equal(tarown_open(&o, fd, UID, GID), -1);
	close(fd);
	/* A closed descriptor: the read error is said. */
	assert_int_equal(tarown_open(&o, 9999, UID, GID), -1);
	assert_non_null(strstr(o.err, "reading"));
}

static void
test_cut_off(void **state)
{
	static struct tar	 t;
	static char		 out[sizeof(t.b)];
	struct tarown		 o;
	int			 fd;

	t.len = 0;
	add(&t, "a.csv", "x,y\n1,2\n", '0');
	add(&t, "b.txt", "hello", '0');
	/* No end-of-archive blocks: cut off. */
	fd = memfd(t.b, t.len);
	assert_int_equal(tarown_open(&o, fd, UID, GID), 0);
	assert_int_equal(drain(&o, out, sizeof(out), 4096), -1);
	assert_non_null(strstr(o.err, "ends early"));
	close(fd);
}

static void
test_corrupt_later_header(void **state)
{
	static struct tar	 t;
	static char		 out[sizeof(t.b)];
	struct tarown		 o;
	int			 fd;

	t.len = 0;
	add(&t, "a.csv", "x,y\n1,2\n", '0');
	add(&t, "b.txt", "hello", '0');
	finish(&t);
	t.b[1024 + 10] ^= 1;	/* b.txt's name: its checksum fails */
	fd = memfd(t.b, t.len);
	assert_int_equal(tarown_open(&o, fd, UID, GID), 0);
	assert_int_equal(drain(&o, out, sizeof(out), 8192), -1);
	assert_non_null(strstr(o.err, "corrupt at byte 1024"));
	close(fd);
	/* A member whose size runs past the input: cut off, not passed. */
	t.len = 0;
	add(&t, "a.csv", "x,y\n1,2\n", '0');
	header(t.b, "a.csv", 1ul << 30, '0', 1);
	finish(&t);
	fd = memfd(t.b, t.len);
	assert_int_equal(tarown_open(&o, fd, UID, GID), 0);
	assert_int_equal(drain(&o, out, sizeof(out), 8192), -1);
	assert_non_null(strstr(o.err, "ends early"));
	close(fd);
}

static void
test_tiny_reads_refused(void **state)
{
	static struct tar	 t;
	char			 out[512];
	struct tarown		 o;
	int			 fd;

	t.len = 0;
	add(&t, "a.csv", "1", '0');
	finish(&t);
	fd = memfd(t.b, t.len);
	assert_int_equal(tarown_open(&o, fd, UID, GID), 0);
	assert_int_equal(tarown_source(&o, out, 100), -1);
	assert_non_null(strstr(o.err, "less than one tar block"));
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_rewritten),
		cmocka_unit_test(test_not_a_tar),
		cmocka_unit_test(test_cut_off),
		cmocka_unit_test(test_corrupt_later_header),
		cmocka_unit_test(test_tiny_reads_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
