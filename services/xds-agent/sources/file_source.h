/* file_source.h — the embedded configuration source: a JSON file of workload-API resources,
 * read and decoded off the loop thread (libuv work queue), applied to the model as a delta on
 * the loop thread, and re-read whenever it changes (fs events on its directory, so editors that
 * replace the file by rename are seen, plus a slow stat poll as a backstop). */
#ifndef KM_XDS_FILE_SOURCE_H
#define KM_XDS_FILE_SOURCE_H

#include <stddef.h>
#include <uv.h>

#include "services/xds-agent/model/model.h"
#include "services/xds-agent/sources/resource_json.h"

struct km_file_source;
/* Called on the loop thread after a reload changed the model (ops are in the model's oplist). */
typedef void (*km_file_applied_cb)(struct km_file_source *fs, void *arg);

struct km_file_source {
	uv_loop_t *loop;
	char path[4096];
	char dir[4096];
	char base[256];
	size_t max_bytes;
	struct km_model *model;
	km_file_applied_cb on_applied;
	void *arg;
	uv_fs_event_t event;
	uv_fs_poll_t poll;
	uv_timer_t debounce;
	uv_work_t work;
	int work_busy, reload_again, stopping;
	/* filled by the worker */
	struct km_resource_set set;
	int rc;
	char err[512];
	unsigned long generation;
};

/* Read, decode and apply the file once, synchronously (start-up). Returns 0 or -1 (logged). */
int km_file_source_load(struct km_file_source *fs, const char *path, size_t max_bytes,
			struct km_model *model);
/* Start watching (after a successful load). */
int km_file_source_watch(struct km_file_source *fs, uv_loop_t *loop, km_file_applied_cb cb,
			 void *arg);
/* Close the watchers; a reload in progress is discarded when it finishes. */
void km_file_source_stop(struct km_file_source *fs);

/* Read a whole file of at most max_bytes. Returns a malloc'd buffer or NULL with err filled. */
char *km_file_read_all(const char *path, size_t max_bytes, size_t *len, char *err, size_t errlen);

#endif
