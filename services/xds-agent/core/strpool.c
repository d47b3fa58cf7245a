/* strpool.c — interned strings (see strpool.h): each distinct string is one counted entry, found
 * through a name map (name_map.h) keyed by the entry's own copy; a string's entry is found from
 * the string itself when it is released. */
#include "services/xds-agent/core/strpool.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/core/name_map.h"

struct entry {
	uint32_t refs;
	char s[];
};

static struct km_name_map pool;

const char *km_str_intern(const char *s)
{
	struct entry *e = km_name_map_find(&pool, s);
	size_t len;

	if (e) {
		e->refs++;
		return e->s;
	}
	len = strlen(s);
	if (!(e = malloc(sizeof(*e) + len + 1)))
		return NULL;
	e->refs = 1;
	memcpy(e->s, s, len + 1);
	if (km_name_map_add(&pool, e->s, e) != 0) {
		free(e);
		return NULL;
	}
	return e->s;
}

void km_str_release(const char *s)
{
	struct entry *e;

	if (!s)
		return;
	e = (struct entry *)(s - offsetof(struct entry, s));
	if (--e->refs)
		return;
	km_name_map_delete(&pool, e->s);
	free(e);
	if (pool.n == 0) /* nothing left: no index either (tests check for leaks) */
		km_name_map_free(&pool);
}

size_t km_str_pool_count(void)
{
	return pool.n;
}
