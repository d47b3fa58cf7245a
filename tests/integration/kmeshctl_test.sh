#!/usr/bin/env bash
# kmeshctl_test.sh — kmeshctl against the live processes of a private mesh (map writer, xDS
# agent from a config file, IPsec agent, tunnel): version, log (read and set) and dump (tables,
# xds, policies, ipsec, certs) in each output format, every one parsed back (JSON with json, YAML with
# python3-yaml, tables by their columns); KmeshNodeInfo events injected into the IPsec agent
# (the xDS agent's: inject_test); --help on every command; clear errors for a process that is
# not running, an unknown command, table or process.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/ipsec-env.sh"

CTL=$KM_ROOT/build/bin/kmeshctl # a client: the plain build in both runs
ctl() { "$CTL" --map-writer-socket "$KM_SOCKET" --xds-socket "$KM_AGENT_SOCKET" \
	--ipsec-socket "$KM_DIR/ipsec.sock" --tunnel-socket "$KM_DIR/tunnel.sock" "$@"; }
# py_is FORMAT PYTHON-EXPR: the output on stdin, parsed (json or yaml) into d, makes EXPR true
py_is() {
	"$KM_PY" -c 'import json, sys
text = sys.stdin.read()
if sys.argv[1] == "json":
    d = json.loads(text)
else:
    import yaml
    d = yaml.safe_load(text)
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}
ctl_is() { # ctl_is FORMAT PYTHON-EXPR ARGS...: kmeshctl -o FORMAT ARGS, exit 0, output makes EXPR true
	local out
	out=$(ctl -o "$1" "${@:3}") || return 1
	py_is "$1" "$2" <<<"$out"
}

trap 'km_env_cleanup' EXIT
km_env_setup kmk$$
cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "web", "namespace": "t", "hostname": "web.t", "addresses": [{"address": "10.96.9.1"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}},
 {"workload": {"uid": "Kubernetes//Pod/t/b1", "name": "b1", "namespace": "t", "addresses": ["$KM_SUBNET.21"],
   "services": {"t/web.t": {}}}}
]}
JSON
km_pod_add client "$KM_SUBNET.10"
km_pod_add b1 "$KM_SUBNET.21"
km_backend_start b1 8080
km_wait_listen b1 8080 || exit 1
km_map_writer_start || exit 1
km_agent_start
key_file 1 17
start_agent --map-writer-socket ""
# the tunnel: no pod is enrolled through a CNI agent here, so it never calls its (absent) CA;
# its metrics in a subdirectory of the metrics directory, as its systemd unit has them
mkdir -p "$KM_DIR/metrics"
"$KM_BIN/kmesh-tunnel" --socket "$KM_DIR/tunnel.sock" --ca-address 127.0.0.1:1 \
	--metrics-dir "$KM_DIR/metrics/tunnel" >>"$KM_DIR/tunnel.log" 2>&1 &
TUNNEL=$!
KM_PIDS+=($TUNNEL)
for _ in $(seq 1 50); do [ -S "$KM_DIR/tunnel.sock" ] && break; sleep 0.1; done
km_wait_rows endpoint "^endpoint" 1 || true
VERSION=$("$CTL" --version | awk '{print $2}')

check "ready: the map writer and the xDS agent (synced, linked) are ready, exit 0" \
	ctl_is json '[(r["process"], r["ready"]) for r in d] == [("map-writer", True), ("xds-agent", True)]' ready --wait 10
check "ready ipsec-agent: it answers" ctl_is json 'd == [{"process": "ipsec-agent", "ready": True}]' ready ipsec-agent
out=$(ctl enroll "$(km_netns_path client)" --name t/client)
check "enroll NETNS: enrolled through the map writer (as the CNI plugin would), with its address" \
	eval 'grep -q "^enrolled $(km_netns_path client) (netns cookie [0-9]*, 1 addresses)$" <<<"$out"'
check "... and its connections to the VIP are balanced by the kernel" eval '[ "$(km_connect client 10.96.9.1 80)" = "1 b1" ]'
check "... the map writer logs the name given" grep -q "t/client" "$KM_DIR/map-writer.log"
check "unenroll -o json: the same facts, to parse (action, netns, cookie, addresses)" \
	ctl_is json 'd["action"] == "unenrolled" and d["netns"] == "'"$(km_netns_path client)"'" and d["netns_cookie"] > 0 and d["addresses"] == 0' unenroll "$(km_netns_path client)"
check "enroll -o yaml too" \
	ctl_is yaml 'd["action"] == "enrolled" and d["addresses"] == 1' enroll "$(km_netns_path client)" --name t/client
check "unenroll NETNS: out of the mesh again, the VIP is not rewritten" \
	eval 'ctl unenroll "$(km_netns_path client)" >/dev/null && [ "$(km_connect client 10.96.9.1 80 --timeout 1)" = "1 error:ENETUNREACH" ]'
out=$(ctl enroll /nonexistent/netns 2>&1)
rc=$?
check "enroll of a path that is no network namespace: exit 1, saying so" \
	eval '[ $rc = 1 ] && grep -q "cannot open network namespace /nonexistent/netns" <<<"$out"'
check "kmeshctl --help names every command" \
	eval 'out=$("$CTL" --help) && grep -q "^  version" <<<"$out" && grep -q "^  log" <<<"$out" && grep -q "^  dump" <<<"$out"'
check "... and each command has its own --help" \
	eval '"$CTL" version --help | grep -q "usage: kmeshctl version" && "$CTL" log --help | grep -q "usage: kmeshctl log" &&
	      "$CTL" dump --help | grep -q "usage: kmeshctl dump tables"'
check "version -o json: kmeshctl and the four processes, all of this build ($VERSION)" \
	ctl_is json '[r["process"] for r in d] == ["kmeshctl", "map-writer", "xds-agent", "ipsec-agent", "tunnel"] and all(r["version"] == "'"$VERSION"'" for r in d) and all(r["pid"] > 0 for r in d)' version
check "global options go after the command too, as in kubectl (version -o json, --output=yaml)" \
	eval 'ctl version -o json | py_is json "len(d) == 5" && ctl version --output=yaml | py_is yaml "len(d) == 5"'
check "... and after a command's own flags (waypoint generate -n ns -o json)" \
	eval '"$CTL" waypoint generate -n ns1 -o json | py_is json "d[\"kind\"] == \"Gateway\" and d[\"metadata\"][\"namespace\"] == \"ns1\""'
check "version -o yaml parses back the same" \
	ctl_is yaml 'len(d) == 5 and d[2]["process"] == "xds-agent" and d[2]["version"] == "'"$VERSION"'"' version
check "version as a table: a header and a row per process" \
	eval 'out=$(ctl version) && head -1 <<<"$out" | grep -q "^PROCESS *VERSION *PID *SOCKET" && [ "$(wc -l <<<"$out")" = 6 ]'

check "log: each process's level, and the programs' (bpf)" \
	ctl_is json '{r["process"]: r["level"] for r in d} == {"map-writer": "info", "bpf": "error", "xds-agent": "info", "ipsec-agent": "debug", "tunnel": "info"}' log
check "log --set bpf:debug sets the programs' level (the map writer keeps it)" \
	ctl_is json '[r["level"] for r in d if r["process"] == "bpf"] == ["debug"]' log --set bpf:debug
check "log --set xds-agent:debug changes it, and shows it" \
	ctl_is yaml '[r["level"] for r in d if r["process"] == "xds-agent"] == ["debug"]' log --set xds-agent:debug
check "... which the agent logs" logged "log level set to debug" "$KM_DIR/xds-agent.log"
check "log --set all:warn sets every process (not bpf)" \
	ctl_is json 'all(r["level"] == "warn" for r in d if r["process"] != "bpf")' log --set all:warn
out=$(ctl log --set nobody:debug 2>&1)
rc=$?
check "log --set of an unknown process: usage error (2), naming the known ones" \
	eval '[ $rc = 2 ] && grep -q "no process .nobody. (map-writer, xds-agent, ipsec-agent, tunnel, all, bpf)" <<<"$out"'
out=$(ctl log --set map-writer:loud 2>&1)
rc=$?
check "log --set of an unknown level: the process's refusal, exit 1" \
	eval '[ $rc = 1 ] && grep -q "BAD_REQUEST: unknown log level" <<<"$out"'

check "dump tables -o json: the VIP's frontend row, its address as text" \
	ctl_is json 'any(r["address"] == "10.96.9.1" and r["port"] == 80 and r["kind"] == "FRONTEND_KIND_SERVICE" for r in d["frontend"]) and len(d["endpoint"]) == 1 and d["stats"][0]["ops_applied"] > 0' dump tables
check "dump tables: a service's load-balancing mode by its name, not a number" \
	eval 'ctl_is json "d[\"service\"][0][\"lb_mode\"] == \"LB_MODE_RANDOM\"" dump tables --table service &&
	      ctl dump tables --table service | grep -q "LB_MODE_RANDOM"'
check "dump tables --table backend -o yaml: only that table (and the counters)" \
	ctl_is yaml 'sorted(d) == ["backend", "stats"] and d["backend"][0]["addresses"] == ["'"$KM_SUBNET.21"'"]' dump tables --table backend
check "dump tables as tables: a section per table" \
	eval 'out=$(ctl dump tables) && grep -q "^frontend:" <<<"$out" && grep -q "^ADDRESS *PORT *PROTOCOL *KIND" <<<"$out" && grep -q "^manage:" <<<"$out"'
out=$(ctl dump tables --table nosuch 2>&1)
rc=$?
check "dump of an unknown table: usage error, naming it" eval '[ $rc = 2 ] && grep -q "no table .nosuch." <<<"$out"'
check "dump xds -o json: the agent's whole state (a workload's tunnel protocol: NONE unless istiod says HBONE)" \
	ctl_is json '[s["name"] for s in d["model"]["service_list"]] == ["t/web.t"] and d["source"].startswith("file ") and [w["tunnel"] for w in d["model"]["workload_list"]] == ["NONE"]' dump xds
check "dump xds as tables: services and workloads" \
	eval 'out=$(ctl dump xds) && grep -q "^services:" <<<"$out" && grep -q "^workloads:" <<<"$out" && grep -q " t/web.t " <<<"$out"'
check "dump policies -o yaml: the compiled authorization (none here)" \
	ctl_is yaml 'd["compiled"] == [] and d["policies"] == 0' dump policies
check "the node's metrics page holds the IPsec agent's metrics too" \
	eval 'for _ in $(seq 1 30); do km_metrics_has "^kmesh_ipsec_current_spi 1" && break; sleep 0.1; done
	      km_metrics_has "^kmesh_ipsec_current_spi 1"'
check "dump ipsec -o json: the IPsec agent's key" \
	ctl_is json 'd["current_spi"] == 1 and d["node"] == "node-a"' dump ipsec
check "the node's metrics page holds the tunnel's too, from its own subdirectory" \
	eval 'for _ in $(seq 1 30); do km_metrics_has "^kmesh_tunnel_identities 0" && break; sleep 0.1; done
	      km_metrics_has "^kmesh_tunnel_identities 0"'
check "dump certs -o json: the tunnel's certificates and pods (none enrolled here), its trust domain" \
	ctl_is json 'd["certs"] == [] and d["pods"] == [] and d["trust_domain"] == "cluster.local"' dump certs
check "dump certs as a table: a section each for certificates and pods" \
	eval 'ctl dump certs | grep -q "^certificates" && ctl dump certs | grep -q "^pods"'

# every command that prints data, in both formats a script reads (the ones that need the
# Kubernetes API are in kmeshctl_kube_test.sh): parsed, and not empty
bad=
for cmd in "version" "ready" "log" "dump tables" "dump xds" "dump policies" "dump ipsec" \
	"dump certs" "monitoring status" "accesslog status" "authz status"; do
	for fmt in json yaml; do
		# shellcheck disable=SC2086 # the command's words
		ctl_is "$fmt" 'd is not None and len(d) > 0' $cmd || bad="$bad [$cmd -o $fmt]"
	done
done
check "every printing command's -o json and -o yaml parse, and say something${bad:+:$bad}" test -z "$bad"

kni() { # kni NAME BOOT-ID: a KmeshNodeInfo object
	echo '{"apiVersion": "kmesh.net/v1alpha1", "kind": "KmeshNodeInfo", "metadata": {"name": "'$1'",
	  "namespace": "kmesh-system"}, "spec": {"spi": 1, "addresses": ["10.0.0.2"], "bootID": "'$2'",
	  "podCIDRS": ["10.244.2.0/24"]}}'
}
BOOT=0f6b2c1e-1111-4a5b-9c3d-2e7f8a9b0c1d
check "inject ipsec-agent: a KmeshNodeInfo watch event (ADDED) makes a peer" \
	eval 'ctl inject ipsec-agent - <<<"{\"type\": \"ADDED\", \"object\": $(kni node-b $BOOT)}" >/dev/null &&
	      ctl_is json "[p[\"name\"] for p in d[\"peers\"]] == [\"node-b\"]" dump ipsec'
out=$(ctl inject ipsec-agent - <<<"$(kni node-c short)" 2>&1)
rc=$?
check "... a bad object is refused with the reason (exit 1)" eval '[ $rc = 1 ] && grep -q "BAD_REQUEST: node node-c: boot id .short. must be" <<<"$out"'
out=$(ctl inject ipsec-agent - <<<"$(kni node-a $BOOT)" 2>&1)
rc=$?
check "... and so is this node's own object" eval '[ $rc = 1 ] && grep -q "node-a is this node" <<<"$out"'
check "... a DELETED event removes the peer" \
	eval 'ctl inject ipsec-agent - <<<"{\"type\": \"DELETED\", \"object\": $(kni node-b $BOOT)}" >/dev/null &&
	      ctl_is json "d[\"peers\"] == []" dump ipsec'
out=$(ctl inject ipsec-agent - <<<"{\"type\": \"DELETED\", \"object\": $(kni node-b $BOOT)}" 2>&1)
rc=$?
check "... and one for a peer it does not have says so (exit 1)" \
	eval '[ $rc = 1 ] && grep -q "NOT_FOUND: no peer named node-b" <<<"$out"'
check "inject --help describes both agents' events" \
	eval '"$CTL" inject --help | grep -q "^  xds-agent" && "$CTL" inject --help | grep -q "^  ipsec-agent"'

kill -TERM "$AGENT"
wait "$AGENT" 2>/dev/null
check "a process not running: shown with why, the others still answer (exit 0)" \
	ctl_is json 'd[3]["process"] == "ipsec-agent" and "cannot reach kmesh-ipsec-agent at" in d[3]["error"] and d[1]["version"] == "'"$VERSION"'"' version
check "log --set all:info sets every process that runs (a node may have no IPsec agent)" \
	ctl_is json '[r["level"] for r in d if r["process"] != "bpf"][:2] == ["info", "info"] and "error" in d[3]' log --set all:info
out=$(ctl dump ipsec 2>&1)
rc=$?
check "... and a dump of it fails clearly (exit 1)" \
	eval '[ $rc = 1 ] && grep -q "cannot reach kmesh-ipsec-agent at $KM_DIR/ipsec.sock: No such file or directory" <<<"$out"'
out=$(ctl frobnicate 2>&1)
rc=$?
check "an unknown command: usage error (2)" eval '[ $rc = 2 ] && grep -q "unknown command .frobnicate." <<<"$out"'
out=$(ctl -o xml version 2>&1)
rc=$?
check "an unknown output format: usage error (2)" eval '[ $rc = 2 ] && grep -q -- "--output: .xml. is not table, json or yaml" <<<"$out"'
check "--output=yaml works as --output yaml" ctl_is yaml 'len(d) == 5' --output=yaml version

out=$(ctl ready ipsec-agent xds-agent 2>&1)
rc=$?
check "ready with the IPsec agent stopped: exit 1, with why; the agent still ready" \
	eval '[ $rc = 1 ] && grep -q "^ipsec-agent  *false  *cannot reach kmesh-ipsec-agent" <<<"$out" && grep -q "^xds-agent  *true" <<<"$out"'
kill -TERM "$KM_MW_PID"
wait "$KM_MW_PID" 2>/dev/null
began=$(date +%s%N)
out=$(ctl ready --wait 1.5 2>&1)
rc=$?
waited=$(( ($(date +%s%N) - began) / 1000000 ))
check "ready --wait 1.5 with the map writer stopped: asks until the time is up, then exit 1" \
	eval '[ $rc = 1 ] && [ $waited -ge 1400 ] && [ $waited -lt 5000 ]'
check "... the xDS agent is not ready without its link to the map writer" \
	eval 'grep -q "^xds-agent  *false  *not linked to the map writer" <<<"$out" && grep -q "^map-writer  *false  *cannot reach" <<<"$out"'
km_map_writer_start
check "ready --wait 30: ready again once the map writer is back and the agent relinked" ctl ready --wait 30
out=$(ctl ready --wait x 2>&1)
rc=$?
check "ready --wait with a bad number, or an unknown process: usage error (2)" \
	eval '[ $rc = 2 ] && grep -q -- "--wait takes 0 to 3600 seconds" <<<"$out" && { ctl ready nosuch >/dev/null 2>&1; [ $? = 2 ]; }'

km_check_summary kmeshctl
