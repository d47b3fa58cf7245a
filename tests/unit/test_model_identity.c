/* test_model_identity.c — which workload's identity each address carries (km_authz_ident rows),
 * decided by the model from its one address index (model_index.c): the newest holder that is an
 * identity here; when it goes, the next newest's identity is written again, not the row lost;
 * host-network and other networks' workloads never take a row; an identity or address change
 * rewrites exactly the rows it touches; a replay writes one row per address; the same index
 * answers telemetry's lookups; and a randomized run of workloads sharing a few addresses, held
 * to a reference of that rule after every change. None of it before the first policy, which
 * writes every address's row ahead of its own rows (and they stay once written). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/model/model.h"
#include "tests/unit/model_builders.h"
#include "shared/addr.h"

struct fx {
	struct km_oplist l;
	struct km_model m;
	struct km_authz az;
};

/* A mesh-wide ALLOW policy of one rule that always holds. */
static void put_policy(struct fx *f, const char *name)
{
	Kmesh__Security__Authorization p = KMESH__SECURITY__AUTHORIZATION__INIT;
	Kmesh__Security__Rule r = KMESH__SECURITY__RULE__INIT, *rules[] = { &r };

	p.name = (char *)name;
	p.namespace_ = "istio-system";
	p.scope = KMESH__SECURITY__SCOPE__GLOBAL;
	p.n_rules = 1;
	p.rules = rules;
	km_authz_put_policy(&f->az, name, &p);
	km_model_flush(&f->m);
}

static int fx_setup_bare(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	km_oplist_init(&f->l);
	km_model_init(&f->m, &f->l, NULL);
	km_authz_init(&f->az, &f->l, "net-a");
	km_model_set_authz(&f->m, &f->az);
	*state = f;
	return 0;
}

/* As once a policy exists: identity rows are written. */
static int fx_setup(void **state)
{
	struct fx *f;

	fx_setup_bare(state);
	f = *state;
	put_policy(f, "istio-system/any");
	km_oplist_clear(&f->l);
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	km_model_free(&f->m);
	km_authz_free(&f->az);
	km_oplist_free(&f->l);
	free(f);
	return 0;
}

/* A workload of namespace "prod" in network net (NULL: the default ""), account sa. */
static void put(struct fx *f, const char *uid, const char *ip, const char *sa, const char *net,
		int host)
{
	struct km_workload_res *w = wl(uid, ip, KM_WORKLOAD_HEALTHY, 0);

	w->who->namespace = strdup("prod");
	w->who->service_account = strdup(sa);
	w->who->network = net ? strdup(net) : NULL;
	w->host_network = (uint8_t)host;
	km_model_upsert_workload(&f->m, w);
	km_model_flush(&f->m);
}

/* The identity rows among the ops since the last call, as "+ip=uid" / "-ip", in order; the
 * ops are cleared. */
static void rows(struct fx *f, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < f->l.n; i++) {
		const struct km_op *o = &f->l.ops[i];
		char a[KM_ADDR_STRLEN], ubuf[KM_UID_BUF];
		const char *uid;

		if (o->table != KM_OP_AUTHZ_IDENT)
			continue;
		km_addr_format(&o->ident.addr, a);
		uid = o->del ? "" : km_model_name_of(&f->m, o->ident.workload_id, ubuf);
		used += (size_t)snprintf(out + used, len - used, "%s%s%s%s%s", used ? " " : "",
					 o->del ? "-" : "+", a, o->del ? "" : "=", uid ? uid : "?");
		assert_true(used < len);
	}
	km_oplist_clear(&f->l);
}

#define EXPECT_ROWS(f, want)                                                                       \
	do {                                                                                       \
		char got_[512];                                                                    \
		rows(f, got_, sizeof(got_));                                                       \
		assert_string_equal(got_, want);                                                   \
	} while (0)

static size_t identities(struct fx *f)
{
	struct km_authz_stats st;

	km_authz_stats(&f->az, &st);
	return st.identities;
}

/* Without a policy nothing reads identities: no rows. The first policy writes every address's
 * row (the newest identity holder's) before any row of its own; removing the last policy keeps
 * them, and changes after it are written as before. */
static void test_identities_wait_for_the_first_policy(void **state)
{
	struct fx *f = *state;
	size_t first_policy_row = (size_t)-1, last_ident = 0, n_ident = 0;

	put(f, "a", "10.0.0.1", "web", "net-a", 0);
	put(f, "b", "10.0.0.2", "api", "net-a", 0);
	put(f, "c", "10.0.0.2", "api2", "net-a", 0); /* the newer holder of .2 */
	put(f, "h", "10.0.0.9", "node", "net-a", 1); /* host network: never an identity */
	EXPECT_ROWS(f, "");
	assert_int_equal(identities(f), 0);
	put_policy(f, "istio-system/any");
	for (size_t i = 0; i < f->l.n; i++) {
		if (f->l.ops[i].table == KM_OP_AUTHZ_IDENT) {
			last_ident = i;
			n_ident++;
		} else if (first_policy_row == (size_t)-1) {
			first_policy_row = i;
		}
	}
	assert_int_equal(n_ident, 2);
	assert_true(first_policy_row != (size_t)-1 && last_ident < first_policy_row);
	{
		char got[512];

		rows(f, got, sizeof(got));
		assert_true(!strcmp(got, "+10.0.0.1=a +10.0.0.2=c") || !strcmp(got, "+10.0.0.2=c +10.0.0.1=a"));
	}
	assert_int_equal(identities(f), 2);
	km_authz_remove_policy(&f->az, "istio-system/any");
	km_model_flush(&f->m);
	km_oplist_clear(&f->l);
	put(f, "d", "10.0.0.4", "web", "net-a", 0);
	EXPECT_ROWS(f, "+10.0.0.4=d");
	assert_int_equal(identities(f), 3);
}

/* A pod's address given to a new pod before the old one is gone: the row names the newest;
 * when the newest goes first, the old one's identity is written again (the row was deleted
 * while the old pod still held the address, before the model kept the index). */
static void test_reused_address_falls_back_to_the_older_holder(void **state)
{
	struct fx *f = *state;

	put(f, "old", "10.0.0.1", "web", "net-a", 0);
	EXPECT_ROWS(f, "+10.0.0.1=old");
	put(f, "new", "10.0.0.1", "api", "net-a", 0);
	EXPECT_ROWS(f, "+10.0.0.1=new");
	assert_int_equal(identities(f), 1);
	km_model_remove_workload(&f->m, "new");
	km_model_flush(&f->m);
	EXPECT_ROWS(f, "+10.0.0.1=old");
	assert_int_equal(identities(f), 1);
	km_model_remove_workload(&f->m, "old");
	km_model_flush(&f->m);
	EXPECT_ROWS(f, "-10.0.0.1");
	assert_int_equal(identities(f), 0);

	/* the older one goes first: the newest keeps the row, nothing is written */
	put(f, "old", "10.0.0.1", "web", "net-a", 0);
	put(f, "new", "10.0.0.1", "api", "net-a", 0);
	km_oplist_clear(&f->l);
	km_model_remove_workload(&f->m, "old");
	km_model_flush(&f->m);
	EXPECT_ROWS(f, "");
	/* the newest moves away: its old address is free, its new one written */
	put(f, "new", "10.0.0.2", "api", "net-a", 0);
	EXPECT_ROWS(f, "-10.0.0.1 +10.0.0.2=new");
	assert_int_equal(identities(f), 1);
}

/* Host-network workloads and other networks' never take a row, whichever comes first. */
static void test_only_this_networks_pods_are_identities(void **state)
{
	struct fx *f = *state;

	put(f, "node-agent", "10.0.0.1", "sys", "net-a", 1);
	put(f, "remote", "10.0.0.1", "web", "net-b", 0);
	EXPECT_ROWS(f, "");
	put(f, "pod", "10.0.0.1", "web", "net-a", 0);
	EXPECT_ROWS(f, "+10.0.0.1=pod");
	put(f, "node-agent2", "10.0.0.1", "sys", "net-a", 1); /* newer, but no identity */
	EXPECT_ROWS(f, "");
	assert_ptr_equal(km_model_workload_at(&f->m, &(struct km_addr){ 0 }), NULL);
	{ /* telemetry names the newest holder, identity or not */
		struct km_addr a;

		km_addr_parse("10.0.0.1", &a);
		assert_true(km_workload_uid_is(km_model_workload_at(&f->m, &a), "node-agent2"));
	}
	km_model_remove_workload(&f->m, "node-agent2");
	km_model_remove_workload(&f->m, "remote");
	km_model_flush(&f->m);
	EXPECT_ROWS(f, "");
	/* the pod goes onto the host network: its row goes though it keeps the address */
	put(f, "pod", "10.0.0.1", "web", "net-a", 1);
	EXPECT_ROWS(f, "-10.0.0.1");
	put(f, "pod", "10.0.0.1", "web", "net-a", 0); /* and back */
	EXPECT_ROWS(f, "+10.0.0.1=pod");
	/* another network: same */
	put(f, "pod", "10.0.0.1", "web", "net-b", 0);
	EXPECT_ROWS(f, "-10.0.0.1");
	assert_int_equal(identities(f), 0);
}

/* A change of identity rewrites every address of the workload; an address added or dropped
 * touches that row alone; an unchanged identity under another profile writes nothing. */
static void test_identity_and_address_changes(void **state)
{
	struct fx *f = *state;
	struct km_workload_res *w;

	w = wl("pod", "10.0.0.1", KM_WORKLOAD_HEALTHY, 0);
	w->who->namespace = strdup("prod");
	w->who->service_account = strdup("web");
	w->who->network = strdup("net-a");
	w->addrs = realloc(w->addrs, 2 * sizeof(*w->addrs));
	km_addr_parse("fd00::1", &w->addrs[1]);
	w->n_addrs = 2;
	km_model_upsert_workload(&f->m, w);
	km_model_flush(&f->m);
	EXPECT_ROWS(f, "+10.0.0.1=pod +fd00::1=pod");
	assert_int_equal(identities(f), 2);
	put(f, "pod", "10.0.0.1", "web", "net-a", 0); /* the IPv6 address dropped */
	EXPECT_ROWS(f, "-fd00::1");
	put(f, "pod", "10.0.0.1", "api", "net-a", 0); /* another account */
	EXPECT_ROWS(f, "+10.0.0.1=pod");
	w = wl("pod", "10.0.0.1", KM_WORKLOAD_HEALTHY, 0); /* renamed: another profile */
	w->who->workload_name = strdup("pod-renamed");
	w->who->namespace = strdup("prod");
	w->who->service_account = strdup("api");
	w->who->network = strdup("net-a");
	km_model_upsert_workload(&f->m, w);
	km_model_flush(&f->m);
	EXPECT_ROWS(f, "");
	assert_int_equal(identities(f), 1);
}

/* After a reconnect every address's row is written once, naming its identity's holder. */
static void test_replay_writes_one_row_per_address(void **state)
{
	struct fx *f = *state;
	char got[512];

	put(f, "a", "10.0.0.1", "web", "net-a", 0);
	put(f, "b", "10.0.0.1", "web", "net-a", 0);
	put(f, "c", "10.0.0.2", "web", "net-a", 0);
	put(f, "h", "10.0.0.3", "sys", "net-a", 1);
	km_oplist_clear(&f->l);
	km_model_replay(&f->m);
	rows(f, got, sizeof(got));
	/* in the index's order: both rows, each once */
	assert_true(!strcmp(got, "+10.0.0.1=b +10.0.0.2=c") || !strcmp(got, "+10.0.0.2=c +10.0.0.1=b"));
	assert_int_equal(identities(f), 2);
}

/* A service's VIP names it for telemetry until it goes. */
static void test_vips_name_their_service(void **state)
{
	struct fx *f = *state;
	struct km_addr a;

	km_addr_parse("10.96.0.1", &a);
	km_model_upsert_service(&f->m, svc("demo/web", "10.96.0.1", 80, 8080));
	assert_string_equal(km_model_service_at(&f->m, &a)->name, "demo/web");
	km_model_upsert_service(&f->m, svc("demo/web", "10.96.0.2", 80, 8080)); /* another VIP */
	assert_null(km_model_service_at(&f->m, &a));
	km_addr_parse("10.96.0.2", &a);
	assert_string_equal(km_model_service_at(&f->m, &a)->name, "demo/web");
	km_model_remove_service(&f->m, "demo/web");
	assert_null(km_model_service_at(&f->m, &a));
	km_model_flush(&f->m);
}

/* ---- randomized: a few addresses shared by many workloads, against a reference ---------- */

#define R_WL 12
#define R_ADDRS 6

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

struct r_wl {
	int live;
	unsigned addrs;     /* bit i: holds address i */
	int sa, net, host;  /* account 0..2, network 0 (net-a, this node's) or 1, host network */
	uint64_t taken;     /* when it last took its addresses (a put that changed it) */
};

struct r_row {
	uint32_t workload_id, sa_id; /* workload_id 0: no row */
};

static void r_addr(int i, struct km_addr *a)
{
	char ip[32];

	snprintf(ip, sizeof(ip), "10.1.0.%d", i + 1);
	km_addr_parse(ip, a);
}

static void r_apply(struct fx *f, struct r_row *table)
{
	for (size_t i = 0; i < f->l.n; i++) {
		const struct km_op *o = &f->l.ops[i];
		struct km_addr a;
		int k;

		if (o->table != KM_OP_AUTHZ_IDENT)
			continue;
		for (k = 0; k < R_ADDRS; k++) {
			r_addr(k, &a);
			if (!memcmp(&a, &o->ident.addr, sizeof(a)))
				break;
		}
		assert_true(k < R_ADDRS); /* only addresses workloads hold */
		if (o->del) {
			assert_int_not_equal(table[k].workload_id, 0); /* a row deleted twice */
			table[k] = (struct r_row){ 0, 0 };
		} else {
			table[k] = (struct r_row){ o->ident.workload_id, o->ident.sa_id };
		}
	}
	km_oplist_clear(&f->l);
}

static void r_check(struct fx *f, const struct r_wl *w, const struct r_row *table, int step)
{
	uint32_t sa_id_of[3] = { 0, 0, 0 };
	size_t rows = 0;

	for (int k = 0; k < R_ADDRS; k++) {
		int owner = -1;
		char uid[16];

		for (int i = 0; i < R_WL; i++)
			if (w[i].live && (w[i].addrs & (1u << k)) && !w[i].net && !w[i].host &&
			    (owner < 0 || w[i].taken > w[owner].taken))
				owner = i;
		if (owner < 0) {
			if (table[k].workload_id)
				fail_msg("step %d: address %d has a row (workload %u), no identity holds it",
					 step, k, table[k].workload_id);
			continue;
		}
		rows++;
		snprintf(uid, sizeof(uid), "r%d", owner);
		if (table[k].workload_id != km_model_id_of(&f->m, uid))
			fail_msg("step %d: address %d carries workload %u, want %s (%u)", step, k,
				 table[k].workload_id, uid, km_model_id_of(&f->m, uid));
		/* the same account, the same id; another, another (a stale row fails here) */
		if (!sa_id_of[w[owner].sa])
			sa_id_of[w[owner].sa] = table[k].sa_id;
		assert_int_equal(table[k].sa_id, sa_id_of[w[owner].sa]);
	}
	for (int x = 0; x < 3; x++)
		for (int y = x + 1; y < 3; y++)
			assert_true(!sa_id_of[x] || sa_id_of[x] != sa_id_of[y]);
	assert_int_equal(identities(f), rows);
}

static void test_random_shared_addresses_against_reference(void **state)
{
	static const char *const sas[] = { "web", "api", "db" };
	struct fx *f = *state;
	struct r_wl w[R_WL];
	struct r_row table[R_ADDRS];
	uint64_t now = 0;

	memset(w, 0, sizeof(w));
	memset(table, 0, sizeof(table));
	rng_state = 0x9e3779b97f4a7c15ull;
	for (int step = 0; step < 4000; step++) {
		int i = (int)rnd(R_WL);
		char uid[16];

		snprintf(uid, sizeof(uid), "r%d", i);
		if (w[i].live && rnd(4) == 0) {
			km_model_remove_workload(&f->m, uid);
			w[i].live = 0;
		} else {
			struct r_wl next = { .live = 1, .addrs = 1u << rnd(R_ADDRS), .sa = (int)rnd(3),
					     .net = rnd(6) == 0, .host = rnd(8) == 0 };
			struct km_workload_res *r = wl(uid, NULL, KM_WORKLOAD_HEALTHY, 0);

			if (rnd(3) == 0)
				next.addrs |= 1u << rnd(R_ADDRS);
			if (rnd(3) == 0 && w[i].live) /* an unchanged version: takes nothing */
				next = w[i];
			free(r->addrs);
			r->addrs = calloc(2, sizeof(*r->addrs));
			for (int k = 0; k < R_ADDRS; k++)
				if (next.addrs & (1u << k))
					r_addr(k, &r->addrs[r->n_addrs++]);
			r->who->namespace = strdup("prod");
			r->who->service_account = strdup(sas[next.sa]);
			r->who->network = strdup(next.net ? "net-b" : "net-a");
			r->host_network = (uint8_t)next.host;
			/* the model takes a changed version's addresses anew (newest holder) */
			if (!w[i].live || w[i].addrs != next.addrs || w[i].sa != next.sa ||
			    w[i].net != next.net || w[i].host != next.host)
				next.taken = ++now;
			else
				next.taken = w[i].taken;
			w[i] = next;
			km_model_upsert_workload(&f->m, r);
		}
		km_model_flush(&f->m);
		r_apply(f, table);
		r_check(f, w, table, step);
	}
	/* a replay rewrites exactly the rows held */
	km_model_replay(&f->m);
	memset(table, 0, sizeof(table));
	r_apply(f, table);
	r_check(f, w, table, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identities_wait_for_the_first_policy, fx_setup_bare, fx_teardown),
		cmocka_unit_test_setup_teardown(test_reused_address_falls_back_to_the_older_holder, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_only_this_networks_pods_are_identities, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_identity_and_address_changes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_replay_writes_one_row_per_address, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_vips_name_their_service, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_random_shared_addresses_against_reference, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
