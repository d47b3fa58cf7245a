/* addr_index.c — address to resource name (see addr_index.h). */
#include "services/xds-agent/addr_index.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* An address's holders, the newest last: the names themselves are the resources' own strings.
 * One holder (nearly every address) needs no array. */
struct entry {
	struct km_addr addr;
	size_t n;
	union {
		const char *one;    /* n == 1 */
		const char **many;  /* n > 1 */
	} h;
	UT_hash_handle hh;
};

struct km_addr_index {
	struct entry *head;
};

struct km_addr_index *km_addr_index_new(void)
{
	return calloc(1, sizeof(struct km_addr_index));
}

static void entry_free(struct entry *e)
{
	if (e->n > 1)
		free(e->h.many);
	free(e);
}

void km_addr_index_free(struct km_addr_index *x)
{
	struct entry *e, *tmp;

	if (!x)
		return;
	HASH_ITER(hh, x->head, e, tmp) {
		HASH_DEL(x->head, e);
		entry_free(e);
	}
	free(x);
}

static const char **holders(struct entry *e)
{
	return e->n > 1 ? e->h.many : &e->h.one;
}

/* Holder i leaves the list (the later ones move up). */
static void drop_holder(struct entry *e, size_t i)
{
	const char **h = holders(e);

	memmove(&h[i], &h[i + 1], (e->n - i - 1) * sizeof(*h));
	if (--e->n == 1) { /* back to one: no array */
		const char *last = h[0];

		free(e->h.many);
		e->h.one = last;
	}
}

int km_addr_index_add(struct km_addr_index *x, const struct km_addr *a, const char *name)
{
	struct entry *e;
	const char **h;

	HASH_FIND(hh, x->head, a, sizeof(*a), e);
	if (!e) {
		if (!(e = calloc(1, sizeof(*e))))
			return -1;
		e->addr = *a;
		e->n = 1;
		e->h.one = name;
		HASH_ADD(hh, x->head, addr, sizeof(e->addr), e);
		return 0;
	}
	h = holders(e);
	for (size_t i = 0; i < e->n; i++)
		if (!strcmp(h[i], name)) { /* taken again: it becomes the newest, under this name */
			memmove(&h[i], &h[i + 1], (e->n - i - 1) * sizeof(*h));
			h[e->n - 1] = name;
			return 0;
		}
	if (e->n == 1) {
		const char **many = malloc(2 * sizeof(*many));

		if (!many)
			return -1;
		many[0] = e->h.one;
		many[1] = name;
		e->h.many = many;
	} else {
		const char **many = realloc(e->h.many, (e->n + 1) * sizeof(*many));

		if (!many)
			return -1;
		many[e->n] = name;
		e->h.many = many;
	}
	e->n++;
	return 0;
}

void km_addr_index_remove(struct km_addr_index *x, const struct km_addr *a, const char *name)
{
	struct entry *e;
	const char **h;

	HASH_FIND(hh, x->head, a, sizeof(*a), e);
	if (!e)
		return;
	h = holders(e);
	for (size_t i = 0; i < e->n; i++)
		if (!strcmp(h[i], name)) {
			if (e->n == 1) {
				HASH_DEL(x->head, e);
				entry_free(e);
				return;
			}
			drop_holder(e, i);
			return;
		}
}

const char *km_addr_index_find(const struct km_addr_index *x, const struct km_addr *a)
{
	struct entry *e;

	HASH_FIND(hh, x->head, a, sizeof(*a), e);
	return e ? holders(e)[e->n - 1] : NULL;
}

size_t km_addr_index_size(const struct km_addr_index *x)
{
	return HASH_COUNT(x->head);
}
