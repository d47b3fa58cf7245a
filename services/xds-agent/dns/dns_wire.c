/* dns_wire.c — see dns_wire.h. */
#include "services/xds-agent/dns/dns_wire.h"

#include <string.h>

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	return put16(put16(p, (uint16_t)(v >> 16)), (uint16_t)v);
}

#define LABEL_POINTER 0xc0

/* Reads the name at *off, following compression pointers (each must point before itself, at
 * most KM_DNS_MAX_NAME of them), and moves *off past it as it sits there (a pointer ends it).
 * Its wire form, uncompressed, into out when given (KM_DNS_MAX_NAME bytes), its length into
 * *out_len. */
static int read_name(const uint8_t *msg, size_t len, size_t *off, uint8_t *out, size_t *out_len)
{
	size_t pos = *off, n = 0, after = 0;
	unsigned hops = 0;

	for (;;) {
		uint8_t l;

		if (pos >= len)
			return -1;
		l = msg[pos];
		if ((l & LABEL_POINTER) == LABEL_POINTER) {
			size_t to;

			if (pos + 2 > len)
				return -1;
			to = (size_t)(l & ~LABEL_POINTER) << 8 | msg[pos + 1];
			if (!hops)
				after = pos + 2;
			if (to >= pos || ++hops > KM_DNS_MAX_NAME)
				return -1;
			pos = to;
			continue;
		}
		if (l & LABEL_POINTER)
			return -1; /* 0x40 and 0x80: label kinds RFC 1035 does not define */
		if (n + 1 + l > KM_DNS_MAX_NAME || pos + 1 + l > len)
			return -1;
		if (out)
			memcpy(out + n, msg + pos, 1 + (size_t)l);
		n += 1 + (size_t)l;
		pos += 1 + (size_t)l;
		if (l == 0)
			break;
	}
	*off = hops ? after : pos;
	if (out_len)
		*out_len = n;
	return 0;
}

int km_dns_query_read(const uint8_t *msg, size_t len, struct km_dns_query *q)
{
	size_t off = KM_DNS_HEADER;
	uint32_t n_rr;

	memset(q, 0, sizeof(*q));
	if (len < KM_DNS_HEADER)
		return -1;
	q->id = get16(msg);
	q->flags = get16(msg + 2);
	q->qdcount = get16(msg + 4);
	/* answer + authority + additional records: each at least 11 bytes, so bounded by len */
	n_rr = (uint32_t)get16(msg + 6) + get16(msg + 8) + get16(msg + 10);
	for (uint32_t i = 0; i < q->qdcount; i++) {
		if (read_name(msg, len, &off, i ? NULL : q->qname, i ? NULL : &q->qname_len) != 0 ||
		    off + 4 > len)
			return -1;
		if (i == 0) {
			q->qtype = get16(msg + off);
			q->qclass = get16(msg + off + 2);
		}
		off += 4;
	}
	for (uint32_t i = 0; i < n_rr; i++) {
		uint16_t type, rdlen;

		if (read_name(msg, len, &off, NULL, NULL) != 0 || off + 10 > len)
			return -1;
		type = get16(msg + off);
		rdlen = get16(msg + off + 8);
		if (type == KM_DNS_TYPE_OPT && !q->edns &&
		    i >= (uint32_t)get16(msg + 6) + get16(msg + 8)) { /* the additional section's */
			q->edns = 1;
			q->edns_udp = get16(msg + off + 2); /* its class */
		}
		off += 10;
		if (off + rdlen > len)
			return -1;
		off += rdlen;
	}
	return 0;
}

static int hostname_byte(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '*';
}

int km_dns_qname_text(const struct km_dns_query *q, char *text)
{
	size_t i = 0, t = 0;

	while (i < q->qname_len && q->qname[i]) {
		uint8_t l = q->qname[i++];

		if (t)
			text[t++] = '.';
		for (; l; l--, i++) {
			uint8_t c = q->qname[i];

			if (c >= 'A' && c <= 'Z')
				c = (uint8_t)(c - 'A' + 'a');
			if (!hostname_byte(c))
				return -1;
			text[t++] = (char)c;
		}
	}
	text[t] = '\0';
	return 0;
}

#define RR_FIXED 10 /* type, class, ttl, rdlength */

size_t km_dns_answer_size(const struct km_dns_query *q, int n, int v4)
{
	return KM_DNS_HEADER + q->qname_len + 4 + (size_t)n * (2 + RR_FIXED + (v4 ? 4 : 16)) +
	       (q->edns ? 1 + RR_FIXED : 0);
}

size_t km_dns_answer_write(const struct km_dns_query *q, const struct km_addr *addrs, int n, int v4,
			   uint32_t ttl, int tc, uint8_t *out)
{
	uint16_t flags = KM_DNS_F_QR | KM_DNS_F_AA | KM_DNS_F_RA | (q->flags & KM_DNS_F_RD) |
			 (tc ? KM_DNS_F_TC : 0); /* opcode QUERY, rcode NOERROR */
	uint8_t *p = out;

	p = put16(p, q->id);
	p = put16(p, flags);
	p = put16(p, 1);
	p = put16(p, (uint16_t)n);
	p = put16(p, 0);
	p = put16(p, q->edns ? 1 : 0);
	memcpy(p, q->qname, q->qname_len);
	p += q->qname_len;
	p = put16(p, q->qtype);
	p = put16(p, q->qclass);
	for (int i = 0; i < n; i++) {
		p = put16(p, LABEL_POINTER << 8 | KM_DNS_HEADER); /* the question's name */
		p = put16(p, v4 ? KM_DNS_TYPE_A : KM_DNS_TYPE_AAAA);
		p = put16(p, KM_DNS_CLASS_IN);
		p = put32(p, ttl);
		p = put16(p, v4 ? 4 : 16);
		memcpy(p, v4 ? &addrs[i].bytes[12] : addrs[i].bytes, v4 ? 4 : 16);
		p += v4 ? 4 : 16;
	}
	if (q->edns) {
		*p++ = 0; /* the root */
		p = put16(p, KM_DNS_TYPE_OPT);
		p = put16(p, KM_DNS_EDNS_UDP);
		p = put32(p, 0); /* extended rcode, version 0, no flags */
		p = put16(p, 0);
	}
	return (size_t)(p - out);
}
