/* sorted.h — binary search in an array kept sorted by a string key: the position of the element
 * whose key equals key (*hit 1), or where one would be inserted to keep the order (*hit 0). */
#ifndef KM_SHARED_SORTED_H
#define KM_SHARED_SORTED_H

#include <stddef.h>

size_t km_sorted_find(const void *base, size_t n, size_t size, const char *key,
		      const char *(*key_of)(const void *elem), int *hit);

#endif
