/* grow.h — growing a dynamic array's capacity by doubling. */
#ifndef KM_SHARED_GROW_H
#define KM_SHARED_GROW_H

#include <stddef.h>
#include <stdint.h>

/* Make *arr hold at least need elements of elem bytes (capacity doubles from 8). Returns 0, or
 * -1 when out of memory (*arr and *cap unchanged). */
int km_grow(void **arr, size_t *cap, size_t need, size_t elem);
/* The same with a 32-bit capacity, grown by half (for arrays kept by the hundred thousand);
 * need above UINT32_MAX fails as out of memory. */
int km_grow32(void **arr, uint32_t *cap, size_t need, size_t elem);

#endif
