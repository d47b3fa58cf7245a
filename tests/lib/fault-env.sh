# fault-env.sh — what the chaos and soak runs share (sourced after mesh-env.sh): steady clients
# by name, samples of a process's open files and resident memory, and the routing tables as one
# canonical text to compare against an expected state.

# km_steady_begin NAME POD HOST PORT RATE [SECONDS]: new connections from POD to HOST:PORT at RATE
# per second until km_steady_end NAME or SECONDS (default 600) pass (steady_client.py; each
# reads the backend's answer).
declare -A KM_STEADY_PIDS
km_steady_begin() {
	rm -f "$KM_DIR/steady-$1.out"
	km_in_pod "$2" "$KM_PY" "$KM_ROOT/tests/lib/steady_client.py" "$3" "$4" --rate "$5" \
		--duration "${6:-600}" --out "$KM_DIR/steady-$1.out" &
	KM_STEADY_PIDS[$1]=$!
	KM_PIDS+=($!)
}

# km_steady_end NAME: stops it; sets STEADY_OK, STEADY_FAILED, STEADY_SECONDS, STEADY_DETAIL.
km_steady_end() {
	local out=$KM_DIR/steady-$1.out
	# the PID kept is the background subshell running km_in_pod; the client is its child
	pkill -TERM -f "steady_client.py .*--out $out\$"
	wait "${KM_STEADY_PIDS[$1]}" 2>/dev/null
	STEADY_OK=0 STEADY_FAILED=1 STEADY_SECONDS=0 STEADY_DETAIL="no report from the client"
	[ -s "$out" ] && read -r _ STEADY_OK _ STEADY_FAILED _ STEADY_SECONDS STEADY_DETAIL <"$out"
	STEADY_DETAIL=${STEADY_DETAIL:-}
}

# km_proc_fds PID / km_proc_rss_kb PID: open file descriptors (the least of three looks 0.2 s
# apart, so a descriptor open for a moment, a metrics write or an admin call, does not count);
# resident set in kB (VmRSS). Both fail for a process that is gone.
km_proc_fds() {
	local i n min=
	for i in 1 2 3; do
		n=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
		[ "$n" -gt 0 ] || return 1
		[ -z "$min" ] || [ "$n" -lt "$min" ] && min=$n
		[ $i = 3 ] || sleep 0.2
	done
	echo "$min"
}
km_proc_rss_kb() { awk '/^VmRSS:/ {print $2; found = 1} END {exit !found}' "/proc/$1/status" 2>/dev/null; }

# km_tables: every routing, enrollment and IPsec row of the map writer, sorted; statistics and
# counters left out, and where each service's endpoints sit in km_slot (placement, which moves),
# so two dumps of the same mesh compare equal.
km_tables() {
	local t
	for t in manage frontend service endpoint backend port_override ipsec_peer ipsec_cidr; do
		"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table "$t" 2>/dev/null | grep -v '^stats'
	done | sed 's/ slots [-0-9 ]*$//' | sort # where a service's endpoints sit in km_slot may move
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
	local cmd answer
	"$KM_PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({"cmd": "set", "resources": s["resources"]}))
print(json.dumps({"cmd": "set-authz", "policies": s.get("policies", [])}))' "$1" |
		while read -r cmd; do
			answer=$(km_istiod send "$cmd") && ! grep -q '"error"' <<<"$answer" ||
				{ echo "the fake istiod refused the state: $answer" >&2; return 1; }
		done
}

# km_istiod_restartable [fake_istiod.py options]: the fake istiod from $KM_DIR/mesh-state.json,
# on the port it had before (if any); sets ISTIOD_PID. Fails, saying why, if it did not come up
# on that port. km_istiod_kill kills it (-9).
km_istiod_restartable() {
	local want=${KM_ISTIOD_PORT:-}
	rm -f "$KM_DIR/istiod.port" "$KM_DIR/istiod.ctl"
	km_istiod_start --state "$KM_DIR/mesh-state.json" ${want:+--port "$want"} "$@"
	ISTIOD_PID=${KM_PIDS[-1]}
	for _ in $(seq 1 100); do [ -S "$KM_DIR/istiod.ctl" ] && break; sleep 0.05; done
	if ! kill -0 "$ISTIOD_PID" 2>/dev/null || [ ! -S "$KM_DIR/istiod.ctl" ] ||
		[ -z "$KM_ISTIOD_PORT" ] || { [ -n "$want" ] && [ "$KM_ISTIOD_PORT" != "$want" ]; }; then
		echo "the fake istiod did not come up${want:+ on port $want}:" >&2
		tail -n 5 "$KM_DIR/istiod.log" >&2
		KM_ISTIOD_PORT=$want
		return 1
	fi
}
km_istiod_kill() { kill -9 "$ISTIOD_PID"; wait "$ISTIOD_PID" 2>/dev/null; }
