/* oplist.h — an ordered list of table operations as the model emits them, and their encoding
 * into IPC TableBatch frames. Plain structs (host-order ports) so tests can read them. */
#ifndef KM_XDS_OPLIST_H
#define KM_XDS_OPLIST_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"

enum km_op_table {
	KM_OP_FRONTEND = 1,
	KM_OP_SERVICE = 2,
	KM_OP_ENDPOINT = 3,
	KM_OP_BACKEND = 4,
	KM_OP_PORT_OVERRIDE = 5,
	/* L4 authorization (authz_compile.c); layouts in kmesh_maps.h */
	KM_OP_AUTHZ_IDENT = 6,
	KM_OP_AUTHZ_SET = 7,
	KM_OP_AUTHZ_CIDR = 8,
	KM_OP_AUTHZ_MATCH = 9,
	KM_OP_AUTHZ_LIST = 10,
	KM_OP_AUTHZ_INDEX = 11,
};

/* A waypoint as the tables carry it: port 0 = none; port with has_addr 0 = pending. */
struct km_op_waypoint {
	struct km_addr addr;
	uint16_t port;      /* HBONE port as named */
	uint16_t data_port; /* port dialled on the waypoint pod */
	uint8_t has_addr;
};

struct km_op {
	uint8_t table; /* enum km_op_table */
	uint8_t del;   /* 1 = delete (key fields only) */
	union {
		struct {
			struct km_addr addr;
			uint16_t port; /* host order; 0 = any (workload rows) */
			uint8_t kind;  /* enum km_frontend_kind */
			uint32_t upstream_id;
			uint16_t target_port;
			uint16_t flags; /* KM_FE_F_* */
		} fe;
		struct {
			uint32_t id;
			uint32_t count[KM_PRIO_COUNT];
			uint32_t lb_mode;
			uint32_t flags; /* KM_SVC_F_* */
			struct km_op_waypoint waypoint;
			uint64_t weight_total[KM_PRIO_COUNT];
		} svc;
		struct {
			uint32_t service_id;
			uint32_t prio;
			uint32_t index;
			uint32_t backend_id;
			uint32_t addr4; /* network order; 0 = none (km_endpoint_value.addr4) */
			uint64_t cum_weight;
		} ep;
		struct {
			uint32_t id;
			struct km_addr addr4, addr6;
			uint8_t has4, has6;
			struct km_op_waypoint waypoint;
			uint32_t weight;
		} be;
		struct {
			uint32_t service_id;
			uint32_t backend_id;
			uint16_t port;
			uint16_t target_port;
		} po;
		struct {
			struct km_addr addr;
			uint32_t workload_id, ns_id, sa_id, principal_id;
		} ident;
		struct {
			uint32_t set_id;
			uint32_t value;
		} set;
		struct {
			uint32_t set_id;
			uint8_t addr[16];
			uint8_t addr_len; /* 4 or 16 */
			uint8_t length;   /* prefix length */
		} cidr;
		struct {
			uint32_t policy_id, index, flags;
			uint32_t sets[KM_AF_COUNT];
		} match;
		struct {
			uint32_t kind, owner, index;
			uint32_t policy_id, stat_id, flags, n_matches; /* an entry */
			uint32_t n_deny, n_allow, n_dry_run, gen;      /* the head */
		} list;
		struct {
			uint32_t kind, owner, value;
			uint8_t gen, field, chunk;
			uint64_t bits[KM_AZX_CHUNK_BITS / 64]; /* a summary uses the first two */
		} index;
	};
};

/*
 * Grouping. An upsert is "additive" unless it is emitted with km_oplist_add_now: it only adds or
 * refreshes a row whose references are written by upserts of earlier phases (backends, then
 * port overrides, endpoints, service rows, frontends). Additive upserts wait in the list and are
 * put in phase order when the list is settled; anything else (every delete, and the overwrite
 * of a live endpoint slot with its count) settles the list first. So the order stays valid while
 * a bulk load becomes long runs of one table (which the map writer applies in one bpf() call).
 */
struct km_oplist {
	struct km_op *ops;
	size_t n, cap;
	size_t settled; /* ops[0..settled) are in their final order */
	int oom; /* an append failed: the list is incomplete and must not be sent */
	/* Optional: called when the list holds drain_at ops, to hand them on (and clear the list)
	 * while a large update is still being turned into ops. Ops are final once emitted, so
	 * sending a prefix early keeps the order. */
	void (*drain)(struct km_oplist *l, void *arg);
	void *drain_arg;
	size_t drain_at;
};

void km_oplist_init(struct km_oplist *l);
void km_oplist_free(struct km_oplist *l);
void km_oplist_clear(struct km_oplist *l);
/* Append a zeroed op and return it (NULL and l->oom set on allocation failure). Deletes settle
 * the list first; upserts are additive. */
struct km_op *km_oplist_add(struct km_oplist *l, enum km_op_table table, int del);
/* Append after settling the list, whatever the op (ordering-sensitive upserts). */
struct km_op *km_oplist_add_now(struct km_oplist *l, enum km_op_table table, int del);
/* Put the waiting additive upserts in phase order; every consumer calls this before sending. */
void km_oplist_settle(struct km_oplist *l);

/* Encode ops[0..n) as one Envelope{batch} frame payload (malloc'd; NULL when out of memory).
 * Every row's fields are numbers and fixed-size arrays, so an op packs into at most
 * KM_OP_PACKED_MAX bytes (the largest, a service row of the largest values, is 163:
 * test_oplist_encode checks each kind at its limits against half of it). */
#define KM_OP_PACKED_MAX 512
uint8_t *km_oplist_encode(const struct km_op *ops, size_t n, uint64_t request_id, size_t *len);
/* The same frame with every op packed by protobuf-c (km_oplist_encode packs the rows of a full
 * sync by hand): the reference test_oplist_encode compares its bytes with. */
uint8_t *km_oplist_encode_reference(const struct km_op *ops, size_t n, uint64_t request_id,
				    size_t *len);

#endif
