/* key_watch.c — see key_watch.h. */
#include "services/ipsec-agent/key_watch.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "shared/log.h"

/* The version of the file at the path now (stat follows the Secret's symlinks). */
static struct km_key_version version_of(const char *path)
{
	struct km_key_version v = { 0 };
	struct stat st;

	if (stat(path, &st) == 0) {
		v.dev = st.st_dev;
		v.ino = st.st_ino;
		v.size = st.st_size;
		v.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		v.valid = 1;
	}
	return v;
}

static int same_version(const struct km_key_version *a, const struct km_key_version *b)
{
	return a->valid && b->valid && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns;
}

/* Told once per version of the file. */
static void refuse(struct km_key_watch *w, const struct km_key_version *v, const char *why)
{
	if (same_version(v, &w->last_refused)) {
		km_debug("key file read again, still refused: %s", why);
		return;
	}
	w->last_refused = *v;
	w->refused++;
	w->ops.refused(w->arg, why);
}

static void reload(struct km_key_watch *w)
{
	struct km_key_version v = version_of(w->path);
	struct km_ipsec_key k;
	char err[1024], why[256];
	int rc = km_ipsec_key_load(w->path, &k, err, sizeof(err));

	if (rc == -ENOENT) {
		if (!w->missing_reported++)
			km_warn("no key file at %s yet: IPsec waits for it", w->path);
		return;
	}
	w->missing_reported = 0;
	if (rc) {
		refuse(w, &v, err);
		return;
	}
	if (w->ops.load(w->arg, &k, why, sizeof(why)) != 0) {
		snprintf(err, sizeof(err), "%s: %s", w->path, why);
		refuse(w, &v, err);
	} else {
		w->loads++;
		w->last_refused.valid = 0;
	}
	km_ipsec_key_wipe(&k);
}

static void on_timer(uv_timer_t *t);

static void on_event(uv_fs_event_t *e, const char *name, int events, int status)
{
	struct km_key_watch *w = e->data;

	(void)name;
	(void)events;
	if (status < 0)
		km_warn("watching %s: %s", w->dir, uv_strerror(status));
	uv_timer_start(&w->timer, on_timer, KM_KEY_WATCH_DEBOUNCE_MS, 0); /* restarts: debounced */
}

static int watch_dir(struct km_key_watch *w)
{
	int rc = uv_fs_event_start(&w->event, on_event, w->dir, 0);

	if (rc == 0)
		w->watching = 1;
	return rc;
}

static void on_timer(uv_timer_t *t)
{
	struct km_key_watch *w = t->data;

	if (!w->watching) {
		int rc = watch_dir(w);

		if (rc) {
			uv_timer_start(&w->timer, on_timer, KM_KEY_WATCH_RETRY_MS, 0);
			return;
		}
		km_info("watching %s for the key file", w->dir);
	}
	reload(w);
}

int km_key_watch_start(struct km_key_watch *w, uv_loop_t *loop, const char *path,
		       const struct km_key_watch_ops *ops, void *arg)
{
	char copy[512];
	int rc;

	memset(w, 0, sizeof(*w));
	if (snprintf(w->path, sizeof(w->path), "%s", path) >= (int)sizeof(w->path))
		return UV_ENAMETOOLONG;
	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(w->dir, sizeof(w->dir), "%s", dirname(copy));
	w->loop = loop;
	w->ops = *ops;
	w->arg = arg;
	if ((rc = uv_fs_event_init(loop, &w->event)) || (rc = uv_timer_init(loop, &w->timer)))
		return rc;
	w->event.data = w->timer.data = w;
	if (watch_dir(w) != 0) {
		km_warn("cannot watch %s (does it exist?): looking again every %d s", w->dir,
			KM_KEY_WATCH_RETRY_MS / 1000);
		uv_timer_start(&w->timer, on_timer, KM_KEY_WATCH_RETRY_MS, 0);
	}
	reload(w);
	return 0;
}

void km_key_watch_stop(struct km_key_watch *w)
{
	if (!w->loop)
		return;
	uv_close((uv_handle_t *)&w->event, NULL);
	uv_close((uv_handle_t *)&w->timer, NULL);
	w->loop = NULL;
}
