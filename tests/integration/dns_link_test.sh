#!/usr/bin/env bash
# dns_link_test.sh — the node DNS proxy wired as the chart wires it: the map writer puts a
# link-local address on a dummy interface of its own (--dns-interface) and redirects enrolled
# pods' DNS there; the xDS agent serves on that address alone, so a pod asks it and the
# network does not reach it. The interface is made and set up, keeps exactly the wanted
# addresses across restarts (an IPv6 one usable at once, no DAD), is refused when the name is
# someone else's interface (kmesh's carries its alias), needs --dns-resolver, and goes at uninstall (--detach-on-exit).
# Everything happens in the test's node namespace; the host's interfaces are never touched.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

S=$KM_SUBNET
IF=kmt-dns
LL=169.254.20.53
PORT=15053
node_ip() { ip -n "$KM_NODE" "$@"; }

trap 'km_env_cleanup' EXIT
km_env_setup kml$$
km_pod_add client "$S.10"
km_pod_add outsider "$S.11" # not enrolled: a host on the node's network
ip -n "$KM_PREFIX-client" route add default via "$S.1" # as a pod's: the node is its gateway
cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "web", "namespace": "t", "hostname": "web.t.svc.cluster.local",
   "addresses": [{"address": "10.96.9.1"}], "ports": [{"servicePort": 80}]}}
]}
JSON

km_map_writer_start --dns-interface "$IF" --dns-resolver "$LL" --dns-port $PORT || exit 1
check "the map writer makes the interface (a dummy, or a bridge without ports where the kernel has no dummies), up, marked as its own, holding the address" \
	eval 'link=$(node_ip -d link show "$IF") && grep -Eq "^ *(dummy|bridge) " <<<"$link" && grep -q "<.*UP.*>" <<<"$link" && grep -q "alias kmesh: node DNS proxy addresses" <<<"$link" && says "inet $LL/32" node_ip -4 addr show dev "$IF"'
check "... in the node's namespace only (the host has no such interface)" \
	eval '! ip link show "$IF" >/dev/null 2>&1'
check "... and says so" grep -q "DNS: $IF holds $LL for the node DNS proxy" "$KM_DIR/map-writer.log"

KM_AGENT_NETNS=node
km_agent_start --dns-address "$LL:$PORT" --dns-upstream "$S.53"
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
for _ in $(seq 1 50); do grep -q "serving DNS" "$KM_DIR/xds-agent.log" && break; sleep 0.1; done
km_wait_rows service "^service" 1 >/dev/null || exit 1
check "an enrolled pod's DNS reaches the proxy on the link-local address (UDP and TCP)" \
	eval '[ "$(km_in_pod client dig +short +time=2 +tries=1 @10.96.0.10 web.t.svc.cluster.local)" = 10.96.9.1 ] && [ "$(km_in_pod client dig +tcp +short +time=2 +tries=1 @10.96.0.10 web.t.svc.cluster.local)" = 10.96.9.1 ]'
check "the proxy is not on the node's own address: a host on the node's network gets no answer there" \
	eval '! km_in_pod outsider dig +short +time=1 +tries=1 -p $PORT @$S.1 web.t.svc.cluster.local >/dev/null 2>&1'
check "... the proxy's sockets are bound to the link-local address alone" \
	eval '[ "$(ip netns exec "$KM_NODE" ss -Hlntu "sport = :$PORT" | awk "{print \$5}" | sort -u)" = "$LL:$PORT" ]'

# a restart keeps the interface (the agent stays bound to it) and only the wanted addresses
node_ip addr add 169.254.20.99/32 dev "$IF"
kill -KILL "$KM_MW_PID"; wait "$KM_MW_PID" 2>/dev/null
km_map_writer_start --dns-interface "$IF" --dns-resolver "$LL" --dns-resolver fd00:53::53 --dns-port $PORT || exit 1
addrs_as_wanted() { # and, when not, what the interface holds and what the map writer said
	# (read whole before searched: `ip | grep -q` under pipefail fails when grep stops first)
	lacks 169.254.20.99 node_ip -4 addr show dev "$IF" && says "inet $LL/32" node_ip -4 addr show dev "$IF" &&
		says "inet6 fd00:53::53/128" node_ip -6 addr show dev "$IF" && return 0
	node_ip addr show dev "$IF" >&2
	tail -5 "$KM_DIR/map-writer.log" >&2
	return 1
}
check "a restart: an address no longer wanted is removed, the wanted ones kept or added" addrs_as_wanted
check "... the IPv6 address usable at once (no duplicate address detection: a socket binds to it)" \
	ip netns exec "$KM_NODE" "$KM_PY" -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).bind(("fd00:53::53", 0))'
check "... and the pod still gets its answers from the proxy it kept" \
	eval '[ "$(km_in_pod client dig +short +time=2 +tries=1 @10.96.0.10 web.t.svc.cluster.local)" = 10.96.9.1 ]'

# restarts while the node's other addresses change: the map writer reads its interface's
# addresses alone, a dump of a few that nothing elsewhere interrupts (a dump of the whole
# namespace, split into parts, was marked interrupted whenever an address came or went, and the
# map writer gave up starting: on the build before, 6 to 8 of these 8 restarts failed)
node_ip link add kmt-churn type bridge
for i in $(seq 0 15999); do echo "addr add 10.77.$((i / 250)).$((i % 250 + 1))/32 dev kmt-churn"; done |
	node_ip -batch -
churn=
for c in 1 2; do # two changers, each an address added and removed again and again
	(while :; do node_ip addr add 10.78.0.$c/32 dev kmt-churn; node_ip addr del 10.78.0.$c/32 dev kmt-churn; done) >/dev/null 2>&1 &
	churn="$churn $!"
done
started=0
for _ in $(seq 1 8); do
	kill -KILL "$KM_MW_PID"; wait "$KM_MW_PID" 2>/dev/null
	km_map_writer_start --dns-interface "$IF" --dns-resolver "$LL" --dns-resolver fd00:53::53 --dns-port $PORT &&
		addrs_as_wanted && started=$((started + 1))
done
kill $churn; wait $churn 2>/dev/null
check "restarts while 16,000 other addresses of the node change: started with the wanted addresses every time ($started of 8)" \
	[ "$started" = 8 ]
node_ip link del kmt-churn

# refusals, each with a message saying what to do
node_ip link add kmt-br type bridge
out=$(nsenter --net="/run/netns/$KM_NODE" "$KM_BIN/kmesh-map-writer" --bpffs-dir "$KM_DIR/bpffs/other" \
	--cgroup "$KM_CGROUP" --socket "$KM_DIR/other.sock" --dns-interface kmt-br --dns-resolver "$LL" 2>&1)
rc=$?
check "an interface of that name that is not kmesh's is refused (left as it is), exit 1" \
	eval '[ $rc = 1 ] && grep -q "the interface kmt-br exists and is not kmesh.s (a bridge without the alias" <<<"$out" && says bridge node_ip -d link show kmt-br'
out=$(nsenter --net="/run/netns/$KM_NODE" "$KM_BIN/kmesh-map-writer" --bpffs-dir "$KM_DIR/bpffs/other" \
	--cgroup "$KM_CGROUP" --socket "$KM_DIR/other.sock" --dns-interface kmt-x 2>&1)
rc=$?
check "--dns-interface without --dns-resolver is refused" \
	eval '[ $rc = 1 ] && grep -q "needs the address to put there: give --dns-resolver" <<<"$out" && ! node_ip link show kmt-x >/dev/null 2>&1'

# uninstall: the map writer stopped with --detach-on-exit (as km_map_writer_start runs it)
kill -TERM "$KM_MW_PID"
for _ in $(seq 1 50); do kill -0 "$KM_MW_PID" 2>/dev/null || break; sleep 0.1; done
check "uninstall (--detach-on-exit) removes the interface" eval '! node_ip link show "$IF" >/dev/null 2>&1'

km_check_summary dns_link
