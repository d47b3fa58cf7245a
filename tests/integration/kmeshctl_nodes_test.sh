#!/usr/bin/env bash
# kmeshctl_nodes_test.sh — kmeshctl reaching other nodes from a workstation: the kmesh pods found
# through a fake API server over TLS (label and node selectors, as the requests show), the
# command run by `kubectl exec` in each pod's map-writer container (tests/lib/fake_kubectl.sh
# stands in for kubectl, whose exec streaming the fake server does not speak, and runs the real
# kmeshctl against each "node's" sockets: node-a reaches the map writer and the xDS agent of a
# private mesh, node-b only the map writer). One node: its output and exit code as they are.
# Several, or --all-nodes: one merged document led by NODE, in every format, parsed back; a node
# whose pod is not running, a node with no kmesh pod, a kubectl that is missing: said, exit 1,
# the others still shown. Cluster commands refuse --node.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

CTL=$KM_ROOT/build/bin/kmeshctl
FAKE=$KM_ROOT/tests/lib/fake_kubectl.sh
kctl() { # kmeshctl in the node's netns (the fake API listens there), our kubeconfig and kubectl
	nsenter --net="/run/netns/$KM_NODE" env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST \
		HOME="$KM_DIR/home" FAKE_KUBECTL_DIR="$KM_DIR/kubectl" FAKE_KUBECTL_CTL="$CTL" \
		"$CTL" --kubeconfig "$KM_DIR/kubeconfig" --kubectl "$FAKE" "$@"
}
py_is() { # py_is PYTHON-EXPR: the JSON (or YAML) on stdin as d makes EXPR true
	"$KM_PY" -c 'import json, sys, yaml
d = yaml.safe_load(sys.stdin.read())
ok = eval(sys.argv[1])
if not ok:
    print("# got: %r" % (d,), file=sys.stderr)
sys.exit(0 if ok else 1)' "$1"
}
pods() { # pods JSON-OF-PODS: the fake API's state (re-read on every request)
	cat >"$KM_DIR/kube.json" <<JSON
{"namespaces": {"kmesh-system": {}, "other": {}}, "pods": {$1}}
JSON
}
KMESH='"labels": {"app.kubernetes.io/name": "kmesh"}'

trap 'km_env_cleanup' EXIT
km_env_setup kmn$$
km_make_pki
mkdir -p "$KM_DIR/home" "$KM_DIR/kubectl"
cat <<JSON | km_write_config
{"resources": [
 {"workload": {"uid": "Kubernetes//Pod/t/b1", "name": "b1", "namespace": "t", "addresses": ["$KM_SUBNET.21"]}}
]}
JSON
km_map_writer_start || exit 1
km_agent_start
km_wait_agent True 10 || exit 1
echo "KMESH_MAP_WRITER_SOCKET=$KM_SOCKET KMESH_XDS_SOCKET=$KM_AGENT_SOCKET KMESH_IPSEC_SOCKET=$KM_DIR/none.sock" \
	"KMESH_TUNNEL_SOCKET=$KM_DIR/none.sock" >"$KM_DIR/kubectl/kmesh-a.env"
echo "KMESH_MAP_WRITER_SOCKET=$KM_SOCKET KMESH_XDS_SOCKET=$KM_DIR/none.sock KMESH_IPSEC_SOCKET=$KM_DIR/none.sock" \
	"KMESH_TUNNEL_SOCKET=$KM_DIR/none.sock" >"$KM_DIR/kubectl/kmesh-b.env"
pods '"kmesh-system/kmesh-b": {'"$KMESH"', "node": "node-b"},
      "kmesh-system/kmesh-a": {'"$KMESH"', "node": "node-a"},
      "kmesh-system/app-on-a": {"labels": {"app": "web"}, "node": "node-a"},
      "other/kmesh-x": {'"$KMESH"', "node": "node-a"}'
km_kube_api_start "$KM_DIR/kube.json" tok-n
km_kubeconfig_write tok-n

# ---- one node ---------------------------------------------------------------------------------
local_out=$("$CTL" --map-writer-socket "$KM_SOCKET" --xds-socket "$KM_AGENT_SOCKET" \
	--ipsec-socket "$KM_DIR/none.sock" --tunnel-socket "$KM_DIR/none.sock" -o json version | "$KM_PY" -c 'import json, sys
print(sorted((r["process"], "error" in r) for r in json.load(sys.stdin)))')
check "--node node-a version: node-a's own answer, as it prints it (JSON given: JSON)" \
	eval 'kctl --node node-a -o json version | "$KM_PY" -c "import json, sys
print(sorted((r[\"process\"], \"error\" in r) for r in json.load(sys.stdin)))" | grep -qxF "$local_out"'
check "... through kubectl exec in kmesh-a's map-writer container of kmesh-system, -o as given" \
	eval 'tail -n 1 "$KM_DIR/kubectl/calls" | grep -qxF -- "$(printf "%s\t" --kubeconfig "$KM_DIR/kubeconfig" exec -n kmesh-system kmesh-a -c map-writer -- kmeshctl -o json --timeout-ms 5000)version"'
check "... the pod found by label and node in the namespace (not the other pods)" \
	eval '"$KM_PY" -c "import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
sys.exit(not (r[\"method\"] == \"GET\" and r[\"path\"] == \"/api/v1/namespaces/kmesh-system/pods?labelSelector=app.kubernetes.io%2Fname%3Dkmesh&fieldSelector=spec.nodeName%3Dnode-a\"))" "$KM_DIR/kube-api.requests"'
check "--node node-b version (a table): node-b's answer, its xDS agent unreachable there" \
	eval 'out=$(kctl --node node-b version); grep -q "^map-writer .*[0-9]" <<<"$out" && grep -q "^xds-agent .*none.sock" <<<"$out"'
out=$(kctl --node node-a dump frobnicate 2>&1)
rc=$?
check "one node: the remote exit code and error as they are (usage: 2)" eval '[ $rc = 2 ] && grep -q "usage: kmeshctl dump" <<<"$out"'
out=$(kctl --node node-z version 2>&1)
rc=$?
check "a node with no kmesh pod: exit 1, saying where it looked" \
	eval '[ $rc = 1 ] && grep -q "no kmesh pod on node node-z (namespace kmesh-system, label app.kubernetes.io/name=kmesh)" <<<"$out"'

# ---- several nodes ----------------------------------------------------------------------------
check "--all-nodes -o json version: one list, every row led by its node, both nodes' processes" \
	eval 'kctl --all-nodes -o json version | py_is "list(d[0])[0] == \"node\" and sorted({(r[\"node\"], r[\"process\"]) for r in d}) == [(n, p) for n in (\"node-a\", \"node-b\") for p in (\"ipsec-agent\", \"kmeshctl\", \"map-writer\", \"tunnel\", \"xds-agent\")] and [r for r in d if r[\"node\"] == \"node-b\" and r[\"process\"] == \"xds-agent\"][0][\"error\"] and \"error\" not in [r for r in d if r[\"node\"] == \"node-a\" and r[\"process\"] == \"xds-agent\"][0]"'
check "... each node asked in JSON" eval '[ "$(grep -c "kmeshctl	-o	json	--timeout-ms	5000	version" "$KM_DIR/kubectl/calls")" -ge 3 ]'
check "flags anywhere: version --all-nodes -o yaml, the same rows as YAML" \
	eval 'kctl version --all-nodes -o yaml | py_is "len(d) == 10 and d[0][\"node\"] == \"node-a\""'
check "a table with NODE as its first column, nodes in order" \
	eval 'out=$(kctl --all-nodes version); head -n 1 <<<"$out" | grep -q "^NODE  *PROCESS" && [ "$(awk "NR > 1 {print \$1}" <<<"$out" | uniq | tr "\n" " ")" = "node-a node-b " ]'
check "--node node-b,node-a and --node twice: two nodes named, merged the same way" \
	eval 'kctl --node node-b,node-a -o json version | py_is "sorted({r[\"node\"] for r in d}) == [\"node-a\", \"node-b\"]" && kctl --node node-b --node node-a -o json version | py_is "len(d) == 10"'
pods '"kmesh-system/kmesh-b": {'"$KMESH"', "node": "node-b"},
      "kmesh-system/kmesh-a": {'"$KMESH"', "node": "node-a"},
      "kmesh-system/kmesh-c": {'"$KMESH"', "node": "node-c", "phase": "Pending"},
      "kmesh-system/kmesh-d": {'"$KMESH"', "node": "node-d"}'
out=$(kctl --all-nodes -o json version 2>"$KM_DIR/err")
rc=$?
check "a node whose pod is not running and one whose exec fails: exit 1, each named on stderr" \
	eval '[ $rc = 1 ] && grep -q "node node-c: its kmesh pod is not running (pod kmesh-c)" "$KM_DIR/err" && grep -q "node node-d: Error from server (NotFound): pods \"kmesh-d\" not found (pod kmesh-d, exit 1)" "$KM_DIR/err"'
check "... and the nodes that answered are still shown" \
	eval 'py_is "sorted({r[\"node\"] for r in d}) == [\"node-a\", \"node-b\"]" <<<"$out"'

# ---- refusals ---------------------------------------------------------------------------------
out=$(kctl --node node-a secret get 2>&1)
rc=$?
check "a cluster command (secret) refuses --node: usage (2)" eval '[ $rc = 2 ] && grep -q "secret is not a node command" <<<"$out"'
out=$(nsenter --net="/run/netns/$KM_NODE" env -u KUBECONFIG HOME="$KM_DIR/home" "$CTL" \
	--kubeconfig "$KM_DIR/kubeconfig" --kubectl "$KM_DIR/no-such-kubectl" --node node-a version 2>&1)
rc=$?
check "a kubectl that is not there: exit 1, saying how to fix it" \
	eval '[ $rc = 1 ] && grep -q "cannot run $KM_DIR/no-such-kubectl: No such file or directory (install kubectl, or give --kubectl PATH)" <<<"$out"'
out=$(nsenter --net="/run/netns/$KM_NODE" env -u KUBECONFIG HOME="$KM_DIR/home" "$CTL" \
	--kubeconfig "$KM_DIR/kubeconfig" --kmesh-namespace nowhere --all-nodes version 2>&1)
rc=$?
check "no kmesh pod in the namespace: exit 1, naming it and the flag" \
	eval '[ $rc = 1 ] && grep -q "no kmesh pod in nowhere" <<<"$out" && grep -q -- "--kmesh-namespace" <<<"$out"'
out=$(kctl --node 'a&labelSelector=x' version 2>&1)
rc=$?
check "a node name that is no DNS name is refused before any request (2)" \
	eval '[ $rc = 2 ] && grep -q "is not a node name" <<<"$out"'
check "--help of a command with --node is this build's, locally" \
	eval 'kctl --node node-a version --help | grep -q "usage: kmeshctl version"'

km_check_summary kmeshctl-nodes
