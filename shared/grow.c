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
	size_t ncap = *cap;
	void *p;

	if (need <= *cap)
		return 0;
	if (need > UINT32_MAX)
		return -1;
	/* by half: these arrays are kept by the hundred thousand (a service's members and slots),
	 * most of them small, where doubling leaves a quarter of the bytes unused on average */
	ncap = ncap < 4 ? 4 : ncap + ncap / 2;
	while (ncap < need)
		ncap += ncap / 2;
	if (ncap > UINT32_MAX)
		ncap = UINT32_MAX;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = (uint32_t)ncap;
	return 0;
}
