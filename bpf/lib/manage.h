/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* manage.h — is the socket's network namespace enrolled? Enrollment is written only by the map
 * writer; there is deliberately no in-band (magic address) way for a pod to change it. */
#ifndef KM_BPF_MANAGE_H
#define KM_BPF_MANAGE_H

#include "maps.h"

/* The socket's (or packet's) network namespace's enrollment, or NULL. */
static __always_inline struct km_manage_value *km_netns_manage(void *ctx)
{
	struct km_manage_key key = { .netns_cookie = bpf_get_netns_cookie(ctx) };

	return bpf_map_lookup_elem(&km_manage, &key);
}

static __always_inline int km_netns_managed(void *ctx)
{
	return km_netns_manage(ctx) != NULL;
}

#endif
