/* pod_sockets.c — see pod_sockets.h. */
#include "services/map-writer/pod_sockets.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kmesh_maps.h"
#include "services/map-writer/pod_route.h"
#include "shared/log.h"
#include "shared/netns.h"

#define LISTEN_BACKLOG 4096

struct made {
	uint64_t cookie;
	const Kmesh__Ipc__PodSockets *want;
	int fds[KM_POD_SOCKETS_MAX];
	size_t n;
	struct km_addr addrs[8]; /* the pod's, where it was made */
	size_t n_addrs;
	char route_err[200];     /* why the sockets to connect could not be made transparent */
	uint32_t routed;         /* KM_MANAGE_F_TUNNEL_ROUTED_*: set up before (km_manage), or now */
};

static int tcp_socket(int family)
{
	return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

/* A socket to reach the pod's application on which the tunnel may bind the HBONE caller's address
 * (pod_route.h): marked first, so that a transparent socket is always one whose packets stay in
 * the pod. The tunnel can change neither (it holds no capability). Left plain if either fails:
 * the tunnel's bind of a foreign address then fails and it connects from the pod's side. */
static void make_transparent(int fd, int family)
{
	unsigned mark = KM_TUNNEL_APP_MARK;
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) == 0)
		(void)(family == AF_INET6
			       ? setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof(one))
			       : setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof(one)));
}

/* A listener on every address of the namespace: [::]:port taking IPv4 too, or 0.0.0.0:port where
 * the namespace has no IPv6. */
static int listener(uint16_t port, char *err, size_t errlen)
{
	int fd = tcp_socket(AF_INET6), one = 1, zero = 0, rc;

	if (fd >= 0) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port),
					  .sin6_addr = IN6ADDR_ANY_INIT };

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	} else if (errno == EAFNOSUPPORT) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
					 .sin_addr.s_addr = htonl(INADDR_ANY) };

		if ((fd = tcp_socket(AF_INET)) < 0)
			goto fail;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	} else {
		goto fail;
	}
	if (rc == 0 && listen(fd, LISTEN_BACKLOG) == 0)
		return fd;
fail:
	rc = -errno;
	snprintf(err, errlen, "port %u in the pod: %s%s", port, strerror(errno),
		 errno == EADDRINUSE ? " (an application of the pod listens there)" : "");
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Inside the pod's namespace: check it is the one enrolled, then make the sockets. */
static int make_here(void *arg, char *err, size_t errlen)
{
	struct made *m = arg;
	uint64_t here = 0;
	int fd;

	/* the pod's addresses only for its HBONE listener (km_hbone); a pool refill needs none (a
	 * netlink dump of links and addresses was half of its cost) */
	if ((m->want->listen_port == KM_HBONE_PORT
		     ? km_netns_identity_here(&here, m->addrs, 8, &m->n_addrs, err, errlen)
		     : km_netns_cookie_here(&here, err, errlen)) != 0)
		return -EIO;
	if (here != m->cookie) {
		snprintf(err, errlen, "the namespace there is not the one enrolled (cookie %llu, "
			 "enrolled %llu)", (unsigned long long)here, (unsigned long long)m->cookie);
		return -ESTALE;
	}
	if (m->want->listen_port) {
		if ((fd = listener((uint16_t)m->want->listen_port, err, errlen)) < 0)
			return fd;
		m->fds[m->n++] = fd;
	}
	if (m->want->connect) {
		int family = m->want->family == 6 ? AF_INET6 : AF_INET;
		uint32_t want = family == AF_INET6 ? KM_MANAGE_F_TUNNEL_ROUTED_V6
						   : KM_MANAGE_F_TUNNEL_ROUTED_V4, ready;

		if (!(m->routed & want))
			m->routed |= (uint32_t)km_pod_route_ensure(m->route_err,
								   sizeof(m->route_err));
		ready = m->routed & want;

		for (uint32_t i = 0; i < m->want->connect; i++) {
			if ((fd = tcp_socket(family)) < 0) {
				snprintf(err, errlen, "a socket in the pod: %s", strerror(errno));
				return -errno;
			}
			if (ready)
				make_transparent(fd, family);
			m->fds[m->n++] = fd;
		}
	}
	return 0;
}

/* The pod's 15008 is the tunnel's now: the kernel's authorization leaves its SYNs to it
 * (kmesh_maps.h, km_hbone). */
static void hbone_served(struct km_tables *t, const struct made *m)
{
	struct km_hbone_value v = { .netns_cookie = m->cookie };

	for (size_t i = 0; i < m->n_addrs; i++)
		if (bpf_map_update_elem(t->fd_hbone, &m->addrs[i], &v, BPF_ANY) != 0)
			km_warn("km_hbone: cannot record an address of netns cookie %llu: %s",
				(unsigned long long)m->cookie, strerror(errno));
}

void km_mw_pod_sockets_forget(struct km_tables *t, uint64_t netns_cookie)
{
	struct km_addr key, next, *prev = NULL;
	struct km_hbone_value v;

	/* a few rows per pod whose 15008 the tunnel serves: a walk is cheap */
	while (bpf_map_get_next_key(t->fd_hbone, prev, &next) == 0) {
		key = next;
		if (bpf_map_lookup_elem(t->fd_hbone, &key, &v) == 0 && v.netns_cookie == netns_cookie &&
		    bpf_map_delete_elem(t->fd_hbone, &key) == 0) {
			prev = NULL; /* deleted under the walk: start over */
			continue;
		}
		prev = &key;
	}
}

/* The pod's tunnel routes made now: recorded, so the next requests need not ask the kernel. */
static void record_routed(struct km_tables *t, uint64_t cookie, uint32_t routed)
{
	struct km_manage_key k = { .netns_cookie = cookie };
	struct km_manage_value v;

	if (bpf_map_lookup_elem(t->fd_manage, &k, &v) == 0 && (v.flags & routed) != routed) {
		v.flags |= routed;
		(void)bpf_map_update_elem(t->fd_manage, &k, &v, BPF_EXIST);
	}
}

static void close_all(struct made *m)
{
	for (size_t i = 0; i < m->n; i++)
		close(m->fds[i]);
	m->n = 0;
}

Kmesh__Ipc__Code km_mw_pod_sockets(struct km_tables *t, struct km_ipc_session *s,
				   const km_envelope *env)
{
	const Kmesh__Ipc__PodSockets *want = env->pod_sockets;
	struct km_manage_key k = { .netns_cookie = want->netns_cookie };
	struct km_pod_netns_value where;
	struct made m = { .cookie = want->netns_cookie, .want = want };
	Kmesh__Ipc__Code code = KMESH__IPC__CODE__BAD_REQUEST;
	char err[400] = "";
	int rc;

	if (want->listen_port > 65535 || (want->connect && want->family != 4 && want->family != 6) ||
	    want->connect + (want->listen_port != 0) > KM_POD_SOCKETS_MAX ||
	    (!want->connect && !want->listen_port)) {
		snprintf(err, sizeof(err), "ask for a listener (port 1-65535) and at most %d sockets "
			 "in all, of family 4 or 6", KM_POD_SOCKETS_MAX);
		goto refuse;
	}
	if ((code = km_tables_enrolled(t, want->netns_cookie, err, sizeof(err))) != KMESH__IPC__CODE__OK)
		goto refuse;
	if (bpf_map_lookup_elem(t->fd_pod_netns, &k, &where) != 0 || !where.path[0]) {
		code = KMESH__IPC__CODE__NOT_FOUND;
		snprintf(err, sizeof(err), "netns cookie %llu was enrolled without its path",
			 (unsigned long long)want->netns_cookie);
		goto refuse;
	}
	where.path[sizeof(where.path) - 1] = '\0';
	{
		struct km_manage_value mv;

		if (bpf_map_lookup_elem(t->fd_manage, &k, &mv) == 0)
			m.routed = mv.flags & (KM_MANAGE_F_TUNNEL_ROUTED_V4 |
					       KM_MANAGE_F_TUNNEL_ROUTED_V6);
	}
	rc = km_netns_call(where.path, make_here, &m, err, sizeof(err));
	if (rc != 0) {
		close_all(&m);
		code = rc == -ENOENT || rc == -ESTALE ? KMESH__IPC__CODE__NOT_FOUND
						       : KMESH__IPC__CODE__INTERNAL;
		goto refuse;
	}
	if (want->listen_port == KM_HBONE_PORT)
		hbone_served(t, &m);
	if (m.routed)
		record_routed(t, want->netns_cookie, m.routed);
	if (m.route_err[0]) { /* each pool refill would say it again: a warning a minute at most */
		static uint64_t warned_ns;
		uint64_t now = uv_hrtime();
		int warn = !warned_ns || now - warned_ns > 60000000000ull;

		if (warn)
			warned_ns = now;
		km_log(warn ? KM_LOG_WARN : KM_LOG_DEBUG, "netns cookie %llu: the tunnel's "
		       "connections to applications come from the pod's side, not the HBONE caller's "
		       "address: %s", (unsigned long long)want->netns_cookie, m.route_err);
	}
	rc = km_msg_reply_fds(&s->conn, env->request_id, m.fds, m.n);
	close_all(&m); /* the tunnel has its own copies now */
	if (rc == 0) {
		km_debug("pod sockets for netns cookie %llu: %s%u to connect", (unsigned long long)
			 want->netns_cookie, want->listen_port ? "a listener and " : "", want->connect);
		return KMESH__IPC__CODE__OK;
	}
	code = KMESH__IPC__CODE__RESOURCE_EXHAUSTED;
	snprintf(err, sizeof(err), "the sockets could not be sent now (%s): ask again",
		 uv_strerror(rc));
refuse:
	km_log(code == KMESH__IPC__CODE__NOT_FOUND ? KM_LOG_DEBUG : KM_LOG_WARN,
	       "pod sockets from pid %d refused: %s", (int)s->pid, err);
	km_msg_reply(&s->conn, env->request_id, code, err, 0);
	return code;
}
