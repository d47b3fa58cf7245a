/* grow.h — growing a dynamic array's capacity by doubling. */
#ifndef KM_SHARED_GROW_H
#define KM_SHARED_GROW_H

#include <stddef.h>

/* Make *arr hold at least need elements of elem bytes (capacity doubles from 8). Returns 0, or
 * -1 when out of memory (*arr and *cap unchanged). */
int km_grow(void **arr, size_t *cap, size_t need, size_t elem);

#endif
