# connect_env.sh — sourced (not a benchmark itself) by bench/connect.sh and bench/monitoring.sh: a private mesh whose
# client pod reaches one service VIP with ENDPOINTS endpoints (every endpoint address local to
# the pod's netns, loaded through the real xDS agent from a config file), and connect_run, which
# runs bench/connect_bench.c against it. ENDPOINTS, ROUNDS, PER_ROUND override. SERVICE_KIND picks
# the service's load balancing: plain (default: uniform), weighted (endpoint weights 1..4, from
# Workload.capacity: the pick searches cumulative weights) or p2c (power of two choices over
# live connection counts, --p2c-services). Needs root.
source tests/lib/mesh-env.sh
ENDPOINTS=${ENDPOINTS:-100000}
SERVICE_KIND=${SERVICE_KIND:-plain}
case $SERVICE_KIND in plain | weighted | p2c) ;; *) echo "SERVICE_KIND: plain, weighted or p2c" >&2; exit 2 ;; esac
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

"$KM_PY" - "$ENDPOINTS" "$SERVICE_KIND" >"$KM_CONFIG" <<'PY'
import json, sys
n, kind = int(sys.argv[1]), sys.argv[2]
res = [{"service": {"name": "bench", "namespace": "b", "hostname": "bench.b",
                    "addresses": [{"address": "10.96.0.1"}],
                    "ports": [{"servicePort": 80, "targetPort": 8080}]}}]
for i in range(n):
    ip = "10.%d.%d.%d" % (64 + (i >> 16), (i >> 8) & 255, i & 255)
    wl = {"uid": "Kubernetes//Pod/b/w%d" % i, "addresses": [ip], "services": {"b/bench.b": {}}}
    if kind == "weighted":
        wl["capacity"] = i % 4 + 1
    res.append({"workload": wl})
json.dump({"resources": res}, sys.stdout)
PY
chmod 644 "$KM_CONFIG"
rows=$((ENDPOINTS + 64))
km_map_writer_start --max-frontends "$rows" --max-endpoints "$rows" --max-backends "$rows" \
	--max-authz-addresses "$rows" \
	--log-level warn || exit 1
p2c=none
[ "$SERVICE_KIND" = p2c ] && p2c=b/bench.b
km_agent_start --max-config-bytes $((512 << 20)) --log-level "${AGENT_LOG_LEVEL:-warn}" \
	--p2c-services "$p2c"
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
has_all() { grep -q "count $ENDPOINTS " <<<"$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table service 2>/dev/null)"; }
for _ in $(seq 1 3000); do # 1M endpoints take a while: a 100 MB JSON file
	has_all && break
	sleep 0.1
done
has_all ||
	{ echo "the service never had $ENDPOINTS endpoints" >&2; km_dump_logs map-writer xds-agent >&2; exit 1; }


connect_run() {
	build/bench/connect_bench --netns "$(km_netns_path client)" --mesh-cgroup "$KM_CGROUP" \
		--plain-cgroup "$plain" --ref-cgroup "$ref" --links-dir "$KM_DIR/bpffs/kmesh/links" --vip 10.96.0.1 \
		--endpoints "$ENDPOINTS" --first-endpoint 10.64.0.0 --rounds "$ROUNDS" --per-round "$PER_ROUND"
}
