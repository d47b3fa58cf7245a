/* key_watch.h — the key file, watched: its directory is watched with libuv fs events (a mounted
 * Secret changes by swapping a symlink in that directory, so the file itself may never be
 * written), and 100 ms after the last event the file is read again. A file that cannot be read
 * or parsed is reported and ignored: the keys already loaded stay in use. A directory that does
 * not exist yet is looked for again every few seconds. */
#ifndef KM_IPSEC_KEY_WATCH_H
#define KM_IPSEC_KEY_WATCH_H

#include <uv.h>

#include "services/ipsec-agent/keyfile.h"

#define KM_KEY_WATCH_DEBOUNCE_MS 100
#define KM_KEY_WATCH_RETRY_MS 5000

/* A valid key was read (maybe the same as before); the callee copies what it keeps. */
typedef void (*km_key_watch_cb)(void *arg, const struct km_ipsec_key *key);

struct km_key_watch {
	uv_loop_t *loop;
	uv_fs_event_t event;
	uv_timer_t timer;
	char path[512], dir[512];
	int watching;
	int missing_reported;
	km_key_watch_cb cb;
	void *arg;
	unsigned long loads, refused;
};

/* Reads the file once now (when present) and starts watching. Returns 0 or a uv error. */
int km_key_watch_start(struct km_key_watch *w, uv_loop_t *loop, const char *path,
		       km_key_watch_cb cb, void *arg);
void km_key_watch_stop(struct km_key_watch *w);

#endif
