/* pods.c — see pods.h. Two sorted arrays: pods by uid, identities by name with their pod counts;
 * a snapshot is applied as changes (what it lacks is removed), so an identity that keeps a pod
 * across a snapshot keeps its certificate. */
#include "services/tunnel/pods.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/kube_name.h"
#include "shared/sorted.h"
#include "shared/log.h"

int km_tunnel_pods_init(struct km_tunnel_pods *p, const char *trust_domain,
			km_tunnel_identity_cb on_identity, void *arg)
{
	memset(p, 0, sizeof(*p));
	if (!trust_domain || strlen(trust_domain) > KM_TUNNEL_TD_MAX ||
	    !km_kube_valid_name(trust_domain))
		return -1;
	snprintf(p->trust_domain, sizeof(p->trust_domain), "%s", trust_domain);
	p->on_identity = on_identity;
	p->arg = arg;
	return 0;
}

void km_tunnel_pods_free(struct km_tunnel_pods *p)
{
	for (size_t i = 0; i < p->n_ids; i++)
		free(p->ids[i].identity);
	free(p->ids);
	free(p->pods);
	memset(p, 0, sizeof(*p));
}

static const char *pod_uid(const void *e)
{
	return ((const struct km_tunnel_pod *)e)->uid;
}

static const char *ident_name(const void *e)
{
	return ((const struct km_tunnel_ident *)e)->identity;
}

static size_t find_pod(const struct km_tunnel_pods *p, const char *uid, int *hit)
{
	return km_sorted_find(p->pods, p->n, sizeof(*p->pods), uid, pod_uid, hit);
}

static size_t find_id(const struct km_tunnel_pods *p, const char *identity, int *hit)
{
	return km_sorted_find(p->ids, p->n_ids, sizeof(*p->ids), identity, ident_name, hit);
}

const struct km_tunnel_pod *km_tunnel_pods_find(const struct km_tunnel_pods *p, const char *uid)
{
	int hit;
	size_t i = find_pod(p, uid, &hit);

	return hit ? &p->pods[i] : NULL;
}

const struct km_tunnel_pod *km_tunnel_pods_at(const struct km_tunnel_pods *p,
					       const struct km_addr *a)
{
	for (size_t i = 0; i < p->n; i++)
		for (size_t k = 0; k < p->pods[i].n_addrs; k++)
			if (!memcmp(&p->pods[i].addrs[k], a, sizeof(*a)))
				return &p->pods[i];
	return NULL;
}

size_t km_tunnel_pods_of(const struct km_tunnel_pods *p, const char *identity)
{
	int hit;
	size_t i = find_id(p, identity, &hit);

	return hit ? p->ids[i].pods : 0;
}

/* One more (or one less) pod of identity. Returns 0, or -1 out of memory (nothing changed). */
static int id_ref(struct km_tunnel_pods *p, const char *identity)
{
	int hit;
	size_t i = find_id(p, identity, &hit);

	if (hit) {
		p->ids[i].pods++;
		return 0;
	}
	if (p->n_ids == p->cap_ids) {
		size_t cap = p->cap_ids ? p->cap_ids * 2 : 16;
		struct km_tunnel_ident *n = realloc(p->ids, cap * sizeof(*n));

		if (!n)
			return -1;
		p->ids = n;
		p->cap_ids = cap;
	}
	{
		char *copy = strdup(identity);

		if (!copy)
			return -1;
		memmove(&p->ids[i + 1], &p->ids[i], (p->n_ids - i) * sizeof(p->ids[0]));
		p->ids[i].identity = copy;
		p->ids[i].pods = 1;
		p->n_ids++;
	}
	if (p->on_identity)
		p->on_identity(p->arg, identity, 1);
	return 0;
}

static void id_unref(struct km_tunnel_pods *p, const char *identity)
{
	int hit;
	size_t i = find_id(p, identity, &hit);

	if (!hit || --p->ids[i].pods)
		return;
	if (p->on_identity)
		p->on_identity(p->arg, identity, -1);
	free(p->ids[i].identity);
	memmove(&p->ids[i], &p->ids[i + 1], (p->n_ids - i - 1) * sizeof(p->ids[0]));
	p->n_ids--;
}

static int uid_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > KM_TUNNEL_UID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return 0;
	return 1;
}

/* The message's pod, checked, into out. Returns 0, or -1 with why. */
static int parse_pod(const struct km_tunnel_pods *p, const Kmesh__Ipc__TunnelPod *m,
		     struct km_tunnel_pod *out, char *why, size_t whylen)
{
	const char *uid = m->uid ? m->uid : "", *ns = m->namespace_ ? m->namespace_ : "";
	const char *name = m->name ? m->name : "";
	const char *sa = m->service_account && *m->service_account ? m->service_account : "default";

	memset(out, 0, sizeof(*out));
	if (!uid_ok(uid)) {
		snprintf(why, whylen, "pod uid '%.40s' is not a container id (1-%d of [A-Za-z0-9._-])",
			 uid, KM_TUNNEL_UID_MAX);
		return -1;
	}
	if (strlen(ns) > 63 || !km_kube_valid_name(ns) || strchr(ns, '.')) {
		snprintf(why, whylen, "pod %s: namespace '%.64s' is not a DNS label", uid, ns);
		return -1;
	}
	if (!km_kube_valid_name(name) || !km_kube_valid_name(sa)) {
		snprintf(why, whylen, "pod %s: name '%.64s' or service account '%.64s' is not a "
			 "DNS subdomain", uid, name, sa);
		return -1;
	}
	if (m->n_addresses > KM_TUNNEL_POD_ADDRS) {
		snprintf(why, whylen, "pod %s/%s: %zu addresses, at most %d", ns, name,
			 m->n_addresses, KM_TUNNEL_POD_ADDRS);
		return -1;
	}
	for (size_t i = 0; i < m->n_addresses; i++)
		if (km_addr_from_bytes(m->addresses[i].data, m->addresses[i].len, &out->addrs[i]) != 0) {
			snprintf(why, whylen, "pod %s/%s: an address of %zu bytes (4 or 16)", ns, name,
				 m->addresses[i].len);
			return -1;
		}
	out->n_addrs = m->n_addresses;
	snprintf(out->uid, sizeof(out->uid), "%s", uid);
	snprintf(out->ns, sizeof(out->ns), "%s", ns);
	snprintf(out->name, sizeof(out->name), "%s", name);
	snprintf(out->sa, sizeof(out->sa), "%s", sa);
	out->netns_cookie = m->netns_cookie;
	snprintf(out->identity, sizeof(out->identity), "spiffe://%s/ns/%s/sa/%s", p->trust_domain,
		 ns, sa);
	return 0;
}

static void remove_at(struct km_tunnel_pods *p, size_t i)
{
	char identity[KM_TUNNEL_ID_MAX];

	snprintf(identity, sizeof(identity), "%s", p->pods[i].identity);
	km_debug("pod %s/%s (%s) left", p->pods[i].ns, p->pods[i].name, p->pods[i].uid);
	if (p->on_pod)
		p->on_pod(p->arg, &p->pods[i], 0);
	memmove(&p->pods[i], &p->pods[i + 1], (p->n - i - 1) * sizeof(p->pods[0]));
	p->n--;
	id_unref(p, identity);
}

/* Put pod in (new, or replacing the one of its uid). Returns 0, or -1 with why. */
static int upsert(struct km_tunnel_pods *p, const struct km_tunnel_pod *pod, char *why,
		  size_t whylen)
{
	int hit;
	size_t i = find_pod(p, pod->uid, &hit);

	if (hit) {
		if (strcmp(p->pods[i].identity, pod->identity)) { /* a new account: ref it first */
			char old[KM_TUNNEL_ID_MAX];

			if (id_ref(p, pod->identity) != 0)
				goto oom;
			snprintf(old, sizeof(old), "%s", p->pods[i].identity);
			p->pods[i] = *pod;
			id_unref(p, old);
		} else {
			p->pods[i] = *pod;
		}
		if (p->on_pod)
			p->on_pod(p->arg, &p->pods[i], 1);
		return 0;
	}
	if (p->n >= KM_TUNNEL_MAX_PODS) {
		snprintf(why, whylen, "pod %.63s/%.100s: the tunnel holds %u pods, its most", pod->ns,
			 pod->name, KM_TUNNEL_MAX_PODS);
		return -1;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct km_tunnel_pod *n = realloc(p->pods, cap * sizeof(*n));

		if (!n)
			goto oom;
		p->pods = n;
		p->cap = cap;
	}
	if (id_ref(p, pod->identity) != 0)
		goto oom;
	memmove(&p->pods[i + 1], &p->pods[i], (p->n - i) * sizeof(p->pods[0]));
	p->pods[i] = *pod;
	p->n++;
	km_debug("pod %s/%s (%s) enrolled, identity %s", pod->ns, pod->name, pod->uid, pod->identity);
	if (p->on_pod)
		p->on_pod(p->arg, &p->pods[i], 1);
	return 0;
oom:
	snprintf(why, whylen, "pod %.63s/%.100s: out of memory", pod->ns, pod->name);
	return -1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t km_tunnel_pods_apply(struct km_tunnel_pods *p, const Kmesh__Ipc__TunnelPods *m, char *why,
			    size_t whylen)
{
	size_t refused = 0;
	char first[300] = "";
	struct km_tunnel_pod pod;

	if (why && whylen)
		why[0] = '\0';
	if (m->n_pods > KM_TUNNEL_MAX_PODS) {
		snprintf(why, whylen, "%zu pods in one message, at most %u", m->n_pods,
			 KM_TUNNEL_MAX_PODS);
		p->refused += m->n_pods;
		return m->n_pods;
	}
	/* pods first, removals after: an identity that moves between two pods keeps its
	 * certificate */
	for (size_t i = 0; i < m->n_pods; i++) {
		if (parse_pod(p, m->pods[i], &pod, first[0] ? NULL : first,
			      first[0] ? 0 : sizeof(first)) == 0 &&
		    upsert(p, &pod, first[0] ? NULL : first, first[0] ? 0 : sizeof(first)) == 0)
			continue;
		refused++;
	}
	if (m->full) {
		/* what the snapshot does not name is gone (its refused pods are not named either) */
		const char **named = malloc((m->n_pods + 1) * sizeof(*named));

		if (!named) {
			snprintf(first, sizeof(first), "out of memory: the snapshot's removals wait for "
				 "the next");
			refused += m->n_pods ? 0 : 1;
		} else {
			size_t k = 0;

			for (size_t i = 0; i < m->n_pods; i++)
				if (m->pods[i]->uid)
					named[k++] = m->pods[i]->uid;
			qsort(named, k, sizeof(*named), cmp_str);
			for (size_t i = p->n; i-- > 0;) {
				const char *u = p->pods[i].uid;

				if (!bsearch(&u, named, k, sizeof(*named), cmp_str))
					remove_at(p, i);
			}
			free(named);
		}
	}
	for (size_t i = 0; i < m->n_gone; i++) {
		int hit;
		size_t at = m->gone[i] ? find_pod(p, m->gone[i], &hit) : (hit = 0);

		if (hit)
			remove_at(p, at);
	}
	p->refused += refused;
	if (why && whylen)
		snprintf(why, whylen, "%s", first);
	return refused;
}
