/* metrics.c — the IPsec agent's metrics file (see metrics.h). */
#include "services/ipsec-agent/metrics.h"

#include "shared/process_metrics.h"
#include "shared/prom.h"
#include "shared/version.h"

static void render(const struct km_ipsec_agent *a, struct km_prom *p)
{
	uint64_t ingress = 0, egress = 0;

	for (size_t i = 0; i < a->plan.n_peers; i++) {
		ingress += a->plan.peers[i].n_accepted;
		egress += a->plan.peers[i].egress_spi != 0;
	}
	/* a name of its own: the page joins the files, and a family may appear only once */
	km_prom_family(p, "kmesh_ipsec_agent_build_info", "gauge", "the IPsec agent's build");
	km_prom_printf(p, "kmesh_ipsec_agent_build_info{version=\"%s\"} 1\n", km_version());
	km_prom_metric(p, "kmesh_ipsec_keys", "gauge", "keys held (the current one and older SPIs)", a->keys.n);
	km_prom_metric(p, "kmesh_ipsec_current_spi", "gauge", "SPI of the current key (0: none)",
	       a->keys.current);
	km_prom_metric(p, "kmesh_ipsec_peers", "gauge", "other nodes this node encrypts with",
	       a->plan.n_peers);
	km_prom_metric(p, "kmesh_ipsec_ingress_states", "gauge", "XFRM states decrypting a peer's traffic",
	       ingress);
	km_prom_metric(p, "kmesh_ipsec_egress_peers", "gauge", "peers traffic is encrypted to", egress);
	km_prom_metric(p, "kmesh_ipsec_xfrm_requests_total", "counter", "XFRM changes sent to the kernel",
	       a->link.sent);
	km_prom_metric(p, "kmesh_ipsec_xfrm_refused_total", "counter", "XFRM changes the kernel refused",
	       a->link.refused);
	km_prom_metric(p, "kmesh_ipsec_key_files_refused_total", "counter",
	       "key file versions refused, for any reason (the previous key stays)", a->keys_refused);
	km_prom_metric(p, "kmesh_ipsec_peers_pending", "gauge",
	       "peers with a rule the kernel refused, waiting for their next try",
	       km_ipsec_plan_pending(&a->plan));
	km_prom_metric(p, "kmesh_ipsec_peer_retries_total", "counter",
	       "peers applied again after the kernel refused some of their rules (1 s, doubling "
	       "to a minute)", a->plan.retries);
	km_prom_metric(p, "kmesh_ipsec_leftovers_removed_total", "counter",
	       "XFRM objects of ours that no peer needed, removed", a->reconciled);
	km_prom_metric(p, "kmesh_ipsec_errors_total", "counter", "refusals and derivation failures",
	       a->plan.errors);
}

void km_ipsec_metrics_init(struct km_ipsec_metrics *m, const char *dir)
{
	km_prom_file_init(&m->file, dir, "ipsec-agent");
}

void km_ipsec_metrics_write(struct km_ipsec_metrics *m, const struct km_ipsec_agent *a)
{
	struct km_prom p;

	if (!m->file.path[0])
		return;
	km_prom_init(&p);
	render(a, &p);
	km_process_metrics(&p, "ipsec-agent");
	km_prom_file_write(&m->file, &p);
}

void km_ipsec_metrics_free(struct km_ipsec_metrics *m)
{
	km_prom_file_free(&m->file);
}
