/* addr_index.c — address to resource name (see addr_index.h). */
#include "services/xds-agent/addr_index.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

struct entry {
	struct km_addr addr;
	char **names; /* holders, the newest last */
	size_t n;
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
	for (size_t i = 0; i < e->n; i++)
		free(e->names[i]);
	free(e->names);
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

int km_addr_index_add(struct km_addr_index *x, const struct km_addr *a, const char *name)
{
	struct entry *e;
	char **names, *copy;

	HASH_FIND(hh, x->head, a, sizeof(*a), e);
	if (!e) {
		if (!(e = calloc(1, sizeof(*e))))
			return -1;
		e->addr = *a;
		HASH_ADD(hh, x->head, addr, sizeof(e->addr), e);
	}
	for (size_t i = 0; i < e->n; i++)
		if (!strcmp(e->names[i], name)) { /* taken again: it becomes the newest */
			copy = e->names[i];
			memmove(&e->names[i], &e->names[i + 1], (e->n - i - 1) * sizeof(*names));
			e->names[e->n - 1] = copy;
			return 0;
		}
	names = realloc(e->names, (e->n + 1) * sizeof(*names));
	if (!names || !(copy = strdup(name))) {
		if (names)
			e->names = names;
		if (!e->n) {
			HASH_DEL(x->head, e);
			entry_free(e);
		}
		return -1;
	}
	e->names = names;
	e->names[e->n++] = copy;
	return 0;
}

void km_addr_index_remove(struct km_addr_index *x, const struct km_addr *a, const char *name)
{
	struct entry *e;

	HASH_FIND(hh, x->head, a, sizeof(*a), e);
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		if (!strcmp(e->names[i], name)) {
			free(e->names[i]);
			memmove(&e->names[i], &e->names[i + 1], (e->n - i - 1) * sizeof(*e->names));
			e->n--;
			break;
		}
	if (!e->n) {
		HASH_DEL(x->head, e);
		entry_free(e);
	}
}

const char *km_addr_index_find(const struct km_addr_index *x, const struct km_addr *a)
{
	struct entry *e;

	HASH_FIND(hh, x->head, a, sizeof(*a), e);
	return e && e->n ? e->names[e->n - 1] : NULL;
}

size_t km_addr_index_size(const struct km_addr_index *x)
{
	return HASH_COUNT(x->head);
}
