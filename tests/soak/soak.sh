#!/usr/bin/env bash
# soak.sh — `make soak`: steady churn for SOAK_MINUTES (default 25; with set-up and the final
# checks the run stays under 30 minutes). Two enrolled pods open new connections through two
# service VIPs (200/s and 100/s) the whole time, while every SOAK_STEP seconds (default 2) the
# fake istiod changes the mesh:
#   - a block of CHURN (default 200) workloads of service "churn" is replaced by new ones (new
#     uids, new addresses), so rows are written and removed all the time;
#   - backend b3 leaves and rejoins service web (under traffic);
#   - a DENY policy is added and removed;
# and two pods are enrolled and unenrolled, as pods come and go. The map writer's and the xDS
# agent's open files and resident memory are sampled every SOAK_SAMPLE seconds (default 30).
# Pass: no connection failed; the tables end equal to the final mesh; open files end where they
# were after the warm-up (the first fifth of the run); resident memory grows by at most 1 MB
# from the warm-up to the end. A report goes to SOAK_REPORT (docs/soak.md).
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/fault-env.sh"
[ "$(id -u)" -eq 0 ] || { echo "make soak needs root (namespaces, cgroups, BPF)" >&2; exit 1; }

MINUTES=${SOAK_MINUTES:-25}
STEP=${SOAK_STEP:-2}
SAMPLE=${SOAK_SAMPLE:-30}
CHURN=${SOAK_CHURN:-200}
REPORT=${SOAK_REPORT:-$KM_ROOT/docs/soak.md}
[ "$MINUTES" -ge 1 ] && [ "$MINUTES" -le 28 ] || { echo "SOAK_MINUTES must be 1 to 28" >&2; exit 2; }
WEB=10.96.9.1 API=10.96.9.2 CHURN_VIP=10.96.9.4
S=$KM_SUBNET

mesh_json() { # mesh_json GENERATION: the mesh at this step of the churn
	local g=$1 i base
	echo '{"resources": ['
	km_json_service web $WEB; echo ,; km_json_service api $API; echo ,; km_json_service churn $CHURN_VIP
	for i in 1 2; do echo ,; km_json_workload b$i "$S.2$i" web; done
	[ $((g % 2)) = 0 ] && { echo ,; km_json_workload b3 "$S.23" web; } # b3 leaves on odd steps
	for i in 4 5; do echo ,; km_json_workload b$i "$S.2$i" api; done
	base=$(((g % 50) * CHURN)) # addresses cycle through 50 blocks; uids never repeat
	for i in $(seq 0 $((CHURN - 1))); do
		echo ,; km_json_workload "g$g-$i" "10.78.$(((base + i) / 250 % 250)).$(((base + i) % 250 + 1))" churn
	done
	echo '], "policies": ['
	[ $((g % 3)) = 0 ] && echo '{"name": "no-9999", "namespace": "chaos", "scope": "NAMESPACE",
	  "action": "DENY", "rules": [{"clauses": [{"matches": [{"destinationPorts": [9999]}]}]}]}'
	echo ']}'
}

trap km_env_cleanup EXIT
km_env_setup kms$$
km_make_pki
echo t1 >"$KM_DIR/token"
chmod 644 "$KM_DIR/token"
km_pod_add client "$S.10"
km_pod_add client2 "$S.11"
km_pod_add p1 "$S.12"
km_pod_add p2 "$S.13"
for i in 1 2 3 4 5; do km_pod_add "b$i" "$S.2$i"; km_backend_start "b$i" 8080; done
for i in 1 2 3 4 5; do km_wait_listen "b$i" 8080 || exit 1; done
mesh_json 0 >"$KM_DIR/mesh-state.json"
km_istiod_restartable
km_map_writer_start || exit 1
km_agent_start_xds --log-level warn
for p in client client2; do
	"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path $p)" --pod "chaos/$p" >/dev/null
done
CTL=$KM_ROOT/build/bin/kmeshctl
"$CTL" --map-writer-socket "$KM_SOCKET" --xds-socket "$KM_AGENT_SOCKET" ready --wait 20 >/dev/null ||
	{ echo "the mesh did not come up" >&2; km_dump_logs map-writer xds-agent; exit 1; }

km_steady_begin web client $WEB 80 200 $((MINUTES * 60 + 120))
km_steady_begin api client2 $API 80 100 $((MINUTES * 60 + 120))
START=$(date +%s)
END=$((START + MINUTES * 60))
WARM=$((START + MINUTES * 12)) # a fifth of the run
g=0 next_sample=$START step_failures=0
declare -a SAMPLES
base_mw_fds= base_ag_fds= base_mw_rss= base_ag_rss=
while [ "$(date +%s)" -lt $END ]; do
	now=$(date +%s)
	if [ "$now" -ge $next_sample ]; then
		mw_fds=$(km_proc_fds "$KM_MW_PID") ag_fds=$(km_proc_fds "$KM_AGENT_PID") || break
		mw_rss=$(km_proc_rss_kb "$KM_MW_PID") ag_rss=$(km_proc_rss_kb "$KM_AGENT_PID") || break
		SAMPLES+=("| $(((now - START) / 60)):$(printf %02d $(((now - START) % 60))) | $g | $mw_fds | $mw_rss | $ag_fds | $ag_rss |")
		if [ -z "$base_mw_fds" ] && [ "$now" -ge $WARM ]; then
			base_mw_fds=$mw_fds base_ag_fds=$ag_fds base_mw_rss=$mw_rss base_ag_rss=$ag_rss
		fi
		next_sample=$((next_sample + SAMPLE))
	fi
	g=$((g + 1))
	mesh_json $g >"$KM_DIR/mesh-state.json.tmp" && mv "$KM_DIR/mesh-state.json.tmp" "$KM_DIR/mesh-state.json"
	km_istiod_state "$KM_DIR/mesh-state.json" || step_failures=$((step_failures + 1))
	p=p$((g % 2 + 1)) # pods come and go
	if [ $((g / 2 % 2)) = 0 ]; then
		"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path $p)" --pod "chaos/$p" >/dev/null
	else
		"$KM_TESTCTL" unenroll --socket "$KM_SOCKET" --netns "$(km_netns_path $p)" >/dev/null
	fi || step_failures=$((step_failures + 1))
	kill -0 "$KM_MW_PID" 2>/dev/null && kill -0 "$KM_AGENT_PID" 2>/dev/null || break
	sleep "$STEP"
done
km_steady_end web
web_ok=$STEADY_OK web_failed=$STEADY_FAILED web_detail=$STEADY_DETAIL
km_steady_end api
ok=$((web_ok + STEADY_OK)) failed=$((web_failed + STEADY_FAILED)) detail="$web_detail $STEADY_DETAIL"
now=$(date +%s)
mw_fds=$(km_proc_fds "$KM_MW_PID") ag_fds=$(km_proc_fds "$KM_AGENT_PID")
mw_rss=$(km_proc_rss_kb "$KM_MW_PID") ag_rss=$(km_proc_rss_kb "$KM_AGENT_PID")
: "${mw_fds:=999999}" "${ag_fds:=999999}" "${mw_rss:=999999999}" "${ag_rss:=999999999}" # gone: fail below
SAMPLES+=("| $(((now - START) / 60)):$(printf %02d $(((now - START) % 60))) (end) | $g | $mw_fds | $mw_rss | $ag_fds | $ag_rss |")

check "both daemons ran the whole soak" eval 'kill -0 "$KM_MW_PID" && kill -0 "$KM_AGENT_PID"'
check "$g mesh changes in $(((now - START) / 60)) min: 0 of $((ok + failed)) connections failed ($failed ${detail// /})" \
	test "$failed" -eq 0
check "... at >= 200 connections/s ($((ok / (now - START + 1)))/s)" test $((ok / (now - START + 1))) -ge 200
check "every mesh change was taken and every enroll and unenroll answered OK ($step_failures failed)" \
	test "$step_failures" -eq 0
# the final mesh: the backend rows hold exactly the addresses of the last step's workloads, and
# there is one endpoint per workload
want_addrs=$("$KM_PY" -c 'import json, sys
for r in json.load(open(sys.argv[1]))["resources"]:
    for a in r.get("workload", {}).get("addresses", []): print(a)' "$KM_DIR/mesh-state.json" | sort)
backend_addrs() { "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table backend | awk '$1 == "backend" {for (i = 3; i <= NF; i++) print $i}' | sort; }
final_is_mesh() {
	for _ in $(seq 1 100); do [ "$(backend_addrs)" = "$want_addrs" ] && return 0; sleep 0.1; done
	diff <(echo "$want_addrs") <(backend_addrs) | head -n 5 >&2
	return 1
}
final_endpoints=$(grep -c . <<<"$want_addrs")
check "the backend table ends holding exactly the final mesh's $final_endpoints workload addresses" final_is_mesh
check "... and one endpoint each" km_wait_rows endpoint '^endpoint' "$final_endpoints"
check "map writer: open files end where they were after the warm-up ($base_mw_fds -> $mw_fds)" test "$mw_fds" -le "$base_mw_fds"
check "xDS agent: open files end where they were after the warm-up ($base_ag_fds -> $ag_fds)" test "$ag_fds" -le "$base_ag_fds"
check "map writer: resident memory grows by at most 1 MB after the warm-up ($base_mw_rss -> $mw_rss kB)" \
	test $((mw_rss - base_mw_rss)) -le 1024
check "xDS agent: resident memory grows by at most 1 MB after the warm-up ($base_ag_rss -> $ag_rss kB)" \
	test $((ag_rss - base_ag_rss)) -le 1024

{
	echo "# Soak"
	echo
	echo "Regenerated by \`make soak\` (\`tests/soak/soak.sh\`, SOAK_MINUTES=$MINUTES, a mesh change every $STEP s)."
	echo "Two enrolled pods open new connections through two service VIPs (200/s and 100/s) while"
	echo "the fake istiod replaces a block of $CHURN workloads at every step (new names and"
	echo "addresses), a backend of the VIP under traffic leaves and rejoins, a policy comes and"
	echo "goes, and two pods are enrolled and unenrolled in turn."
	echo
	echo "- machine: $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); kernel $(uname -r)"
	echo "- commit: $(git -C "$KM_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "- date: $(date -u +%Y-%m-%d)"
	echo "- result: $g mesh changes ($((g * CHURN * 2)) workload adds and removals), $ok connections succeeded, $failed failed; $KM_PASS checks passed, $KM_FAIL failed"
	echo "- growth from the end of the warm-up (a fifth of the run) to the end: map writer $base_mw_fds -> $mw_fds open files, $base_mw_rss -> $mw_rss kB;"
	echo "  xDS agent $base_ag_fds -> $ag_fds open files, $base_ag_rss -> $ag_rss kB (limits: no open-file growth, 1 MB of memory)"
	echo
	echo "| time (min:s) | mesh changes | map writer open files | map writer RSS (kB) | xDS agent open files | xDS agent RSS (kB) |"
	echo "|---|---:|---:|---:|---:|---:|"
	printf '%s\n' "${SAMPLES[@]}"
} >"$REPORT"
echo "report: $REPORT"
[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer xds-agent istiod
km_check_summary soak
