/* table_ops_bench.c — table operations per second through a running map writer, against the raw
 * bpf() batch rate on the same machine in the same run.
 *
 * The ops are those of a full sync: N backends, N/E services of E endpoints each, N endpoints, a
 * frontend per service VIP and per workload address (3N + 2N/E upserts), sent as TableBatch
 * requests of --batch ops with --in-flight requests outstanding (as the xDS agent sends them),
 * then deleted again in reverse reference order. Every frame is packed before the clock starts:
 * what is timed is the map writer (decode, validate, write) and the socket.
 *
 * The baseline writes the very same key and value bytes (read back from the map writer's pinned
 * maps) into fresh maps created with the same type, sizes and flags, with BPF_MAP_UPDATE_BATCH
 * and BPF_MAP_DELETE_BATCH in runs of --batch rows. Variants are interleaved per repetition.
 * Prints one markdown section. Needs root (CAP_BPF), and a map writer sized for the rows. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "ipc/client_sync.h"
#include "ipc/frame.h"
#include "shared/latency.h"

#define MAX_REPS 32

enum { T_BACKEND, T_SERVICE, T_ENDPOINT, T_FRONTEND, T_COUNT }; /* reference order */
static const char *const map_names[T_COUNT] = { "km_backend", "km_service", "km_endpoint",
						 "km_frontend" };

struct opts {
	const char *socket, *bpffs_dir;
	unsigned workloads, per_service, batch, in_flight, reps;
};

struct frames { /* packed request frames, header included */
	uint8_t **buf;
	size_t *len, n;
};

/* One table's rows as bytes, as the kernel holds them (the baseline's input). */
struct rows {
	struct bpf_map_info info;
	uint8_t *keys, *values;
	__u32 n;
	int fd; /* the baseline's own map */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "table_ops_bench: %s: %s\n", what, strerror(err));
	exit(1);
}

/* ---- the ops -------------------------------------------------------------------------------- */

struct op_store { /* every op and row of one full sync, as protobuf-c structs */
	Kmesh__Ipc__TableOp *ops;
	Kmesh__Ipc__TableOp **upsert_order, **delete_order;
	Kmesh__Ipc__BackendRow *backends;
	Kmesh__Ipc__ServiceRow *services;
	Kmesh__Ipc__EndpointRow *endpoints;
	Kmesh__Ipc__FrontendRow *frontends;
	uint8_t (*addr)[4]; /* a workload's address, then a service's VIP */
	ProtobufCBinaryData *addr_bin;
	uint32_t *counts;
	size_t n;
};

static void build_ops(struct op_store *s, unsigned workloads, unsigned per_service)
{
	unsigned services = (workloads + per_service - 1) / per_service;
	size_t n = (size_t)workloads * 3 + (size_t)services * 2, k = 0;

	s->n = n;
	s->ops = calloc(n, sizeof(*s->ops));
	s->upsert_order = calloc(n, sizeof(*s->upsert_order));
	s->delete_order = calloc(n, sizeof(*s->delete_order));
	s->backends = calloc(workloads, sizeof(*s->backends));
	s->services = calloc(services, sizeof(*s->services));
	s->endpoints = calloc(workloads, sizeof(*s->endpoints));
	s->frontends = calloc((size_t)workloads + services, sizeof(*s->frontends));
	s->addr = calloc((size_t)workloads + services, sizeof(*s->addr));
	s->addr_bin = calloc((size_t)workloads + services, sizeof(*s->addr_bin));
	s->counts = calloc(services, sizeof(*s->counts));
	if (!s->ops || !s->upsert_order || !s->delete_order || !s->backends || !s->services ||
	    !s->endpoints || !s->frontends || !s->addr || !s->addr_bin || !s->counts)
		die("allocating the ops", ENOMEM);
	for (unsigned i = 0; i < workloads + services; i++) {
		unsigned host = i < workloads ? i : i - workloads; /* 10.64.0.0/14 pods, 10.96/14 VIPs */

		s->addr[i][0] = 10;
		s->addr[i][1] = (uint8_t)((i < workloads ? 64 : 96) + (host >> 16));
		s->addr[i][2] = (uint8_t)(host >> 8);
		s->addr[i][3] = (uint8_t)host;
		s->addr_bin[i] = (ProtobufCBinaryData){ .len = 4, .data = s->addr[i] };
	}
#define NEXT_OP(kind_row, field, row)                                                    \
	do {                                                                              \
		Kmesh__Ipc__TableOp *op = &s->ops[k++];                                   \
		kmesh__ipc__table_op__init(op);                                           \
		op->kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;                            \
		op->row_case = KMESH__IPC__TABLE_OP__ROW_##kind_row;                      \
		op->field = (row);                                                        \
	} while (0)
	for (unsigned i = 0; i < workloads; i++) {
		Kmesh__Ipc__BackendRow *b = &s->backends[i];

		kmesh__ipc__backend_row__init(b);
		b->id = i + 1;
		b->n_addresses = 1;
		b->addresses = &s->addr_bin[i];
		NEXT_OP(BACKEND, backend, b);
	}
	for (unsigned i = 0; i < workloads; i++) {
		Kmesh__Ipc__EndpointRow *e = &s->endpoints[i];

		kmesh__ipc__endpoint_row__init(e);
		e->service_id = i / per_service + 1;
		e->index = i % per_service;
		e->backend_id = i + 1;
		s->counts[i / per_service]++;
		NEXT_OP(ENDPOINT, endpoint, e);
	}
	for (unsigned i = 0; i < services; i++) {
		Kmesh__Ipc__ServiceRow *r = &s->services[i];

		kmesh__ipc__service_row__init(r);
		r->id = i + 1;
		r->n_endpoint_count = 1;
		r->endpoint_count = &s->counts[i];
		NEXT_OP(SERVICE, service, r);
	}
	for (unsigned i = 0; i < workloads + services; i++) {
		Kmesh__Ipc__FrontendRow *f = &s->frontends[i];

		kmesh__ipc__frontend_row__init(f);
		f->address = s->addr_bin[i];
		f->protocol = 6;
		if (i < workloads) {
			f->kind = KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_WORKLOAD;
			f->upstream_id = i + 1;
		} else {
			f->kind = KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_SERVICE;
			f->upstream_id = i - workloads + 1;
			f->port = 80;
			f->target_port = 8080;
		}
		NEXT_OP(FRONTEND, frontend, f);
	}
#undef NEXT_OP
	/* upserts: backends, endpoints, services (a count only exposes written endpoints),
	 * frontends; deletes: the reverse */
	for (size_t i = 0; i < n; i++) {
		s->upsert_order[i] = &s->ops[i];
		s->delete_order[i] = &s->ops[n - 1 - i];
	}
}

/* Pack ops in requests of batch ops, with request ids first_id, first_id + 1, ... */
static void pack_frames(struct frames *f, Kmesh__Ipc__TableOp **ops, size_t n, unsigned batch,
			uint64_t first_id)
{
	f->n = (n + batch - 1) / batch;
	f->buf = calloc(f->n, sizeof(*f->buf));
	f->len = calloc(f->n, sizeof(*f->len));
	if (!f->buf || !f->len)
		die("allocating frames", ENOMEM);
	for (size_t i = 0; i < f->n; i++) {
		km_envelope env = KMESH__IPC__ENVELOPE__INIT;
		Kmesh__Ipc__TableBatch tb = KMESH__IPC__TABLE_BATCH__INIT;
		size_t len;
		uint8_t *body;

		tb.ops = ops + i * batch;
		tb.n_ops = n - i * batch < batch ? n - i * batch : batch;
		env.request_id = first_id + i;
		env.body_case = KMESH__IPC__ENVELOPE__BODY_BATCH;
		env.batch = &tb;
		body = km_msg_pack(&env, &len);
		f->buf[i] = malloc(len + KM_FRAME_HEADER);
		if (!body || !f->buf[i])
			die("packing a batch", ENOMEM);
		km_frame_header(f->buf[i], (uint32_t)len);
		memcpy(f->buf[i] + KM_FRAME_HEADER, body, len);
		f->len[i] = len + KM_FRAME_HEADER;
		free(body);
	}
}

static void set_delete(Kmesh__Ipc__TableOp **ops, size_t n, int del)
{
	for (size_t i = 0; i < n; i++)
		ops[i]->kind = del ? KMESH__IPC__TABLE_OP__KIND__DELETE : KMESH__IPC__TABLE_OP__KIND__UPSERT;
}

static void expect_ok(km_envelope *rep, size_t frame)
{
	if (rep->reply->code != KMESH__IPC__CODE__OK) {
		fprintf(stderr, "table_ops_bench: batch %zu refused: %s: %s\n", frame,
			km_msg_code_name(rep->reply->code), rep->reply->message);
		exit(1);
	}
}

/* Send every frame with at most in_flight unanswered; returns the elapsed seconds. */
static double send_all(struct km_sync_client *cl, const struct frames *f, unsigned in_flight)
{
	uint64_t first = cl->next_id, t0 = km_now_us();
	size_t sent = 0, done = 0;
	int err;

	while (done < f->n) {
		km_envelope *rep;

		while (sent < f->n && sent - done < in_flight)
			if ((err = km_sync_send_packed(cl, f->buf[sent], f->len[sent])) != 0)
				die("sending a batch", -err);
			else
				sent++;
		if ((err = km_sync_recv(cl, first + done, &rep)) != 0)
			die("reading a batch reply", -err);
		expect_ok(rep, done);
		km_msg_free(rep);
		done++;
	}
	return (double)(km_now_us() - t0) / 1e6;
}

/* ---- the baseline --------------------------------------------------------------------------- */

static void read_back(struct rows *r, const char *bpffs_dir, const char *name)
{
	char path[512];
	__u32 info_len = sizeof(r->info);
	uint8_t key[64], next[64];
	int fd, have = 0;

	snprintf(path, sizeof(path), "%s/maps/%s", bpffs_dir, name);
	if ((fd = bpf_obj_get(path)) < 0)
		die(path, errno);
	memset(&r->info, 0, sizeof(r->info));
	if (bpf_obj_get_info_by_fd(fd, &r->info, &info_len) != 0)
		die("reading map info", errno);
	if (r->info.key_size > sizeof(key))
		die("key size", E2BIG);
	r->keys = malloc((size_t)r->info.max_entries * r->info.key_size);
	r->values = malloc((size_t)r->info.max_entries * r->info.value_size);
	if (!r->keys || !r->values)
		die("allocating rows", ENOMEM);
	r->n = 0;
	while (bpf_map_get_next_key(fd, have ? key : NULL, next) == 0) {
		memcpy(key, next, r->info.key_size);
		have = 1;
		memcpy(r->keys + (size_t)r->n * r->info.key_size, key, r->info.key_size);
		if (bpf_map_lookup_elem(fd, key, r->values + (size_t)r->n * r->info.value_size) != 0)
			die("reading a row", errno);
		r->n++;
	}
	close(fd);
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = r->info.map_flags);
	r->fd = bpf_map_create(r->info.type, "bench_base", r->info.key_size, r->info.value_size,
			       r->info.max_entries, &o);
	if (r->fd < 0)
		die("creating the baseline map", errno);
}

/* Write (or delete) every row of every table in reference order (reversed for deletes). */
static double raw_pass(struct rows *r, unsigned batch, int del)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bo, .elem_flags = 0);
	uint64_t t0 = km_now_us();

	for (int ti = 0; ti < T_COUNT; ti++) {
		struct rows *t = &r[del ? T_COUNT - 1 - ti : ti];

		for (__u32 i = 0; i < t->n; i += batch) {
			__u32 n = t->n - i < batch ? t->n - i : batch;
			const uint8_t *k = t->keys + (size_t)i * t->info.key_size;
			int rc = del ? bpf_map_delete_batch(t->fd, k, &n, &bo)
				     : bpf_map_update_batch(t->fd, k, t->values + (size_t)i * t->info.value_size,
							    &n, &bo);

			if (rc != 0)
				die(del ? "bpf_map_delete_batch" : "bpf_map_update_batch", errno);
		}
	}
	return (double)(km_now_us() - t0) / 1e6;
}

/* ---- main ----------------------------------------------------------------------------------- */

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: table_ops_bench --socket PATH --bpffs-dir DIR [--workloads N] [--per-service E]\n"
		   "                       [--batch B] [--in-flight K] [--reps R]\n"
		   "Table ops/s through a running map writer vs. raw bpf() batches; prints markdown.\n");
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "socket", 1, 0, 's' }, { "bpffs-dir", 1, 0, 'd' }, { "workloads", 1, 0, 'w' },
		{ "per-service", 1, 0, 'e' }, { "batch", 1, 0, 'b' }, { "in-flight", 1, 0, 'k' },
		{ "reps", 1, 0, 'r' }, { "help", 0, 0, 'h' }, { 0 },
	};
	int c;

	*o = (struct opts){ .workloads = 100000, .per_service = 100, .batch = 4096, .in_flight = 4,
			    .reps = 5 };
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->socket = optarg; break;
		case 'd': o->bpffs_dir = optarg; break;
		case 'w': o->workloads = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'e': o->per_service = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'b': o->batch = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'k': o->in_flight = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'r': o->reps = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (!o->socket || !o->bpffs_dir || !o->workloads || !o->per_service || !o->batch ||
	    !o->in_flight || !o->reps || o->reps > MAX_REPS) {
		usage(stderr);
		exit(2);
	}
}

static void row(const char *name, double *secs, unsigned reps, double ops, double base_median)
{
	double med;

	qsort(secs, reps, sizeof(*secs), cmp);
	med = ops / secs[reps / 2];
	printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", name, ops / secs[reps - 1] / 1e6, med / 1e6,
	       ops / secs[0] / 1e6, base_median > 0 ? med / base_median : 1.0);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct op_store s;
	struct frames up, del;
	struct km_sync_client cl;
	struct rows r[T_COUNT];
	double t_up[MAX_REPS], t_del[MAX_REPS], t_raw_up[MAX_REPS], t_raw_del[MAX_REPS];
	size_t raw_rows = 0;
	char msg[256];
	int err;

	parse(argc, argv, &o);
	build_ops(&s, o.workloads, o.per_service);
	if ((err = km_sync_connect(&cl, o.socket, KMESH__IPC__ROLE__ROLE_XDS, "table_ops_bench", 30000,
				   NULL, msg, sizeof(msg))) != 0) {
		fprintf(stderr, "table_ops_bench: cannot connect to %s: %s %s\n", o.socket,
			strerror(-err), msg);
		return 1;
	}
	/* requests alternate upsert pass, delete pass: their ids are known in advance */
	for (unsigned rep = 0; rep < o.reps; rep++) {
		if (rep == 0) {
			pack_frames(&up, s.upsert_order, s.n, o.batch, cl.next_id);
		} else { /* same bytes, new ids: repack (cheap next to the pass, and untimed) */
			for (size_t i = 0; i < up.n; i++)
				free(up.buf[i]);
			free(up.buf);
			free(up.len);
			set_delete(s.upsert_order, s.n, 0);
			pack_frames(&up, s.upsert_order, s.n, o.batch, cl.next_id);
		}
		t_up[rep] = send_all(&cl, &up, o.in_flight);
		if (rep == 0) {
			for (int t = 0; t < T_COUNT; t++) {
				read_back(&r[t], o.bpffs_dir, map_names[t]);
				raw_rows += r[t].n;
			}
			if (raw_rows != s.n) {
				fprintf(stderr, "table_ops_bench: %zu rows in the maps after %zu upserts "
						"(was the map writer fresh?)\n", raw_rows, s.n);
				return 1;
			}
		}
		set_delete(s.upsert_order, s.n, 1);
		pack_frames(&del, s.delete_order, s.n, o.batch, cl.next_id);
		t_del[rep] = send_all(&cl, &del, o.in_flight);
		for (size_t i = 0; i < del.n; i++)
			free(del.buf[i]);
		free(del.buf);
		free(del.len);
		t_raw_up[rep] = raw_pass(r, o.batch, 0);
		t_raw_del[rep] = raw_pass(r, o.batch, 1);
	}
	km_sync_close(&cl);

	qsort(t_raw_up, o.reps, sizeof(double), cmp);
	qsort(t_raw_del, o.reps, sizeof(double), cmp);
	printf("## Table operations through the map writer: %zu ops of a full sync\n\n", s.n);
	printf("Command: `make bench` (runs `bench/table_ops.sh`: `build/bench/table_ops_bench "
	       "--workloads %u --per-service %u --batch %u --in-flight %u --reps %u`).\n",
	       o.workloads, o.per_service, o.batch, o.in_flight, o.reps);
	printf("%u backends, %u services of %u endpoints, %u endpoints and %zu frontends, as\n"
	       "TableBatch requests of %u ops with %u in flight (as the xDS agent sends them), then\n"
	       "deleted in reverse order; frames packed before the clock starts. Baseline in the same\n"
	       "run: the same key and value bytes written with BPF_MAP_UPDATE_BATCH and removed with\n"
	       "BPF_MAP_DELETE_BATCH (runs of %u) into maps of the same type, sizes and flags.\n"
	       "%u repetitions, interleaved; Mops/s min / median / max; ratio = median over the\n"
	       "raw median.\n\n",
	       o.workloads, (o.workloads + o.per_service - 1) / o.per_service, o.per_service,
	       o.workloads, s.n - 2 * (size_t)o.workloads - (s.n - 3 * (size_t)o.workloads) / 2, o.batch, o.in_flight, o.batch, o.reps);
	printf("| pass | min | median | max | ratio | \n|---|---|---|---|---|\n");
	row("raw bpf() batch: insert (baseline)", t_raw_up, o.reps, (double)s.n, 0);
	row("map writer: upsert (insert)", t_up, o.reps, (double)s.n, (double)s.n / t_raw_up[o.reps / 2]);
	row("raw bpf() batch: delete (baseline)", t_raw_del, o.reps, (double)s.n, 0);
	row("map writer: delete", t_del, o.reps, (double)s.n, (double)s.n / t_raw_del[o.reps / 2]);
	printf("\nGoal: >= 1 Mops/s through the map writer.\n");
	return 0;
}
