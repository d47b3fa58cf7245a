#!/usr/bin/env bash
# telemetry_test.sh — what operators watch, from real connections between enrolled pods: Istio's
# TCP metrics scraped over HTTP from the agent's endpoint (counts, bytes, both reporters, bytes of
# a connection still open, the
# labels named from the workloads and the VIP), the access log (one line per open and close, text
# then JSON, switched at run time), monitoring off (nothing counted), authz switched off and on
# around an injected DENY policy, the BPF log level, and the other processes' metrics on the
# same page (the map writer's tables and requests).
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

S=$KM_SUBNET
VIP=10.96.9.1
CTL=$KM_ROOT/build/bin/kmeshctl
ctl() { "$CTL" --map-writer-socket "$KM_SOCKET" --xds-socket "$KM_AGENT_SOCKET" "$@"; }
# sample NAME REPORTER: the value of a TCP metric for reporter, client -> web.t (0 when absent)
sample() {
	km_metrics | "$KM_PY" -c 'import re, sys
name, reporter = sys.argv[1], sys.argv[2]
total = 0
for line in sys.stdin:
    if line.startswith(name + "{") and ("reporter=\"%s\"" % reporter) in line \
       and "source_workload=\"client-v1\"" in line and "destination_service=\"web.t\"" in line:
        total += int(line.rsplit(" ", 1)[1])
print(total)' "$1" "$2"
}
sample_is() { # sample_is NAME REPORTER VALUE (within 3 s: closes come after the answer)
	for _ in $(seq 1 30); do
		[ "$(sample "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	echo "$1{reporter=$2} is $(sample "$1" "$2"), not $3" >&2
	return 1
}
connect() { km_connect client "$VIP" 80 --count "$1" --timeout 1 --send hello; }
log_lines() { grep -c "^accesslog: .* $1 " "$KM_DIR/xds-agent.log"; }

trap 'km_env_cleanup' EXIT
km_env_setup kmt$$
km_pod_add client "$S.10"
km_pod_add b1 "$S.21"
km_backend_start b1 8080 keep # reads until the client closes: the client closes first
km_wait_listen b1 8080 || exit 1
wl() { # wl NAME IP [SERVICES]
	echo '{"workload": {"uid": "Kubernetes//Pod/t/'$1'", "name": "'$1'", "namespace": "t", "workloadName": "'$1'-v1",
	  "canonicalName": "'$1'", "canonicalRevision": "v1", "serviceAccount": "'$1'-sa", "trustDomain": "td.local",
	  "clusterId": "c1", "addresses": ["'$2'"], "services": {'${3:-}'}}}'
}
cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "web", "namespace": "t", "hostname": "web.t", "addresses": [{"address": "$VIP"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}, {"servicePort": 81, "targetPort": 8081}]}},
 $(wl client "$S.10"), $(wl b1 "$S.21" '"t/web.t": {}')
]}
JSON
km_map_writer_start --conn-report-interval 1 || exit 1
km_agent_start
for p in client b1; do
	"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path $p)" >/dev/null
done
km_wait_rows endpoint "^endpoint" 1 || exit 1

check "the endpoint is ready once the configuration is in the tables" eval '[ "$(km_metrics /ready)" = ready ]'
check "/healthz answers while the agent's loop runs (the liveness probe)" eval '[ "$(km_metrics /healthz)" = ok ]'
check "3 connections through the VIP reach b1" eval '[ "$(connect 3)" = "3 b1" ]'
check "opened: 3 reported by the client's side (reporter=source)" \
	sample_is istio_tcp_connections_opened_total source 3
check "... and 3 by the server's side (reporter=destination)" \
	sample_is istio_tcp_connections_opened_total destination 3
check "closed: 3 each" eval 'sample_is istio_tcp_connections_closed_total source 3 && sample_is istio_tcp_connections_closed_total destination 3'
check "sent (the response, 'b1\\n' each): 9 data bytes, seen alike by both sides" \
	eval 'sample_is istio_tcp_sent_bytes_total source 9 && sample_is istio_tcp_sent_bytes_total destination 9'
check "received (the request, 'hello\\n' each): 18 data bytes, alike" \
	eval 'sample_is istio_tcp_received_bytes_total source 18 && sample_is istio_tcp_received_bytes_total destination 18' 
check "every label of the series, in Istio's order, from the workloads and the VIP's service" \
	eval 'km_metrics_has "istio_tcp_connections_opened_total{reporter=\"source\",source_workload=\"client-v1\",source_canonical_service=\"client\",source_canonical_revision=\"v1\",source_workload_namespace=\"t\",source_principal=\"spiffe://td.local/ns/t/sa/client-sa\",source_app=\"client\",source_version=\"v1\",source_cluster=\"c1\",destination_service=\"web.t\",destination_service_namespace=\"t\",destination_service_name=\"web\",destination_workload=\"b1-v1\",destination_canonical_service=\"b1\",destination_canonical_revision=\"v1\",destination_workload_namespace=\"t\",destination_principal=\"spiffe://td.local/ns/t/sa/b1-sa\",destination_app=\"b1\",destination_version=\"v1\",destination_cluster=\"c1\",request_protocol=\"tcp\",response_flags=\"-\",connection_security_policy=\"unknown\"} 3"'
# closes are reported when the application lets the socket go (cgroup/sock_release)
km_connect client "$VIP" 80 --send hello --half-close --timeout 2 >/dev/null
check "a client that shut its side down first: sent and received still count data only (+3, +6)" \
	eval 'sample_is istio_tcp_sent_bytes_total source 12 && sample_is istio_tcp_received_bytes_total source 24 && sample_is istio_tcp_received_bytes_total destination 24'
km_connect client "$VIP" 81 --timeout 1 >/dev/null # nothing listens on its target port
connect 1 >/dev/null
check "a refused connect is neither opened nor closed (the next one counts exactly once)" \
	eval 'sample_is istio_tcp_connections_closed_total source 5 && sample_is istio_tcp_connections_opened_total source 5'
# a long connection: its bytes count while it is open (a pass every second), and its close adds
# only the rest
read -r rx0 tx0 closed0 <<<"$(sample istio_tcp_received_bytes_total source) $(sample istio_tcp_sent_bytes_total source) $(sample istio_tcp_connections_closed_total source)"
rxd0=$(sample istio_tcp_received_bytes_total destination)
km_connect client "$VIP" 80 --send hello --hold 4 >/dev/null &
long=$!
check "an open connection's bytes count while it lives: request +6, response +3, not yet closed" \
	eval 'sample_is istio_tcp_received_bytes_total source $((rx0 + 6)) && sample_is istio_tcp_sent_bytes_total source $((tx0 + 3)) && [ "$(sample istio_tcp_connections_closed_total source)" = "$closed0" ]'
check "... on the server's side too (reporter=destination)" \
	sample_is istio_tcp_received_bytes_total destination $((rxd0 + 6))
wait $long
check "... and its close counts it closed without counting the bytes again" \
	eval 'sample_is istio_tcp_connections_closed_total source $((closed0 + 1)) && sleep 1.5 && [ "$(sample istio_tcp_received_bytes_total source)" = $((rx0 + 6)) ] && [ "$(sample istio_tcp_sent_bytes_total source)" = $((tx0 + 3)) ] && [ "$(sample istio_tcp_received_bytes_total destination)" = $((rxd0 + 6)) ]'
check "the map writer counts its passes and reports" \
	eval 'for _ in $(seq 1 30); do km_metrics_has "^kmesh_conn_progress_reports_total [1-9]" && break; sleep 0.1; done; km_metrics_has "^kmesh_conn_progress_passes_total [1-9]" && km_metrics_has "^kmesh_telemetry_progress_reports_total [1-9]"'
check "the agent's own metrics are on the page" \
	eval 'out=$(km_metrics) && grep -q "^kmesh_xds_agent_build_info{version=" <<<"$out" && grep -q "^istio_build{component=\"kmesh\",tag=\"[0-9][0-9.]*+" <<<"$out" && grep -q "^kmesh_map_writer_connected 1" <<<"$out" && grep -q "^kmesh_xds_apply_seconds_bucket{le=\"+Inf\"}" <<<"$out" && grep -q "^kmesh_model_workloads 2" <<<"$out"'
check "... and the map writer's (its file in the metrics directory, every second): tables and requests" \
	eval 'for _ in $(seq 1 30); do out=$(km_metrics); grep -q "^kmesh_table_entries{table=\"backend\"} 2" <<<"$out" && break; sleep 0.1; done; grep -q "^kmesh_table_entries{table=\"backend\"} 2" <<<"$out" && grep -q "^kmesh_table_capacity{table=\"backend\"} 4096" <<<"$out" && grep -q "^kmesh_ipc_requests_total{role=\"xds\",request=\"subscribe\",result=\"ok\"} 1" <<<"$out" && grep -q "^kmesh_conn_reports_lost_total 0" <<<"$out"'
check "... the tables it keeps no key set for, counted by the kernel: 2 pods enrolled in km_manage" \
	eval 'km_metrics_has "^kmesh_table_entries{table=\"manage\"} 2" && ! grep -q "map-count iterator" "$KM_DIR/map-writer.log"'
# process_* for every process on the one endpoint: one block per family, a sample per process
check "process_* metrics of the xDS agent and the map writer, each family's HELP and TYPE once" \
	eval 'for _ in $(seq 1 30); do out=$(km_metrics); grep -q "^process_resident_memory_bytes{component=\"map-writer\"} [1-9]" <<<"$out" && break; sleep 0.2; done
	      grep -q "^process_resident_memory_bytes{component=\"map-writer\"} [1-9]" <<<"$out" &&
	      grep -q "^process_resident_memory_bytes{component=\"xds-agent\"} [1-9]" <<<"$out" &&
	      grep -q "^process_open_fds{component=\"map-writer\"} [1-9]" <<<"$out" &&
	      grep -q "^process_cpu_seconds_total{component=\"xds-agent\"} " <<<"$out" &&
	      grep -q "^process_start_time_seconds{component=\"map-writer\"} 1[0-9]*\.[0-9]*$" <<<"$out" &&
	      [ "$(grep -c "^# TYPE process_open_fds gauge" <<<"$out")" = 1 ] &&
	      [ "$(grep "^# TYPE " <<<"$out" | sort | uniq -d | wc -l)" = 0 ]'
check "no report was lost" eval 'km_metrics_has "^kmesh_telemetry_reports_lost_total 0"'
check "other paths: 404" eval '[ "$(curl -s -o /dev/null -w "%{http_code}" "http://127.0.0.1:$(sed -n "s/.*(port \([0-9]*\)).*/\1/p" "$KM_DIR/xds-agent.log" | tail -n 1)/nope")" = 404 ]'

check "the access log is off by default" eval '[ "$(grep -c "^accesslog:" "$KM_DIR/xds-agent.log")" = 0 ]'
# sockops runs five times per connection once attached: only while something needs it (here, the
# access log's open reports); the counts above were made without it
sockops_on() { # sockops_on 1|0: attached (its pinned link there) or not, and the metric says so
	local pinned=0
	[ -e "$KM_DIR/bpffs/kmesh/links/sockops" ] && pinned=1
	[ "$pinned" = "$1" ] && km_metrics_has "^kmesh_bpf_program_attached{program=\"sockops\"} $1$"
}
check "no sockops program while nothing needs it (metrics counted without it), nor authz_ingress" \
	eval 'sockops_on 0 && km_metrics_has "^kmesh_bpf_program_attached{program=\"authz_ingress\"} 0$"'
check "accesslog enable, as a table" eval 'ctl accesslog enable | grep -q "^xds-agent *enabled *text"'
check "... and the map writer attaches sockops for its open reports" \
	eval 'for _ in $(seq 1 40); do sockops_on 1 && break; sleep 0.1; done; sockops_on 1 && grep -q "sockops attached: needed by open-reports" "$KM_DIR/map-writer.log"'
connect 2 >/dev/null
check "one line per open and close, on each side: 4 open, 4 close" \
	eval 'for _ in $(seq 1 30); do [ "$(log_lines close)" = 4 ] && break; sleep 0.1; done; [ "$(log_lines open)" = 4 ] && [ "$(log_lines close)" = 4 ]'
check "an outbound close line names both ends and counts the bytes" \
	eval 'grep -E "^accesslog: [0-9T:.-]+Z close outbound src=$S.10:[0-9]+ src.workload=client src.namespace=t dst=$S.21:8080 dst.service=web.t dst.workload=b1 dst.namespace=t sent_bytes=6 received_bytes=3 retransmissions=0 srtt=[0-9]+us duration=[0-9.]+ms route=kernel route.why=no_hbone$" "$KM_DIR/xds-agent.log" | grep -q .'
check "accesslog --format json" eval 'ctl -o json accesslog enable --format json | "$KM_PY" -c "import json,sys; d=json.load(sys.stdin); sys.exit(d[0][\"format\"] != \"json\")"'
connect 1 >/dev/null
check "JSON lines parse, with the same facts" \
	eval 'for _ in $(seq 1 30); do grep -q "^{.*\"event\":\"close\".*\"direction\":\"inbound\"" "$KM_DIR/xds-agent.log" && break; sleep 0.1; done
	      grep "^{" "$KM_DIR/xds-agent.log" | "$KM_PY" -c "import json, sys
lines = [json.loads(l) for l in sys.stdin]
c = [l for l in lines if l[\"event\"] == \"close\" and l[\"direction\"] == \"inbound\"][0]
sys.exit(not (len(lines) == 4 and c[\"dst_service\"] == \"web.t\" and c[\"src_workload\"] == \"client\" and c[\"sent_bytes\"] == 3 and c[\"received_bytes\"] == 6 and c[\"duration_ms\"] >= 0))"'
ctl accesslog disable >/dev/null
check "accesslog disable: sockops detached again" \
	eval 'for _ in $(seq 1 40); do sockops_on 0 && break; sleep 0.1; done; sockops_on 0'
before=$(wc -l <"$KM_DIR/xds-agent.log")
connect 1 >/dev/null
sleep 0.3
check "accesslog disable: no more lines" eval '[ "$(grep -c "^{\|^accesslog:" <(tail -n +$((before + 1)) "$KM_DIR/xds-agent.log"))" = 0 ]'
out=$(ctl accesslog frobnicate 2>&1)
rc=$?
check "accesslog with a wrong action: usage (2)" eval '[ $rc = 2 ] && grep -q "usage: kmeshctl accesslog" <<<"$out"'

opened=$(sample istio_tcp_connections_opened_total source)
check "monitoring disable" eval 'ctl -o json monitoring disable | "$KM_PY" -c "import json,sys; d=json.load(sys.stdin); sys.exit(d[0][\"monitoring\"] != \"disabled\")"'
connect 2 >/dev/null
sleep 0.3
check "... then connections are not counted" eval '[ "$(sample istio_tcp_connections_opened_total source)" = "$opened" ]'
check "... and the log warns that accesslog needs it" eval 'ctl accesslog enable 2>&1 >/dev/null | grep -q "monitoring is disabled"'
ctl accesslog disable >/dev/null
ctl monitoring enable >/dev/null
connect 1 >/dev/null
check "monitoring enable: counted again" sample_is istio_tcp_connections_opened_total source $((opened + 1))

DENY='{"resources": [{"authorization": {"name": "deny-client", "namespace": "t", "scope": "NAMESPACE", "action": "DENY",
  "rules": [{"clauses": [{"matches": [{"principals": [{"suffix": "/sa/client-sa"}]}]}]}]}}]}'
ctl inject xds-agent - <<<"$DENY" >/dev/null
check "an injected DENY policy denies (authz status: enabled)" \
	eval 'for _ in $(seq 1 20); do [ "$(connect 1)" = "1 error:ECONNREFUSED" ] && break; done; ctl authz status | grep -q "enabled"'
check "authz disable: the connection passes" eval 'ctl authz disable | grep -q disabled && [ "$(connect 1)" = "1 b1" ]'
check "authz enable: denied again" eval 'ctl authz enable >/dev/null && [ "$(connect 1)" = "1 error:ECONNREFUSED" ]'
ctl inject xds-agent - <<<'{"removedPolicies": ["t/deny-client"]}' >/dev/null

check "the BPF log is quiet at level error" eval '! grep -q "bpf: connect" "$KM_DIR/map-writer.log"'
ctl log --set bpf:debug >/dev/null
connect 1 >/dev/null
check "at debug the programs' lines reach the map writer's log (its own level info)" \
	eval 'for _ in $(seq 1 20); do grep -q "bpf: connect: $VIP:80 to $S.21:8080" "$KM_DIR/map-writer.log" && break; sleep 0.1; done
	      grep -q "bpf: connect: $VIP:80 to $S.21:8080" "$KM_DIR/map-writer.log"'
out=$(ctl monitoring sideways 2>&1)
rc=$?
check "every switch has --help" eval 'ctl monitoring --help | grep -q "usage: kmeshctl monitoring" && ctl authz --help | grep -q "usage: kmeshctl authz" && ctl accesslog --help | grep -q "usage: kmeshctl accesslog" && [ $rc = 2 ]'

# the same close read the way kernels before 6.2 need (bpf_probe_read_kernel): a map writer
# restarted with --compat-programs updates the pinned link to that variant (killed: it was
# started to detach everything on a clean exit)
subs=$(grep -c "subscribed to connection reports" "$KM_DIR/map-writer.log")
kill -KILL "$KM_MW_PID"; wait "$KM_MW_PID" 2>/dev/null
km_map_writer_start --compat-programs || exit 1
for _ in $(seq 1 100); do # the agent reconnects and subscribes again
	[ "$(grep -c "subscribed to connection reports" "$KM_DIR/map-writer.log")" -gt "$subs" ] && break
	sleep 0.1
done
totals() { echo "$(sample istio_tcp_sent_bytes_total source) $(sample istio_tcp_received_bytes_total source) $(sample istio_tcp_connections_closed_total source)"; }
last=$(totals) # the reports still in the pinned ring buffer arrive first: wait until they have
for _ in $(seq 1 20); do
	sleep 0.3
	now=$(totals)
	[ "$now" = "$last" ] && break
	last=$now
done
read -r sent received closed <<<"$last"
release_prog=$(bpftool -j link show pinned "$KM_DIR/bpffs/kmesh/links/sock_release" | "$KM_PY" -c "import json,sys; print(json.load(sys.stdin)['prog_id'])")
check "the compat close program is the one attached (it reads with bpf_probe_read_kernel)" \
	eval '[ "$(bpftool prog dump xlated id "$release_prog" | grep -c probe_read_kernel)" -gt 0 ]'
km_connect client "$VIP" 81 --timeout 1 >/dev/null
km_connect client "$VIP" 80 --send hello --half-close --timeout 2 >/dev/null
check "... and counts the same: sent +3, received +6, refused connects not at all" \
	eval 'sample_is istio_tcp_sent_bytes_total source $((sent + 3)) && sample_is istio_tcp_received_bytes_total source $((received + 6)) && sample_is istio_tcp_connections_closed_total source $((closed + 1))'

km_check_summary telemetry
