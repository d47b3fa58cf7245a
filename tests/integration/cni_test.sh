#!/usr/bin/env bash
# cni_test.sh — the CNI plugin, the node's CNI agent and its installer, end to end.
# `kmesh-cni-agent install` chains the plugin into a conflist of Debian's real bridge +
# host-local plugins and answers its calls; pods are network namespaces set up by running that
# list the way a runtime does (tests/lib/cni_chain.py: the CNI environment, stdin, prevResult),
# inside the test's node namespace; a fake Kubernetes API (tests/lib/fake_kube_api.py, TLS,
# bearer token, lists and watches) says which pods belong in the mesh. Checked: an enrolled
# pod's connections to a VIP are load-balanced and a non-enrolled pod's are not; CHECK, DEL
# (twice, and after the netns is gone); garbage stdin, no prevResult; the API stopped (a pod in
# the cache still enrolls; one that is not fails open or closed), a pod ADDed before its watch
# event, a paused map writer, a failing annotation (retried), the agent down during an ADD
# (decided by its reconcile once back), restarted between ADD and DEL, a DEL that never came
# (collected), under both fail policies; the installer puts its entry back within a second
# when the primary CNI rewrites its file, never writes an invalid one, and leaves nothing
# behind on uninstall.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

trap 'km_env_cleanup' EXIT
km_env_setup kmc$$
km_make_pki
CNI=$KM_DIR/cni
CONFLIST=$CNI/net.d/10-kmtest.conflist
mkdir -p "$CNI/bin" "$CNI/net.d" "$CNI/sa" "$CNI/cache"
cp "$KM_DIR/pki/ca.pem" "$CNI/sa/ca.crt"
echo "token-1" >"$CNI/sa/token"

cat >"$KM_DIR/kube.json" <<'JSON'
{"namespaces": {"mesh": {"labels": {"istio.io/dataplane-mode": "Kmesh"}}, "plain": {}},
 "pods": {"mesh/c1": {}, "mesh/c3": {}, "mesh/c4": {}, "mesh/c5": {},
          "mesh/c2": {"labels": {"istio.io/dataplane-mode": "none"}},
          "mesh/side": {"annotations": {"sidecar.istio.io/status": "{}"}},
          "mesh/wp": {"labels": {"gateway.istio.io/managed": "istio.io-mesh-controller"}},
          "plain/b1": {}, "plain/b2": {},
          "plain/opt-in": {"labels": {"istio.io/dataplane-mode": "kmesh"}}}}
JSON
km_kube_api_start "$KM_DIR/kube.json" token-1

# the primary CNI's list: Debian's bridge + host-local, addresses kept in the test's directory
cat >"$CONFLIST" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "kmtest",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.124.0.0/24"}]],
              "dataDir": "$CNI/ipam"}}
  ]
}
JSON
chmod 0640 "$CONFLIST"
cp "$CONFLIST" "$KM_DIR/primary.conflist"

km_map_writer_start || exit 1

AGENT_SOCK=$CNI/state/agent.sock
# agent_start [OPTIONS]: the node's CNI agent, in the node's namespace (where the API listens);
# it leaves the plugin installed when stopped (--keep-on-exit) unless UNINSTALL=1
agent_start() {
	local mark
	touch "$KM_DIR/installer.log"
	mark=$(wc -l <"$KM_DIR/installer.log")
	ip netns exec "$KM_NODE" env KUBERNETES_SERVICE_HOST=127.0.0.1 \
		KUBERNETES_SERVICE_PORT="$KM_KUBE_PORT" KMESH_SERVICE_ACCOUNT_DIR="$CNI/sa" \
		"$KM_BIN/kmesh-cni-agent" install --cni-bin-dir "$CNI/bin" --cni-conf-dir "$CNI/net.d" \
		--plugin-binary "$KM_BIN/kmesh-cni" --node-name node-1 --map-writer-socket "$KM_SOCKET" \
		--state-dir "$CNI/state" --plugin-log-level debug --resync-seconds 600 \
		--reconcile-ms 200 --gc-age-seconds 2 --log-level debug \
		$([ "${UNINSTALL:-0}" = 1 ] || echo --keep-on-exit) "$@" >>"$KM_DIR/installer.log" 2>&1 &
	INSTALLER=$!
	KM_PIDS+=($INSTALLER)
	for _ in $(seq 1 50); do
		[ -S "$AGENT_SOCK" ] && tail -n +$((mark + 1)) "$KM_DIR/installer.log" | grep -q "cache: .* pods listed" && return 0
		sleep 0.1
	done
	echo "the CNI agent did not start" >&2
	return 1
}
agent_stop() { # SIGTERM, wait; the exit code in AGENT_RC
	kill -TERM "$INSTALLER"
	for _ in $(seq 1 50); do kill -0 "$INSTALLER" 2>/dev/null || break; sleep 0.1; done
	wait "$INSTALLER"
	AGENT_RC=$?
}
agent_start || exit 1

for _ in $(seq 1 50); do [ -x "$CNI/bin/kmesh-cni" ] && break; sleep 0.1; done
if [[ "$KM_BIN" == */san-bin ]]; then # the sanitizers' runtime is a shared library
	check "install: the (sanitized) plugin is copied as built" cmp -s "$KM_BIN/kmesh-cni" "$CNI/bin/kmesh-cni"
else
	check "install: the plugin is one static binary, copied as built (no libraries beside it)" \
		eval 'cmp -s "$KM_BIN/kmesh-cni" "$CNI/bin/kmesh-cni" && [ ! -e "$CNI/bin/kmesh-cni.d" ] &&
		      ! readelf -l "$CNI/bin/kmesh-cni" | grep -q "interpreter"'
	out=$(unshare -m bash -c 'mount -t tmpfs none /usr/lib/x86_64-linux-gnu && CNI_COMMAND=VERSION exec "$1" </dev/null' _ "$CNI/bin/kmesh-cni" 2>&1)
	check "... so it runs with the system's libraries hidden (a node without them, or an older glibc)" \
		grep -q '"cniVersion"' <<<"$out"
fi

# plugins_of FILE: the plugin types of a conflist, comma-separated ("invalid" if it is not one)
plugins_of() {
	"$KM_PY" -c 'import json, sys
try:
    print(",".join(p["type"] for p in json.load(open(sys.argv[1]))["plugins"]))
except Exception:
    print("invalid")' "$1"
}
# wait_plugins LIST [TENTHS]: until the conflist's plugin types are LIST; WAITED = tenths waited
wait_plugins() {
	local i
	for i in $(seq 0 "${2:-30}"); do
		[ "$(plugins_of "$CONFLIST")" = "$1" ] && WAITED=$i && return 0
		sleep 0.1
	done
	echo "conflist has $(plugins_of "$CONFLIST"), expected $1" >&2
	return 1
}
mode_of() { stat -c %a "$1"; }

check "installer: kmesh-cni is appended as the last plugin" wait_plugins bridge,kmesh-cni
check "installer: the conflist keeps its mode 0640" test "$(mode_of "$CONFLIST")" = 640
check "installer: the entry names the agent's socket and no kubeconfig; none is written (less privilege on disk)" \
	eval '"$KM_PY" -c "import json, sys
e = json.load(open(sys.argv[1]))[\"plugins\"][-1]
assert e[\"agentSocket\"] == sys.argv[2] and \"kubeconfig\" not in e, e" "$CONFLIST" "$AGENT_SOCK" &&
	      [ ! -e "$CNI/net.d/kmesh-cni-kubeconfig" ]'
check "the agent's socket is root's alone (0600)" test "$(mode_of "$AGENT_SOCK")" = 600

chain() { # chain ADD|DEL|CHECK POD NAMESPACE [NETNS]: the list, run as a runtime does
	ip netns exec "$KM_NODE" "$KM_PY" "$KM_ROOT/tests/lib/cni_chain.py" "$1" --conflist "$CONFLIST" \
		--cni-path "$CNI/bin:/usr/lib/cni" --cache "$CNI/cache" --container-id "ctr-$2" \
		--netns "${4-/run/netns/$KM_PREFIX-$2}" --pod-namespace "$3" --pod-name "$2"
}
pod_add() { # pod_add POD NAMESPACE: a sandbox netns, then ADD; the result in $CNI/POD.result
	ip netns add "$KM_PREFIX-$1"
	KM_PODS+=("$KM_PREFIX-$1")
	ip -n "$KM_PREFIX-$1" link set lo up
	chain ADD "$1" "$2" >"$CNI/$1.result" 2>"$CNI/$1.err"
}
ip_of() { "$KM_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["ips"][0]["address"].split("/")[0])' "$CNI/$1.result"; }
manage_rows() { "$KM_TESTCTL" dump --socket "$KM_SOCKET" --table manage | grep -c '^manage'; }

for p in b1:plain b2:plain c1:mesh c2:mesh side:mesh wp:mesh opt-in:plain; do
	pod_add "${p%%:*}" "${p#*:}" || { echo "ADD ${p%%:*} failed:"; cat "$CNI/${p%%:*}.err"; }
done
check "ADD through the chain: every pod got an address from host-local" \
	eval 'for p in b1 b2 c1 c2 side wp opt-in; do ip_of $p >/dev/null || exit 1; done'
check "enrolled: c1 (namespace label) and opt-in (pod label) only, not none/sidecar/waypoint/plain" \
	test "$(manage_rows)" -eq 2
check "the map writer knows where each enrolled pod's netns is (CNI_NETNS, for closing connections)" \
	eval 'grep -q "netns $(km_netns_path c1)\$" <<<"$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table manage)"'
mark_sysctls() { ip netns exec "$KM_PREFIX-$1" cat /proc/sys/net/ipv4/tcp_fwmark_accept \
	/proc/sys/net/ipv4/fwmark_reflect /proc/sys/net/ipv6/fwmark_reflect | tr -d '\n'; }
check "an enrolled pod's sockets and replies take their packets' marks (tcp_fwmark_accept, fwmark_reflect: the tunnel's connections come from the HBONE caller's address); a pod not enrolled is untouched (c1 $(mark_sysctls c1), opt-in $(mark_sysctls opt-in), c2 $(mark_sysctls c2), b1 $(mark_sysctls b1))" \
	eval '[ "$(mark_sysctls c1) $(mark_sysctls opt-in) $(mark_sysctls c2) $(mark_sysctls b1)" = "111 111 000 000" ]'
host_veth_of() { "$KM_PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
print([i["name"] for i in r["interfaces"] if i["name"] != "cni0" and not i.get("sandbox")][0])' "$CNI/$1.result"; }
C1_VETH=$(host_veth_of c1)
C1_IFINDEX=$(ip -n "$KM_NODE" -o link show "$C1_VETH" | cut -d: -f1)
check "... and the node side of its eth0 ($C1_VETH, ifindex $C1_IFINDEX: where IPsec marks its traffic)" \
	says "host_ifindex $C1_IFINDEX netns $(km_netns_path c1)" \
	"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table manage
check "the result is the primary's, passed through unchanged" \
	"$KM_PY" -c 'import json, sys
r = json.load(open(sys.argv[1])); assert r["ips"][0]["address"].startswith("10.124.0."), r
assert [i["name"] for i in r["interfaces"]][:1] == ["cni0"], r' "$CNI/c1.result"
patches_done() { # the annotations are made off the ADD path: within 3 s
	for _ in $(seq 1 30); do [ "$(grep -c '"method": "PATCH"' "$KM_DIR/kube-api.requests")" -ge "$1" ] && return 0; sleep 0.1; done
	return 1
}
patches_done 2
check "the API saw one annotate PATCH per enrolled pod (made after the ADD), merge-patch, kmesh.net/redirection" \
	"$KM_PY" -c 'import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
patches = sorted((r["path"], r["content_type"], json.loads(r["body"])["metadata"]["annotations"]["kmesh.net/redirection"]) for r in reqs if r["method"] == "PATCH")
assert patches == [("/api/v1/namespaces/mesh/pods/c1", "application/merge-patch+json", "enabled"),
                   ("/api/v1/namespaces/plain/pods/opt-in", "application/merge-patch+json", "enabled")], patches
assert all(r["authorized"] for r in reqs), "a request without the token"
gets = [r["path"] for r in reqs if r["method"] == "GET" and "/pods/" in r["path"]]
assert not gets, "the agent asked the API for a pod its cache had: %s" % gets' "$KM_DIR/kube-api.requests"

B1=$(ip_of b1)
B2=$(ip_of b2)
km_backend_start b1 8080
km_backend_start b2 8080
cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "web", "namespace": "plain", "hostname": "web.plain", "addresses": [{"address": "10.96.7.1"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}},
 {"workload": {"uid": "Kubernetes//Pod/plain/b1", "addresses": ["$B1"], "services": {"plain/web.plain": {}}}},
 {"workload": {"uid": "Kubernetes//Pod/plain/b2", "addresses": ["$B2"], "services": {"plain/web.plain": {}}}}
]}
JSON
km_agent_start
km_wait_listen b1 8080 && km_wait_listen b2 8080
check "the mesh has the VIP's two endpoints" km_wait_rows endpoint "^endpoint" 2
out=$(km_connect c1 10.96.7.1 80 --count 40)
check "enrolled c1: connections to the VIP are balanced across b1 and b2" \
	eval '[ $(count_of b1 <<<"$out") -gt 5 ] && [ $(count_of b2 <<<"$out") -gt 5 ] &&
	      [ $(($(count_of b1 <<<"$out") + $(count_of b2 <<<"$out"))) -eq 40 ]'
out=$(km_connect c2 10.96.7.1 80 --count 5)
check "not enrolled c2: the VIP is not rewritten (ENETUNREACH)" \
	test "$(count_of error:ENETUNREACH <<<"$out")" -eq 5

check "CHECK of the enrolled pod succeeds" chain CHECK c1 mesh
check "CHECK of a pod rightly not enrolled succeeds" chain CHECK c2 mesh
"$KM_TESTCTL" unenroll --socket "$KM_SOCKET" --netns "/run/netns/$KM_PREFIX-c1" >/dev/null
out=$(chain CHECK c1 mesh 2>&1)
rc=$?
check "CHECK finds a pod that should be enrolled but is not (code 102)" \
	eval '[ $rc -ne 0 ] && grep -q "\"code\": 102" <<<"$out"'
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "/run/netns/$KM_PREFIX-c1" >/dev/null

check "DEL unenrolls the pod" eval 'chain DEL c1 mesh && [ "$(manage_rows)" -eq 1 ]'
out=$(km_connect c1 10.96.7.1 80 --count 3)
check "after DEL the pod's VIP connections are no longer rewritten" \
	test "$(count_of error:ENETUNREACH <<<"$out")" -eq 3
check "DEL twice is fine" chain DEL c1 mesh
pod_add c3 mesh
check "ADD c3, then its netns is deleted; DEL still unenrolls it" \
	eval '[ "$(manage_rows)" -eq 2 ] && ip netns del "$KM_PREFIX-c3" && chain DEL c3 mesh &&
	      [ "$(manage_rows)" -eq 1 ]'

# ---- failure modes, invoking the installed plugin directly as a runtime would -------------------
ip netns add "$KM_PREFIX-c4"
KM_PODS+=("$KM_PREFIX-c4")
PREV=$(cat "$CNI/c2.result")
plugin() { # plugin STDIN-FILE [POD]: ADD for mesh/POD (c4); stdout to $KM_DIR/out, exit code printed
	ip netns exec "$KM_NODE" env CNI_COMMAND=ADD CNI_CONTAINERID=ctr-${2:-c4} \
		CNI_NETNS="/run/netns/$KM_PREFIX-c4" CNI_IFNAME=eth0 \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=mesh;K8S_POD_NAME=${2:-c4}" \
		CNI_PATH="$CNI/bin" "$CNI/bin/kmesh-cni" <"$1" >"$KM_DIR/out"
	echo $?
}
conf() { # conf AGENT-SOCKET POLICY: a network configuration with the primary's result
	cat >"$KM_DIR/in.json" <<JSON
{"cniVersion": "1.0.0", "name": "kmtest", "type": "kmesh-cni", "agentSocket": "$1",
 "failPolicy": "$2", "stateDir": "$CNI/state", "prevResult": $PREV}
JSON
	echo "$KM_DIR/in.json"
}
del_c4() { # del_c4 AGENT-SOCKET POLICY [POD]: the runtime's DEL of mesh/POD (c4)
	ip netns exec "$KM_NODE" env CNI_COMMAND=DEL CNI_CONTAINERID=ctr-${3:-c4} CNI_IFNAME=eth0 \
		CNI_NETNS="/run/netns/$KM_PREFIX-c4" \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=mesh;K8S_POD_NAME=${3:-c4}" \
		"$CNI/bin/kmesh-cni" <"$(conf "$1" "$2")" >/dev/null
}
code_is() { "$KM_PY" -c 'import json, sys; assert json.load(open(sys.argv[1]))["code"] == int(sys.argv[2])' "$KM_DIR/out" "$1"; }
passed_through() { "$KM_PY" -c 'import json, sys; assert json.load(open(sys.argv[1])) == json.loads(sys.argv[2])' "$KM_DIR/out" "$PREV"; }
metric() { awk -v s="$1" '$1 == s {print $2}' "$CNI/state/metrics.prom"; }
wait_manage_rows() { # wait_manage_rows N SECONDS
	for _ in $(seq 1 $((${2} * 10))); do [ "$(manage_rows)" -eq "$1" ] && return 0; sleep 0.1; done
	return 1
}
set_pod() { # set_pod NS/NAME JSON|null: a pod of the fake API's state (null: deleted)
	"$KM_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); v = json.loads(sys.argv[3])
if v is None: d["pods"].pop(sys.argv[2], None)
else: d["pods"][sys.argv[2]] = v
json.dump(d, open(sys.argv[1] + ".tmp", "w"))' "$KM_DIR/kube.json" "$1" "$2" && mv "$KM_DIR/kube.json.tmp" "$KM_DIR/kube.json"
}
api_gets() { grep -c "\"method\": \"GET\", \"path\": \"/api/v1/namespaces/$1/pods/$2\"" "$KM_DIR/kube-api.requests"; }

echo 'this is { not json' >"$KM_DIR/garbage"
check "garbage stdin: CNI error code 6, exit non-zero" \
	eval '[ "$(plugin "$KM_DIR/garbage")" != 0 ] && code_is 6'
echo '{"cniVersion": "1.0.0", "name": "kmtest", "type": "kmesh-cni"}' >"$KM_DIR/noprev"
check "no prevResult: CNI error code 7 ('cannot be used on its own')" \
	eval '[ "$(plugin "$KM_DIR/noprev")" != 0 ] && code_is 7 && grep -q "on its own" "$KM_DIR/out"'

# the API server stops: what the cache knows still decides
KUBE_API_PID=$(pgrep -f "fake_kube_api.py .*--state $KM_DIR/kube.json")
kill -STOP $KUBE_API_PID
rows=$(manage_rows)
check "API stopped: ADD of a pod in the agent's cache still enrolls it (no API call on the path)" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" closed)")" = 0 ] && passed_through &&
	      [ "$(manage_rows)" -eq $((rows + 1)) ]'
del_c4 "$AGENT_SOCK" closed
set_pod mesh/c6 '{}' # a pod the watch cannot bring while the API is stopped
check "API stopped, a pod the cache has not seen, failPolicy closed: CNI error code 100" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" closed)" c6)" != 0 ] && code_is 100'
check "... failPolicy open: the pod starts (prevResult passed through), not enrolled" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" open)" c6)" = 0 ] && passed_through &&
	      [ "$(manage_rows)" -eq "$rows" ]'
check "... with a fail-open log line and kmesh_cni_fail_open_total{reason=\"kube_api\"} 1" \
	eval 'grep -q "ADD mesh/c6: fail-open" "$CNI/state/kmesh-cni.log" &&
	      [ "$(metric "kmesh_cni_fail_open_total{reason=\"kube_api\"}")" = 1 ]'
kill -CONT $KUBE_API_PID
check "... and once the API is back the agent decides it and enrolls the pod (its reconcile)" \
	eval 'wait_manage_rows $((rows + 1)) 10 && [ -z "$(ls "$CNI/state/undecided")" ]'
del_c4 "$AGENT_SOCK" closed c6
check "... the runtime's DEL then unenrolls it" eval '[ "$(manage_rows)" -eq "$rows" ]'

# a pod created and ADDed before the agent's watch has shown it
set_pod mesh/c7 '{"unwatched": true}'
plugin "$(conf "$AGENT_SOCK" closed)" c7 >"$KM_DIR/c7.rc" &
c7_pid=$!
sleep 0.2
set_pod mesh/c7 '{}'
wait $c7_pid
check "a pod ADDed before its watch event: the ADD waits for the event and enrolls it, no API GET" \
	eval '[ "$(cat "$KM_DIR/c7.rc")" = 0 ] && [ "$(manage_rows)" -eq $((rows + 1)) ] && [ "$(api_gets mesh c7)" = 0 ]'
del_c4 "$AGENT_SOCK" closed c7
set_pod mesh/c8 '{"unwatched": true}'
check "... one whose event does not come: one GET after the wait, then enrolled" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" closed)" c8)" = 0 ] && [ "$(manage_rows)" -eq $((rows + 1)) ] &&
	      [ "$(api_gets mesh c8)" = 1 ] && [ "$(metric kmesh_cni_agent_api_fallbacks_total)" -ge 1 ]'
del_c4 "$AGENT_SOCK" closed c8

# the map writer is paused: the agent's enroll times out; it enrolls the pod once it answers
kill -STOP "$KM_MW_PID"
check "map writer paused, failPolicy open: the pod starts, kmesh_cni_fail_open_total{reason=\"map_writer\"} 1" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" open)")" = 0 ] && passed_through &&
	      [ "$(metric "kmesh_cni_fail_open_total{reason=\"map_writer\"}")" = 1 ] &&
	      grep -q "the agent enrolls it once the map writer is back" "$CNI/state/kmesh-cni.log"'
check "... map writer paused, failPolicy closed: CNI error code 101" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" closed)")" != 0 ] && code_is 101'
kill -CONT "$KM_MW_PID"
check "... once the map writer answers again, the agent enrolls the pod (within 5 s)" \
	eval 'wait_manage_rows $((rows + 1)) 5 && [ -z "$(ls "$CNI/state/undecided")" ]'
check "... the runtime's DEL then unenrolls it" \
	eval 'del_c4 "$AGENT_SOCK" closed && [ "$(manage_rows)" -eq "$rows" ] && [ ! -e "$CNI/state/containers/ctr-c4" ]'

# the agent is down when the kubelet calls
agent_stop
kill -STOP $KUBE_API_PID # (not needed by the plugin: it never asks the API)
check "agent down, failPolicy closed: CNI error code 101" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" closed)")" != 0 ] && code_is 101 && [ ! -e "$CNI/state/containers/ctr-c4" ]'
check "agent down, failPolicy open: the pod starts; its ADD is left for the agent (undecided/ctr-c4)" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" open)")" = 0 ] && passed_through && [ -s "$CNI/state/undecided/ctr-c4" ] &&
	      [ "$(metric "kmesh_cni_fail_open_total{reason=\"node_agent\"}")" = 1 ]'
kill -CONT $KUBE_API_PID
agent_start || exit 1
check "... the agent, back, decides it and enrolls the pod (kmesh_cni_agent_reconciled_total{action=\"enrolled\"})" \
	eval 'wait_manage_rows $((rows + 1)) 5 && [ ! -e "$CNI/state/undecided/ctr-c4" ] &&
	      [ "$(metric "kmesh_cni_agent_reconciled_total{action=\"enrolled\"}")" -ge 1 ]'
agent_stop
agent_start || exit 1
check "the agent restarted between ADD and DEL: the DEL unenrolls the pod" \
	eval 'del_c4 "$AGENT_SOCK" closed && [ "$(manage_rows)" -eq "$rows" ] && [ ! -e "$CNI/state/containers/ctr-c4" ]'
plugin "$(conf "$AGENT_SOCK" open)" >/dev/null
plugin "$(conf "$AGENT_SOCK" open)" >/dev/null # ADD again: the same container
check "an ADD repeated for the same container enrolls it once" test "$(manage_rows)" -eq $((rows + 1))
# the pod is deleted and its DEL never comes (the agent was down; failPolicy open let it pass)
agent_stop
check "agent down, DEL under failPolicy open passes; the row stays for now" \
	eval 'del_c4 "$AGENT_SOCK" open && [ "$(manage_rows)" -eq $((rows + 1)) ]'
set_pod mesh/c4 null
agent_start || exit 1
check "... the agent, back, finds the pod gone (the cache, confirmed by the API) and unenrolls it" \
	eval 'wait_manage_rows "$rows" 45 && [ ! -e "$CNI/state/containers/ctr-c4" ] &&
	      [ "$(metric "kmesh_cni_agent_reconciled_total{action=\"unenrolled\"}")" -ge 1 ]'
set_pod mesh/c4 '{}'

# the annotation is refused: the pod is enrolled anyway, and annotated once the API takes it
"$KM_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); d["fail"] = {"PATCH": 500}
json.dump(d, open(sys.argv[1], "w"))' "$KM_DIR/kube.json"
set_pod mesh/c9 '{}'
sleep 0.3
check "annotation refused: the pod is enrolled all the same (the annotation is off the ADD path)" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" closed)" c9)" = 0 ] && [ "$(manage_rows)" -eq $((rows + 1)) ]'
sleep 1
"$KM_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); d.pop("fail")
json.dump(d, open(sys.argv[1], "w"))' "$KM_DIR/kube.json"
annotated_c9() {
	for _ in $(seq 1 50); do
		[ "$(grep -c '"method": "PATCH", "path": "/api/v1/namespaces/mesh/pods/c9"' "$KM_DIR/kube-api.requests")" -ge 2 ] &&
			[ "$(metric "kmesh_cni_agent_annotations_total{result=\"ok\"}")" -ge 3 ] && return 0
		sleep 0.1
	done
	return 1
}
check "... the agent retries the annotation until the API takes it" annotated_c9
del_c4 "$AGENT_SOCK" closed c9

# an agent that takes the call and never answers: the outcome is unknown
mkdir -p "$KM_DIR/py"
protoc --proto_path="$KM_ROOT/ipc" --python_out="$KM_DIR/py" "$KM_ROOT/ipc/kmesh_ipc.proto"
"$KM_PY" "$KM_ROOT/tests/lib/silent_map_writer.py" "$KM_DIR/silent.sock" "$KM_DIR/py" &
KM_PIDS+=($!)
for _ in $(seq 1 50); do [ -S "$KM_DIR/silent.sock" ] && break; sleep 0.1; done
sed -i 's/"failPolicy"/"timeoutMs": 300, "failPolicy"/' "$(conf "$KM_DIR/silent.sock" closed)"
check "agent silent after the call, failPolicy closed: ADD fails (101), its state kept for DEL" \
	eval '[ "$(plugin "$KM_DIR/in.json")" != 0 ] && code_is 101 && grep -q "did not answer" "$KM_DIR/out" &&
	      [ -e "$CNI/state/containers/ctr-c4" ]'
check "... and the runtime's DEL of the failed sandbox clears the state" \
	eval 'del_c4 "$AGENT_SOCK" closed && [ ! -e "$CNI/state/containers/ctr-c4" ] && [ "$(manage_rows)" -eq "$rows" ]'
check "with everything healthy the same ADD enrolls the pod" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" closed)")" = 0 ] && [ "$(manage_rows)" -eq $((rows + 1)) ]'
check "the counters file is Prometheus text with one TYPE line per metric" \
	eval '[ "$(grep -c "^# TYPE kmesh_cni_requests_total counter" "$CNI/state/metrics.prom")" = 1 ] &&
	      [ "$(metric "kmesh_cni_requests_total{command=\"ADD\",result=\"enrolled\"}")" -ge 4 ]'
# the endpoint's count, compared as a number with the 4 counted above: it is 9 in a run here, and
# the one-digit pattern ([4-9]) this was failed the runs that counted 10 or more
served_adds() { km_metrics | awk '$1 == "kmesh_cni_requests_total{command=\"ADD\",result=\"enrolled\"}" {print $2}'; }
check "... which the node's metrics endpoint serves (copied by the map writer, the dir being root's)" \
	eval 'for _ in $(seq 1 30); do [ "$(served_adds)" -ge 4 ] 2>/dev/null && break; sleep 0.1; done
	      [ "$(served_adds)" -ge 4 ]'

# ---- IPsec on: a pod's traffic must be encryptable --------------------------------------------
# on as the IPsec agent turns it on (kmesh-testctl in the ipsec role), with cni0's address as the
# node's: decrypt goes on cni0, encrypt on each enrolled pod's veth
"$KM_TESTCTL" ipsec-dataplane --socket "$KM_SOCKET" --state on --addrs 10.124.0.1 >/dev/null
pod_add c5 mesh
C5_VETH=$(host_veth_of c5)
check "IPsec on: ADD puts the encrypt program on the new pod's veth ($C5_VETH)" \
	says km_ipsec_encry tc -n "$KM_NODE" filter show dev "$C5_VETH" ingress
del_c4 "$AGENT_SOCK" closed
rows=$(manage_rows)
check "IPsec on, a pod with no node-side interface (no veth): error 103 even with failPolicy open" \
	eval '[ "$(plugin "$(conf "$AGENT_SOCK" open)")" != 0 ] && code_is 103 &&
	      grep -q "node-side interface is not given" "$KM_DIR/out"'
check "... not enrolled, no state kept" \
	eval '[ "$(manage_rows)" -eq "$rows" ] && [ ! -e "$CNI/state/containers/ctr-c4" ]'
"$KM_TESTCTL" ipsec-dataplane --socket "$KM_SOCKET" --state off >/dev/null
check "IPsec off again: the program is off the pod's veth" \
	lacks km_ipsec tc -n "$KM_NODE" filter show dev "$C5_VETH" ingress

# ---- the installer under a primary CNI that rewrites its file ----------------------------------
cat "$KM_DIR/primary.conflist" >"$CONFLIST" # in place, not atomically, as some do
WAITED=
wait_plugins bridge,kmesh-cni 10
check "the primary rewrites its conflist: the entry is back within a second (${WAITED:-?}00 ms)" \
	test -n "$WAITED"
check "... and the file keeps its mode 0640" test "$(mode_of "$CONFLIST")" = 640
OTHER=$CNI/net.d/20-other.conflist
sed 's/"kmtest"/"other"/' "$KM_DIR/primary.conflist" >"$OTHER"
printf '{"cniVersion": "1.0.0", "plugins": [' >"$CONFLIST"
sleep 0.5
check "a half-written (invalid) conflist is left alone: never rewritten while invalid" \
	test "$(cat "$CONFLIST")" = '{"cniVersion": "1.0.0", "plugins": ['
check "... meanwhile the next valid conflist carries the entry" \
	test "$(plugins_of "$OTHER")" = bridge,kmesh-cni
cat "$KM_DIR/primary.conflist" >"$CONFLIST"
check "once it is valid again, the entry comes back" wait_plugins bridge,kmesh-cni 10
check "... and leaves the other conflist" test "$(plugins_of "$OTHER")" = bridge
rm -f "$OTHER"
for i in $(seq 1 20); do cat "$KM_DIR/primary.conflist" >"$CONFLIST"; sleep 0.02; done
check "20 rewrites in a row: the entry is back after the last" wait_plugins bridge,kmesh-cni 10

agent_stop
UNINSTALL=1 agent_start || exit 1
agent_stop
check "uninstall on SIGTERM: exit 0; the entry and the binary are gone" \
	eval '[ $AGENT_RC -eq 0 ] && [ "$(plugins_of "$CONFLIST")" = bridge ] &&
	      [ ! -e "$CNI/bin/kmesh-cni" ] && [ "$(mode_of "$CONFLIST")" = 640 ]'
check "no temporary files left in the CNI directories" \
	test -z "$(ls -A "$CNI/net.d" "$CNI/bin" | grep kmesh-tmp)"

[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer installer xds-agent
[ $KM_FAIL -eq 0 ] || tail -n 30 "$CNI/state/kmesh-cni.log"
km_check_summary cni_test
