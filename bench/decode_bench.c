/* decode_bench.c — the baseline for the xDS push benchmark: on the very bytes istiod pushed,
 * how long does merely decoding take (protobuf unpack + validating every resource), and how long
 * decoding plus building the model and its table operations (no map writer), and the heap the
 * model then keeps; both reading the response in place and one resource at a time as the agent
 * does. Prints one JSON line with min/median/max over the repetitions. The model is built twice
 * each repetition: alone (the baseline push_cost holds ceilings on; with the address index the
 * model keeps for authorization and telemetry), and as the agent keeps it once a policy exists,
 * with authorization's per-workload records and identity rows (the *_full fields): what those
 * cost per resource, in time, heap and table operations.
 *   decode_bench RESPONSE_FILE [REPETITIONS] */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/sources/file_source.h"
#include "services/xds-agent/ads/resource_pb.h"
#include "services/xds-agent/ads/xds_apply.h"
#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/model/model.h"
#include "shared/latency.h"
#include "shared/log.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double decode_only(const uint8_t *buf, size_t len)
{
	uint64_t t0 = km_now_us();
	struct km_response_view v;
	Kmesh__Xds__Resource *r;

	if (km_response_view_init(&v, buf, len) != 0)
		return 0;
	while (km_response_view_next(&v, &r)) {
		struct km_service_res *s;
		struct km_workload_res *w;
		char *name, err[256];

		if (r && r->resource &&
		    km_pb_address(km_response_view_allocator(&v), r->resource->value.data,
				  r->resource->value.len, &s, &w, &name, err, sizeof(err)) == 0) {
			km_service_res_free(s);
			km_workload_res_free(w); /* name is the scratch block's */
		}
	}
	km_response_view_free(&v);
	return (double)(km_now_us() - t0) / 1000.0;
}

/* Heap bytes in use (glibc), to measure what the model keeps: the arena's chunks and the
 * chunks malloc mapped on their own (a large array lands in either, as glibc's threshold moves;
 * counting one alone lost the id table's 2.6 MB when it moved into one array). */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* full: with authorization's records and identity rows, as the agent builds it */
static double decode_and_model(const uint8_t *buf, size_t len, int full, size_t *ops,
			       size_t *model_bytes, size_t *resources)
{
	size_t heap0 = heap_in_use();
	uint64_t t0 = km_now_us();
	struct km_response_view v;
	struct km_oplist l;
	struct km_model m;
	struct km_xds_result res = { 0 };
	struct km_authz authz;
	double ms;

	km_oplist_init(&l);
	km_model_init(&m, &l, NULL);
	if (full) {
		km_authz_init(&authz, &l, "");
		km_model_set_authz(&m, &authz);
		authz.identities_on = 1; /* as once a policy exists (none: no identity rows) */
	}
	if (km_response_view_init(&v, buf, len) == 0) {
		km_xds_apply_address(&m, &v, NULL, NULL, &res);
		km_response_view_free(&v);
	}
	ms = (double)(km_now_us() - t0) / 1000.0;
	*ops = l.n;
	*resources = res.applied;
	km_oplist_free(&l); /* the agent hands ops on while it builds; only the model stays */
	km_oplist_init(&l);
	*model_bytes = heap_in_use() - heap0;
	km_model_free(&m);
	if (full)
		km_authz_free(&authz);
	km_oplist_free(&l);
	return ms;
}

int main(int argc, char **argv)
{
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	double dec[64], mod[64], full[64];
	size_t len, ops = 0, model_bytes = 0, resources = 0, ops_full = 0, bytes_full = 0;
	char err[256];
	uint8_t *buf;

	if (argc < 2 || reps < 1 || reps > 64) {
		fprintf(stderr, "usage: decode_bench RESPONSE_FILE [REPETITIONS<=64]\n");
		return 2;
	}
	km_log_set_level(KM_LOG_ERROR);
	buf = (uint8_t *)km_file_read_all(argv[1], 1u << 30, &len, err, sizeof(err));
	if (!buf) {
		fprintf(stderr, "decode_bench: %s\n", err);
		return 1;
	}
	for (int i = 0; i < reps; i++) {
		dec[i] = decode_only(buf, len);
		mod[i] = decode_and_model(buf, len, 0, &ops, &model_bytes, &resources);
		full[i] = decode_and_model(buf, len, 1, &ops_full, &bytes_full, &resources);
	}
	qsort(dec, (size_t)reps, sizeof(double), cmp);
	qsort(mod, (size_t)reps, sizeof(double), cmp);
	qsort(full, (size_t)reps, sizeof(double), cmp);
	printf("{\"bytes\": %zu, \"ops\": %zu, \"decode_ms\": [%.1f, %.1f, %.1f], "
	       "\"decode_model_ms\": [%.1f, %.1f, %.1f], \"model_bytes\": %zu, \"resources\": %zu, "
	       "\"ops_full\": %zu, \"decode_model_full_ms\": [%.1f, %.1f, %.1f], "
	       "\"model_full_bytes\": %zu}\n",
	       len, ops, dec[0], dec[reps / 2], dec[reps - 1], mod[0], mod[reps / 2], mod[reps - 1],
	       model_bytes, resources, ops_full, full[0], full[reps / 2], full[reps - 1], bytes_full);
	free(buf);
	return 0;
}
