/* agent.c — see agent.h. */
#include "services/ipsec-agent/agent.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "services/ipsec-agent/node_watch.h"
#include "shared/log.h"

int km_ipsec_agent_init(struct km_ipsec_agent *a, uv_loop_t *loop, const struct km_ipsec_node *self,
			uint64_t grace_ms)
{
	struct km_ipsec_sink sink = { km_xfrm_link_state, km_xfrm_link_policy, km_xfrm_link_list,
				      &a->link };
	char err[256];

	memset(a, 0, sizeof(*a));
	a->loop = loop;
	km_ipsec_keyring_init(&a->keys);
	if (km_xfrm_link_open(&a->link, err, sizeof(err)) != 0) {
		km_error("%s", err);
		return -1;
	}
	km_ipsec_plan_init(&a->plan, self, &a->keys, &sink, grace_ms);
	return 0;
}

void km_ipsec_agent_free(struct km_ipsec_agent *a, int uninstall)
{
	if (uninstall && a->link.sk) {
		km_ipsec_plan_uninstall(&a->plan);
		km_info("removed every XFRM state and policy of this agent");
	}
	km_ipsec_plan_free(&a->plan);
	km_xfrm_link_close(&a->link);
	km_ipsec_keyring_wipe(&a->keys);
}

/* Peers start encrypting to this node with the advertised SPI when they see our object, so it
 * is written only once every known peer's ingress state for that SPI was sent (in place, or
 * refused and reported): with the Kubernetes API, not before the first list of peers has been
 * applied (after a reboot a slow first list would otherwise let peers encrypt to keys this
 * node does not hold yet). */
static void publish(struct km_ipsec_agent *a)
{
	if (!a->advert) { /* peers fed by hand are told by whoever feeds them */
		km_ipsec_plan_published(&a->plan, a->plan.self.spi, uv_now(a->loop));
		return;
	}
	km_ipsec_plan_published(&a->plan, 0, uv_now(a->loop)); /* not yet */
	if (a->peers_listed)
		km_node_advert_set(a->advert, &a->plan.self);
}

/* Ingress for the current key from every peer, then advertise it; on a refusal try again later
 * (1 s, doubling to a minute): a transient netlink error must not hold back a rotation. */
static void advertise(struct km_ipsec_agent *a)
{
	uint32_t spi = a->keys.current;

	if (km_ipsec_plan_key_changed(&a->plan, uv_now(a->loop)) != 0) {
		a->retry_ms = a->retry_ms ? (a->retry_ms * 2 > 60000 ? 60000 : a->retry_ms * 2) : 1000;
		a->retry_at_ms = uv_now(a->loop) + a->retry_ms;
		km_error("SPI %u is not advertised: not every peer's ingress state is in place (%s); "
			 "trying again in %llu s", spi, a->plan.last_error,
			 (unsigned long long)(a->retry_ms / 1000));
		return;
	}
	a->retry_ms = 0;
	if (a->advert && !a->peers_listed)
		km_info("SPI %u is ready to receive from the %zu peers known so far: advertised once "
			"the first list of peers is applied", a->plan.self.spi, a->plan.n_peers);
	else
		km_info("SPI %u is ready to receive: advertised", a->plan.self.spi);
	publish(a);
}

static void reconcile(struct km_ipsec_agent *a)
{
	long n;

	if (!a->plan.self.spi)
		return;
	n = km_ipsec_plan_reconcile(&a->plan);
	if (n < 0)
		km_warn("leftover XFRM objects not checked: %s", a->plan.last_error);
	else if (n > 0)
		km_info("removed %ld XFRM states and policies that no peer needs (left by peers gone "
			"while no agent ran, or by an older run)", n);
	if (n > 0)
		a->reconciled += (uint64_t)n;
}

void km_ipsec_agent_listed(struct km_ipsec_agent *a)
{
	reconcile(a);
	if (a->peers_listed)
		return;
	a->peers_listed = 1;
	/* every listed peer was applied: its ingress state for our SPI sent */
	if (a->plan.self.spi) {
		km_info("first list of peers applied (%zu peers): SPI %u is ready to receive: "
			"advertised", a->plan.n_peers, a->plan.self.spi);
		publish(a);
	}
}

void km_ipsec_agent_published(void *arg, uint32_t spi)
{
	struct km_ipsec_agent *a = arg;

	if (spi == a->plan.self.spi)
		km_ipsec_plan_published(&a->plan, spi, uv_now(a->loop));
}

void km_ipsec_agent_key_refused(struct km_ipsec_agent *a, const char *why)
{
	a->keys_refused++;
	km_error("key file refused: %s; the keys already loaded stay in use", why);
}

int km_ipsec_agent_key(struct km_ipsec_agent *a, const struct km_ipsec_key *k, char *err,
		       size_t errlen)
{
	uint32_t dropped;

	switch (km_ipsec_keyring_add(&a->keys, k, &dropped, err, errlen)) {
	case KM_KEYRING_REFUSED:
		return -1;
	case KM_KEYRING_UNCHANGED:
		km_debug("key file read again: SPI %u, unchanged", k->spi);
		return 0;
	case KM_KEYRING_CURRENT:
		break;
	}
	if (dropped)
		km_warn("key history full: the key of SPI %u is forgotten", dropped);
	km_info("key SPI %u (%s) loaded: preparing ingress from %zu peers", k->spi, k->aead_name,
		a->plan.n_peers);
	a->retry_ms = 0;
	advertise(a);
	return 0;
}

void km_ipsec_agent_peer(struct km_ipsec_agent *a, const struct km_ipsec_node *n)
{
	const struct km_ipsec_peer *known = km_ipsec_plan_find(&a->plan, n->name);
	/* the same again (a new list, an edit of something else): applied again, which retries
	 * what the kernel refused before, but not logged as news */
	int same = known && km_ipsec_node_equal(&known->node, n);

	if (km_ipsec_plan_peer(&a->plan, n, uv_now(a->loop)) != 0) {
		const struct km_ipsec_peer *p = km_ipsec_plan_find(&a->plan, n->name);

		if (p && p->retry_ms)
			km_warn("peer %s: not every rule is in place: %s; trying again in %u s",
				n->name, a->plan.last_error, p->retry_ms / 1000);
		else
			km_warn("peer %s: not every rule is in place: %s", n->name,
				a->plan.last_error);
	} else
		km_log(same ? KM_LOG_DEBUG : KM_LOG_INFO, "peer %s (SPI %u, %zu addresses, %zu pod "
		       "CIDRs) in place", n->name, n->spi, n->n_addrs, n->n_cidrs);
	if (a->mw)
		km_ipsec_mw_link_changed(a->mw);
}

void km_ipsec_agent_peer_gone(struct km_ipsec_agent *a, const char *name)
{
	km_ipsec_plan_peer_gone(&a->plan, name);
	km_info("peer %s left: its states and policies are removed", name);
	if (a->mw)
		km_ipsec_mw_link_changed(a->mw);
}

void km_ipsec_agent_tick(struct km_ipsec_agent *a)
{
	if (a->keys.current && a->keys.current != a->plan.self.spi && a->retry_ms &&
	    uv_now(a->loop) >= a->retry_at_ms)
		advertise(a);
	/* peers the kernel refused something of, whoever gave them (a list, a watch event, the
	 * admin socket): not only at their next event */
	km_ipsec_plan_retry(&a->plan, uv_now(a->loop));
	km_ipsec_plan_tick(&a->plan, uv_now(a->loop));
}

char *km_ipsec_agent_dump(const struct km_ipsec_agent *a)
{
	json_t *peers = json_array(), *keys = json_array(), *root;
	char *text;

	for (size_t i = 0; i < a->keys.n; i++)
		json_array_append_new(keys, json_pack("{s:I, s:s, s:I}", "spi",
						      (json_int_t)a->keys.keys[i].spi, "aead",
						      a->keys.keys[i].aead_name, "icv_bits",
						      (json_int_t)a->keys.keys[i].icv_bits));
	for (size_t i = 0; i < a->plan.n_peers; i++) {
		const struct km_ipsec_peer *p = &a->plan.peers[i];
		json_t *acc = json_array();

		for (size_t k = 0; k < p->n_accepted; k++)
			json_array_append_new(acc, json_integer(p->accepted[k]));
		json_array_append_new(peers, json_pack("{s:s, s:I, s:I, s:I, s:o, s:b, s:I}", "name",
						       p->node.name, "id", (json_int_t)p->id, "spi",
						       (json_int_t)p->node.spi, "egress_spi",
						       (json_int_t)p->egress_spi, "ingress_spis", acc,
						       "pending", p->retry_ms != 0, "retries",
						       (json_int_t)p->retries));
	}
	root = json_pack("{s:s, s:I, s:I, s:o, s:o, s:I, s:s, s:I, s:I, s:I}", "node",
			 a->plan.self.name, "advertised_spi", (json_int_t)a->plan.self.spi, "current_spi",
			 (json_int_t)a->keys.current, "keys", keys, "peers", peers, "errors",
			 (json_int_t)a->plan.errors, "last_error", a->plan.last_error,
			 "xfrm_requests", (json_int_t)a->link.sent, "xfrm_refused",
			 (json_int_t)a->link.refused, "key_files_refused", (json_int_t)a->keys_refused);
	if (root) {
		json_object_set_new(root, "leftovers_removed", json_integer((json_int_t)a->reconciled));
		json_object_set_new(root, "peers_pending",
				    json_integer((json_int_t)km_ipsec_plan_pending(&a->plan)));
		json_object_set_new(root, "peer_retries", json_integer((json_int_t)a->plan.retries));
	}
	if (root && (a->advert || a->watch))
		json_object_set_new(root, "kubernetes",
				    json_pack("{s:o, s:o, s:b}", "own_object",
					      a->advert ? km_node_advert_status(a->advert) : json_null(),
					      "watch", a->watch ? km_node_watch_status(a->watch)
								: json_null(),
					      "peers_listed", a->peers_listed));
	if (root && a->mw)
		json_object_set_new(root, "map_writer",
				    json_pack("{s:b, s:b, s:s, s:I, s:I}", "connected",
					      km_ipsec_mw_link_ready(a->mw), "tc_programs_on",
					      a->mw->tc_on, "tc_status", a->mw->tc_status, "batches",
					      (json_int_t)a->mw->batches, "batches_refused",
					      (json_int_t)a->mw->refused));
	text = root ? json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
	json_decref(root);
	return text;
}
