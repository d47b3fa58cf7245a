/* addr.c — IP address conversions (see addr.h). */
#include "shared/addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

int km_addr_from_bytes(const uint8_t *bytes, size_t len, struct km_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (len == 4) {
		memcpy(out->bytes, v4mapped_prefix, sizeof(v4mapped_prefix));
		memcpy(out->bytes + 12, bytes, 4);
		return 0;
	}
	if (len == 16) {
		memcpy(out->bytes, bytes, 16);
		return 0;
	}
	return -1;
}

int km_addr_is_v4(const struct km_addr *a)
{
	return memcmp(a->bytes, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0;
}

int km_addr_is_unspecified(const struct km_addr *a)
{
	static const uint8_t zero[16];

	if (km_addr_is_v4(a))
		return memcmp(a->bytes + 12, zero, 4) == 0;
	return memcmp(a->bytes, zero, 16) == 0;
}

size_t km_addr_to_bytes(const struct km_addr *a, uint8_t out[16])
{
	if (km_addr_is_v4(a)) {
		memcpy(out, a->bytes + 12, 4);
		return 4;
	}
	memcpy(out, a->bytes, 16);
	return 16;
}

int km_addr_parse(const char *text, struct km_addr *out)
{
	uint8_t buf[16];

	if (inet_pton(AF_INET, text, buf) == 1)
		return km_addr_from_bytes(buf, 4, out);
	if (inet_pton(AF_INET6, text, buf) == 1)
		return km_addr_from_bytes(buf, 16, out);
	return -1;
}

const char *km_addr_format(const struct km_addr *a, char *buf)
{
	if (km_addr_is_v4(a))
		inet_ntop(AF_INET, a->bytes + 12, buf, KM_ADDR_STRLEN);
	else
		inet_ntop(AF_INET6, a->bytes, buf, KM_ADDR_STRLEN);
	return buf;
}

int km_split_host_port(const char *addr, char *host, size_t hlen, uint16_t *port)
{
	const char *colon = strrchr(addr, ':');
	unsigned long p;
	char *end;
	size_t n;

	if (!colon || colon == addr)
		return -1;
	n = (size_t)(colon - addr);
	if (addr[0] == '[' && n > 2 && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	if (n >= hlen)
		return -1;
	memcpy(host, addr, n);
	host[n] = '\0';
	p = strtoul(colon + 1, &end, 10);
	if (*end || p == 0 || p > 65535)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

size_t km_sockaddr_to_bytes(const struct sockaddr_storage *ss, uint8_t out[16], uint16_t *port)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		memcpy(out, &in->sin_addr, 4);
		if (port)
			*port = ntohs(in->sin_port);
		return 4;
	}
	if (ss->ss_family != AF_INET6)
		return 0;
	{
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

		memcpy(out, &in6->sin6_addr, 16);
		if (port)
			*port = ntohs(in6->sin6_port);
	}
	if (!memcmp(out, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) { /* v4-mapped */
		memmove(out, out + 12, 4);
		return 4;
	}
	return 16;
}
