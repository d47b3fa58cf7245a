/* pair_key.h — the key of one direction between two nodes, derived exactly as Kmesh derives it
 * so mixed clusters interoperate (kmesh-userspace.md 3.3):
 *   SHA-512(base key || source IP text || destination IP text || source boot id[0:36] ||
 *           destination boot id[0:36]), truncated to the base key's length.
 * The source is the sending node: a receiver's ingress state uses (remote, local), a sender's
 * egress state (local, remote), so both ends compute the same key. IPs are the texts as the
 * KmeshNodeInfo lists them. */
#ifndef KM_IPSEC_PAIR_KEY_H
#define KM_IPSEC_PAIR_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "services/ipsec-agent/keyfile.h"

#define KM_IPSEC_BOOT_ID_LEN 36 /* characters of a boot id that go in (a UUID's text) */

/* out receives base->key_len bytes. Returns 0, or -1 with err filled (a boot id shorter than 36
 * characters, which Kmesh would crash on, or a hash failure). */
int km_ipsec_pair_key(const struct km_ipsec_key *base, const char *src_ip, const char *dst_ip,
		      const char *src_boot_id, const char *dst_boot_id, uint8_t *out, char *err,
		      size_t errlen);

#endif
