/* netns.c — see netns.h. */
#include "shared/netns.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "shared/errbuf.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif
#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

/* The namespace file at path, opened without blocking (a FIFO put there would block open() for
 * as long as nobody writes it) and refused unless it is a namespace (nsfs). */
static int open_ns(const char *path, char *err, size_t errlen)
{
	struct statfs st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), e;

	if (fd < 0) {
		e = errno;
		km_errf(err, errlen, "cannot open network namespace %s: %s", path, strerror(e));
		return e == ENOENT ? -ENOENT : -e;
	}
	if (fstatfs(fd, &st) != 0 || (unsigned long)st.f_type != NSFS_MAGIC) {
		close(fd);
		km_errf(err, errlen, "%s is not a namespace (not on nsfs)", path);
		return -EINVAL;
	}
	return fd;
}

int km_netns_call(const char *path, int (*fn)(void *arg, char *err, size_t errlen), void *arg,
		  char *err, size_t errlen)
{
	int self, target, e, rc;

	target = open_ns(path, err, errlen);
	if (target < 0)
		return target;
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0) {
		e = errno;
		close(target);
		km_errf(err, errlen, "cannot open this thread's network namespace: %s", strerror(e));
		return -e;
	}
	if (setns(target, CLONE_NEWNET) != 0) {
		e = errno;
		close(target);
		close(self);
		/* EINVAL: the file is not (or no longer) a network namespace */
		km_errf(err, errlen, "cannot enter network namespace %s: %s", path, strerror(e));
		return e == EINVAL ? -ENOENT : -e;
	}
	close(target);
	rc = fn(arg, err, errlen);
	if (setns(self, CLONE_NEWNET) != 0) {
		fprintf(stderr, "fatal: cannot return to the own network namespace: %s\n",
			strerror(errno));
		abort();
	}
	close(self);
	return rc;
}

int km_netns_cookie_here(uint64_t *cookie, char *err, size_t errlen)
{
	socklen_t len = sizeof(*cookie);
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), e;

	if (s < 0) {
		e = errno;
		km_errf(err, errlen, "cannot create a socket: %s", strerror(e));
		return -e;
	}
	if (getsockopt(s, SOL_SOCKET, SO_NETNS_COOKIE, cookie, &len) != 0) {
		e = errno;
		close(s);
		km_errf(err, errlen, "SO_NETNS_COOKIE: %s (kernel 5.14 or later needed)", strerror(e));
		return -e;
	}
	close(s);
	return 0;
}

static int cookie_fn(void *arg, char *err, size_t errlen)
{
	return km_netns_cookie_here(arg, err, errlen);
}

int km_netns_cookie(const char *path, uint64_t *cookie, char *err, size_t errlen)
{
	return km_netns_call(path, cookie_fn, cookie, err, errlen);
}

struct identity {
	uint64_t *cookie;
	struct km_addr *addrs;
	size_t max, *n;
};

int km_netns_identity_here(uint64_t *cookie, struct km_addr *addrs, size_t max, size_t *n,
			   char *err, size_t errlen)
{
	struct ifaddrs *ifa, *i;
	int rc = km_netns_cookie_here(cookie, err, errlen);

	*n = 0;
	if (rc)
		return rc;
	if (getifaddrs(&ifa) != 0)
		return 0; /* no addresses known: the cookie alone enrolls */
	for (i = ifa; i && *n < max; i = i->ifa_next) {
		const struct sockaddr *sa = i->ifa_addr;

		if (!sa || !strcmp(i->ifa_name, "lo"))
			continue;
		if (sa->sa_family == AF_INET)
			km_addr_from_bytes((const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr, 4,
					   &addrs[(*n)++]);
		else if (sa->sa_family == AF_INET6 &&
			 !IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)sa)->sin6_addr))
			km_addr_from_bytes((const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr,
					   16, &addrs[(*n)++]);
	}
	freeifaddrs(ifa);
	return 0;
}

static int identity_fn(void *arg, char *err, size_t errlen)
{
	struct identity *id = arg;

	return km_netns_identity_here(id->cookie, id->addrs, id->max, id->n, err, errlen);
}

int km_netns_identity(const char *path, uint64_t *cookie, struct km_addr *addrs, size_t max,
		      size_t *n, char *err, size_t errlen)
{
	struct identity id = { cookie, addrs, max, n };

	return km_netns_call(path, identity_fn, &id, err, errlen);
}

static const char *const mark_sysctls[] = {
	"/proc/sys/net/ipv4/tcp_fwmark_accept",
	"/proc/sys/net/ipv4/fwmark_reflect",
	"/proc/sys/net/ipv6/fwmark_reflect", /* last: absent without IPv6 */
};
#define N_MARK_SYSCTLS (sizeof(mark_sysctls) / sizeof(mark_sysctls[0]))

int km_netns_mark_sysctls_get(char *err, size_t errlen)
{
	for (size_t i = 0; i < N_MARK_SYSCTLS; i++) {
		char v = 0;
		int fd = open(mark_sysctls[i], O_RDONLY | O_CLOEXEC), ok;

		if (fd < 0 && errno == ENOENT && i == N_MARK_SYSCTLS - 1)
			continue;
		if (fd < 0) {
			int e = errno;

			snprintf(err, errlen, "%s: %s", mark_sysctls[i], strerror(e));
			return -e;
		}
		ok = read(fd, &v, 1) == 1 && v == '1';
		close(fd);
		if (!ok) {
			snprintf(err, errlen, "%s is not 1", mark_sysctls[i]);
			return 0;
		}
	}
	return 1;
}

int km_netns_mark_sysctls_set(char *err, size_t errlen)
{
	for (size_t i = 0; i < N_MARK_SYSCTLS; i++) {
		int fd = open(mark_sysctls[i], O_WRONLY | O_CLOEXEC), e = 0;

		if (fd < 0 && errno == ENOENT && i == N_MARK_SYSCTLS - 1)
			continue;
		if (fd < 0 || write(fd, "1\n", 2) != 2)
			e = errno ? errno : EIO;
		if (fd >= 0)
			close(fd);
		if (e) {
			snprintf(err, errlen, "%s: %s", mark_sysctls[i], strerror(e));
			return -e;
		}
	}
	return 0;
}
