#!/usr/bin/env bash
# run.sh — `make demo`: the mesh end to end on this machine, from demo/mesh.json.
# Pods are network namespaces; the real kmesh-map-writer loads the BPF programs into a private
# sub-cgroup, the real kmesh-xds-agent (uid 65534, no capabilities) reads the file. A client pod
# connects to the Service VIP and BPF spreads the connections over the backends; then the file
# is edited and the change takes effect. Everything is removed at the end. Needs root.
set -euo pipefail
source "$(dirname "$0")/../tests/lib/mesh-env.sh"
[ "$(id -u)" -eq 0 ] || { echo "make demo needs root (namespaces, cgroups, BPF)" >&2; exit 1; }

VIP=10.96.0.10
show() { # show TITLE COUNT: COUNT connections from the client pod to the VIP, summarised
	echo
	echo "== $1: $2 connections from pod 'client' to $VIP:80"
	km_connect client $VIP 80 --count "$2" | awk '{printf "   %-12s %4d  ", $2, $1; for (i = 0; i < $1 / 5; i++) printf "#"; print ""}'
}

trap km_env_cleanup EXIT
km_env_setup kmdemo$$
km_log "pods: client 10.123.0.10, web-a/web-b/web-c 10.123.0.21-23 (network namespaces on a bridge)"
km_pod_add client 10.123.0.10
km_pod_add web-a 10.123.0.21
km_pod_add web-b 10.123.0.22
km_pod_add web-c 10.123.0.23
for p in web-a web-b web-c; do km_backend_start $p 8080; done
for p in web-a web-b web-c; do km_wait_listen $p 8080; done
km_write_config <"$KM_ROOT/demo/mesh.json"

km_log "starting kmesh-map-writer (BPF programs attached to $KM_CGROUP)"
km_map_writer_start
km_log "starting kmesh-xds-agent as uid $KM_NOBODY with no capabilities, config $KM_CONFIG"
km_agent_start
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" --pod demo/client >/dev/null
km_log "pod 'client' enrolled (netns cookie in km_manage)"
km_wait_rows endpoint "^endpoint" 3

echo
echo "== tables in the kernel (read back from the map writer)"
for t in frontend service endpoint backend; do
	"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table $t | sed 's/^/   /'
done

show "three backends" 300

km_log "editing the config: web-c removed"
/usr/bin/python3 - "$KM_CONFIG" <<'PY' | km_write_config
import json, sys
doc = json.load(open(sys.argv[1]))
doc["resources"] = [r for r in doc["resources"] if r.get("workload", {}).get("name") != "web-c"]
print(json.dumps(doc, indent=1))
PY
km_wait_rows endpoint "^endpoint" 2
show "after removing web-c" 200

km_log "a pod that is not enrolled connecting to the VIP is not redirected:"
km_pod_add outsider 10.123.0.11
km_connect outsider $VIP 80 --count 1 | sed 's/^/   /'

echo
km_log "xds agent log:"
sed 's/^/   /' "$KM_DIR/xds-agent.log"
km_log "cleaning up"
