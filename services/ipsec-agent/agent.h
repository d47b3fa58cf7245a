/* agent.h — the IPsec agent's state and what it does with each event: a key loaded (into the
 * keyring; a new current key gets its ingress states, then is advertised), a peer appeared,
 * changed or left, and the periodic work (peers the kernel refused something of are tried
 * again, old states and keys cleaned up); plus its JSON dump. Events come from the key watch,
 * the admin socket and the KmeshNodeInfo watch (node_watch.h); the advert goes out through
 * node_advert.h when there is a Kubernetes API (not before the first list of peers has been
 * applied, so that peers never encrypt to this node before their ingress states were sent),
 * else it counts as published at once. */
#ifndef KM_IPSEC_AGENT_H
#define KM_IPSEC_AGENT_H

#include <stdint.h>

#include <jansson.h>

#include <uv.h>

#include "services/ipsec-agent/keyring.h"
#include "services/ipsec-agent/mw_link.h"
#include "services/ipsec-agent/node_advert.h"
#include "services/ipsec-agent/plan.h"
#include "services/ipsec-agent/xfrm_link.h"

struct km_node_watch;

struct km_ipsec_agent {
	uv_loop_t *loop;
	struct km_ipsec_keyring keys;
	struct km_ipsec_plan plan;
	struct km_xfrm_link link;
	struct km_ipsec_mw_link *mw; /* the map writer's IPsec tables follow the peers (may be NULL) */
	struct km_node_advert *advert; /* this node's KmeshNodeInfo (NULL: no Kubernetes API) */
	struct km_node_watch *watch;   /* the peers' (NULL: none), for the dump */
	uint64_t keys_refused; /* versions of the key file refused, whatever the reason */
	uint64_t reconciled; /* leftover XFRM objects removed */
	uint64_t retry_at_ms, retry_ms; /* the current key not advertised yet: when to try again */
	int peers_listed; /* the watch's first list was applied: our object may be written */
};

/* self: this node (its spi ignored). Returns 0, or -1 after logging why. */
int km_ipsec_agent_init(struct km_ipsec_agent *a, uv_loop_t *loop, const struct km_ipsec_node *self,
			uint64_t grace_ms);
void km_ipsec_agent_free(struct km_ipsec_agent *a, int uninstall);
/* A key read from the key file: 0 when it is used (or the same again), else -1 with err saying
 * why the keyring refuses it (an SPI that already names another key). */
int km_ipsec_agent_key(struct km_ipsec_agent *a, const struct km_ipsec_key *k, char *err,
		       size_t errlen);
/* A version of the key file refused, for any reason (why: "PATH: reason"): counted and logged
 * as "key file refused: PATH: reason" (kmesh_ipsec_key_files_refused_total). */
void km_ipsec_agent_key_refused(struct km_ipsec_agent *a, const char *why);
void km_ipsec_agent_peer(struct km_ipsec_agent *a, const struct km_ipsec_node *n);
void km_ipsec_agent_peer_gone(struct km_ipsec_agent *a, const char *name);
void km_ipsec_agent_tick(struct km_ipsec_agent *a);
/* A full list of peers was applied (every peer known): remove what the kernel holds with our
 * reqid that no peer needs (skipped until a key is loaded: the states of that key would look
 * unneeded); at the first, this node's object, held back until then, is written. */
void km_ipsec_agent_listed(struct km_ipsec_agent *a);
/* Our object advertising spi was written (node_advert.h's done callback; arg is the agent). */
void km_ipsec_agent_published(void *arg, uint32_t spi);
/* malloc'd JSON text, or NULL. */
char *km_ipsec_agent_dump(const struct km_ipsec_agent *a);

#endif
