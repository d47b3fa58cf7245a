#!/usr/bin/env bash
# cni_add.sh — CNI ADD latency: COUNT (default 200) ADDs of distinct pods that get enrolled,
# each run as a runtime runs the plugin, against the node's CNI agent (its cache filled from the
# fake Kubernetes API's watch) and the real map writer, with /bin/true started the same way as
# the baseline (see bench/cni_add_bench.c). Prints a markdown section. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib/mesh-env.sh
COUNT=${COUNT:-200}

trap km_env_cleanup EXIT
km_env_setup kmb$$ >/dev/null
km_make_pki
km_pod_add pod "$KM_SUBNET.10"
"$KM_PY" - "$COUNT" >"$KM_DIR/kube.json" <<'PY'
import json, sys
pods = {"bench/pod-%d" % i: {} for i in range(int(sys.argv[1]))}
json.dump({"namespaces": {"bench": {"labels": {"istio.io/dataplane-mode": "Kmesh"}}}, "pods": pods}, sys.stdout)
PY
km_kube_api_start "$KM_DIR/kube.json" bench-token
mkdir -p "$KM_DIR/sa" "$KM_DIR/net.d" "$KM_DIR/bin"
cp "$KM_DIR/pki/ca.pem" "$KM_DIR/sa/ca.crt"
echo bench-token >"$KM_DIR/sa/token"
echo '{"cniVersion": "1.0.0", "name": "b", "plugins": [{"type": "bridge"}]}' >"$KM_DIR/net.d/10-b.conflist"
km_map_writer_start --log-level warn || exit 1
# the node's CNI agent writes the entry the plugin runs with, and answers it
ip netns exec "$KM_NODE" env KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$KM_KUBE_PORT" \
	KMESH_SERVICE_ACCOUNT_DIR="$KM_DIR/sa" "$KM_BIN/kmesh-cni-agent" install \
	--cni-bin-dir "$KM_DIR/bin" --cni-conf-dir "$KM_DIR/net.d" --plugin-binary "$KM_BIN/kmesh-cni" \
	--node-name node-1 --map-writer-socket "$KM_SOCKET" --state-dir "$KM_DIR/state" --keep-on-exit \
	--log-level info >>"$KM_DIR/installer.log" 2>&1 &
KM_PIDS+=($!)
for _ in $(seq 1 50); do grep -q kmesh-cni "$KM_DIR/net.d/10-b.conflist" && grep -q "cache: .* pods listed" "$KM_DIR/installer.log" && break; sleep 0.1; done
"$KM_PY" - "$KM_DIR/net.d/10-b.conflist" "$KM_SUBNET.10" >"$KM_DIR/stdin.json" <<'PY'
import json, sys
conf = json.load(open(sys.argv[1]))
entry = conf["plugins"][-1]
assert entry["type"] == "kmesh-cni", entry
entry.update({"name": conf["name"], "cniVersion": conf["cniVersion"],
              "prevResult": {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": "x"}],
                             "ips": [{"address": sys.argv[2] + "/24", "interface": 0}]}})
json.dump(entry, sys.stdout)
PY

echo "## CNI ADD latency"
echo
echo "\`bash bench/cni_add.sh\` (COUNT=$COUNT): each call a new \`kmesh-cni\` process as a runtime"
echo "starts it (static, ~1.4 MB); the node's CNI agent decides from its cache of the node's pods"
echo "(filled by a watch of tests/lib/fake_kube_api.py), the map writer is the real one; no API"
echo "request is on the path. Milliseconds. Goal (issue 27): ADD and DEL p50 <= 2 ms, p99 <= 5 ms;"
echo "the plugin's start (VERSION) <= 1.5x /bin/true's."
echo
ip netns exec "$KM_NODE" build/bench/cni_add_bench --plugin "$KM_DIR/bin/kmesh-cni" \
	--config "$KM_DIR/stdin.json" --netns "$(km_netns_path pod)" --namespace bench --count "$COUNT"
for _ in $(seq 1 100); do # the annotations are made off the ADD path
	patches=$(grep -c '"PATCH"' "$KM_DIR/kube-api.requests" || true)
	[ "$patches" -ge "$COUNT" ] && break
	sleep 0.1
done
gets=$(grep -c '"GET", "path": "/api/v1/namespaces/bench/pods/' "$KM_DIR/kube-api.requests" || true)
echo
echo "Every enrolled pod was annotated by the agent, off the ADD path: $patches PATCH requests for"
echo "$COUNT ADDs; pods fetched from the API on the ADD path (cache misses): $gets."
