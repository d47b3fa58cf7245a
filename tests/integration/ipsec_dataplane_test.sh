#!/usr/bin/env bash
# ipsec_dataplane_test.sh — the IPsec tc programs on the test's node: the agent asks the map
# writer to put them on (decrypt on the interface holding the node address, encrypt on every
# enrolled pod's node-side veth, also those enrolled later), real pod traffic to a peer's pod
# CIDR gets the encrypt mark (XFRM's out policy with mark 0xe0 takes it; this kernel has no ESP,
# so the kernel counts it in XfrmOutNoStates) while other traffic does not, a pod without a
# node-side interface is refused, a restarted map writer finds the programs and replaces them,
# and the agent's uninstall takes them all off.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/ipsec-env.sh"

filters() { tc -n "$KM_NODE" filter show dev "$1" ingress; }
# the program named (BPF names are cut at 15 characters) is on the interface's ingress
has_prog() { says "$2" filters "$1"; }
no_prog() { lacks km_ipsec filters "$1"; }
# pod_if POD: the node side of the pod's eth0 (eth0@ifN names its peer's ifindex)
pod_ifindex() { ip -n "$KM_PREFIX-$1" -o link show eth0 | sed -n 's/.*eth0@if\([0-9]*\):.*/\1/p'; }
pod_if() { ip -n "$KM_NODE" -o link show | awk -F': ' -v i="$(pod_ifindex "$1")" '$1 == i {sub(/@.*/, "", $2); print $2}'; }
enroll() { "$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path "$1")" "${@:2}"; }
mw_stats() { "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table ipsec_peer | grep "^stats"; }
mw_stats_say() { # mw_stats_say TEXT: within 3 s
	for _ in $(seq 1 60); do says "$1" mw_stats && return 0; sleep 0.05; done
	mw_stats >&2
	return 1
}
remote_rx() { ip -n "$KM_PREFIX-remote" -j -s link show nic0 | "$KM_PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])'; }
out_no_states() { ip netns exec "$KM_NODE" awk '$1 == "XfrmOutNoStates" {print $2}' /proc/net/xfrm_stat; }
send_udp() { # send_udp POD DST: three datagrams
	km_in_pod "$1" "$KM_PY" -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(3):
    try:
        s.sendto(b"x", (sys.argv[1], 9))
    except OSError:
        pass' "$2"
}

trap 'km_env_cleanup' EXIT
km_env_setup kmt$$
nic_setup
for p in p1 p2 p3 p4; do km_pod_add $p "$KM_SUBNET.1${p#p}"; done
ip -n "$KM_PREFIX-p1" route add 10.244.0.0/16 via "$KM_SUBNET.1"
key_file 1 17
km_map_writer_start || exit 1
enroll p1 --host-ifindex "$(pod_ifindex p1)" >/dev/null
enroll p4 >/dev/null # as an older CNI plugin would: no node-side interface

check "before IPsec is on, nothing is attached" eval 'no_prog nic0 && no_prog "$(pod_if p1)"'
start_agent
check "the agent asks for the tc programs, and the map writer puts them on (agent's dump)" \
	dump_is 'd["map_writer"]["tc_programs_on"] and d["map_writer"]["tc_status"] == "decrypt on nic0; encrypt on 1 pods"'
check "decrypt on the interface holding the node address (nic0), nowhere else" \
	eval 'has_prog nic0 km_ipsec_decryp && no_prog br0 && no_prog lo'
check "encrypt on the node side of the pod enrolled before (its veth)" \
	has_prog "$(pod_if p1)" km_ipsec_encry
check "the map writer's stats say so, and count the pod enrolled without an interface" \
	mw_stats_say "ipsec_on 1 ipsec_interfaces 1 ipsec_pods 1 ipsec_pods_uncovered 1 "
check "... which its log names: its traffic is not encrypted" \
	logged "has no node-side interface known (enrolled while IPsec was off, or by an older version): its traffic is not encrypted" \
	"$KM_DIR/map-writer.log"

out=$(enroll p2 --host-ifindex "$(pod_ifindex p2)")
check "a pod enrolled while IPsec is on gets the encrypt program at once" \
	has_prog "$(pod_if p2)" km_ipsec_encry
out=$(enroll p3 2>&1)
rc=$?
check "with IPsec on, a pod without a node-side interface is refused, saying why" \
	eval '[ $rc -ne 0 ] && grep -q "ENCRYPTION_UNAVAILABLE: IPsec is on and the pod.s node-side interface is not given (host_ifindex): its traffic to other nodes would leave unencrypted" <<<"$out"'
check "... and not enrolled" lacks "netns $(km_netns_path p3)" "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table manage
out=$(enroll p3 --host-ifindex "$(ip -n "$KM_NODE" -o link show nic0 | cut -d: -f1)" 2>&1)
check "a pod claiming the NIC as its interface is refused (encrypt would replace decrypt)" \
	eval 'grep -q "ENCRYPTION_UNAVAILABLE: .* interface nic0 is a node interface" <<<"$out" &&
	      has_prog nic0 km_ipsec_decryp'

# real traffic: node-b's pod CIDR 10.244.2.0/24 in km_ipsec_cidr; the out policy the agent would
# install once its ESP state is in (this kernel refuses ESP states) put in by hand
"$KM_TESTCTL" ipsec-peer --socket "$KM_DIR/ipsec.sock" --name node-b --spi 1 --addrs 10.0.0.2 \
	--boot-id "$KM_BOOT_B" --cidrs 10.244.2.0/24 >/dev/null
rows_are cidr "ipsec_cidr 10.244.2.0/24 peer 1" || true
# (and one for 10.244.3.0/24, no peer's CIDR, so that traffic there is taken only if wrongly marked)
for net in 10.244.2.0/24 10.244.3.0/24; do
	ip -n "$KM_NODE" xfrm policy add dir out src 0.0.0.0/0 dst $net mark 0xe0 \
		tmpl src 10.0.0.1 dst 10.0.0.2 proto esp reqid 1 mode tunnel
done
before=$(out_no_states) rx=$(remote_rx)
send_udp p1 10.244.2.5
after=$(out_no_states) rx2=$(remote_rx)
check "pod traffic to the peer's pod CIDR is marked 0xe0: the out policy takes it ($before -> $after)" \
	test "$after" -ge $((before + 3))
check "... and nothing leaves unencrypted (remote received $((rx2 - rx)))" test "$rx2" -eq "$rx"
before=$after rx=$rx2
send_udp p1 10.244.3.5
after=$(out_no_states) rx2=$(remote_rx)
check "traffic to a CIDR of no peer is not marked: its mark-0xe0 policy does not take it ($before -> $after)" \
	test "$after" -eq "$before"
check "... and is routed plain to the other side (remote received $((rx2 - rx)))" \
	test "$rx2" -ge $((rx + 3))
for net in 10.244.2.0/24 10.244.3.0/24; do
	ip -n "$KM_NODE" xfrm policy del dir out src 0.0.0.0/0 dst $net mark 0xe0
done

"$KM_TESTCTL" unenroll --socket "$KM_SOCKET" --netns "$(km_netns_path p2)" >/dev/null
check "an unenrolled pod's interface loses the program" no_prog "$(pod_if p2)"

old_id=$(filters nic0 | sed -n 's/.* id \([0-9]*\).*/\1/p')
kill -KILL "$KM_MW_PID"
wait "$KM_MW_PID" 2>/dev/null
check "the programs outlive a crash of the map writer" \
	eval 'has_prog nic0 km_ipsec_decryp && has_prog "$(pod_if p1)" km_ipsec_encry'
km_map_writer_start || exit 1
check "a restarted map writer finds IPsec on from the kernel's filters" \
	logged "IPsec is on (found from an earlier run): decrypt on 1 interfaces, encrypt on 1 pods" \
	"$KM_DIR/map-writer.log"
new_id=$(filters nic0 | sed -n 's/.* id \([0-9]*\).*/\1/p')
check "... and puts its own programs in their place (program id $old_id -> $new_id)" \
	eval '[ -n "$new_id" ] && [ "$new_id" != "$old_id" ]'

out=$("$KM_TESTCTL" ipsec-dataplane --socket "$KM_SOCKET" --state on --addrs 192.0.2.99 2>&1)
check "a node address no interface holds is refused, naming it" \
	eval 'grep -q "NOT_FOUND: no interface of the map writer.s network namespace holds 192.0.2.99" <<<"$out"'
check "... and the programs stay where they were" has_prog nic0 km_ipsec_decryp
out=$("$KM_TESTCTL" ipsec-dataplane --socket "$KM_SOCKET" --state off --role admin 2>&1)
check "only the IPsec role may switch them" \
	eval 'grep -q "PERMISSION_DENIED: role .admin. may not make this request" <<<"$out" &&
	      has_prog nic0 km_ipsec_decryp'

kill -TERM "$AGENT"
wait "$AGENT"
check "the agent's uninstall takes every program off" \
	eval 'no_prog nic0 && no_prog "$(pod_if p1)"'
check "... and empties the IPsec tables" eval 'rows_are peer "" && rows_are cidr ""'
check "... and the map writer says IPsec is off" mw_stats_say "ipsec_on 0 "
check "enrolling without a node-side interface is fine again" enroll p3

[ $KM_FAIL -eq 0 ] || { cat "$KM_DIR/ipsec.log"; cat "$KM_DIR/map-writer.log"; }
km_check_summary ipsec_dataplane
