/*
 * Unit tests for supervisor/egress.c: the egress proxy's container spec
 * (its walls: read-only root, no capabilities, limits, no restart policy,
 * its own host ids), this host's address list it is given, and the user
 * labels file its log lines name users from.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../../supervisor/egress.c"

#define S(x)	((char *)(uintptr_t)(x))

static struct conf	 cf;

static int
setup(void **state)
{
	(void)state;
	memset(&cf, 0, sizeof(cf));
	cf.state_dir = S("/var/lib/vivarium");
	cf.image = S("localhost/vivarium-sandbox:test");
	cf.egress_container = S("vivarium-egress");
	cf.egress_network = S("vivarium-egress");
	cf.egress_bridge = S("vivegress0");
	cf.egress_port = 3128;
	cf.egress_manage = 1;
	cf.uid_base = DEF_UID_BASE;
	return 0;
}

static const char *
str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void
test_spec_walls(void **state)
{
	json_t	*s = egress_container_spec(&cf, 1), *env, *m;

	(void)state;
	assert_non_null(s);
	assert_string_equal(str(s, "name"), "vivarium-egress");
	assert_string_equal(str(s, "image"), "localhost/vivarium-sandbox:test");
	assert_string_equal(str(s, "user"), "1000:1000");
	assert_true(json_is_true(json_object_get(s, "read_only_filesystem")));
	assert_true(json_is_true(json_object_get(s, "no_new_privileges")));
	assert_string_equal(json_string_value(json_array_get(
	    json_object_get(s, "cap_drop"), 0)), "ALL");
	assert_null(json_object_get(s, "restart_policy"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_object_get(s, "resource_limits"), "memory"), "limit")),
	    512LL << 20);
	assert_string_equal(str(json_object_get(s, "labels"),
	    "io.vivarium.role"), "egress");
	assert_non_null(json_object_get(json_object_get(s, "Networks"),
	    "vivarium-egress"));
	env = json_object_get(s, "env");
	assert_string_equal(str(env, "VIVARIUM_EGRESS_LISTEN"), "0.0.0.0:3128");
	assert_string_equal(str(env, "VIVARIUM_EGRESS_HOST_ADDRESSES"),
	    "/run/vivarium-host/host-addresses");
	/* Beside it in the mounted directory: whose sandbox each address is. */
	assert_string_equal(str(env, "VIVARIUM_EGRESS_USER_LABELS"),
	    "/run/vivarium-host/user-labels");
	assert_null(json_object_get(env, "VIVARIUM_EGRESS_CONFIG"));
	m = json_array_get(json_object_get(s, "mounts"), 0);
	assert_string_equal(str(m, "source"), "/var/lib/vivarium/egress");
	assert_string_equal(str(m, "destination"), "/run/vivarium-host");
	assert_string_equal(json_string_value(json_array_get(
	    json_object_get(m, "options"), 0)), "ro");
	/* Slot 0 of uid_base: ids no sandbox has. */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
	    json_object_get(json_object_get(s, "idmappings"), "UIDMap"), 0),
	    "host_id")), DEF_UID_BASE);
	assert_string_equal(str(json_object_get(s, "ipcns"), "nsmode"), "none");
	json_decref(s);
}

static void
test_spec_options(void **state)
{
	json_t	*s;

	(void)state;
	/* Rootless, or uid_base 0: no user namespace of its own. */
	s = egress_container_spec(&cf, 0);
	assert_null(json_object_get(s, "idmappings"));
	json_decref(s);
	cf.uid_base = 0;
	s = egress_container_spec(&cf, 1);
	assert_null(json_object_get(s, "idmappings"));
	json_decref(s);
	/* A config file: mounted read-only where the proxy reads it. */
	cf.egress_config = S("/etc/vivarium/egress.yaml");
	cf.egress_image = S("localhost/other:1");
	cf.egress_port = 8128;
	s = egress_container_spec(&cf, 1);
	assert_string_equal(str(s, "image"), "localhost/other:1");
	assert_string_equal(str(json_object_get(s, "env"),
	    "VIVARIUM_EGRESS_CONFIG"), "/etc/vivarium/egress.yaml");
	assert_string_equal(str(json_object_get(s, "env"),
	    "VIVARIUM_EGRESS_LISTEN"), "0.0.0.0:8128");
	assert_string_equal(str(json_array_get(json_object_get(s, "mounts"), 1),
	    "source"), "/etc/vivarium/egress.yaml");
	json_decref(s);
}

static void
test_host_list(void **state)
{
	struct buf	 b = BUF_INIT(1u << 20);
	struct berr	 e;

	(void)state;
	cf.egress_host_extra = S("203.0.113.7, 2001:db8::/64,198.51.100.0/24");
	assert_int_equal(egress_host_list(&cf, &b, &e), 0);
	assert_non_null(strstr(buf_str(&b), "\n127.0.0.1\n"));
	assert_non_null(strstr(buf_str(&b), "\n203.0.113.7\n"));
	assert_non_null(strstr(buf_str(&b), "\n2001:db8::/64\n"));
	assert_non_null(strstr(buf_str(&b), "\n198.51.100.0/24\n"));
	assert_int_equal(b.data[0], '#');
	buf_release(&b);
}

#define ID	"665f0c2a9d3e4b1c8f7a6e5d"

static void
label_is(const char *name, const char *want)
{
	char	 out[LABEL_NAME_MAX + USER_ID_MAX + 8];

	egress_label(name, ID, out, sizeof(out));
	assert_string_equal(out, want);
}

static void
test_label(void **state)
{
	char	 big[200], want[200];

	(void)state;
	label_is("alice@example.org", "alice@example.org/" ID);
	label_is(NULL, ID);
	label_is("", ID);
	label_is("Zoë Müller", "Zoë_Müller/" ID);
	label_is("a \"quoted\" \\ 'name'\x1b[1m\x7f", "a_quoted__name[1m/" ID);
	label_is("\"\"", ID);
	label_is("rtl\xe2\x80\xae" "x\xff", "rtlx/" ID);
	/* At most LABEL_NAME_MAX bytes of the name, whole characters. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memset(want, 'x', LABEL_NAME_MAX);
	snprintf(want + LABEL_NAME_MAX, sizeof(want) - LABEL_NAME_MAX, "/%s",
	    ID);
	label_is(big, want);
	/* An é across the limit goes whole. */
	memcpy(big + LABEL_NAME_MAX - 1, "\xc3\xa9", 2);
	snprintf(want + LABEL_NAME_MAX - 1, sizeof(want) - LABEL_NAME_MAX + 1,
	    "/%s", ID);
	label_is(big, want);
}

/* The labels file of state dir d, as text. */
static const char *
labels_text(const char *d)
{
	static char	 text[1u << 20];
	char		 path[256];
	FILE		*f;
	size_t		 n;

	snprintf(path, sizeof(path), "%s/egress/user-labels", d);
	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static void
test_labels_file(void **state)
{
	struct berr	 e;
	struct stat	 st;
	char		 d[] = "/tmp/vlabels.XXXXXX", path[256];
	const char	*t;
	FILE		*f;
	size_t		 lines;
	int		 i;

	(void)state;
	assert_non_null(mkdtemp(d));
	cf.state_dir = d;
	cf.user_name_header = S("X-User-Name");
	/* Made at start with no line: the proxy finds a file. */
	assert_int_equal(egress_labels_note(&cf, NULL, NULL, &e), 0);
	assert_non_null(t = labels_text(d));
	assert_int_equal(t[0], '#');
	assert_int_equal(strchr(t, '\n')[1], '\0');	/* one line */
	snprintf(path, sizeof(path), "%s/egress/user-labels", d);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* With the recorded name, and without. */
	assert_int_equal(names_record(&cf, "u1", "Alice Example <a@x.org>"), 0);
	assert_int_equal(egress_labels_note(&cf, "u1", "10.89.1.5", &e), 0);
	assert_int_equal(egress_labels_note(&cf, "u2", "fd00:89::7", &e), 0);
	t = labels_text(d);
	assert_non_null(strstr(t, "\n10.89.1.5 Alice_Example_<a@x.org>/u1\n"));
	assert_non_null(strstr(t, "\nfd00:89::7 u2\n"));
	/* A name that comes later is written at the next look. */
	assert_int_equal(names_record(&cf, "u2", "bob"), 0);
	assert_int_equal(egress_labels_note(&cf, NULL, NULL, &e), 0);
	assert_non_null(strstr(labels_text(d), "\nfd00:89::7 bob/u2\n"));
	/* A new address replaces the user's line; an address another user
	 * now has takes the line from the one who had it. */
	assert_int_equal(egress_labels_note(&cf, "u1", "10.89.1.9", &e), 0);
	assert_int_equal(egress_labels_note(&cf, "u3", "fd00:89::7", &e), 0);
	t = labels_text(d);
	assert_null(strstr(t, "10.89.1.5"));
	assert_non_null(strstr(t, "\n10.89.1.9 Alice_Example_<a@x.org>/u1\n"));
	assert_null(strstr(t, "/u2"));
	assert_non_null(strstr(t, "\nfd00:89::7 u3\n"));
	/* Forgotten (remove-user). */
	assert_int_equal(egress_labels_note(&cf, "u3", NULL, &e), 0);
	assert_null(strstr(labels_text(d), "u3"));
	/* Not an address: refused, the file left as it was. */
	assert_int_equal(egress_labels_note(&cf, "u4", "10.89.1.5 x", &e), -1);
	assert_null(strstr(labels_text(d), "u4"));
	/* Lines from elsewhere that are not "ADDRESS LABEL/ID" go. */
	assert_non_null(f = fopen(path, "a"));
	fputs("nonsense\n10.89.1.6 no/Valid_Id\n300.1.1.1 u5\n"
	    "10.89.1.7 someone/u6", f);
	fclose(f);
	assert_int_equal(egress_labels_note(&cf, NULL, NULL, &e), 0);
	t = labels_text(d);
	assert_null(strstr(t, "nonsense"));
	assert_null(strstr(t, "Valid_Id"));
	assert_null(strstr(t, "u5"));
	assert_non_null(strstr(t, "\n10.89.1.7 u6\n"));
	assert_non_null(strstr(t, "10.89.1.9 Alice_Example_<a@x.org>/u1\n"));
	/* One address twice (the proxy would take neither), one user twice,
	 * an address spelt otherwise than inet_ntop does: the later line
	 * stays, in inet_ntop's spelling. */
	assert_non_null(f = fopen(path, "a"));
	fputs("10.89.2.6 x/u7\n10.89.2.6 y/u8\n10.89.2.7 u8\nfd00:0::1 u9\n",
	    f);
	fclose(f);
	assert_int_equal(egress_labels_note(&cf, NULL, NULL, &e), 0);
	t = labels_text(d);
	assert_null(strstr(t, "u7"));
	assert_null(strstr(t, "10.89.2.6"));
	assert_non_null(strstr(t, "\n10.89.2.7 u8\n"));
	assert_non_null(strstr(t, "\nfd00::1 u9\n"));
	assert_int_equal(egress_labels_note(&cf, "u9", "fd00:0:0::2", &e), 0);
	assert_non_null(strstr(labels_text(d), "\nfd00::2 u9\n"));
	/* Bounded: past LABELS_MAX the oldest lines go (a file of as many
	 * as it holds, written here, and two more users). */
	assert_non_null(f = fopen(path, "w"));
	for (i = 0; i < LABELS_MAX; i++)
		fprintf(f, "10.%d.%d.1 b%d\n", i / 256, i % 256, i);
	fclose(f);
	assert_int_equal(egress_labels_note(&cf, "u1", "10.89.1.9", &e), 0);
	assert_int_equal(egress_labels_note(&cf, "b4097", "10.16.1.1", &e), 0);
	t = labels_text(d);
	assert_null(strstr(t, " b0\n"));
	assert_null(strstr(t, " b1\n"));
	assert_non_null(strstr(t, "\n10.0.2.1 b2\n"));
	assert_non_null(strstr(t, "\n10.89.1.9 Alice_Example_<a@x.org>/u1\n"));
	assert_non_null(strstr(t, "\n10.16.1.1 b4097\n"));
	for (i = 0, lines = 0; t[i] != '\0'; i++)
		lines += t[i] == '\n';
	assert_int_equal(lines, LABELS_MAX + 1);	/* and the comment */
	cf.state_dir = S("/var/lib/vivarium");
	snprintf(path, sizeof(path), "rm -rf '%s'", d);
	assert_int_equal(system(path), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_spec_walls, setup),
		cmocka_unit_test_setup(test_spec_options, setup),
		cmocka_unit_test_setup(test_host_list, setup),
		cmocka_unit_test_setup(test_label, setup),
		cmocka_unit_test_setup(test_labels_file, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
