/* sync.c — mark and sweep of the routing tables for a (re)connected xDS agent. Part of the tables
 * module (declared in tables.h). After BEGIN every routing row written is marked; at END the rows
 * not marked are what the agent no longer wants (removed while it or this process was down, or
 * left by an earlier agent) and are deleted: frontends, services, endpoints, port overrides,
 * then backends, so no remaining row ever names a missing one; then the authorization rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "services/map-writer/tables_internal.h"
#include "shared/log.h"

void km_tables_sync_begin(struct km_tables *t)
{
	static const size_t lens[TBL_SEEN_COUNT] = {
		sizeof(struct km_frontend_key), sizeof(struct km_service_key),
		sizeof(struct km_endpoint_key), sizeof(struct km_backend_key),
		sizeof(struct km_port_override_key), sizeof(struct km_authz_ident_key),
		sizeof(struct km_authz_list_key), sizeof(struct km_authz_match_key),
		sizeof(struct km_authz_set_key), sizeof(struct km_authz_cidr_key),
		sizeof(struct km_authz_index_key),
	};

	for (int i = 0; i < TBL_SEEN_COUNT; i++) {
		if (t->seen[i].key_len)
			km_keyset_clear(&t->seen[i]);
		else
			km_keyset_init(&t->seen[i], lens[i]);
	}
	t->sync_active = 1;
	t->sync_incomplete = 0;
}

/* Delete the rows of one table that were not written since BEGIN. Keys are collected first:
 * deleting while walking would restart the walk. */
static int sweep(struct km_tables *t, int fd, int seen, uint32_t *removed)
{
	size_t len = t->seen[seen].key_len, n = 0, cap = 0;
	uint8_t key[KM_KEYSET_MAX_KEY], next[KM_KEYSET_MAX_KEY], *stale = NULL;
	const void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, len);
		prev = key;
		if (km_keyset_has(&t->seen[seen], key))
			continue;
		if (n == cap) {
			uint8_t *grown = realloc(stale, (cap = cap ? cap * 2 : 256) * len);

			if (!grown) {
				free(stale);
				return -1;
			}
			stale = grown;
		}
		memcpy(stale + n++ * len, key, len);
	}
	for (size_t i = 0; i < n; i++)
		if (km_tables_delete_key(t, fd, stale + i * len) == 0)
			(*removed)++;
	free(stale);
	return 0;
}

Kmesh__Ipc__Code km_tables_sync_end(struct km_tables *t, uint32_t *removed, char *err, size_t errlen)
{
	/* authz: lists before what they name, so a swept list never points at swept rows */
	const int order[] = { TBL_SEEN_FRONTEND, TBL_SEEN_SERVICE, TBL_SEEN_ENDPOINT,
			      TBL_SEEN_PORT_OVERRIDE, TBL_SEEN_BACKEND, TBL_SEEN_AUTHZ_LIST,
			      TBL_SEEN_AUTHZ_INDEX, TBL_SEEN_AUTHZ_MATCH, TBL_SEEN_AUTHZ_SET,
			      TBL_SEEN_AUTHZ_CIDR, TBL_SEEN_AUTHZ_IDENT };
	const int fds[TBL_SEEN_COUNT] = { t->fd_frontend, t->fd_service, t->fd_endpoint,
					  t->fd_backend, t->fd_port_override, t->fd_authz_ident,
					  t->fd_authz_list, t->fd_authz_match, t->fd_authz_set,
					  t->fd_authz_cidr, t->fd_authz_index };

	*removed = 0;
	err[0] = '\0';
	if (!t->sync_active) {
		snprintf(err, errlen, "sync END without BEGIN");
		return KMESH__IPC__CODE__BAD_REQUEST;
	}
	t->sync_active = 0;
	if (t->sync_incomplete) {
		snprintf(err, errlen, "out of memory marking rows since BEGIN: stale rows are kept");
		return KMESH__IPC__CODE__INTERNAL;
	}
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (sweep(t, fds[order[i]], order[i], removed) != 0) {
			snprintf(err, errlen, "out of memory sweeping: some stale rows are kept");
			return KMESH__IPC__CODE__INTERNAL;
		}
	t->rows_swept += *removed;
	t->authz_changes += *removed; /* some may be authz rows: a spare re-check is harmless */
	for (int i = 0; i < TBL_SEEN_COUNT; i++)
		km_keyset_clear(&t->seen[i]);
	km_info("sync with the xDS agent done: %u stale rows removed", *removed);
	return KMESH__IPC__CODE__OK;
}
