/* profile_pool.c — interned profiles (see profile_pool.h). Both kinds are a run of string
 * pointers; each distinct run is one counted entry in a chained hash table keyed by the
 * pointers of its interned strings, found from the profile itself when it is released. */
#include "services/xds-agent/core/profile_pool.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/core/strpool.h"

#define WHO_N (sizeof(struct km_wl_who) / sizeof(char *))
#define WHERE_N (sizeof(struct km_wl_where) / sizeof(char *))
_Static_assert(sizeof(struct km_wl_who) == WHO_N * sizeof(char *) &&
		       sizeof(struct km_wl_where) == WHERE_N * sizeof(char *),
	       "a profile is a run of string pointers");

struct entry {
	struct entry *next;
	uint64_t hash;
	uint32_t refs, n;
	union { /* the profile: n interned strings (or NULL), read as its kind */
		char *s[WHO_N > WHERE_N ? WHO_N : WHERE_N];
		struct km_wl_who who;
		struct km_wl_where where;
	} u;
};

static struct {
	struct entry **buckets;
	size_t n_buckets; /* a power of two, or 0 */
	size_t count;
} pool;

static uint64_t hash_of(char *const *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (size_t i = 0; i < n; i++) {
		h ^= (uint64_t)(uintptr_t)s[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h;
}

static void grow(void)
{
	size_t nb = pool.n_buckets ? pool.n_buckets * 2 : 64;
	struct entry **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < pool.n_buckets; i++)
		for (struct entry *e = pool.buckets[i], *next; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	free(pool.buckets);
	pool.buckets = b;
	pool.n_buckets = nb;
}

static void release_strings(char *const *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		km_str_release(s[i]);
}

/* The entry for the run src[0..n), one more reference; NULL when out of memory. */
static struct entry *intern(char *const *src, size_t n)
{
	char *s[WHO_N > WHERE_N ? WHO_N : WHERE_N];
	struct entry *e;
	uint64_t h;

	for (size_t i = 0; i < n; i++) {
		s[i] = src[i] ? (char *)km_str_intern(src[i]) : NULL;
		if (src[i] && !s[i]) {
			release_strings(s, i);
			return NULL;
		}
	}
	h = hash_of(s, n);
	if (pool.n_buckets)
		for (e = pool.buckets[h & (pool.n_buckets - 1)]; e; e = e->next)
			if (e->hash == h && e->n == n && !memcmp(e->u.s, s, n * sizeof(*s))) {
				release_strings(s, n); /* the entry holds them already */
				e->refs++;
				return e;
			}
	if (pool.count >= pool.n_buckets)
		grow();
	if (!pool.n_buckets || !(e = calloc(1, sizeof(*e)))) {
		release_strings(s, n);
		return NULL;
	}
	e->hash = h;
	e->refs = 1;
	e->n = (uint32_t)n;
	memcpy(e->u.s, s, n * sizeof(*s));
	e->next = pool.buckets[h & (pool.n_buckets - 1)];
	pool.buckets[h & (pool.n_buckets - 1)] = e;
	pool.count++;
	return e;
}

static void release(struct entry *e)
{
	struct entry **at;

	if (--e->refs)
		return;
	for (at = &pool.buckets[e->hash & (pool.n_buckets - 1)]; *at != e; at = &(*at)->next)
		;
	*at = e->next;
	release_strings(e->u.s, e->n);
	free(e);
	if (--pool.count == 0) { /* nothing left: no table either (tests check for leaks) */
		free(pool.buckets);
		pool.buckets = NULL;
		pool.n_buckets = 0;
	}
}

const struct km_wl_who *km_who_intern(const struct km_wl_who *p)
{
	struct entry *e = intern((char *const *)p, WHO_N);

	return e ? &e->u.who : NULL;
}

const struct km_wl_where *km_where_intern(const struct km_wl_where *p)
{
	struct entry *e = intern((char *const *)p, WHERE_N);

	return e ? &e->u.where : NULL;
}

void km_who_release(const struct km_wl_who *p)
{
	if (p)
		release((struct entry *)((const char *)p - offsetof(struct entry, u)));
}

void km_where_release(const struct km_wl_where *p)
{
	if (p)
		release((struct entry *)((const char *)p - offsetof(struct entry, u)));
}

size_t km_profile_pool_count(void)
{
	return pool.count;
}
