/* tunnel_feed.c — see tunnel_feed.h. */
#include "services/cni-agent/tunnel_feed.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/addr.h"
#include "shared/atomic_file.h"
#include "shared/log.h"

void km_tunnel_feed_init(struct km_tunnel_feed *f, uv_loop_t *loop, const char *socket,
			 int timeout_ms, unsigned every_ms, const struct km_pod_cache *cache)
{
	memset(f, 0, sizeof(*f));
	if (!socket || !*socket)
		return;
	km_peer_calls_init(&f->calls, loop, socket, timeout_ms, "tunnel");
	f->cache = cache;
	f->pods = json_object();
	f->every_ms = every_ms;
	f->on = f->pods != NULL;
}

void km_tunnel_feed_add(struct km_tunnel_feed *f, const char *container_id, uint64_t cookie,
			const char *ns, const char *name, const ProtobufCBinaryData *addresses,
			size_t n_addresses)
{
	json_t *addrs, *p;

	if (!f->on)
		return;
	addrs = json_array();
	for (size_t i = 0; addrs && i < n_addresses && i < 8; i++) {
		struct km_addr a;
		char buf[KM_ADDR_STRLEN];

		if (km_addr_from_bytes(addresses[i].data, addresses[i].len, &a) == 0)
			json_array_append_new(addrs, json_string(km_addr_format(&a, buf)));
	}
	p = json_pack("{s:I, s:s, s:s, s:o}", "cookie", (json_int_t)cookie, "ns", ns, "name", name,
		      "addrs", addrs ? addrs : json_array());
	if (p && json_object_set_new(f->pods, container_id, p) == 0)
		f->dirty = 1;
}

void km_tunnel_feed_remove(struct km_tunnel_feed *f, const char *container_id)
{
	if (f->on && json_object_del(f->pods, container_id) == 0)
		f->dirty = 1;
}

void km_tunnel_feed_seed(struct km_tunnel_feed *f, const char *state_dir)
{
	char dir[4200];
	struct dirent **names;
	int n;

	if (!f->on)
		return;
	snprintf(dir, sizeof(dir), "%s/containers", state_dir);
	n = scandir(dir, &names, NULL, NULL);
	for (int i = 0; i < n; i++) {
		char path[4500], why[256], *text = NULL, pod[520] = "", *slash;
		uint64_t cookie;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && km_read_file(path, 4096, &text, why, sizeof(why)) > 0 &&
		    sscanf(text, "%" SCNu64 " %519s", &cookie, pod) == 2 && (slash = strchr(pod, '/'))) {
			*slash = '\0';
			km_tunnel_feed_add(f, names[i]->d_name, cookie, pod, slash + 1, NULL, 0);
		}
		free(text);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

void km_tunnel_feed_free_msg(Kmesh__Ipc__TunnelPods *m)
{
	if (m)
		kmesh__ipc__tunnel_pods__free_unpacked(m, NULL);
}

/* One pod of the snapshot, or NULL when the cache lacks it. */
static Kmesh__Ipc__TunnelPod *snapshot_pod(const char *uid, const json_t *p,
					   const struct km_pod_cache *c)
{
	const char *ns = json_string_value(json_object_get(p, "ns"));
	const char *name = json_string_value(json_object_get(p, "name"));
	const json_t *pod = ns && name ? km_pod_cache_pod(c, ns, name) : NULL;
	const char *sa = json_string_value(json_object_get(json_object_get(pod, "spec"),
							   "serviceAccountName"));
	const json_t *addrs = json_object_get(p, "addrs");
	Kmesh__Ipc__TunnelPod *m;
	json_t *cached = NULL;

	if (!pod || !(m = malloc(sizeof(*m))))
		return NULL;
	kmesh__ipc__tunnel_pod__init(m);
	m->uid = strdup(uid);
	m->namespace_ = strdup(ns);
	m->name = strdup(name);
	m->service_account = strdup(sa && *sa ? sa : "default");
	m->netns_cookie = (uint64_t)json_integer_value(json_object_get(p, "cookie"));
	if (!json_array_size(addrs)) { /* enrolled before a restart: the pod's status has them */
		size_t i;
		json_t *ip;

		cached = json_array();
		json_array_foreach(json_object_get(json_object_get(pod, "status"), "podIPs"), i, ip)
			json_array_append(cached, json_object_get(ip, "ip"));
		addrs = cached;
	}
	m->addresses = calloc(json_array_size(addrs) + 1, sizeof(*m->addresses));
	for (size_t i = 0; m->addresses && i < json_array_size(addrs) && i < 8; i++) {
		struct km_addr a;
		const char *text = json_string_value(json_array_get(addrs, i));
		uint8_t raw[16];
		size_t len;

		if (!text || km_addr_parse(text, &a) != 0)
			continue;
		len = km_addr_to_bytes(&a, raw);
		m->addresses[m->n_addresses].data = malloc(len);
		if (!m->addresses[m->n_addresses].data)
			continue;
		memcpy(m->addresses[m->n_addresses].data, raw, len);
		m->addresses[m->n_addresses++].len = len;
	}
	json_decref(cached);
	if (!m->uid || !m->namespace_ || !m->name || !m->service_account || !m->addresses) {
		kmesh__ipc__tunnel_pod__free_unpacked(m, NULL);
		return NULL;
	}
	return m;
}

Kmesh__Ipc__TunnelPods *km_tunnel_feed_snapshot(const json_t *pods, const struct km_pod_cache *c)
{
	Kmesh__Ipc__TunnelPods *m = malloc(sizeof(*m));
	const char *uid;
	json_t *p;

	if (!m)
		return NULL;
	kmesh__ipc__tunnel_pods__init(m);
	m->full = 1;
	m->pods = calloc(json_object_size(pods) + 1, sizeof(*m->pods));
	if (!m->pods) {
		free(m);
		return NULL;
	}
	json_object_foreach((json_t *)pods, uid, p) {
		Kmesh__Ipc__TunnelPod *tp = snapshot_pod(uid, p, c);

		if (tp)
			m->pods[m->n_pods++] = tp;
	}
	return m;
}

static void on_sent(struct km_mw_call *call)
{
	struct km_tunnel_feed *f = call->arg;

	f->in_flight = 0;
	if (call->code == MW_UNREACHED || call->code == MW_NO_ANSWER) {
		/* down or restarting: the snapshot goes again once it answers */
		if (!f->failures++ || strcmp(f->last_error, call->why))
			km_warn("the tunnel did not take the enrolled pods: %s (sent again when it "
				"answers)", call->why);
		snprintf(f->last_error, sizeof(f->last_error), "%s", call->why);
		f->dirty = 1;
	} else if (f->sent_snapshot) {
		/* taken (a pod it refused is logged there; sending it again would not help) */
		f->held = call->applied;
		f->snapshots++;
		f->last_error[0] = '\0';
		if (call->code != KMESH__IPC__CODE__OK)
			km_warn("the tunnel refused some enrolled pods: %s", call->why);
	} else if (call->applied != f->held) {
		km_info("the tunnel holds %u pods, not the %u sent last: sending them again",
			call->applied, f->held);
		f->dirty = 1;
	}
	free(call);
}

void km_tunnel_feed_tick(struct km_tunnel_feed *f, uint64_t now_ms)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__TunnelPods ping = KMESH__IPC__TUNNEL_PODS__INIT, *snap = NULL;

	/* a snapshot only from a whole list of the node's pods: a partial one would take
	 * certificates away from pods still running */
	if (!f->on || f->in_flight || !f->cache->pods_listed)
		return;
	if (!f->dirty && now_ms - f->last_ms < f->every_ms)
		return;
	if (f->dirty) {
		snap = km_tunnel_feed_snapshot(f->pods, f->cache);
		if (!snap)
			return; /* out of memory: the next tick */
	}
	env.body_case = KMESH__IPC__ENVELOPE__BODY_TUNNEL_PODS;
	env.tunnel_pods = snap ? snap : &ping;
	if (km_mw_call(&f->calls, &env, on_sent, f) == 0) {
		f->in_flight = 1;
		f->sent_snapshot = snap != NULL;
		f->dirty = 0;
		f->last_ms = now_ms;
	}
	km_tunnel_feed_free_msg(snap);
}

void km_tunnel_feed_stop(struct km_tunnel_feed *f)
{
	if (!f->on)
		return;
	km_mw_calls_stop(&f->calls);
	json_decref(f->pods);
	f->pods = NULL;
	f->on = 0;
}
