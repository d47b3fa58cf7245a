/* sorted.c — see sorted.h. */
#include "shared/sorted.h"

#include <string.h>

size_t km_sorted_find(const void *base, size_t n, size_t size, const char *key,
		      const char *(*key_of)(const void *elem), int *hit)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(key_of((const char *)base + mid * size), key);

		if (c == 0) {
			*hit = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*hit = 0;
	return lo;
}
