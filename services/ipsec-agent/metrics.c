/* metrics.c — the IPsec agent's metrics file (see metrics.h). */
#include "services/ipsec-agent/metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shared/atomic_file.h"
#include "shared/log.h"
#include "shared/prom.h"
#include "shared/version.h"

static void metric(struct km_prom *p, const char *name, const char *type, const char *help,
		   uint64_t v)
{
	km_prom_family(p, name, type, help);
	km_prom_sample(p, name, "", v);
}

static void render(const struct km_ipsec_agent *a, struct km_prom *p)
{
	uint64_t ingress = 0, egress = 0;

	for (size_t i = 0; i < a->plan.n_peers; i++) {
		ingress += a->plan.peers[i].n_accepted;
		egress += a->plan.peers[i].egress_spi != 0;
	}
	km_prom_family(p, "kmesh_build_info", "gauge", "this build, as a label");
	km_prom_printf(p, "kmesh_build_info{component=\"ipsec-agent\",version=\"%s\"} 1\n",
		       km_version());
	metric(p, "kmesh_ipsec_keys", "gauge", "keys held (the current one and older SPIs)", a->keys.n);
	metric(p, "kmesh_ipsec_current_spi", "gauge", "SPI of the current key (0: none)",
	       a->keys.current);
	metric(p, "kmesh_ipsec_peers", "gauge", "other nodes this node encrypts with",
	       a->plan.n_peers);
	metric(p, "kmesh_ipsec_ingress_states", "gauge", "XFRM states decrypting a peer's traffic",
	       ingress);
	metric(p, "kmesh_ipsec_egress_peers", "gauge", "peers traffic is encrypted to", egress);
	metric(p, "kmesh_ipsec_xfrm_requests_total", "counter", "XFRM changes sent to the kernel",
	       a->link.sent);
	metric(p, "kmesh_ipsec_xfrm_refused_total", "counter", "XFRM changes the kernel refused",
	       a->link.refused);
	metric(p, "kmesh_ipsec_key_files_refused_total", "counter",
	       "key file versions refused (the previous key stays)", a->keys_refused);
	metric(p, "kmesh_ipsec_leftovers_removed_total", "counter",
	       "XFRM objects of ours that no peer needed, removed", a->reconciled);
	metric(p, "kmesh_ipsec_errors_total", "counter", "refusals and derivation failures",
	       a->plan.errors);
}

void km_ipsec_metrics_init(struct km_ipsec_metrics *m, const char *dir)
{
	memset(m, 0, sizeof(*m));
	if (!dir || !*dir)
		return;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		km_warn("cannot make the metrics directory %s: %s; no metrics file", dir,
			strerror(errno));
		return;
	}
	snprintf(m->path, sizeof(m->path), "%s/ipsec-agent.prom", dir);
}

void km_ipsec_metrics_write(struct km_ipsec_metrics *m, const struct km_ipsec_agent *a)
{
	struct km_prom p;
	char err[256];

	if (!m->path[0])
		return;
	km_prom_init(&p);
	render(a, &p);
	if (!p.oom && p.buf && !(m->last && !strcmp(m->last, p.buf))) {
		if (km_atomic_write(m->path, p.buf, p.len, 0644, (uid_t)-1, (gid_t)-1, KM_ATOMIC_NOSYNC,
				    err, sizeof(err)) == 0) {
			free(m->last);
			m->last = p.buf;
			p.buf = NULL;
		} else if (!m->failures++) {
			km_warn("cannot write the metrics file %s: %s", m->path, err);
		}
	}
	km_prom_free(&p);
}

void km_ipsec_metrics_free(struct km_ipsec_metrics *m)
{
	free(m->last);
	m->last = NULL;
}
