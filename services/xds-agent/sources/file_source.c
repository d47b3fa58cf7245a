/* file_source.c — the watched JSON configuration file (see file_source.h). */
#include "services/xds-agent/sources/file_source.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "services/xds-agent/sources/snapshot.h"
#include "shared/log.h"

#define DEBOUNCE_MS 50
#define POLL_MS 2000

char *km_file_read_all(const char *path, size_t max_bytes, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	char *buf;
	size_t have = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", path);
		close(fd);
		return NULL;
	}
	if ((size_t)st.st_size > max_bytes) {
		snprintf(err, errlen, "%s is %lld bytes, more than the limit of %zu (--max-config-bytes)",
			 path, (long long)st.st_size, max_bytes);
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory reading %s", path);
		close(fd);
		return NULL;
	}
	while (have < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + have, (size_t)st.st_size - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the file shrank while being read: use what was there */
		have += (size_t)n;
	}
	close(fd);
	buf[have] = '\0';
	*len = have;
	return buf;
}

static int read_and_decode(struct km_file_source *fs)
{
	size_t len = 0;
	char *text = km_file_read_all(fs->path, fs->max_bytes, &len, fs->err, sizeof(fs->err));
	int rc;

	if (!text)
		return -1;
	rc = km_json_decode_document(text, len, &fs->set, fs->err, sizeof(fs->err));
	free(text);
	return rc;
}

static void apply(struct km_file_source *fs)
{
	struct km_snapshot_stats st;
	size_t errors = fs->set.n_errors;

	fs->generation++;
	km_snapshot_apply(fs->model, &fs->set, &st);
	km_resource_set_free(&fs->set);
	km_info("config %s generation %lu: %zu services, %zu workloads (%zu services and %zu "
		"workloads removed, %zu resources rejected)",
		fs->path, fs->generation, fs->model->n_services, fs->model->n_workloads,
		st.removed_services, st.removed_workloads, errors);
}

int km_file_source_load(struct km_file_source *fs, const char *path, size_t max_bytes,
			struct km_model *model)
{
	char tmp[4096];

	memset(fs, 0, sizeof(*fs));
	if (strlen(path) >= sizeof(fs->path)) {
		km_error("config path is too long");
		return -1;
	}
	strcpy(fs->path, path);
	strcpy(tmp, path);
	snprintf(fs->dir, sizeof(fs->dir), "%s", dirname(tmp));
	strcpy(tmp, path);
	snprintf(fs->base, sizeof(fs->base), "%s", basename(tmp));
	fs->max_bytes = max_bytes;
	fs->model = model;
	if (read_and_decode(fs) != 0) {
		km_error("config %s: %s", fs->path, fs->err);
		return -1;
	}
	apply(fs);
	return 0;
}

static void work_cb(uv_work_t *req)
{
	struct km_file_source *fs = req->data;

	fs->rc = read_and_decode(fs);
}

static void schedule(struct km_file_source *fs);

static void after_work_cb(uv_work_t *req, int status)
{
	struct km_file_source *fs = req->data;

	fs->work_busy = 0;
	if (fs->stopping || status == UV_ECANCELED) {
		km_resource_set_free(&fs->set);
	} else if (fs->rc != 0) {
		km_error("config %s: %s; keeping the previous configuration", fs->path, fs->err);
	} else {
		apply(fs);
		fs->on_applied(fs, fs->arg);
	}
	if (fs->reload_again && !fs->stopping) {
		fs->reload_again = 0;
		schedule(fs);
	}
}

static void debounce_cb(uv_timer_t *t)
{
	struct km_file_source *fs = t->data;

	if (fs->work_busy) {
		fs->reload_again = 1;
		return;
	}
	fs->work_busy = 1;
	fs->work.data = fs;
	if (uv_queue_work(fs->loop, &fs->work, work_cb, after_work_cb) != 0) {
		fs->work_busy = 0;
		km_error("cannot queue a reload of %s", fs->path);
	}
}

static void schedule(struct km_file_source *fs)
{
	if (!fs->stopping)
		uv_timer_start(&fs->debounce, debounce_cb, DEBOUNCE_MS, 0);
}

static void on_event(uv_fs_event_t *h, const char *filename, int events, int status)
{
	struct km_file_source *fs = h->data;

	(void)events;
	if (status < 0) {
		km_warn("watching %s: %s (the poll still notices changes)", fs->dir, uv_strerror(status));
		return;
	}
	if (!filename || strcmp(filename, fs->base) == 0)
		schedule(fs);
}

static void on_poll(uv_fs_poll_t *h, int status, const uv_stat_t *prev, const uv_stat_t *curr)
{
	struct km_file_source *fs = h->data;

	(void)prev;
	(void)curr;
	if (status == 0)
		schedule(fs);
}

int km_file_source_watch(struct km_file_source *fs, uv_loop_t *loop, km_file_applied_cb cb,
			 void *arg)
{
	int err;

	fs->loop = loop;
	fs->on_applied = cb;
	fs->arg = arg;
	uv_timer_init(loop, &fs->debounce);
	uv_fs_event_init(loop, &fs->event);
	uv_fs_poll_init(loop, &fs->poll);
	fs->debounce.data = fs->event.data = fs->poll.data = fs;
	err = uv_fs_event_start(&fs->event, on_event, fs->dir, 0);
	if (err)
		km_warn("cannot watch %s (%s); changes are noticed by polling every %d ms", fs->dir,
			uv_strerror(err), POLL_MS);
	err = uv_fs_poll_start(&fs->poll, on_poll, fs->path, POLL_MS);
	if (err)
		km_warn("cannot poll %s: %s", fs->path, uv_strerror(err));
	return 0;
}

void km_file_source_stop(struct km_file_source *fs)
{
	if (fs->stopping || !fs->loop)
		return;
	fs->stopping = 1;
	uv_close((uv_handle_t *)&fs->debounce, NULL);
	uv_close((uv_handle_t *)&fs->event, NULL);
	uv_close((uv_handle_t *)&fs->poll, NULL);
}
