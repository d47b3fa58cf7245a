/* netns.h — doing something inside a network namespace named by path (/run/netns/x,
 * /proc/PID/ns/net): the calling thread enters it, runs a function, and returns to its own
 * namespace before the call returns; and the namespace's cookie (SO_NETNS_COOKIE of a socket made
 * inside). Cookies are unique per boot and never reused. */
#ifndef KM_SHARED_NETNS_H
#define KM_SHARED_NETNS_H

#include <stddef.h>
#include <stdint.h>

#include "shared/addr.h"

/* Run fn(arg) inside the namespace at path; fn returns 0 or -errno and fills err itself. Returns
 * fn's result, -ENOENT when the namespace is gone (no such file, or not a network namespace any
 * more), -EINVAL when the file is not a namespace at all (a FIFO, a regular file: opened without
 * blocking, never waited on), or another -errno (EPERM: no CAP_SYS_ADMIN), with err filled. Aborts the process if it
 * cannot return to its own namespace: carrying on in a pod's namespace would be worse. */
int km_netns_call(const char *path, int (*fn)(void *arg, char *err, size_t errlen), void *arg,
		  char *err, size_t errlen);

/* The cookie of the current thread's network namespace. Returns 0 or -errno with err filled. */
int km_netns_cookie_here(uint64_t *cookie, char *err, size_t errlen);

/* The cookie of the namespace at path. Returns as km_netns_call. */
int km_netns_cookie(const char *path, uint64_t *cookie, char *err, size_t errlen);

/* The same of the current thread's namespace. Returns 0 or -errno with err filled. */
int km_netns_identity_here(uint64_t *cookie, struct km_addr *addrs, size_t max, size_t *n,
			   char *err, size_t errlen);
/* The cookie and the addresses (not loopback, not IPv6 link-local; at most max) of the namespace
 * at path, as an enrollment names a pod. Returns as km_netns_call. */
int km_netns_identity(const char *path, uint64_t *cookie, struct km_addr *addrs, size_t max,
		      size_t *n, char *err, size_t errlen);

/* The sysctls of the current thread's namespace (/proc/sys/net is the opener's namespace's) that
 * the tunnel's connections from the HBONE caller's address need in a pod (kmesh_maps.h,
 * KM_TUNNEL_APP_MARK): net.ipv4.tcp_fwmark_accept (an accepted socket takes its SYN's mark, so
 * the application's replies are marked) and net.ipv4/ipv6.fwmark_reflect (so are the kernel's
 * own replies: the reset to a port nothing listens on). The CNI plugin sets them when it enrolls a
 * pod, since a container's /proc/sys is read-only. The IPv6 one is skipped where the namespace
 * has no IPv6. get: 1 (all set) or 0, or -errno with err; set: 0 or -errno with err. */
int km_netns_mark_sysctls_get(char *err, size_t errlen);
int km_netns_mark_sysctls_set(char *err, size_t errlen);

#endif
