/* addr_index.c — address to resource name (see addr_index.h), over the flat address map. */
#include "services/xds-agent/addr_index.h"

#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/addr_map.h"

/* Each entry's holders, the newest last (aux = how many): one holder (nearly every address) is
 * the entry's value itself; more are an array the value points at. The names are the resources'
 * own strings. */
struct km_addr_index {
	struct km_addr_map map;
};

struct km_addr_index *km_addr_index_new(void)
{
	struct km_addr_index *x = malloc(sizeof(*x));

	if (x)
		km_addr_map_init(&x->map);
	return x;
}

void km_addr_index_free(struct km_addr_index *x)
{
	if (!x)
		return;
	for (struct km_addr_map_entry *e = km_addr_map_next(&x->map, NULL); e;
	     e = km_addr_map_next(&x->map, e))
		if (e->aux > 1)
			free(e->val);
	km_addr_map_free(&x->map);
	free(x);
}

static const char **holders(struct km_addr_map_entry *e)
{
	return e->aux > 1 ? (const char **)e->val : (const char **)&e->val;
}

int km_addr_index_add(struct km_addr_index *x, const struct km_addr *a, const char *name)
{
	struct km_addr_map_entry *e = km_addr_map_put(&x->map, a);
	const char **h, **many;

	if (!e)
		return -1;
	if (!e->val) {
		e->val = (void *)name;
		e->aux = 1;
		return 0;
	}
	h = holders(e);
	for (size_t i = 0; i < e->aux; i++)
		if (!strcmp(h[i], name)) { /* taken again: it becomes the newest, under this name */
			memmove(&h[i], &h[i + 1], (e->aux - i - 1) * sizeof(*h));
			h[e->aux - 1] = name;
			return 0;
		}
	if (e->aux == 1) {
		if (!(many = malloc(2 * sizeof(*many))))
			return -1;
		many[0] = e->val;
	} else if (!(many = realloc(e->val, (e->aux + 1) * sizeof(*many)))) {
		return -1;
	}
	many[e->aux++] = name;
	e->val = many;
	return 0;
}

void km_addr_index_remove(struct km_addr_index *x, const struct km_addr *a, const char *name)
{
	struct km_addr_map_entry *e = km_addr_map_find(&x->map, a);
	const char **h;

	if (!e)
		return;
	h = holders(e);
	for (size_t i = 0; i < e->aux; i++) {
		if (strcmp(h[i], name) != 0)
			continue;
		if (e->aux == 1) {
			km_addr_map_delete(&x->map, e);
			return;
		}
		memmove(&h[i], &h[i + 1], (e->aux - i - 1) * sizeof(*h));
		if (--e->aux == 1) { /* back to one: no array */
			const char *last = h[0];

			free(h);
			e->val = (void *)last;
		}
		return;
	}
}

const char *km_addr_index_find(const struct km_addr_index *x, const struct km_addr *a)
{
	struct km_addr_map_entry *e = km_addr_map_find(&x->map, a);

	return e ? holders(e)[e->aux - 1] : NULL;
}

size_t km_addr_index_size(const struct km_addr_index *x)
{
	return x->map.n;
}
