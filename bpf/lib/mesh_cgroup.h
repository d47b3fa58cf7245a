/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* mesh_cgroup.h — is a socket's cgroup the one the programs are attached to, or below it
 * (km_mesh_cgroup)? For the iterators, which see every socket of a pod's namespace, where the
 * cgroup programs see only those of the pod's processes. Tracing programs only: it reads the
 * kernel's structures (CO-RE). */
#ifndef KM_BPF_MESH_CGROUP_H
#define KM_BPF_MESH_CGROUP_H

#include <bpf/bpf_core_read.h>

#include "maps.h"

#define KM_CGROUP_LEVEL_MAX 64

static __always_inline int km_sock_in_mesh_cgroup(const struct sock *sk)
{
	const struct km_mesh_cgroup_value *m;
	struct cgroup *cg, *anc = NULL;
	__u32 key = 0;
	int level;

	m = bpf_map_lookup_elem(&km_mesh_cgroup, &key);
	if (!m || !m->id)
		return 1; /* not known: every socket counts, as before the row existed */
	cg = BPF_CORE_READ(sk, sk_cgrp_data.cgroup);
	if (!cg || m->level > KM_CGROUP_LEVEL_MAX)
		return 0;
	level = BPF_CORE_READ(cg, level);
	if (level < (int)m->level)
		return 0; /* above it */
	/* its ancestor at the mesh cgroup's depth (ancestors[] holds one per level, itself last) */
	if (bpf_probe_read_kernel(&anc, sizeof(anc),
				  (void *)cg + bpf_core_field_offset(struct cgroup, ancestors) +
					  (__u64)m->level * sizeof(anc)) != 0 ||
	    !anc)
		return 0;
	return BPF_CORE_READ(anc, kn, id) == m->id;
}

#endif
