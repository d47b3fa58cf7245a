/* metrics.c — the tunnel's metrics file, <dir>/tunnel.prom (prom_file.h): pods and identities
 * held, certificates by state, CA calls by result, the soonest expiry, feeds refused; then the
 * process_* samples. */
#include "services/tunnel/tunnel.h"

#include <time.h>

#include "shared/process_metrics.h"
#include "shared/prom.h"
#include "shared/version.h"

/* HBONE inbound: listeners, connections, handshakes and streams by outcome. */
static void inbound(const struct km_inbound *ib, struct km_prom *p)
{
	const struct km_inbound_stats *s = &ib->stats;
	uint64_t streams = s->streams, r400 = s->refused_400, r401 = s->refused_401,
		 r503 = s->refused_503;

	km_inbound_open_streams(ib, &streams, &r400, &r401, &r503);
	km_prom_metric(p, "kmesh_tunnel_hbone_listeners", "gauge",
		       "enrolled pods whose port 15008 the tunnel serves", ib->listeners);
	km_prom_metric(p, "kmesh_tunnel_hbone_connections", "gauge",
		       "HBONE connections open (handshaking or carrying streams)", ib->n_conns);
	km_prom_family(p, "kmesh_tunnel_hbone_connections_total", "counter",
		       "HBONE connections accepted, and those refused by reason: full (past 16384 "
		       "open), no_certificate (the pod's identity has none yet), handshake (TLS "
		       "failed: no client certificate, another CA), timeout (no handshake in 10 s), "
		       "client (no h2, or not one SPIFFE id of this trust domain); and closed: "
		       "ping (a PING unanswered: a vanished client)");
	km_prom_sample(p, "kmesh_tunnel_hbone_connections_total", "result=\"accepted\"", s->accepted);
	km_prom_sample(p, "kmesh_tunnel_hbone_connections_total", "result=\"full\"", s->refused_full);
	km_prom_sample(p, "kmesh_tunnel_hbone_connections_total", "result=\"no_certificate\"",
		       s->no_certificate);
	km_prom_sample(p, "kmesh_tunnel_hbone_connections_total", "result=\"handshake\"",
		       s->handshake_failed);
	km_prom_sample(p, "kmesh_tunnel_hbone_connections_total", "result=\"timeout\"",
		       s->handshake_timeouts);
	km_prom_sample(p, "kmesh_tunnel_hbone_connections_total", "result=\"client\"",
		       s->client_refused);
	km_prom_sample(p, "kmesh_tunnel_hbone_connections_total", "result=\"ping\"",
		       s->ping_timeouts);
	km_prom_family(p, "kmesh_tunnel_hbone_streams_total", "counter",
		       "CONNECT streams, and those answered 400 (not a CONNECT to the pod's own "
		       "address), 401 (the destination's policies deny the client's principal) or "
		       "503 (the application refused, or a port of the tunnel's)");
	km_prom_sample(p, "kmesh_tunnel_hbone_streams_total", "result=\"all\"", streams);
	km_prom_sample(p, "kmesh_tunnel_hbone_streams_total", "result=\"400\"", r400);
	km_prom_sample(p, "kmesh_tunnel_hbone_streams_total", "result=\"401\"", r401);
	km_prom_sample(p, "kmesh_tunnel_hbone_streams_total", "result=\"503\"", r503);
	km_prom_family(p, "kmesh_tunnel_app_sockets_total", "counter",
		       "sockets to reach applications, made inside pods by the map writer: asked "
		       "(requests: a pod's pool refilled, or a stream that found it empty), pooled "
		       "(streams given one from the pool at once), asked_again (the map writer could "
		       "not send it at once: asked again shortly), failed (requests refused)");
	km_prom_sample(p, "kmesh_tunnel_app_sockets_total", "result=\"asked\"", s->sockets_asked);
	km_prom_sample(p, "kmesh_tunnel_app_sockets_total", "result=\"pooled\"", s->sockets_pooled);
	km_prom_sample(p, "kmesh_tunnel_app_sockets_total", "result=\"asked_again\"",
		       s->sockets_asked_again);
	km_prom_sample(p, "kmesh_tunnel_app_sockets_total", "result=\"failed\"", s->sockets_failed);
	km_prom_family(p, "kmesh_tunnel_hbone_rechecks_total", "counter",
		       "open HBONE streams asked again after the xDS agent's policies changed, and "
		       "those closed (reset) because the policies deny them now");
	km_prom_sample(p, "kmesh_tunnel_hbone_rechecks_total", "result=\"asked\"",
		       s->streams_rechecked);
	km_prom_sample(p, "kmesh_tunnel_hbone_rechecks_total", "result=\"closed\"",
		       s->streams_policy_closed);
	km_prom_family(p, "kmesh_tunnel_hbone_decisions_total", "counter",
		       "HBONE streams' authorization decisions by where they came from: agent (the "
		       "xDS agent asked) or cache (one the agent gave for the same principal, "
		       "addresses and port, kept until it tells of a change of its policies or "
		       "workloads)");
	km_prom_sample(p, "kmesh_tunnel_hbone_decisions_total", "by=\"agent\"", s->decisions_asked);
	km_prom_sample(p, "kmesh_tunnel_hbone_decisions_total", "by=\"cache\"",
		       ib->authz_cache.hits);
	km_prom_metric(p, "kmesh_tunnel_hbone_decisions_cached", "gauge",
		       "decisions kept (at most 4096; all dropped at each change the agent tells)",
		       ib->authz_cache.n);
	km_prom_family(p, "kmesh_tunnel_app_connections_total", "counter",
		       "connections to applications for HBONE streams, by the source the application "
		       "sees: caller (the HBONE client's address, as with ztunnel) or pod (127.0.0.6 "
		       "or the pod's IPv6 address: --hbone-app-source pod, the families differ, or "
		       "the pod could not be set up)");
	km_prom_sample(p, "kmesh_tunnel_app_connections_total", "source=\"caller\"",
		       s->app_sources[0]);
	km_prom_sample(p, "kmesh_tunnel_app_connections_total", "source=\"pod\"", s->app_sources[1]);
	km_prom_metric(p, "kmesh_tunnel_stream_reports_sent_total", "counter",
		       "streams' open and close reports sent to the xDS agent (istio_tcp_* and the "
		       "access log)", ib->reports.sent);
	km_prom_metric(p, "kmesh_tunnel_stream_reports_lost_total", "counter",
		       "streams' reports lost: more than 8192 waited (the xDS agent away or slow)",
		       ib->reports.lost);
}

/* HBONE outbound: connections taken, relayed and reset by reason; the pool. */
static void outbound(const struct km_outbound *ob, struct km_prom *p)
{
	const struct km_outbound_stats *s = &ob->stats;

	km_prom_metric(p, "kmesh_tunnel_outbound_connections_total", "counter",
		       "application connections the kernel handed to the tunnel for HBONE",
		       s->accepted);
	km_prom_metric(p, "kmesh_tunnel_outbound_relayed_total", "counter",
		       "... relayed over HBONE (the server answered 200)", s->relayed);
	km_prom_metric(p, "kmesh_tunnel_outbound_cert_waits_total", "counter",
		       "... that waited for their pod's certificate (--hbone-outbound-cert-wait-ms)",
		       s->cert_waits);
	km_prom_family(p, "kmesh_tunnel_outbound_refused_total", "counter",
		       "... reset instead, by reason: no_origin (the kernel had no record of where "
		       "it was for), unknown_source (not from a pod enrolled here), no_certificate, "
		       "no_destination (no workload there, or the xDS agent away), full, connect "
		       "(the HBONE connection failed: TCP, TLS, the server's identity), status_400, "
		       "status_401 (the destination's policies deny us), status_503, status_other, "
		       "reset (by the server before an answer)");
	for (int r = 0; r < KM_OB_REFUSALS; r++) {
		char labels[48];

		snprintf(labels, sizeof(labels), "reason=\"%s\"", km_outbound_refusal_names[r]);
		km_prom_sample(p, "kmesh_tunnel_outbound_refused_total", labels, s->refused[r]);
	}
	km_prom_metric(p, "kmesh_tunnel_outbound_pool_connections", "gauge",
		       "HBONE connections in the outbound pool", ob->n_pool);
	km_prom_metric(p, "kmesh_tunnel_outbound_streams", "gauge",
		       "HBONE streams open on them", km_outbound_streams(ob));
	km_prom_family(p, "kmesh_tunnel_outbound_pool_connections_total", "counter",
		       "HBONE connections the pool opened, those that failed, and those closed when "
		       "a PING went unanswered (ping: the server gone)");
	km_prom_sample(p, "kmesh_tunnel_outbound_pool_connections_total", "result=\"opened\"",
		       s->conns_opened);
	km_prom_sample(p, "kmesh_tunnel_outbound_pool_connections_total", "result=\"failed\"",
		       s->conns_failed);
	km_prom_sample(p, "kmesh_tunnel_outbound_pool_connections_total", "result=\"ping\"",
		       s->conns_ping);
}

static void render(const struct km_tunnel *t, struct km_prom *p)
{
	uint64_t by_state[KM_CERT_EXPIRED + 1] = { 0 };
	int64_t now = (int64_t)time(NULL), soonest = -1;
	char labels[64];

	for (size_t i = 0; i < t->certs.n; i++) {
		const struct km_cert *e = t->certs.by_id[i];

		by_state[km_cert_state(e, now)]++;
		if (e->has_cert && (soonest < 0 || e->cert.not_after - now < soonest))
			soonest = e->cert.not_after - now;
	}
	km_prom_family(p, "kmesh_tunnel_build_info", "gauge", "the tunnel's build");
	km_prom_printf(p, "kmesh_tunnel_build_info{version=\"%s\"} 1\n", km_version());
	km_prom_metric(p, "kmesh_tunnel_pods", "gauge", "enrolled pods the CNI agent named",
		       t->pods.n);
	km_prom_metric(p, "kmesh_tunnel_identities", "gauge",
		       "identities (service accounts) with an enrolled pod on this node",
		       t->pods.n_ids);
	km_prom_metric(p, "kmesh_tunnel_pods_refused_total", "counter",
		       "pods the CNI agent named that were refused (a malformed name or address, or "
		       "past 65536)", t->pods.refused);
	km_prom_family(p, "kmesh_tunnel_certificates", "gauge",
		       "workload certificates by state: pending, failed, valid, renewing, expired");
	for (int s = 0; s <= KM_CERT_EXPIRED; s++) {
		snprintf(labels, sizeof(labels), "state=\"%s\"", km_cert_state_name(s));
		km_prom_sample(p, "kmesh_tunnel_certificates", labels, by_state[s]);
	}
	km_prom_family(p, "kmesh_tunnel_ca_requests_total", "counter",
		       "CreateCertificate calls to istiod's CA by result: issued (a first "
		       "certificate), renewed, failed");
	km_prom_sample(p, "kmesh_tunnel_ca_requests_total", "result=\"issued\"", t->certs.stats.fetched);
	km_prom_sample(p, "kmesh_tunnel_ca_requests_total", "result=\"renewed\"", t->certs.stats.renewed);
	km_prom_sample(p, "kmesh_tunnel_ca_requests_total", "result=\"failed\"", t->certs.stats.failed);
	km_prom_metric(p, "kmesh_tunnel_certificates_dropped_total", "counter",
		       "certificates dropped (keys wiped) when their identity's last pod left",
		       t->certs.stats.dropped);
	km_prom_family(p, "kmesh_tunnel_certificate_expiry_seconds", "gauge",
		       "seconds until the soonest held certificate expires (-1: none held)");
	km_prom_printf(p, "kmesh_tunnel_certificate_expiry_seconds %lld\n", (long long)soonest);
	km_prom_metric(p, "kmesh_tunnel_feeds_refused_total", "counter",
		       "TunnelPods messages from a peer other than the CNI agent, refused",
		       t->feeds_refused);
	if (t->inbound_on)
		inbound(&t->inbound, p);
	if (t->outbound_on)
		outbound(&t->outbound, p);
}

void km_tunnel_metrics_write(struct km_tunnel *t)
{
	struct km_prom p;

	if (!t->metrics.path[0])
		return;
	km_prom_init(&p);
	render(t, &p);
	km_process_metrics(&p, "tunnel");
	km_prom_file_write(&t->metrics, &p);
}
