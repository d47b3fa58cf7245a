/* authz_recheck.c — see authz_recheck.h. */
#include "services/map-writer/authz_recheck.h"

#include <string.h>

#include "shared/addr.h"
#include "shared/log.h"

/* A record of the re-check iterator: a connection it closed (or could not). */
static void on_record(void *arg, uint64_t cookie, const void *data)
{
	struct km_authz_recheck *r = arg;
	struct km_authz_closed rec;

	memcpy(&rec, data, sizeof(rec));
	if (rec.err) {
		r->pass_failed++;
		return;
	}
	r->pass_closed++;
	if (r->n_logged < KM_AUTHZ_RECHECK_LOGGED) {
		r->logged_cookie[r->n_logged] = cookie;
		r->logged[r->n_logged++] = rec;
	}
}

static void run_pass(uv_work_t *req)
{
	struct km_authz_recheck *r = req->data;

	km_pod_iter_walk(&r->env, r->link_fd, sizeof(struct km_authz_closed), on_record, r,
			 &r->closing, &r->pass);
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
	if (r->pass.errors)
		km_warn("authz: open connections of %u of %u pods not re-checked; the first: %s",
			r->pass.errors, r->pass.pods, r->pass.error);
	/* one pod without its mount is a deleted pod before its CNI DEL; all of them is a map
	 * writer that cannot see the runtime's netns mounts */
	km_log(r->pass.missing && r->pass.missing == r->pass.pods ? KM_LOG_WARN : KM_LOG_DEBUG,
	       "authz: re-check pass over %u pods (%u gone, %u without their netns mount): %llu "
	       "closed", r->pass.pods, r->pass.gone, r->pass.missing,
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
	km_pod_iter_env_init(&r->env, fd_manage, fd_pod_netns);
	r->hold = hold;
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
