/* test_access.c — role rules of the map writer's socket, and which rows each role may write. */
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "services/map-writer/access.h"
#include "services/map-writer/requests.h"

#define XDS KMESH__IPC__ROLE__ROLE_XDS
#define CNI KMESH__IPC__ROLE__ROLE_CNI
#define ADMIN KMESH__IPC__ROLE__ROLE_ADMIN
#define IPSEC KMESH__IPC__ROLE__ROLE_IPSEC

static void test_rules(void **state)
{
	struct km_access a = { 0 };
	char err[128];

	(void)state;
	assert_int_equal(km_access_add(&a, "xds:uid=1337", err, sizeof(err)), 0);
	assert_int_equal(km_access_add(&a, "admin:gid=42", err, sizeof(err)), 0);
	assert_true(km_access_allowed(&a, XDS, 1337, 5));
	assert_false(km_access_allowed(&a, CNI, 1337, 5));
	assert_true(km_access_allowed(&a, ADMIN, 9, 42));
	assert_false(km_access_allowed(&a, ADMIN, 42, 9)); /* a gid rule does not match a uid */
	assert_true(km_access_allowed(&a, CNI, 0, 0));     /* root takes any role */
	assert_false(km_access_allowed(&a, KMESH__IPC__ROLE__ROLE_UNSPECIFIED, 0, 0));
	assert_int_equal(km_access_add(&a, "ipsec:uid=77", err, sizeof(err)), 0);
	assert_true(km_access_allowed(&a, IPSEC, 77, 77));
	assert_false(km_access_allowed(&a, XDS, 77, 77));
}

/* The IPsec agent writes only IPsec rows and the xDS agent none: a batch mixing them, or one
 * sent by the wrong role, is refused whole. */
static void test_rows_by_role(void **state)
{
	Kmesh__Ipc__TableOp fe = KMESH__IPC__TABLE_OP__INIT, peer = KMESH__IPC__TABLE_OP__INIT;
	Kmesh__Ipc__TableOp *mixed[] = { &fe, &peer }, *only_peer[] = { &peer }, *only_fe[] = { &fe };
	Kmesh__Ipc__TableBatch b = KMESH__IPC__TABLE_BATCH__INIT;
	char err[128];

	(void)state;
	fe.row_case = KMESH__IPC__TABLE_OP__ROW_FRONTEND;
	peer.row_case = KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER;
	b.ops = only_fe;
	b.n_ops = 1;
	assert_true(km_mw_batch_allowed(XDS, &b, err, sizeof(err)));
	assert_false(km_mw_batch_allowed(IPSEC, &b, err, sizeof(err)));
	assert_non_null(strstr(err, "role 'ipsec' may not write these rows"));
	b.ops = only_peer;
	assert_true(km_mw_batch_allowed(IPSEC, &b, err, sizeof(err)));
	assert_false(km_mw_batch_allowed(XDS, &b, err, sizeof(err)));
	assert_non_null(strstr(err, "role 'xds' may not write IPsec rows"));
	b.ops = mixed;
	b.n_ops = 2;
	assert_false(km_mw_batch_allowed(IPSEC, &b, err, sizeof(err)));
	assert_false(km_mw_batch_allowed(XDS, &b, err, sizeof(err)));
	assert_non_null(strstr(err, "op 1"));
}

static void test_bad_rules(void **state)
{
	struct km_access a = { 0 };
	char err[128];

	(void)state;
	assert_int_equal(km_access_add(&a, "xds", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "ROLE:uid=N"));
	assert_int_equal(km_access_add(&a, "root:uid=1", err, sizeof(err)), -1);
	assert_int_equal(km_access_add(&a, "xds:pid=1", err, sizeof(err)), -1);
	assert_int_equal(km_access_add(&a, "xds:uid=", err, sizeof(err)), -1);
	assert_int_equal(km_access_add(&a, "xds:uid=12x", err, sizeof(err)), -1);
	assert_int_equal(km_access_add(&a, "xds:uid=4294967295", err, sizeof(err)), -1);
	assert_int_equal(a.n, 0);
}

/* Names are resolved when the rule is added, as the socket's group is. */
static void test_rules_by_name(void **state)
{
	struct km_access a = { 0 };
	struct passwd *pw = getpwnam("nobody");
	struct group *gr = getgrnam("root");
	char err[128];

	(void)state;
	assert_non_null(pw);
	assert_non_null(gr);
	assert_int_equal(km_access_add(&a, "xds:uid=nobody", err, sizeof(err)), 0);
	assert_int_equal(km_access_add(&a, "admin:gid=root", err, sizeof(err)), 0);
	assert_true(km_access_allowed(&a, XDS, pw->pw_uid, 12345));
	assert_false(km_access_allowed(&a, XDS, pw->pw_uid + 1, 12345));
	assert_true(km_access_allowed(&a, ADMIN, 4242, gr->gr_gid));
	assert_int_equal(km_access_add(&a, "xds:uid=no-such-user-km", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no user named 'no-such-user-km'"));
	assert_int_equal(km_access_add(&a, "xds:gid=no-such-group-km", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no group named"));
	assert_int_equal(a.n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_bad_rules),
		cmocka_unit_test(test_rules_by_name),
		cmocka_unit_test(test_rows_by_role),
	};

	return cmocka_run_group_tests_name("access", tests, NULL, NULL);
}
