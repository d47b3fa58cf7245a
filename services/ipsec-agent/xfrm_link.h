/* xfrm_link.h — the IPsec agent's NETLINK_XFRM socket (libnl): sends one request at a time and
 * waits for the kernel's answer, keeping the kernel's own errno so a refusal can be explained
 * (no ESP in this kernel, no CAP_NET_ADMIN, an object already there or already gone). */
#ifndef KM_IPSEC_XFRM_LINK_H
#define KM_IPSEC_XFRM_LINK_H

#include <stddef.h>

#include "services/ipsec-agent/xfrm_msg.h"

struct nl_msg;
struct nl_sock;

struct km_xfrm_link {
	struct nl_sock *sk;
	int kernel_errno; /* of the last answer: 0 or a positive errno */
	unsigned long sent, refused;
};

/* Returns 0, or -errno with err filled. */
int km_xfrm_link_open(struct km_xfrm_link *l, char *err, size_t errlen);
void km_xfrm_link_close(struct km_xfrm_link *l);
/* Send msg (consumed) and wait for the answer. Returns 0, or -errno as the kernel answered
 * (-EEXIST, -ENOENT, -EPROTONOSUPPORT, ...) with err saying what was refused and why; `what`
 * names the object for that message ("ESP state 10.0.0.2 -> 10.0.0.1 spi 3"). */
int km_xfrm_link_send(struct km_xfrm_link *l, struct nl_msg *msg, const char *what, char *err,
		      size_t errlen);

/* The plan's sink (plan.h) over this link: build, send, log a refusal, return 0 or -errno. */
int km_xfrm_link_state(void *link, enum km_xfrm_op op, const struct km_xfrm_state_spec *s);
int km_xfrm_link_policy(void *link, enum km_xfrm_op op, const struct km_xfrm_policy_spec *p);
/* ... and what the kernel holds with our reqid (a dump of states and policies): ESP states and
 * policies whose first template is ESP. Returns 0 or -errno. */
struct km_ipsec_kernel_view;
int km_xfrm_link_list(void *link, struct km_ipsec_kernel_view *out);

#endif
