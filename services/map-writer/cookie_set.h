/* cookie_set.h — a set of socket cookies of fixed capacity (open addressing, allocated once),
 * emptied in one step: the connections whose close the map writer read while a pass over open
 * connections was under way, so that pass's report of one of them (read before it closed) is not
 * sent after its close (events.c). Bounded: past the capacity it says so (km_cookie_set_full),
 * and its user drops what it could no longer check. */
#ifndef KM_MW_COOKIE_SET_H
#define KM_MW_COOKIE_SET_H

#include <stddef.h>
#include <stdint.h>

struct km_cookie_set {
	uint64_t *slots; /* capacity, a power of two; 0 = empty (no socket has cookie 0) */
	size_t capacity, n;
	int overflowed; /* an insert found it too full: membership is unknown until cleared */
};

/* capacity: a power of two. Returns 0, or -ENOMEM. */
int km_cookie_set_init(struct km_cookie_set *s, size_t capacity);
void km_cookie_set_free(struct km_cookie_set *s);
void km_cookie_set_add(struct km_cookie_set *s, uint64_t cookie);
/* 1 when the cookie was added since the last clear, or the set overflowed (it cannot tell). */
int km_cookie_set_may_have(const struct km_cookie_set *s, uint64_t cookie);
void km_cookie_set_clear(struct km_cookie_set *s);

#endif
