/* probe.h — the kernel features the programs need, probed at start (libbpf feature probes), so a
 * kernel that lacks one is named in one clear message instead of a verifier log. */
#ifndef KM_MW_PROBE_H
#define KM_MW_PROBE_H

/* Returns 0, or -ENOTSUP after logging every missing feature. */
int km_probe_kernel(void);
/* Does the kernel have this kfunc? E.g. bpf_sock_destroy (6.5), for closing connections a policy
 * change denies; bpf_rdonly_cast (6.2), for reading a closing socket's counters cheaply. */
int km_probe_kfunc(const char *name);
/* Is the capability (CAP_*) in this process's effective set? */
int km_probe_has_cap(int cap);

#endif
