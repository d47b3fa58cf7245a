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
	for (struct km_addr_map_entry *e = km_addr_map_next(&x->shared, NULL); e;
	     e = km_addr_map_next(&x->shared, e))
		free(e->val);
	km_addr_map_free(&x->shared);
	km_addr_map_free(&x->newest);
}

/* Add holder as the newest of a's holders; current is the newest so far. */
static int add_shared(struct km_addr_index *x, const struct km_addr *a, const void *current,
		      const void *holder)
{
	struct km_addr_map_entry *e = km_addr_map_find(&x->shared, a);
	struct km_addr_holders *hs = e ? e->val : NULL, *grown;

	for (size_t i = 0; hs && i < hs->n; i++)
		if (hs->h[i] == holder) { /* taken again: it becomes the newest */
			memmove(&hs->h[i], &hs->h[i + 1], (hs->n - i - 1) * sizeof(hs->h[0]));
			hs->h[hs->n - 1] = holder;
			return 0;
		}
	if (!(grown = realloc(hs, sizeof(*hs) + ((hs ? hs->n : 1) + 1) * sizeof(hs->h[0]))))
		return -1;
	if (!hs) { /* the second holder: the first was only in newest */
		if (!(e = km_addr_map_put(&x->shared, a))) {
			free(grown);
			return -1;
		}
		grown->n = 1;
		grown->h[0] = current;
	}
	e->val = hs = grown;
	hs->h[hs->n++] = holder;
	return 0;
}

int km_addr_index_add(struct km_addr_index *x, const struct km_addr *a, const void *holder)
{
	struct km_addr_map_entry *e = km_addr_map_put(&x->newest, a);

	if (!e)
		return -1;
	if (e->val && e->val != holder && add_shared(x, a, e->val, holder) != 0)
		return -1;
	e->val = (void *)holder;
	return 0;
}

void km_addr_index_remove(struct km_addr_index *x, const struct km_addr *a, const void *holder)
{
	struct km_addr_map_entry *e = km_addr_map_find(&x->newest, a), *s;
	struct km_addr_holders *hs;

	if (!e)
		return;
	if (!(s = km_addr_map_find(&x->shared, a))) {
		if (e->val == holder)
			km_addr_map_delete(&x->newest, e);
		return;
	}
	hs = s->val;
	for (size_t i = 0; i < hs->n; i++) {
		if (hs->h[i] != holder)
			continue;
		memmove(&hs->h[i], &hs->h[i + 1], (hs->n - i - 1) * sizeof(hs->h[0]));
		e->val = (void *)hs->h[--hs->n - 1];
		if (hs->n == 1) { /* back to one: not shared */
			free(hs);
			km_addr_map_delete(&x->shared, s);
		}
		return;
	}
}

const void *km_addr_index_find(const struct km_addr_index *x, const struct km_addr *a)
{
	struct km_addr_map_entry *e = km_addr_map_find(&x->newest, a);

	return e ? e->val : NULL;
}

const void *const *km_addr_index_holders(const struct km_addr_index *x, const struct km_addr *a,
					 size_t *n)
{
	struct km_addr_map_entry *e = km_addr_map_find(&x->newest, a), *s;
	const struct km_addr_holders *hs;

	*n = 0;
	if (!e)
		return NULL;
	if (!(s = km_addr_map_find(&x->shared, a))) {
		*n = 1;
		return (const void *const *)&e->val;
	}
	hs = s->val;
	*n = hs->n;
	return hs->h;
}

size_t km_addr_index_size(const struct km_addr_index *x)
{
	return x->newest.n;
}

const struct km_addr_map_entry *km_addr_index_next(const struct km_addr_index *x,
						   const struct km_addr_map_entry *prev)
{
	return km_addr_map_next(&x->newest, prev);
}
