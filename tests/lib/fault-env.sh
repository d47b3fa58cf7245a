# fault-env.sh — what the chaos and soak runs share (sourced after mesh-env.sh): steady clients
# by name, samples of a process's open files and resident memory, and the routing tables as one
# canonical text to compare against an expected state.

# km_steady_begin NAME POD HOST PORT RATE: new connections from POD to HOST:PORT at RATE per second
# until km_steady_end NAME (steady_client.py; each reads the backend's answer).
km_steady_begin() {
	rm -f "$KM_DIR/steady-$1.out"
	km_in_pod "$2" "$KM_PY" "$KM_ROOT/tests/lib/steady_client.py" "$3" "$4" --rate "$5" \
		--out "$KM_DIR/steady-$1.out" &
}

# km_steady_end NAME: stops it; sets STEADY_OK, STEADY_FAILED, STEADY_SECONDS, STEADY_DETAIL.
km_steady_end() {
	local out=$KM_DIR/steady-$1.out
	pkill -TERM -f "steady_client.py .*--out $out\$"
	for _ in $(seq 1 100); do [ -s "$out" ] && break; sleep 0.05; done
	STEADY_OK=0 STEADY_FAILED=1 STEADY_SECONDS=0 STEADY_DETAIL="no report from the client"
	[ -s "$out" ] && read -r _ STEADY_OK _ STEADY_FAILED _ STEADY_SECONDS STEADY_DETAIL <"$out"
	STEADY_DETAIL=${STEADY_DETAIL:-}
}

# km_proc_fds PID / km_proc_rss_kb PID: open file descriptors; resident set in kB (VmRSS).
km_proc_fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
km_proc_rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }

# km_tables: every routing, enrollment and IPsec row of the map writer, sorted; statistics and
# counters left out, so two dumps of the same mesh compare equal.
km_tables() {
	local t
	for t in manage frontend service endpoint backend port_override ipsec_peer ipsec_cidr; do
		"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table "$t" 2>/dev/null | grep -v '^stats'
	done | sort
}

# km_tables_converge EXPECTED SECONDS: until km_tables prints EXPECTED; sets CONVERGED_MS (the
# time it took) or prints the difference and fails.
km_tables_converge() {
	local start now got
	start=$(date +%s%N)
	while :; do
		got=$(km_tables)
		now=$(date +%s%N)
		if [ "$got" = "$1" ]; then
			CONVERGED_MS=$(((now - start) / 1000000))
			return 0
		fi
		[ $(((now - start) / 1000000000)) -ge "$2" ] && break
		sleep 0.1
	done
	CONVERGED_MS=-1
	echo "tables did not converge in $2 s; expected (<) vs. found (>):" >&2
	diff <(echo "$1") <(echo "$got") | head -n 20 >&2
	return 1
}

# km_json_workload NAME IP SERVICE / km_json_service NAME VIP: Address resources in namespace
# "chaos" (the kmesh JSON mapping the fake istiod takes), service port 80 to target port 8080.
km_json_workload() {
	printf '{"workload": {"uid": "Kubernetes//Pod/chaos/%s", "name": "%s", "namespace": "chaos", "addresses": ["%s"], "services": {"chaos/%s.chaos": {"ports": [{"servicePort": 80, "targetPort": 8080}]}}}}' "$1" "$1" "$2" "$3"
}
km_json_service() {
	printf '{"service": {"name": "%s", "namespace": "chaos", "hostname": "%s.chaos", "addresses": [{"address": "%s"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}}' "$1" "$1" "$2"
}

# km_istiod_state FILE: make the state file ({"resources": [...], "policies": [...]}) the fake
# istiod's whole state; the file is also what a restarted istiod starts from.
km_istiod_state() {
	"$KM_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({"cmd": "set", "resources": s["resources"]}))
print(json.dumps({"cmd": "set-authz", "policies": s.get("policies", [])}))' "$1" |
		while read -r cmd; do km_istiod send "$cmd" >/dev/null; done
}

# km_istiod_restartable [fake_istiod.py options]: the fake istiod from $KM_DIR/mesh-state.json,
# on the port it had before (if any); sets ISTIOD_PID. km_istiod_kill kills it (-9).
km_istiod_restartable() {
	rm -f "$KM_DIR/istiod.port"
	km_istiod_start --state "$KM_DIR/mesh-state.json" ${KM_ISTIOD_PORT:+--port "$KM_ISTIOD_PORT"} "$@"
	ISTIOD_PID=${KM_PIDS[-1]}
	for _ in $(seq 1 100); do [ -S "$KM_ISTIOD_CTL" ] && break; sleep 0.05; done
}
km_istiod_kill() { kill -9 "$ISTIOD_PID"; wait "$ISTIOD_PID" 2>/dev/null; }
