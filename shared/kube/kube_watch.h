/* kube_watch.h — one collection of the Kubernetes API kept in view by a libuv process: a thread
 * lists it, then watches it from the list's resourceVersion (a streaming GET with bookmarks),
 * and hands what it learns to the loop: the whole collection after every list, then each change.
 *   - A watch the server ends is resumed from the last resourceVersion seen.
 *   - A watch that breaks, an expired resourceVersion (410 Gone) and any failed request lead
 *     to a new list, after a backoff (0.5 s, doubling to 30 s).
 *   - A new list is also made every resync period, so nothing missed stays missed.
 * libcurl's calls block, hence the thread; it never touches the consumer's state. */
#ifndef KM_SHARED_KUBE_WATCH_H
#define KM_SHARED_KUBE_WATCH_H

#include <pthread.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

enum km_kube_change {
	KM_KUBE_LISTED,   /* obj: the array of every item; what is not in it is gone */
	KM_KUBE_ADDED,    /* obj: the object */
	KM_KUBE_MODIFIED,
	KM_KUBE_DELETED,  /* obj: the object as it was */
};

/* Called in the loop's thread; obj is borrowed. */
typedef void (*km_kube_watch_cb)(void *arg, enum km_kube_change change, json_t *obj);

struct km_kube_watch_event;

struct km_kube_watch {
	uv_loop_t *loop;
	uv_async_t async;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* ends a backoff early when stopping */
	int started;
	volatile int stop;
	struct km_kube_watch_event *head, *tail; /* handed from the thread to the loop */
	km_kube_watch_cb cb;
	void *arg;
	char kubeconfig[512];
	char path[512];
	long resync_ms;
	/* under lock: what the thread has done, for dumps */
	uint64_t lists, watches, events, failures;
	int listed; /* a list has arrived since the last failure */
	char last_error[256];
};

/* One line of a watch stream (outside input), read: */
enum km_kube_event_kind {
	KM_KUBE_EVENT_CHANGE, /* *change and *obj (a new reference) set; rv updated */
	KM_KUBE_EVENT_SKIP,   /* a bookmark or an unknown type: rv updated when it carries one */
	KM_KUBE_EVENT_GONE,   /* 410: the resourceVersion is too old, list again */
	KM_KUBE_EVENT_BAD,    /* not an event, or an error from the server: why says it */
};
enum km_kube_event_kind km_kube_watch_parse(const char *line, size_t len,
					     enum km_kube_change *change, json_t **obj, char *rv,
					     size_t rvlen, char *why, size_t whylen);

/* Start watching path (a collection, e.g. "/apis/kmesh.net/v1alpha1/namespaces/kmesh-system/
 * kmeshnodeinfos") with the kubeconfig at kubeconfig_path. Returns 0, or -1 with err filled. */
int km_kube_watch_start(struct km_kube_watch *w, uv_loop_t *loop, const char *kubeconfig_path,
			const char *path, long resync_ms, km_kube_watch_cb cb, void *arg, char *err,
			size_t errlen);
/* Stop the thread (within about a second) and drop what was not delivered. The async handle is
 * closed; the loop must run once more for that. */
void km_kube_watch_stop(struct km_kube_watch *w);
/* A JSON object of the counters and the last error (new reference). */
json_t *km_kube_watch_status(struct km_kube_watch *w);

#endif
