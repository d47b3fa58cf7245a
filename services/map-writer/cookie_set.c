/* cookie_set.c — see cookie_set.h. */
#include "services/map-writer/cookie_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int km_cookie_set_init(struct km_cookie_set *s, size_t capacity)
{
	memset(s, 0, sizeof(*s));
	if (!capacity || (capacity & (capacity - 1)))
		return -EINVAL;
	if (!(s->slots = calloc(capacity, sizeof(*s->slots))))
		return -ENOMEM;
	s->capacity = capacity;
	return 0;
}

void km_cookie_set_free(struct km_cookie_set *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

static size_t slot_of(const struct km_cookie_set *s, uint64_t cookie)
{
	return (size_t)((cookie * 0x9E3779B97F4A7C15ull) >> 17) & (s->capacity - 1);
}

void km_cookie_set_add(struct km_cookie_set *s, uint64_t cookie)
{
	size_t i;

	if (!cookie || !s->slots)
		return;
	if (s->n >= s->capacity / 2) { /* kept at most half full: probes stay short */
		s->overflowed = 1;
		return;
	}
	for (i = slot_of(s, cookie); s->slots[i]; i = (i + 1) & (s->capacity - 1))
		if (s->slots[i] == cookie)
			return;
	s->slots[i] = cookie;
	s->n++;
}

int km_cookie_set_may_have(const struct km_cookie_set *s, uint64_t cookie)
{
	if (s->overflowed)
		return 1;
	if (!s->slots || !s->n)
		return 0;
	for (size_t i = slot_of(s, cookie); s->slots[i]; i = (i + 1) & (s->capacity - 1))
		if (s->slots[i] == cookie)
			return 1;
	return 0;
}

void km_cookie_set_clear(struct km_cookie_set *s)
{
	if (s->n && s->slots)
		memset(s->slots, 0, s->capacity * sizeof(*s->slots));
	s->n = 0;
	s->overflowed = 0;
}
