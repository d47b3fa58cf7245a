/* migrate.c — the converters between table layouts (see migrate.h). Each older layout's changed
 * structs are kept here, frozen, next to the function that reads them. */
#include "services/map-writer/migrate.h"

#include <stddef.h>
#include <string.h>

#include "kmesh_maps.h"

#ifndef KM_LAYOUT_TEST_NEXT
/* No range in km_slot yet: the map writer places each service's rows when it adopts them
 * (slots.c) and rewrites the service row then. */
static void service_no_slots(struct km_service_value *n)
{
	for (int p = 0; p < KM_PRIO_COUNT; p++) {
		n->slot_base[p] = KM_SLOT_NONE;
		n->slot_order[p] = 0;
	}
}

/* ---- every layout before 5 -> 5 (the pick in the frontend row) ---------------------------- */

/* Layouts 2 to 4's frontend value: layout 5's without the pick. */
struct v4_frontend_value {
	__u32 kind;
	__u32 upstream_id;
	__u16 target_port;
	__u16 flags;
};

_Static_assert(offsetof(struct km_frontend_value, pick_base) == sizeof(struct v4_frontend_value),
	       "layout 5's frontend value extends layout 4's");

/* No pick yet (BPF reads the service row): the map writer fills it in at start (fe_pick.c). */
static void frontend_4_to_5(const void *ok, const void *ov, void *nk, void *nv)
{
	struct km_frontend_value *n = nv;

	memcpy(nk, ok, sizeof(struct km_frontend_key));
	memcpy(n, ov, sizeof(struct v4_frontend_value));
	n->flags &= (__u16)~KM_FE_F_PICK;
	n->pick_base = n->pick_count = 0;
}

#define FRONTEND_TO_5                                                                              \
	{ KM_MAP_FRONTEND, sizeof(struct km_frontend_key), sizeof(struct v4_frontend_value),       \
	  frontend_4_to_5 }

/* ---- layout 2 -> 5 (weights, power of two choices, waypoint data port; endpoint slots) ---- */

struct v2_waypoint_ref {
	struct km_addr addr;
	__u16 port;
	__u16 pad;
};
struct v2_service_value {
	__u32 endpoint_count[KM_PRIO_COUNT];
	__u32 lb_mode;
	struct v2_waypoint_ref waypoint;
};
struct v2_endpoint_value {
	__u32 backend_id;
};
struct v2_backend_value {
	struct km_addr addr4, addr6;
	struct v2_waypoint_ref waypoint;
	__u32 weight;
};

/* Layout 2 dialled the waypoint on its HBONE port. */
static void waypoint_2_to_3(const struct v2_waypoint_ref *o, struct km_waypoint_ref *n)
{
	n->addr = o->addr;
	n->port = o->port;
	n->data_port = o->port;
}

static void service_2_to_3(const void *ok, const void *ov, void *nk, void *nv)
{
	const struct v2_service_value *o = ov;
	struct km_service_value *n = nv;

	memcpy(nk, ok, sizeof(struct km_service_key));
	memcpy(n->endpoint_count, o->endpoint_count, sizeof(n->endpoint_count));
	n->lb_mode = o->lb_mode;
	waypoint_2_to_3(&o->waypoint, &n->waypoint);
	for (int p = 0; p < KM_PRIO_COUNT; p++)
		n->weight_total[p] = o->endpoint_count[p]; /* layout 2 had no weights */
	service_no_slots(n);
}

static void endpoint_2_to_3(const void *ok, const void *ov, void *nk, void *nv)
{
	const struct km_endpoint_key *k = ok;
	struct km_endpoint_value *n = nv;

	memcpy(nk, ok, sizeof(*k));
	n->backend_id = ((const struct v2_endpoint_value *)ov)->backend_id;
	n->cum_weight = (__u64)k->index + 1;
}

static void backend_2_to_3(const void *ok, const void *ov, void *nk, void *nv)
{
	const struct v2_backend_value *o = ov;
	struct km_backend_value *n = nv;

	memcpy(nk, ok, sizeof(struct km_backend_key));
	n->addr4 = o->addr4;
	n->addr6 = o->addr6;
	waypoint_2_to_3(&o->waypoint, &n->waypoint);
	n->weight = o->weight;
}

static const struct km_map_migration from_2[] = {
	{ KM_MAP_SERVICE, sizeof(struct km_service_key), sizeof(struct v2_service_value),
	  service_2_to_3 },
	{ KM_MAP_ENDPOINT, sizeof(struct km_endpoint_key), sizeof(struct v2_endpoint_value),
	  endpoint_2_to_3 },
	{ KM_MAP_BACKEND, sizeof(struct km_backend_key), sizeof(struct v2_backend_value),
	  backend_2_to_3 },
	FRONTEND_TO_5,
	{ 0 },
};

/* ---- layout 3 -> 5 (endpoint slots: the service row says where its ranges are) ------------ */

struct v3_service_value {
	__u32 endpoint_count[KM_PRIO_COUNT];
	__u32 lb_mode;
	struct km_waypoint_ref waypoint;
	__u32 flags;
	__u64 weight_total[KM_PRIO_COUNT];
};

_Static_assert(offsetof(struct km_service_value, slot_base) == sizeof(struct v3_service_value),
	       "layout 4's service value extends layout 3's");

static void service_3_to_4(const void *ok, const void *ov, void *nk, void *nv)
{
	struct km_service_value *n = nv;

	memcpy(nk, ok, sizeof(struct km_service_key));
	memcpy(n, ov, sizeof(struct v3_service_value)); /* a prefix of layout 4's */
	service_no_slots(n);
}

static const struct km_map_migration from_3[] = {
	{ KM_MAP_SERVICE, sizeof(struct km_service_key), sizeof(struct v3_service_value),
	  service_3_to_4 },
	FRONTEND_TO_5,
	{ 0 },
};

/* ---- layout 4 -> 5 (the pick in the frontend row) ------------------------------------------ */

static const struct km_map_migration from_4[] = {
	FRONTEND_TO_5,
	{ 0 },
};
#else
/* ---- layout 5 -> the test's next layout (one more backend field) ---------------------------- */

#define TEST_NEXT_MARK 0x7e57

static void backend_5_to_next(const void *ok, const void *ov, void *nk, void *nv)
{
	struct km_backend_value *n = nv;

	memcpy(nk, ok, sizeof(struct km_backend_key));
	memcpy(n, ov, offsetof(struct km_backend_value, test_next));
	n->test_next = TEST_NEXT_MARK;
}

static const struct km_map_migration from_5[] = {
	{ KM_MAP_BACKEND, sizeof(struct km_backend_key), offsetof(struct km_backend_value, test_next),
	  backend_5_to_next },
	{ 0 },
};
#endif

const struct km_map_migration *km_migration_from(uint32_t from)
{
#ifdef KM_LAYOUT_TEST_NEXT
	if (from == 5)
		return from_5;
#else
	if (from == 2)
		return from_2;
	if (from == 3)
		return from_3;
	if (from == 4)
		return from_4;
#endif
	return NULL;
}

const struct km_map_migration *km_migration_for(const struct km_map_migration *m, const char *map)
{
	for (; m && m->map; m++)
		if (!strcmp(m->map, map))
			return m;
	return NULL;
}
