#!/usr/bin/env bash
# cni_add.sh — CNI ADD latency: COUNT (default 200) ADDs of distinct pods that get enrolled,
# each run as a runtime runs the plugin, against the fake Kubernetes API over TLS and the real
# map writer, with a pass-through ADD of the same binary as the baseline (see
# bench/cni_add_bench.c). Prints a markdown section. Needs root.
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
# the installer writes the kubeconfig and the entry the plugin runs with
"$KM_BIN/kmesh-cni" install --cni-bin-dir "$KM_DIR/bin" --cni-conf-dir "$KM_DIR/net.d" \
	--service-account-dir "$KM_DIR/sa" --kube-server "https://127.0.0.1:$KM_KUBE_PORT" \
	--map-writer-socket "$KM_SOCKET" --state-dir "$KM_DIR/state" --keep-on-exit \
	--log-level warn >>"$KM_DIR/installer.log" 2>&1 &
KM_PIDS+=($!)
for _ in $(seq 1 50); do grep -q kmesh-cni "$KM_DIR/net.d/10-b.conflist" && break; sleep 0.1; done
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
echo "starts it; the Kubernetes API is tests/lib/fake_kube_api.py (Python, TLS, keep-alive) in"
echo "the node namespace; the map writer is the real one. Milliseconds. Goal: ADD p50 <= 5 ms,"
echo "p99 <= 20 ms."
echo
ip netns exec "$KM_NODE" build/bench/cni_add_bench --plugin "$KM_DIR/bin/kmesh-cni" \
	--config "$KM_DIR/stdin.json" --netns "$(km_netns_path pod)" --namespace bench --count "$COUNT"
patches=$(grep -c '"PATCH"' "$KM_DIR/kube-api.requests")
echo
echo "Every enrolled ADD annotated its pod: $patches PATCH requests for $COUNT ADDs."
# the two costs no plugin code can avoid, measured here too: starting a process linked with
# libcurl (the VERSION row) and one TLS handshake to the API (curl(1), 20 times, median)
tls=$(for _ in $(seq 1 20); do
	ip netns exec "$KM_NODE" curl -s -o /dev/null --cacert "$KM_DIR/pki/ca.pem" \
		-H "Authorization: Bearer bench-token" -w '%{time_appconnect}\n' \
		"https://127.0.0.1:$KM_KUBE_PORT/api/v1/namespaces/bench"
done | sort -n | sed -n 10p)
echo "One TLS handshake to the fake API on this machine (curl(1), median of 20): $(awk -v t="$tls" 'BEGIN {printf "%.2f", t * 1000}') ms."
