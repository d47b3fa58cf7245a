/* authz_recheck.c — see authz_recheck.h. */
#include "services/map-writer/authz_recheck.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "shared/addr.h"
#include "shared/log.h"
#include "shared/netns.h"

struct enter {
	uint64_t cookie; /* the enrolled one */
	int link_fd;
	int iter_fd; /* out */
};

/* Inside the pod's namespace: the same namespace still (a path can be reused), then the iterator,
 * which walks the sockets of the namespace it is created in. */
static int open_iter_here(void *arg, char *err, size_t errlen)
{
	struct enter *e = arg;
	uint64_t here;
	int rc = km_netns_cookie_here(&here, err, errlen);

	if (rc)
		return rc;
	if (here != e->cookie) {
		snprintf(err, errlen, "now holds netns cookie %llu", (unsigned long long)here);
		return -ESTALE; /* the enrolled namespace is gone; the path names another */
	}
	e->iter_fd = bpf_iter_create(e->link_fd);
	if (e->iter_fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot create the TCP iterator: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

/* Run the iterator to its end; each record is a connection it closed. */
static int read_iter(struct km_authz_recheck *r, int fd, uint64_t cookie, char *err, size_t errlen)
{
	struct km_authz_closed recs[64];
	size_t have = 0;

	for (;;) {
		ssize_t n = read(fd, (char *)recs + have, sizeof(recs) - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			snprintf(err, errlen, "reading the TCP iterator: %s", strerror(e));
			return -e;
		}
		have += (size_t)n;
		for (size_t i = 0; i < have / sizeof(recs[0]); i++) {
			if (recs[i].err) {
				r->pass_failed++;
				continue;
			}
			r->pass_closed++;
			if (r->n_logged < KM_AUTHZ_RECHECK_LOGGED) {
				r->logged_cookie[r->n_logged] = cookie;
				r->logged[r->n_logged++] = recs[i];
			}
		}
		if (have % sizeof(recs[0]))
			memmove(recs, (char *)recs + have - have % sizeof(recs[0]), have % sizeof(recs[0]));
		have %= sizeof(recs[0]);
		if (n == 0)
			return 0;
	}
}

static void run_pass(uv_work_t *req)
{
	struct km_authz_recheck *r = req->data;
	struct km_manage_key key, next;
	const void *prev = NULL;

	while (!__atomic_load_n(&r->closing, __ATOMIC_RELAXED) &&
	       bpf_map_get_next_key(r->fd_pod_netns, prev, &next) == 0) {
		struct km_pod_netns_value where;
		struct km_manage_value enrolled;
		struct enter e = { .cookie = next.netns_cookie, .link_fd = r->link_fd, .iter_fd = -1 };
		char err[200];
		int rc;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(r->fd_pod_netns, &key, &where) != 0 ||
		    bpf_map_lookup_elem(r->fd_manage, &key, &enrolled) != 0)
			continue; /* unenrolled meanwhile (or left by an older map writer) */
		where.path[sizeof(where.path) - 1] = '\0';
		r->pass_pods++;
		/* the map writer's own namespace (a VM enrolled as a whole): nothing to enter, and its
		 * path (/proc/1/ns/net) may not open without CAP_SYS_PTRACE */
		rc = key.netns_cookie == r->own_netns_cookie
			     ? open_iter_here(&e, err, sizeof(err))
			     : km_netns_call(where.path, open_iter_here, &e, err, sizeof(err));
		if (rc == 0) {
			rc = read_iter(r, e.iter_fd, e.cookie, err, sizeof(err));
			close(e.iter_fd);
		}
		if (rc == -ESTALE) {
			r->pass_gone++; /* the pod went away; its CNI DEL removes the row */
		} else if (rc == -ENOENT) {
			r->pass_missing++; /* the same, or the mounts are not visible here */
		} else if (rc) {
			if (!r->pass_errors++)
				snprintf(r->pass_error, sizeof(r->pass_error), "pod netns %s: %s%s",
					 where.path, err,
					 rc == -EPERM || rc == -EACCES
						 ? " (the map writer needs CAP_SYS_ADMIN to enter pod "
						   "network namespaces)" : "");
		}
	}
}

static void pass_done(uv_work_t *req, int status)
{
	struct km_authz_recheck *r = req->data;
	char src[KM_ADDR_STRLEN], dst[KM_ADDR_STRLEN];

	r->busy = 0;
	if (status == UV_ECANCELED)
		return;
	r->passes++;
	r->closed += r->pass_closed;
	for (size_t i = 0; i < r->n_logged; i++) {
		const struct km_authz_closed *c = &r->logged[i];

		km_info("authz: closed %s:%u -> %s:%u in pod netns %llu: denied now (policy stat %u)",
			km_addr_format(&c->src, src), c->sport, km_addr_format(&c->dst, dst), c->dport,
			(unsigned long long)r->logged_cookie[i], c->stat_id);
	}
	if (r->pass_closed > r->n_logged)
		km_info("authz: ... and %llu more connections closed",
			(unsigned long long)(r->pass_closed - r->n_logged));
	if (r->pass_failed)
		km_warn("authz: %llu denied connections could not be closed (bpf_sock_destroy refused)",
			(unsigned long long)r->pass_failed);
	if (r->pass_errors)
		km_warn("authz: open connections of %u of %u pods not re-checked; the first: %s",
			r->pass_errors, r->pass_pods, r->pass_error);
	/* one pod without its mount is a deleted pod before its CNI DEL; all of them is a map
	 * writer that cannot see the runtime's netns mounts */
	km_log(r->pass_missing && r->pass_missing == r->pass_pods ? KM_LOG_WARN : KM_LOG_DEBUG,
	       "authz: re-check pass over %u pods (%u gone, %u without their netns mount): %llu "
	       "closed", r->pass_pods, r->pass_gone, r->pass_missing,
	       (unsigned long long)r->pass_closed);
	if (r->again && !r->closing) {
		r->again = 0;
		km_authz_recheck_request(r);
	}
}

static void on_timer(uv_timer_t *t)
{
	struct km_authz_recheck *r = t->data;

	if (r->hold && *r->hold) {
		r->held = 1;
		return;
	}
	r->n_logged = 0;
	r->pass_closed = r->pass_failed = 0;
	r->pass_pods = r->pass_gone = r->pass_missing = r->pass_errors = 0;
	r->pass_error[0] = '\0';
	r->work.data = r;
	if (uv_queue_work(r->loop, &r->work, run_pass, pass_done) != 0) {
		km_warn("authz: cannot queue the re-check of open connections");
		return;
	}
	r->busy = 1;
}


int km_authz_recheck_init(struct km_authz_recheck *r, uv_loop_t *loop, int link_fd,
			  int fd_manage, int fd_pod_netns, const int *hold)
{
	memset(r, 0, sizeof(*r));
	r->loop = loop;
	r->link_fd = link_fd;
	r->fd_manage = fd_manage;
	r->fd_pod_netns = fd_pod_netns;
	r->hold = hold;
	if (km_netns_cookie_here(&r->own_netns_cookie, NULL, 0) != 0)
		r->own_netns_cookie = 0; /* cookies start at 1: then no pod matches */
	r->timer.data = r;
	return uv_timer_init(loop, &r->timer);
}

void km_authz_recheck_request(struct km_authz_recheck *r)
{
	uint64_t now = uv_now(r->loop), delay = KM_AUTHZ_RECHECK_DELAY_MS;

	if (r->link_fd < 0 || r->closing)
		return;
	if (r->busy) {
		r->again = 1;
		return;
	}
	if (!uv_is_active((uv_handle_t *)&r->timer))
		r->burst_start = now;
	else if (r->burst_start + KM_AUTHZ_RECHECK_MAX_DELAY_MS < now + delay)
		delay = r->burst_start + KM_AUTHZ_RECHECK_MAX_DELAY_MS > now
				? r->burst_start + KM_AUTHZ_RECHECK_MAX_DELAY_MS - now : 0;
	uv_timer_start(&r->timer, on_timer, delay, 0); /* restarts a pending one */
}

void km_authz_recheck_release(struct km_authz_recheck *r)
{
	if (r->held) {
		r->held = 0;
		km_authz_recheck_request(r);
	}
}

void km_authz_recheck_close(struct km_authz_recheck *r)
{
	__atomic_store_n(&r->closing, 1, __ATOMIC_RELAXED);
	if (r->loop && !uv_is_closing((uv_handle_t *)&r->timer))
		uv_close((uv_handle_t *)&r->timer, NULL);
}
