/* mw_link.h — the IPsec agent's connection to the map writer (role ipsec): keeps the map
 * writer's IPsec tables (km_ipsec_peer: peer address -> id; km_ipsec_cidr: remote pod CIDR) equal
 * to what the plan's peers say. On every (re)connection it reads what the tables hold (dumps), so
 * rows of peers that left while either process was down are removed; then, whenever told the
 * peers changed, it sends one batch with the differences. Before that, at every connection, it
 * asks the map writer to put the IPsec tc programs on (IpsecDataplane with this node's
 * addresses). One request in flight at a time; reconnects with backoff. */
#ifndef KM_IPSEC_MW_LINK_H
#define KM_IPSEC_MW_LINK_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "ipc/conn.h"
#include "kmesh_maps.h"
#include "services/ipsec-agent/plan.h"

/* A row of either table: an address (with a prefix length for CIDRs) and a peer id. */
struct km_ipsec_row {
	struct km_addr addr;
	uint8_t len;  /* CIDRs: the prefix length in the address's family; peers: 0 */
	uint8_t cidr; /* which table */
	uint16_t peer_id;
};

struct km_ipsec_mw_link {
	uv_loop_t *loop;
	const struct km_ipsec_plan *plan;
	struct km_conn conn;
	uv_timer_t timer;
	uv_connect_t connect_req;
	char path[108];
	int state;
	int conn_open, stopping, dirty;
	uint64_t next_id, waiting_id;
	uint64_t backoff_ms;
	struct km_ipsec_row *held; /* what the map writer holds, as far as we know */
	size_t n_held, cap_held;
	struct km_ipsec_row *sent; /* the rows of the batch in flight (held once it is applied) */
	size_t n_sent, cap_sent;
	unsigned long batches, refused;
	int tc_on;          /* the map writer took the last IpsecDataplane */
	char tc_status[256]; /* its answer, for the agent's dump */
};

/* Returns 0, or -1 (path too long). */
int km_ipsec_mw_link_start(struct km_ipsec_mw_link *l, uv_loop_t *loop, const char *path,
			   const struct km_ipsec_plan *plan);
/* The plan's peers changed: bring the tables in line (now, or after the request in flight). */
void km_ipsec_mw_link_changed(struct km_ipsec_mw_link *l);
int km_ipsec_mw_link_ready(const struct km_ipsec_mw_link *l);
void km_ipsec_mw_link_stop(struct km_ipsec_mw_link *l);
/* Uninstall, when the loop has stopped: a blocking request (timeout_ms) that takes the tc
 * programs off and empties the IPsec tables. Returns 0, or -1 (logged). */
int km_ipsec_mw_link_turn_off(const char *path, int timeout_ms);

#endif
