/* key_watch.h — the key file, watched: its directory is watched with libuv fs events (a mounted
 * Secret changes by swapping a symlink in that directory, so the file itself may never be
 * written), and 100 ms after the last event the file is read again. A directory that does not
 * exist yet is looked for again every few seconds.
 *
 * Every version of the file that cannot be used is refused through one callback, whatever the
 * reason: unreadable, malformed (keyfile.h's checks), or refused by the keyring (load() says
 * so). The keys already loaded stay in use. A version is told once: reading the same file again
 * (another change in the directory, a swap seen half-way) does not count it again. */
#ifndef KM_IPSEC_KEY_WATCH_H
#define KM_IPSEC_KEY_WATCH_H

#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "services/ipsec-agent/keyfile.h"

#define KM_KEY_WATCH_DEBOUNCE_MS 100
#define KM_KEY_WATCH_RETRY_MS 5000

struct km_key_watch_ops {
	/* A valid key was read (maybe the same as before); the callee copies what it keeps.
	 * Returns 0 when it is used, else -1 with err saying why it is refused. */
	int (*load)(void *arg, const struct km_ipsec_key *key, char *err, size_t errlen);
	/* A version of the file is refused; why is "PATH: reason". */
	void (*refused)(void *arg, const char *why);
};

/* Which version of the file was refused last (the file's identity and change time). */
struct km_key_version {
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	int valid;
};

struct km_key_watch {
	uv_loop_t *loop;
	uv_fs_event_t event;
	uv_timer_t timer;
	char path[512], dir[512];
	int watching;
	int missing_reported;
	struct km_key_watch_ops ops;
	void *arg;
	struct km_key_version last_refused;
	unsigned long loads, refused;
};

/* Reads the file once now (when present) and starts watching. Returns 0 or a uv error. */
int km_key_watch_start(struct km_key_watch *w, uv_loop_t *loop, const char *path,
		       const struct km_key_watch_ops *ops, void *arg);
void km_key_watch_stop(struct km_key_watch *w);

#endif
