/* dial_cache.c — the dial-to-open join by socket cookie (see dial_cache.h). */
#include "services/map-writer/dial_cache.h"

#include <errno.h>
#include <stdlib.h>

/* Cookies are sequential per boot: a multiplicative hash spreads them over the sets. */
static struct km_dial *set_of(struct km_dial_cache *c, uint64_t cookie)
{
	uint64_t h = cookie * 0x9e3779b97f4a7c15ull;

	return c->slots + (size_t)(h >> 54) % KM_DIAL_SETS * KM_DIAL_WAYS;
}

int km_dial_cache_init(struct km_dial_cache *c)
{
	c->slots = calloc((size_t)KM_DIAL_SETS * KM_DIAL_WAYS, sizeof(*c->slots));
	c->seq = 0;
	c->evicted = 0;
	return c->slots ? 0 : -ENOMEM;
}

void km_dial_cache_free(struct km_dial_cache *c)
{
	free(c->slots);
	c->slots = NULL;
}

void km_dial_cache_put(struct km_dial_cache *c, uint64_t cookie, const struct km_addr *orig_dst,
		       uint16_t orig_dport)
{
	struct km_dial *set, *slot = NULL;

	if (!c->slots || !cookie)
		return;
	set = set_of(c, cookie);
	/* this socket's earlier dial, else an empty way, else the oldest */
	for (int i = 0; i < KM_DIAL_WAYS && !(slot && slot->cookie == cookie); i++)
		if (set[i].cookie == cookie || !slot ||
		    (slot->cookie && (!set[i].cookie || set[i].seq < slot->seq)))
			slot = &set[i];
	if (slot->cookie && slot->cookie != cookie)
		c->evicted++;
	slot->cookie = cookie;
	slot->seq = ++c->seq;
	slot->orig_dst = *orig_dst;
	slot->orig_dport = orig_dport;
}

int km_dial_cache_take(struct km_dial_cache *c, uint64_t cookie, struct km_addr *orig_dst,
		       uint16_t *orig_dport)
{
	struct km_dial *set;

	if (!c->slots || !cookie)
		return 0;
	set = set_of(c, cookie);
	for (int i = 0; i < KM_DIAL_WAYS; i++)
		if (set[i].cookie == cookie) {
			*orig_dst = set[i].orig_dst;
			*orig_dport = set[i].orig_dport;
			set[i].cookie = 0;
			return 1;
		}
	return 0;
}
