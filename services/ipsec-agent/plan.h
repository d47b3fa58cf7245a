/* plan.h — which XFRM states and policies this node needs, kept in step with its key and its
 * peers (the other nodes' KmeshNodeInfo), including rotation without loss and with cleanup.
 *
 * Per local pod CIDR, once: policies in and fwd, mark 0xd0, template ESP tunnel with any source
 * (Kmesh names one peer there, so the last peer written wins and the others' decrypted traffic
 * fails the policy check on nodes with more than one peer).
 * Per peer P, for each address pair of one family:
 *   ingress states P -> here, one per SPI P may still encrypt with (key: ours for that SPI),
 *   each taking only packets marked with P's id (kmesh_maps.h: KM_IPSEC_PEER_*), since every
 *   peer uses our one SPI and XFRM tells input states apart by (destination, SPI, mark);
 *   an egress state here -> P with P's advertised SPI, if this node has that key (else the
 *   previous egress stays: P still accepts it), and per P pod CIDR an out policy, mark 0xe0,
 *   whose template names that SPI (first pair of the family).
 * Rotation: a new local key first gets ingress states from every peer, then the caller
 * advertises it. P switches its egress once it has the key and sees the advert; an older SPI's
 * ingress state is removed once our advert is published (km_ipsec_plan_published: written to
 * the API) and P advertises exactly our current SPI, and grace_ms have passed since the later
 * of the two; a key nothing uses any more leaves the keyring (Kmesh never removes either).
 * Refusals: a peer some of whose rules the kernel refused (or whose key could not be derived)
 * is applied again by km_ipsec_plan_retry, 1 s after, doubling to a minute while it keeps
 * failing; once all is in place the tries stop, and they die with the peer.
 * The kernel is reached through a sink, so tests can run two nodes against simulated kernels. */
#ifndef KM_IPSEC_PLAN_H
#define KM_IPSEC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"
#include "services/ipsec-agent/keyring.h"
#include "services/ipsec-agent/xfrm_msg.h"

#define KM_IPSEC_ADDRS_MAX 4
#define KM_IPSEC_CIDRS_MAX 4
#define KM_IPSEC_NAME_MAX 254 /* a Kubernetes node name, NUL included */
#define KM_IPSEC_RETRY_MIN_MS 1000   /* a refused peer's first try again */
#define KM_IPSEC_RETRY_MAX_MS 60000  /* ... doubling up to this */

/* A node as its KmeshNodeInfo spec says. */
struct km_ipsec_node {
	char name[KM_IPSEC_NAME_MAX];
	uint32_t spi;
	char addrs[KM_IPSEC_ADDRS_MAX][46]; /* texts as listed: they go into the key derivation */
	size_t n_addrs;
	char boot_id[64];
	struct {
		struct km_addr net;
		uint8_t len;
	} cidrs[KM_IPSEC_CIDRS_MAX];
	size_t n_cidrs;
};

/* What the kernel holds with this agent's reqid (KM_XFRM_REQID), by key: states (src, dst, spi,
 * mark, mark_mask) and policies (dir, cidr, cidr_len, mark). Arrays from malloc. */
struct km_ipsec_kernel_view {
	struct km_xfrm_state_spec *states;
	size_t n_states;
	struct km_xfrm_policy_spec *policies;
	size_t n_policies;
};

/* The kernel: returns 0 or -errno (an add of something present answers -EEXIST). */
struct km_ipsec_sink {
	int (*state)(void *arg, enum km_xfrm_op op, const struct km_xfrm_state_spec *s);
	int (*policy)(void *arg, enum km_xfrm_op op, const struct km_xfrm_policy_spec *p);
	int (*list)(void *arg, struct km_ipsec_kernel_view *out); /* may be NULL */
	void *arg;
};

struct km_ipsec_peer {
	struct km_ipsec_node node;
	uint16_t id; /* 1..KM_IPSEC_PEER_ID_MAX, this node's name for it in marks */
	uint32_t egress_spi; /* the SPI our egress state and out policies use; 0: none */
	uint32_t accepted[KM_IPSEC_HISTORY_MAX]; /* SPIs of our ingress states from this peer */
	size_t n_accepted;
	uint64_t caught_up_ms; /* since when it advertises exactly our SPI, ours being published;
				* 0: not yet */
	uint32_t retry_ms;     /* something of it was refused: the wait before the next try, which
				* doubles (0: all in place) */
	uint64_t retry_at_ms;  /* when that try is due */
	uint64_t retries;      /* tries again so far */
};

struct km_ipsec_plan {
	struct km_ipsec_node self; /* spi: the one advertised (km_ipsec_plan_key_changed sets it) */
	uint32_t published_spi;    /* the advert peers can see (km_ipsec_plan_published) */
	struct km_ipsec_keyring *keys;
	struct km_ipsec_sink sink;
	uint64_t grace_ms;
	struct km_ipsec_peer *peers;
	size_t n_peers, cap_peers;
	int local_policies;  /* the in/fwd policies are installed */
	uint64_t errors;     /* sink refusals and derivation failures, each logged */
	uint64_t retries;    /* peers applied again after a refusal (km_ipsec_plan_retry) */
	char last_error[256];
};

void km_ipsec_plan_init(struct km_ipsec_plan *p, const struct km_ipsec_node *self,
			struct km_ipsec_keyring *keys, const struct km_ipsec_sink *sink,
			uint64_t grace_ms);
void km_ipsec_plan_free(struct km_ipsec_plan *p);
/* The keyring's current key changed: ingress states for it from every peer, egress re-checked
 * (peers may advertise SPIs only now known). Returns 0 when every ingress state is in place and
 * the caller may advertise the new SPI (self.spi is then set), else -1 (see last_error). */
int km_ipsec_plan_key_changed(struct km_ipsec_plan *p, uint64_t now_ms);
/* Our advert of spi is where peers can see it (this node's KmeshNodeInfo written; at once for
 * peers fed by hand): the grace periods of peers already advertising it start now. */
void km_ipsec_plan_published(struct km_ipsec_plan *p, uint32_t spi, uint64_t now_ms);
/* 1 when a and b describe a node the same way (field by field). */
int km_ipsec_node_equal(const struct km_ipsec_node *a, const struct km_ipsec_node *b);
/* The peer of that name, or NULL. */
const struct km_ipsec_peer *km_ipsec_plan_find(const struct km_ipsec_plan *p, const char *name);
/* A peer appeared or its spec changed. Returns 0, or -1 if something was refused. */
int km_ipsec_plan_peer(struct km_ipsec_plan *p, const struct km_ipsec_node *n, uint64_t now_ms);
/* A peer left: everything of it is removed. */
void km_ipsec_plan_peer_gone(struct km_ipsec_plan *p, const char *name);
/* Apply again every peer something of which was refused and whose next try is due (its spec as
 * last given). Returns how many were tried. */
size_t km_ipsec_plan_retry(struct km_ipsec_plan *p, uint64_t now_ms);
/* Peers waiting for a try again. */
size_t km_ipsec_plan_pending(const struct km_ipsec_plan *p);
/* Remove ingress states and keys no peer needs any more. */
void km_ipsec_plan_tick(struct km_ipsec_plan *p, uint64_t now_ms);
/* Remove what the kernel holds with our reqid that the plan does not want: states and policies
 * of peers that left while no agent ran, or of an older run. Call once the peers are known (a
 * first list of them). Returns how many were removed, or -1 when the kernel could not be read
 * (last_error says why). */
long km_ipsec_plan_reconcile(struct km_ipsec_plan *p);
/* Remove everything this plan installed (uninstall). */
void km_ipsec_plan_uninstall(struct km_ipsec_plan *p);

#endif
