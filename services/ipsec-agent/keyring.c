/* keyring.c — see keyring.h. */
#include "services/ipsec-agent/keyring.h"

#include <string.h>

#include "shared/errbuf.h"

void km_ipsec_keyring_init(struct km_ipsec_keyring *r)
{
	memset(r, 0, sizeof(*r));
}

static void remove_at(struct km_ipsec_keyring *r, size_t i)
{
	km_ipsec_key_wipe(&r->keys[i]);
	memmove(&r->keys[i], &r->keys[i + 1], (r->n - i - 1) * sizeof(r->keys[0]));
	r->n--;
	km_ipsec_key_wipe(&r->keys[r->n]);
}

enum km_keyring_result km_ipsec_keyring_add(struct km_ipsec_keyring *r, const struct km_ipsec_key *k,
					    uint32_t *dropped, char *err, size_t errlen)
{
	const struct km_ipsec_key *have = km_ipsec_keyring_get(r, k->spi);
	uint32_t was = r->current;

	*dropped = 0;
	if (have && !km_ipsec_key_equal(have, k)) {
		km_errf(err, errlen, "SPI %u already names another key; a new key needs a new SPI "
			"(peers holding the old one could not decrypt)", k->spi);
		return KM_KEYRING_REFUSED;
	}
	if (!have) {
		if (r->n == KM_IPSEC_HISTORY_MAX) {
			size_t victim = r->keys[0].spi == r->current ? 1 : 0;

			*dropped = r->keys[victim].spi;
			remove_at(r, victim);
		}
		r->keys[r->n++] = *k;
	}
	r->current = k->spi;
	return was == k->spi ? KM_KEYRING_UNCHANGED : KM_KEYRING_CURRENT;
}

const struct km_ipsec_key *km_ipsec_keyring_get(const struct km_ipsec_keyring *r, uint32_t spi)
{
	for (size_t i = 0; spi && i < r->n; i++)
		if (r->keys[i].spi == spi)
			return &r->keys[i];
	return NULL;
}

const struct km_ipsec_key *km_ipsec_keyring_current(const struct km_ipsec_keyring *r)
{
	return km_ipsec_keyring_get(r, r->current);
}

int km_ipsec_keyring_forget(struct km_ipsec_keyring *r, uint32_t spi)
{
	if (!spi || spi == r->current)
		return 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->keys[i].spi == spi) {
			remove_at(r, i);
			return 1;
		}
	return 0;
}

void km_ipsec_keyring_wipe(struct km_ipsec_keyring *r)
{
	explicit_bzero(r, sizeof(*r));
}
