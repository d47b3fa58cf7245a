/* dns_wire.h — the DNS wire format of the proxy's query path (RFC 1035, EDNS0 RFC 6891): a query
 * read (its header, its question, whether it carries an OPT record and the UDP size it offers),
 * every length checked against the message, and an answer written. Only what the proxy answers
 * is interpreted; the other sections are walked to check that the message is whole. Pure: no
 * allocation, no I/O (the fuzz target drives it through dns_answer.c).
 *
 * It replaced ldns (2026-11-28): the proxy needs a header, one question and one OPT record, and
 * ldns brought OpenSSL into the agent (~1.9 MB of resident library pages on every node, the
 * proxy on or off) and a dozen allocations per query. ldns stays the tests' independent reader
 * and writer of DNS messages (test_dns.c, fuzz_dns.c). */
#ifndef KM_XDS_DNS_WIRE_H
#define KM_XDS_DNS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"

#define KM_DNS_HEADER 12
#define KM_DNS_MAX_NAME 255 /* a name's wire form, its root label included (RFC 1035 2.3.4) */
#define KM_DNS_TYPE_A 1
#define KM_DNS_TYPE_AAAA 28
#define KM_DNS_TYPE_OPT 41
#define KM_DNS_CLASS_IN 1
#define KM_DNS_EDNS_UDP 1232 /* the UDP size an answer offers (the DNS flag day's) */

/* Header flag bits (the second 16-bit word). */
#define KM_DNS_F_QR 0x8000
#define KM_DNS_F_AA 0x0400
#define KM_DNS_F_TC 0x0200
#define KM_DNS_F_RD 0x0100
#define KM_DNS_F_RA 0x0080
#define KM_DNS_OPCODE(flags) (((flags) >> 11) & 0xf)

struct km_dns_query {
	uint16_t id, flags, qdcount;
	/* the first question (qdcount >= 1): its name in wire form, uncompressed (pointers
	 * followed), letters as sent */
	uint8_t qname[KM_DNS_MAX_NAME];
	size_t qname_len;
	uint16_t qtype, qclass;
	int edns;          /* it carries an OPT record */
	uint16_t edns_udp; /* the UDP size that record offers */
};

/* Reads msg into q. Returns 0, or -1 when msg is not a whole DNS message: shorter than its
 * header, a section running past its end, a label over 63 bytes, a name over 255, a compression
 * pointer that does not point back (or more than KM_DNS_MAX_NAME of them in one name), a label
 * kind other than the two RFC 1035 defines. */
int km_dns_query_read(const uint8_t *msg, size_t len, struct km_dns_query *q);

/* q's first name in text form, lowercase, without the root's dot ("" for the root), into text
 * (KM_DNS_MAX_NAME bytes). Returns 0, or -1 when a label holds a byte no mesh hostname has (other
 * than a letter, a digit, '-', '_' or '*': a dot inside a label, a space, binary): such a name is
 * not the mesh's. */
int km_dns_qname_text(const struct km_dns_query *q, char *text);

/* The answer to q's first question: n addresses (4 bytes each when v4, else 16; IPv4 is the last 4
 * bytes of a km_addr) with ttl, with TC set when tc (the client asks again over TCP); an OPT
 * record offering KM_DNS_EDNS_UDP when q carried one. The length it takes: */
size_t km_dns_answer_size(const struct km_dns_query *q, int n, int v4);
/* Writes it into out (km_dns_answer_size bytes). Returns the bytes written. */
size_t km_dns_answer_write(const struct km_dns_query *q, const struct km_addr *addrs, int n, int v4,
			   uint32_t ttl, int tc, uint8_t *out);

#endif
