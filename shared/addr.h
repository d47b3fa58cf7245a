/* addr.h — IP address conversions between text, raw 4/16-byte protobuf bytes and struct km_addr
 * (always 16 bytes, IPv4 v4-mapped; see bpf/include/kmesh_maps.h). */
#ifndef KM_SHARED_ADDR_H
#define KM_SHARED_ADDR_H

#include <stddef.h>
#include <stdint.h>

#include "kmesh_maps.h"

#define KM_ADDR_STRLEN 46 /* INET6_ADDRSTRLEN */

/* Text ("10.0.0.1", "fd00::1") to km_addr. Returns 0 or -1. */
int km_addr_parse(const char *text, struct km_addr *out);
/* Raw bytes (4 = IPv4, 16 = IPv6) to km_addr. Returns 0 or -1 for any other length. */
int km_addr_from_bytes(const uint8_t *bytes, size_t len, struct km_addr *out);
/* km_addr to raw bytes: 4 for a v4-mapped address, else 16. Returns the length. */
size_t km_addr_to_bytes(const struct km_addr *a, uint8_t out[16]);
int km_addr_is_v4(const struct km_addr *a);
int km_addr_is_unspecified(const struct km_addr *a);
/* Formats into buf (KM_ADDR_STRLEN bytes); IPv4 in dotted form. Returns buf. */
const char *km_addr_format(const struct km_addr *a, char *buf);
/* A socket address (AF_INET or AF_INET6; NULL port: not wanted) to raw bytes, as
 * km_addr_to_bytes gives them: 4 for IPv4 and v4-mapped IPv6. Returns the length, 0 for another
 * family. */
struct sockaddr_storage;
size_t km_sockaddr_to_bytes(const struct sockaddr_storage *ss, uint8_t out[16], uint16_t *port);
/* "host:port" (or "[v6]:port") into its parts; the port 1-65535. Returns 0, or -1. */
int km_split_host_port(const char *addr, char *host, size_t hlen, uint16_t *port);

#endif
