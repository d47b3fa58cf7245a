/* main.c — kmesh-xds-agent: turns Istio workload-API resources into table operations for the
 * map writer. Runs with no privileges. Today its source is the embedded configuration file;
 * Delta xDS to istiod joins it. Flags and wiring only. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "services/xds-agent/file_source.h"
#include "services/xds-agent/model.h"
#include "services/xds-agent/oplist.h"
#include "services/xds-agent/writer_link.h"
#include "shared/log.h"
#include "shared/options.h"
#include "shared/signals.h"

#define RESYNC_AFTER_REFUSAL_MS 5000

struct agent {
	uv_loop_t *loop;
	struct km_oplist ops;
	struct km_model model;
	struct km_file_source file;
	struct km_writer_link link;
	struct km_signals signals;
	uv_timer_t resync;
};

static void on_resync_timer(uv_timer_t *t);

/* Hand whatever the model emitted to the map writer (or drop it: a reconnect replays all). */
static void submit(struct agent *a)
{
	if (a->ops.oom) {
		km_error("out of memory building table operations; a full resync follows");
		km_oplist_clear(&a->ops);
		a->ops.oom = 0;
		uv_timer_start(&a->resync, on_resync_timer, RESYNC_AFTER_REFUSAL_MS, 0);
		return;
	}
	km_writer_link_submit(&a->link, &a->ops);
	km_oplist_clear(&a->ops);
}

static void replay(struct agent *a)
{
	km_oplist_clear(&a->ops);
	km_model_replay(&a->model);
	km_info("sending the whole model to the map writer: %zu ops", a->ops.n);
	submit(a);
}

static void on_ready(void *arg)
{
	replay(arg);
}

static void on_synced(void *arg)
{
	struct agent *a = arg;

	km_info("in sync with the map writer (%llu ops applied so far)",
		(unsigned long long)a->link.ops_acked);
}

static void on_resync_timer(uv_timer_t *t)
{
	struct agent *a = t->data;

	if (km_writer_link_ready(&a->link))
		replay(a);
}

static void on_refused(void *arg)
{
	struct agent *a = arg;

	/* Rows after a refused op were not written; rewrite everything once the cause may have
	 * gone (e.g. a table was enlarged). Upserts are idempotent. */
	if (!uv_is_active((uv_handle_t *)&a->resync))
		uv_timer_start(&a->resync, on_resync_timer, RESYNC_AFTER_REFUSAL_MS, 0);
}

static void on_file_applied(struct km_file_source *fs, void *arg)
{
	(void)fs;
	submit(arg);
}

static void on_shutdown(void *arg, int signum)
{
	struct agent *a = arg;

	(void)signum;
	km_file_source_stop(&a->file);
	km_writer_link_stop(&a->link);
	uv_close((uv_handle_t *)&a->resync, NULL);
	km_signals_close(&a->signals);
}

int main(int argc, char **argv)
{
	static struct agent a;
	const char *config = NULL, *socket_path = "/run/kmesh/map-writer.sock", *level = NULL;
	uint64_t max_config = 64u << 20, batch_ops = 4096;
	const struct km_option opts[] = {
		{ "config-file", KM_OPT_STRING, &config, "PATH",
		  "JSON file of Istio workload-API resources (Service, Workload), watched for changes",
		  "KMESH_CONFIG_FILE" },
		{ "map-writer-socket", KM_OPT_STRING, &socket_path, "PATH",
		  "the map writer's Unix socket", "KMESH_MAP_WRITER_SOCKET" },
		{ "max-config-bytes", KM_OPT_UINT, &max_config, "BYTES",
		  "largest configuration file accepted", "KMESH_MAX_CONFIG_BYTES", 1024, 1u << 30 },
		{ "batch-ops", KM_OPT_UINT, &batch_ops, "N",
		  "table operations per message to the map writer", "KMESH_BATCH_OPS", 1, 65536 },
		{ "log-level", KM_OPT_FUNC, &level, "LEVEL", "error, warn, info (default) or debug",
		  "KMESH_LOG_LEVEL", 0, 0, km_option_log_level },
		{ 0 },
	};
	int rc;

	km_log_init("kmesh-xds-agent");
	rc = km_options_parse(opts, argc, argv, "--config-file PATH [OPTIONS]",
			      "Turns Istio workload-API resources into load-balancing table operations "
			      "and sends them to\nkmesh-map-writer. Needs no privileges.",
			      NULL);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (!config) {
		fprintf(stderr, "%s: --config-file is required (see --help)\n", argv[0]);
		return 2;
	}
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	km_oplist_init(&a.ops);
	km_model_init(&a.model, &a.ops, NULL);
	if (km_file_source_load(&a.file, config, (size_t)max_config, &a.model) != 0)
		return 1;
	km_oplist_clear(&a.ops); /* the first connection replays the whole model */

	a.loop = uv_default_loop();
	uv_timer_init(a.loop, &a.resync);
	a.resync.data = &a;
	{
		const struct km_writer_link_cbs cbs = { on_ready, on_synced, on_refused };

		if (km_signals_init(a.loop, &a.signals, on_shutdown, &a) != 0 ||
		    km_file_source_watch(&a.file, a.loop, on_file_applied, &a) != 0 ||
		    km_writer_link_start(&a.link, a.loop, socket_path, (size_t)batch_ops, &cbs, &a) != 0)
			return 1;
	}
	uv_run(a.loop, UV_RUN_DEFAULT);
	km_info("stopped");
	km_model_free(&a.model);
	km_oplist_free(&a.ops);
	uv_loop_close(a.loop);
	return 0;
}
