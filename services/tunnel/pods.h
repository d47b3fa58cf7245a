/* pods.h — the pods enrolled on this node, as the node's CNI agent tells the tunnel (TunnelPods:
 * snapshots and changes), and the identities they make: spiffe://<trust domain>/ns/<namespace>/
 * sa/<service account>, one per service account with a pod here. The owner learns when an
 * identity gains its first pod and loses its last (on_identity), which is when its certificate is
 * fetched and dropped (certs.h). Every field is checked before it is kept: a pod that fails is
 * refused with why, and the others of the message are applied. At most KM_TUNNEL_MAX_PODS. */
#ifndef KM_TUNNEL_PODS_H
#define KM_TUNNEL_PODS_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_ipc.pb-c.h"
#include "shared/addr.h"

#define KM_TUNNEL_MAX_PODS 65536u
#define KM_TUNNEL_POD_ADDRS 8
#define KM_TUNNEL_UID_MAX 128     /* a container id (64 hex digits from containerd and CRI-O) */
#define KM_TUNNEL_TD_MAX 253      /* a trust domain: a DNS name */
#define KM_TUNNEL_ID_MAX (sizeof("spiffe:///ns//sa/") + KM_TUNNEL_TD_MAX + 63 + 253)

struct km_tunnel_pod {
	char uid[KM_TUNNEL_UID_MAX + 1];
	char ns[64];
	char name[254];
	char sa[254];
	struct km_addr addrs[KM_TUNNEL_POD_ADDRS];
	size_t n_addrs;
	uint64_t netns_cookie;
	char identity[KM_TUNNEL_ID_MAX];
};

/* An identity gained its first pod (delta 1) or lost its last (delta -1). */
typedef void (*km_tunnel_identity_cb)(void *arg, const char *identity, int delta);
/* A pod came or changed (added 1), or is about to leave (0). */
typedef void (*km_tunnel_pod_cb)(void *arg, const struct km_tunnel_pod *pod, int added);

struct km_tunnel_pods {
	struct km_tunnel_pod *pods; /* sorted by uid */
	size_t n, cap;
	struct km_tunnel_ident { char *identity; size_t pods; } *ids; /* sorted by identity */
	size_t n_ids, cap_ids;
	char trust_domain[KM_TUNNEL_TD_MAX + 1];
	km_tunnel_identity_cb on_identity;
	km_tunnel_pod_cb on_pod; /* may be NULL; set after init */
	void *arg;
	uint64_t refused; /* pods refused since start (kmesh_tunnel_pods_refused_total) */
};

/* Returns 0, or -1 when trust_domain is not a DNS name. */
int km_tunnel_pods_init(struct km_tunnel_pods *p, const char *trust_domain,
			km_tunnel_identity_cb on_identity, void *arg);
void km_tunnel_pods_free(struct km_tunnel_pods *p);
/* Apply one message. Returns the number of pods refused (0: all taken; why names the first). */
size_t km_tunnel_pods_apply(struct km_tunnel_pods *p, const Kmesh__Ipc__TunnelPods *m, char *why,
			    size_t whylen);
/* The pod with this uid, or NULL. */
const struct km_tunnel_pod *km_tunnel_pods_find(const struct km_tunnel_pods *p, const char *uid);
/* The pod with this address, or NULL (a scan: a node holds a few hundred pods at most; HBONE
 * outbound asks once per connection). */
const struct km_tunnel_pod *km_tunnel_pods_at(const struct km_tunnel_pods *p,
					       const struct km_addr *a);
/* How many pods hold this identity (0: none). */
size_t km_tunnel_pods_of(const struct km_tunnel_pods *p, const char *identity);

#endif
