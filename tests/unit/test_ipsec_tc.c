/* test_ipsec_tc.c — the IPsec tc programs (bpf/ipsec.bpf.c), run with BPF_PROG_TEST_RUN on
 * crafted IPv4 and IPv6 packets: encrypt marks pod traffic to a remote node's pod CIDR 0xe0 and
 * leaves local traffic alone; decrypt gives ESP its sender's peer id in the mark (0 for an
 * unknown sender), keeps 0xd0 (decrypted) and clears any other mark. Needs root (BPF). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kmesh.skel.h"
#include "kmesh_maps.h"
#include "shared/addr.h"

static struct kmesh *skel;

static struct km_addr A(const char *text)
{
	struct km_addr a;

	assert_int_equal(km_addr_parse(text, &a), 0);
	return a;
}

/* Run prog on an Ethernet frame from src to dst (protocol proto) carrying mark; returns the mark
 * after it (and checks the verdict is TC_ACT_UNSPEC: they only mark, and leave the verdict to
 * later filters, which TC_ACT_OK would skip). */
static uint32_t run(int prog, const char *src, const char *dst, uint8_t proto, uint32_t mark)
{
	struct km_addr s = A(src), d = A(dst);
	int v4 = km_addr_is_v4(&d);
	uint8_t pkt[14 + 40 + 20] = { 0 };
	struct __sk_buff ctx = { .mark = mark }, out = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .ctx_in = &ctx, .ctx_size_in = sizeof(ctx),
		    .ctx_out = &out, .ctx_size_out = sizeof(out));

	pkt[12] = v4 ? 0x08 : 0x86;
	pkt[13] = v4 ? 0x00 : 0xdd;
	if (v4) {
		pkt[14] = 0x45;
		pkt[17] = 40;
		pkt[22] = 64;
		pkt[23] = proto;
		memcpy(pkt + 26, s.bytes + 12, 4);
		memcpy(pkt + 30, d.bytes + 12, 4);
		o.data_size_in = 14 + 20 + 20;
	} else {
		pkt[14] = 0x60;
		pkt[19] = 20;
		pkt[20] = proto;
		pkt[21] = 64;
		memcpy(pkt + 22, s.bytes, 16);
		memcpy(pkt + 38, d.bytes, 16);
		o.data_size_in = 14 + 40 + 20;
	}
	if (bpf_prog_test_run_opts(prog, &o) != 0)
		fail_msg("BPF_PROG_TEST_RUN: %s", strerror(errno));
	assert_int_equal((int32_t)o.retval, -1); /* TC_ACT_UNSPEC */
	return out.mark;
}

static void put_cidr(const char *net, uint32_t len, uint32_t peer)
{
	struct km_ipsec_cidr_key k = { .addr = A(net) };
	struct km_ipsec_cidr_value v = { .peer_id = peer };

	k.prefixlen = km_addr_is_v4(&k.addr) ? 96 + len : len;
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.km_ipsec_cidr), &k, &v, BPF_ANY), 0);
}

static void put_peer(const char *addr, uint32_t id)
{
	struct km_ipsec_peer_key k = { .addr = A(addr) };
	struct km_ipsec_peer_value v = { .peer_id = id };

	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.km_ipsec_peer), &k, &v, BPF_ANY), 0);
}

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	skel = kmesh__open();
	assert_non_null(skel);
	bpf_map__set_max_entries(skel->maps.km_ipsec_cidr, 16);
	bpf_map__set_max_entries(skel->maps.km_ipsec_peer, 16);
	bpf_program__set_autoload(skel->progs.km_authz_recheck, false); /* not used; needs 6.5 */
	assert_int_equal(kmesh__load(skel), 0);
	put_cidr("10.244.2.0", 24, 1);
	put_cidr("fd10:2::", 64, 1);
	put_peer("10.0.0.2", 1);
	put_peer("fd00::2", 1);
	put_peer("10.0.0.3", 7);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	kmesh__destroy(skel);
	return 0;
}

static void test_encrypt(void **state)
{
	int prog;

	(void)state;
	if (!skel) {
		print_message("needs root (BPF): skipped\n");
		skip();
	}
	prog = bpf_program__fd(skel->progs.km_ipsec_encrypt);
	assert_int_equal(run(prog, "10.244.1.5", "10.244.2.9", 6, 0), 0xe0);     /* remote pod */
	assert_int_equal(run(prog, "10.244.1.5", "10.244.1.6", 6, 0), 0);        /* local pod */
	assert_int_equal(run(prog, "10.244.1.5", "10.244.3.1", 17, 0x42), 0x42); /* not ours: untouched */
	assert_int_equal(run(prog, "fd10:1::5", "fd10:2::9", 6, 0), 0xe0);       /* IPv6 */
	assert_int_equal(run(prog, "fd10:1::5", "fd10:3::9", 6, 0), 0);
	/* an IPv6 destination in ::ffff:0:0/96 reads as the IPv4 address (such packets are not routed) */
	assert_int_equal(run(prog, "fd10:1::5", "::ffff:10.244.2.9", 6, 0), 0xe0);
}

static void test_decrypt(void **state)
{
	int prog;

	(void)state;
	if (!skel) {
		print_message("needs root (BPF): skipped\n");
		skip();
	}
	prog = bpf_program__fd(skel->progs.km_ipsec_decrypt);
	assert_int_equal(run(prog, "10.0.0.2", "10.0.0.1", 50, 0), 1u << 16);    /* ESP from peer 1 */
	assert_int_equal(run(prog, "10.0.0.3", "10.0.0.1", 50, 0x99), 7u << 16); /* peer 7, mark reset */
	assert_int_equal(run(prog, "10.0.0.9", "10.0.0.1", 50, 0xd1), 0);        /* unknown sender */
	assert_int_equal(run(prog, "fd00::2", "fd00::1", 50, 0), 1u << 16);      /* IPv6 ESP */
	assert_int_equal(run(prog, "10.244.2.9", "10.244.1.5", 6, 0xd0), 0xd0);  /* decrypted: kept */
	assert_int_equal(run(prog, "10.244.2.9", "10.244.1.5", 6, 0xe0), 0);     /* any other: cleared */
	assert_int_equal(run(prog, "10.244.2.9", "10.244.1.5", 6, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encrypt),
		cmocka_unit_test(test_decrypt),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
