/* addr_index.c — address to its holders (see addr_index.h), over flat address maps. Nearly every
 * address has one holder, kept in `newest` alone; one with more also has all of them, the newest
 * last, in `shared`. */
#include "services/xds-agent/model/addr_index.h"

#include <stdlib.h>
#include <string.h>

struct km_addr_holders {
	size_t n;
	const void *h[];
};

void km_addr_index_init(struct km_addr_index *x)
{
	km_addr_map_init(&x->newest);
	km_addr_map_init(&x->shared);
}

void km_addr_index_free(struct km_addr_index *x)
{
	struct km_addr a;
	size_t pos = 0;
	void *hs;

	while (km_addr_map_next(&x->shared, &pos, &a, &hs))
		free(hs);
	km_addr_map_free(&x->shared);
	km_addr_map_free(&x->newest);
}

/* Add holder as the newest of a's holders; current is the newest so far. */
static int add_shared(struct km_addr_index *x, const struct km_addr *a, const void *current,
		      const void *holder)
{
	void **slot = km_addr_map_find(&x->shared, a);
	struct km_addr_holders *hs = slot ? *slot : NULL, *grown;

	for (size_t i = 0; hs && i < hs->n; i++)
		if (hs->h[i] == holder) { /* taken again: it becomes the newest */
			memmove(&hs->h[i], &hs->h[i + 1], (hs->n - i - 1) * sizeof(hs->h[0]));
			hs->h[hs->n - 1] = holder;
			return 0;
		}
	if (!(grown = realloc(hs, sizeof(*hs) + ((hs ? hs->n : 1) + 1) * sizeof(hs->h[0]))))
		return -1;
	if (!hs) { /* the second holder: the first was only in newest */
		if (!(slot = km_addr_map_put(&x->shared, a))) {
			free(grown);
			return -1;
		}
		grown->n = 1;
		grown->h[0] = current;
	}
	*slot = hs = grown;
	hs->h[hs->n++] = holder;
	return 0;
}

int km_addr_index_add(struct km_addr_index *x, const struct km_addr *a, const void *holder)
{
	void **slot = km_addr_map_put(&x->newest, a);

	if (!slot)
		return -1;
	if (*slot && *slot != holder && add_shared(x, a, *slot, holder) != 0)
		return -1;
	*slot = (void *)holder;
	return 0;
}

void km_addr_index_remove(struct km_addr_index *x, const struct km_addr *a, const void *holder)
{
	void **slot = km_addr_map_find(&x->newest, a), **s;
	struct km_addr_holders *hs;

	if (!slot)
		return;
	if (!(s = km_addr_map_find(&x->shared, a))) {
		if (*slot == holder)
			km_addr_map_delete(&x->newest, a);
		return;
	}
	hs = *s;
	for (size_t i = 0; i < hs->n; i++) {
		if (hs->h[i] != holder)
			continue;
		memmove(&hs->h[i], &hs->h[i + 1], (hs->n - i - 1) * sizeof(hs->h[0]));
		*slot = (void *)hs->h[--hs->n - 1];
		if (hs->n == 1) { /* back to one: not shared */
			free(hs);
			km_addr_map_delete(&x->shared, a);
		}
		return;
	}
}

void km_addr_index_prefetch(const struct km_addr_index *x, const struct km_addr *a)
{
	km_addr_map_prefetch(&x->newest, a); /* where every lookup of a starts */
}

const void *km_addr_index_find(const struct km_addr_index *x, const struct km_addr *a)
{
	void **slot = km_addr_map_find(&x->newest, a);

	return slot ? *slot : NULL;
}

const void *const *km_addr_index_holders(const struct km_addr_index *x, const struct km_addr *a,
					 size_t *n)
{
	void **slot = km_addr_map_find(&x->newest, a), **s;
	const struct km_addr_holders *hs;

	*n = 0;
	if (!slot)
		return NULL;
	if (!(s = km_addr_map_find(&x->shared, a))) {
		*n = 1;
		return (const void *const *)slot;
	}
	hs = *s;
	*n = hs->n;
	return hs->h;
}

size_t km_addr_index_size(const struct km_addr_index *x)
{
	return x->newest.n;
}

int km_addr_index_next(const struct km_addr_index *x, size_t *pos, struct km_addr *a,
		       const void **holder)
{
	void *v;

	if (!km_addr_map_next(&x->newest, pos, a, &v))
		return 0;
	*holder = v;
	return 1;
}
