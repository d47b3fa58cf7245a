#!/usr/bin/env bash
# kmeshctl_kube_test.sh — kmeshctl's Kubernetes commands against a fake API server over TLS,
# each request body checked as the server received it: secret create (a given key, then a
# rotation to the next SPI with the resourceVersion read), get and delete; waypoint generate
# (YAML parsed back), apply (labels, annotation, listener, field manager; an update of an
# existing one; the namespace enrolled, refused when it names another waypoint unless
# --overwrite), list (-A), status and --wait on the Programmed condition, delete (names, --all),
# the Gateway CRDs missing, "none" refused; and credentials that are missing or refused.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

CTL=$KM_ROOT/build/bin/kmeshctl
kctl() { # kmeshctl in the node's netns (the fake API listens there), with our kubeconfig
	nsenter --net="/run/netns/$KM_NODE" env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST \
		HOME="$KM_DIR/home" "$CTL" --kubeconfig "$KM_DIR/kubeconfig" "$@"
}
api() { # api METHOD PATH [BODY]: straight to the fake API (test controls, objects of others)
	nsenter --net="/run/netns/$KM_NODE" curl -sSf -k -X "$1" -H "Authorization: Bearer tok-k" \
		-H "Content-Type: application/json" ${3:+--data "$3"} "https://127.0.0.1:$KM_KUBE_PORT$2" >/dev/null
}
last_request() { # last_request METHOD PATH-PREFIX PYTHON-EXPR: the last such request, as r, body as b
	"$KM_PY" - "$KM_DIR/kube-api.requests" "$@" <<'PY'
import base64, json, sys
log, method, prefix, expr = sys.argv[1:5]
reqs = [json.loads(l) for l in open(log)]
r = [q for q in reqs if q["method"] == method and q["path"].startswith(prefix)][-1]
b = json.loads(r["body"]) if r["body"] else None
ok = eval(expr)
if not ok:
    print(json.dumps(r), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
py_is() { # py_is PYTHON-EXPR: the JSON (or YAML) on stdin as d makes EXPR true
	"$KM_PY" -c 'import json, sys, yaml
d = yaml.safe_load(sys.stdin.read())
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1"
}

trap 'km_env_cleanup' EXIT
km_env_setup kmc$$
km_make_pki
mkdir -p "$KM_DIR/home"
cat >"$KM_DIR/kube.json" <<'JSON'
{"namespaces": {"web": {"labels": {"istio.io/dataplane-mode": "Kmesh"}}, "plain": {}}}
JSON
km_kube_api_start "$KM_DIR/kube.json" tok-k
km_kubeconfig_write tok-k
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20212223

# ---- secret ---------------------------------------------------------------------------------
out=$(kctl secret get 2>&1)
rc=$?
check "secret get before there is one: exit 1, saying so" eval '[ $rc = 1 ] && grep -q "no Secret kmesh-ipsec in kmesh-system" <<<"$out"'
out=$(kctl secret create --key $KEY 2>&1)
rc=$?
check "secret create --key HEX (the key in argv, visible to every user) is refused (2), naming --key-file" \
	eval '[ $rc = 2 ] && grep -q "use --key-file PATH, or --key-file -" <<<"$out"'
check "secret create --key-file - (the key on stdin): SPI 1, created" \
	eval 'echo "$KEY" | kctl -o json secret create --key-file - | py_is "d[0][\"spi\"] == 1 and d[0][\"result\"] == \"created\""'
check "... POSTed with field manager kmeshctl: an Opaque Secret whose ipSec is the key file" \
	last_request POST /api/v1/namespaces/kmesh-system/secrets \
	'r["path"].endswith("?fieldManager=kmeshctl") and b["type"] == "Opaque" and b["metadata"]["name"] == "kmesh-ipsec" and b["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "kmeshctl" and json.loads(base64.b64decode(b["data"]["ipSec"])) == {"spi": 1, "aeadKeyName": "rfc4106(gcm(aes))", "aeadKey": base64.b64encode(bytes(range(36))).decode(), "length": 128}'
check "secret get: the key as hex, SPI, algorithm, creation time" \
	eval 'kctl -o yaml secret get | py_is "d[0][\"key\"] == \"$KEY\" and d[0][\"spi\"] == 1 and d[0][\"aead\"] == \"rfc4106(gcm(aes))\" and d[0][\"created\"].endswith(\"Z\")"'
check "secret create again (random key): rotated to SPI 2" \
	eval 'kctl -o json secret create | py_is "d[0][\"spi\"] == 2 and d[0][\"result\"] == \"rotated\""'
check "... a PUT carrying the resourceVersion it read, with a new 36-byte key" \
	last_request PUT /api/v1/namespaces/kmesh-system/secrets/kmesh-ipsec \
	'b["metadata"]["resourceVersion"] and json.loads(base64.b64decode(b["data"]["ipSec"]))["spi"] == 2 and len(base64.b64decode(json.loads(base64.b64decode(b["data"]["ipSec"]))["aeadKey"])) == 36 and base64.b64decode(json.loads(base64.b64decode(b["data"]["ipSec"]))["aeadKey"]) != bytes(range(36))'
echo abcd >"$KM_DIR/short.key"
out=$(kctl secret create --key-file "$KM_DIR/short.key" 2>&1)
rc=$?
check "a --key-file that is not 72 hex digits: usage error (2)" eval '[ $rc = 2 ] && grep -q "72 hex digits" <<<"$out"'
check "secret delete" eval 'kctl secret delete | grep -qx "Secret kmesh-system/kmesh-ipsec deleted"'
out=$(kctl secret delete 2>&1)
rc=$?
check "... and again: exit 1, no such Secret" eval '[ $rc = 1 ] && grep -q "no Secret kmesh-ipsec in kmesh-system" <<<"$out"'

# ---- waypoint -------------------------------------------------------------------------------
check "waypoint generate -n web --for service: the Gateway, as YAML" \
	eval 'kctl waypoint generate -n web --for service | py_is "d[\"apiVersion\"] == \"gateway.networking.k8s.io/v1\" and d[\"kind\"] == \"Gateway\" and d[\"metadata\"][\"name\"] == \"waypoint\" and d[\"metadata\"][\"namespace\"] == \"web\" and d[\"metadata\"][\"labels\"] == {\"istio.io/waypoint-for\": \"service\"} and d[\"metadata\"][\"annotations\"][\"sidecar.istio.io/proxyImage\"].startswith(\"ghcr.io/kmesh-net/waypoint:\") and d[\"spec\"] == {\"gatewayClassName\": \"istio-waypoint\", \"listeners\": [{\"name\": \"mesh\", \"port\": 15008, \"protocol\": \"HBONE\"}]}"'
check "... written as people write it: plain scalars, metadata in the usual order" \
	eval '[ "$(kctl waypoint generate -n web --for service | head -8)" = "$(printf "%s\n" "apiVersion: gateway.networking.k8s.io/v1" "kind: Gateway" "metadata:" "  name: waypoint" "  namespace: web" "  labels:" "    istio.io/waypoint-for: service" "  annotations:")" ]'
check "... without -n it names no namespace" eval 'kctl -o json waypoint generate | py_is "\"namespace\" not in d[\"metadata\"] and \"labels\" not in d[\"metadata\"]"'
out=$(kctl waypoint apply --name none 2>&1)
rc=$?
check "\"none\" cannot name a waypoint (usage, 2)" eval '[ $rc = 2 ] && grep -q "none. cannot name a waypoint" <<<"$out"'
out=$(kctl waypoint apply --for pods 2>&1)
rc=$?
check "--for outside service|workload|all|none: usage (2)" eval '[ $rc = 2 ] && grep -q -- "--for must be service, workload, all or none" <<<"$out"'

check "apply -n web --name wp1 --for workload -r canary --enroll-namespace" \
	eval 'out=$(kctl waypoint apply -n web --name wp1 --for workload -r canary --enroll-namespace) && grep -q "waypoint web/wp1 created" <<<"$out" && grep -q "namespace web labelled istio.io/use-waypoint=wp1" <<<"$out"'
check "... the Gateway server-side applied, field manager kmeshctl: both labels (Kmesh drops waypoint-for when given a revision), image, class, listener" \
	last_request PATCH /apis/gateway.networking.k8s.io/v1/namespaces/web/gateways/wp1 \
	'r["path"].endswith("?fieldManager=kmeshctl&force=true") and r["content_type"] == "application/apply-patch+yaml" and b["metadata"]["labels"] == {"istio.io/waypoint-for": "workload", "istio.io/rev": "canary"} and b["spec"]["listeners"] == [{"name": "mesh", "port": 15008, "protocol": "HBONE"}] and b["spec"]["gatewayClassName"] == "istio-waypoint"'
check "... the namespace labelled with a merge patch" \
	last_request PATCH /api/v1/namespaces/web 'r["content_type"] == "application/merge-patch+json" and b == {"metadata": {"labels": {"istio.io/use-waypoint": "wp1"}}}'
out=$(kctl waypoint apply -n web --name wp2 --enroll-namespace 2>&1)
rc=$?
check "enrolling the namespace into another waypoint is refused (exit 1), before anything is written" \
	eval '[ $rc = 1 ] && grep -q "namespace web already uses waypoint wp1; --overwrite" <<<"$out" && ! last_request PATCH /apis/gateway.networking.k8s.io/v1/namespaces/web/gateways/wp2 True 2>/dev/null'
check "... --overwrite does it" \
	eval 'kctl waypoint apply -n web --name wp2 --enroll-namespace --overwrite >/dev/null && last_request PATCH /api/v1/namespaces/web "b[\"metadata\"][\"labels\"][\"istio.io/use-waypoint\"] == \"wp2\""'
check "apply of an existing waypoint brings it to what was asked: the revision it no longer names goes" \
	eval 'kctl waypoint apply -n web --name wp1 --for all | grep -q "waypoint web/wp1 configured" && kctl -o json waypoint list -n web | py_is "[r[\"revision\"] for r in d if r[\"name\"] == \"wp1\"] == [\"default\"]"'
api POST /apis/gateway.networking.k8s.io/v1/namespaces/web/gateways \
	'{"metadata": {"name": "ingress"}, "spec": {"gatewayClassName": "istio", "listeners": []}}'
out=$(kctl waypoint apply -n web --name ingress 2>&1)
rc=$?
check "a Gateway of another class by that name is refused, not turned into a waypoint" \
	eval '[ $rc = 1 ] && grep -q "Gateway web/ingress exists and is not a waypoint (class istio)" <<<"$out"'
out=$(kctl waypoint apply -n plain --enroll-namespace 2>&1)
check "a namespace not in the mesh: enrolled with a warning that its pods are not in the mesh" \
	eval 'grep -q "namespace plain is not labelled istio.io/dataplane-mode=Kmesh" <<<"$out" && grep -q "waypoint plain/waypoint created" <<<"$out"'
check "list -n web: a row per waypoint (not the other Gateway), revision and Programmed" \
	eval 'kctl -o json waypoint list -n web | py_is "[(r[\"name\"], r[\"revision\"], r[\"programmed\"]) for r in d] == [(\"wp1\", \"default\", \"Unknown\"), (\"wp2\", \"default\", \"Unknown\")]"'
check "list -A: every namespace, with a namespace column" \
	eval 'kctl waypoint list -A | head -1 | grep -q "^NAMESPACE *NAME *REVISION *PROGRAMMED" && [ "$(kctl -o json waypoint list -A | py_is "len(d) == 3" && echo y)" = y ]'
api POST /test/program/web/wp1
check "status: the Programmed condition of each" \
	eval 'kctl -o json waypoint status -n web | py_is "{r[\"name\"]: r[\"programmed\"] for r in d} == {\"wp1\": \"True\", \"wp2\": \"Unknown\"} and d[0][\"reason\"] == \"Programmed\""'
out=$(kctl waypoint apply -n web --name wp3 --wait --timeout 2 2>&1)
rc=$?
check "apply --wait on a Gateway nobody programs: exit 1 after the timeout" \
	eval '[ $rc = 1 ] && grep -q "waypoint web/wp3 is not Programmed after 2 s" <<<"$out"'
(for _ in $(seq 1 100); do api POST /test/program/web/wp4 2>/dev/null && break; sleep 0.2; done) &
check "apply --wait returns once it is Programmed" eval 'kctl waypoint apply -n web --name wp4 --wait --timeout 20 >/dev/null'
check "delete NAME" eval 'kctl waypoint delete -n web wp1 | grep -q "waypoint web/wp1 deleted"'
out=$(kctl waypoint delete -n web wp1 2>&1)
rc=$?
check "... again: exit 1, no such waypoint" eval '[ $rc = 1 ] && grep -q "no waypoint wp1 in web" <<<"$out"'
check "delete --all: every waypoint of the namespace, the other Gateway left" \
	eval 'kctl waypoint delete -n web --all >/dev/null && [ "$(kctl -o json waypoint list -n web)" = "[]" ] && api GET /apis/gateway.networking.k8s.io/v1/namespaces/web/gateways/ingress'
for i in 1 2 3 4 5 6; do kctl waypoint apply --name "d$i" >/dev/null; done
check "a bare delete --all of six (more than its arguments) in the default namespace" \
	eval 'kctl waypoint delete --all | grep -c "deleted" | grep -qx 6'
out=$(kctl waypoint delete -n web ../../../../api/v1/namespaces/web 2>&1)
rc=$?
check "a name that is not a Kubernetes name never reaches a request path (usage, 2)" \
	eval '[ $rc = 2 ] && grep -q "is not a valid Kubernetes name" <<<"$out" && ! last_request DELETE /api/v1/namespaces/web True 2>/dev/null'
api POST /test/gateway-crds-missing
out=$(kctl waypoint apply -n web 2>&1)
rc=$?
check "without the Gateway CRDs (the server's plain 404): exit 1, saying so" eval '[ $rc = 1 ] && grep -q "Gateway API CRDs are missing" <<<"$out"'
out=$(kctl waypoint delete -n web wp9 2>&1)
rc=$?
check "... delete says the same, not 'no waypoint'" eval '[ $rc = 1 ] && grep -q "Gateway API CRDs are missing" <<<"$out"'

# ---- credentials ----------------------------------------------------------------------------
out=$(nsenter --net="/run/netns/$KM_NODE" env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST HOME="$KM_DIR/home" "$CTL" secret get 2>&1)
rc=$?
check "no kubeconfig anywhere: exit 1, naming the places looked" eval '[ $rc = 1 ] && grep -q "no kubeconfig: give --kubeconfig or KUBECONFIG, or write ~/.kube/config" <<<"$out"'
sed 's/tok-k/wrong/' "$KM_DIR/kubeconfig" >"$KM_DIR/home/bad"
out=$(nsenter --net="/run/netns/$KM_NODE" env KUBECONFIG="$KM_DIR/home/bad:/nonexistent" "$CTL" secret get 2>&1)
rc=$?
check "KUBECONFIG (its first file) is read; a refused token shows the API's 401" eval '[ $rc = 1 ] && grep -q "HTTP 401" <<<"$out"'
mkdir -p "$KM_DIR/sa"
echo tok-k >"$KM_DIR/sa/token"
cp "$KM_DIR/pki/ca.pem" "$KM_DIR/sa/ca.crt"
check "in a pod (no kubeconfig): the service account's token and CA, to KUBERNETES_SERVICE_HOST" \
	eval 'nsenter --net="/run/netns/$KM_NODE" env -u KUBECONFIG HOME="$KM_DIR/home" KUBERNETES_SERVICE_HOST=127.0.0.1 \
		KUBERNETES_SERVICE_PORT=$KM_KUBE_PORT KMESH_SERVICE_ACCOUNT_DIR="$KM_DIR/sa" "$CTL" -o json secret create | py_is "d[0][\"spi\"] == 1"'
check "secret and waypoint have --help" eval 'kctl secret --help | grep -q "usage: kmeshctl secret" && kctl waypoint --help | grep -q "usage: kmeshctl waypoint"'

km_check_summary kmeshctl_kube
