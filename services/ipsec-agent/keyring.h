/* keyring.h — the keys this node has loaded, by SPI: the current one (the last loaded) and the
 * older ones peers may still encrypt with during a rotation. Bounded; a key only leaves when
 * the agent says no peer uses its SPI any more, or, when full, the oldest that is not current. An
 * SPI always names one key: a file that reuses an SPI with other material is refused (peers
 * holding the old key would silently fail to decrypt). */
#ifndef KM_IPSEC_KEYRING_H
#define KM_IPSEC_KEYRING_H

#include <stddef.h>
#include <stdint.h>

#include "services/ipsec-agent/keyfile.h"

#define KM_IPSEC_HISTORY_MAX 16

struct km_ipsec_keyring {
	struct km_ipsec_key keys[KM_IPSEC_HISTORY_MAX]; /* in loading order, oldest first */
	size_t n;
	uint32_t current; /* SPI of the key in use; 0 = none loaded yet */
};

enum km_keyring_result {
	KM_KEYRING_UNCHANGED = 0, /* the current key again */
	KM_KEYRING_CURRENT = 1,   /* the current key changed (a new SPI, or back to an older one) */
	KM_KEYRING_REFUSED = -1,  /* err says why; nothing changed */
};

void km_ipsec_keyring_init(struct km_ipsec_keyring *r);
/* Add a loaded key and make it current. *dropped is set to the SPI pushed out when the ring was
 * full (0: none). */
enum km_keyring_result km_ipsec_keyring_add(struct km_ipsec_keyring *r, const struct km_ipsec_key *k,
					    uint32_t *dropped, char *err, size_t errlen);
const struct km_ipsec_key *km_ipsec_keyring_get(const struct km_ipsec_keyring *r, uint32_t spi);
const struct km_ipsec_key *km_ipsec_keyring_current(const struct km_ipsec_keyring *r);
/* Forget an old key (never the current one). Returns 1 if it was there. */
int km_ipsec_keyring_forget(struct km_ipsec_keyring *r, uint32_t spi);
/* Wipe every key. */
void km_ipsec_keyring_wipe(struct km_ipsec_keyring *r);

#endif
