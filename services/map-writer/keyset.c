/* keyset.c — the present-row key set (see keyset.h). */
#include "services/map-writer/keyset.h"

#include <stdlib.h>
#include <string.h>

void km_keyset_init_values(struct km_keyset *s, size_t key_len, size_t value_len)
{
	memset(s, 0, sizeof(*s));
	s->key_len = key_len;
	s->value_len = value_len;
	s->slot_len = 1 + key_len + value_len;
}

void km_keyset_init(struct km_keyset *s, size_t key_len)
{
	km_keyset_init_values(s, key_len, 0);
}

void km_keyset_free(struct km_keyset *s)
{
	free(s->slots);
	km_keyset_init_values(s, s->key_len, s->value_len);
}

void km_keyset_clear(struct km_keyset *s)
{
	if (s->slots)
		memset(s->slots, 0, s->cap * s->slot_len);
	s->count = 0;
}

static size_t home(const struct km_keyset *s, const uint8_t *key)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < s->key_len; i++)
		h = (h ^ key[i]) * 16777619u;
	return (size_t)(h * 2654435761u) & (s->cap - 1);
}

static uint8_t *slot(const struct km_keyset *s, size_t i)
{
	return s->slots + i * s->slot_len;
}

/* The key's slot, or the free slot where it would go. */
static size_t find(const struct km_keyset *s, const uint8_t *key)
{
	size_t i = home(s, key);

	while (slot(s, i)[0] && memcmp(slot(s, i) + 1, key, s->key_len) != 0)
		i = (i + 1) & (s->cap - 1);
	return i;
}

int km_keyset_has(const struct km_keyset *s, const void *key)
{
	return s->cap && slot(s, find(s, key))[0];
}

void km_keyset_prefetch(const struct km_keyset *s, const void *key)
{
	if (s->cap)
		__builtin_prefetch(slot(s, home(s, key)));
}

void *km_keyset_value(const struct km_keyset *s, const void *key)
{
	uint8_t *e;

	if (!s->cap || !(e = slot(s, find(s, key)))[0])
		return NULL;
	return e + 1 + s->key_len;
}

static int grow(struct km_keyset *s)
{
	struct km_keyset n = *s;

	n.cap = s->cap ? s->cap * 2 : 64;
	n.slots = calloc(n.cap, n.slot_len);
	if (!n.slots)
		return -1;
	for (size_t i = 0; i < s->cap; i++) {
		if (i + 8 < s->cap && slot(s, i + 8)[0]) /* the new set is large: hide its misses */
			km_keyset_prefetch(&n, slot(s, i + 8) + 1);
		if (slot(s, i)[0])
			memcpy(slot(&n, find(&n, slot(s, i) + 1)), slot(s, i), s->slot_len);
	}
	free(s->slots);
	*s = n;
	return 0;
}

int km_keyset_add(struct km_keyset *s, const void *key)
{
	uint8_t *e;

	if ((s->count + 1) * 2 > s->cap && grow(s) != 0)
		return -1;
	e = slot(s, find(s, key));
	if (!e[0]) {
		e[0] = 1;
		memcpy(e + 1, key, s->key_len);
		memset(e + 1 + s->key_len, 0, s->value_len);
		s->count++;
	}
	return 0;
}

void km_keyset_del(struct km_keyset *s, const void *key)
{
	size_t i, j;

	if (!s->cap)
		return;
	i = find(s, key);
	if (!slot(s, i)[0])
		return;
	slot(s, i)[0] = 0;
	s->count--;
	/* Backward shift: move later entries of the run into the hole when their home allows. */
	for (j = (i + 1) & (s->cap - 1); slot(s, j)[0]; j = (j + 1) & (s->cap - 1)) {
		size_t h = home(s, slot(s, j) + 1);

		if (((j - h) & (s->cap - 1)) >= ((j - i) & (s->cap - 1))) {
			memcpy(slot(s, i), slot(s, j), s->slot_len);
			slot(s, j)[0] = 0;
			i = j;
		}
	}
}
