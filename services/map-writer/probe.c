/* probe.c — kernel feature probes (see probe.h). The minimum kernel is 5.18 (bpf_set_retval in
 * cgroup socket-address programs, the newest feature used); docs/decisions.md lists why. */
#include "services/map-writer/probe.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "shared/log.h"

int km_probe_kernel(void)
{
	static const struct {
		enum bpf_prog_type prog;
		const char *what;
	} progs[] = {
		{ BPF_PROG_TYPE_CGROUP_SOCK_ADDR, "cgroup socket-address programs (connect, sendmsg, recvmsg)" },
		{ BPF_PROG_TYPE_SOCK_OPS, "sockops programs" },
		{ BPF_PROG_TYPE_SK_MSG, "sk_msg programs" },
		{ BPF_PROG_TYPE_CGROUP_SOCK, "cgroup socket programs (sock_release)" },
		{ BPF_PROG_TYPE_SK_LOOKUP, "sk_lookup programs (authorization at the socket lookup)" },
	};
	static const struct {
		enum bpf_map_type map;
		const char *what;
	} maps[] = {
		{ BPF_MAP_TYPE_SK_STORAGE, "socket storage maps" },
		{ BPF_MAP_TYPE_SOCKHASH, "sockhash maps" },
		{ BPF_MAP_TYPE_HASH, "hash maps" },
	};
	static const struct {
		enum bpf_prog_type prog;
		enum bpf_func_id helper;
		const char *what;
	} helpers[] = {
		{ BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_get_netns_cookie, "bpf_get_netns_cookie in connect" },
		{ BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_sk_storage_get, "bpf_sk_storage_get in connect" },
		{ BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_FUNC_set_retval, "bpf_set_retval in connect (5.18)" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_sock_hash_update, "bpf_sock_hash_update in sockops" },
		{ BPF_PROG_TYPE_SOCK_OPS, BPF_FUNC_sk_storage_get, "bpf_sk_storage_get in sockops" },
		{ BPF_PROG_TYPE_SK_MSG, BPF_FUNC_msg_push_data, "bpf_msg_push_data in sk_msg" },
		{ BPF_PROG_TYPE_SK_MSG, BPF_FUNC_sk_storage_get, "bpf_sk_storage_get in sk_msg" },
		{ BPF_PROG_TYPE_CGROUP_SOCK, BPF_FUNC_get_netns_cookie, "bpf_get_netns_cookie in sock_release" },
		{ BPF_PROG_TYPE_CGROUP_SOCK, BPF_FUNC_sk_storage_get, "bpf_sk_storage_get in sock_release" },
		{ BPF_PROG_TYPE_CGROUP_SOCK, BPF_FUNC_get_socket_cookie, "bpf_get_socket_cookie in sock_release" },
	};
	int missing = 0;

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (libbpf_probe_bpf_prog_type(progs[i].prog, NULL) != 1) {
			km_error("this kernel lacks %s", progs[i].what);
			missing++;
		}
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		if (libbpf_probe_bpf_map_type(maps[i].map, NULL) != 1) {
			km_error("this kernel lacks %s", maps[i].what);
			missing++;
		}
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		if (libbpf_probe_bpf_helper(helpers[i].prog, helpers[i].helper, NULL) != 1) {
			km_error("this kernel lacks %s", helpers[i].what);
			missing++;
		}
	if (missing) {
		km_error("%d kernel feature(s) missing: kmesh needs Linux 5.18 or newer with BPF, "
			 "BTF and cgroup v2", missing);
		return -ENOTSUP;
	}
	km_debug("kernel features: all present");
	return 0;
}

int km_probe_kfunc(const char *name)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int found;

	if (!vmlinux)
		return 0;
	found = btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC) > 0;
	btf__free(vmlinux);
	return found;
}

int km_probe_has_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	if (syscall(SYS_capget, &h, d) != 0 || cap < 0 || cap >= 64)
		return 0;
	return (d[cap / 32].effective >> (cap % 32)) & 1;
}
