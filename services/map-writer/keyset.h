/* keyset.h — a set of fixed-size keys: which rows of a table are present. The map writer is the
 * only writer of its tables, so it keeps their keys here and checks a row's references in memory
 * instead of with a bpf() lookup per reference. Open addressing with linear probing, deletion by
 * backward shift (no tombstones); keys up to KM_KEYSET_MAX_KEY bytes. A set may carry a small
 * fixed-size value per key (km_keyset_init_values): e.g. the backend an endpoint slot names. */
#ifndef KM_MW_KEYSET_H
#define KM_MW_KEYSET_H

#include <stddef.h>
#include <stdint.h>

#define KM_KEYSET_MAX_KEY 28

struct km_keyset {
	uint8_t *slots; /* cap slots of 1 used byte + key_len key bytes + value_len value bytes */
	size_t key_len, value_len, slot_len;
	size_t cap, count; /* cap: power of two (0 before the first insert) */
};

/* key_len in 1..KM_KEYSET_MAX_KEY. */
void km_keyset_init(struct km_keyset *s, size_t key_len);
/* The same, with value_len bytes of value per key (zero when a key is added). */
void km_keyset_init_values(struct km_keyset *s, size_t key_len, size_t value_len);
/* The key's value (writable; valid until the next add or delete), or NULL if it is absent. */
void *km_keyset_value(const struct km_keyset *s, const void *key);
void km_keyset_free(struct km_keyset *s);
/* Returns 0, or -1 when out of memory (the set is unchanged). Adding a present key is a no-op
 * (its value stays). */
int km_keyset_add(struct km_keyset *s, const void *key);
void km_keyset_del(struct km_keyset *s, const void *key);
int km_keyset_has(const struct km_keyset *s, const void *key);
/* Start loading the key's home slot into the cache: a caller that knows the keys it will look up
 * next (a batch's rows) hides the memory latency of a large set's lookups behind other work. */
void km_keyset_prefetch(const struct km_keyset *s, const void *key);
/* Forget every key, keeping the memory. */
void km_keyset_clear(struct km_keyset *s);

#endif
