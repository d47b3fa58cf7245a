/* kmesh-dumpload.c — the load of tests/security/dump_stall_test.sh (issue 47): a large table, a
 * full dump of it, and the enrollments a node makes meanwhile, each a real peer of the map
 * writer on its socket:
 *   fill   --socket S --count N             N backend rows (the xds role), in batches of 20,000
 *   dump   --socket S [--pipeline K]        read the backend table whole, a page after another
 *                                           (admin role); with K, K requests for the first page
 *                                           sent at once, then their replies read: prints
 *                                           "rows R pages P seconds T"
 *   probe  --socket S --netns PATH --while-file F [--interval-ms M]
 *                                           enroll PATH again and again (the cni role, one
 *                                           connection) every M ms (default 5) while F exists:
 *                                           prints "enrollments N p50 A p99 B max C ms"
 * Not a product command. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc/client_sync.h"
#include "shared/addr.h"
#include "shared/netns.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int connect_as(struct km_sync_client *cl, const char *socket, Kmesh__Ipc__Role role)
{
	Kmesh__Ipc__Code code;
	char msg[256];
	int err = km_sync_connect(cl, socket, role, "kmesh-dumpload", 60000, &code, msg, sizeof(msg));

	if (err)
		fprintf(stderr, "kmesh-dumpload: hello as %s: %s%s%s\n", km_msg_role_name(role),
			strerror(-err), *msg ? ": " : "", msg);
	return err;
}

static int fill(const char *socket, unsigned long count)
{
	enum { BATCH = 20000 };
	static Kmesh__Ipc__TableOp ops[BATCH], *op_ptrs[BATCH];
	static Kmesh__Ipc__BackendRow rows[BATCH];
	static uint8_t addr[BATCH][4];
	static ProtobufCBinaryData addrs[BATCH];
	struct km_sync_client cl;
	unsigned long id = 1;

	if (connect_as(&cl, socket, KMESH__IPC__ROLE__ROLE_XDS))
		return 1;
	while (id <= count) {
		km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
		Kmesh__Ipc__TableBatch b = KMESH__IPC__TABLE_BATCH__INIT;
		size_t n = 0;
		int err;

		for (; n < BATCH && id <= count; n++, id++) {
			kmesh__ipc__table_op__init(&ops[n]);
			kmesh__ipc__backend_row__init(&rows[n]);
			ops[n].kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
			ops[n].row_case = KMESH__IPC__TABLE_OP__ROW_BACKEND;
			ops[n].backend = &rows[n];
			rows[n].id = (uint32_t)id;
			/* 10.64.0.0/10: an address per row, never a destination of any traffic */
			addr[n][0] = 10;
			addr[n][1] = (uint8_t)(64 + (id >> 16));
			addr[n][2] = (uint8_t)(id >> 8);
			addr[n][3] = (uint8_t)id;
			addrs[n].data = addr[n];
			addrs[n].len = 4;
			rows[n].n_addresses = 1;
			rows[n].addresses = &addrs[n];
			op_ptrs[n] = &ops[n];
		}
		b.n_ops = n;
		b.ops = op_ptrs;
		req.body_case = KMESH__IPC__ENVELOPE__BODY_BATCH;
		req.batch = &b;
		if ((err = km_sync_call(&cl, &req, &rep)) != 0) {
			fprintf(stderr, "kmesh-dumpload: batch: %s\n", strerror(-err));
			return 1;
		}
		if (rep->reply->code != KMESH__IPC__CODE__OK) {
			fprintf(stderr, "kmesh-dumpload: batch: %s: %s\n",
				km_msg_code_name(rep->reply->code), rep->reply->message);
			km_msg_free(rep);
			return 1;
		}
		km_msg_free(rep);
	}
	km_sync_close(&cl);
	printf("filled %lu backend rows\n", count);
	return 0;
}

/* One dump request of the backend table after `after` (len 0: from the start). */
static int dump_send(struct km_sync_client *cl, const uint8_t *after, size_t len, uint64_t *id)
{
	km_envelope req = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__DumpRequest d = KMESH__IPC__DUMP_REQUEST__INIT;
	int err;

	d.table = KMESH__IPC__TABLE__TABLE_BACKEND;
	d.after.data = (uint8_t *)after;
	d.after.len = len;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_DUMP;
	req.dump = &d;
	err = km_sync_send(cl, &req);
	*id = req.request_id;
	return err;
}

static int dump(const char *socket, int pipeline)
{
	struct km_sync_client cl;
	uint8_t after[64];
	size_t after_len = 0, rows = 0, pages = 0;
	double t0 = now_ms();
	uint64_t ids[256];
	int more = 1;

	if (pipeline > 256)
		pipeline = 256;
	if (connect_as(&cl, socket, KMESH__IPC__ROLE__ROLE_ADMIN))
		return 1;
	cl.max_frame = 256u << 20;
	while (more) {
		int k = pipeline > 0 ? pipeline : 1, err;

		for (int i = 0; i < k; i++)
			if ((err = dump_send(&cl, after, after_len, &ids[i])) != 0) {
				fprintf(stderr, "kmesh-dumpload: dump: %s\n", strerror(-err));
				return 1;
			}
		for (int i = 0; i < k; i++) {
			km_envelope *rep;
			const Kmesh__Ipc__DumpReply *r;

			if ((err = km_sync_recv(&cl, ids[i], &rep)) != 0) {
				fprintf(stderr, "kmesh-dumpload: dump reply: %s\n", strerror(-err));
				return 1;
			}
			if (rep->reply->body_case != KMESH__IPC__REPLY__BODY_DUMP) {
				fprintf(stderr, "kmesh-dumpload: dump: %s: %s\n",
					km_msg_code_name(rep->reply->code), rep->reply->message);
				km_msg_free(rep);
				return 1;
			}
			r = rep->reply->dump;
			rows += r->n_rows;
			pages++;
			more = r->truncated && r->next.len && r->next.len <= sizeof(after);
			if (more) {
				memcpy(after, r->next.data, r->next.len);
				after_len = r->next.len;
			}
			km_msg_free(rep);
		}
		if (pipeline > 0)
			break; /* the same first page K times */
	}
	km_sync_close(&cl);
	printf("rows %zu pages %zu seconds %.2f\n", rows, pages, (now_ms() - t0) / 1e3);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int probe(const char *socket, const char *netns, const char *while_file, int interval_ms)
{
	struct km_sync_client cl;
	struct km_addr addrs[KM_ENROLL_MAX_ADDRS];
	struct km_enroll_addrs buf;
	Kmesh__Ipc__Enroll e = KMESH__IPC__ENROLL__INIT;
	uint64_t cookie;
	char why[512];
	size_t n, got = 0, cap = 100000;
	double *lat = malloc(cap * sizeof(*lat));

	if (!lat || connect_as(&cl, socket, KMESH__IPC__ROLE__ROLE_CNI))
		return 1;
	if (km_netns_identity(netns, &cookie, addrs, KM_ENROLL_MAX_ADDRS, &n, why, sizeof(why)) != 0) {
		fprintf(stderr, "kmesh-dumpload: %s\n", why);
		return 1;
	}
	km_msg_enroll_set(&e, &buf, cookie, addrs, n);
	e.pod = "dumpload/probe";
	e.netns_path = (char *)netns;
	while (access(while_file, F_OK) == 0 && got < cap) {
		km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
		double t0 = now_ms();
		int err;

		req.body_case = KMESH__IPC__ENVELOPE__BODY_ENROLL;
		req.enroll = &e;
		if ((err = km_sync_call(&cl, &req, &rep)) != 0) {
			fprintf(stderr, "kmesh-dumpload: enroll: %s\n", strerror(-err));
			return 1;
		}
		lat[got++] = now_ms() - t0;
		if (rep->reply->code != KMESH__IPC__CODE__OK) {
			fprintf(stderr, "kmesh-dumpload: enroll: %s: %s\n",
				km_msg_code_name(rep->reply->code), rep->reply->message);
			km_msg_free(rep);
			return 1;
		}
		km_msg_free(rep);
		usleep((useconds_t)interval_ms * 1000);
	}
	km_sync_close(&cl);
	if (!got) {
		printf("enrollments 0\n");
		return 1;
	}
	qsort(lat, got, sizeof(*lat), cmp_double);
	printf("enrollments %zu p50 %.2f p99 %.2f max %.2f ms\n", got, lat[got / 2],
	       lat[got * 99 / 100], lat[got - 1]);
	free(lat);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "", *socket = NULL, *netns = NULL, *flag = NULL;
	unsigned long count = 0;
	int pipeline = 0, interval = 5;

	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--socket"))
			socket = argv[i + 1];
		else if (!strcmp(argv[i], "--count"))
			count = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--pipeline"))
			pipeline = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--netns"))
			netns = argv[i + 1];
		else if (!strcmp(argv[i], "--while-file"))
			flag = argv[i + 1];
		else if (!strcmp(argv[i], "--interval-ms"))
			interval = atoi(argv[i + 1]);
	}
	if (socket && !strcmp(cmd, "fill") && count)
		return fill(socket, count);
	if (socket && !strcmp(cmd, "dump"))
		return dump(socket, pipeline);
	if (socket && !strcmp(cmd, "probe") && netns && flag)
		return probe(socket, netns, flag, interval);
	fprintf(stderr, "usage: kmesh-dumpload fill --socket S --count N\n"
			"       kmesh-dumpload dump --socket S [--pipeline K]\n"
			"       kmesh-dumpload probe --socket S --netns PATH --while-file F "
			"[--interval-ms M]\n");
	return 2;
}
