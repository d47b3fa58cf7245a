#!/usr/bin/env bash
# cni_test.sh — the CNI plugin and its installer, end to end. `kmesh-cni install` chains the
# plugin into a conflist of Debian's real bridge + host-local plugins; pods are network
# namespaces set up by running that list the way a runtime does (tests/lib/cni_chain.py: the
# CNI environment, stdin, prevResult), inside the test's node namespace; a fake Kubernetes API
# (tests/lib/fake_kube_api.py, TLS, bearer token) says which pods belong in the mesh. Checked:
# an enrolled pod's connections to a VIP are load-balanced and a non-enrolled pod's are not;
# CHECK, DEL (twice, and after the netns is gone); garbage stdin, no prevResult, an unreachable
# API, a dead map writer and a failing annotation, under both fail policies; the installer
# puts its entry back within a second when the primary CNI rewrites its file, never writes an
# invalid one, follows a token rotation, and leaves nothing behind on uninstall.
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

"$KM_BIN/kmesh-cni" install --cni-bin-dir "$CNI/bin" --cni-conf-dir "$CNI/net.d" \
	--plugin-binary "$KM_BIN/kmesh-cni" --service-account-dir "$CNI/sa" \
	--kube-server "https://127.0.0.1:$KM_KUBE_PORT" --map-writer-socket "$KM_SOCKET" \
	--state-dir "$CNI/state" --plugin-log-level debug --resync-seconds 600 \
	>>"$KM_DIR/installer.log" 2>&1 &
INSTALLER=$!
KM_PIDS+=($INSTALLER)

# The plugin runs on the node, whatever libraries it has: the installer puts this program's
# shared objects and loader beside it and points the copy at that loader.
for _ in $(seq 1 50); do [ -x "$CNI/bin/kmesh-cni" ] && break; sleep 0.1; done
check "install: the plugin's libraries and loader beside it, the plugin pointed at that loader" \
	eval '[ -e "$CNI/bin/kmesh-cni.d/libc.so.6" ] && [ -e "$CNI/bin/kmesh-cni.d/libcurl.so.4" ] &&
	      readelf -l "$CNI/bin/kmesh-cni" | grep -q "interpreter: /*$CNI/bin/kmesh-cni.d/ld-linux"'
out=$(unshare -m bash -c 'mount -t tmpfs none /usr/lib/x86_64-linux-gnu && CNI_COMMAND=VERSION exec "$1" </dev/null' _ "$CNI/bin/kmesh-cni" 2>&1)
check "... so it runs with the system's libraries hidden (a node without them, or an older glibc)" \
	grep -q '"cniVersion"' <<<"$out"

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
# same_but_interp A B: the files differ only inside A's interpreter path (PT_INTERP)
same_but_interp() {
	"$KM_PY" - "$1" "$2" <<'PY'
import struct, sys
a, b = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
phoff, = struct.unpack_from("<Q", a, 32)
phnum, = struct.unpack_from("<H", a, 56)
for i in range(phnum):
    p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", a, phoff + 56 * i)
    if p_type == 3:  # PT_INTERP
        lo, hi = p_offset, p_offset + p_filesz
sys.exit(0 if len(a) == len(b) and a != b and a[:lo] == b[:lo] and a[hi:] == b[hi:] else 1)
PY
}
check "installer: the binary is in the CNI bin dir, executable, identical but for its interpreter" \
	eval '[ -x "$CNI/bin/kmesh-cni" ] && same_but_interp "$KM_BIN/kmesh-cni" "$CNI/bin/kmesh-cni"'
check "installer: the kubeconfig is mode 0600 and carries the token" \
	eval '[ "$(mode_of "$CNI/net.d/kmesh-cni-kubeconfig")" = 600 ] &&
	      grep -q token-1 "$CNI/net.d/kmesh-cni-kubeconfig"'

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
check "the API saw one annotate PATCH per enrolled pod, merge-patch, kmesh.net/redirection" \
	"$KM_PY" -c 'import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
patches = sorted((r["path"], r["content_type"], json.loads(r["body"])["metadata"]["annotations"]["kmesh.net/redirection"]) for r in reqs if r["method"] == "PATCH")
assert patches == [("/api/v1/namespaces/mesh/pods/c1", "application/merge-patch+json", "enabled"),
                   ("/api/v1/namespaces/plain/pods/opt-in", "application/merge-patch+json", "enabled")], patches
assert all(r["authorized"] for r in reqs), "a request without the token"' "$KM_DIR/kube-api.requests"

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
plugin() { # plugin STDIN-FILE: ADD for mesh/c4; stdout to $KM_DIR/out, exit code printed
	ip netns exec "$KM_NODE" env CNI_COMMAND=ADD CNI_CONTAINERID=ctr-c4 \
		CNI_NETNS="/run/netns/$KM_PREFIX-c4" CNI_IFNAME=eth0 \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=mesh;K8S_POD_NAME=c4" \
		CNI_PATH="$CNI/bin" "$CNI/bin/kmesh-cni" <"$1" >"$KM_DIR/out"
	echo $?
}
conf() { # conf KUBECONFIG SOCKET POLICY: a network configuration with the primary's result
	cat >"$KM_DIR/in.json" <<JSON
{"cniVersion": "1.0.0", "name": "kmtest", "type": "kmesh-cni", "kubeconfig": "$1",
 "mapWriterSocket": "$2", "failPolicy": "$3", "stateDir": "$CNI/state", "prevResult": $PREV}
JSON
	echo "$KM_DIR/in.json"
}
code_is() { "$KM_PY" -c 'import json, sys; assert json.load(open(sys.argv[1]))["code"] == int(sys.argv[2])' "$KM_DIR/out" "$1"; }
passed_through() { "$KM_PY" -c 'import json, sys; assert json.load(open(sys.argv[1])) == json.loads(sys.argv[2])' "$KM_DIR/out" "$PREV"; }
metric() { awk -v s="$1" '$1 == s {print $2}' "$CNI/state/metrics.prom"; }
KCFG=$CNI/net.d/kmesh-cni-kubeconfig

echo 'this is { not json' >"$KM_DIR/garbage"
check "garbage stdin: CNI error code 6, exit non-zero" \
	eval '[ "$(plugin "$KM_DIR/garbage")" != 0 ] && code_is 6'
echo '{"cniVersion": "1.0.0", "name": "kmtest", "type": "kmesh-cni"}' >"$KM_DIR/noprev"
check "no prevResult: CNI error code 7 ('cannot be used on its own')" \
	eval '[ "$(plugin "$KM_DIR/noprev")" != 0 ] && code_is 7 && grep -q "on its own" "$KM_DIR/out"'

sed "s|127.0.0.1:$KM_KUBE_PORT|127.0.0.1:1|" "$KCFG" >"$KM_DIR/dead-kubeconfig"
check "API unreachable, failPolicy open: the pod starts (prevResult passed through), not enrolled" \
	eval '[ "$(plugin "$(conf "$KM_DIR/dead-kubeconfig" "$KM_SOCKET" open)")" = 0 ] &&
	      passed_through && [ "$(manage_rows)" -eq 1 ]'
check "... with a fail-open log line and kmesh_cni_fail_open_total{reason=\"kube_api\"} 1" \
	eval 'grep -q "ADD mesh/c4: fail-open" "$CNI/state/kmesh-cni.log" &&
	      [ "$(metric "kmesh_cni_fail_open_total{reason=\"kube_api\"}")" = 1 ]'
check "API unreachable, failPolicy closed: CNI error code 100" \
	eval '[ "$(plugin "$(conf "$KM_DIR/dead-kubeconfig" "$KM_SOCKET" closed)")" != 0 ] && code_is 100'

# a dead map writer leaves its socket file behind: connecting is refused
"$KM_PY" -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$KM_DIR/dead.sock"
del_c4() { # del_c4 SOCKET POLICY: the runtime's DEL of mesh/c4
	ip netns exec "$KM_NODE" env CNI_COMMAND=DEL CNI_CONTAINERID=ctr-c4 CNI_IFNAME=eth0 \
		CNI_NETNS="/run/netns/$KM_PREFIX-c4" \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=mesh;K8S_POD_NAME=c4" \
		"$CNI/bin/kmesh-cni" <"$(conf "$KCFG" "$1" "$2")" >/dev/null
}
wait_manage_rows() { # wait_manage_rows N SECONDS
	for _ in $(seq 1 $((${2} * 10))); do [ "$(manage_rows)" -eq "$1" ] && return 0; sleep 0.1; done
	return 1
}
mw_metric() { awk -v s="$1" '$1 == s {print $2}' "$KM_DIR/metrics/map-writer.prom"; }
# the map writer is paused meanwhile: the pending enrollment waits for it, as for a restart
kill -STOP "$KM_MW_PID"
check "map writer dead, failPolicy open: the pod starts, kmesh_cni_fail_open_total{reason=\"map_writer\"} 1" \
	eval '[ "$(plugin "$(conf "$KCFG" "$KM_DIR/dead.sock" open)")" = 0 ] && passed_through &&
	      [ "$(metric "kmesh_cni_fail_open_total{reason=\"map_writer\"}")" = 1 ]'
check "... its enrollment is left pending for the map writer (state/pending/ctr-c4)" \
	eval '[ -s "$CNI/state/pending/ctr-c4" ] && [ -e "$CNI/state/containers/ctr-c4" ] &&
	      grep -q "will enroll it once it is back" "$CNI/state/kmesh-cni.log"'
kill -CONT "$KM_MW_PID"
check "... and once the map writer is back, it enrolls the pod (a reconcile, within 6 s)" \
	eval 'wait_manage_rows 2 6 && [ ! -e "$CNI/state/pending/ctr-c4" ] &&
	      grep -q "enrolled mesh/c4 .*which started while the map writer was unavailable" "$KM_DIR/map-writer.log"'
sleep 1.2 # the metrics file is written every second
check "... counted: kmesh_cni_pending_enrolled_total 1" test "$(mw_metric kmesh_cni_pending_enrolled_total)" = 1
check "... the runtime's DEL then unenrolls it" \
	eval 'del_c4 "$KM_SOCKET" closed && [ "$(manage_rows)" -eq 1 ] && [ ! -e "$CNI/state/containers/ctr-c4" ]'
kill -STOP "$KM_MW_PID"
plugin "$(conf "$KCFG" "$KM_DIR/dead.sock" open)" >/dev/null
del_c4 "$KM_DIR/dead.sock" open
kill -CONT "$KM_MW_PID"
sleep 6
check "a pod deleted while its enrollment was pending is never enrolled (DEL withdraws it)" \
	eval '[ "$(manage_rows)" -eq 1 ] && [ ! -e "$CNI/state/pending/ctr-c4" ]'
rm -f "$CNI/state/containers/ctr-c4" # its unenroll failed open: nothing was enrolled
check "map writer dead, failPolicy closed: CNI error code 101, no state left for the pod" \
	eval '[ "$(plugin "$(conf "$KCFG" "$KM_DIR/dead.sock" closed)")" != 0 ] && code_is 101 &&
	      [ ! -e "$CNI/state/containers/ctr-c4" ]'

"$KM_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); d["fail"] = {"PATCH": 500}
json.dump(d, open(sys.argv[1], "w"))' "$KM_DIR/kube.json"
check "annotation refused: the enroll is undone (never half-enrolled), the pod starts (fail-open)" \
	eval '[ "$(plugin "$(conf "$KCFG" "$KM_SOCKET" open)")" = 0 ] && passed_through &&
	      [ "$(manage_rows)" -eq 1 ] && [ ! -e "$CNI/state/containers/ctr-c4" ] &&
	      grep -q "enroll undone" "$CNI/state/kmesh-cni.log"'
"$KM_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); d.pop("fail")
json.dump(d, open(sys.argv[1], "w"))' "$KM_DIR/kube.json"
# a map writer that takes the request and never answers: the outcome is unknown
mkdir -p "$KM_DIR/py"
protoc --proto_path="$KM_ROOT/ipc" --python_out="$KM_DIR/py" "$KM_ROOT/ipc/kmesh_ipc.proto"
"$KM_PY" "$KM_ROOT/tests/lib/silent_map_writer.py" "$KM_DIR/silent.sock" "$KM_DIR/py" &
KM_PIDS+=($!)
for _ in $(seq 1 50); do [ -S "$KM_DIR/silent.sock" ] && break; sleep 0.1; done
sed -i 's/"failPolicy"/"timeoutMs": 300, "failPolicy"/' "$(conf "$KCFG" "$KM_DIR/silent.sock" open)"
check "map writer silent after the request: ADD fails (101) even fail-open, its state kept" \
	eval '[ "$(plugin "$KM_DIR/in.json")" != 0 ] && code_is 101 && grep -q "did not answer" "$KM_DIR/out" &&
	      [ -e "$CNI/state/containers/ctr-c4" ]'
check "... and the runtime's DEL of the failed sandbox clears the state on the real map writer" \
	eval 'ip netns exec "$KM_NODE" env CNI_COMMAND=DEL CNI_CONTAINERID=ctr-c4 CNI_IFNAME=eth0 \
		"$CNI/bin/kmesh-cni" <"$(conf "$KCFG" "$KM_SOCKET" closed)" &&
	      [ ! -e "$CNI/state/containers/ctr-c4" ] && [ "$(manage_rows)" -eq 1 ]'
check "with the API healthy again the same ADD enrolls the pod" \
	eval '[ "$(plugin "$(conf "$KCFG" "$KM_SOCKET" closed)")" = 0 ] && [ "$(manage_rows)" -eq 2 ]'
check "the counters file is Prometheus text with one TYPE line per metric" \
	eval '[ "$(grep -c "^# TYPE kmesh_cni_requests_total counter" "$CNI/state/metrics.prom")" = 1 ] &&
	      [ "$(metric "kmesh_cni_requests_total{command=\"ADD\",result=\"enrolled\"}")" -ge 4 ]'
check "... which the node's metrics endpoint serves (copied by the map writer, the dir being root's)" \
	eval 'for _ in $(seq 1 30); do km_metrics_has "^kmesh_cni_requests_total{command=\"ADD\",result=\"enrolled\"} [4-9]" && break; sleep 0.1; done
	      km_metrics_has "^kmesh_cni_requests_total{command=\"ADD\",result=\"enrolled\"} [4-9]"'

# ---- IPsec on: a pod's traffic must be encryptable --------------------------------------------
# on as the IPsec agent turns it on (kmesh-testctl in the ipsec role), with cni0's address as the
# node's: decrypt goes on cni0, encrypt on each enrolled pod's veth
"$KM_TESTCTL" ipsec-dataplane --socket "$KM_SOCKET" --state on --addrs 10.124.0.1 >/dev/null
pod_add c5 mesh
C5_VETH=$(host_veth_of c5)
check "IPsec on: ADD puts the encrypt program on the new pod's veth ($C5_VETH)" \
	says km_ipsec_encry tc -n "$KM_NODE" filter show dev "$C5_VETH" ingress
ip netns exec "$KM_NODE" env CNI_COMMAND=DEL CNI_CONTAINERID=ctr-c4 CNI_IFNAME=eth0 \
	"$CNI/bin/kmesh-cni" <"$(conf "$KCFG" "$KM_SOCKET" closed)" >/dev/null
rows=$(manage_rows)
check "IPsec on, a pod with no node-side interface (no veth): error 103 even with failPolicy open" \
	eval '[ "$(plugin "$(conf "$KCFG" "$KM_SOCKET" open)")" != 0 ] && code_is 103 &&
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

echo "token-2" >"$CNI/sa/token.new" && mv "$CNI/sa/token.new" "$CNI/sa/token"
token_followed() {
	local i
	for i in $(seq 1 10); do grep -q token-2 "$KCFG" && return 0; sleep 0.1; done
	return 1
}
check "the service-account token rotates: the kubeconfig follows within a second" token_followed

kill -TERM $INSTALLER
for _ in $(seq 1 50); do kill -0 $INSTALLER 2>/dev/null || break; sleep 0.1; done
wait $INSTALLER
rc=$?
check "uninstall on SIGTERM: exit 0; the entry, the binary, its libraries and the kubeconfig are gone" \
	eval '[ $rc -eq 0 ] && [ "$(plugins_of "$CONFLIST")" = bridge ] &&
	      [ ! -e "$CNI/bin/kmesh-cni" ] && [ ! -e "$CNI/bin/kmesh-cni.d" ] && [ ! -e "$KCFG" ] &&
	      [ "$(mode_of "$CONFLIST")" = 640 ]'
check "no temporary files left in the CNI directories" \
	test -z "$(ls -A "$CNI/net.d" "$CNI/bin" | grep kmesh-tmp)"

[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer installer xds-agent
[ $KM_FAIL -eq 0 ] || tail -n 30 "$CNI/state/kmesh-cni.log"
km_check_summary cni_test
