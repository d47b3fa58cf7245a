/* grow.c — dynamic array capacity (see grow.h). */
#include "shared/grow.h"

#include <stdlib.h>

int km_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

int km_grow32(void **arr, uint32_t *cap, size_t need, size_t elem)
{
	size_t c = *cap;

	if (need > UINT32_MAX || km_grow(arr, &c, need, elem) != 0)
		return -1;
	*cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c; /* what is allocated holds at least this */
	return 0;
}
