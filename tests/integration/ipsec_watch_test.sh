#!/usr/bin/env bash
# ipsec_watch_test.sh — kmesh-ipsec-agent against a fake Kubernetes API (tests/lib/
# fake_kube_api.py over TLS with a bearer token; KmeshNodeInfo objects kept as an API server
# keeps them): this node's own object written once its key is ready to receive, updated on a
# rotation and written again when deleted; peers from the other objects as they are added,
# updated with a new SPI and deleted; a peer whose state the kernel refused tried again on a
# timer; a broken watch (a deletion seen only by the next list); an
# expired watch (410 Gone: listed again at once, not a failure); a bad object refused by name;
# peers given on the admin socket left alone by lists; after a reboot with a slow first list,
# this node's object written only once the listed peers' ingress states were sent.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/ipsec-env.sh"

KNI=/apis/kmesh.net/v1alpha1/namespaces/kmesh-system/kmeshnodeinfos
api() { # api METHOD PATH [BODY [CONTENT-TYPE]]: the API as a client with the token sees it
	ip netns exec "$KM_NODE" curl -sk --max-time 5 -X "$1" -H "Authorization: Bearer tok-w" \
		-H "Content-Type: ${4:-application/json}" ${3:+--data "$3"} \
		"https://127.0.0.1:$KM_KUBE_PORT$2"
}
kni() { # kni NAME SPI ADDRESS POD-CIDR [BOOT-ID]: a KmeshNodeInfo
	printf '{"apiVersion": "kmesh.net/v1alpha1", "kind": "KmeshNodeInfo", "metadata": {"name": "%s", "namespace": "kmesh-system"}, "spec": {"spi": %s, "addresses": ["%s"], "bootID": "%s", "podCIDRS": ["%s"]}}' \
		"$1" "$2" "$3" "${5:-$1-1111-2222-3333-444444444444xx}" "$4"
}
own_is() { # own_is PYTHON-EXPR [SECONDS]: true of our object o within SECONDS (5)
	for _ in $(seq 1 $((${2:-5} * 20))); do
		[ "$(api GET "$KNI/node-a" | "$KM_PY" -c 'import json, sys; o = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>/dev/null)" = True ] && return 0
		sleep 0.05
	done
	return 1
}
peers_are() { dump_is "sorted((p['name'], p['spi']) for p in d['peers']) == $1"; }
peers_are_within() { # peers_are_within N EXPECTED: N tries of 3 s each
	local i
	for i in $(seq 1 "$1"); do peers_are "$2" && return 0; done
	return 1
}
watch_stat() { dump | "$KM_PY" -c 'import json, sys; print(json.load(sys.stdin)["kubernetes"]["watch"][sys.argv[1]])' "$1"; }

trap 'km_env_cleanup' EXIT
km_env_setup kmw$$
km_make_pki
echo '{}' >"$KM_DIR/kube.json"
km_kube_api_start "$KM_DIR/kube.json" tok-w
km_kubeconfig_write tok-w
key_file 1 17
# left by an earlier run: an out policy of ours (reqid 1) to a peer that is gone, and one of
# another owner (reqid 7) that must stay
ip -n "$KM_NODE" xfrm policy add dir out src 0.0.0.0/0 dst 10.244.99.0/24 mark 0xe0 \
	tmpl src 10.0.0.1 dst 10.0.0.99 proto esp reqid 1 mode tunnel
ip -n "$KM_NODE" xfrm policy add dir out src 0.0.0.0/0 dst 10.244.98.0/24 mark 0xe0 \
	tmpl src 10.0.0.1 dst 10.0.0.98 proto esp reqid 7 mode tunnel
start_agent --kubeconfig "$KM_DIR/kubeconfig" --kube-resync 600 --map-writer-socket ""

check "once SPI 1 is ready to receive, this node's KmeshNodeInfo is created with it" \
	own_is 'o["spec"] == {"spi": 1, "addresses": ["10.0.0.1"], "bootID": "'"$KM_BOOT_A"'", "podCIDRS": ["10.244.1.0/24"]}'
check "... by a merge patch first (404: none yet), then a create" \
	"$KM_PY" -c 'import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
writes = [(r["method"], r["path"].rsplit("/", 1)[-1], r["content_type"]) for r in reqs
          if r["method"] in ("PATCH", "POST")][:2]
assert writes == [("PATCH", "node-a", "application/merge-patch+json"),
                  ("POST", "kmeshnodeinfos", "application/json")], writes
assert all(r["authorized"] for r in reqs)' "$KM_DIR/kube-api.requests"
check "after its first list, the leftover policy of a peer gone is removed (ours: reqid 1)" \
	eval 'dump_is "d[\"leftovers_removed\"] == 1" && lacks "10.244.99.0/24" ip -n "$KM_NODE" xfrm policy'
check "... and another owner's policy stays" says "10.244.98.0/24" ip -n "$KM_NODE" xfrm policy
check "... while its own in/fwd policies stay" \
	eval '[ "$(ip -n "$KM_NODE" xfrm policy | grep -c "dst 10.244.1.0/24")" = 2 ]'
key_file 2 18
check "a rotation: the object says SPI 2 once its ingress is ready" own_is 'o["spec"]["spi"] == 2'
check "... and the agent knows it is published" \
	dump_is 'd["kubernetes"]["own_object"]["written"] and d["kubernetes"]["own_object"]["spi"] == 2'

api POST "$KNI" "$(kni node-b 2 10.0.0.2 10.244.2.0/24 "$KM_BOOT_B")" >/dev/null
check "a peer's object added: the agent takes it (watch)" peers_are "[('node-b', 2)]"
if ! says "proto esp" ip -n "$KM_NODE" xfrm state; then
	# no ESP here: its ingress state was refused. It is tried again on a timer, not only at the
	# next event or resync (--kube-resync 600)
	req0=$(dump_field 'd["xfrm_requests"]')
	check "... its state refused by the kernel, it is tried again on a timer: netlink requests rise with no new event" \
		dump_within 8 "d['xfrm_requests'] >= $req0 + 2"
	check "... 2 tries within 8 s (1 s, then 2 s), in the dump" \
		dump_within 8 "[p['retries'] for p in d['peers'] if p['name'] == 'node-b'] >= [2]"
fi
api PATCH "$KNI/node-b" '{"spec": {"spi": 3}}' application/merge-patch+json >/dev/null
check "... updated with a new SPI (merge patch): the agent sees SPI 3" peers_are "[('node-b', 3)]"
api POST "$KNI" "$(kni node-x 1 10.0.0.9 10.244.9.0/24 short)" >/dev/null
check "a bad object is refused, naming it and the field" \
	logged "KmeshNodeInfo kmesh-system/node-x refused: node node-x: boot id 'short' must be 36 to 63 characters"
check "... and counted, not taken as a peer" \
	dump_is 'd["kubernetes"]["watch"]["objects_refused"] >= 1 and [p["name"] for p in d["peers"]] == ["node-b"]'
api PATCH "$KNI/node-b" '{"spec": {"bootID": "short"}}' application/merge-patch+json >/dev/null
bad_b="KmeshNodeInfo kmesh-system/node-b refused: node node-b: boot id 'short' must be 36"
check "a peer's object edited into a bad one: refused, and the peer stays as it was" \
	eval 'logged "$bad_b" && logged "; the peer stays as it was" && peers_are "[('"'"'node-b'"'"', 3)]"'
api PATCH "$KNI/node-b" '{"spec": {"bootID": "'"$KM_BOOT_B"'"}}' application/merge-patch+json >/dev/null
"$KM_TESTCTL" ipsec-peer --socket "$KM_DIR/ipsec.sock" --name node-v --spi 1 --addrs 10.0.0.7 \
	--boot-id "vvvvvvvv-1111-2222-3333-444444444444" --cidrs 10.244.7.0/24 >/dev/null
api POST "$KNI" "$(kni node-c 2 10.0.0.3 10.244.3.0/24)" >/dev/null
check "a third object: a peer" peers_are "[('node-b', 3), ('node-c', 2), ('node-v', 1)]"

# a broken watch: the deletion of node-c never comes as an event; the next list shows it
lists=$(watch_stat lists)
api POST /test/pause-watches >/dev/null
api DELETE "$KNI/node-c" >/dev/null
api DELETE "$KNI/node-a" >/dev/null
check "the watch breaks: the agent lists again, and a deletion seen only there removes the peer" \
	eval 'peers_are "[('"'"'node-b'"'"', 3), ('"'"'node-v'"'"', 1)]" && [ "$(watch_stat lists)" -gt "$lists" ]'
check "... leaving the peer given on the admin socket alone" dump_is '"node-v" in [p["name"] for p in d["peers"]]'
check "... and the break is counted and said" \
	eval '[ "$(watch_stat failures)" -ge 1 ] && logged "kubernetes watch of $KNI: watch: HTTP 503: watches paused by the test"'
# (a list is believed about our object only 5 s after our last write, and lists come with backoff)
check "... and this node's own object, deleted meanwhile, is written again" own_is 'o["spec"]["spi"] == 2' 20
api POST /test/resume-watches >/dev/null
api POST "$KNI" "$(kni node-d 2 10.0.0.4 10.244.4.0/24)" >/dev/null
# after the failed watches the agent backs off (0.5 s doubling): the next list may take seconds
check "watches back: a new object arrives" \
	peers_are_within 5 "[('node-b', 3), ('node-d', 2), ('node-v', 1)]"

# an expired watch: resumed from a resourceVersion the server no longer has (410)
for _ in $(seq 1 50); do [ "$(watch_stat listed)" = True ] && break; sleep 0.1; done
sleep 1.5 # the watch after that list has run a while (one the server ends at once is a failure)
lists=$(watch_stat lists) failures=$(watch_stat failures)
api POST /test/expire >/dev/null
api DELETE "$KNI/node-d" >/dev/null
check "410 Gone: listed again at once (not counted as a failure), the deletion seen" \
	eval 'peers_are "[('"'"'node-b'"'"', 3), ('"'"'node-v'"'"', 1)]" &&
	      [ "$(watch_stat lists)" -gt "$lists" ] && [ "$(watch_stat failures)" = "$failures" ]'

api DELETE "$KNI/node-a" >/dev/null
check "this node's own object deleted: written again" own_is 'o["spec"]["spi"] == 2'
api PATCH "$KNI/node-a" '{"spec": {"spi": 9}}' application/merge-patch+json >/dev/null
check "... and changed by someone else: put back" own_is 'o["spec"]["spi"] == 2'
api DELETE "$KNI/node-b" >/dev/null
check "a peer's object deleted: the peer is gone" peers_are "[('node-v', 1)]"

kill -TERM "$AGENT"
wait "$AGENT"
check "SIGTERM: a clean exit, the watch thread stopped" test $? -eq 0

# A reboot (a new boot id: every pair key changes) with a slow first list. Peers start
# encrypting to this node when they see its object, so it must be written only once the
# listed peers' ingress states were sent to the kernel (in place, or refused and reported).
KM_BOOT_NEW=eeeeeeee-1111-2222-3333-444444444444
api POST "$KNI" "$(kni node-e 2 10.0.0.5 10.244.5.0/24)" >/dev/null
api POST "$KNI" "$(kni node-f 2 10.0.0.6 10.244.6.0/24)" >/dev/null
api POST /test/slow-lists '{"seconds": 2, "count": 1}' >/dev/null
: >"$KM_DIR/ipsec.log"
since=$(date +%s.%N)
KM_BOOT_ID=$KM_BOOT_NEW start_agent --kubeconfig "$KM_DIR/kubeconfig" --kube-resync 600 --map-writer-socket ""
check "after a reboot with a slow first list, this node's object is written with the new boot id" \
	own_is 'o["spec"]["bootID"] == "'"$KM_BOOT_NEW"'" and o["spec"]["spi"] == 2' 10
check "... the listed peers taken" peers_are_within 3 "[('node-e', 2), ('node-f', 2)]"
check "... only after the ingress states from the listed peers were sent to the kernel" \
	"$KM_PY" -c 'import datetime, json, re, sys
log, requests, since = sys.argv[1], sys.argv[2], float(sys.argv[3])
def at(line):
    ts = line.split(" ", 1)[0]
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
lines = open(log).read().splitlines()
sent = {}
for peer, addr in (("node-e", "10.0.0.5"), ("node-f", "10.0.0.6")):
    mine = [at(l) for l in lines if "add ESP state %s -> 10.0.0.1 spi 2" % addr in l]
    assert mine, "no ingress state from %s was sent" % peer
    sent[peer] = min(mine)
reqs = [json.loads(l) for l in open(requests)]
writes = [r["time"] for r in reqs if r["time"] > since and r["method"] in ("PATCH", "POST")
          and r["path"].endswith("/kmeshnodeinfos/node-a")]
assert writes, "no write of node-a"
late = {p: round(t - writes[0], 3) for p, t in sent.items() if t >= writes[0]}
assert not late, "node-a written before the ingress states of %s were sent (by s: %s)" % (sorted(late), late)
print("written %.3f s after the last ingress state, %.3f s after start" % (writes[0] - max(sent.values()), writes[0] - since))' \
	"$KM_DIR/ipsec.log" "$KM_DIR/kube-api.requests" "$since"
check "... and the dump says the first list was applied" dump_is 'd["kubernetes"]["peers_listed"]'
kill -TERM "$AGENT"
wait "$AGENT"
api DELETE "$KNI/node-e" >/dev/null
api DELETE "$KNI/node-f" >/dev/null

# In a pod: the service account's token and CA (--kubeconfig in-cluster), and this node's pod
# CIDRs from its Node object when --pod-cidrs is not given.
mkdir -p "$KM_DIR/sa"
echo tok-w >"$KM_DIR/sa/token"
cp "$KM_DIR/pki/ca.pem" "$KM_DIR/sa/ca.crt"
export KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$KM_KUBE_PORT KMESH_SERVICE_ACCOUNT_DIR=$KM_DIR/sa
: >"$KM_DIR/ipsec.log"
ip netns exec "$KM_NODE" "$KM_BIN/kmesh-ipsec-agent" --node-name node-a --addresses 10.0.0.1 \
	--boot-id-file "$KM_DIR/boot_id" --key-file "$KM_DIR/ipsec/ipSec" --admin-socket "$KM_DIR/ipsec.sock" \
	--map-writer-socket "" --kubeconfig in-cluster >>"$KM_DIR/ipsec.log" 2>&1
rc=$?
check "in a pod, no --pod-cidrs, and no Node object: a clear refusal to start (exit 1)" \
	eval '[ $rc = 1 ] && grep -q "no --pod-cidrs, and this node.s are not known: reading node node-a: HTTP 404: nodes \"node-a\" not found" "$KM_DIR/ipsec.log"'
"$KM_PY" -c 'import json, sys; s = json.load(open(sys.argv[1])); s["nodes"] = {"node-a": {"podCIDR": "10.244.7.0/24", "podCIDRs": ["10.244.7.0/24", "fd00:7::/64"]}}; json.dump(s, open(sys.argv[1], "w"))' "$KM_DIR/kube.json"
start_agent --pod-cidrs "" --kubeconfig in-cluster --map-writer-socket ""
check "--kubeconfig in-cluster: this node's object written with the service account's token" \
	own_is 'o["spec"]["podCIDRS"] == ["10.244.7.0/24", "fd00:7::/64"]' 10
check "... its pod CIDRs read from the Node object's spec.podCIDRs" \
	grep -q "pod CIDRs from node node-a: 10.244.7.0/24,fd00:7::/64" "$KM_DIR/ipsec.log"
kill -TERM "$AGENT"
wait "$AGENT"
: >"$KM_DIR/ipsec.log"
start_agent --pod-cidrs none --kubeconfig in-cluster --map-writer-socket ""
check "--pod-cidrs none: no pod CIDRs, and the Node is not asked (a VM has none)" \
	eval 'own_is "o[\"spec\"][\"podCIDRS\"] == []" 10 && ! grep -q "pod CIDRs from node" "$KM_DIR/ipsec.log"'
kill -TERM "$AGENT"
wait "$AGENT"

[ $KM_FAIL -eq 0 ] || cat "$KM_DIR/ipsec.log"
km_check_summary ipsec_watch
