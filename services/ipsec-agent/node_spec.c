/* node_spec.c — see node_spec.h. */
#include "services/ipsec-agent/node_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/ipsec-agent/pair_key.h"
#include "shared/addr.h"
#include "shared/errbuf.h"

int km_ipsec_cidr_parse(const char *text, struct km_addr *net, uint8_t *len, char *err,
			size_t errlen)
{
	char addr[KM_ADDR_STRLEN];
	const char *slash = strchr(text, '/');
	char *end;
	unsigned long n;
	int bits;

	if (!slash || (size_t)(slash - text) >= sizeof(addr))
		return km_errf(err, errlen, "'%.60s' is not a CIDR (address/length)", text), -1;
	memcpy(addr, text, (size_t)(slash - text));
	addr[slash - text] = '\0';
	n = strtoul(slash + 1, &end, 10);
	if (km_addr_parse(addr, net) != 0 || !slash[1] || *end)
		return km_errf(err, errlen, "'%.60s' is not a CIDR (address/length)", text), -1;
	bits = km_addr_is_v4(net) ? 32 : 128;
	if (n > (unsigned long)bits)
		return km_errf(err, errlen, "'%.60s': /%lu is longer than the address", text, n), -1;
	/* a pod CIDR that wide would send (nearly) all traffic to one node */
	if (n < (unsigned long)(km_addr_is_v4(net) ? KM_IPSEC_CIDR4_MIN : KM_IPSEC_CIDR6_MIN))
		return km_errf(err, errlen, "'%.60s': a pod CIDR shorter than /%d (IPv4) or /%d (IPv6) "
			       "is refused", text, KM_IPSEC_CIDR4_MIN, KM_IPSEC_CIDR6_MIN), -1;
	for (int b = (int)n; b < bits; b++) { /* host bits must be clear */
		int byte = (km_addr_is_v4(net) ? 12 : 0) + b / 8;

		if (net->bytes[byte] & (0x80 >> (b % 8)))
			return km_errf(err, errlen, "'%.60s' has host bits set", text), -1;
	}
	*len = (uint8_t)n;
	return 0;
}

/* Not unspecified, loopback, multicast or link-local. */
static int unicast(const struct km_addr *a)
{
	const uint8_t *b = a->bytes;

	if (km_addr_is_unspecified(a))
		return 0;
	if (km_addr_is_v4(a))
		return b[12] != 0 && b[12] != 127 && b[12] < 224 && !(b[12] == 169 && b[13] == 254);
	return b[0] != 0xff && !(b[0] == 0xfe && (b[1] & 0xc0) == 0x80) &&
	       memcmp(b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) != 0;
}

int km_ipsec_node_from_msg(const Kmesh__Ipc__IpsecNode *m, struct km_ipsec_node *out, char *err,
			   size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!m->name || !*m->name || strlen(m->name) >= sizeof(out->name))
		return km_errf(err, errlen, "a node needs a name of 1-%zu bytes",
			       sizeof(out->name) - 1), -1;
	snprintf(out->name, sizeof(out->name), "%s", m->name);
	out->spi = m->spi;
	if (m->n_addresses < 1 || m->n_addresses > KM_IPSEC_ADDRS_MAX)
		return km_errf(err, errlen, "node %s: %zu addresses, 1-%d needed", m->name,
			       m->n_addresses, KM_IPSEC_ADDRS_MAX), -1;
	for (size_t i = 0; i < m->n_addresses; i++) {
		struct km_addr a;

		if (strlen(m->addresses[i]) >= sizeof(out->addrs[i]) ||
		    km_addr_parse(m->addresses[i], &a) != 0)
			return km_errf(err, errlen, "node %s: '%.60s' is not an IP address", m->name,
				       m->addresses[i]), -1;
		if (!unicast(&a))
			return km_errf(err, errlen, "node %s: '%.60s' is not a unicast address a node "
				       "can be reached at", m->name, m->addresses[i]), -1;
		snprintf(out->addrs[i], sizeof(out->addrs[i]), "%s", m->addresses[i]);
	}
	out->n_addrs = m->n_addresses;
	if (!m->boot_id || strlen(m->boot_id) >= sizeof(out->boot_id) ||
	    strlen(m->boot_id) < KM_IPSEC_BOOT_ID_LEN)
		return km_errf(err, errlen, "node %s: boot id '%.40s' must be %d to %zu characters "
			       "(its first %d go into every pair key; Kmesh panics on a shorter one)",
			       m->name, m->boot_id ? m->boot_id : "", KM_IPSEC_BOOT_ID_LEN,
			       sizeof(out->boot_id) - 1, KM_IPSEC_BOOT_ID_LEN), -1;
	snprintf(out->boot_id, sizeof(out->boot_id), "%s", m->boot_id);
	if (m->n_pod_cidrs > KM_IPSEC_CIDRS_MAX)
		return km_errf(err, errlen, "node %s: %zu pod CIDRs, at most %d", m->name,
			       m->n_pod_cidrs, KM_IPSEC_CIDRS_MAX), -1;
	for (size_t i = 0; i < m->n_pod_cidrs; i++) {
		char why[128];

		if (km_ipsec_cidr_parse(m->pod_cidrs[i], &out->cidrs[i].net, &out->cidrs[i].len, why,
					sizeof(why)) != 0)
			return km_errf(err, errlen, "node %s: %s", m->name, why), -1;
	}
	out->n_cidrs = m->n_pod_cidrs;
	return 0;
}
