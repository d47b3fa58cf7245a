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
