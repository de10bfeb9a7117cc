/*
 * Unit tests for common/sha256.c and common/link.c: the hash and HMAC
 * against published vectors, and every way a link can be refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "link.h"
#include "sha256.h"

static void
hex(const unsigned char *d, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void
test_sha256_vectors(void **state)
{
	static const struct { const char *in, *out; } v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	unsigned char	 d[SHA256_LEN];
	char		 h[65];
	struct sha256	 s;
	size_t		 i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sha256_init(&s);
		sha256_update(&s, v[i].in, strlen(v[i].in));
		sha256_final(&s, d);
		hex(d, sizeof(d), h);
		assert_string_equal(h, v[i].out);
	}
	/* A million 'a's, fed in uneven pieces across block boundaries. */
	{
		char	 a[1000];
		size_t	 fed = 0, step = 1;

		memset(a, 'a', sizeof(a));
		sha256_init(&s);
		while (fed < 1000000) {
			size_t n = step % 997 + 1;

			if (n > 1000000 - fed)
				n = 1000000 - fed;
			sha256_update(&s, a, n);
			fed += n;
			step += 7;
		}
		sha256_final(&s, d);
		hex(d, sizeof(d), h);
		assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67"
		    "f1809a48a497200e046d39ccc7112cd0");
	}
}

static void
test_hmac_rfc4231(void **state)
{
	unsigned char	 key[131], d[SHA256_LEN];
	char		 h[65];

	memset(key, 0x0b, 20);
	hmac_sha256(key, 20, "Hi There", 8, d);
	hex(d, sizeof(d), h);
	assert_string_equal(h, "b0344c61d8db38535ca8afceaf0bf12b"
	    "881dc200c9833da726e9376c2e32cff7");
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
	hex(d, sizeof(d), h);
	assert_string_equal(h, "5bdcc146bf60754e6a042426089575c7"
	    "5a003f089d2739839dec58b964ec3843");
	/* Test case 6: a key longer than the block is hashed first. */
	memset(key, 0xaa, sizeof(key));
	hmac_sha256(key, sizeof(key), "Test Using Larger Than Block-Size Key "
	    "- Hash Key First", 54, d);
	hex(d, sizeof(d), h);
	assert_string_equal(h, "60e431591ee0b67f0d8a26aacbf5b77f"
	    "8e0bc6213728c5140546040f0ee37f54");
}

static void
test_url_escape(void **state)
{
	struct buf	 b = BUF_INIT(256);

	assert_int_equal(url_escape("a b/ü%?", 1, &b), 0);
	assert_string_equal(buf_str(&b), "a%20b/%C3%BC%25%3F");
	buf_release(&b);
}

static struct link_keys	 master;

static int
setup_master(void **state)
{
	memset(&master, 0, sizeof(master));
	memset(master.master, 0x42, sizeof(master.master));
	master.have_master = 1;
	return 0;
}

static void
mint(const struct link_keys *k, enum link_purpose p, const char *user,
    time_t exp, const char *path, struct buf *out)
{
	struct link l;

	memset(&l, 0, sizeof(l));
	l.purpose = p;
	snprintf(l.user, sizeof(l.user), "%s", user);
	l.expires = exp;
	snprintf(l.path, sizeof(l.path), "%s", path);
	buf_reset(out);
	assert_int_equal(link_mint(k, &l, out), 0);
}

static void
test_link_roundtrip_and_refusals(void **state)
{
	struct buf	 t = BUF_INIT(16384);
	struct link	 l;
	struct link_keys other, alice;
	char		 khex[LINK_KEY_HEX + 1], err[256];
	time_t		 now = 1800000000;
	size_t		 dot;

	mint(&master, LINK_DOWNLOAD, "alice", now + 3600, "out/r.xlsx", &t);
	assert_int_equal(link_verify(&master, t.data, t.len, now, 86400, &l),
	    LINK_OK);
	assert_int_equal(l.purpose, LINK_DOWNLOAD);
	assert_string_equal(l.user, "alice");
	assert_string_equal(l.path, "out/r.xlsx");

	/* Expired, and too long-lived for this checker. */
	assert_int_equal(link_verify(&master, t.data, t.len, now + 3600, 86400,
	    &l), LINK_EXPIRED);
	assert_int_equal(l.expires, now + 3600);
	assert_int_equal(link_verify(&master, t.data, t.len, now, 600, &l),
	    LINK_TOO_LONG);

	/* Every flipped character of the signature is caught. */
	dot = (size_t)(strchr(t.data, '.') - t.data);
	{
		size_t i;

		for (i = dot + 1; i < t.len; i++) {
			char c = t.data[i];

			t.data[i] = c == 'A' ? 'B' : 'A';
			assert_int_not_equal(link_verify(&master, t.data, t.len,
			    now, 86400, &l), LINK_OK);
			t.data[i] = c;
		}
	}
	/* Truncated anywhere. */
	assert_int_equal(link_verify(&master, t.data, dot, now, 86400, &l),
	    LINK_MALFORMED);
	assert_int_not_equal(link_verify(&master, t.data, t.len - 1, now,
	    86400, &l), LINK_OK);
	assert_int_equal(link_verify(&master, "", 0, now, 86400, &l),
	    LINK_MALFORMED);

	/* Another master key: forged.  No fields are given out then. */
	other = master;
	other.master[0] ^= 1;
	assert_int_equal(link_verify(&other, t.data, t.len, now, 86400, &l),
	    LINK_FORGED);
	assert_string_equal(l.user, "");

	/* A sandbox holds alice's key only: it signs and checks alice's... */
	assert_int_equal(link_user_key_hex(&master, "alice", khex), 0);
	assert_int_equal(link_keys_set_user(&alice, "alice", khex, err,
	    sizeof(err)), 0);
	assert_int_equal(link_verify(&alice, t.data, t.len, now, 86400, &l),
	    LINK_OK);
	/* ...and cannot sign bob's, nor pass alice's key off as bob's. */
	{
		struct link bl;

		memset(&bl, 0, sizeof(bl));
		bl.purpose = LINK_UPLOAD;
		snprintf(bl.user, sizeof(bl.user), "bob");
		bl.expires = now + 60;
		buf_reset(&t);
		assert_int_equal(link_mint(&alice, &bl, &t), -1);
		snprintf(alice.user, sizeof(alice.user), "bob");
		buf_reset(&t);
		assert_int_equal(link_mint(&alice, &bl, &t), 0);
		assert_int_equal(link_verify(&master, t.data, t.len, now, 86400,
		    &l), LINK_FORGED);
	}
	/* Purpose and path are bound: an upload link has no path. */
	mint(&master, LINK_UPLOAD, "alice", now + 60, "", &t);
	assert_int_equal(link_verify(&master, t.data, t.len, now, 86400, &l),
	    LINK_OK);
	assert_int_equal(l.purpose, LINK_UPLOAD);
	buf_release(&t);
}

static void
test_key_file(void **state)
{
	char		 dir[] = "/tmp/viv-linkkey-XXXXXX", path[256], err[512];
	struct link_keys a, b;
	struct stat	 st;
	FILE		*f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/link.key", dir);
	assert_int_equal(link_keys_load(&a, path, err, sizeof(err)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* Made once: the second start reads the same key. */
	assert_int_equal(link_keys_load(&b, path, err, sizeof(err)), 0);
	assert_memory_equal(a.master, b.master, SHA256_LEN);
	/* Readable by others: refused with the fix in words. */
	chmod(path, 0644);
	assert_int_equal(link_keys_load(&b, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "chmod 600"));
	/* Not a key. */
	f = fopen(path, "w");
	fputs("not hex\n", f);
	fclose(f);
	chmod(path, 0600);
	assert_int_equal(link_keys_load(&b, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "does not hold a key"));
	unlink(path);
	/* A symlink is not followed. */
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(link_keys_load(&b, path, err, sizeof(err)), -1);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_hmac_rfc4231),
		cmocka_unit_test(test_url_escape),
		cmocka_unit_test_setup(test_link_roundtrip_and_refusals,
		    setup_master),
		cmocka_unit_test(test_key_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
