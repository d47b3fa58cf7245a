#!/usr/bin/env bash
# authz_test.sh — L4 authorization with real connections: istiod (the fake, over Delta xDS) sends
# workloads and Authorization policies, the agent compiles them, the map writer writes them, and
# the sk_lookup program in the server pod's namespace decides each new connection: a denied
# client is refused at once (the kernel answers with a reset: ECONNREFUSED, well before its 1 s
# timeout). A second server enrolled without its namespace's path is decided by the cgroup_skb
# program instead (its SYN is dropped: the client times out). Scenarios: no policy allows; ALLOW
# by source namespace; ALLOW present but none matching denies; allow only a port; DENY beats
# ALLOW; deny by source namespace; dry-run does not deny; a workload-selector policy; a pod of
# another network with a colliding address is not taken for ours, and our non-empty network is
# not a reason to deny (Kmesh denies every connection in multi-network meshes); a policy change
# closes the open connections it denies, within a second, and leaves the others open; the
# lookup links survive a map writer restart and go with the pod's unenrollment.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

wl() { # wl NAME NAMESPACE IP NETWORK [POLICY]: a workload resource
	echo '{"workload": {"uid": "Kubernetes//Pod/'$2'/'$1'", "name": "'$1'", "namespace": "'$2'",
	  "serviceAccount": "'$1'-sa", "network": "'$4'", "addresses": ["'$3'"]'${5:+, \"authorizationPolicies\": [\"$5\"]}'}}'
}
policy() { # policy NAME NAMESPACE SCOPE ACTION MATCH [DRY_RUN]: one rule, one clause, one match
	echo '{"name": "'$1'", "namespace": "'$2'", "scope": "'$3'", "action": "'$4'", "dryRun": '${6:-false}',
	  "rules": [{"clauses": [{"matches": ['$5']}]}]}'
}
apply_policies() { # apply_policies N POLICY...: istiod sends them; wait until the agent holds N
	local n=$1 t0 IFS=,   # compiled policies and the map writer has applied every op since
	shift
	t0=$(date +%s%6N)
	km_istiod send "{\"cmd\": \"set-authz\", \"policies\": [$*]}" >/dev/null
	for _ in $(seq 1 100); do
		[ "$(km_agent_json "d['authz']['policies'] == $n and d['map_writer']['last_synced_unix_us'] > $t0" 2>/dev/null)" = true ] && return 0
		sleep 0.05
	done
	echo "policies not applied in 5 s" >&2
}
counter() { # counter POLICY allowed|denied: a policy's decision counter, in the agent's dump
	km_agent_json "[p['$2'] for p in d['authz']['compiled'] if p['name'] == '$1'][0]"
}
raw_counter() { # raw_counter POLICY allowed|denied: the same, from the map writer's table by stat id
	local id
	id=$(km_agent_json "[p['stat_id'] for p in d['authz']['compiled'] if p['name'] == '$1'][0]")
	"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table authz_stats |
		awk -v id="$id" -v f="$2" '$1 == "authz_stat" && $2 == id {print (f == "allowed" ? $4 : $6)}'
}
reach() { # reach CLIENT PORT [SERVER_IP]: what the server answered, or error:ECONNREFUSED when
	# denied (error:TIMEOUT where the SYN is dropped)
	km_connect "$1" "${3:-$SRV_IP}" "$2" --count 1 --timeout 1 | awk '{print $2}'
}
refused_fast() { # refused_fast CLIENT PORT: refused, and well before the client's 1 s timeout
	local t0 out ms
	t0=$(date +%s%N)
	out=$(reach "$1" "$2")
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "refused after $ms ms (client start included): $out"
	[ "$out" = error:ECONNREFUSED ] && [ "$ms" -lt 900 ]
}

trap 'km_env_cleanup' EXIT
km_env_setup kmz$$
SRV_IP=$KM_SUBNET.20
SRV2_IP=$KM_SUBNET.21
km_pod_add srv "$SRV_IP"
km_pod_add srv2 "$SRV2_IP"
km_pod_add cprod "$KM_SUBNET.11"
km_pod_add cdev "$KM_SUBNET.12"
km_backend_start srv 8080
km_backend_start srv 9090
km_backend_start srv 7070 keep
km_backend_start srv2 8080
km_wait_listen srv 8080 && km_wait_listen srv 9090 && km_wait_listen srv 7070 &&
	km_wait_listen srv2 8080 || exit 1
km_make_pki
echo t1 >"$KM_DIR/token"
chmod 644 "$KM_DIR/token"
km_istiod_start
# srv names the workload-selector policy web/only-9090; "ghost" lives in another network at
# cdev's address, in namespace prod.
km_istiod send '{"cmd": "set", "resources": ['"$(wl srv web "$SRV_IP" net-a web/only-9090),$(wl srv2 web "$SRV2_IP" net-a),$(wl cprod prod $KM_SUBNET.11 net-a),$(wl cdev dev $KM_SUBNET.12 net-a),$(wl ghost prod $KM_SUBNET.12 net-b)"']}' >/dev/null
km_map_writer_start || exit 1
km_agent_start_xds --network net-a
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path srv)" >/dev/null
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path srv2)" --tell-path no >/dev/null
lookup_pins() { ls "$KM_DIR/bpffs/kmesh/links/lookup" 2>/dev/null | wc -l; }
check "one lookup link, for the pod enrolled with its namespace's path" test "$(lookup_pins)" = 1
check "... and authz_ingress (on every packet's path) attached, for the pod without one" \
	test -e "$KM_DIR/bpffs/kmesh/links/authz_ingress"
check "... and the metrics say so (1 pod, no attach failure)" \
	eval 'for _ in $(seq 1 30); do km_metrics_has "^kmesh_authz_lookup_pods 1$" && break; sleep 0.1; done; km_metrics_has "^kmesh_authz_lookup_pods 1$" && km_metrics_has "^kmesh_authz_lookup_attach_failures_total 0$"'
identities_are() { # identities_are N: the agent holds N identities (waits 3 s at most)
	for _ in $(seq 1 60); do
		[ "$(km_agent_json 'd["authz"]["identities"]' 2>/dev/null)" = "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
check "no policy: allowed" test "$(reach cdev 8080)" = srv
check "... and no identity row written while no policy reads one" \
	eval 'identities_are 0 && [ "$(bpftool -j map dump pinned "$KM_DIR/bpffs/kmesh/maps/km_authz_ident" | "$KM_PY" -c "import json, sys; print(len(json.load(sys.stdin)))")" = 0 ]'

apply_policies 1 "$(policy allow-prod web NAMESPACE ALLOW '{"namespaces": [{"exact": "prod"}]}')"
check "the first policy: the agent writes the 4 identities of its network (not the other network's)" \
	eval 'identities_are 4 && [ "$(bpftool -j map dump pinned "$KM_DIR/bpffs/kmesh/maps/km_authz_ident" | "$KM_PY" -c "import json, sys; print(len(json.load(sys.stdin)))")" = 4 ]'
check "ALLOW from namespace prod: a prod pod (network net-a, not empty) is allowed" \
	test "$(reach cprod 8080)" = srv
check "ALLOW present, none matching: the dev pod is refused at once (its address is 'prod' only in net-b)" \
	refused_fast cdev 8080
check "... by a server enrolled without its path too, there by cgroup_skb (dropped: a timeout)" \
	test "$(reach cdev 8080 "$SRV2_IP")" = error:TIMEOUT

apply_policies 1 "$(policy allow-port web NAMESPACE ALLOW '{"destinationPorts": [9090]}')"
check "allow only a port: 9090 allowed" test "$(reach cdev 9090)" = srv
check "allow only a port: 8080 denied" refused_fast cdev 8080
denial_ms() { # denial_ms CLIENT PORT: the median time connect() takes to fail, over 20 tries
	km_in_pod "$1" "$KM_PY" -c 'import socket, sys, time
ts = []
for _ in range(20):
    s = socket.socket()
    s.settimeout(1)
    t0 = time.monotonic()
    try:
        s.connect((sys.argv[1], int(sys.argv[2])))
        print("connected"); sys.exit(1)
    except ConnectionRefusedError:
        ts.append(time.monotonic() - t0)
    finally:
        s.close()
ts.sort()
print("%.3f" % (ts[10] * 1000))' "$SRV_IP" "$2"
}
ms=$(denial_ms cdev 8080)
echo "a denied connect() fails after $ms ms (median of 20)"
check "a denied connect() fails within 10 ms (the median of 20, timed around connect())" \
	awk -v ms="$ms" 'BEGIN {exit !(ms != "" && ms < 10)}'

apply_policies 2 "$(policy allow-prod web NAMESPACE ALLOW '{"namespaces": [{"exact": "prod"}]}')" \
	"$(policy deny-8080 web NAMESPACE DENY '{"destinationPorts": [8080], "principals": [{"suffix": "/sa/cprod-sa"}]}')"
check "DENY beats ALLOW: prod to 8080 denied" refused_fast cprod 8080
check "DENY beats ALLOW: prod to 9090 allowed" test "$(reach cprod 9090)" = srv
check "the DENY policy counted its denial, the ALLOW policy its allowance" \
	eval '[ "$(counter web/deny-8080 denied)" -ge 1 ] && [ "$(counter web/allow-prod allowed)" -ge 1 ]'
check "the agent's dump shows the map writer's counters, joined by stat id" \
	eval '[ "$(counter web/deny-8080 denied)" = "$(raw_counter web/deny-8080 denied)" ] &&
	      [ "$(counter web/allow-prod allowed)" = "$(raw_counter web/allow-prod allowed)" ] &&
	      [ "$(km_agent_json "d[\"authz\"][\"decided_by_no_policy\"][\"denied\"] >= 1")" = true ]'
# /metrics asks for the counters when scraped and shows them from the next scrape
metric_of() { # metric_of NAME LABELS: the sample's value on the page (empty: none)
	km_metrics | awk -v want="$1{$2}" '$1 == want {print $2}'
}
check "the metrics page counts denials by policy and in total (bounded series)" \
	eval 'for _ in $(seq 1 40); do d=$(metric_of kmesh_authz_policy_decisions_total "policy=\"web/deny-8080\",action=\"DENY\",dry_run=\"false\",decision=\"denied\""); [ -n "$d" ] && [ "$d" -ge 1 ] && break; sleep 0.25; done
	      echo "# deny-8080 denied: ${d:-none}" && [ -n "$d" ] && [ "$d" = "$(raw_counter web/deny-8080 denied)" ] &&
	      [ "$(metric_of kmesh_authz_policy_decisions_total "policy=\"web/allow-prod\",action=\"ALLOW\",dry_run=\"false\",decision=\"allowed\"")" -ge 1 ] &&
	      [ "$(metric_of kmesh_authz_decisions_total "decision=\"denied\"")" -ge "$d" ] &&
	      [ "$(metric_of kmesh_authz_no_policy_decisions_total "decision=\"denied\"")" -ge 1 ]'
check "... and by destination workload and policy: srv's denials under web/deny-8080, as many; none unlisted" \
	eval 'w=$(metric_of kmesh_authz_denied_connections_total "destination_workload=\"srv\",destination_workload_namespace=\"web\",policy=\"web/deny-8080\"")
	      echo "# srv denied by deny-8080: ${w:-none}" && [ -n "$w" ] && [ "$w" = "$d" ] &&
	      km_metrics_has "^kmesh_authz_unlisted_denied_connections_total 0$"'

apply_policies 1 "$(policy deny-dev "" GLOBAL DENY '{"namespaces": [{"prefix": "de"}]}')"
check "deny by source namespace (mesh-wide): dev denied" refused_fast cdev 8080
check "deny by source namespace: prod allowed (no ALLOW policy applies)" test "$(reach cprod 8080)" = srv

apply_policies 1 "$(policy deny-all web NAMESPACE DENY '{"notNamespaces": [{"exact": "nowhere"}]}' true)"
check "dry run: a matching DENY does not deny" test "$(reach cdev 8080)" = srv
check "... but counts what it would have denied" test "$(counter web/deny-all denied)" -ge 1

apply_policies 1 "$(policy only-9090 web WORKLOAD_SELECTOR ALLOW '{"destinationPorts": [9090]}')"
check "a workload-selector policy applies to the workload naming it (8080 denied)" \
	refused_fast cprod 8080
check "... and allows what it matches (9090)" test "$(reach cprod 9090)" = srv

# Five policies on the namespace: a list the agent indexes (km_authz_index, offered by the map
# writer in its hello), so BPF evaluates only the candidates; decisions must not change.
apply_policies 5 "$(policy a1 web NAMESPACE ALLOW '{"namespaces": [{"exact": "a1"}]}')" \
	"$(policy a2 web NAMESPACE ALLOW '{"namespaces": [{"exact": "a2"}], "destinationPorts": [8080]}')" \
	"$(policy a3 web NAMESPACE ALLOW '{"namespaces": [{"exact": "prod"}], "destinationPorts": [9090]}')" \
	"$(policy a4 web NAMESPACE ALLOW '{"principals": [{"exact": "cluster.local/ns/dev/sa/cdev-sa"}], "destinationPorts": [9090]}')" \
	"$(policy d1 web NAMESPACE DENY '{"namespaces": [{"prefix": "pr"}], "destinationPorts": [7070]}')"
check "a list of five policies is indexed: the agent wrote km_authz_index rows" \
	test "$(km_agent_json 'd["authz"]["index_rows"] > 0')" = true
check "indexed: an ALLOW by namespace and port allows (prod to 9090)" test "$(reach cprod 9090)" = srv
check "indexed: an ALLOW by principal allows (dev to 9090)" test "$(reach cdev 9090)" = srv
check "indexed: no candidate, denied at once (dev to 8080)" refused_fast cdev 8080
check "indexed: the DENY by prefix denies (prod to 7070)" refused_fast cprod 7070
check "indexed: the map writer refused none of the index rows" \
	test "$(km_agent_json 'd["map_writer"]["ops_refused"]')" = 0

apply_policies 0
check "policies removed: allowed again" test "$(reach cdev 8080)" = srv
check "... and the index rows went with them" test "$(km_agent_json 'd["authz"]["index_rows"]')" = 0
# Open connections: one from dev and one from prod are held while a DENY for dev arrives.
hold() { # hold CLIENT SECONDS: a connection to 7070 kept open, its end written to $KM_DIR/held-CLIENT
	km_connect "$1" "$SRV_IP" 7070 --timeout 1 --watch "$2" >"$KM_DIR/held-$1" &
	KM_PIDS+=($!)
}
wait_line() { # wait_line FILE REGEX SECONDS
	for _ in $(seq 1 $(($3 * 20))); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
closed_within() { # closed_within FILE T0 SECONDS: the connection was reset at most SECONDS after T0
	awk -v t0="$2" -v max="$3" '$1 == "end" && $2 == "error:ECONNRESET" {ok = ($3 - t0 <= max);
		printf "reset %.3f s after the policy was sent\n", $3 - t0} END {exit !ok}' "$1"
}
hold cdev 10
hold cprod 6
check "two connections are open (dev and prod)" eval 'wait_line "$KM_DIR/held-cdev" "^1 srv" 3 && wait_line "$KM_DIR/held-cprod" "^1 srv" 3'
T_SENT=$(date +%s.%N)
apply_policies 1 "$(policy deny-dev "" GLOBAL DENY '{"namespaces": [{"exact": "dev"}]}')"
check "a policy change closes the open connection it denies (the client sees a reset)" \
	wait_line "$KM_DIR/held-cdev" "^end error:ECONNRESET" 3
check "... within a second of the policy being sent" closed_within "$KM_DIR/held-cdev" "$T_SENT" 1
check "the open connection it still allows stays open" wait_line "$KM_DIR/held-cprod" "^end open" 8
check "the map writer counted one connection closed" \
	km_wait_rows frontend "^stats .*authz_closed 1 " 1
apply_policies 0

check "the map writer refused none of the compiled rows" \
	test "$(km_agent_json 'd["map_writer"]["ops_refused"]')" = 0

# the lookup link outlives the map writer (pinned), and goes with the pod
apply_policies 1 "$(policy deny-dev "" GLOBAL DENY '{"namespaces": [{"exact": "dev"}]}')"
kill -KILL "$KM_MW_PID"
wait "$KM_MW_PID" 2>/dev/null
check "with the map writer killed, a denied connection is still refused at once" refused_fast cdev 8080
km_map_writer_start || exit 1
check "a restarted map writer keeps the pod's link (and says so)" \
	eval '[ "$(lookup_pins)" = 1 ] && grep -q "authorization at the socket lookup: 1 pods" "$KM_DIR/map-writer.log"'
check "... and it still refuses" refused_fast cdev 8080
"$KM_TESTCTL" unenroll --socket "$KM_SOCKET" --netns "$(km_netns_path srv)" >/dev/null
check "unenrolled: the pod's link is gone, and nothing decides its connections" \
	eval '[ "$(lookup_pins)" = 0 ] && [ "$(reach cdev 8080)" = srv ]'
check "authz_ingress still attached while srv2 (no sk_lookup) is enrolled" \
	test -e "$KM_DIR/bpffs/kmesh/links/authz_ingress"
"$KM_TESTCTL" unenroll --socket "$KM_SOCKET" --netns "$(km_netns_path srv2)" >/dev/null
check "... and detached once the last such pod is unenrolled: no program on the pods' packets" \
	eval '[ ! -e "$KM_DIR/bpffs/kmesh/links/authz_ingress" ] && grep -q "authz_ingress detached" "$KM_DIR/map-writer.log"'

kill "$KM_MW_PID" && wait "$KM_MW_PID" 2>/dev/null
check "with the map writer gone the agent's dump still answers, saying why counters are missing" \
	eval 'km_agent_json "d[\"authz\"][\"counters_missing\"]" | grep -q "map writer"'

[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer xds-agent istiod
[ -n "${KM_SHOW_LOGS:-}" ] && km_dump_logs map-writer xds-agent istiod
km_check_summary authz
