/* test_ipsec_xfrm.c — the XFRM requests of the IPsec agent. The messages libnl-xfrm builds are
 * decoded here by hand, against the kernel's UAPI structs (linux/xfrm.h), field by field. Then,
 * as root in a network namespace of the test's own, policies are installed, updated and removed
 * in the real kernel and read back with `ip xfrm policy`; this kernel has no ESP, so adding a
 * state must fail with a report that says so. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <linux/netlink.h>
#include <linux/xfrm.h>
#include <netlink/msg.h>

#include "services/ipsec-agent/xfrm_link.h"
#include "services/ipsec-agent/xfrm_msg.h"
#include "shared/addr.h"

static struct km_addr A(const char *text)
{
	struct km_addr a;

	assert_int_equal(km_addr_parse(text, &a), 0);
	return a;
}

/* The attribute of type t in the message after a payload of len bytes, or NULL. */
static const struct nlattr *attr(const struct nlmsghdr *h, size_t payload, uint16_t t)
{
	const char *p = (const char *)NLMSG_DATA(h) + NLMSG_ALIGN(payload);
	const char *end = (const char *)h + h->nlmsg_len;

	while (p + NLA_HDRLEN <= end) {
		const struct nlattr *a = (const struct nlattr *)p;

		assert_true(a->nla_len >= NLA_HDRLEN && p + a->nla_len <= end);
		if ((a->nla_type & NLA_TYPE_MASK) == t)
			return a;
		p += NLA_ALIGN(a->nla_len);
	}
	return NULL;
}

#define ATTR_DATA(a) ((const void *)((const char *)(a) + NLA_HDRLEN))

static const uint8_t key[36] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
				 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36 };

static struct km_xfrm_state_spec ingress_state(void)
{
	struct km_xfrm_state_spec s = { .src = A("10.0.0.2"), .dst = A("10.0.0.1"), .spi = 3,
					.aead_name = "rfc4106(gcm(aes))", .key = key,
					.key_len = sizeof(key), .icv_bits = 128,
					.output_mark = KM_XFRM_MARK_DECRYPTED };
	return s;
}

static void test_state_message(void **state)
{
	struct km_xfrm_state_spec s = ingress_state();
	const struct xfrm_usersa_info *sa;
	const struct xfrm_algo_aead *aead;
	const struct nlattr *a;
	const struct nlmsghdr *h;
	struct nl_msg *m;
	char err[256];

	(void)state;
	assert_int_equal(km_xfrm_state_msg(&s, KM_XFRM_ADD, &m, err, sizeof(err)), 0);
	h = nlmsg_hdr(m);
	assert_int_equal(h->nlmsg_type, XFRM_MSG_NEWSA);
	sa = NLMSG_DATA(h);
	assert_int_equal(sa->family, AF_INET);
	assert_int_equal(sa->id.daddr.a4, inet_addr("10.0.0.1"));
	assert_int_equal(sa->saddr.a4, inet_addr("10.0.0.2"));
	assert_int_equal(sa->id.spi, htonl(3));
	assert_int_equal(sa->id.proto, IPPROTO_ESP);
	assert_int_equal(sa->mode, XFRM_MODE_TUNNEL);
	assert_int_equal(sa->reqid, KM_XFRM_REQID);
	/* zero limits would expire the state on its first packet */
	assert_true(sa->lft.soft_byte_limit == XFRM_INF && sa->lft.hard_byte_limit == XFRM_INF);
	assert_true(sa->lft.soft_packet_limit == XFRM_INF && sa->lft.hard_packet_limit == XFRM_INF);
	assert_int_equal(sa->replay_window, KM_XFRM_REPLAY_WINDOW);
	a = attr(h, sizeof(*sa), XFRMA_ALG_AEAD);
	assert_non_null(a);
	aead = ATTR_DATA(a);
	assert_string_equal(aead->alg_name, "rfc4106(gcm(aes))");
	assert_int_equal(aead->alg_key_len, 36 * 8);
	assert_int_equal(aead->alg_icv_len, 128);
	assert_memory_equal(aead->alg_key, key, 36);
	a = attr(h, sizeof(*sa), XFRMA_SET_MARK);
	assert_non_null(a);
	assert_int_equal(*(const uint32_t *)ATTR_DATA(a), 0xd0);
	a = attr(h, sizeof(*sa), XFRMA_SET_MARK_MASK);
	assert_non_null(a);
	assert_int_equal(*(const uint32_t *)ATTR_DATA(a), 0xffffffff);
	assert_null(attr(h, sizeof(*sa), XFRMA_MARK)); /* no mark given: it takes every packet */
	nlmsg_free(m);

	/* an ingress state takes only its peer's packets (the peer id in the mark) */
	s.mark = 7 << KM_IPSEC_PEER_SHIFT;
	s.mark_mask = KM_IPSEC_PEER_MASK;
	assert_int_equal(km_xfrm_state_msg(&s, KM_XFRM_ADD, &m, err, sizeof(err)), 0);
	h = nlmsg_hdr(m);
	a = attr(h, sizeof(*sa), XFRMA_MARK);
	assert_non_null(a);
	assert_int_equal(((const struct xfrm_mark *)ATTR_DATA(a))->v, 0x70000);
	assert_int_equal(((const struct xfrm_mark *)ATTR_DATA(a))->m, 0x0fff0000);
	nlmsg_free(m);
	s.mark = s.mark_mask = 0;

	/* egress: no output mark; update; IPv6 */
	s.output_mark = 0;
	s.src = A("fd00::1");
	s.dst = A("fd00::2");
	assert_int_equal(km_xfrm_state_msg(&s, KM_XFRM_UPDATE, &m, err, sizeof(err)), 0);
	h = nlmsg_hdr(m);
	assert_int_equal(h->nlmsg_type, XFRM_MSG_UPDSA);
	sa = NLMSG_DATA(h);
	assert_int_equal(sa->family, AF_INET6);
	assert_memory_equal(&sa->id.daddr.a6, A("fd00::2").bytes, 16);
	assert_null(attr(h, sizeof(*sa), XFRMA_SET_MARK));
	nlmsg_free(m);

	assert_int_equal(km_xfrm_state_msg(&s, KM_XFRM_DELETE, &m, err, sizeof(err)), 0);
	h = nlmsg_hdr(m);
	assert_int_equal(h->nlmsg_type, XFRM_MSG_DELSA);
	{
		const struct xfrm_usersa_id *id = NLMSG_DATA(h);

		assert_int_equal(id->spi, htonl(3));
		assert_int_equal(id->proto, IPPROTO_ESP);
		assert_int_equal(id->family, AF_INET6);
		assert_memory_equal(&id->daddr.a6, A("fd00::2").bytes, 16);
		assert_null(attr(h, sizeof(*id), XFRMA_ALG_AEAD)); /* no key material in a delete */
	}
	nlmsg_free(m);

	s.src = A("10.0.0.2"); /* families must agree */
	assert_int_equal(km_xfrm_state_msg(&s, KM_XFRM_ADD, &m, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "one family"));
}

static void test_policy_message(void **state)
{
	struct km_xfrm_policy_spec p = { .dir = XFRM_POLICY_OUT, .cidr = A("10.244.2.0"), .cidr_len = 24,
					 .mark = KM_XFRM_MARK_ENCRYPT, .tmpl_src = A("10.0.0.1"),
					 .tmpl_dst = A("10.0.0.2"), .tmpl_spi = 7 };
	const struct xfrm_userpolicy_info *pi;
	const struct xfrm_user_tmpl *t;
	const struct xfrm_mark *mark;
	const struct nlattr *a;
	const struct nlmsghdr *h;
	struct nl_msg *m;
	char err[256];

	(void)state;
	assert_int_equal(km_xfrm_policy_msg(&p, KM_XFRM_ADD, &m, err, sizeof(err)), 0);
	h = nlmsg_hdr(m);
	assert_int_equal(h->nlmsg_type, XFRM_MSG_NEWPOLICY);
	pi = NLMSG_DATA(h);
	assert_int_equal(pi->dir, XFRM_POLICY_OUT);
	assert_int_equal(pi->action, XFRM_POLICY_ALLOW);
	assert_true(pi->lft.hard_byte_limit == XFRM_INF && pi->lft.hard_packet_limit == XFRM_INF);
	assert_int_equal(pi->sel.family, AF_INET);
	assert_int_equal(pi->sel.daddr.a4, inet_addr("10.244.2.0"));
	assert_int_equal(pi->sel.prefixlen_d, 24);
	assert_int_equal(pi->sel.saddr.a4, 0);
	assert_int_equal(pi->sel.prefixlen_s, 0);
	a = attr(h, sizeof(*pi), XFRMA_MARK);
	assert_non_null(a);
	mark = ATTR_DATA(a);
	assert_int_equal(mark->v, 0xe0);
	assert_int_equal(mark->m, 0xffffffff);
	a = attr(h, sizeof(*pi), XFRMA_TMPL);
	assert_non_null(a);
	assert_int_equal(a->nla_len - NLA_HDRLEN, sizeof(*t)); /* exactly one template */
	t = ATTR_DATA(a);
	assert_int_equal(t->family, AF_INET);
	assert_int_equal(t->saddr.a4, inet_addr("10.0.0.1"));
	assert_int_equal(t->id.daddr.a4, inet_addr("10.0.0.2"));
	assert_int_equal(t->id.proto, IPPROTO_ESP);
	assert_int_equal(t->id.spi, htonl(7));
	assert_int_equal(t->reqid, KM_XFRM_REQID);
	assert_int_equal(t->mode, XFRM_MODE_TUNNEL);
	assert_int_equal(t->aalgos, 0xffffffff); /* any algorithm, or no state would ever match */
	assert_int_equal(t->ealgos, 0xffffffff);
	nlmsg_free(m);

	/* an IPv6 pod CIDR over IPv4 nodes: the selector is IPv6 throughout (::/0 source) */
	p.dir = XFRM_POLICY_IN;
	p.cidr = A("fd10:1::");
	p.cidr_len = 64;
	assert_int_equal(km_xfrm_policy_msg(&p, KM_XFRM_UPDATE, &m, err, sizeof(err)), 0);
	h = nlmsg_hdr(m);
	assert_int_equal(h->nlmsg_type, XFRM_MSG_UPDPOLICY);
	pi = NLMSG_DATA(h);
	assert_int_equal(pi->sel.family, AF_INET6);
	assert_int_equal(pi->sel.prefixlen_d, 64);
	assert_memory_equal(&pi->sel.daddr.a6, A("fd10:1::").bytes, 16);
	assert_memory_equal(&pi->sel.saddr.a6, A("::").bytes, 16);
	t = ATTR_DATA(attr(h, sizeof(*pi), XFRMA_TMPL));
	assert_int_equal(t->family, AF_INET);
	nlmsg_free(m);

	assert_int_equal(km_xfrm_policy_msg(&p, KM_XFRM_DELETE, &m, err, sizeof(err)), 0);
	h = nlmsg_hdr(m);
	assert_int_equal(h->nlmsg_type, XFRM_MSG_DELPOLICY);
	{
		const struct xfrm_userpolicy_id *id = NLMSG_DATA(h);

		assert_int_equal(id->dir, XFRM_POLICY_IN);
		assert_int_equal(id->sel.prefixlen_d, 64);
		assert_non_null(attr(h, sizeof(*id), XFRMA_MARK)); /* the mark is part of its key */
		assert_null(attr(h, sizeof(*id), XFRMA_TMPL));
	}
	nlmsg_free(m);

	p.cidr = A("10.1.0.0");
	p.cidr_len = 33;
	assert_int_equal(km_xfrm_policy_msg(&p, KM_XFRM_ADD, &m, err, sizeof(err)), -1);
}

static char policies[8192];

static const char *ip_xfrm(const char *what)
{
	char cmd[64];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ip xfrm %s 2>&1", what);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(policies, 1, sizeof(policies) - 1, p);
	policies[n] = '\0';
	pclose(p);
	return policies;
}

static void send_policy(struct km_xfrm_link *l, const struct km_xfrm_policy_spec *p,
			enum km_xfrm_op op, int want)
{
	struct nl_msg *m;
	char err[256];

	assert_int_equal(km_xfrm_policy_msg(p, op, &m, err, sizeof(err)), 0);
	if (km_xfrm_link_send(l, m, "policy", err, sizeof(err)) != want)
		fail_msg("policy op %d: wanted %d: %s", op, want, err);
}

static void test_kernel(void **state)
{
	struct km_xfrm_policy_spec in = { .dir = XFRM_POLICY_IN, .cidr = A("10.244.1.0"), .cidr_len = 24,
					  .mark = KM_XFRM_MARK_DECRYPTED, .tmpl_src = A("10.0.0.2"),
					  .tmpl_dst = A("10.0.0.1") };
	struct km_xfrm_policy_spec out = { .dir = XFRM_POLICY_OUT, .cidr = A("10.244.2.0"),
					   .cidr_len = 24, .mark = KM_XFRM_MARK_ENCRYPT,
					   .tmpl_src = A("10.0.0.1"), .tmpl_dst = A("10.0.0.2"),
					   .tmpl_spi = 3 };
	struct km_xfrm_state_spec s = ingress_state();
	struct km_xfrm_link l;
	struct nl_msg *m;
	char err[512];
	unsigned long refused = 2; /* the duplicate add and the second delete */

	(void)state;
	if (geteuid() != 0) {
		print_message("needs root (a network namespace, CAP_NET_ADMIN): skipped\n");
		skip();
	}
	assert_int_equal(unshare(CLONE_NEWNET), 0); /* this process only; never the host's XFRM */
	assert_int_equal(km_xfrm_link_open(&l, err, sizeof(err)), 0);
	send_policy(&l, &in, KM_XFRM_ADD, 0);
	send_policy(&l, &in, KM_XFRM_ADD, -EEXIST);
	in.dir = XFRM_POLICY_FWD;
	send_policy(&l, &in, KM_XFRM_ADD, 0);
	send_policy(&l, &out, KM_XFRM_UPDATE, 0); /* update creates when absent */
	ip_xfrm("policy");
	assert_non_null(strstr(policies, "src 0.0.0.0/0 dst 10.244.1.0/24 \n\tdir in"));
	assert_non_null(strstr(policies, "src 0.0.0.0/0 dst 10.244.1.0/24 \n\tdir fwd"));
	assert_non_null(strstr(policies, "src 0.0.0.0/0 dst 10.244.2.0/24 \n\tdir out"));
	assert_non_null(strstr(policies, "mark 0xd0/0xffffffff"));
	assert_non_null(strstr(policies, "mark 0xe0/0xffffffff"));
	assert_non_null(strstr(policies, "tmpl src 10.0.0.2 dst 10.0.0.1\n\t\tproto esp reqid 1 mode tunnel"));
	assert_non_null(strstr(policies, "tmpl src 10.0.0.1 dst 10.0.0.2\n\t\tproto esp spi 0x00000003 reqid 1 mode tunnel"));
	/* rotation: the out policy switches to the peer's new SPI in place */
	out.tmpl_spi = 4;
	send_policy(&l, &out, KM_XFRM_UPDATE, 0);
	ip_xfrm("policy");
	assert_non_null(strstr(policies, "spi 0x00000004"));
	assert_null(strstr(policies, "spi 0x00000003"));
	/* removal, and removing what is gone */
	send_policy(&l, &out, KM_XFRM_DELETE, 0);
	send_policy(&l, &out, KM_XFRM_DELETE, -ENOENT);
	send_policy(&l, &in, KM_XFRM_DELETE, 0);
	in.dir = XFRM_POLICY_IN;
	send_policy(&l, &in, KM_XFRM_DELETE, 0);
	assert_string_equal(ip_xfrm("policy"), "");

	/* no ESP in this kernel: the state is refused, and the report says why */
	assert_int_equal(km_xfrm_state_msg(&s, KM_XFRM_ADD, &m, err, sizeof(err)), 0);
	switch (km_xfrm_link_send(&l, m, "ESP state 10.0.0.2 -> 10.0.0.1 spi 3", err, sizeof(err))) {
	case 0:
		print_message("this kernel has ESP: the state was installed\n");
		assert_non_null(strstr(ip_xfrm("state"), "proto esp spi 0x00000003 reqid 1 mode tunnel"));
		break;
	case -ENOSYS:
		print_message("refused as expected: %s\n", err);
		assert_non_null(strstr(err, "ESP state 10.0.0.2 -> 10.0.0.1 spi 3: the kernel refused it"));
		assert_non_null(strstr(err, "this kernel has no ESP support"));
		assert_string_equal(ip_xfrm("state"), "");
		refused++;
		break;
	default:
		fail_msg("unexpected answer to a state: %s", err);
	}
	assert_int_equal(l.refused, refused);
	km_xfrm_link_close(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_message),
		cmocka_unit_test(test_policy_message),
		cmocka_unit_test(test_kernel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
