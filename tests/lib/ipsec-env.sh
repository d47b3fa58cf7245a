# ipsec-env.sh — helpers for the tests of kmesh-ipsec-agent (sourced after mesh-env.sh and
# check.sh): its key file, its admin socket's dump, its log, and the map writer's IPsec rows.
# The agent runs in the test's node network namespace, so its XFRM objects never touch the host.

KM_BOOT_A=aaaaaaaa-1111-2222-3333-444444444444
KM_BOOT_B=bbbbbbbb-1111-2222-3333-444444444444

key_file() { # key_file SPI KEYBYTE [LEN]: write the key file atomically, as a Secret update does
	mkdir -p "$KM_DIR/ipsec"
	"$KM_PY" -c 'import base64, json, sys
spi, byte, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print(json.dumps({"spi": spi, "aeadKeyName": "rfc4106(gcm(aes))",
                  "aeadKey": base64.b64encode(bytes([byte]) * n).decode(), "length": 128}))' \
		"$1" "$2" "${3:-36}" >"$KM_DIR/ipsec/.ipSec.tmp" && chmod 600 "$KM_DIR/ipsec/.ipSec.tmp" &&
		mv "$KM_DIR/ipsec/.ipSec.tmp" "$KM_DIR/ipsec/ipSec"
}

# start_agent [FLAGS]: the agent for node-a (address 10.0.0.1, pod CIDR 10.244.1.0/24, boot id
# $KM_BOOT_ID or KM_BOOT_A), uninstalling on exit, with FLAGS added (later ones win); sets AGENT.
start_agent() {
	echo "${KM_BOOT_ID:-$KM_BOOT_A}" >"$KM_DIR/boot_id"
	rm -f "$KM_DIR/ipsec.sock"
	ip netns exec "$KM_NODE" "$KM_BIN/kmesh-ipsec-agent" --node-name node-a --addresses 10.0.0.1 \
		--pod-cidrs 10.244.1.0/24 --boot-id-file "$KM_DIR/boot_id" --key-file "$KM_DIR/ipsec/ipSec" \
		--admin-socket "$KM_DIR/ipsec.sock" --map-writer-socket "$KM_SOCKET" --uninstall-on-exit \
		--log-level debug --metrics-dir "$KM_DIR/metrics" "$@" >>"$KM_DIR/ipsec.log" 2>&1 &
	AGENT=$!
	KM_PIDS+=($AGENT)
	for _ in $(seq 1 100); do [ -S "$KM_DIR/ipsec.sock" ] && break; sleep 0.05; done
}

dump() { "$KM_TESTCTL" agent-dump --socket "$KM_DIR/ipsec.sock"; }
dump_is() { dump_within 3 "$1"; } # dump_is PYTHON-EXPR: true of the dump d within 3 s
dump_within() { # dump_within SECONDS PYTHON-EXPR: true of the dump d within SECONDS
	for _ in $(seq 1 $(($1 * 20))); do
		[ "$(dump 2>/dev/null | "$KM_PY" -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$2" 2>/dev/null)" = True ] && return 0
		sleep 0.05
	done
	return 1
}
dump_field() { dump | "$KM_PY" -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
logged() { # logged TEXT [LOG]: the agent's log (or LOG) says it (within 3 s)
	for _ in $(seq 1 60); do
		grep -qF -- "$1" "${2:-$KM_DIR/ipsec.log}" && return 0
		sleep 0.05
	done
	return 1
}
ipsec_rows() { "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table "ipsec_$1" | grep "^ipsec_$1 " | sort; }
rows_are() { # rows_are peer|cidr EXPECTED (within 3 s)
	for _ in $(seq 1 60); do
		[ "$(ipsec_rows "$1")" = "$2" ] && return 0
		sleep 0.05
	done
	echo "ipsec_$1 rows: $(ipsec_rows "$1")" >&2
	return 1
}

# nic_setup: the node's "NIC": nic0 in the node namespace holds 10.0.0.1/24 (node-a's address)
# and leads to a "remote" namespace holding 10.0.0.2/24 (node-b's), behind which the remote pod
# CIDRs 10.244.2.0/24 and 10.244.3.0/24 are routed.
nic_setup() {
	local remote=$KM_PREFIX-remote
	ip netns add "$remote"
	KM_PODS+=("$remote")
	ip link add "kmnic$$" netns "$KM_NODE" type veth peer name nic0 netns "$remote"
	ip -n "$KM_NODE" link set "kmnic$$" name nic0
	# no IPv6 on the link: its own packets (DAD, router solicitations) would blur rx counts
	ip netns exec "$KM_NODE" sysctl -qw net.ipv6.conf.nic0.disable_ipv6=1
	ip netns exec "$remote" sysctl -qw net.ipv6.conf.nic0.disable_ipv6=1
	ip -n "$KM_NODE" addr add 10.0.0.1/24 dev nic0
	ip -n "$remote" addr add 10.0.0.2/24 dev nic0
	ip -n "$KM_NODE" link set nic0 up
	ip -n "$remote" link set nic0 up
	ip -n "$remote" link set lo up
	ip -n "$KM_NODE" route add 10.244.2.0/24 via 10.0.0.2
	ip netns exec "$KM_NODE" sysctl -qw net.ipv4.ip_forward=1
	ip -n "$KM_NODE" route add 10.244.3.0/24 via 10.0.0.2
}
