/* rtnl.c — see rtnl.h. */
#include "services/map-writer/rtnl.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <linux/netlink.h>

#include "shared/errbuf.h"

struct nlmsghdr *km_rtnl_start(struct km_rtnl *nl, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *h = mnl_nlmsg_put_header(nl->buf);

	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = ++nl->seq;
	return h;
}

/* Whether buf (n bytes read) holds the end of the answer to seq: a dump's NLMSG_DONE or an
 * NLMSG_ERROR (an ack is one). */
static int holds_end(const char *buf, ssize_t n, unsigned int seq)
{
	int len = (int)n;

	for (const struct nlmsghdr *m = (const struct nlmsghdr *)buf; mnl_nlmsg_ok(m, len);
	     m = mnl_nlmsg_next(m, &len))
		if (m->nlmsg_seq == seq && (m->nlmsg_type == NLMSG_DONE || m->nlmsg_type == NLMSG_ERROR))
			return 1;
	return 0;
}

/* Read and drop the rest of an answer that was given up before its end (a dump the kernel marks
 * interrupted stops libmnl at its first flagged part), so the next request does not read those
 * parts as its own (their old sequence number would fail it). */
static void drain(struct km_rtnl *nl, unsigned int seq)
{
	ssize_t n;

	do
		n = mnl_socket_recvfrom(nl->sock, nl->buf, sizeof(nl->buf));
	while (n > 0 && !holds_end(nl->buf, n, seq));
}

/* A dump: a get request (RTM_GET*: type 2 modulo 4) with NLM_F_DUMP, whose NLM_F_DUMP bits are
 * NLM_F_EXCL's and NLM_F_REPLACE's in a new-request. */
static int is_dump(const struct nlmsghdr *h)
{
	return (h->nlmsg_type & 3) == 2 && (h->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
}

int km_rtnl_talk(struct km_rtnl *nl, struct nlmsghdr *h, mnl_cb_t cb, void *arg)
{
	unsigned int portid = mnl_socket_get_portid(nl->sock), seq = h->nlmsg_seq;
	int rc = MNL_CB_OK;
	ssize_t n = 0;

	if (!is_dump(h)) /* a dump ends with NLMSG_DONE; anything else with its ack */
		h->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(nl->sock, h, h->nlmsg_len) < 0)
		return -errno;
	while (rc > MNL_CB_STOP) {
		if ((n = mnl_socket_recvfrom(nl->sock, nl->buf, sizeof(nl->buf))) < 0)
			return -errno;
		errno = 0;
		rc = mnl_cb_run(nl->buf, (size_t)n, seq, portid, cb, arg);
	}
	if (rc == MNL_CB_ERROR) {
		int e = errno ? errno : EIO;

		if (!holds_end(nl->buf, n, seq))
			drain(nl, seq);
		return -e;
	}
	return 0;
}

int km_rtnl_open(struct km_rtnl *nl, char *err, size_t errlen)
{
	int one = 1;

	memset(nl, 0, sizeof(*nl));
	nl->seq = (unsigned int)time(NULL);
	if (!(nl->sock = mnl_socket_open(NETLINK_ROUTE)) ||
	    mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;

		if (nl->sock)
			mnl_socket_close(nl->sock);
		nl->sock = NULL;
		return km_errf(err, errlen, "cannot open a netlink socket: %s", strerror(e));
	}
	/* strict checking: an address dump can then be asked for one interface, not the whole
	 * namespace (kernel >= 5.0; without it the dump is whole and the caller filters) */
	(void)setsockopt(mnl_socket_get_fd(nl->sock), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one,
			 sizeof(one));
	return 0;
}

void km_rtnl_close(struct km_rtnl *nl)
{
	if (nl->sock)
		mnl_socket_close(nl->sock);
	nl->sock = NULL;
}
