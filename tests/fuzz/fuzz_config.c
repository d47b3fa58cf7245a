/* fuzz_config.c — libFuzzer target for the embedded-config decoder: arbitrary bytes as a JSON
 * document, and whatever decodes is applied to a model as a snapshot, twice (the second time
 * must be a no-op when nothing was rejected). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "services/xds-agent/sources/resource_json.h"
#include "services/xds-agent/sources/snapshot.h"
#include "shared/log.h"

static void apply(struct km_model *m, const uint8_t *data, size_t size)
{
	struct km_resource_set set;
	struct km_snapshot_stats st;
	char err[256];

	if (km_json_decode_document((const char *)data, size, &set, err, sizeof(err)) != 0)
		return;
	km_snapshot_apply(m, &set, &st);
	km_resource_set_free(&set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_oplist ops;
	struct km_model m;

	km_log_set_level(KM_LOG_ERROR);
	km_oplist_init(&ops);
	km_model_init(&m, &ops, NULL);
	apply(&m, data, size);
	km_oplist_clear(&ops);
	apply(&m, data, size);
	if (ops.n != 0 && !ops.oom) {
		struct km_resource_set set;
		char err[256];

		/* allowed only if some resource was rejected (then removals were skipped) */
		if (km_json_decode_document((const char *)data, size, &set, err, sizeof(err)) == 0) {
			if (set.n_errors == 0)
				abort(); /* the same file applied twice changed the tables */
			km_resource_set_free(&set);
		}
	}
	km_model_free(&m);
	km_oplist_free(&ops);
	return 0;
}
