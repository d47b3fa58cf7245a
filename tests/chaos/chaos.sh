#!/usr/bin/env bash
# chaos.sh — `make chaos`: faults under steady traffic. Two enrolled pods open new connections
# through two service VIPs (200/s and 100/s) while, one fault at a time:
#   - each process is killed -9 and started again: the map writer, the xDS agent, the IPsec
#     agent, the CNI installer (round 1 only, so the survivors can be watched for growth);
#   - the fake istiod is killed and restarted (drop), rotates connections with GOAWAY, and holds
#     its first response on a new stream for 5 s (slow);
#   - the primary CNI rewrites the conflist (the installer must chain the plugin again, and a pod
#     added through the chain afterwards is enrolled);
#   - the IPsec key is rotated through its key file;
#   - the backend table is filled past its capacity, then the mesh shrinks back.
# After each fault: no connection failed, and the map writer's tables converged back to the
# expected state (the time it took is reported). Across the rounds that kill nothing, no
# process's open files or resident memory may grow. A report goes to CHAOS_REPORT
# (docs/chaos.md; build/chaos-quick.md with --quick).
#   --quick          the subset `make test` runs (about 90 s): round 1 and two short rounds
#   CHAOS_ROUNDS=N   rounds without kills after round 1 (default 6)
#   CHAOS_FAULTS="istiod_slow table_full" CHAOS_KILLS=""   only these faults (to chase one)
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/ipsec-env.sh"
source "$(dirname "$0")/../lib/fault-env.sh"
[ "$(id -u)" -eq 0 ] || { echo "make chaos needs root (namespaces, cgroups, BPF)" >&2; exit 1; }

QUICK=0
declare -A LAST_FDS LAST_RSS BASE_FDS BASE_RSS
[ "${1:-}" = --quick ] && QUICK=1
if [ $QUICK = 1 ]; then
	ROUNDS=${CHAOS_ROUNDS:-2} HOLD=2 REPORT=${CHAOS_REPORT:-$KM_ROOT/build/chaos-quick.md}
else
	ROUNDS=${CHAOS_ROUNDS:-6} HOLD=5 REPORT=${CHAOS_REPORT:-$KM_ROOT/docs/chaos.md}
fi
WEB=10.96.9.1 API=10.96.9.2 BIG=10.96.9.3
MAX_BACKENDS=64
S=$KM_SUBNET
CTL=$KM_ROOT/build/bin/kmeshctl
START=$(date +%s)
[ "$ROUNDS" -ge 2 ] || { echo "CHAOS_ROUNDS must be 2 or more (growth is compared across them)" >&2; exit 2; }

# ---- the mesh: services web (b1-b3) and api (b4, b5), one DENY policy ----------------------------
mesh_json() { # mesh_json [EXTRA]: the mesh, with EXTRA more workloads in service big
	local i
	echo '{"resources": ['
	km_json_service web $WEB; echo ,; km_json_service api $API; echo ,; km_json_service big $BIG
	for i in 1 2 3; do echo ,; km_json_workload b$i "$S.2$i" web; done
	for i in 4 5; do echo ,; km_json_workload b$i "$S.2$i" api; done
	for i in $(seq 1 "${1:-0}"); do echo ,; km_json_workload "x$i" "10.77.$((i / 250)).$((i % 250 + 1))" big; done
	echo '], "policies": [{"name": "no-9999", "namespace": "chaos", "scope": "NAMESPACE",
	  "action": "DENY", "rules": [{"clauses": [{"matches": [{"destinationPorts": [9999]}]}]}]}]}'
}
istiod_set() { # istiod_set [EXTRA]: the fake istiod's whole state, and its --state file
	mesh_json "$@" >"$KM_DIR/mesh-state.json"
	km_istiod_state "$KM_DIR/mesh-state.json"
}

# ---- the processes -----------------------------------------------------------------------------
mw_start() { km_map_writer_start --max-backends $MAX_BACKENDS; }
agent_start() { km_agent_start_xds --log-level info; }
ipsec_start() { start_agent --kubeconfig "$KM_DIR/kubeconfig" --kube-resync 600 --log-level info; }
installer_start() { # the node's CNI agent, in the node's namespace (where the API listens)
	ip netns exec "$KM_NODE" env KUBERNETES_SERVICE_HOST=127.0.0.1 \
		KUBERNETES_SERVICE_PORT="$KM_KUBE_PORT" KMESH_SERVICE_ACCOUNT_DIR="$CNI/sa" \
		"$KM_BIN/kmesh-cni-agent" install --cni-bin-dir "$CNI/bin" --cni-conf-dir "$CNI/net.d" \
		--plugin-binary "$KM_BIN/kmesh-cni" --node-name node-1 --map-writer-socket "$KM_SOCKET" \
		--state-dir "$CNI/state" --resync-seconds 600 >>"$KM_DIR/installer.log" 2>&1 &
	INSTALLER=$!
	KM_PIDS+=($INSTALLER)
}
ctl() { "$CTL" --map-writer-socket "$KM_SOCKET" --xds-socket "$KM_AGENT_SOCKET" "$@"; }
agent_synced() { ctl ready --wait 15 xds-agent >/dev/null 2>&1; }
kill9() { kill -9 "$1"; wait "$1" 2>/dev/null; }

# ---- CNI: the primary's conflist (Debian's bridge + host-local) and a chain run as a runtime does
plugins_of() {
	"$KM_PY" -c 'import json, sys
try: print(",".join(p["type"] for p in json.load(open(sys.argv[1]))["plugins"]))
except Exception: print("invalid")' "$CONFLIST"
}
chained() { # chained SECONDS: the conflist ends with kmesh-cni within SECONDS
	for _ in $(seq 1 $(($1 * 20))); do [ "$(plugins_of)" = bridge,kmesh-cni ] && return 0; sleep 0.05; done
	return 1
}
chain() { # chain ADD|DEL POD
	ip netns exec "$KM_NODE" "$KM_PY" "$KM_ROOT/tests/lib/cni_chain.py" "$1" --conflist "$CONFLIST" \
		--cni-path "$CNI/bin:/usr/lib/cni" --cache "$CNI/cache" --container-id "ctr-$2" \
		--netns "/run/netns/$KM_PREFIX-$2" --pod-namespace mesh --pod-name "$2"
}
manage_rows() { "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table manage | grep -c '^manage'; }

# ---- the faults (each returns non-zero, saying why, when its own effect is not seen) ------------
fault_kill_map_writer() { kill9 "$KM_MW_PID"; mw_start && agent_synced; }
fault_kill_xds_agent() { kill9 "$KM_AGENT_PID"; agent_start; agent_synced; }
fault_kill_ipsec_agent() {
	kill9 "$AGENT"
	ipsec_start
	dump_is "d['current_spi'] == $SPI and [p['name'] for p in d['peers']] == ['node-b']" ||
		{ echo "the restarted IPsec agent did not take SPI $SPI and peer node-b again" >&2; return 1; }
}
fault_kill_cni_installer() {
	kill9 "$INSTALLER"
	installer_start
	sleep 1
	kill -0 "$INSTALLER" 2>/dev/null || { echo "the restarted CNI agent exited" >&2; return 1; }
	chained 1 || { echo "the restarted installer left the conflist unchained" >&2; return 1; }
}
fault_istiod_drop() {
	km_istiod_kill
	sleep "$HOLD" # istiod away: the agent keeps what it has and retries
	km_istiod_restartable || return 1
	km_istiod wait 'any(s["open"] for s in s["streams"])' 15 >/dev/null ||
		{ echo "the agent did not come back to the restarted istiod" >&2; return 1; }
}
fault_istiod_goaway() {
	local streams
	km_istiod_kill
	km_istiod_restartable --max-connection-age-ms 1000 || return 1
	# each GOAWAY ends a connection: the agent must open a stream on each new one
	km_istiod wait 'len(s["streams"]) >= 3' 15 >/dev/null
	streams=$(km_istiod query 'len(s["streams"])')
	km_istiod_kill
	km_istiod_restartable || return 1
	km_istiod wait 'any(s["open"] for s in s["streams"])' 15 >/dev/null || return 1
	[ "${streams:-0}" -ge 3 ] ||
		{ echo "expected 3 or more streams within 15 s of GOAWAYs, the agent opened ${streams:-0}" >&2; return 1; }
	NOTE="$streams streams, each ended by GOAWAY"
}
fault_istiod_slow() {
	local streams released
	streams=$(km_istiod query 'len(s["streams"])')
	km_istiod send '{"cmd": "hold", "on": true}' >/dev/null
	km_istiod send '{"cmd": "end-stream", "code": 14, "message": "chaos"}' >/dev/null
	# the agent opens a new stream, whose first response waits; the tables must not change
	km_istiod wait "len(s['streams']) > $streams and s['streams'][-1]['open']" 10 >/dev/null ||
		{ echo "the agent opened no new stream" >&2; km_istiod send '{"cmd": "hold", "on": false}' >/dev/null; return 1; }
	sleep "$HOLD"
	[ "$(km_tables)" = "$EXPECTED" ] ||
		{ echo "the tables changed while istiod was slow" >&2; km_istiod send '{"cmd": "hold", "on": false}' >/dev/null; return 1; }
	released=$(km_istiod send '{"cmd": "hold", "on": false}' | "$KM_PY" -c 'import json, sys; print(json.load(sys.stdin)["released"])')
	[ "${released:-0}" -ge 1 ] || { echo "no first response was held back" >&2; return 1; }
	agent_synced
	NOTE="first responses held $HOLD s on a new stream"
}
fault_cni_conflist() {
	local before
	cat "$KM_DIR/primary.conflist" >"$CONFLIST" # in place, as some primaries do
	chained 2 || { echo "the installer did not chain the plugin again within 2 s" >&2; return 1; }
	before=$(manage_rows)
	ip netns add "$KM_PREFIX-cx"
	KM_PODS+=("$KM_PREFIX-cx") # removed below; listed so an abort removes it too
	chain ADD cx >"$KM_DIR/cx.result" 2>"$KM_DIR/cx.err" ||
		{ echo "ADD through the chain failed: $(cat "$KM_DIR/cx.err")" >&2; ip netns del "$KM_PREFIX-cx"; return 1; }
	local added=$(($(manage_rows) - before))
	chain DEL cx >/dev/null 2>&1
	ip netns del "$KM_PREFIX-cx"
	[ $added -eq 1 ] || { echo "the pod added through the chain was not enrolled" >&2; return 1; }
}
fault_ipsec_rotate() { # a new SPI through the key file; advertised once its ingress is in place
	SPI=$((SPI + 1))
	key_file "$SPI" $((16 + SPI))
	dump_is "d['current_spi'] == $SPI" || { echo "the IPsec agent did not load SPI $SPI" >&2; return 1; }
	for _ in $(seq 1 60); do
		says "\"spi\": $SPI," api GET "$KNI/node-a" && { NOTE="SPI $SPI advertised"; return 0; }
		# a kernel without ESP (this one) refuses the ingress state: the agent must say so and
		# keep advertising the SPI peers can use
		grep -qF "SPI $SPI is not advertised: not every peer's ingress state is in place (state 10.0.0.2 -> 10.0.0.1 spi $SPI: Function not implemented)" "$KM_DIR/ipsec.log" &&
			{ NOTE="SPI $SPI loaded; the kernel (no ESP) refused its state, reported"; return 0; }
		sleep 0.05
	done
	echo "SPI $SPI: neither advertised in this node's KmeshNodeInfo nor a refusal reported" >&2
	return 1
}
fault_table_full() {
	local before
	before=$(grep -c 'refused the rest: TABLE_FULL' "$KM_DIR/xds-agent.log")
	istiod_set $((MAX_BACKENDS + 16))
	km_wait_rows backend "^backend" $MAX_BACKENDS >/dev/null ||
		{ echo "km_backend did not fill to its $MAX_BACKENDS rows" >&2; istiod_set; return 1; }
	for _ in $(seq 1 50); do
		[ "$(grep -c 'refused the rest: TABLE_FULL' "$KM_DIR/xds-agent.log")" -gt "$before" ] && break
		sleep 0.1
	done
	istiod_set # the mesh shrinks back; the tables must converge to the expected state
	[ "$(grep -c 'refused the rest: TABLE_FULL' "$KM_DIR/xds-agent.log")" -gt "$before" ] ||
		{ echo "the agent did not report TABLE_FULL" >&2; return 1; }
	NOTE="km_backend full at $MAX_BACKENDS rows, TABLE_FULL reported; then shrunk back"
}

# ---- one fault under traffic --------------------------------------------------------------------
ROWS=()
TOTAL_OK=0 TOTAL_FAILED=0
under_traffic() { # under_traffic ROUND NAME: the fault function fault_NAME under steady traffic
	local round=$1 name=$2 rc conv web_ok web_failed api_ok api_failed detail secs rate
	km_steady_begin web client $WEB 80 200
	km_steady_begin api client2 $API 80 100
	sleep 1
	NOTE=
	"fault_$name" 2>"$KM_DIR/fault.err"
	rc=$?
	km_tables_converge "$EXPECTED" 20 2>>"$KM_DIR/fault.err"
	conv=$([ $? -eq 0 ] && echo "$CONVERGED_MS" || echo "no")
	sleep 1
	km_steady_end web
	web_ok=$STEADY_OK web_failed=$STEADY_FAILED detail=$STEADY_DETAIL secs=$STEADY_SECONDS
	km_steady_end api
	api_ok=$STEADY_OK api_failed=$STEADY_FAILED detail="$detail $STEADY_DETAIL"
	rate=$(awk -v n=$((web_ok + api_ok)) -v t="$secs" 'BEGIN {printf "%d", (t > 0 ? n / t : 0)}')
	TOTAL_OK=$((TOTAL_OK + web_ok + api_ok)) TOTAL_FAILED=$((TOTAL_FAILED + web_failed + api_failed))
	check "round $round, $name: the fault took effect$( [ -s "$KM_DIR/fault.err" ] && echo " ($(tr '\n' ' ' <"$KM_DIR/fault.err"))")" test $rc -eq 0
	check "round $round, $name: 0 of $((web_ok + web_failed + api_ok + api_failed)) connections failed ($((web_failed + api_failed)) ${detail// /})" \
		test $((web_failed + api_failed)) -eq 0
	# 0 failures prove nothing if the clients stalled: at least 200 succeeded per second
	check "round $round, $name: >= 200 connections/s throughout ($rate/s over $secs s)" test "$rate" -ge 200
	check "round $round, $name: the tables converged back (${conv} ms after the fault)" test "$conv" != no
	ROWS+=("| $round | $name | $((web_ok + api_ok)) | $((web_failed + api_failed)) | $conv | ${NOTE:-} |")
}

# ---- samples of the long-lived processes --------------------------------------------------------
SAMPLES=()
sample() { # sample ROUND: open files and resident kB of each daemon
	local p pid fds rss line="| $1 |"
	for p in map-writer:$KM_MW_PID xds-agent:$KM_AGENT_PID ipsec-agent:$AGENT cni-installer:$INSTALLER; do
		pid=${p#*:}
		if ! fds=$(km_proc_fds "$pid") || ! rss=$(km_proc_rss_kb "$pid"); then
			check "${p%%:*} is still running at the end of round $1" false
			fds=999999 rss=999999999
		fi
		line+=" $fds / $((rss / 1024)).$(((rss % 1024) * 10 / 1024)) |"
		LAST_FDS[${p%%:*}]=$fds LAST_RSS[${p%%:*}]=$rss
	done
	SAMPLES+=("$line")
}

# ---- set up ------------------------------------------------------------------------------------
cleanup() { km_env_cleanup; }
trap cleanup EXIT
km_env_setup kmx$$
km_make_pki
echo t1 >"$KM_DIR/token"
chmod 644 "$KM_DIR/token"
km_pod_add client "$S.10"
km_pod_add client2 "$S.11"
for i in 1 2 3 4 5; do km_pod_add "b$i" "$S.2$i"; km_backend_start "b$i" 8080; done
for i in 1 2 3 4 5; do km_wait_listen "b$i" 8080 || exit 1; done

# the Kubernetes API: the CNI plugin's namespace and pod, and the IPsec agents' KmeshNodeInfos
KNI=/apis/kmesh.net/v1alpha1/namespaces/kmesh-system/kmeshnodeinfos
echo '{"namespaces": {"mesh": {"labels": {"istio.io/dataplane-mode": "Kmesh"}}}, "pods": {"mesh/cx": {}}}' >"$KM_DIR/kube.json"
km_kube_api_start "$KM_DIR/kube.json" tok-x
km_kubeconfig_write tok-x
api() { # api METHOD PATH [BODY]
	ip netns exec "$KM_NODE" curl -sk --max-time 5 -X "$1" -H "Authorization: Bearer tok-x" \
		-H "Content-Type: application/json" ${3:+--data "$3"} "https://127.0.0.1:$KM_KUBE_PORT$2"
}
api POST "$KNI" '{"apiVersion": "kmesh.net/v1alpha1", "kind": "KmeshNodeInfo", "metadata": {"name": "node-b", "namespace": "kmesh-system"}, "spec": {"spi": 1, "addresses": ["10.0.0.2"], "bootID": "'"$KM_BOOT_B"'", "podCIDRS": ["10.244.2.0/24"]}}' >/dev/null

CNI=$KM_DIR/cni
CONFLIST=$CNI/net.d/10-chaos.conflist
mkdir -p "$CNI/bin" "$CNI/net.d" "$CNI/sa" "$CNI/cache" "$CNI/state"
cp "$KM_DIR/pki/ca.pem" "$CNI/sa/ca.crt"
echo tok-x >"$CNI/sa/token"
cat >"$CONFLIST" <<JSON
{"cniVersion": "1.0.0", "name": "chaos",
 "plugins": [{"type": "bridge", "bridge": "cni0", "isGateway": true,
              "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.124.0.0/24"}]],
                       "dataDir": "$CNI/ipam"}}]}
JSON
cp "$CONFLIST" "$KM_DIR/primary.conflist"

mesh_json >"$KM_DIR/mesh-state.json"
km_istiod_restartable
mw_start || exit 1
agent_start
SPI=1
key_file $SPI 17
ipsec_start
installer_start
for p in client client2; do
	"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path $p)" --pod "chaos/$p" >/dev/null
done
check "set up: the agent synced from istiod" agent_synced
check "set up: the IPsec agent took SPI 1 and peer node-b" dump_is "d['current_spi'] == 1 and [p['name'] for p in d['peers']] == ['node-b']"
check "set up: the installer chained the plugin" chained 5
km_wait_rows endpoint '^endpoint' 5 >/dev/null
km_wait_rows ipsec_peer '^ipsec_peer' 1 >/dev/null
km_wait_rows ipsec_cidr '^ipsec_cidr' 1 >/dev/null
EXPECTED=$(km_tables)
check "set up: the expected state has 5 endpoints, 2 enrolled pods and the IPsec peer" \
	eval '[ "$(grep -c "^endpoint" <<<"$EXPECTED")" = 5 ] && [ "$(grep -c "^manage" <<<"$EXPECTED")" = 2 ] &&
	      [ "$(grep -c "^ipsec_peer" <<<"$EXPECTED")" = 1 ]'
[ $KM_FAIL -eq 0 ] || { km_dump_logs map-writer xds-agent ipsec installer istiod; exit 1; }

# ---- round 1: every process killed in turn, then every other fault ----------------------------
FAULTS=${CHAOS_FAULTS:-istiod_drop istiod_goaway istiod_slow cni_conflist ipsec_rotate table_full}
KILLS=${CHAOS_KILLS-kill_map_writer kill_xds_agent kill_ipsec_agent kill_cni_installer}
for f in $KILLS $FAULTS; do
	under_traffic 1 "$f"
done
sample 1
# ---- rounds 2..: nothing killed, so growth shows ------------------------------------------------
for r in $(seq 2 $((ROUNDS + 1))); do
	for f in $FAULTS; do under_traffic "$r" "$f"; done
	sample "$r"
	[ "$r" = 2 ] && for k in "${!LAST_FDS[@]}"; do BASE_FDS[$k]=${LAST_FDS[$k]} BASE_RSS[$k]=${LAST_RSS[$k]}; done
done
# growth from the end of round 2 (warm: every path has run once with these processes) to the end
for k in map-writer xds-agent ipsec-agent cni-installer; do
	fd_growth=$((LAST_FDS[$k] - BASE_FDS[$k]))
	rss_growth=$((LAST_RSS[$k] - BASE_RSS[$k]))
	check "$k: no open-file growth over rounds 2-$((ROUNDS + 1)) (${BASE_FDS[$k]} -> ${LAST_FDS[$k]})" test $fd_growth -le 0
	check "$k: resident memory within 512 kB over rounds 2-$((ROUNDS + 1)) (${BASE_RSS[$k]} -> ${LAST_RSS[$k]} kB)" \
		test $rss_growth -le 512
done
ELAPSED=$(($(date +%s) - START))

{
	echo "# Chaos"
	echo
	echo "Regenerated by \`make chaos\` (\`tests/chaos/chaos.sh$([ $QUICK = 1 ] && echo ' --quick')\`, $ROUNDS rounds after round 1); \`make test\`"
	echo "runs \`--quick\`. Two enrolled pods open new connections through two service VIPs, 200/s"
	echo "and 100/s, while one fault at a time is made; after each, the map writer's tables must"
	echo "converge back to the expected state and no connection may have failed. Round 1 also"
	echo "kills each process (-9) and starts it again; the later rounds kill nothing, so the"
	echo "processes' open files and memory can be compared across them."
	echo
	echo "- machine: $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); kernel $(uname -r)"
	echo "- commit: $(git -C "$KM_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "- date: $(date -u +%Y-%m-%d); took $ELAPSED s"
	echo "- result: $TOTAL_OK connections succeeded, $TOTAL_FAILED failed; $KM_PASS checks passed, $KM_FAIL failed"
	echo
	echo "| round | fault | connections ok | failed | tables converged (ms after the fault's own wait) | note |"
	echo "|---|---|---:|---:|---:|---|"
	printf '%s\n' "${ROWS[@]}"
	echo
	echo "Open files / resident MB of each daemon at the end of each round (round 1 restarted them all):"
	echo
	echo "| round | map writer | xDS agent | IPsec agent | CNI installer |"
	echo "|---|---|---|---|---|"
	printf '%s\n' "${SAMPLES[@]}"
} >"$REPORT"
echo "report: $REPORT (took $ELAPSED s)"
[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer xds-agent ipsec installer istiod
km_check_summary chaos
