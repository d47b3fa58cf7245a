/* plan.c — see plan.h. */
#include "services/ipsec-agent/plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/xfrm.h>

#include "services/ipsec-agent/pair_key.h"
#include "shared/addr.h"
#include "shared/grow.h"
#include "shared/log.h"

static void fail(struct km_ipsec_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct km_ipsec_plan *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->last_error, sizeof(p->last_error), fmt, ap);
	va_end(ap);
	p->errors++;
	km_warn("ipsec: %s", p->last_error);
}

void km_ipsec_plan_init(struct km_ipsec_plan *p, const struct km_ipsec_node *self,
			struct km_ipsec_keyring *keys, const struct km_ipsec_sink *sink,
			uint64_t grace_ms)
{
	memset(p, 0, sizeof(*p));
	p->self = *self;
	p->self.spi = 0;
	p->keys = keys;
	p->sink = *sink;
	p->grace_ms = grace_ms;
}

void km_ipsec_plan_free(struct km_ipsec_plan *p)
{
	free(p->peers);
	p->peers = NULL;
	p->n_peers = p->cap_peers = 0;
}

static struct km_ipsec_peer *find(struct km_ipsec_plan *p, const char *name)
{
	for (size_t i = 0; i < p->n_peers; i++)
		if (!strcmp(p->peers[i].node.name, name))
			return &p->peers[i];
	return NULL;
}

/* ---- the kernel ------------------------------------------------------------------------------ */

/* Add (replacing a state already there) or delete (absent is fine). A state with the same
 * identity may be left from an earlier run or an earlier peer with the same id; XFRM's update
 * would keep its key and source, so it is deleted and added again. */
static int put_state(struct km_ipsec_plan *p, enum km_xfrm_op op, const struct km_xfrm_state_spec *s)
{
	char a[KM_ADDR_STRLEN], b[KM_ADDR_STRLEN];
	int rc = p->sink.state(p->sink.arg, op, s);

	if (rc == -EEXIST && op == KM_XFRM_ADD &&
	    (rc = p->sink.state(p->sink.arg, KM_XFRM_DELETE, s)) == 0)
		rc = p->sink.state(p->sink.arg, KM_XFRM_ADD, s);
	if (op == KM_XFRM_DELETE && (rc == -ENOENT || rc == -ESRCH))
		rc = 0;
	if (rc)
		fail(p, "state %s -> %s spi %u: %s", km_addr_format(&s->src, a),
		     km_addr_format(&s->dst, b), s->spi, strerror(-rc));
	return rc;
}

static int put_policy(struct km_ipsec_plan *p, enum km_xfrm_op op, const struct km_xfrm_policy_spec *x)
{
	char a[KM_ADDR_STRLEN];
	int rc = p->sink.policy(p->sink.arg, op, x);

	if (op == KM_XFRM_DELETE && rc == -ENOENT)
		rc = 0;
	if (rc)
		fail(p, "policy dir %u to %s/%u: %s", x->dir, km_addr_format(&x->cidr, a), x->cidr_len,
		     strerror(-rc));
	return rc;
}

/* ---- address pairs and keys ------------------------------------------------------------------ */

struct pair {
	const char *local_text, *remote_text;
	struct km_addr local, remote;
};

/* The address pairs (local, remote) of one family, local-major; returns how many (at most max). */
static size_t pairs_of(const struct km_ipsec_node *self, const struct km_ipsec_node *peer,
		       struct pair *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < self->n_addrs; i++)
		for (size_t j = 0; j < peer->n_addrs && n < max; j++) {
			struct pair pr = { self->addrs[i], peer->addrs[j] };

			if (km_addr_parse(pr.local_text, &pr.local) || km_addr_parse(pr.remote_text, &pr.remote) ||
			    km_addr_is_v4(&pr.local) != km_addr_is_v4(&pr.remote))
				continue;
			out[n++] = pr;
		}
	return n;
}

/* The state of one pair and SPI, its key derived (ingress: the peer sends; egress: we do). */
static int state_of(struct km_ipsec_plan *p, const struct km_ipsec_peer *peer, const struct pair *pr,
		    uint32_t spi, int ingress, struct km_xfrm_state_spec *s, uint8_t *key)
{
	const struct km_ipsec_key *base = km_ipsec_keyring_get(p->keys, spi);
	char err[128];

	if (!base) {
		fail(p, "peer %s: no key for SPI %u", peer->node.name, spi);
		return -1;
	}
	if ((ingress ? km_ipsec_pair_key(base, pr->remote_text, pr->local_text, peer->node.boot_id,
					 p->self.boot_id, key, err, sizeof(err))
		     : km_ipsec_pair_key(base, pr->local_text, pr->remote_text, p->self.boot_id,
					 peer->node.boot_id, key, err, sizeof(err))) != 0) {
		fail(p, "peer %s: %s", peer->node.name, err);
		return -1;
	}
	memset(s, 0, sizeof(*s));
	s->src = ingress ? pr->remote : pr->local;
	s->dst = ingress ? pr->local : pr->remote;
	s->spi = spi;
	s->aead_name = base->aead_name;
	s->key = key;
	s->key_len = base->key_len;
	s->icv_bits = base->icv_bits;
	s->output_mark = ingress ? KM_XFRM_MARK_DECRYPTED : 0;
	if (ingress) {
		s->mark = (uint32_t)peer->id << KM_IPSEC_PEER_SHIFT;
		s->mark_mask = KM_IPSEC_PEER_MASK;
	}
	return 0;
}

/* Install (add) or remove (delete) the states of every pair for one SPI and direction. */
static int states(struct km_ipsec_plan *p, const struct km_ipsec_peer *peer, uint32_t spi,
		  int ingress, enum km_xfrm_op op)
{
	struct pair prs[KM_IPSEC_ADDRS_MAX * KM_IPSEC_ADDRS_MAX];
	size_t n = pairs_of(&p->self, &peer->node, prs, sizeof(prs) / sizeof(prs[0]));
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		struct km_xfrm_state_spec s;
		uint8_t key[KM_IPSEC_KEY_MAX];

		if (op == KM_XFRM_DELETE) { /* the key fields are enough */
			memset(&s, 0, sizeof(s));
			s.src = ingress ? prs[i].remote : prs[i].local;
			s.dst = ingress ? prs[i].local : prs[i].remote;
			s.spi = spi;
			if (ingress) {
				s.mark = (uint32_t)peer->id << KM_IPSEC_PEER_SHIFT;
				s.mark_mask = KM_IPSEC_PEER_MASK;
			}
			rc |= put_state(p, op, &s);
			continue;
		}
		if (state_of(p, peer, &prs[i], spi, ingress, &s, key) != 0)
			return -1;
		rc |= put_state(p, op, &s);
		explicit_bzero(key, sizeof(key));
	}
	return rc ? -1 : 0;
}

/* ---- policies ------------------------------------------------------------------------------ */

/* in and fwd to each local pod CIDR: any ESP tunnel with our reqid, from any peer. */
static int local_policies(struct km_ipsec_plan *p, enum km_xfrm_op op)
{
	struct km_addr first;
	int rc = 0;

	if (!p->self.n_addrs || km_addr_parse(p->self.addrs[0], &first) != 0) {
		fail(p, "this node has no valid address to receive ESP on");
		return -1;
	}
	for (size_t i = 0; i < p->self.n_cidrs; i++)
		for (int d = 0; d < 2; d++) {
			struct km_xfrm_policy_spec x = { .dir = d ? XFRM_POLICY_FWD : XFRM_POLICY_IN,
							 .cidr = p->self.cidrs[i].net,
							 .cidr_len = p->self.cidrs[i].len,
							 .mark = KM_XFRM_MARK_DECRYPTED };

			/* any source and destination, in the tunnel's family */
			km_addr_parse(km_addr_is_v4(&first) ? "0.0.0.0" : "::", &x.tmpl_src);
			x.tmpl_dst = x.tmpl_src;
			rc |= put_policy(p, op == KM_XFRM_DELETE ? op : KM_XFRM_UPDATE, &x);
		}
	return rc ? -1 : 0;
}

static int ensure_local(struct km_ipsec_plan *p)
{
	if (p->local_policies)
		return 0;
	if (local_policies(p, KM_XFRM_UPDATE) != 0)
		return -1;
	p->local_policies = 1;
	return 0;
}

/* out to each of the peer's pod CIDRs through the first pair, with spi (0: delete them). */
static int out_policies(struct km_ipsec_plan *p, const struct km_ipsec_peer *peer, uint32_t spi)
{
	struct pair pr;
	int rc = 0;

	if (pairs_of(&p->self, &peer->node, &pr, 1) == 0) {
		fail(p, "peer %s has no address of this node's families", peer->node.name);
		return -1;
	}
	for (size_t i = 0; i < peer->node.n_cidrs; i++) {
		struct km_xfrm_policy_spec x = { .dir = XFRM_POLICY_OUT, .cidr = peer->node.cidrs[i].net,
						 .cidr_len = peer->node.cidrs[i].len,
						 .mark = KM_XFRM_MARK_ENCRYPT, .tmpl_src = pr.local,
						 .tmpl_dst = pr.remote, .tmpl_spi = spi };

		rc |= put_policy(p, spi ? KM_XFRM_UPDATE : KM_XFRM_DELETE, &x);
	}
	return rc ? -1 : 0;
}

/* ---- per peer -------------------------------------------------------------------------------- */

static int accepts(const struct km_ipsec_peer *peer, uint32_t spi)
{
	for (size_t i = 0; i < peer->n_accepted; i++)
		if (peer->accepted[i] == spi)
			return 1;
	return 0;
}

static int ingress_add(struct km_ipsec_plan *p, struct km_ipsec_peer *peer, uint32_t spi)
{
	if (accepts(peer, spi))
		return 0;
	if (peer->n_accepted == KM_IPSEC_HISTORY_MAX) {
		fail(p, "peer %s: more than %d SPIs in use at once", peer->node.name, KM_IPSEC_HISTORY_MAX);
		return -1;
	}
	if (states(p, peer, spi, 1, KM_XFRM_ADD) != 0)
		return -1;
	peer->accepted[peer->n_accepted++] = spi;
	return 0;
}

static void ingress_del(struct km_ipsec_plan *p, struct km_ipsec_peer *peer, size_t i)
{
	states(p, peer, peer->accepted[i], 1, KM_XFRM_DELETE);
	peer->accepted[i] = peer->accepted[--peer->n_accepted];
}

/* Encrypt to the peer with the SPI it advertises, once we have that key: the new state first,
 * then the out policies switch to it, then the old state goes. */
static int egress_set(struct km_ipsec_plan *p, struct km_ipsec_peer *peer)
{
	uint32_t want = peer->node.spi, old = peer->egress_spi;

	if (!want || want == old)
		return 0;
	if (!km_ipsec_keyring_get(p->keys, want)) {
		km_info("ipsec: peer %s advertises SPI %u, which this node has not loaded yet; %s",
			peer->node.name, want,
			old ? "encrypting with the previous SPI meanwhile" : "not encrypting to it yet");
		return 0;
	}
	if (states(p, peer, want, 0, KM_XFRM_ADD) != 0 || out_policies(p, peer, want) != 0) {
		/* nothing half-switched: the new states go, the old egress stays in use */
		states(p, peer, want, 0, KM_XFRM_DELETE);
		if (old)
			out_policies(p, peer, old);
		return -1;
	}
	peer->egress_spi = want;
	if (old)
		states(p, peer, old, 0, KM_XFRM_DELETE);
	return 0;
}

static void caught_up(struct km_ipsec_plan *p, struct km_ipsec_peer *peer, uint64_t now_ms)
{
	/* it advertises exactly our SPI: it holds our key (SPIs are not ordered: a rolled-back key
	 * has a lower one); and it can see ours, so it switches its egress to it */
	if (p->self.spi && peer->node.spi == p->self.spi && p->published_spi == p->self.spi) {
		if (!peer->caught_up_ms)
			peer->caught_up_ms = now_ms ? now_ms : 1;
	} else {
		peer->caught_up_ms = 0;
	}
}

/* Something of the peer was refused (rc != 0): try it again later, 1 s doubling to a minute
 * while it keeps failing; everything in place: no more tries. */
static void schedule(struct km_ipsec_peer *peer, int rc, uint64_t now_ms)
{
	if (!rc) {
		peer->retry_ms = 0;
		peer->retry_at_ms = 0;
		return;
	}
	peer->retry_ms = !peer->retry_ms ? KM_IPSEC_RETRY_MIN_MS
		       : peer->retry_ms >= KM_IPSEC_RETRY_MAX_MS / 2 ? KM_IPSEC_RETRY_MAX_MS
								   : peer->retry_ms * 2;
	peer->retry_at_ms = now_ms + peer->retry_ms;
}

static void remove_peer(struct km_ipsec_plan *p, struct km_ipsec_peer *peer)
{
	if (peer->egress_spi) {
		out_policies(p, peer, 0);
		states(p, peer, peer->egress_spi, 0, KM_XFRM_DELETE);
	}
	while (peer->n_accepted)
		ingress_del(p, peer, 0);
	*peer = p->peers[--p->n_peers];
}

/* The lowest peer id not in use, or 0. */
static uint16_t free_id(const struct km_ipsec_plan *p)
{
	for (uint16_t id = 1; id <= KM_IPSEC_PEER_ID_MAX; id++) {
		size_t i;

		for (i = 0; i < p->n_peers && p->peers[i].id != id; i++)
			;
		if (i == p->n_peers)
			return id;
	}
	return 0;
}

static int same_identity(const struct km_ipsec_node *a, const struct km_ipsec_node *b)
{
	if (a->n_addrs != b->n_addrs || a->n_cidrs != b->n_cidrs || strcmp(a->boot_id, b->boot_id))
		return 0;
	for (size_t i = 0; i < a->n_addrs; i++)
		if (strcmp(a->addrs[i], b->addrs[i]))
			return 0;
	for (size_t i = 0; i < a->n_cidrs; i++)
		if (a->cidrs[i].len != b->cidrs[i].len ||
		    memcmp(&a->cidrs[i].net, &b->cidrs[i].net, sizeof(a->cidrs[i].net)))
			return 0;
	return 1;
}

static int cidr_overlap(const struct km_addr *a, uint8_t alen, const struct km_addr *b, uint8_t blen)
{
	int v4 = km_addr_is_v4(a);
	unsigned bits = (v4 ? 96u : 0u) + (alen < blen ? alen : blen);

	if (v4 != km_addr_is_v4(b))
		return 0;
	for (unsigned i = 0; i < bits; i++)
		if ((a->bytes[i / 8] ^ b->bytes[i / 8]) & (0x80 >> (i % 8)))
			return 0;
	return 1;
}

/* Does n claim an address or pod CIDR of this node or of another peer? (The tables are keyed by
 * them: one node could take over another's traffic.) Returns the other's name, or NULL. */
static const char *clash(const struct km_ipsec_plan *p, const struct km_ipsec_node *n)
{
	for (size_t i = 0; i <= p->n_peers; i++) {
		const struct km_ipsec_node *o = i < p->n_peers ? &p->peers[i].node : &p->self;

		if (o != &p->self && !strcmp(o->name, n->name))
			continue;
		for (size_t a = 0; a < n->n_addrs; a++)
			for (size_t b = 0; b < o->n_addrs; b++) {
				struct km_addr x, y;

				if (!km_addr_parse(n->addrs[a], &x) && !km_addr_parse(o->addrs[b], &y) &&
				    !memcmp(&x, &y, sizeof(x)))
					return o->name;
			}
		for (size_t a = 0; a < n->n_cidrs; a++)
			for (size_t b = 0; b < o->n_cidrs; b++)
				if (cidr_overlap(&n->cidrs[a].net, n->cidrs[a].len, &o->cidrs[b].net,
						 o->cidrs[b].len))
					return o->name;
	}
	return NULL;
}

int km_ipsec_plan_peer(struct km_ipsec_plan *p, const struct km_ipsec_node *n, uint64_t now_ms)
{
	struct km_ipsec_peer *peer;
	const char *other;
	int rc = 0;

	if (!strcmp(n->name, p->self.name))
		return 0;
	if ((other = clash(p, n)) != NULL) {
		fail(p, "peer %s claims an address or pod CIDR of %s: ignored", n->name, other);
		return -1;
	}
	{
		/* refused whole, so it can never hold back a key's advert */
		struct pair pr;

		if (strlen(n->boot_id) < KM_IPSEC_BOOT_ID_LEN) {
			fail(p, "peer %s: boot id '%.40s' is shorter than %d characters: ignored", n->name,
			     n->boot_id, KM_IPSEC_BOOT_ID_LEN);
			return -1;
		}
		if (pairs_of(&p->self, n, &pr, 1) == 0) {
			fail(p, "peer %s has no address of this node's families: ignored", n->name);
			return -1;
		}
	}
	peer = find(p, n->name);
	if (peer && !same_identity(&peer->node, n)) {
		km_info("ipsec: peer %s changed addresses, boot id or pod CIDRs: its rules are rebuilt",
			n->name);
		remove_peer(p, peer);
		peer = NULL;
	}
	if (!peer) {
		uint16_t id = free_id(p);

		if (!id) {
			fail(p, "more than %d peers: %s left out", KM_IPSEC_PEER_ID_MAX, n->name);
			return -1;
		}
		if (km_grow((void **)&p->peers, &p->cap_peers, p->n_peers + 1, sizeof(*p->peers)) != 0) {
			fail(p, "out of memory adding peer %s", n->name);
			return -1;
		}
		peer = &p->peers[p->n_peers++];
		memset(peer, 0, sizeof(*peer));
		peer->node = *n;
		peer->id = id;
	}
	if (ensure_local(p) != 0) /* installed once; tried again while refused */
		rc = -1;
	/* what it may encrypt with: the SPI we advertise, and the key about to be (idempotent,
	 * so a peer refused before is retried on its next update) */
	if (p->self.spi && ingress_add(p, peer, p->self.spi) != 0)
		rc = -1;
	if (p->keys->current && p->keys->current != p->self.spi &&
	    ingress_add(p, peer, p->keys->current) != 0)
		rc = -1;
	peer->node.spi = n->spi;
	if (egress_set(p, peer) != 0)
		rc = -1;
	caught_up(p, peer, now_ms);
	schedule(peer, rc, now_ms);
	return rc;
}

size_t km_ipsec_plan_retry(struct km_ipsec_plan *p, uint64_t now_ms)
{
	size_t tried = 0;

	for (size_t i = 0; i < p->n_peers; i++) {
		struct km_ipsec_peer *peer = &p->peers[i];
		struct km_ipsec_node n;

		if (!peer->retry_ms || now_ms < peer->retry_at_ms)
			continue;
		n = peer->node; /* the same spec again: the peer keeps its place and its id */
		peer->retries++;
		p->retries++;
		tried++;
		if (km_ipsec_plan_peer(p, &n, now_ms) == 0)
			km_info("ipsec: peer %s: every rule in place, at try %llu", n.name,
				(unsigned long long)p->peers[i].retries);
		else
			km_warn("ipsec: peer %s: still not every rule in place (%s); trying again in "
				"%u s", n.name, p->last_error, p->peers[i].retry_ms / 1000);
	}
	return tried;
}

size_t km_ipsec_plan_pending(const struct km_ipsec_plan *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_peers; i++)
		n += p->peers[i].retry_ms != 0;
	return n;
}

void km_ipsec_plan_published(struct km_ipsec_plan *p, uint32_t spi, uint64_t now_ms)
{
	p->published_spi = spi;
	for (size_t i = 0; i < p->n_peers; i++)
		caught_up(p, &p->peers[i], now_ms);
}

/* ---- reconcile --------------------------------------------------------------------------------- */

static int same_addr(const struct km_addr *a, const struct km_addr *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static int wanted_state(const struct km_ipsec_plan *p, const struct km_xfrm_state_spec *s)
{
	for (size_t i = 0; i < p->n_peers; i++) {
		const struct km_ipsec_peer *peer = &p->peers[i];
		struct pair prs[KM_IPSEC_ADDRS_MAX * KM_IPSEC_ADDRS_MAX];
		size_t n = pairs_of(&p->self, &peer->node, prs, sizeof(prs) / sizeof(prs[0]));

		for (size_t j = 0; j < n; j++) {
			if (same_addr(&s->src, &prs[j].remote) && same_addr(&s->dst, &prs[j].local) &&
			    accepts(peer, s->spi) &&
			    s->mark == (uint32_t)peer->id << KM_IPSEC_PEER_SHIFT &&
			    s->mark_mask == KM_IPSEC_PEER_MASK)
				return 1; /* ingress */
			if (same_addr(&s->src, &prs[j].local) && same_addr(&s->dst, &prs[j].remote) &&
			    peer->egress_spi && s->spi == peer->egress_spi && !s->mark)
				return 1; /* egress */
		}
	}
	return 0;
}

static int has_cidr(const struct km_ipsec_node *n, const struct km_xfrm_policy_spec *x)
{
	for (size_t i = 0; i < n->n_cidrs; i++)
		if (n->cidrs[i].len == x->cidr_len && same_addr(&n->cidrs[i].net, &x->cidr))
			return 1;
	return 0;
}

static int wanted_policy(const struct km_ipsec_plan *p, const struct km_xfrm_policy_spec *x)
{
	if (x->dir == XFRM_POLICY_IN || x->dir == XFRM_POLICY_FWD)
		return p->local_policies && x->mark == KM_XFRM_MARK_DECRYPTED && has_cidr(&p->self, x);
	if (x->dir != XFRM_POLICY_OUT || x->mark != KM_XFRM_MARK_ENCRYPT)
		return 0;
	for (size_t i = 0; i < p->n_peers; i++)
		if (p->peers[i].egress_spi && has_cidr(&p->peers[i].node, x))
			return 1;
	return 0;
}

long km_ipsec_plan_reconcile(struct km_ipsec_plan *p)
{
	struct km_ipsec_kernel_view v = { 0 };
	long removed = 0;
	int rc;

	if (!p->sink.list)
		return 0;
	rc = p->sink.list(p->sink.arg, &v);
	if (rc != 0) {
		fail(p, "cannot read the kernel's XFRM states and policies: %s", strerror(-rc));
		return -1;
	}
	for (size_t i = 0; i < v.n_states; i++)
		if (!wanted_state(p, &v.states[i]))
			removed += put_state(p, KM_XFRM_DELETE, &v.states[i]) == 0;
	for (size_t i = 0; i < v.n_policies; i++)
		if (!wanted_policy(p, &v.policies[i]))
			removed += put_policy(p, KM_XFRM_DELETE, &v.policies[i]) == 0;
	free(v.states);
	free(v.policies);
	return removed;
}

int km_ipsec_node_equal(const struct km_ipsec_node *a, const struct km_ipsec_node *b)
{
	return !strcmp(a->name, b->name) && a->spi == b->spi && same_identity(a, b);
}

const struct km_ipsec_peer *km_ipsec_plan_find(const struct km_ipsec_plan *p, const char *name)
{
	return find((struct km_ipsec_plan *)p, name);
}

void km_ipsec_plan_peer_gone(struct km_ipsec_plan *p, const char *name)
{
	struct km_ipsec_peer *peer = find(p, name);

	if (peer)
		remove_peer(p, peer);
}

int km_ipsec_plan_key_changed(struct km_ipsec_plan *p, uint64_t now_ms)
{
	const struct km_ipsec_key *cur = km_ipsec_keyring_current(p->keys);
	int rc = 0;

	if (!cur) {
		fail(p, "no key loaded");
		return -1;
	}
	if (ensure_local(p) != 0)
		rc = -1;
	/* a peer refused here is tried again on its own too (not sooner than it already would) */
	for (size_t i = 0; i < p->n_peers; i++)
		if (ingress_add(p, &p->peers[i], cur->spi) != 0) {
			rc = -1;
			if (!p->peers[i].retry_ms)
				schedule(&p->peers[i], -1, now_ms);
		}
	if (rc)
		return -1; /* not advertised: peers would send what we cannot decrypt */
	p->self.spi = cur->spi;
	for (size_t i = 0; i < p->n_peers; i++) {
		/* a peer's SPI may be a key we only have now */
		if (egress_set(p, &p->peers[i]) != 0 && !p->peers[i].retry_ms)
			schedule(&p->peers[i], -1, now_ms);
		p->peers[i].caught_up_ms = 0;
		caught_up(p, &p->peers[i], now_ms);
	}
	return 0;
}

void km_ipsec_plan_tick(struct km_ipsec_plan *p, uint64_t now_ms)
{
	uint32_t spis[KM_IPSEC_HISTORY_MAX];
	size_t n = 0;

	for (size_t i = 0; i < p->n_peers; i++) {
		struct km_ipsec_peer *peer = &p->peers[i];

		if (!peer->caught_up_ms || now_ms < peer->caught_up_ms + p->grace_ms)
			continue;
		for (size_t k = 0; k < peer->n_accepted;)
			if (peer->accepted[k] != p->self.spi)
				ingress_del(p, peer, k);
			else
				k++;
	}
	/* keys that no state uses and that are not current */
	for (size_t k = 0; k < p->keys->n; k++)
		spis[n++] = p->keys->keys[k].spi;
	for (size_t k = 0; k < n; k++) {
		int used = spis[k] == p->keys->current;

		for (size_t i = 0; i < p->n_peers && !used; i++)
			used = p->peers[i].egress_spi == spis[k] || accepts(&p->peers[i], spis[k]);
		if (!used && km_ipsec_keyring_forget(p->keys, spis[k]))
			km_info("ipsec: key SPI %u is no longer used by any peer: forgotten", spis[k]);
	}
}

void km_ipsec_plan_uninstall(struct km_ipsec_plan *p)
{
	while (p->n_peers)
		remove_peer(p, &p->peers[p->n_peers - 1]);
	if (p->local_policies)
		local_policies(p, KM_XFRM_DELETE);
	p->local_policies = 0;
}
