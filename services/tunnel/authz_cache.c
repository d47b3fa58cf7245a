/* authz_cache.c — see authz_cache.h. Chained buckets; an entry is one allocation holding its
 * key's principal and its verdict's strings. */
#include "services/tunnel/authz_cache.h"

#include <stdlib.h>
#include <string.h>

struct ac_entry {
	struct ac_entry *next;
	uint64_t hash;
	struct km_authz_key key;
	struct km_authz_verdict v;
	char text[]; /* principal, why, baggage: each NUL-terminated */
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull; /* FNV-1a */
	return h;
}

static uint64_t key_hash(const struct km_authz_key *k)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = mix(h, k->src, k->src_len);
	h = mix(h, k->dst, k->dst_len);
	h = mix(h, &k->port, sizeof(k->port));
	return mix(h, k->principal, strlen(k->principal));
}

static int key_equal(const struct km_authz_key *a, const struct km_authz_key *b)
{
	return a->port == b->port && a->src_len == b->src_len && a->dst_len == b->dst_len &&
	       !memcmp(a->src, b->src, a->src_len) && !memcmp(a->dst, b->dst, a->dst_len) &&
	       !strcmp(a->principal, b->principal);
}

static void empty(struct km_authz_cache *c)
{
	if (!c->n)
		return;
	for (size_t i = 0; i < KM_AUTHZ_CACHE_BUCKETS; i++)
		while (c->buckets[i]) {
			struct ac_entry *e = c->buckets[i];

			c->buckets[i] = e->next;
			free(e);
		}
	c->n = 0;
	c->emptied++;
}

void km_authz_cache_generations(struct km_authz_cache *c, uint64_t policy_gen,
				uint64_t workload_gen)
{
	if (c->policy_gen == policy_gen && c->workload_gen == workload_gen)
		return;
	empty(c);
	c->policy_gen = policy_gen;
	c->workload_gen = workload_gen;
}

void km_authz_cache_on(struct km_authz_cache *c, uint64_t policy_gen, uint64_t workload_gen)
{
	km_authz_cache_generations(c, policy_gen, workload_gen);
	c->on = 1;
}

void km_authz_cache_off(struct km_authz_cache *c)
{
	empty(c);
	c->on = 0;
}

const struct km_authz_verdict *km_authz_cache_get(struct km_authz_cache *c,
						 const struct km_authz_key *k)
{
	uint64_t h;

	if (!c->on)
		return NULL;
	h = key_hash(k);
	for (struct ac_entry *e = c->buckets[h % KM_AUTHZ_CACHE_BUCKETS]; e; e = e->next)
		if (e->hash == h && key_equal(&e->key, k)) {
			c->hits++;
			return &e->v;
		}
	c->misses++;
	return NULL;
}

void km_authz_cache_put(struct km_authz_cache *c, const struct km_authz_key *k,
			const struct km_authz_verdict *v, uint64_t policy_gen, uint64_t workload_gen)
{
	const char *why = v->why ? v->why : "", *bag = v->baggage ? v->baggage : "";
	size_t lp = strlen(k->principal), lw = strnlen(why, KM_AUTHZ_CACHE_WHY_MAX),
	       lb = strlen(bag);
	struct ac_entry *e, **b;
	uint64_t h;

	if (!c->on || !c->max || policy_gen != c->policy_gen || workload_gen != c->workload_gen ||
	    lp > KM_AUTHZ_CACHE_PRINCIPAL_MAX || lb > KM_AUTHZ_CACHE_BAGGAGE_MAX ||
	    (k->src_len != 4 && k->src_len != 16) || (k->dst_len != 4 && k->dst_len != 16))
		return;
	h = key_hash(k);
	b = &c->buckets[h % KM_AUTHZ_CACHE_BUCKETS];
	for (e = *b; e; e = e->next)
		if (e->hash == h && key_equal(&e->key, k))
			return; /* two streams asked at once: the first answer is kept */
	if (c->n >= c->max)
		empty(c);
	if (!(e = malloc(sizeof(*e) + lp + lw + lb + 3)))
		return;
	e->hash = h;
	e->key = *k;
	e->v.allowed = v->allowed;
	memcpy(e->text, k->principal, lp + 1);
	e->key.principal = e->text;
	memcpy(e->text + lp + 1, why, lw);
	e->text[lp + 1 + lw] = '\0';
	e->v.why = e->text + lp + 1;
	memcpy(e->text + lp + lw + 2, bag, lb + 1);
	e->v.baggage = e->text + lp + lw + 2;
	e->next = *b;
	*b = e;
	c->n++;
}
