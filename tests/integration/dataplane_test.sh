#!/usr/bin/env bash
# dataplane_test.sh — the data plane's choices, with real connections from an enrolled pod:
# weights from Workload.capacity, power of two choices on live connections kept by sockops,
# service- and workload-level waypoints with the original-destination TLV read by a test
# waypoint (IPv4 and IPv6, exactly once), a pending waypoint refused, DNS (UDP and TCP, IPv4 and
# IPv6) sent to the node-local resolver with the reply's source restored, v4-mapped destinations.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

S=$KM_SUBNET
S6=$KM_SUBNET6
trap 'km_env_cleanup' EXIT
km_env_setup kmd$$
km_pod_add client "$S.10" "${S6}10"
for i in 1 2 3 4; do km_pod_add "b$i" "$S.2$i" "${S6}2$i"; km_backend_start "b$i" 8080; done
km_pod_add wp "$S.31" "${S6}31"
km_server_start wp tlv_server.py wp 15019 ping
km_pod_add dns "$S.53" "${S6}53"
km_server_start dns udp_server.py dns 53
km_backend_start dns 53 # TCP/53 answers "dns"
for i in 1 2 3 4; do km_wait_listen "b$i" 8080 || exit 1; done
km_wait_listen wp 15019 && km_wait_listen dns 53 -u && km_wait_listen dns 53 || exit 1

svc() { # svc NAME VIP [extra JSON]
	echo "{\"service\": {\"name\": \"$1\", \"namespace\": \"t\", \"hostname\": \"$1.t\",
	  \"addresses\": [$2], \"ports\": [{\"servicePort\": 80, \"targetPort\": 8080}] ${3:-}}},"
}
wl() { # wl NAME IP IP6 SERVICES [extra JSON]
	echo "{\"workload\": {\"uid\": \"Kubernetes//Pod/t/$1\", \"addresses\": [\"$2\", \"$3\"],
	  \"services\": {$4} ${5:-}}},"
}
{
	echo '{"resources": ['
	svc weighted '{"address": "10.96.6.1"}'
	svc p2c '{"address": "10.96.6.2"}'
	svc only1 '{"address": "10.96.6.3"}'
	svc wpsvc '{"address": "10.96.6.4"}, {"address": "fd00:96::4"}' \
		', "waypoint": {"hostname": {"namespace": "t", "hostname": "waypoint.t"}, "hboneMtlsPort": 15008}'
	svc viawl '{"address": "10.96.6.6"}'
	svc pending '{"address": "10.96.6.5"}' \
		', "waypoint": {"hostname": {"namespace": "t", "hostname": "missing.t"}, "hboneMtlsPort": 15008}'
	echo '{"service": {"name": "waypoint", "namespace": "t", "hostname": "waypoint.t",
	  "addresses": [{"address": "10.96.6.9"}], "ports": [{"servicePort": 15008, "targetPort": 15008}]}},'
	wl b1 "$S.21" "${S6}21" '"t/weighted.t": {}, "t/p2c.t": {}, "t/only1.t": {}'
	wl b2 "$S.22" "${S6}22" '"t/p2c.t": {}'
	wl b3 "$S.23" "${S6}23" '"t/weighted.t": {}' ', "capacity": 3'
	wl b4 "$S.24" "${S6}24" '"t/viawl.t": {}' ", \"waypoint\": {\"address\": {\"address\": \"$S.31\"}, \"hboneMtlsPort\": 15008}"
	wl wp "$S.31" "${S6}31" '"t/waypoint.t": {}'
	echo '{"service": {"name": "end", "namespace": "t", "hostname": "end.t", "ports": [{"servicePort": 1}]}}'
	echo ']}'
} | km_write_config
km_map_writer_start --dns-resolver "$S.53" --dns-resolver "${S6}53" || exit 1
km_agent_start --node-name node-a --p2c-services t/p2c.t,t/only1.t
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
# weighted 2 + p2c 2 + only1 1 + waypoint 1 + viawl 1
check "every service converges (7 endpoints)" km_wait_rows endpoint "^endpoint" 7
# a slot carries its pod's IPv4 address (BPF then skips the backend row), except for a pod with
# a waypoint of its own, whose connections must reach the waypoint
check "endpoint rows carry their pods' IPv4 addresses; b4 (own waypoint) none" \
	eval '[ "$(km_wait_rows endpoint "addr4 $S.21\$" 3 && echo y)" = y ] &&
	      [ "$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table endpoint | grep -c "addr4 0.0.0.0$")" = 1 ]'

# ---- weights: b3 (capacity 3) should take 3/4 of the connections; 400 tries, sd ~8.7 ---------
out=$(km_connect client 10.96.6.1 80 --count 400)
b3=$(count_of b3 <<<"$out")
check "weights: b3 (capacity 3) takes ~3/4 of 400 ($b3, bounds 255..345)" \
	eval "[ $b3 -ge 255 ] && [ $b3 -le 345 ] && [ $(count_of b1 <<<"$out") -eq $((400 - b3)) ]"
check "the service row carries the weight total (4)" km_wait_rows service "totals 4 " 1
# every priority group with endpoints is picked from its range in km_slot (an array element),
# not from km_endpoint by key: "groups-with-endpoints groups-without-a-range"
slot_groups() { "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table service | "$KM_PY" -c '
import sys
groups = unplaced = 0
for line in sys.stdin:
    w = line.split()
    if w[:1] != ["service"]:
        continue
    counts = w[w.index("count") + 1:w.index("count") + 8]
    slots = w[w.index("slots") + 1:w.index("slots") + 8]
    for c, s in zip(counts, slots):
        if int(c) > 0:
            groups += 1
            unplaced += s == "-"
print(groups, unplaced)'; }
read -r groups unplaced <<<"$(slot_groups)"
check "every service's endpoints are picked from km_slot ($groups groups, $unplaced not placed)" \
	eval "[ $groups -ge 3 ] && [ $unplaced -eq 0 ]"
# a uniform service's frontend rows carry its pick (a VIP connect reads no service row); one with
# weights, P2C or a waypoint does not. viawl is uniform, but its one pod has a waypoint of its own
# (no inline address in the slot): its connects below still reach that waypoint.
fe_dump() { "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table frontend; }
check "frontend rows carry the pick of uniform services only (viawl; not weighted, p2c, wpsvc)" \
	eval '[ "$(fe_dump | grep -c "10.96.6.6 port 80 .* pick [0-9]*+1$")" = 1 ] &&
	      [ "$(fe_dump | grep -E " 10.96.6.[124] port 80 " | grep -c "pick -$")" = 3 ]'
check "the dump's stats say the picks are followed, no rewrite refused" \
	eval 'fe_dump | grep -q "^stats .* frontend_pick_rewrites_failed 0 frontend_picks_off 0$"'

# ---- power of two choices: 10 live connections on b1 send new ones to b2 --------------------
# Connections are counted when a P2C service picked them: only1 (b1 alone) is one too.
conn_rows() { bpftool -j map dump pinned "$KM_DIR/bpffs/kmesh/maps/km_conn_count" | "$KM_PY" -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# conn_live: the live connections all count rows hold (a row stays, at 0, once made)
conn_live() { bpftool -j map dump pinned "$KM_DIR/bpffs/kmesh/maps/km_conn_count" | "$KM_PY" -c '
import json, sys
total = 0
for e in json.load(sys.stdin):
    v = e.get("formatted", e)["value"]
    total += v["active"] if isinstance(v, dict) else int.from_bytes(bytes(int(b, 16) for b in v[:8]), "little")
print(total)'; }
km_connect client 10.96.6.1 80 --count 5 --hold 3 >"$KM_DIR/held-plain" &
held=$!
for _ in $(seq 1 50); do [ -s "$KM_DIR/held-plain" ] && break; sleep 0.1; done
check "connections of a service without P2C are not counted (no count rows)" test "$(conn_rows)" -eq 0
wait $held
km_connect client 10.96.6.3 80 --count 10 --hold 5 >"$KM_DIR/held" &
held=$!
for _ in $(seq 1 50); do grep -q "10 b1" "$KM_DIR/held" && break; sleep 0.1; done
check "10 held connections through a P2C service: b1's count row, at 10" \
	eval '[ "$(conn_rows)" -eq 1 ] && [ "$(conn_live)" -eq 10 ]'
out=$(km_connect client 10.96.6.2 80 --count 40)
check "P2C: with 10 live connections on b1, all 40 new ones go to b2" \
	test "$(count_of b2 <<<"$out")" -eq 40
wait $held # the held sockets close: their counts must come back down
out=$(km_connect client 10.96.6.2 80 --count 60)
check "P2C: once they close, both backends are used again" \
	eval "[ $(count_of b1 <<<"$out") -gt 10 ] && [ $(count_of b2 <<<"$out") -gt 10 ]"
check "every count is back to 0 once the connections are released (the rows stay)" \
	eval '[ "$(conn_live)" -eq 0 ] && [ "$(conn_rows)" -le 2 ]'

# ---- waypoints ------------------------------------------------------------------------------
tlv4=01000000060a6006040050fe00000000
out=$(km_connect client 10.96.6.4 80 --count 5 --send ping)
check "service waypoint (IPv4): the waypoint pod gets the TLV of 10.96.6.4:80 once" \
	test "$(count_of "wp:$tlv4" <<<"$out")" -eq 5
tlv6=0100000012fd0000960000000000000000000000040050fe00000000
out=$(km_connect client fd00:96::4 80 --count 5 --send ping)
check "service waypoint (IPv6): the TLV carries fd00:96::4 port 80" \
	test "$(count_of "wp:$tlv6" <<<"$out")" -eq 5
out=$(km_connect client "::ffff:10.96.6.4" 80 --count 3 --send ping)
check "v4-mapped destination on an IPv6 socket: IPv4 TLV" test "$(count_of "wp:$tlv4" <<<"$out")" -eq 3
out=$(km_connect client "$S.24" 8080 --count 3 --send ping)
check "workload waypoint: a pod IP goes to its waypoint with the pod's address in the TLV" \
	test "$(count_of "wp:01000000060a7b00181f90fe00000000" <<<"$out")" -eq 3
out=$(km_connect client 10.96.6.6 80 --count 3 --send ping)
check "a service's endpoint with a waypoint of its own: through that waypoint, the VIP in the TLV" \
	test "$(count_of "wp:01000000060a6006060050fe00000000" <<<"$out")" -eq 3
out=$(km_connect client 10.96.6.5 80 --count 3)
check "a waypoint named but unknown: refused, not sent around it" \
	test "$(count_of error:ECONNREFUSED <<<"$out")" -eq 3
out=$(km_connect client "$S.31" 15019 --count 5 --send ping)
check "no waypoint on the way: nothing is prepended (the server sees the text only)" \
	test "$(count_of wp:none <<<"$out")" -eq 5

# ---- v4-mapped and IPv6 service traffic ------------------------------------------------------
out=$(km_connect client "::ffff:10.96.6.3" 80 --count 5)
check "v4-mapped VIP on an IPv6 socket reaches b1" test "$(count_of b1 <<<"$out")" -eq 5

# ---- DNS ------------------------------------------------------------------------------------
out=$(km_connect client 10.96.0.10 53 --udp --count 3)
check "DNS over UDP/IPv4 reaches the node resolver; the reply shows 10.96.0.10:53" \
	test "$(count_of "dns:ping from 10.96.0.10 53" <<<"$out")" -eq 3
out=$(km_connect client fd00:96::a 53 --udp --count 3)
check "DNS over UDP/IPv6: reply from fd00:96::a port 53" \
	test "$(count_of "dns:ping from fd00:96::a 53" <<<"$out")" -eq 3
out=$(km_connect client 10.96.0.10 53 --count 3)
check "DNS over TCP/53 reaches the resolver" test "$(count_of dns <<<"$out")" -eq 3
check "a pod that is not enrolled is left alone (its DNS to 10.96.0.10 is not redirected)" \
	eval "km_in_pod dns $KM_PY $KM_ROOT/tests/lib/client.py 10.96.0.10 53 --udp --timeout 0.5 | grep -q error"

km_check_summary dataplane
