/* ads_demand.c — the ADS session on demand (ads_client.h, demand.h): the keys sent on each
 * stream (those the first request could not carry, after it), the refreshes istiod needs to
 * tell of new members, and the file the keys are kept in across restarts. */
#include "services/xds-agent/ads/ads_demand.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shared/log.h"

#define DEMAND_SAVE_DELAY_MS 1000 /* demands of a burst are written once */

/* One spontaneous Address request (never an ACK: no nonce). Returns 0, or -1. */
static int send_subscription(struct km_ads_client *c, char *const *sub, size_t n_sub,
			     char *const *unsub, size_t n_unsub)
{
	size_t len;
	uint8_t *buf = km_ads_build_subscription(c, &c->address, sub, n_sub, unsub, n_unsub, &len);
	int rc = buf ? km_grpc_stream_send(&c->stream, buf, len) : -1;

	free(buf);
	c->demand_requests += rc == 0;
	return rc;
}

/* Every demand not yet sent on this stream, in requests of at most KM_DEMAND_PER_REQUEST keys,
 * never mixed into an ACK (istiod treats a request with a nonce as an ACK only). */
static void demand_send(struct km_ads_client *c)
{
	char *const *names;
	size_t n;

	while (c->connected && (n = km_demand_unsent(&c->demand, &names)) > 0) {
		char *held[KM_DEMAND_PER_REQUEST];
		size_t n_held = 0;

		/* a key that names a service held already is subscribed already (its answer to
		 * another key named it): subscribing it again would change nothing, which istiod
		 * refuses; unsubscribed first, it is answered with its members now */
		for (size_t i = 0; i < n; i++)
			if (km_model_find_service(c->model, names[i]))
				held[n_held++] = names[i];
		if ((n_held && send_subscription(c, NULL, 0, held, n_held) != 0) ||
		    send_subscription(c, names, n, NULL, 0) != 0) {
			km_warn("could not send a subscription of %zu Address keys to istiod; they are "
				"sent again on the next stream", n);
			return;
		}
		km_demand_mark_sent(&c->demand, n);
		km_debug("subscribed to %zu more Address keys (%zu demanded)", n, c->demand.n);
	}
}

static void on_demand_flush(uv_timer_t *h)
{
	demand_send(h->data);
}

/* Every key sent on this stream, unsubscribed then subscribed again, KM_DEMAND_PER_REQUEST at a
 * time: istiod answers each subscription with what the keys name now. */
static void on_demand_refresh(uv_timer_t *h)
{
	struct km_ads_client *c = h->data;
	size_t done = 0;

	while (c->connected && done < c->demand.sent) {
		size_t n = c->demand.sent - done;
		char *const *keys = c->demand.keys + done;

		if (n > KM_DEMAND_PER_REQUEST)
			n = KM_DEMAND_PER_REQUEST;
		if (send_subscription(c, NULL, 0, keys, n) != 0 ||
		    send_subscription(c, keys, n, NULL, 0) != 0) {
			km_warn("could not ask istiod again for %zu Address keys; the next stream asks "
				"for all of them", n);
			return;
		}
		done += n;
	}
	if (done) {
		c->demand_refreshes++;
		km_debug("asked istiod again for the %zu demanded Address keys", done);
	}
}

static void on_demand_save(uv_timer_t *h)
{
	struct km_ads_client *c = h->data;

	if (km_demand_save(&c->demand, c->demand_file) != 0) {
		if (!c->demand_save_failing)
			km_warn("cannot keep the demanded keys in %s (%s): a restarted agent will ask "
				"for them only as pods use them again", c->demand_file, strerror(errno));
		c->demand_save_failing = 1;
		return;
	}
	if (c->demand_save_failing)
		km_info("the demanded keys are kept in %s again", c->demand_file);
	c->demand_save_failing = 0;
}

void km_ads_client_set_on_demand(struct km_ads_client *c, size_t max, const char *file,
				 unsigned refresh_s)
{
	c->on_demand = 1;
	km_demand_init(&c->demand, max);
	uv_timer_init(c->loop, &c->demand_flush);
	c->demand_flush.data = c;
	uv_timer_init(c->loop, &c->demand_save);
	c->demand_save.data = c;
	uv_timer_init(c->loop, &c->demand_refresh);
	c->demand_refresh.data = c;
	if (refresh_s)
		uv_timer_start(&c->demand_refresh, on_demand_refresh, (uint64_t)refresh_s * 1000,
			       (uint64_t)refresh_s * 1000);
	c->demand_file = file && *file ? file : NULL;
	if (c->demand_file) {
		size_t bad;
		long n = km_demand_load(&c->demand, c->demand_file, &bad);

		if (n < 0)
			km_warn("cannot read the demanded keys kept in %s: %s; starting with none",
				c->demand_file, strerror(errno));
		else if (n > 0 || bad)
			km_info("%ld demanded keys read from %s%s", n, c->demand_file,
				bad ? " (some lines were no key, or past the bound: skipped)" : "");
	}
	km_info("on demand: Addresses are asked for as this node uses them (at most %zu keys%s%s; "
		"asked again every %u s)", c->demand.max, c->demand_file ? ", kept in " : "",
		c->demand_file ? c->demand_file : "", refresh_s);
}

enum km_demand_rc km_ads_client_demand(struct km_ads_client *c, const char *key)
{
	enum km_demand_rc rc;

	if (!c->on_demand)
		return KM_DEMAND_INVALID;
	rc = km_demand_add(&c->demand, key);
	if (rc == KM_DEMAND_NEW) {
		km_debug("demand %s", key);
		if (c->connected && !uv_is_active((uv_handle_t *)&c->demand_flush))
			uv_timer_start(&c->demand_flush, on_demand_flush, 0, 0);
		if (c->demand_file && !uv_is_active((uv_handle_t *)&c->demand_save))
			uv_timer_start(&c->demand_save, on_demand_save, DEMAND_SAVE_DELAY_MS, 0);
	} else if (rc == KM_DEMAND_FULL && (c->demand.refused_full & (c->demand.refused_full - 1)) == 0) {
		km_warn("%llu demands refused: %zu Address keys held already (--xds-on-demand-max)",
			(unsigned long long)c->demand.refused_full, c->demand.max);
	}
	return rc;
}

void km_ads_demand_opened(struct km_ads_client *c)
{
	km_demand_resend_all(&c->demand); /* a subscription lives as long as its stream */
	km_demand_mark_sent(&c->demand, c->demand_initial); /* in the first request */
	demand_send(c);
}

void km_ads_demand_stop(struct km_ads_client *c)
{
	uv_close((uv_handle_t *)&c->demand_flush, NULL);
	if (uv_is_active((uv_handle_t *)&c->demand_save))
		on_demand_save(&c->demand_save); /* what is pending, before exiting */
	uv_close((uv_handle_t *)&c->demand_save, NULL);
	uv_close((uv_handle_t *)&c->demand_refresh, NULL);
	km_demand_free(&c->demand);
}
