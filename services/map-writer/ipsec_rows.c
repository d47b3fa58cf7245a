/* ipsec_rows.c — validation and application of the IPsec rows (km_ipsec_peer, km_ipsec_cidr;
 * kmesh_maps.h), which only the IPsec agent's role may send (requests.c). Part of the tables
 * module: written through tables.c, so they batch and count like the other rows. They are not
 * the xDS agent's, so its sync never sweeps them. */
#include <string.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "services/map-writer/tables_internal.h"
#include "shared/addr.h"

#define OK KMESH__IPC__CODE__OK
#define BAD KMESH__IPC__CODE__BAD_REQUEST

int km_ipsec_row(const Kmesh__Ipc__TableOp *op)
{
	return op->row_case == KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER ||
	       op->row_case == KMESH__IPC__TABLE_OP__ROW_IPSEC_CIDR;
}

static Kmesh__Ipc__Code put(struct km_tables *t, const Kmesh__Ipc__TableOp *op, int fd,
			    const char *table, const void *k, size_t klen, const void *v, size_t vlen,
			    char *err, size_t errlen)
{
	if (op->kind == KMESH__IPC__TABLE_OP__KIND__DELETE)
		return tbl_delete_row(t, fd, table, k, klen, err, errlen);
	return tbl_write_row(t, fd, table, k, klen, v, vlen, err, errlen);
}

static int bad_id(const Kmesh__Ipc__TableOp *op, uint32_t id)
{
	return op->kind != KMESH__IPC__TABLE_OP__KIND__DELETE && (id < 1 || id > KM_IPSEC_PEER_ID_MAX);
}

static Kmesh__Ipc__Code peer(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
			     size_t errlen)
{
	const Kmesh__Ipc__IpsecPeerRow *r = op->ipsec_peer;
	struct km_ipsec_peer_key k;
	struct km_ipsec_peer_value v = { .peer_id = r->peer_id };

	memset(&k, 0, sizeof(k));
	if (km_addr_from_bytes(r->address.data, r->address.len, &k.addr) != 0 ||
	    km_addr_is_unspecified(&k.addr))
		return tbl_fail(BAD, err, errlen, "ipsec peer: address must be 4 or 16 bytes, not 0");
	if (bad_id(op, r->peer_id))
		return tbl_fail(BAD, err, errlen, "ipsec peer: id %u is not 1-%d", r->peer_id,
				KM_IPSEC_PEER_ID_MAX);
	return put(t, op, t->fd_ipsec_peer, "km_ipsec_peer", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static Kmesh__Ipc__Code cidr(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
			     size_t errlen)
{
	const Kmesh__Ipc__IpsecCidrRow *r = op->ipsec_cidr;
	struct km_ipsec_cidr_key k;
	struct km_ipsec_cidr_value v = { .peer_id = r->peer_id };
	uint32_t bits, base;

	memset(&k, 0, sizeof(k));
	if (km_addr_from_bytes(r->address.data, r->address.len, &k.addr) != 0)
		return tbl_fail(BAD, err, errlen, "ipsec cidr: address must be 4 or 16 bytes");
	bits = r->address.len == 4 ? 32 : 128;
	base = r->address.len == 4 ? 96 : 0; /* one trie: IPv4 as v4-mapped */
	if (r->length > bits)
		return tbl_fail(BAD, err, errlen, "ipsec cidr: /%u is longer than the address", r->length);
	for (uint32_t b = base + r->length; b < 128; b++)
		if (k.addr.bytes[b / 8] & (0x80 >> (b % 8)))
			return tbl_fail(BAD, err, errlen, "ipsec cidr: host bits set beyond /%u", r->length);
	if (bad_id(op, r->peer_id))
		return tbl_fail(BAD, err, errlen, "ipsec cidr: peer id %u is not 1-%d", r->peer_id,
				KM_IPSEC_PEER_ID_MAX);
	k.prefixlen = base + r->length;
	return put(t, op, t->fd_ipsec_cidr, "km_ipsec_cidr", &k, sizeof(k), &v, sizeof(v), err, errlen);
}

static size_t clear(int fd, size_t key_size)
{
	uint8_t key[KM_TABLES_ROW_BUF];
	size_t n = 0;

	/* each pass restarts from the first key: deleting the current one loses the position */
	while (key_size <= sizeof(key) && bpf_map_get_next_key(fd, NULL, key) == 0 &&
	       bpf_map_delete_elem(fd, key) == 0)
		n++;
	return n;
}

size_t km_tables_ipsec_clear(struct km_tables *t)
{
	return clear(t->fd_ipsec_peer, sizeof(struct km_ipsec_peer_key)) +
	       clear(t->fd_ipsec_cidr, sizeof(struct km_ipsec_cidr_key));
}

Kmesh__Ipc__Code km_ipsec_apply(struct km_tables *t, const Kmesh__Ipc__TableOp *op, char *err,
				size_t errlen)
{
	return op->row_case == KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER ? peer(t, op, err, errlen)
								    : cidr(t, op, err, errlen);
}
