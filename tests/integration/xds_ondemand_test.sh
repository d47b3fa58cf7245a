#!/usr/bin/env bash
# xds_ondemand_test.sh — an agent on demand (--xds-on-demand) against the fake istiod playing
# istiod's on-demand Address subscriptions: it subscribes to nothing at first (subscribe and
# unsubscribe "*"), holds nothing, and a connection to a VIP it has not asked for is left alone;
# `kmeshctl demand` asks for a service (it and its workloads arrive, the VIP balances real
# connections), the DNS proxy asks for a service a pod resolves (once the cluster's DNS answered
# with its address: a name it does not know demands nothing) and holds the answer until the
# service's rows are written, so the first connection is balanced; a workload on the agent's node is
# pushed, a new member of a demanded service is not (istiod's rule) until the keys are asked
# again: on a new stream, which names what is held and sends every demand again, or at a
# refresh (unsubscribe and subscribe, never a request istiod would refuse); malformed keys and
# keys past --xds-on-demand-max are refused by name; the keys are kept in a file, from which an
# agent restarted after kill -9 asks for them again at once.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

S=$KM_SUBNET
WEB=10.96.9.1
OTHER=10.96.9.2
CTL=$KM_ROOT/build/bin/kmeshctl
demand() { "$CTL" --xds-socket "$KM_AGENT_SOCKET" demand "$@"; }
wl() { # wl NAME IP [SERVICES-JSON]
	echo '{"workload": {"uid": "Kubernetes//Pod/t/'$1'", "name": "'$1'", "namespace": "t",
	  "addresses": ["'$2'"], "services": {'${3:-}'}}}'
}
svc() { # svc NAME VIP
	echo '{"service": {"name": "'$1'", "namespace": "t", "hostname": "'$1'.t.svc.cluster.local",
	  "addresses": [{"address": "'$2'"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}}'
}
member() { echo '"t/'$1'.t.svc.cluster.local": {"ports": [{"servicePort": 80, "targetPort": 8080}]}'; }
answers() { km_connect client "$1" 80 --count "$2" --timeout 1; }
all_reach() { # all_reach VIP NAME: 10 connections, every one answered by NAME (within 3 s)
	for _ in $(seq 1 30); do
		[ "$(answers "$1" 10)" = "10 $2" ] && return 0
		sleep 0.1
	done
	answers "$1" 10 >&2
	return 1
}
uids() { km_agent_json 'sorted(w["uid"].split("/")[-1] for w in d["model"]["workload_list"])'; }
services() { km_agent_json 'sorted(s["name"].split("/")[1].split(".")[0] for s in d["model"]["service_list"])'; }
# the Address requests of the last stream that carry no nonce: its first, then its subscriptions
areqs() { km_istiod query "[r for r in reqs(last(s), ADDRESS) if not r['nonce']]"; }

trap 'km_env_cleanup' EXIT
km_env_setup kmo$$
km_pod_add client "$S.10"
km_pod_add b1 "$S.21"
km_pod_add b2 "$S.22"
km_pod_add b3 "$S.23"
for b in b1 b2 b3; do km_backend_start $b 8080; done
km_wait_listen b1 8080 && km_wait_listen b2 8080 && km_wait_listen b3 8080 || exit 1
# the upstream resolver of the agent's DNS proxy, on loopback: it knows web's VIP
DNS_UP=$((20000 + $$ % 20000))
DNS_PORT=$((DNS_UP + 1))
dnsmasq --keep-in-foreground --no-resolv --no-hosts --user=root --port=$DNS_UP \
	--listen-address=127.0.0.1 --bind-interfaces --address=/web.t.svc.cluster.local/$WEB \
	--pid-file= 2>"$KM_DIR/dnsmasq.log" &
KM_PIDS+=($!)
km_make_pki
echo t1 >"$KM_DIR/token"
chmod 644 "$KM_DIR/token"
km_istiod_start
km_istiod send '{"cmd": "set", "resources": ['"$(svc web $WEB),$(svc other $OTHER),$(wl client "$S.10"),$(wl b1 "$S.21" "$(member web)"),$(wl b2 "$S.22" "$(member other)")"']}' >/dev/null
km_map_writer_start || exit 1
agent() { # agent [MORE FLAGS]: refreshes off unless given (the pushes are checked one by one)
	km_agent_start_xds --xds-on-demand --xds-on-demand-max 3 --xds-on-demand-file "$KM_DIR/run/on-demand.keys" \
		--xds-on-demand-refresh 0 --dns-address "127.0.0.1:$DNS_PORT" --dns-upstream "127.0.0.1:$DNS_UP" \
		--dns-demand-wait-ms 2000 "$@"
}
agent
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null

check "the first Address request subscribes to nothing (subscribe and unsubscribe \"*\")" km_istiod wait \
	"any(r['subscribe'] == ['*'] and r['unsubscribe'] == ['*'] for r in reqs(last(s), ADDRESS))" 10
check "... Authorization stays a wildcard subscription" km_istiod wait \
	"any(r['subscribe'] == [] and not r['nonce'] for r in reqs(last(s), AUTHZ))" 10
check "... istiod's empty answer is ACKed; the agent holds no workload and no service" \
	eval 'km_wait_agent "d[\"istiod\"][\"address\"][\"acks\"] >= 1" 10 && [ "$(uids)" = "[]" ] && [ "$(services)" = "[]" ]'
check "a connection to a VIP not asked for is left alone (not balanced: nothing answers)" \
	eval '[ "$(answers $OTHER 1 | grep -c " b2")" = 0 ]'

out=$(demand t/other.t.svc.cluster.local -o json)
check "kmeshctl demand NS/HOSTNAME: one new key" \
	eval '"$KM_PY" -c "import json, sys; sys.exit(json.loads(sys.argv[1])[0][\"new\"] != 1)" "$out"'
check "... sent as a subscription of its own (no nonce: not an ACK)" km_istiod wait \
	"any(r['subscribe'] == ['t/other.t.svc.cluster.local'] and not r['nonce'] for r in reqs(last(s), ADDRESS))" 10
check "... istiod sends the service and its workload, and only those" \
	eval 'km_wait_agent "d[\"model\"][\"workloads\"] == 1" 10 && [ "$(uids)" = "[\"b2\"]" ] && [ "$(services)" = "[\"other\"]" ]'
check "... and the VIP now balances real connections (to b2)" all_reach $OTHER b2
check "demanding it again sends nothing new" \
	eval 'demand t/other.t.svc.cluster.local -o json | grep -q "\"new\": 0"'

dig +time=2 +tries=1 +short -p "$DNS_PORT" @127.0.0.1 nosuch.t.svc.cluster.local >/dev/null
dig +tcp +time=2 +tries=1 +short -p "$DNS_PORT" @127.0.0.1 nosuch2.t.svc.cluster.local >/dev/null
check "a service name the cluster's DNS does not know demands nothing (a pod cannot spend the bound)" \
	eval '[ "$(km_agent_json "d[\"istiod\"][\"on_demand\"][\"keys\"]")" = 1 ]'
km_istiod send '{"cmd": "delay-demand", "ms": 300}' >/dev/null # istiod answers demands late
t0=$(date +%s%N)
ip=$(dig +time=2 +tries=1 +short -p "$DNS_PORT" @127.0.0.1 web.t.svc.cluster.local)
ms=$((($(date +%s%N) - t0) / 1000000))
first=$(answers $WEB 1)
km_istiod send '{"cmd": "delay-demand", "ms": 0}' >/dev/null
check "the DNS proxy forwards a service name it does not hold (the upstream's answer)" eval '[ "$ip" = $WEB ]'
check "... demands that service once the upstream answered with an address: istiod sends web and b1" \
	eval 'km_wait_agent "d[\"model\"][\"services\"] == 2" 10 && [ "$(uids)" = "[\"b1\", \"b2\"]" ]'
check "... and the answer waited for web's rows (istiod took 300 ms; the answer $ms ms)" \
	eval '[ $ms -ge 300 ] && [ $ms -lt 1900 ] && km_metrics_has "^kmesh_dns_demand_waits_total{result=\"written\"} 1$"'
check "... so the pod's first connection, right after it, is balanced (to b1): $first" eval '[ "$first" = "1 b1" ]'
check "... and web's VIP balances to b1" all_reach $WEB b1

# istiod pushes changes of the names it sent, and the workloads of the client's node; not a
# workload that joins a service later (its own test says so): those come at a refresh
km_istiod send '{"cmd": "add", "resources": ['"$(wl b3 "$S.23" "$(member web)"),$(wl client "$S.10" "$(member other)")"',
  {"workload": {"uid": "Kubernetes//Pod/t/local", "name": "local", "namespace": "t", "node": "node-1", "addresses": ["'$S.30'"]}}]}' >/dev/null
check "a new workload on this node (node-1) is pushed" \
	eval 'km_wait_agent "d[\"model\"][\"workloads\"] == 3" 10 && [ "$(uids)" = "[\"b1\", \"b2\", \"local\"]" ]'
km_istiod send '{"cmd": "add", "resources": ['"$(wl stranger "$S.99")"']}' >/dev/null
sleep 0.5
check "... new workloads of demanded services (b3, client) and one no subscription names are not" \
	eval '[ "$(uids)" = "[\"b1\", \"b2\", \"local\"]" ]'

km_istiod send '{"cmd": "end-stream", "code": 0}' >/dev/null
check "a new stream: the first request names the 5 held, unsubscribes \"*\" and subscribes \"*\" and both demanded keys" km_istiod wait \
	"len(s['streams']) == 2 and any(r['subscribe'] == ['*', 't/other.t.svc.cluster.local', 't/web.t.svc.cluster.local'] and r['unsubscribe'] == ['*'] and r['initial_count'] == 5 for r in reqs(last(s), ADDRESS))" 10
check "... which istiod answers with the services' members now: b3 and client join" \
	eval 'km_wait_agent "d[\"model\"][\"workloads\"] == 5" 10 && [ "$(uids)" = "[\"b1\", \"b2\", \"b3\", \"client\", \"local\"]" ] && [ "$(services)" = "[\"other\", \"web\"]" ]'

out=$(demand bogus "t/x.t.svc" 2>&1)
rc=$?
check "a malformed key is refused by name (exit 1), the good one in the same call demanded" \
	eval '[ $rc = 1 ] && grep -q "'"'"'bogus'"'"' is not <network>/<ip> nor <namespace>/<hostname>" <<<"$out" && km_istiod wait "any(r[\"subscribe\"] == [\"t/x.t.svc\"] for r in reqs(last(s), ADDRESS))" 10'
out=$(demand "/$S.99" 2>&1)
rc=$?
check "past --xds-on-demand-max (3 keys held) a demand is refused and says why" \
	eval '[ $rc = 1 ] && grep -q "refused: --xds-on-demand-max keys held already" <<<"$out"'
check "... and the dump counts the keys and the refusals" \
	eval '[ "$(km_agent_json "[d[\"istiod\"][\"on_demand\"][k] for k in (\"keys\", \"max\", \"refused_full\", \"refused_invalid\")]")" = "[3, 3, 1, 1]" ]'

check "the demanded keys are kept in --xds-on-demand-file" \
	eval 'for _ in $(seq 1 30); do [ "$(wc -l <"$KM_DIR/run/on-demand.keys")" = 3 ] && break; sleep 0.1; done; [ "$(sort "$KM_DIR/run/on-demand.keys" | tr "\n" " ")" = "t/other.t.svc.cluster.local t/web.t.svc.cluster.local t/x.t.svc " ]'
kill -9 "$KM_AGENT_PID"
wait "$KM_AGENT_PID" 2>/dev/null
agent --xds-on-demand-refresh 1
check "a restarted agent (killed with -9) asks for the kept keys on its first stream, before any pod does" km_istiod wait \
	"len(s['streams']) == 3 and any(r['subscribe'] == ['*', 't/other.t.svc.cluster.local', 't/web.t.svc.cluster.local', 't/x.t.svc'] for r in reqs(last(s), ADDRESS))" 10
check "... and holds what it held before (its node's workload too)" \
	eval 'km_wait_agent "d[\"model\"][\"workloads\"] == 5 and d[\"model\"][\"services\"] == 2" 10'
km_istiod send '{"cmd": "add", "resources": ['"$(wl b4 "$S.24" "$(member web)")"']}' >/dev/null
check "a refresh (--xds-on-demand-refresh 1) brings a workload that joined a demanded service (b4)" \
	eval 'km_wait_agent "d[\"model\"][\"workloads\"] == 6 and d[\"istiod\"][\"on_demand\"][\"refreshes\"] >= 1" 10'
check "... by unsubscribing and subscribing the keys again: istiod never saw a request that changed nothing" \
	eval 'km_istiod wait "any(sorted(r[\"unsubscribe\"]) == [\"t/other.t.svc.cluster.local\", \"t/web.t.svc.cluster.local\", \"t/x.t.svc\"] for r in reqs(last(s), ADDRESS))" 5 && [ "$(km_istiod query "s[\"mismatches\"]")" = 0 ]'
km_istiod send '{"cmd": "set-authz", "policies": [{"name": "deny-x", "namespace": "t", "scope": "NAMESPACE", "action": "DENY",
  "rules": [{"clauses": [{"matches": [{"principals": [{"suffix": "/sa/x"}]}]}]}]}]}' >/dev/null
check "policies in force on demand: the agent warns that callers it has not demanded have no identity" \
	eval 'for _ in $(seq 1 50); do grep -q "on demand with 1 authorization policies: a caller this node has not demanded" "$KM_DIR/xds-agent.log" && break; sleep 0.1; done; grep -q "on demand with 1 authorization policies" "$KM_DIR/xds-agent.log"'
out=$("$KM_BIN/kmesh-xds-agent" --xds-on-demand --config-file "$KM_DIR/none.json" 2>&1)
rc=$?
check "--xds-on-demand with --config-file: exit 2, says why" \
	eval '[ $rc = 2 ] && grep -q "with --config-file the file is the whole state" <<<"$out"'
check "the agent logged no error" eval '! grep -E "\[(error|ERROR)\]|ERROR" "$KM_DIR/xds-agent.log"'
check "istiod never got a request that changed no subscription (it would log an error and not answer)" \
	eval '[ "$(km_istiod query "s[\"mismatches\"]")" = 0 ]'
km_check_summary xds-ondemand
