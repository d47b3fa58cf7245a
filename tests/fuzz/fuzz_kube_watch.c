/* fuzz_kube_watch.c — libFuzzer target for one line of a Kubernetes watch stream (what the API
 * server, or anything between it and the IPsec agent, sends): arbitrary bytes read as an event.
 * A change must come with an object; a refusal must say why; the resourceVersion kept must stay
 * a string within its buffer. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/kube/kube_watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum km_kube_change change;
	json_t *obj = NULL;
	char rv[16] = "1", why[64] = "";

	switch (km_kube_watch_parse((const char *)data, size, &change, &obj, rv, sizeof(rv), why,
				    sizeof(why))) {
	case KM_KUBE_EVENT_CHANGE:
		if (!json_is_object(obj) || change > KM_KUBE_DELETED || change == KM_KUBE_LISTED)
			abort();
		break;
	case KM_KUBE_EVENT_BAD:
		if (!why[0] || obj)
			abort();
		break;
	default:
		if (obj)
			abort();
	}
	if (memchr(rv, '\0', sizeof(rv)) == NULL)
		abort();
	json_decref(obj);
	return 0;
}
