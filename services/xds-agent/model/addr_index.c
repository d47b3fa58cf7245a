/* addr_index.c — address to resource name (see addr_index.h), over flat address maps. */
#include "services/xds-agent/model/addr_index.h"

#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/core/addr_map.h"

/* names: each address to its newest holder's name (the resources' own strings). Nearly every
 * address has one holder; those with more (host-network workloads share the node's) also have
 * their holders, the newest last, in shared. */
struct km_addr_index {
	struct km_addr_map names;
	struct km_addr_map shared; /* -> struct holders */
};

struct holders {
	size_t n;
	const char *h[];
};

struct km_addr_index *km_addr_index_new(void)
{
	struct km_addr_index *x = malloc(sizeof(*x));

	if (x) {
		km_addr_map_init(&x->names);
		km_addr_map_init(&x->shared);
	}
	return x;
}

void km_addr_index_free(struct km_addr_index *x)
{
	if (!x)
		return;
	for (struct km_addr_map_entry *e = km_addr_map_next(&x->shared, NULL); e;
	     e = km_addr_map_next(&x->shared, e))
		free(e->val);
	km_addr_map_free(&x->shared);
	km_addr_map_free(&x->names);
	free(x);
}

/* Add name as the newest of a shared address's holders (moved there if it holds it already). */
static int add_shared(struct km_addr_index *x, const struct km_addr *a, const char *current,
		      const char *name)
{
	struct km_addr_map_entry *e = km_addr_map_find(&x->shared, a);
	struct holders *hs = e ? e->val : NULL, *grown;

	for (size_t i = 0; hs && i < hs->n; i++)
		if (!strcmp(hs->h[i], name)) { /* taken again: it becomes the newest, under this name */
			memmove(&hs->h[i], &hs->h[i + 1], (hs->n - i - 1) * sizeof(hs->h[0]));
			hs->h[hs->n - 1] = name;
			return 0;
		}
	if (!(grown = realloc(hs, sizeof(*hs) + ((hs ? hs->n : 1) + 1) * sizeof(hs->h[0]))))
		return -1;
	if (!hs) { /* the second holder: the first was only in names */
		if (!(e = km_addr_map_put(&x->shared, a))) {
			free(grown);
			return -1;
		}
		grown->n = 1;
		grown->h[0] = current;
	}
	e->val = hs = grown;
	hs->h[hs->n++] = name;
	return 0;
}

int km_addr_index_add(struct km_addr_index *x, const struct km_addr *a, const char *name)
{
	struct km_addr_map_entry *e = km_addr_map_put(&x->names, a);

	if (!e)
		return -1;
	/* a second holder, or any holder of a shared address (its string may be new) */
	if (e->val && (strcmp(e->val, name) != 0 || km_addr_map_find(&x->shared, a)) &&
	    add_shared(x, a, e->val, name) != 0)
		return -1;
	e->val = (void *)name;
	return 0;
}

void km_addr_index_remove(struct km_addr_index *x, const struct km_addr *a, const char *name)
{
	struct km_addr_map_entry *e = km_addr_map_find(&x->names, a), *s;
	struct holders *hs;

	if (!e)
		return;
	if (!(s = km_addr_map_find(&x->shared, a))) {
		if (!strcmp(e->val, name))
			km_addr_map_delete(&x->names, e);
		return;
	}
	hs = s->val;
	for (size_t i = 0; i < hs->n; i++) {
		if (strcmp(hs->h[i], name) != 0)
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

const char *km_addr_index_find(const struct km_addr_index *x, const struct km_addr *a)
{
	struct km_addr_map_entry *e = km_addr_map_find(&x->names, a);

	return e ? e->val : NULL;
}

size_t km_addr_index_size(const struct km_addr_index *x)
{
	return x->names.n;
}
