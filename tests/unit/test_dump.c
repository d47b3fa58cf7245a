/* test_dump.c — the map writer's tables read back a page at a time (dump.c; issue 47), against
 * real BPF maps: pages by keys (exact), by buckets (bounded), each row once; a page packed as it
 * is read equals the one collected; a byte budget ends a page early; a bad cursor is refused; a
 * cancel stops the read. The row checks and enrollment's dump stay in test_tables.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <bpf/bpf.h>

#include "kmesh_maps.h"
#include "shared/addr.h"
#include "services/map-writer/tables.h"

#include "tests/unit/tables_fixture.h"

static int setup(void **state)
{
	static struct km_tables t;

	tables_open(&t);
	*state = &t;
	return 0;
}

static int teardown(void **state)
{
	tables_close(*state);
	return 0;
}

/* Every row of the backend table (ids 1..300), a page of max_rows at a time, each page checked:
 * full but the last one when the cursor is a key, at most max_rows when a bucket; each row once;
 * the cursor of the kind given. Returns the rows read; *pages their pages. after: a buffer for
 * the cursor (its last value left there). */
static size_t read_pages(struct km_tables *t, uint32_t max_rows, char kind, uint8_t *after,
			 int *pages)
{
	Kmesh__Ipc__DumpReply d;
	uint8_t seen[301] = { 0 };
	size_t after_len = 0, n = 0;
	int more = 1;
	char err[256];

	*pages = 0;
	while (more) {
		assert_int_equal(km_tables_dump_page(t, KMESH__IPC__TABLE__TABLE_BACKEND, max_rows,
						     after, after_len, NULL, &d, err, sizeof(err)),
				 KMESH__IPC__CODE__OK);
		++*pages;
		more = d.truncated;
		assert_true(d.n_rows <= max_rows);
		if (kind == 'K' && more)
			assert_int_equal(d.n_rows, max_rows);
		for (size_t i = 0; i < d.n_rows; i++) {
			assert_true(d.rows[i]->backend->id >= 1 && d.rows[i]->backend->id <= 300);
			assert_int_equal(seen[d.rows[i]->backend->id]++, 0);
			n++;
		}
		assert_int_equal(d.next.len, more ? 5 : 0); /* 'K' and a 4-byte key, or 'B' and a bucket */
		if (more)
			assert_int_equal(d.next.data[0], kind);
		if (d.next.len)
			memcpy(after, d.next.data, d.next.len);
		after_len = d.next.len;
		km_tables_dump_free(&d);
		assert_true(*pages <= 100);
	}
	return n;
}

/* A table larger than one reply is read in pages (issue 47): a small page a key at a time,
 * exactly max_rows rows, named by its last key ('K'); a page of 64 rows or more of a hash table
 * by buckets, at most max_rows rows, named by the bucket the next one starts at ('B'). The table
 * here hashes with a zero seed (the same buckets every run) over 4,096 buckets: its 300 rows
 * share few. */
static void test_dump_pages(void **state)
{
	struct km_tables *t = *state;
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC | BPF_F_ZERO_SEED);
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, NULL, sizeof(struct km_backend_key),
				sizeof(struct km_backend_value), 4096, &o), saved = t->fd_backend;
	Kmesh__Ipc__DumpReply d;
	uint8_t after[KM_TABLES_ROW_BUF];
	int pages;
	char err[256];

	assert_true(fd >= 0);
	for (uint32_t id = 1; id <= 300; id++) {
		struct km_backend_key k = { .backend_id = id };
		struct km_backend_value v;

		memset(&v, 0, sizeof(v));
		assert_int_equal(km_addr_parse("10.9.0.1", &v.addr4), 0);
		v.addr4.bytes[14] = (uint8_t)(id >> 8);
		v.addr4.bytes[15] = (uint8_t)id;
		assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_ANY), 0);
	}
	t->fd_backend = fd;
	/* pages of 7 (by keys): 42 pages of 7 and one of 6; pages of 64 (by buckets): at most 64
	 * rows each; each row once, the last page not truncated */
	assert_int_equal(read_pages(t, 7, 'K', after, &pages), 300);
	assert_int_equal(pages, 43);
	assert_int_equal(read_pages(t, 64, 'B', after, &pages), 300);
	assert_true(pages >= 5 && pages <= 10);
	/* an 'after' that is no page's 'next', and a page of authz_stats */
	assert_int_equal(km_tables_dump_page(t, KMESH__IPC__TABLE__TABLE_BACKEND, 2, after, 3, NULL,
					     &d, err, sizeof(err)), BAD);
	assert_non_null(strstr(err, "not a page's 'next'"));
	after[0] = 'K';
	assert_int_equal(km_tables_dump_page(t, KMESH__IPC__TABLE__TABLE_BACKEND, 2, after, 4, NULL,
					     &d, err, sizeof(err)), BAD);
	assert_int_equal(km_tables_dump_page(t, KMESH__IPC__TABLE__TABLE_AUTHZ_STATS, 2, after, 4,
					     NULL, &d, err, sizeof(err)), BAD);
	/* packed as it is read (the map writer's dumps off the loop): the same rows, stats and next
	 * as the collected page, byte for byte once protobuf-c has read them; a byte budget ends a
	 * page early, never before its first row */
	{
		Kmesh__Ipc__TableStats st = KMESH__IPC__TABLE_STATS__INIT;
		Kmesh__Ipc__DumpReply *u;
		uint8_t *buf;
		size_t len, rows;

		st.ops_applied = 4242;
		assert_int_equal(km_tables_dump_page(t, KMESH__IPC__TABLE__TABLE_BACKEND, 3, NULL, 0,
						     NULL, &d, err, sizeof(err)), OK);
		assert_int_equal(km_tables_dump_pack(t, KMESH__IPC__TABLE__TABLE_BACKEND, 3, 1 << 20,
						     NULL, 0, NULL, &st, 16, &buf, &len, &rows, err,
						     sizeof(err)), OK);
		u = kmesh__ipc__dump_reply__unpack(NULL, len, buf + 16);
		assert_non_null(u);
		assert_int_equal(rows, 3);
		assert_int_equal(u->n_rows, 3);
		assert_true(u->truncated);
		assert_int_equal(u->stats->ops_applied, 4242);
		assert_int_equal(u->next.len, d.next.len);
		assert_memory_equal(u->next.data, d.next.data, d.next.len);
		for (size_t i = 0; i < 3; i++) {
			uint8_t a[256], b[256];
			size_t la = kmesh__ipc__table_op__pack(u->rows[i], a);

			assert_int_equal(kmesh__ipc__table_op__pack(d.rows[i], b), la);
			assert_memory_equal(a, b, la);
		}
		kmesh__ipc__dump_reply__free_unpacked(u, NULL);
		free(buf);
		km_tables_dump_free(&d);
		/* 1 byte of budget (past the 1 KiB the tail keeps): one row a page, and the next
		 * page goes on after it */
		assert_int_equal(km_tables_dump_pack(t, KMESH__IPC__TABLE__TABLE_BACKEND, 0, 1025, NULL,
						     0, NULL, &st, 0, &buf, &len, &rows, err,
						     sizeof(err)), OK);
		u = kmesh__ipc__dump_reply__unpack(NULL, len, buf);
		assert_true(u && u->n_rows == 1 && rows == 1 && u->truncated && u->next.len == 5);
		memcpy(after, u->next.data, 5);
		kmesh__ipc__dump_reply__free_unpacked(u, NULL);
		free(buf);
		assert_int_equal(km_tables_dump_pack(t, KMESH__IPC__TABLE__TABLE_BACKEND, 0, 1025, after,
						     5, NULL, &st, 0, &buf, &len, &rows, err,
						     sizeof(err)), OK);
		assert_int_equal(rows, 1);
		free(buf);
		assert_int_equal(km_tables_dump_pack(t, KMESH__IPC__TABLE__TABLE_AUTHZ_STATS, 0, 1 << 20,
						     NULL, 0, NULL, &st, 0, &buf, &len, &rows, err,
						     sizeof(err)), BAD);
	}
	/* cancelled: it stops (the map writer is stopping) */
	{
		int cancel = 1;

		assert_int_equal(km_tables_dump_page(t, KMESH__IPC__TABLE__TABLE_BACKEND, 0, NULL, 0,
						     &cancel, &d, err, sizeof(err)),
				 KMESH__IPC__CODE__INTERNAL);
		assert_int_equal(d.n_rows, 0);
	}
	t->fd_backend = saved;
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump_pages),
	};

	return cmocka_run_group_tests_name("dump", tests, setup, teardown);
}
