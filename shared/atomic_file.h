/* atomic_file.h — replacing a file so that readers only ever see the old or the new content,
 * never a partial or empty one: write a hidden temporary file in the same directory, set its
 * mode (and owner), fsync, rename over the target, fsync the directory. Also reading a whole
 * small file with a size bound. */
#ifndef KM_SHARED_ATOMIC_FILE_H
#define KM_SHARED_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* flags: KM_ATOMIC_NOSYNC skips the fsyncs, for files whose content means nothing after a
 * crash of the machine (per-boot state on a tmpfs, counters): the rename still makes the
 * replacement all-or-nothing for readers. */
#define KM_ATOMIC_NOSYNC 1u

/* Replace path with data[0..len) and the given mode; uid/gid (uid_t)-1 / (gid_t)-1 keep the
 * creating process's. Returns 0, or -1 with err filled (the target is then untouched). */
int km_atomic_write(const char *path, const void *data, size_t len, mode_t mode, uid_t uid,
		    gid_t gid, unsigned flags, char *err, size_t errlen);
/* The same, but just before the rename still_ok(arg) is asked whether to go on (e.g. the
 * target did not change while the new content was prepared and synced); 0 abandons the write
 * (errno EAGAIN). */
int km_atomic_write_checked(const char *path, const void *data, size_t len, mode_t mode,
			    uid_t uid, gid_t gid, unsigned flags, int (*still_ok)(void *arg),
			    void *arg, char *err, size_t errlen);
/* Read all of path (at most max bytes) into a malloc'ed NUL-terminated buffer. Returns the
 * length, or -1 with errno set (EFBIG when larger than max) and err filled. */
long km_read_file(const char *path, size_t max, char **out, char *err, size_t errlen);

#endif
