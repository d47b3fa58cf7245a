/* test_authz_compile.c — the authorization compiler's table operations: identities only for this
 * network's pod workloads, named once per who profile, string matches expanded to known identities and re-expanded when one
 * appears or goes, a replaced policy written beside the old one and switched in by its list's
 * head before the old rows go, the candidate index written with its generation, and the
 * reference evaluator's string and CIDR rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kmesh_maps.h"
#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/authz/authz_eval.h"
#include "services/xds-agent/authz/authz_internal.h"
#include "shared/addr.h"

static struct km_oplist ops;
static struct km_authz az;

/* The workloads put, as the model keeps them: each version stays allocated and unchanged until
 * the next put or remove of its workload (the compiler reads it then as the old version). */
static struct {
	char uid[16];
	struct km_workload_res *res;
	struct km_addr addr;
	struct km_authz_wl h; /* as the model keeps it: in the workload's entry */
	uint32_t id;
} wls[8];

static void drop_wls(void)
{
	for (size_t i = 0; i < sizeof(wls) / sizeof(wls[0]); i++)
		free(wls[i].res);
	memset(wls, 0, sizeof(wls));
}

static int setup(void **state)
{
	(void)state;
	km_oplist_init(&ops);
	km_authz_init(&az, &ops, "net-a");
	/* identity rows as once a policy exists (the switch itself: test_model_identity.c, which
	 * has the model that writes every address's row when it turns on) */
	az.identities_on = 1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	km_authz_free(&az);
	km_oplist_free(&ops);
	drop_wls();
	return 0;
}

static struct km_addr addr_of(const char *text)
{
	struct km_addr a;

	assert_int_equal(km_addr_parse(text, &a), 0);
	return a;
}

static size_t wl_slot(const char *uid)
{
	size_t i;

	for (i = 0; i < sizeof(wls) / sizeof(wls[0]) && wls[i].uid[0]; i++)
		if (strcmp(wls[i].uid, uid) == 0)
			return i;
	assert_true(i < sizeof(wls) / sizeof(wls[0]));
	snprintf(wls[i].uid, sizeof(wls[i].uid), "%s", uid);
	return i;
}

/* Put wls[i]'s new version w, and rewrite its address's identity row as the model does for an
 * address only this workload holds (model_index.c; shared addresses: test_model.c). */
static void put_record(size_t i, struct km_workload_res *w, uint32_t id)
{
	int was = km_authz_is_identity(&wls[i].h);

	wls[i].id = id;
	if (km_authz_put_workload(&az, &wls[i].h, w, id))
		km_authz_write_address(&az, &w->addrs[0], was, &wls[i].h, id);
	assert_false(az.oom);
}

static void put_wl(const char *uid, const char *ns, const char *network, struct km_addr *a,
		   uint32_t id, int host)
{
	size_t i = wl_slot(uid);
	struct km_workload_res *w = calloc(1, sizeof(*w) + sizeof(struct km_wl_who) +
						 sizeof(struct km_wl_where) + sizeof(*a)),
			       *old = wls[i].res;

	assert_non_null(w);
	w->uid_text = wls[i].uid;
	w->who = (struct km_wl_who *)(w + 1);
	w->where = (struct km_wl_where *)(w->who + 1);
	w->who->namespace = (char *)ns;
	w->who->network = (char *)network;
	w->who->service_account = "web";
	w->addrs = (struct km_addr *)(w->where + 1);
	w->addrs[0] = *a;
	w->n_addrs = 1;
	w->host_network = (uint32_t)host;
	put_record(i, w, id);
	wls[i].res = w;
	free(old);
}

static void remove_wl(const char *uid)
{
	size_t i = wl_slot(uid);

	if (km_authz_is_identity(&wls[i].h))
		km_authz_write_address(&az, &wls[i].res->addrs[0], 1, NULL, 0);
	km_authz_remove_workload(&az, &wls[i].h, wls[i].id);
	assert_null(wls[i].h.ident); /* the record left zeroed */
	free(wls[i].res);
	wls[i].res = NULL;
}

/* A policy: ALLOW namespaces [match] on NAMESPACE scope "web". */
static void put_ns_policy(const char *name, int prefix, const char *text)
{
	Kmesh__Security__Authorization p = KMESH__SECURITY__AUTHORIZATION__INIT;
	Kmesh__Security__Rule r = KMESH__SECURITY__RULE__INIT, *rp = &r;
	Kmesh__Security__Clause c = KMESH__SECURITY__CLAUSE__INIT, *cp = &c;
	Kmesh__Security__Match m = KMESH__SECURITY__MATCH__INIT, *mp = &m;
	Kmesh__Security__StringMatch s = KMESH__SECURITY__STRING_MATCH__INIT, *sp = &s;

	s.match_type_case = prefix ? KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_PREFIX
				   : KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_EXACT;
	s.prefix = (char *)text;
	m.n_namespaces = 1;
	m.namespaces = &sp;
	c.n_matches = 1;
	c.matches = &mp;
	r.n_clauses = 1;
	r.clauses = &cp;
	p.name = (char *)name;
	p.namespace_ = "web";
	p.scope = KMESH__SECURITY__SCOPE__NAMESPACE;
	p.n_rules = 1;
	p.rules = &rp;
	km_authz_put_policy(&az, name, &p);
}

static size_t count(enum km_op_table table, int del)
{
	size_t n = 0;

	for (size_t i = 0; i < ops.n; i++)
		n += ops.ops[i].table == table && ops.ops[i].del == del;
	return n;
}

static const struct km_op *find(enum km_op_table table, int del, size_t nth)
{
	for (size_t i = 0; i < ops.n; i++)
		if (ops.ops[i].table == table && ops.ops[i].del == del && nth-- == 0)
			return &ops.ops[i];
	return NULL;
}

static void identities_of_this_network_only(void **state)
{
	struct km_addr a = addr_of("10.0.0.1"), b = addr_of("10.0.0.1"), c = addr_of("10.0.0.3");
	const struct km_op *op;

	(void)state;
	put_wl("w1", "prod", "net-a", &a, 11, 0);
	put_wl("w2", "prod", "net-b", &b, 12, 0); /* same address, another network */
	put_wl("w3", "prod", "net-a", &c, 13, 1); /* host network */
	assert_int_equal(count(KM_OP_AUTHZ_IDENT, 0), 1);
	op = find(KM_OP_AUTHZ_IDENT, 0, 0);
	assert_int_equal(op->ident.workload_id, 11);
	assert_true(op->ident.ns_id && op->ident.sa_id && op->ident.principal_id);
	km_oplist_clear(&ops);
	remove_wl("w1");
	assert_int_equal(count(KM_OP_AUTHZ_IDENT, 1), 1);
}

/* Workloads put with the who profile given (as the model's kept workloads share them). */
static void put_wl_who(const char *uid, struct km_wl_who *who, struct km_addr *a, uint32_t id)
{
	size_t i = wl_slot(uid);
	struct km_workload_res *w = calloc(1, sizeof(*w) + sizeof(struct km_wl_where) + sizeof(*a)),
			       *old = wls[i].res;

	assert_non_null(w);
	w->uid_text = wls[i].uid;
	w->who = who;
	w->where = (struct km_wl_where *)(w + 1);
	w->addrs = (struct km_addr *)(w->where + 1);
	w->addrs[0] = *a;
	w->n_addrs = 1;
	put_record(i, w, id);
	wls[i].res = w;
	free(old);
}

/* An identity is named once per who profile, however many workloads share it; a workload that
 * moves to another profile of the same identity writes nothing; the last one out takes it. */
static void identity_named_once_per_profile(void **state)
{
	struct km_wl_who p1 = { .namespace = "prod", .service_account = "web", .network = "net-a" },
			 p1_again = p1, p2 = p1;
	struct km_addr a[3] = { addr_of("10.0.0.1"), addr_of("10.0.0.2"), addr_of("10.0.0.3") };
	const struct km_op *x, *y;
	uint32_t ns_id, sa_id;

	(void)state;
	p2.service_account = "api";
	put_wl_who("w1", &p1, &a[0], 11);
	put_wl_who("w2", &p1, &a[1], 12);
	put_wl_who("w3", &p1, &a[2], 13);
	assert_int_equal(HASH_COUNT(az.idents), 1);
	assert_int_equal(count(KM_OP_AUTHZ_IDENT, 0), 3);
	x = find(KM_OP_AUTHZ_IDENT, 0, 0);
	y = find(KM_OP_AUTHZ_IDENT, 0, 2);
	assert_true(x->ident.ns_id && x->ident.sa_id && x->ident.principal_id);
	assert_int_equal(x->ident.ns_id, y->ident.ns_id);
	assert_int_equal(x->ident.sa_id, y->ident.sa_id);
	assert_int_equal(x->ident.principal_id, y->ident.principal_id);
	ns_id = x->ident.ns_id;
	sa_id = x->ident.sa_id;
	km_oplist_clear(&ops);

	put_wl_who("w2", &p1_again, &a[1], 12); /* another profile, the same identity */
	assert_int_equal(ops.n, 0);
	assert_int_equal(HASH_COUNT(az.idents), 2);
	put_wl_who("w3", &p2, &a[2], 13); /* another account: its row again, another sa id */
	assert_int_equal(count(KM_OP_AUTHZ_IDENT, 0), 1);
	x = find(KM_OP_AUTHZ_IDENT, 0, 0);
	assert_int_equal(x->ident.workload_id, 13);
	assert_true(x->ident.sa_id != sa_id && x->ident.ns_id == ns_id);
	assert_int_equal(HASH_COUNT(az.idents), 3);
	km_oplist_clear(&ops);

	remove_wl("w1"); /* p1 still used by nobody else: gone */
	assert_int_equal(HASH_COUNT(az.idents), 2);
	remove_wl("w2");
	remove_wl("w3");
	assert_int_equal(HASH_COUNT(az.idents), 0);
	assert_int_equal(count(KM_OP_AUTHZ_IDENT, 1), 3);
}

static void expansion_and_reexpansion(void **state)
{
	struct km_addr a = addr_of("10.0.0.1"), b = addr_of("10.0.0.2"), c = addr_of("10.0.0.3");
	uint32_t prod_id, set_id;
	const struct km_op *op;

	(void)state;
	put_wl("w1", "prod", "net-a", &a, 11, 0);
	prod_id = find(KM_OP_AUTHZ_IDENT, 0, 0)->ident.ns_id;
	km_oplist_clear(&ops);

	/* expansion: prefix "pr" holds the known namespace prod */
	put_ns_policy("web/p", 1, "pr");
	km_authz_flush(&az);
	assert_int_equal(count(KM_OP_AUTHZ_SET, 0), 1);
	op = find(KM_OP_AUTHZ_SET, 0, 0);
	assert_int_equal(op->set.value, prod_id);
	set_id = op->set.set_id;
	assert_int_equal(count(KM_OP_AUTHZ_MATCH, 0), 1);
	assert_int_equal(find(KM_OP_AUTHZ_MATCH, 0, 0)->match.sets[KM_AF_NAMESPACES], set_id);
	assert_int_equal(find(KM_OP_AUTHZ_MATCH, 0, 0)->match.flags,
			 KM_AUTHZ_M_END_CLAUSE | KM_AUTHZ_M_END_RULE);
	/* the namespace list: one entry, then its head */
	assert_int_equal(count(KM_OP_AUTHZ_LIST, 0), 2);
	assert_int_equal(ops.ops[ops.n - 1].list.index, KM_AUTHZ_HEAD);
	assert_int_equal(ops.ops[ops.n - 1].list.n_allow, 1);
	km_oplist_clear(&ops);

	/* re-expansion: a workload in prod-eu appears (matches), one in dev (does not) */
	put_wl("w2", "prod-eu", "net-a", &b, 12, 0);
	put_wl("w3", "dev", "net-a", &c, 13, 0);
	assert_int_equal(count(KM_OP_AUTHZ_SET, 0), 1);
	op = find(KM_OP_AUTHZ_SET, 0, 0);
	assert_int_equal(op->set.set_id, set_id);
	assert_int_equal(op->set.value, find(KM_OP_AUTHZ_IDENT, 0, 0)->ident.ns_id);
	km_oplist_clear(&ops);

	/* the last prod-eu workload goes: its namespace leaves the set */
	remove_wl("w2");
	assert_int_equal(count(KM_OP_AUTHZ_SET, 1), 1);
	assert_int_equal(find(KM_OP_AUTHZ_SET, 1, 0)->set.set_id, set_id);
}

static void replaced_policy_switches_generation(void **state)
{
	uint32_t old_id, new_id;
	size_t head_at = 0, first_delete = 0;

	(void)state;
	put_ns_policy("web/p", 0, "prod");
	km_authz_flush(&az);
	old_id = find(KM_OP_AUTHZ_MATCH, 0, 0)->match.policy_id;
	assert_int_equal(ops.ops[ops.n - 1].list.gen, 0);
	km_oplist_clear(&ops);

	put_ns_policy("web/p", 0, "dev");
	km_authz_flush(&az);
	km_oplist_settle(&ops);
	new_id = find(KM_OP_AUTHZ_MATCH, 0, 0)->match.policy_id;
	assert_int_not_equal(old_id, new_id);
	for (size_t i = 0; i < ops.n; i++) {
		if (ops.ops[i].table == KM_OP_AUTHZ_LIST && !ops.ops[i].del &&
		    ops.ops[i].list.index == KM_AUTHZ_HEAD) {
			head_at = i;
			assert_int_equal(ops.ops[i].list.gen, 1);
		}
		if (ops.ops[i].del && !first_delete)
			first_delete = i;
	}
	/* the old generation's entry and the old policy's rows go only after the switch */
	assert_true(head_at > 0 && first_delete > head_at);
	assert_int_equal(find(KM_OP_AUTHZ_MATCH, 1, 0)->match.policy_id, old_id);
	/* same content again: nothing to write */
	km_oplist_clear(&ops);
	put_ns_policy("web/p", 0, "dev");
	km_authz_flush(&az);
	assert_int_equal(ops.n, 0);
	/* removed: the head goes */
	km_authz_remove_policy(&az, "web/p");
	km_authz_flush(&az);
	assert_non_null(find(KM_OP_AUTHZ_LIST, 1, 0));
	assert_int_equal(find(KM_OP_AUTHZ_LIST, 1, 0)->list.index, KM_AUTHZ_HEAD);
}

/* The index row of (field, value) for chunk in the ops, or NULL. */
static const struct km_op *index_row(uint8_t field, uint32_t value, uint8_t chunk, int del)
{
	for (size_t i = 0; i < ops.n; i++) {
		const struct km_op *o = &ops.ops[i];

		if (o->table == KM_OP_AUTHZ_INDEX && o->del == del && o->index.field == field &&
		    o->index.value == value && o->index.chunk == chunk)
			return o;
	}
	return NULL;
}

static size_t position_of(enum km_op_table table, int del, uint32_t index)
{
	for (size_t i = 0; i < ops.n; i++)
		if (ops.ops[i].table == table && ops.ops[i].del == del &&
		    (table != KM_OP_AUTHZ_LIST || ops.ops[i].list.index == index))
			return i;
	return SIZE_MAX;
}

static void index_written_with_its_generation(void **state)
{
	const struct km_op *o, *dflt;
	uint32_t prod_id = 0;
	size_t head;
	char name[16];

	(void)state;
	/* three policies: too few for an index */
	az.index_min = KM_AUTHZ_INDEX_MIN;
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "web/p%d", i);
		put_ns_policy(name, 0, i == 0 ? "prod" : "dev");
	}
	km_authz_flush(&az);
	assert_int_equal(count(KM_OP_AUTHZ_INDEX, 0), 0);
	km_oplist_clear(&ops);

	/* a fourth, by prefix: the list is indexed */
	put_ns_policy("web/p3", 1, "pr");
	km_authz_flush(&az);
	km_oplist_settle(&ops);
	head = position_of(KM_OP_AUTHZ_LIST, 0, KM_AUTHZ_HEAD);
	assert_true(head != SIZE_MAX);
	assert_int_equal(ops.ops[head].list.gen, 1);
	/* the namespace field: the default row holds only the prefix policy (it admits any value,
	 * the others name theirs exactly); "prod"'s row adds its own policy */
	dflt = index_row(KM_AZX_NAMESPACE | KM_AZX_F_DEFAULT, 0, 0, 0);
	assert_non_null(dflt);
	assert_int_equal(__builtin_popcountll(dflt->index.bits[0]), 1);
	for (size_t i = 0; i < ops.n; i++) {
		o = &ops.ops[i];
		if (o->table == KM_OP_AUTHZ_INDEX && !o->del && o->index.field == KM_AZX_NAMESPACE &&
		    o->index.chunk == 0 && __builtin_popcountll(o->index.bits[0]) == 2)
			prod_id = o->index.value;
		/* every row of the new generation comes before the head that switches to it */
		if (o->table == KM_OP_AUTHZ_INDEX && !o->del) {
			assert_int_equal(o->index.gen, 1);
			assert_true(i < head);
		}
	}
	assert_int_not_equal(prod_id, 0);
	o = index_row(KM_AZX_NAMESPACE, prod_id, KM_AZX_SUMMARY, 0);
	assert_non_null(o);
	assert_int_equal(o->index.bits[0], 1); /* chunk 0 only */
	/* the other fields admit every policy (no list names them): their defaults are all set */
	o = index_row(KM_AZX_PORT | KM_AZX_F_DEFAULT, 0, 0, 0);
	assert_non_null(o);
	assert_int_equal(o->index.bits[0], 0xf);
	/* "dev" is one value row (two policies); the default summaries exist for all four fields */
	for (uint8_t f = 0; f < KM_AZX_FIELDS; f++)
		assert_non_null(index_row(f | KM_AZX_F_DEFAULT, 0, KM_AZX_SUMMARY, 0));
	km_oplist_clear(&ops);

	/* removed down to three: the head goes to generation 0 unindexed, and every index row of
	 * generation 1 is deleted after it */
	km_authz_remove_policy(&az, "web/p3");
	km_authz_flush(&az);
	km_oplist_settle(&ops);
	head = position_of(KM_OP_AUTHZ_LIST, 0, KM_AUTHZ_HEAD);
	assert_true(head != SIZE_MAX);
	assert_int_equal(count(KM_OP_AUTHZ_INDEX, 0), 0);
	assert_true(count(KM_OP_AUTHZ_INDEX, 1) > 0);
	for (size_t i = 0; i < ops.n; i++)
		if (ops.ops[i].table == KM_OP_AUTHZ_INDEX) {
			assert_true(i > head);
			assert_int_equal(ops.ops[i].index.gen, 1);
		}
	assert_int_equal(az.index_rows, 0);
	/* a map writer without the table: never an index row */
	km_oplist_clear(&ops);
	az.index_min = 0;
	put_ns_policy("web/p3", 1, "pr");
	km_authz_flush(&az);
	assert_int_equal(count(KM_OP_AUTHZ_INDEX, 0) + count(KM_OP_AUTHZ_INDEX, 1), 0);
}

static void reference_rules(void **state)
{
	Kmesh__Security__StringMatch m = KMESH__SECURITY__STRING_MATCH__INIT;
	Kmesh__Security__Address c = KMESH__SECURITY__ADDRESS__INIT;
	uint8_t net4[4] = { 10, 1, 0, 0 }, net6[16] = { 0 };
	struct km_addr a4 = addr_of("10.1.0.77"), a6 = addr_of("::1");

	(void)state;
	m.match_type_case = KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_SUFFIX;
	m.suffix = "/sa/web";
	assert_true(km_authz_string_matches(&m, "cluster.local/ns/a/sa/web"));
	assert_false(km_authz_string_matches(&m, "sa/web"));
	m.match_type_case = KMESH__SECURITY__STRING_MATCH__MATCH_TYPE_PRESENCE;
	assert_false(km_authz_string_matches(&m, ""));
	assert_true(km_authz_string_matches(&m, "x"));
	c.address.data = net4;
	c.address.len = 4;
	c.length = 25;
	assert_true(km_authz_cidr_contains(&c, &a4));
	c.length = 26; /* 10.1.0.64/26: .64 to .127 */
	net4[3] = 64;
	assert_true(km_authz_cidr_contains(&c, &a4));
	net4[3] = 128;
	c.length = 25;
	assert_false(km_authz_cidr_contains(&c, &a4));
	/* ::/0 holds every IPv6 address and no IPv4 one (as ztunnel) */
	c.address.data = net6;
	c.address.len = 16;
	c.length = 0;
	assert_true(km_authz_cidr_contains(&c, &a6));
	assert_false(km_authz_cidr_contains(&c, &a4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(identities_of_this_network_only, setup, teardown),
		cmocka_unit_test_setup_teardown(identity_named_once_per_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(expansion_and_reexpansion, setup, teardown),
		cmocka_unit_test_setup_teardown(replaced_policy_switches_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(index_written_with_its_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(reference_rules, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
