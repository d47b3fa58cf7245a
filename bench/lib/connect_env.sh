# connect_env.sh — sourced (not a benchmark itself) by bench/connect.sh and bench/monitoring.sh: a private mesh whose
# client pod reaches one service VIP with ENDPOINTS endpoints (every endpoint address local to
# the pod's netns, loaded through the real xDS agent from a config file), and connect_run, which
# runs bench/connect_bench.c against it. ENDPOINTS, ROUNDS, PER_ROUND override. SERVICE_KIND picks
# the service's load balancing: plain (default: uniform), weighted (endpoint weights 1..4, from
# Workload.capacity: the pick searches cumulative weights) or p2c (power of two choices over
# live connection counts, --p2c-services) or waypoint (the service has a waypoint, one pod
# listening on its data port: the pick sends every connection there, with the socket record and
# sockhash insert the TLV needs). SERVICES=S (default 1) splits the endpoints evenly over S
# services, VIPs 10.96.0.1 onwards: connect_run then draws services by Zipf popularity and sends
# OUTSIDE_PERCENT (default 0) of its connects to addresses outside the mesh. HBONE=on: the client
# pod's address is in km_hbone, as when the tunnel serves its 15008. Needs root.
source tests/lib/mesh-env.sh
ENDPOINTS=${ENDPOINTS:-100000}
SERVICE_KIND=${SERVICE_KIND:-plain}
SERVICES=${SERVICES:-1}
OUTSIDE_PERCENT=${OUTSIDE_PERCENT:-0}
case $SERVICE_KIND in plain | weighted | p2c | waypoint) ;; *) echo "SERVICE_KIND: plain, weighted, p2c or waypoint" >&2; exit 2 ;; esac
[ "$SERVICES" -ge 1 ] && [ "$SERVICES" -le 65000 ] && [ $((ENDPOINTS % SERVICES)) -eq 0 ] ||
	{ echo "SERVICES: 1..65000, dividing ENDPOINTS" >&2; exit 2; }
ROUNDS=${ROUNDS:-40}
PER_ROUND=${PER_ROUND:-1000}
[ "$ENDPOINTS" -le 1048576 ] || { echo "ENDPOINTS: at most 1048576 (10.64.0.0/12)" >&2; exit 2; }

cleanup() {
	[ -n "${plain:-}" ] && rmdir "$plain" 2>/dev/null
	[ -n "${ref:-}" ] && rmdir "$ref" 2>/dev/null
	km_env_cleanup
}
trap cleanup EXIT
km_env_setup kmc$$ >/dev/null
plain=$(dirname "$KM_CGROUP")/$KM_PREFIX-plain # a sibling: no kmesh program applies there
mkdir "$plain"
ref=$(dirname "$KM_CGROUP")/$KM_PREFIX-ref # a sibling with only the reference program (the floor)
mkdir "$ref"
km_pod_add client "$KM_SUBNET.10"
ip -n "$KM_PREFIX-client" route add local 10.64.0.0/12 dev lo # every endpoint address is here
ip -n "$KM_PREFIX-client" route add local 10.200.0.0/16 dev lo # "outside the mesh": no frontend

"$KM_PY" - "$ENDPOINTS" "$SERVICE_KIND" "$SERVICES" "$KM_SUBNET.10" >"$KM_CONFIG" <<'PY'
import json, sys
n, kind, services, client = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
per = n // services
def vip(k):  # 10.96.0.1 onwards
    k += 1
    return "10.96.%d.%d" % (k >> 8, k & 255)
res = []
for k in range(services):
    svc = {"name": "bench" if k == 0 else "bench%d" % k, "namespace": "b",
           "hostname": "bench.b" if k == 0 else "bench%d.b" % k,
           "addresses": [{"address": vip(k)}],
           "ports": [{"servicePort": 80, "targetPort": 8080}]}
    if kind == "waypoint":
        svc["waypoint"] = {"hostname": {"namespace": "b", "hostname": "waypoint.b"},
                           "hboneMtlsPort": 15008}
    res.append({"service": svc})
if kind == "waypoint":  # its one pod is the client pod's own address (the bench listens there)
    res.append({"service": {"name": "waypoint", "namespace": "b", "hostname": "waypoint.b",
                            "addresses": [{"address": "10.95.0.1"}],
                            "ports": [{"servicePort": 15008, "targetPort": 15008}]}})
    res.append({"workload": {"uid": "Kubernetes//Pod/b/waypoint", "addresses": [client],
                             "services": {"b/waypoint.b": {}}}})
for i in range(n):
    ip = "10.%d.%d.%d" % (64 + (i >> 16), (i >> 8) & 255, i & 255)
    host = "bench.b" if i // per == 0 else "bench%d.b" % (i // per)
    wl = {"uid": "Kubernetes//Pod/b/w%d" % i, "addresses": [ip], "services": {"b/" + host: {}}}
    if kind == "weighted":
        wl["capacity"] = i % 4 + 1
    res.append({"workload": wl})
json.dump({"resources": res}, sys.stdout)
PY
chmod 644 "$KM_CONFIG"
rows=$((ENDPOINTS + 2 * SERVICES + 64))
km_map_writer_start --max-frontends "$rows" --max-endpoints "$rows" --max-backends "$rows" \
	--max-services $((SERVICES + 64)) \
	--max-authz-addresses "$rows" \
	--log-level warn || exit 1
p2c=none
[ "$SERVICE_KIND" = p2c ] && p2c=b/bench.b
km_agent_start --max-config-bytes $((512 << 20)) --log-level "${AGENT_LOG_LEVEL:-warn}" \
	--p2c-services "$p2c"
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
# every service has its endpoints (the waypoint's own service one more)
has_all() { [ "$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table service 2>/dev/null | grep -c "count $((ENDPOINTS / SERVICES)) ")" -ge "$SERVICES" ]; }
for _ in $(seq 1 3000); do # 1M endpoints take a while: a 100 MB JSON file
	has_all && break
	sleep 0.1
done
has_all ||
	{ echo "the service never had $ENDPOINTS endpoints" >&2; km_dump_logs map-writer xds-agent >&2; exit 1; }
[ "${HBONE:-off}" = off ] || km_hbone_row "$KM_SUBNET.10"


connect_run() {
	build/bench/connect_bench --netns "$(km_netns_path client)" --mesh-cgroup "$KM_CGROUP" \
		--plain-cgroup "$plain" --ref-cgroup "$ref" --links-dir "$KM_DIR/bpffs/kmesh/links" --vip 10.96.0.1 \
		--endpoints "$ENDPOINTS" --first-endpoint 10.64.0.0 --rounds "$ROUNDS" --per-round "$PER_ROUND" \
		--services "$SERVICES" --outside-percent "$OUTSIDE_PERCENT" --kind "$SERVICE_KIND" \
		--config-map "$KM_DIR/bpffs/kmesh/maps/km_config"
}
