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

#include "shared/errbuf.h"

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
