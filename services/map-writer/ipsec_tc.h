/* ipsec_tc.h — the IPsec tc programs on this node's interfaces while the IPsec agent has IPsec
 * on: km_ipsec_decrypt on the ingress of every interface that holds a node address, and
 * km_ipsec_encrypt on the ingress of every enrolled pod's node-side interface (what the pod
 * sends). The kernel keeps the record: the filters carry this product's handle and priority, so
 * a restarted map writer finds them (and so knows IPsec is on) and puts its newly loaded
 * programs in their place. Filters of other owners on the same hooks are left alone, and ours
 * pass packets on to them (TC_ACT_UNSPEC). */
#ifndef KM_MW_IPSEC_TC_H
#define KM_MW_IPSEC_TC_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"

#define KM_IPSEC_TC_HANDLE 0x4b4d /* "KM" */
#define KM_IPSEC_TC_PRIORITY 1
#define KM_IPSEC_TC_MAX_NICS 16

struct km_ipsec_tc {
	int fd_encrypt, fd_decrypt; /* the programs (owned by the skeleton) */
	int fd_manage;              /* enrolled pods, with their node-side interfaces */
	int enabled;
	int nics[KM_IPSEC_TC_MAX_NICS]; /* interfaces with the decrypt program */
	size_t n_nics;
	uint64_t failures; /* attaches that failed (logged each) */
};

/* Find the filters an earlier map writer left (IPsec is on when a NIC has one) and put these
 * programs in their place. */
void km_ipsec_tc_init(struct km_ipsec_tc *t, int fd_encrypt, int fd_decrypt, int fd_manage);
/* On: decrypt on the interfaces (loopback aside) holding one of addrs, taken off the others that
 * had it; encrypt on every enrolled pod's interface. Returns the number of interfaces given a
 * program, with err saying which; or -1 with err saying why, when no interface holds any of
 * addrs or attaching to one failed (IPsec stays as it was). */
int km_ipsec_tc_enable(struct km_ipsec_tc *t, const struct km_addr *addrs, size_t n, char *err,
		       size_t errlen);
/* Off: every program of ours detached. Returns the number of interfaces it was taken off. */
int km_ipsec_tc_disable(struct km_ipsec_tc *t);
/* While on: how many enrolled pods have a node-side interface (which has the encrypt program:
 * a pod whose interface refuses it is not enrolled), and how many have none (*uncovered). */
size_t km_ipsec_tc_pods(const struct km_ipsec_tc *t, size_t *uncovered);
/* A pod is being enrolled. While IPsec is on its interface gets the encrypt program; returns 0,
 * or -1 with err filled when it has no node-side interface, names a node interface, or
 * attaching failed (the caller then refuses the pod: its traffic would leave unencrypted). */
int km_ipsec_tc_pod(struct km_ipsec_tc *t, uint32_t ifindex, char *err, size_t errlen);
/* A pod left, or its enroll failed, or it moved to another interface: the program comes off
 * this one (if it is still there). */
void km_ipsec_tc_pod_gone(struct km_ipsec_tc *t, uint32_t ifindex);

#endif
