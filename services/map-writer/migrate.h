/* migrate.h — converting pinned map entries from an older table layout to this build's, so an
 * upgraded map writer takes over the tables instead of starting empty. One table of converters
 * per older layout version; a map not listed has the same layout in both and is adopted. */
#ifndef KM_MW_MIGRATE_H
#define KM_MW_MIGRATE_H

#include <stddef.h>
#include <stdint.h>

struct km_map_migration {
	const char *map;        /* pinned name */
	size_t old_key, old_value; /* sizes in the old layout (checked against the pinned map) */
	/* Fill the new key and value (zeroed by the caller) from an old entry. */
	void (*convert)(const void *old_key, const void *old_value, void *new_key, void *new_value);
};

/* The converters from layout `from` to this build's (NULL-terminated by map == NULL), or NULL
 * when there is no migration path. */
const struct km_map_migration *km_migration_from(uint32_t from);
/* The converter for one map, or NULL when that map is adopted as it is. */
const struct km_map_migration *km_migration_for(const struct km_map_migration *m, const char *map);

#endif
