/* xfrm_link.c — see xfrm_link.h. */
#include "services/ipsec-agent/xfrm_link.h"

#include <errno.h>
#include <string.h>

#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <linux/xfrm.h>
#include <netinet/in.h>
#include <stdlib.h>

#include "services/ipsec-agent/plan.h"
#include "shared/grow.h"

#include "shared/addr.h"
#include "shared/errbuf.h"
#include "shared/log.h"

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct km_xfrm_link *l = arg;

	(void)who;
	l->kernel_errno = -e->error;
	return NL_STOP;
}

int km_xfrm_link_open(struct km_xfrm_link *l, char *err, size_t errlen)
{
	int rc;

	memset(l, 0, sizeof(*l));
	l->sk = nl_socket_alloc();
	if (!l->sk)
		return km_errf(err, errlen, "out of memory opening the XFRM socket"), -ENOMEM;
	rc = nl_connect(l->sk, NETLINK_XFRM);
	if (rc < 0) {
		km_errf(err, errlen, "cannot open a NETLINK_XFRM socket: %s", nl_geterror(rc));
		nl_socket_free(l->sk);
		l->sk = NULL;
		return -EIO;
	}
	nl_socket_modify_err_cb(l->sk, NL_CB_CUSTOM, on_error, l);
	return 0;
}

void km_xfrm_link_close(struct km_xfrm_link *l)
{
	if (l->sk)
		nl_socket_free(l->sk);
	l->sk = NULL;
}

/* What a refusal means here, for the message (a state names its AEAD, so ENOSYS is the kernel
 * not knowing that AEAD, which on a kernel without ESP is what a state add gets first). */
static const char *why(int e)
{
	switch (e) {
	case EPERM:
		return " (the IPsec agent needs CAP_NET_ADMIN)";
	case ENOSYS:
		return " (this kernel has no ESP support for the AEAD: esp4/esp6 or the crypto "
		       "modules are not built or not loaded)";
	case EPROTONOSUPPORT:
		return " (this kernel has no ESP support: esp4/esp6 are not built or not loaded)";
	default:
		return "";
	}
}

int km_xfrm_link_send(struct km_xfrm_link *l, struct nl_msg *msg, const char *what, char *err,
		      size_t errlen)
{
	int rc;

	l->kernel_errno = 0;
	l->sent++;
	rc = nl_send_sync(l->sk, msg); /* frees msg */
	if (rc >= 0)
		return 0;
	l->refused++;
	if (!l->kernel_errno) { /* not the kernel's answer: the socket failed */
		km_errf(err, errlen, "%s: netlink: %s", what, nl_geterror(rc));
		return -EIO;
	}
	km_errf(err, errlen, "%s: the kernel refused it: %s%s", what, strerror(l->kernel_errno),
		why(l->kernel_errno));
	return -l->kernel_errno;
}

static const char *op_name(enum km_xfrm_op op)
{
	return op == KM_XFRM_ADD ? "add" : op == KM_XFRM_UPDATE ? "update" : "delete";
}

int km_xfrm_link_state(void *link, enum km_xfrm_op op, const struct km_xfrm_state_spec *s)
{
	char what[160], a[KM_ADDR_STRLEN], b[KM_ADDR_STRLEN], err[512];
	struct nl_msg *m;
	int rc;

	snprintf(what, sizeof(what), "%s ESP state %s -> %s spi %u", op_name(op),
		 km_addr_format(&s->src, a), km_addr_format(&s->dst, b), s->spi);
	if (km_xfrm_state_msg(s, op, &m, err, sizeof(err)) != 0) {
		km_error("%s: %s", what, err);
		return -EINVAL;
	}
	rc = km_xfrm_link_send(link, m, what, err, sizeof(err));
	if (rc && rc != -EEXIST && !(op == KM_XFRM_DELETE && (rc == -ESRCH || rc == -ENOENT)))
		km_error("%s", err);
	else
		km_debug("%s: %s", what, rc ? strerror(-rc) : "done");
	return rc;
}

int km_xfrm_link_policy(void *link, enum km_xfrm_op op, const struct km_xfrm_policy_spec *p)
{
	static const char *const dirs[] = { "in", "out", "fwd" };
	char what[160], a[KM_ADDR_STRLEN], err[512];
	struct nl_msg *m;
	int rc;

	snprintf(what, sizeof(what), "%s policy %s to %s/%u mark 0x%x (template spi %u)",
		 op_name(op), p->dir < 3 ? dirs[p->dir] : "?", km_addr_format(&p->cidr, a),
		 p->cidr_len, p->mark, p->tmpl_spi);
	if (km_xfrm_policy_msg(p, op, &m, err, sizeof(err)) != 0) {
		km_error("%s: %s", what, err);
		return -EINVAL;
	}
	rc = km_xfrm_link_send(link, m, what, err, sizeof(err));
	if (rc && !(op == KM_XFRM_DELETE && rc == -ENOENT))
		km_error("%s", err);
	else
		km_debug("%s: done", what);
	return rc;
}

/* A dump of states and policies, read by hand from the kernel's structs (linux/xfrm.h) with
 * libnl's parser: libnl-xfrm 3.7's policy cache leaks four addresses per policy per dump. */
struct dump {
	struct km_ipsec_kernel_view *out;
	size_t cap_st, cap_pol;
};

static int addr_of(uint16_t family, const xfrm_address_t *a, struct km_addr *out)
{
	if (family == AF_INET)
		return km_addr_from_bytes((const uint8_t *)&a->a4, 4, out);
	if (family == AF_INET6)
		return km_addr_from_bytes((const uint8_t *)a->a6, 16, out);
	return -1;
}

static void mark_of(struct nlattr *a, uint32_t *value, uint32_t *mask)
{
	struct xfrm_mark m;

	if (!a || nla_len(a) < (int)sizeof(m))
		return;
	memcpy(&m, nla_data(a), sizeof(m));
	*value = m.v;
	if (mask)
		*mask = m.m;
}

static int on_dumped(struct nl_msg *msg, void *arg)
{
	struct dump *d = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct nlattr *tb[XFRMA_MAX + 1];

	if (h->nlmsg_type == XFRM_MSG_NEWSA) {
		struct xfrm_usersa_info i;
		struct km_xfrm_state_spec s;

		if (nlmsg_datalen(h) < (int)sizeof(i) ||
		    nlmsg_parse(h, sizeof(i), tb, XFRMA_MAX, NULL) < 0)
			return NL_SKIP;
		memcpy(&i, nlmsg_data(h), sizeof(i));
		memset(&s, 0, sizeof(s));
		if (i.reqid != KM_XFRM_REQID || i.id.proto != IPPROTO_ESP ||
		    addr_of(i.family, &i.saddr, &s.src) || addr_of(i.family, &i.id.daddr, &s.dst))
			return NL_SKIP;
		s.spi = ntohl(i.id.spi);
		mark_of(tb[XFRMA_MARK], &s.mark, &s.mark_mask);
		if (km_grow((void **)&d->out->states, &d->cap_st, d->out->n_states + 1, sizeof(s)) == 0)
			d->out->states[d->out->n_states++] = s;
	} else if (h->nlmsg_type == XFRM_MSG_NEWPOLICY) {
		struct xfrm_userpolicy_info i;
		struct xfrm_user_tmpl t;
		struct km_xfrm_policy_spec x;

		if (nlmsg_datalen(h) < (int)sizeof(i) ||
		    nlmsg_parse(h, sizeof(i), tb, XFRMA_MAX, NULL) < 0 || !tb[XFRMA_TMPL] ||
		    nla_len(tb[XFRMA_TMPL]) < (int)sizeof(t))
			return NL_SKIP;
		memcpy(&i, nlmsg_data(h), sizeof(i));
		memcpy(&t, nla_data(tb[XFRMA_TMPL]), sizeof(t)); /* the first template */
		memset(&x, 0, sizeof(x));
		if (t.reqid != KM_XFRM_REQID || t.id.proto != IPPROTO_ESP ||
		    addr_of(i.sel.family, &i.sel.daddr, &x.cidr))
			return NL_SKIP;
		x.dir = i.dir;
		x.cidr_len = i.sel.prefixlen_d;
		mark_of(tb[XFRMA_MARK], &x.mark, NULL);
		if (km_grow((void **)&d->out->policies, &d->cap_pol, d->out->n_policies + 1,
			    sizeof(x)) == 0)
			d->out->policies[d->out->n_policies++] = x;
	}
	return NL_OK;
}

static int dump_all(struct km_xfrm_link *l, int type, struct dump *d)
{
	struct nl_cb *own = nl_socket_get_cb(l->sk); /* a reference of our own */
	struct nl_cb *cb = own ? nl_cb_clone(own) : NULL;
	int rc;

	nl_cb_put(own);
	if (!cb)
		return -ENOMEM;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_dumped, d);
	l->kernel_errno = 0;
	rc = nl_send_simple(l->sk, type, NLM_F_DUMP, NULL, 0);
	if (rc >= 0)
		rc = nl_recvmsgs(l->sk, cb);
	nl_cb_put(cb);
	if (l->kernel_errno)
		return -l->kernel_errno;
	return rc < 0 ? (rc == -NLE_PERM ? -EPERM : -EIO) : 0;
}

int km_xfrm_link_list(void *link, struct km_ipsec_kernel_view *out)
{
	struct dump d = { .out = out };
	int rc;

	memset(out, 0, sizeof(*out));
	rc = dump_all(link, XFRM_MSG_GETSA, &d);
	if (rc == 0)
		rc = dump_all(link, XFRM_MSG_GETPOLICY, &d);
	if (rc != 0) {
		free(out->states);
		free(out->policies);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}
