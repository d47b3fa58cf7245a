/* node_watch.c — see node_watch.h. */
#include "services/ipsec-agent/node_watch.h"

#include <stdio.h>
#include <string.h>

#include "services/ipsec-agent/node_info.h"
#include "shared/grow.h"
#include "shared/log.h"

#define OWN_WRITE_SETTLE_MS 5000
#define COLLECTION "/apis/" KM_NODE_INFO_API "/namespaces/" KM_NODE_INFO_NAMESPACE "/kmeshnodeinfos"

static long index_of(const struct km_node_watch *nw, const char *name)
{
	for (size_t i = 0; i < nw->n_names; i++)
		if (!strcmp(nw->names[i], name))
			return (long)i;
	return -1;
}

static void remember(struct km_node_watch *nw, const char *name)
{
	if (index_of(nw, name) >= 0 ||
	    km_grow((void **)&nw->names, &nw->cap_names, nw->n_names + 1, sizeof(*nw->names)) != 0)
		return;
	snprintf(nw->names[nw->n_names++], sizeof(*nw->names), "%s", name);
}

static void forget(struct km_node_watch *nw, const char *name)
{
	long i = index_of(nw, name);

	if (i < 0)
		return;
	km_ipsec_agent_peer_gone(nw->agent, name);
	memmove(nw->names[i], nw->names[nw->n_names - 1], sizeof(*nw->names));
	nw->n_names--;
}

static const char *name_of(const json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

/* This node's own object: written again when it is gone or says something else. */
static void own_object(struct km_node_watch *nw, enum km_kube_change change, const json_t *obj)
{
	struct km_node_advert *adv = nw->agent->advert;
	struct km_ipsec_node seen;
	char err[256];

	if (!adv || !adv->have_want)
		return;
	if (change == KM_KUBE_DELETED || !obj || km_node_info_parse(obj, &seen, err, sizeof(err)) != 0 ||
	    !km_ipsec_node_equal(&seen, &adv->want)) {
		km_warn("KmeshNodeInfo %s/%s was %s: writing it again", KM_NODE_INFO_NAMESPACE,
			adv->want.name, change == KM_KUBE_DELETED ? "deleted" : "changed");
		km_node_advert_again(adv);
	}
}

/* An object that exists now. Returns 1 when it names a peer (valid or not). */
static int present(struct km_node_watch *nw, enum km_kube_change change, const json_t *obj)
{
	struct km_ipsec_node n;
	const char *name = name_of(obj);
	char err[256];

	if (name && !strcmp(name, nw->agent->plan.self.name)) {
		own_object(nw, change, obj);
		return 0;
	}
	if (km_node_info_parse(obj, &n, err, sizeof(err)) != 0) {
		nw->refused++;
		km_error("KmeshNodeInfo %s/%s refused: %s%s", KM_NODE_INFO_NAMESPACE,
			 name ? name : "(no name)", err,
			 name && index_of(nw, name) >= 0 ? "; the peer stays as it was"
							 : "; not taken as a peer");
		return name != NULL;
	}
	remember(nw, n.name);
	km_ipsec_agent_peer(nw->agent, &n);
	return 1;
}

static void on_change(void *arg, enum km_kube_change change, json_t *obj)
{
	struct km_node_watch *nw = arg;
	const char *name;
	size_t i;
	json_t *item;

	switch (change) {
	case KM_KUBE_LISTED: {
		/* everything that is listed is; a peer of this watch that is not listed is gone */
		char (*keep)[KM_IPSEC_NAME_MAX] = NULL;
		size_t n_keep = 0, cap_keep = 0;
		int own_seen = 0;

		json_array_foreach(obj, i, item) {
			name = name_of(item);
			own_seen |= name && !strcmp(name, nw->agent->plan.self.name);
			if (present(nw, KM_KUBE_MODIFIED, item) && name &&
			    km_grow((void **)&keep, &cap_keep, n_keep + 1, sizeof(*keep)) == 0)
				snprintf(keep[n_keep++], sizeof(*keep), "%s", name);
		}
		/* deleted while the watch was down; unless just written (a list started before our
		 * write landed does not show it) */
		if (!own_seen && nw->agent->advert && nw->agent->advert->written &&
		    uv_now(nw->agent->loop) - nw->agent->advert->written_at_ms > OWN_WRITE_SETTLE_MS)
			own_object(nw, KM_KUBE_DELETED, NULL);
		for (size_t k = nw->n_names; k-- > 0;) {
			size_t j;

			for (j = 0; j < n_keep && strcmp(keep[j], nw->names[k]); j++)
				;
			if (j == n_keep)
				forget(nw, nw->names[k]);
		}
		free(keep);
		km_info("KmeshNodeInfo list: %zu objects, %zu peers", json_array_size(obj), nw->n_names);
		/* every peer known: what the kernel holds for others (peers that left while no
		 * agent ran) can go; and at the first, our object can be written */
		km_ipsec_agent_listed(nw->agent);
		break;
	}
	case KM_KUBE_ADDED:
	case KM_KUBE_MODIFIED:
		present(nw, change, obj);
		break;
	case KM_KUBE_DELETED:
		name = name_of(obj);
		if (name && !strcmp(name, nw->agent->plan.self.name))
			own_object(nw, change, obj);
		else if (name)
			forget(nw, name);
		break;
	}
}

void km_node_watch_event(struct km_node_watch *nw, enum km_kube_change change, json_t *obj)
{
	if (change != KM_KUBE_LISTED)
		on_change(nw, change, obj);
}

int km_node_watch_start(struct km_node_watch *nw, uv_loop_t *loop, struct km_ipsec_agent *agent,
			const char *kubeconfig, long resync_ms, char *err, size_t errlen)
{
	memset(nw, 0, sizeof(*nw));
	nw->agent = agent;
	return km_kube_watch_start(&nw->watch, loop, kubeconfig, COLLECTION, resync_ms, on_change,
				   nw, err, errlen);
}

void km_node_watch_stop(struct km_node_watch *nw)
{
	km_kube_watch_stop(&nw->watch);
	free(nw->names);
	nw->names = NULL;
	nw->n_names = nw->cap_names = 0;
}

json_t *km_node_watch_status(struct km_node_watch *nw)
{
	json_t *j = km_kube_watch_status(&nw->watch);

	if (j) {
		json_object_set_new(j, "peers", json_integer((json_int_t)nw->n_names));
		json_object_set_new(j, "objects_refused", json_integer((json_int_t)nw->refused));
	}
	return j;
}
