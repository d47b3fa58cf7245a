/* xfrm_msg.c — see xfrm_msg.h. */
#include "services/ipsec-agent/xfrm_msg.h"

#include <netinet/in.h>
#include <string.h>

#include <linux/xfrm.h>
#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/xfrm/lifetime.h>
#include <netlink/xfrm/sa.h>
#include <netlink/xfrm/selector.h>
#include <netlink/xfrm/sp.h>
#include <netlink/xfrm/template.h>

#include "shared/addr.h"
#include "shared/errbuf.h"

static int family_of(const struct km_addr *a)
{
	return km_addr_is_v4(a) ? AF_INET : AF_INET6;
}

/* An nl_addr of a's family with prefix length len (-1: the full address). */
static struct nl_addr *nl_addr_of(const struct km_addr *a, int len)
{
	int v4 = km_addr_is_v4(a);
	struct nl_addr *n = nl_addr_build(v4 ? AF_INET : AF_INET6, v4 ? a->bytes + 12 : a->bytes,
					  v4 ? 4 : 16);

	if (n && len >= 0)
		nl_addr_set_prefixlen(n, len);
	return n;
}

/* No byte or packet limit: the kernel reads zero limits literally and would expire a state on
 * its first packet (iproute2 and the netlink library Kmesh uses default to these too). */
static struct xfrmnl_ltime_cfg *unlimited(void)
{
	struct xfrmnl_ltime_cfg *l = xfrmnl_ltime_cfg_alloc();

	if (l) {
		xfrmnl_ltime_cfg_set_soft_bytelimit(l, XFRM_INF);
		xfrmnl_ltime_cfg_set_hard_bytelimit(l, XFRM_INF);
		xfrmnl_ltime_cfg_set_soft_packetlimit(l, XFRM_INF);
		xfrmnl_ltime_cfg_set_hard_packetlimit(l, XFRM_INF);
	}
	return l;
}

static struct nl_addr *any_of(int family)
{
	static const uint8_t zero[16];
	struct nl_addr *n = nl_addr_build(family, zero, family == AF_INET ? 4 : 16);

	if (n)
		nl_addr_set_prefixlen(n, 0);
	return n;
}

int km_xfrm_state_msg(const struct km_xfrm_state_spec *s, enum km_xfrm_op op, struct nl_msg **out,
		      char *err, size_t errlen)
{
	struct xfrmnl_sa *sa = xfrmnl_sa_alloc();
	struct nl_addr *src = nl_addr_of(&s->src, -1), *dst = nl_addr_of(&s->dst, -1);
	struct xfrmnl_ltime_cfg *life = unlimited();
	int rc = -1, nrc;

	*out = NULL;
	if (!sa || !src || !dst || !life) {
		km_errf(err, errlen, "out of memory building an XFRM state");
		goto done;
	}
	if (family_of(&s->src) != family_of(&s->dst)) {
		km_errf(err, errlen, "a state's two addresses must be of one family");
		goto done;
	}
	xfrmnl_sa_set_family(sa, (unsigned)family_of(&s->dst));
	xfrmnl_sa_set_daddr(sa, dst);
	xfrmnl_sa_set_saddr(sa, src);
	xfrmnl_sa_set_spi(sa, s->spi);
	xfrmnl_sa_set_proto(sa, IPPROTO_ESP);
	if (s->mark_mask)
		xfrmnl_sa_set_mark(sa, s->mark, s->mark_mask);
	if (op != KM_XFRM_DELETE) {
		xfrmnl_sa_set_mode(sa, XFRM_MODE_TUNNEL);
		xfrmnl_sa_set_reqid(sa, KM_XFRM_REQID);
		xfrmnl_sa_set_lifetime_cfg(sa, life);
		xfrmnl_sa_set_replay_window(sa, KM_XFRM_REPLAY_WINDOW);
		if (xfrmnl_sa_set_aead_params(sa, s->aead_name, (unsigned)(s->key_len * 8), s->icv_bits,
					      (const char *)s->key) != 0) {
			km_errf(err, errlen, "cannot set the AEAD %s on an XFRM state", s->aead_name);
			goto done;
		}
	}
	nrc = op == KM_XFRM_ADD      ? xfrmnl_sa_build_add_request(sa, 0, out)
	      : op == KM_XFRM_UPDATE ? xfrmnl_sa_build_update_request(sa, 0, out)
				     : xfrmnl_sa_build_delete_request(sa, 0, out);
	if (nrc < 0) {
		km_errf(err, errlen, "cannot build an XFRM state request: %s", nl_geterror(nrc));
		goto done;
	}
	if (op != KM_XFRM_DELETE && s->output_mark &&
	    (nla_put_u32(*out, XFRMA_SET_MARK, s->output_mark) < 0 ||
	     nla_put_u32(*out, XFRMA_SET_MARK_MASK, 0xffffffff) < 0)) {
		km_errf(err, errlen, "cannot add the output mark to an XFRM state request");
		nlmsg_free(*out);
		*out = NULL;
		goto done;
	}
	rc = 0;
done:
	nl_addr_put(src);
	nl_addr_put(dst);
	xfrmnl_ltime_cfg_put(life);
	/* (libnl frees its copies of the key, and the message buffer, without wiping them) */
	xfrmnl_sa_put(sa);
	return rc;
}

int km_xfrm_policy_msg(const struct km_xfrm_policy_spec *p, enum km_xfrm_op op,
		       struct nl_msg **out, char *err, size_t errlen)
{
	int fam = family_of(&p->cidr), max = fam == AF_INET ? 32 : 128, rc = -1, nrc;
	struct xfrmnl_sp *sp = xfrmnl_sp_alloc();
	struct xfrmnl_sel *sel = xfrmnl_sel_alloc();
	struct xfrmnl_user_tmpl *t = NULL;
	struct nl_addr *cidr = nl_addr_of(&p->cidr, p->cidr_len), *any = any_of(fam);
	struct nl_addr *tsrc = nl_addr_of(&p->tmpl_src, -1), *tdst = nl_addr_of(&p->tmpl_dst, -1);
	struct xfrmnl_ltime_cfg *life = unlimited();

	*out = NULL;
	if (!sp || !sel || !cidr || !any || !tsrc || !tdst || !life) {
		km_errf(err, errlen, "out of memory building an XFRM policy");
		goto done;
	}
	if (p->cidr_len > max) {
		km_errf(err, errlen, "a /%u prefix is longer than the address", p->cidr_len);
		goto done;
	}
	xfrmnl_sel_set_family(sel, (unsigned)fam);
	xfrmnl_sel_set_saddr(sel, any);
	xfrmnl_sel_set_prefixlen_s(sel, 0);
	xfrmnl_sel_set_daddr(sel, cidr);
	xfrmnl_sel_set_prefixlen_d(sel, p->cidr_len);
	xfrmnl_sp_set_sel(sp, sel);
	xfrmnl_sp_set_dir(sp, p->dir);
	xfrmnl_sp_set_mark(sp, p->mark, 0xffffffff);
	if (op != KM_XFRM_DELETE) {
		xfrmnl_sp_set_action(sp, XFRM_POLICY_ALLOW);
		xfrmnl_sp_set_lifetime_cfg(sp, life);
		t = xfrmnl_user_tmpl_alloc();
		if (!t) {
			km_errf(err, errlen, "out of memory building an XFRM template");
			goto done;
		}
		xfrmnl_user_tmpl_set_family(t, (unsigned)family_of(&p->tmpl_dst));
		xfrmnl_user_tmpl_set_saddr(t, tsrc);
		xfrmnl_user_tmpl_set_daddr(t, tdst);
		xfrmnl_user_tmpl_set_proto(t, IPPROTO_ESP);
		xfrmnl_user_tmpl_set_spi(t, p->tmpl_spi);
		xfrmnl_user_tmpl_set_reqid(t, KM_XFRM_REQID);
		xfrmnl_user_tmpl_set_mode(t, XFRM_MODE_TUNNEL);
		xfrmnl_user_tmpl_set_aalgos(t, ~0u);
		xfrmnl_user_tmpl_set_ealgos(t, ~0u);
		xfrmnl_user_tmpl_set_calgos(t, ~0u);
		xfrmnl_sp_add_usertemplate(sp, t); /* sp owns it now */
	}
	nrc = op == KM_XFRM_ADD      ? xfrmnl_sp_build_add_request(sp, 0, out)
	      : op == KM_XFRM_UPDATE ? xfrmnl_sp_build_update_request(sp, 0, out)
				     : xfrmnl_sp_build_delete_request(sp, 0, out);
	if (nrc < 0) {
		km_errf(err, errlen, "cannot build an XFRM policy request: %s", nl_geterror(nrc));
		goto done;
	}
	rc = 0;
done:
	nl_addr_put(cidr);
	nl_addr_put(any);
	nl_addr_put(tsrc);
	nl_addr_put(tdst);
	xfrmnl_ltime_cfg_put(life);
	xfrmnl_sel_put(sel);
	xfrmnl_sp_put(sp);
	return rc;
}
