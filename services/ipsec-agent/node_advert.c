/* node_advert.c — see node_advert.h. */
#include "services/ipsec-agent/node_advert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/ipsec-agent/node_info.h"
#include "shared/kube/kube_client.h"
#include "shared/log.h"

#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS 60000
#define REQUEST_TIMEOUT_MS 10000
#define AGAIN_CALM_MS 60000
#define COLLECTION "/apis/" KM_NODE_INFO_API "/namespaces/" KM_NODE_INFO_NAMESPACE "/kmeshnodeinfos"

static void start_write(struct km_node_advert *a);

/* On the thread pool: reads a->doing, a->kubeconfig and a->stopping, writes only a->w_status
 * and a->w_err (copied by the loop thread once the work is done). */
static void do_write(uv_work_t *req)
{
	struct km_node_advert *a = req->data;
	struct km_kube_client c;
	json_t *obj = km_node_info_build(&a->doing);
	char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	char path[512];

	json_decref(obj);
	a->w_status = -1;
	if (!body) {
		snprintf(a->w_err, sizeof(a->w_err), "out of memory");
		return;
	}
	if (!km_kube_valid_name(a->doing.name)) {
		snprintf(a->w_err, sizeof(a->w_err), "node name '%.60s' cannot name a Kubernetes "
			 "object", a->doing.name);
	} else if (km_kube_open(&c, a->kubeconfig, REQUEST_TIMEOUT_MS, a->w_err,
				sizeof(a->w_err)) == 0) {
		c.stop = &a->stopping;
		snprintf(path, sizeof(path), COLLECTION "/%s", a->doing.name);
		a->w_status = km_kube_request(&c, "PATCH", path, "application/merge-patch+json", body,
					      NULL, a->w_err, sizeof(a->w_err));
		if (a->w_status == 404) /* none yet: made */
			a->w_status = km_kube_request(&c, "POST", COLLECTION, "application/json", body,
						      NULL, a->w_err, sizeof(a->w_err));
		km_kube_close(&c);
	}
	free(body);
}

static void on_retry(uv_timer_t *t)
{
	start_write(t->data);
}

static void written(uv_work_t *req, int status)
{
	struct km_node_advert *a = req->data;

	a->busy = 0;
	if (a->stopping || status == UV_ECANCELED)
		return;
	a->status = a->w_status;
	snprintf(a->err, sizeof(a->err), "%s", a->w_err);
	if (a->status >= 200 && a->status <= 299) {
		a->writes++;
		a->retry_ms = 0;
		a->written_at_ms = uv_now(a->loop);
		a->written = km_ipsec_node_equal(&a->doing, &a->want) && !a->again;
		km_info("KmeshNodeInfo %s/%s written: SPI %u advertised to the peers",
			KM_NODE_INFO_NAMESPACE, a->doing.name, a->doing.spi);
		a->done(a->arg, a->doing.spi);
		if (a->again) { /* deleted or changed while we wrote: once more, not at once */
			a->again = 0;
			km_node_advert_again(a);
		} else if (!a->written) {
			start_write(a); /* a newer wish came meanwhile */
		}
		return;
	}
	a->failures++;
	a->retry_ms = a->retry_ms ? (a->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : a->retry_ms * 2)
				  : RETRY_MIN_MS;
	km_error("cannot write KmeshNodeInfo %s/%s (SPI %u): %s; peers keep encrypting with what "
		 "they saw last; trying again in %llu s", KM_NODE_INFO_NAMESPACE, a->doing.name,
		 a->doing.spi, a->err, (unsigned long long)(a->retry_ms / 1000));
	uv_timer_start(&a->retry, on_retry, a->retry_ms, 0);
}

static void start_write(struct km_node_advert *a)
{
	if (a->busy || a->stopping || !a->have_want || a->written)
		return;
	uv_timer_stop(&a->retry);
	a->doing = a->want;
	a->busy = 1;
	a->work.data = a;
	if (uv_queue_work(a->loop, &a->work, do_write, written) != 0) {
		a->busy = 0;
		km_error("cannot queue the KmeshNodeInfo write");
	}
}

int km_node_advert_init(struct km_node_advert *a, uv_loop_t *loop, const char *kubeconfig,
			void (*done)(void *arg, uint32_t spi), void *arg)
{
	memset(a, 0, sizeof(*a));
	if (strlen(kubeconfig) >= sizeof(a->kubeconfig))
		return -1;
	snprintf(a->kubeconfig, sizeof(a->kubeconfig), "%s", kubeconfig);
	a->loop = loop;
	a->done = done;
	a->arg = arg;
	if (uv_timer_init(loop, &a->retry) != 0)
		return -1;
	a->retry.data = a;
	return 0;
}

void km_node_advert_set(struct km_node_advert *a, const struct km_ipsec_node *self)
{
	if (a->have_want && a->written && km_ipsec_node_equal(&a->want, self)) {
		a->done(a->arg, self->spi); /* already there */
		return;
	}
	a->want = *self;
	a->have_want = 1;
	a->written = 0;
	a->retry_ms = 0;
	a->again_n = 0;
	start_write(a);
}

void km_node_advert_again(struct km_node_advert *a)
{
	uint64_t delay;

	if (!a->have_want || a->stopping)
		return;
	if (a->busy) {
		a->again = 1;
		return;
	}
	a->written = 0;
	if (uv_now(a->loop) - a->last_again_ms > AGAIN_CALM_MS)
		a->again_n = 0;
	a->last_again_ms = uv_now(a->loop);
	delay = a->again_n ? (uint64_t)RETRY_MIN_MS << (a->again_n < 7 ? a->again_n - 1 : 6) : 0;
	uv_timer_start(&a->retry, on_retry, delay < RETRY_MAX_MS ? delay : RETRY_MAX_MS, 0);
	a->again_n++;
}

void km_node_advert_stop(struct km_node_advert *a)
{
	if (!a->loop || a->stopping)
		return;
	a->stopping = 1;
	uv_close((uv_handle_t *)&a->retry, NULL);
}

json_t *km_node_advert_status(const struct km_node_advert *a)
{
	int ok = a->status >= 200 && a->status <= 299;

	return json_pack("{s:I, s:b, s:I, s:I, s:i, s:s}", "spi",
			 (json_int_t)(a->have_want ? a->want.spi : 0), "written", a->written,
			 "writes", (json_int_t)a->writes, "failures", (json_int_t)a->failures,
			 "last_status", a->status, "last_error", a->failures && !ok ? a->err : "");
}
