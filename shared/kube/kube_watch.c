/* kube_watch.c — see kube_watch.h. The thread owns its API client; it hands JSON values to the
 * loop through a locked queue and a uv_async_t, and never touches them again. */
#include "shared/kube/kube_watch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shared/kube/kube_client.h"
#include "shared/log.h"

#define BACKOFF_MIN_MS 500L
#define BACKOFF_MAX_MS 30000L
#define WATCH_MAX_S 300     /* timeoutSeconds asked of the server for one watch */
#define WATCH_SLACK_MS 15000 /* ... and how much longer we wait before calling it broken */
#define REQUEST_TIMEOUT_MS 10000

struct km_kube_watch_event {
	enum km_kube_change change;
	json_t *obj;
	struct km_kube_watch_event *next;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Hand obj (a reference the queue takes over) to the loop. */
static void post(struct km_kube_watch *w, enum km_kube_change change, json_t *obj)
{
	struct km_kube_watch_event *ev = malloc(sizeof(*ev));

	if (!ev) { /* lost: the next list brings it back */
		json_decref(obj);
		return;
	}
	ev->change = change;
	ev->obj = obj;
	ev->next = NULL;
	pthread_mutex_lock(&w->lock);
	if (w->tail)
		w->tail->next = ev;
	else
		w->head = ev;
	w->tail = ev;
	w->events++;
	pthread_mutex_unlock(&w->lock);
	uv_async_send(&w->async);
}

static void failed(struct km_kube_watch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failed(struct km_kube_watch *w, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&w->lock);
	va_start(ap, fmt);
	vsnprintf(w->last_error, sizeof(w->last_error), fmt, ap);
	va_end(ap);
	w->failures++;
	w->listed = 0;
	pthread_mutex_unlock(&w->lock);
	km_warn("kubernetes watch of %s: %s", w->path, w->last_error);
}

/* Wait ms, or less when stopping. */
static void pause_ms(struct km_kube_watch *w, long ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&w->lock);
	while (!w->stop && pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&w->lock);
}

static const char *resource_version(const json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

/* The whole collection, posted as one LISTED; rv = its resourceVersion. Returns 0 or -1. */
static int list(struct km_kube_watch *w, struct km_kube_client *c, char *rv, size_t rvlen)
{
	char err[512] = "";
	json_t *out = NULL, *items;
	const char *v;
	int status = km_kube_request(c, "GET", w->path, NULL, NULL, &out, err, sizeof(err));

	if (status != 200) {
		failed(w, "list: %s", *err ? err : "an answer other than 200");
		json_decref(out);
		return -1;
	}
	items = json_object_get(out, "items");
	v = resource_version(out);
	if (!json_is_array(items) || !v || strlen(v) >= rvlen) {
		failed(w, "list: the answer has no items or resourceVersion");
		json_decref(out);
		return -1;
	}
	snprintf(rv, rvlen, "%s", v);
	post(w, KM_KUBE_LISTED, json_incref(items));
	json_decref(out);
	pthread_mutex_lock(&w->lock);
	w->lists++;
	w->listed = 1;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

struct stream_state {
	struct km_kube_watch *w;
	char *rv;
	size_t rvlen;
	int gone;  /* 410: the resourceVersion is too old, list again */
	int bad;   /* a line that is not a watch event */
	char why[256];
};

enum km_kube_event_kind km_kube_watch_parse(const char *line, size_t len,
					     enum km_kube_change *change, json_t **obj, char *rv,
					     size_t rvlen, char *why, size_t whylen)
{
	json_t *ev = json_loadb(line, len, 0, NULL), *o = json_object_get(ev, "object");
	const char *type = json_string_value(json_object_get(ev, "type")), *v = resource_version(o);
	const char *msg = json_string_value(json_object_get(o, "message"));
	enum km_kube_event_kind kind = KM_KUBE_EVENT_SKIP;

	*obj = NULL;
	if (!type || !json_is_object(o)) {
		snprintf(why, whylen, "not a watch event: %.*s", (int)(len < 80 ? len : 80), line);
		kind = KM_KUBE_EVENT_BAD;
	} else if (!strcmp(type, "ERROR")) {
		kind = json_integer_value(json_object_get(o, "code")) == 410 ? KM_KUBE_EVENT_GONE
									     : KM_KUBE_EVENT_BAD;
		if (kind == KM_KUBE_EVENT_BAD)
			snprintf(why, whylen, "the server ended the watch: %.160s", msg ? msg : "?");
	} else {
		if (v && strlen(v) < rvlen)
			snprintf(rv, rvlen, "%s", v);
		if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
			*change = type[0] == 'A' ? KM_KUBE_ADDED
				  : type[0] == 'M' ? KM_KUBE_MODIFIED : KM_KUBE_DELETED;
			*obj = json_incref(o);
			kind = KM_KUBE_EVENT_CHANGE;
		} /* BOOKMARK, or a type of a later API: only the resourceVersion is taken */
	}
	json_decref(ev);
	return kind;
}

static int on_event(void *arg, const char *line, size_t len)
{
	struct stream_state *s = arg;
	enum km_kube_change change;
	json_t *obj;

	switch (km_kube_watch_parse(line, len, &change, &obj, s->rv, s->rvlen, s->why,
				    sizeof(s->why))) {
	case KM_KUBE_EVENT_CHANGE:
		post(s->w, change, obj);
		return 0;
	case KM_KUBE_EVENT_SKIP:
		return 0;
	case KM_KUBE_EVENT_GONE:
		s->gone = 1;
		return 1;
	case KM_KUBE_EVENT_BAD:
		s->bad = 1;
		return 1;
	}
	return 1;
}

/* One watch from rv, for at most budget_ms. Returns 0 when it ended as the server meant (go on
 * watching from rv), 1 when the list must be made again (410), -1 when it broke. */
static int watch(struct km_kube_watch *w, struct km_kube_client *c, char *rv, size_t rvlen,
		 long budget_ms)
{
	struct stream_state s = { .w = w, .rv = rv, .rvlen = rvlen };
	long seconds = budget_ms / 1000 < WATCH_MAX_S ? budget_ms / 1000 : WATCH_MAX_S;
	char path[1024], err[512];
	int status;

	if (seconds < 1)
		seconds = 1;
	if (snprintf(path, sizeof(path), "%s%cwatch=1&allowWatchBookmarks=true&resourceVersion=%s"
		     "&timeoutSeconds=%ld", w->path, strchr(w->path, '?') ? '&' : '?', rv,
		     seconds) >= (int)sizeof(path)) {
		failed(w, "watch: path too long");
		return -1;
	}
	pthread_mutex_lock(&w->lock);
	w->watches++;
	pthread_mutex_unlock(&w->lock);
	status = km_kube_stream(c, path, seconds * 1000 + WATCH_SLACK_MS, on_event, &s, &w->stop,
				err, sizeof(err));
	if (w->stop)
		return 0;
	if (s.gone || status == 410)
		return 1;
	if (s.bad) {
		failed(w, "watch: %s", s.why);
		return -1;
	}
	if (status != 200) {
		failed(w, "watch: %s", err);
		return -1;
	}
	return 0;
}

static void *run(void *arg)
{
	struct km_kube_watch *w = arg;
	struct km_kube_client c;
	char err[512], rv[128];
	unsigned in_a_row = 0; /* failures since the last watch that went as meant */
	int open = 0;

	while (!w->stop) {
		uint64_t until;
		int first = 1;

		if (in_a_row) { /* 0.5 s, doubling to 30 s: a broken API is not hammered */
			long ms = BACKOFF_MIN_MS << (in_a_row - 1 < 6 ? in_a_row - 1 : 6);

			pause_ms(w, ms < BACKOFF_MAX_MS ? ms : BACKOFF_MAX_MS);
		}
		if (w->stop)
			break;
		if (open && in_a_row) { /* after a failure, a new client: the kubeconfig's token may
					 * have been rotated (a projected service account token) */
			km_kube_close(&c);
			open = 0;
		}
		if (!open) {
			if (km_kube_open(&c, w->kubeconfig, REQUEST_TIMEOUT_MS, err, sizeof(err)) != 0) {
				failed(w, "%s", err);
				in_a_row++;
				continue;
			}
			c.stop = &w->stop;
			open = 1;
		}
		if (list(w, &c, rv, sizeof(rv)) != 0) {
			in_a_row++;
			continue;
		}
		until = now_ms() + (uint64_t)w->resync_ms;
		while (!w->stop && now_ms() < until) {
			uint64_t began = now_ms();
			int rc = watch(w, &c, rv, sizeof(rv), (long)(until - now_ms()));

			/* a failure; or 410 at once after a list, or a watch the server ends at once:
			 * not what a working server does, so no tight loop of lists and watches */
			if (rc < 0 || (rc > 0 && first) || (rc == 0 && now_ms() - began < 1000)) {
				if (rc >= 0)
					failed(w, "watch: %s", rc ? "410 Gone right after a list"
								  : "the server ended it at once");
				in_a_row++;
				break;
			}
			in_a_row = 0;
			first = 0;
			if (rc) /* 410: list again at once */
				break;
		}
	}
	if (open)
		km_kube_close(&c);
	return NULL;
}

static void on_async(uv_async_t *a)
{
	struct km_kube_watch *w = a->data;
	struct km_kube_watch_event *ev, *next;

	pthread_mutex_lock(&w->lock);
	ev = w->head;
	w->head = w->tail = NULL;
	pthread_mutex_unlock(&w->lock);
	for (; ev; ev = next) {
		next = ev->next;
		if (!w->stop)
			w->cb(w->arg, ev->change, ev->obj);
		json_decref(ev->obj);
		free(ev);
	}
}

int km_kube_watch_start(struct km_kube_watch *w, uv_loop_t *loop, const char *kubeconfig_path,
			const char *path, long resync_ms, km_kube_watch_cb cb, void *arg, char *err,
			size_t errlen)
{
	int rc;

	memset(w, 0, sizeof(*w));
	if (strlen(kubeconfig_path) >= sizeof(w->kubeconfig) || strlen(path) >= sizeof(w->path)) {
		snprintf(err, errlen, "kubeconfig path or API path too long");
		return -1;
	}
	snprintf(w->kubeconfig, sizeof(w->kubeconfig), "%s", kubeconfig_path);
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->loop = loop;
	w->cb = cb;
	w->arg = arg;
	w->resync_ms = resync_ms > 1000 ? resync_ms : 1000;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	if (uv_async_init(loop, &w->async, on_async) != 0) {
		snprintf(err, errlen, "cannot make the watch's wakeup handle");
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		return -1;
	}
	w->async.data = w;
	rc = pthread_create(&w->thread, NULL, run, w);
	if (rc != 0) {
		snprintf(err, errlen, "cannot start the watch thread: %s", strerror(rc));
		uv_close((uv_handle_t *)&w->async, NULL);
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		return -1;
	}
	w->started = 1;
	return 0;
}

void km_kube_watch_stop(struct km_kube_watch *w)
{
	struct km_kube_watch_event *ev, *next;

	if (!w->started)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	for (ev = w->head; ev; ev = next) {
		next = ev->next;
		json_decref(ev->obj);
		free(ev);
	}
	w->head = w->tail = NULL;
	uv_close((uv_handle_t *)&w->async, NULL);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	w->started = 0;
}

json_t *km_kube_watch_status(struct km_kube_watch *w)
{
	json_t *j;

	if (!w->started)
		return json_pack("{s:b}", "running", 0);
	pthread_mutex_lock(&w->lock);
	j = json_pack("{s:b, s:b, s:I, s:I, s:I, s:I, s:s}", "running", 1, "listed", w->listed,
		      "lists", (json_int_t)w->lists, "watches", (json_int_t)w->watches, "events",
		      (json_int_t)w->events, "failures", (json_int_t)w->failures, "last_error",
		      w->last_error);
	pthread_mutex_unlock(&w->lock);
	return j;
}
