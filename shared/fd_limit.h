/* fd_limit.h — a daemon's file-descriptor limit: raised at start to the hard limit, and checked
 * against what the daemon may hold (its connection caps plus its own files), so running out of
 * descriptors is a start-up error with a fix, not an accept() failure under load. */
#ifndef KM_SHARED_FD_LIMIT_H
#define KM_SHARED_FD_LIMIT_H

/* Raises RLIMIT_NOFILE's soft limit to its hard limit. Returns the soft limit now in force; logs
 * a warning naming the fix (systemd LimitNOFILE=, the container runtime's ulimit) when it is
 * below need. */
unsigned long km_fd_limit_raise(unsigned long need);

#endif
