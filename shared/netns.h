/* netns.h — the cookie of a network namespace named by path (/run/netns/x, /proc/PID/ns/net):
 * a socket is created inside it (SO_NETNS_COOKIE) and the calling thread returns to its own
 * namespace before the call returns. Cookies are unique per boot and never reused. */
#ifndef KM_SHARED_NETNS_H
#define KM_SHARED_NETNS_H

#include <stddef.h>
#include <stdint.h>

/* Returns 0, -ENOENT when the namespace is gone (no such file, or not a network namespace any
 * more), or another -errno, with err filled. Aborts the process if it cannot return to its own
 * namespace: carrying on in a pod's namespace would be worse than failing. */
int km_netns_cookie(const char *path, uint64_t *cookie, char *err, size_t errlen);

#endif
