/* test_ipsec_plan.c — two nodes, each with its own plan and a simulated kernel (XFRM states and
 * policies, with the kernel's add/update/delete answers), go through a whole key rotation in
 * the order a real cluster can produce it. After every step traffic must flow both ways: the
 * sender's out policy names an SPI, the sender has that state, and the receiver has the same
 * state with the same key (derived on its own) plus in and fwd policies that accept it. At the
 * end the old SPI's states and keys are gone; a peer that leaves takes everything of its own.
 * A peer whose states the kernel refused is tried again, 1 s doubling to a minute, until it
 * is in place or gone. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <linux/xfrm.h>

#include "services/ipsec-agent/plan.h"
#include "shared/addr.h"
#include "shared/log.h"

#define MAX_OBJ 64
#define GRACE 1000

struct kernel {
	struct km_xfrm_state_spec st[MAX_OBJ];
	uint8_t keys[MAX_OBJ][KM_IPSEC_KEY_MAX];
	size_t n_st;
	struct km_xfrm_policy_spec pol[MAX_OBJ];
	size_t n_pol;
	int refuse_states; /* adds answered as a kernel without ESP answers them */
};

static int eq(const struct km_addr *a, const struct km_addr *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* As XFRM: a state is (destination, SPI, mark); the source is not part of it. */
static int same_state(const struct km_xfrm_state_spec *a, const struct km_xfrm_state_spec *b)
{
	return eq(&a->dst, &b->dst) && a->spi == b->spi && a->mark == b->mark &&
	       a->mark_mask == b->mark_mask;
}

static int k_state(void *arg, enum km_xfrm_op op, const struct km_xfrm_state_spec *s)
{
	struct kernel *k = arg;
	size_t i;

	for (i = 0; i < k->n_st && !same_state(&k->st[i], s); i++)
		;
	if (op == KM_XFRM_DELETE) {
		if (i == k->n_st)
			return -ESRCH;
		k->st[i] = k->st[--k->n_st];
		memcpy(k->keys[i], k->keys[k->n_st], KM_IPSEC_KEY_MAX);
		k->st[i].key = k->keys[i];
		return 0;
	}
	if (op == KM_XFRM_ADD && k->refuse_states)
		return -ENOSYS;
	if (op == KM_XFRM_ADD && i < k->n_st)
		return -EEXIST;
	if (op == KM_XFRM_UPDATE && i == k->n_st)
		return -ESRCH;
	if (op == KM_XFRM_UPDATE) { /* as XFRM: an update keeps the key, algorithm and source */
		k->st[i].output_mark = s->output_mark;
		return 0;
	}
	assert_true(i < MAX_OBJ);
	k->st[i] = *s;
	memcpy(k->keys[i], s->key, s->key_len);
	k->st[i].key = k->keys[i];
	if (i == k->n_st)
		k->n_st++;
	return 0;
}

static int same_policy(const struct km_xfrm_policy_spec *a, const struct km_xfrm_policy_spec *b)
{
	return a->dir == b->dir && a->cidr_len == b->cidr_len && a->mark == b->mark &&
	       eq(&a->cidr, &b->cidr);
}

static int k_policy(void *arg, enum km_xfrm_op op, const struct km_xfrm_policy_spec *x)
{
	struct kernel *k = arg;
	size_t i;

	for (i = 0; i < k->n_pol && !same_policy(&k->pol[i], x); i++)
		;
	if (op == KM_XFRM_DELETE) {
		if (i == k->n_pol)
			return -ENOENT;
		k->pol[i] = k->pol[--k->n_pol];
		return 0;
	}
	if (op == KM_XFRM_ADD && i < k->n_pol)
		return -EEXIST;
	assert_true(i < MAX_OBJ);
	k->pol[i] = *x; /* update creates, as the kernel's does */
	if (i == k->n_pol)
		k->n_pol++;
	return 0;
}

/* A dump, as km_xfrm_link_list gives it: the keys of everything. */
static int k_list(void *arg, struct km_ipsec_kernel_view *v)
{
	struct kernel *k = arg;

	v->states = calloc(k->n_st + 1, sizeof(*v->states));
	v->policies = calloc(k->n_pol + 1, sizeof(*v->policies));
	assert_non_null(v->states);
	assert_non_null(v->policies);
	for (size_t i = 0; i < k->n_st; i++) {
		v->states[i] = k->st[i];
		v->states[i].key = NULL;
		v->states[i].aead_name = NULL;
	}
	memcpy(v->policies, k->pol, k->n_pol * sizeof(*k->pol));
	v->n_states = k->n_st;
	v->n_policies = k->n_pol;
	return 0;
}

struct node {
	struct km_ipsec_node spec;
	struct km_ipsec_keyring keys;
	struct kernel kernel;
	struct km_ipsec_plan plan;
	int publish_late; /* its KmeshNodeInfo write is left to the test */
};

static struct node A, B;

static void make_node(struct node *n, const char *name, const char *addr, const char *cidr,
		      const char *boot)
{
	struct km_ipsec_sink sink = { k_state, k_policy, k_list, &n->kernel };

	memset(n, 0, sizeof(*n));
	snprintf(n->spec.name, sizeof(n->spec.name), "%s", name);
	snprintf(n->spec.addrs[0], sizeof(n->spec.addrs[0]), "%s", addr);
	n->spec.n_addrs = 1;
	snprintf(n->spec.boot_id, sizeof(n->spec.boot_id), "%s", boot);
	assert_int_equal(km_addr_parse(cidr, &n->spec.cidrs[0].net), 0);
	n->spec.cidrs[0].len = 24;
	n->spec.n_cidrs = 1;
	km_ipsec_keyring_init(&n->keys);
	km_ipsec_plan_init(&n->plan, &n->spec, &n->keys, &sink, GRACE);
}

/* The Secret's key for an SPI: the same bytes on every node. */
static struct km_ipsec_key secret(uint32_t spi)
{
	struct km_ipsec_key k = { .spi = spi, .key_len = 36, .icv_bits = 128 };

	for (int i = 0; i < 36; i++)
		k.key[i] = (uint8_t)(spi * 31 + i);
	strcpy(k.aead_name, "rfc4106(gcm(aes))");
	return k;
}

static void load(struct node *n, uint32_t spi, uint64_t now)
{
	struct km_ipsec_key k = secret(spi);
	uint32_t dropped;
	char err[128];

	assert_int_equal(km_ipsec_keyring_add(&n->keys, &k, &dropped, err, sizeof(err)), KM_KEYRING_CURRENT);
	assert_int_equal(km_ipsec_plan_key_changed(&n->plan, now), 0);
	assert_int_equal(n->plan.self.spi, spi); /* ingress ready: advertised */
	if (!n->publish_late)
		km_ipsec_plan_published(&n->plan, spi, now); /* its KmeshNodeInfo written at once */
}

/* `to` learns `from`'s KmeshNodeInfo as advertised now. */
static void learn(struct node *to, const struct node *from, uint64_t now)
{
	struct km_ipsec_node spec = from->spec;

	spec.spi = from->plan.self.spi;
	assert_int_equal(km_ipsec_plan_peer(&to->plan, &spec, now), 0);
}

/* The state XFRM picks for a packet: (destination, SPI), and its mark (0: output, unmarked). */
static const struct km_xfrm_state_spec *state_in(const struct kernel *k, const struct km_addr *dst,
						  uint32_t spi, uint32_t mark)
{
	for (size_t i = 0; i < k->n_st; i++)
		if (eq(&k->st[i].dst, dst) && k->st[i].spi == spi &&
		    (mark & k->st[i].mark_mask) == k->st[i].mark)
			return &k->st[i];
	return NULL;
}

/* The id the receiver gave the sender (what its tc program marks the sender's ESP with). */
static uint32_t peer_mark(const struct node *r, const struct node *s)
{
	for (size_t i = 0; i < r->plan.n_peers; i++)
		if (!strcmp(r->plan.peers[i].node.name, s->spec.name))
			return (uint32_t)r->plan.peers[i].id << KM_IPSEC_PEER_SHIFT;
	return 0;
}

/* Can a pod of `s` reach a pod of `r`, encrypted and accepted? Returns the SPI used, or 0. */
static uint32_t flows(const struct node *s, const struct node *r)
{
	const struct km_xfrm_policy_spec *out = NULL;
	const struct km_xfrm_state_spec *tx, *rx;
	int in = 0, fwd = 0;

	for (size_t i = 0; i < s->kernel.n_pol; i++)
		if (s->kernel.pol[i].dir == XFRM_POLICY_OUT && s->kernel.pol[i].mark == 0xe0 &&
		    eq(&s->kernel.pol[i].cidr, &r->spec.cidrs[0].net))
			out = &s->kernel.pol[i];
	if (!out || !out->tmpl_spi)
		return 0;
	tx = state_in(&s->kernel, &out->tmpl_dst, out->tmpl_spi, 0xe0);
	rx = state_in(&r->kernel, &out->tmpl_dst, out->tmpl_spi, peer_mark(r, s));
	if (!tx || !rx || !eq(&tx->src, &out->tmpl_src) || !eq(&rx->src, &out->tmpl_src) || tx->output_mark || rx->output_mark != 0xd0 || tx->key_len != rx->key_len ||
	    memcmp(tx->key, rx->key, tx->key_len) || strcmp(tx->aead_name, rx->aead_name))
		return 0;
	for (size_t i = 0; i < r->kernel.n_pol; i++) {
		const struct km_xfrm_policy_spec *p = &r->kernel.pol[i];

		if (p->mark != 0xd0 || !eq(&p->cidr, &r->spec.cidrs[0].net) ||
		    (!km_addr_is_unspecified(&p->tmpl_src) && !eq(&p->tmpl_src, &rx->src)) ||
		    (p->tmpl_spi && p->tmpl_spi != rx->spi))
			continue;
		in |= p->dir == XFRM_POLICY_IN;
		fwd |= p->dir == XFRM_POLICY_FWD;
	}
	return in && fwd ? out->tmpl_spi : 0;
}

static size_t states_with_spi(const struct kernel *k, uint32_t spi)
{
	size_t n = 0;

	for (size_t i = 0; i < k->n_st; i++)
		n += k->st[i].spi == spi;
	return n;
}

/* A and B, each with SPI 1 loaded, advertised and learnt by the other. */
static void two_nodes_with_spi_1(void)
{
	km_log_set_level(KM_LOG_ERROR);
	make_node(&A, "node-a", "10.0.0.1", "10.244.1.0", "aaaaaaaa-1111-2222-3333-444444444444");
	make_node(&B, "node-b", "10.0.0.2", "10.244.2.0", "bbbbbbbb-1111-2222-3333-444444444444");
	load(&A, 1, 0);
	load(&B, 1, 0);
	learn(&A, &B, 0);
	learn(&B, &A, 0);
}

static void test_rotation(void **state)
{
	(void)state;
	two_nodes_with_spi_1();
	assert_int_equal(flows(&A, &B), 1);
	assert_int_equal(flows(&B, &A), 1);

	/* A gets the new Secret first: ingress for SPI 2 before advertising it */
	load(&A, 2, 100);
	assert_int_equal(flows(&A, &B), 1);
	assert_int_equal(flows(&B, &A), 1);
	/* B sees A's SPI 2 but has no such key yet: keeps sending with 1, which A still accepts */
	learn(&B, &A, 200);
	assert_int_equal(flows(&B, &A), 1);
	assert_int_equal(flows(&A, &B), 1);
	/* B gets the Secret: ingress for 2, then it switches its egress to A to 2 at once */
	load(&B, 2, 300);
	assert_int_equal(flows(&B, &A), 2);
	assert_int_equal(flows(&A, &B), 1); /* A has not seen B's advert yet */
	learn(&A, &B, 400);
	assert_int_equal(flows(&A, &B), 2);
	assert_int_equal(flows(&B, &A), 2);
	/* within the grace period the old ingress states stay (a peer that has not switched yet, or
	 * a late packet, still decrypts). It runs from when the peer advertised our SPI or newer:
	 * for B since its own key change (300), for A since it learnt B's advert (400). */
	km_ipsec_plan_tick(&A.plan, 300 + GRACE - 1);
	km_ipsec_plan_tick(&B.plan, 300 + GRACE - 1);
	assert_int_equal(states_with_spi(&A.kernel, 1), 1);
	assert_int_equal(states_with_spi(&B.kernel, 1), 1);
	assert_non_null(km_ipsec_keyring_get(&A.keys, 1));
	km_ipsec_plan_tick(&A.plan, 300 + GRACE);
	km_ipsec_plan_tick(&B.plan, 300 + GRACE);
	assert_int_equal(states_with_spi(&A.kernel, 1), 1); /* A's grace has not run out yet */
	assert_int_equal(states_with_spi(&B.kernel, 1), 0); /* B's ingress 1 is gone ... */
	assert_int_equal(states_with_spi(&B.kernel, 2), 2); /* ... its ingress and egress 2 stay */
	/* after it, SPI 1 is gone everywhere, keys included; traffic still flows */
	km_ipsec_plan_tick(&A.plan, 400 + GRACE);
	km_ipsec_plan_tick(&B.plan, 400 + GRACE);
	assert_int_equal(states_with_spi(&A.kernel, 1), 0);
	assert_int_equal(states_with_spi(&B.kernel, 1), 0);
	assert_null(km_ipsec_keyring_get(&A.keys, 1));
	assert_null(km_ipsec_keyring_get(&B.keys, 1));
	assert_int_equal(flows(&A, &B), 2);
	assert_int_equal(flows(&B, &A), 2);
	assert_int_equal(A.plan.errors + B.plan.errors, 0);

	/* a third node whose SPI A does not know: ingress from it, no egress to it yet */
	{
		struct node C;

		make_node(&C, "node-c", "10.0.0.3", "10.244.3.0", "cccccccc-1111-2222-3333-444444444444");
		load(&C, 5, 500);
		learn(&A, &C, 500);
		learn(&C, &A, 500);
		assert_int_equal(flows(&A, &C), 0);
		assert_int_equal(flows(&C, &A), 0); /* C lacks A's key 2 as well */
		/* one in/fwd pair serves every peer: B's traffic is still accepted */
		assert_int_equal(flows(&B, &A), 2);
		km_ipsec_plan_free(&C.plan);
	}

	/* B leaves: everything of it goes from A, the local in/fwd policies stay */
	km_ipsec_plan_peer_gone(&A.plan, "node-b");
	{
		struct km_addr b;

		km_addr_parse("10.0.0.2", &b);
		for (size_t i = 0; i < A.kernel.n_st; i++)
			assert_false(eq(&A.kernel.st[i].src, &b) ||
				     eq(&A.kernel.st[i].dst, &b));
		for (size_t i = 0; i < A.kernel.n_pol; i++)
			assert_false(eq(&A.kernel.pol[i].cidr, &B.spec.cidrs[0].net));
	}
	km_ipsec_plan_uninstall(&A.plan);
	assert_int_equal(A.kernel.n_st, 0);
	assert_int_equal(A.kernel.n_pol, 0);
	km_ipsec_plan_free(&A.plan);
	km_ipsec_plan_free(&B.plan);
}

/* The grace of an old SPI runs from when our advert is published (written to the API, where
 * the peer sees it and switches), not from when the peer advertises the new SPI: a slow write
 * must not cut off the peer's traffic with the old one. */
static void test_grace_from_publish(void **state)
{
	(void)state;
	two_nodes_with_spi_1();
	A.publish_late = 1;
	load(&A, 2, 100); /* ready to receive 2; its write is slow */
	load(&B, 2, 150);
	learn(&A, &B, 200); /* B advertises 2, but cannot see A's 2 yet: it still sends with 1 */
	km_ipsec_plan_tick(&A.plan, 200 + 10 * GRACE);
	assert_int_equal(states_with_spi(&A.kernel, 1), 1); /* B's ingress 1 stays */
	km_ipsec_plan_published(&A.plan, 2, 20000); /* written: B switches from now on */
	learn(&B, &A, 20000);
	assert_int_equal(flows(&B, &A), 2);
	km_ipsec_plan_tick(&A.plan, 20000 + GRACE - 1);
	assert_true(states_with_spi(&A.kernel, 1) >= 1); /* late packets with 1 still decrypt */
	km_ipsec_plan_tick(&A.plan, 20000 + GRACE);
	km_ipsec_plan_tick(&B.plan, 20000 + GRACE);
	assert_int_equal(states_with_spi(&A.kernel, 1), 0);
	assert_int_equal(flows(&A, &B), 2);
	assert_int_equal(flows(&B, &A), 2);
	km_ipsec_plan_free(&A.plan);
	km_ipsec_plan_free(&B.plan);
}

/* A peer that left while the agent was down: the restarted agent, once it knows its peers,
 * removes that peer's states and policies (Kmesh keeps them until a full flush) and keeps the
 * others'. */
static void test_reconcile(void **state)
{
	struct node C;
	struct km_ipsec_sink sink = { k_state, k_policy, k_list, &A.kernel };
	size_t st_b, pol_b;

	(void)state;
	two_nodes_with_spi_1();
	make_node(&C, "node-c", "10.0.0.3", "10.244.3.0", "cccccccc-1111-2222-3333-444444444444");
	load(&C, 1, 0);
	learn(&A, &C, 0);
	st_b = 2;  /* ingress and egress with B */
	pol_b = 3; /* in, fwd, out to B's CIDR */
	assert_int_equal(A.kernel.n_st, 2 * st_b);
	assert_int_equal(A.kernel.n_pol, pol_b + 1);
	/* A's agent stops (nothing removed) and C leaves meanwhile; a new agent starts */
	km_ipsec_plan_free(&A.plan);
	km_ipsec_plan_init(&A.plan, &A.spec, &A.keys, &sink, GRACE);
	assert_int_equal(km_ipsec_plan_key_changed(&A.plan, 10), 0);
	km_ipsec_plan_published(&A.plan, 1, 10);
	learn(&A, &B, 10); /* its first list: B only */
	assert_int_equal(km_ipsec_plan_reconcile(&A.plan), 2 + 1); /* C's two states, its out policy */
	assert_int_equal(A.kernel.n_st, st_b);
	assert_int_equal(A.kernel.n_pol, pol_b);
	assert_int_equal(flows(&A, &B), 1);
	assert_int_equal(flows(&B, &A), 1);
	assert_int_equal(km_ipsec_plan_reconcile(&A.plan), 0); /* nothing more */
	km_ipsec_plan_free(&A.plan);
	km_ipsec_plan_free(&B.plan);
	km_ipsec_plan_free(&C.plan);
}

/* A state left by an earlier run (or an earlier peer that had the same id) with another key:
 * replaced, not kept (XFRM's update would keep its key). */
static void test_leftover_state(void **state)
{
	struct km_xfrm_state_spec old = { .spi = 1, .aead_name = "rfc4106(gcm(aes))", .key_len = 36,
					  .icv_bits = 128, .output_mark = 0xd0,
					  .mark = 1u << KM_IPSEC_PEER_SHIFT, .mark_mask = KM_IPSEC_PEER_MASK };
	static const uint8_t junk[36] = { 0xee };

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	make_node(&A, "node-a", "10.0.0.1", "10.244.1.0", "aaaaaaaa-1111-2222-3333-444444444444");
	make_node(&B, "node-b", "10.0.0.2", "10.244.2.0", "bbbbbbbb-1111-2222-3333-444444444444");
	km_addr_parse("10.0.0.9", &old.src);
	km_addr_parse("10.0.0.1", &old.dst);
	old.key = junk;
	assert_int_equal(k_state(&A.kernel, KM_XFRM_ADD, &old), 0);
	load(&A, 1, 0);
	load(&B, 1, 0);
	learn(&A, &B, 0);
	learn(&B, &A, 0);
	assert_int_equal(flows(&B, &A), 1);
	assert_int_equal(flows(&A, &B), 1);
	km_ipsec_plan_free(&A.plan);
	km_ipsec_plan_free(&B.plan);
}

static void test_bad_peer(void **state)
{
	struct km_ipsec_node bad;

	(void)state;
	two_nodes_with_spi_1();
	memset(&bad, 0, sizeof(bad));
	strcpy(bad.name, "node-x");
	strcpy(bad.addrs[0], "10.0.0.9");
	bad.n_addrs = 1;
	strcpy(bad.boot_id, "too-short"); /* Kmesh panics on this */
	bad.spi = 1;
	assert_int_equal(km_ipsec_plan_peer(&A.plan, &bad, 0), -1);
	assert_non_null(strstr(A.plan.last_error, "shorter than 36"));
	/* no address of this node's families */
	strcpy(bad.name, "node-y");
	strcpy(bad.addrs[0], "fd00::9");
	strcpy(bad.boot_id, "yyyyyyyy-1111-2222-3333-444444444444");
	assert_int_equal(km_ipsec_plan_peer(&A.plan, &bad, 0), -1);
	assert_non_null(strstr(A.plan.last_error, "node-y has no address"));
	/* claims this node's address, or a pod CIDR inside another peer's */
	strcpy(bad.name, "node-z");
	strcpy(bad.addrs[0], "10.0.0.1");
	assert_int_equal(km_ipsec_plan_peer(&A.plan, &bad, 0), -1);
	assert_non_null(strstr(A.plan.last_error, "claims an address or pod CIDR of node-a"));
	strcpy(bad.addrs[0], "10.0.0.9");
	km_addr_parse("10.244.2.128", &bad.cidrs[0].net);
	bad.cidrs[0].len = 25;
	bad.n_cidrs = 1;
	assert_int_equal(km_ipsec_plan_peer(&A.plan, &bad, 0), -1);
	assert_non_null(strstr(A.plan.last_error, "of node-b"));
	/* none of them was taken, and none holds back the next key */
	assert_int_equal(A.plan.n_peers, 1);
	load(&A, 2, 10);
	assert_int_equal(flows(&B, &A), 1);
	km_ipsec_plan_free(&A.plan);
	km_ipsec_plan_free(&B.plan);
}

/* A peer whose states the kernel refused: tried again 1 s later, doubling to a minute; in place
 * once the kernel takes them, and then no more tries; a new refusal starts from 1 s again; a
 * peer gone is not tried again. */
static void test_retry(void **state)
{
	static const uint32_t waits[] = { 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000 };
	const struct km_ipsec_peer *p;
	struct km_ipsec_node b;
	struct km_ipsec_key k2 = secret(2);
	uint32_t dropped;
	uint64_t now = 100, retries;
	char err[128];

	(void)state;
	km_log_set_level(KM_LOG_ERROR);
	make_node(&A, "node-a", "10.0.0.1", "10.244.1.0", "aaaaaaaa-1111-2222-3333-444444444444");
	make_node(&B, "node-b", "10.0.0.2", "10.244.2.0", "bbbbbbbb-1111-2222-3333-444444444444");
	load(&A, 1, 0);
	load(&B, 1, 0);
	A.kernel.refuse_states = 1;
	b = B.spec;
	b.spi = 1;
	assert_int_equal(km_ipsec_plan_peer(&A.plan, &b, now), -1);
	p = km_ipsec_plan_find(&A.plan, "node-b");
	assert_non_null(p);
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		assert_int_equal(p->retry_ms, waits[i]);
		assert_int_equal(km_ipsec_plan_retry(&A.plan, now + waits[i] - 1), 0); /* not yet */
		now += waits[i];
		assert_int_equal(km_ipsec_plan_retry(&A.plan, now), 1);
		assert_int_equal(p->retries, i + 1);
		assert_int_equal(km_ipsec_plan_pending(&A.plan), 1);
	}
	assert_int_equal(A.plan.retries, 8);
	assert_int_equal(A.kernel.n_st, 0);

	/* the kernel takes them now: in place at the next try, traffic flows, no more tries */
	A.kernel.refuse_states = 0;
	now += p->retry_ms;
	assert_int_equal(km_ipsec_plan_retry(&A.plan, now), 1);
	assert_int_equal(p->retry_ms, 0);
	assert_int_equal(km_ipsec_plan_pending(&A.plan), 0);
	learn(&B, &A, now);
	assert_int_equal(flows(&A, &B), 1);
	assert_int_equal(flows(&B, &A), 1);
	assert_int_equal(km_ipsec_plan_retry(&A.plan, now + 3600000), 0);

	/* refused again (a new key's ingress state): from 1 s again */
	A.kernel.refuse_states = 1;
	assert_int_equal(km_ipsec_keyring_add(&A.keys, &k2, &dropped, err, sizeof(err)),
			 KM_KEYRING_CURRENT);
	assert_int_equal(km_ipsec_plan_key_changed(&A.plan, now), -1);
	assert_int_equal(p->retry_ms, 1000);
	assert_int_equal(km_ipsec_plan_retry(&A.plan, now + 1000), 1);
	assert_int_equal(p->retry_ms, 2000);

	/* gone: not tried again */
	retries = A.plan.retries;
	km_ipsec_plan_peer_gone(&A.plan, "node-b");
	assert_int_equal(km_ipsec_plan_pending(&A.plan), 0);
	assert_int_equal(km_ipsec_plan_retry(&A.plan, now + 3600000), 0);
	assert_int_equal(A.plan.retries, retries);
	km_ipsec_plan_free(&A.plan);
	km_ipsec_plan_free(&B.plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_grace_from_publish),
		cmocka_unit_test(test_reconcile),
		cmocka_unit_test(test_bad_peer),
		cmocka_unit_test(test_leftover_state),
		cmocka_unit_test(test_retry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
