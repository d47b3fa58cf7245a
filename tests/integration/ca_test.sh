#!/usr/bin/env bash
# ca_test.sh — workload certificates from istiod's CA (issue 48, item 2; shared/tls/ca_client.c
# over the same TLS + HTTP/2 + gRPC client the xDS agent uses), against the fake istiod's CA
# (tests/lib/fake_ca.py: the token decides the caller, clusterid is required, impersonation only
# for a trusted node account and an allowed identity, the CSR's own key signed):
#   - the caller's own identity, and another by ImpersonatedIdentity: the leaf carries exactly the
#     identity asked for, its key is the request's, the chain verifies against the mesh root;
#   - what the CA saw: the bearer token, clusterid, a CSR with no CN and the SPIFFE URI SAN;
#   - refused: a wrong token, a wrong cluster, an impersonation not allowed, a TTL over the
#     maximum (each with the CA's own words);
#   - a CA that answers with a leaf naming another identity, or carrying another key: refused by
#     the client, naming why.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

FETCH=$KM_ROOT/build/tests/kmesh-certfetch
TD=cluster.local
NODE_ID=spiffe://$TD/ns/kmesh-system/sa/kmesh-tunnel
POD_ID=spiffe://$TD/ns/shop/sa/client
trap 'km_env_cleanup' EXIT
km_env_setup kmca$$ >/dev/null
km_make_pki
echo "node-token" >"$KM_DIR/token"
echo "someone-else" >"$KM_DIR/bad-token"
km_istiod_start --ca-cert "$KM_DIR/pki/ca.pem" --ca-key "$KM_DIR/pki/ca.key"
km_istiod send '{"cmd": "ca", "tokens": {"node-token": "'$NODE_ID'"}, "cluster": "test-cluster",
	"trusted": ["'$NODE_ID'"], "allowed": ["'$POD_ID'"], "max_ttl": 172800}' >/dev/null
fetch() { # fetch ID [ARGS...]
	local id=$1
	shift
	"$FETCH" --address "127.0.0.1:$KM_ISTIOD_PORT" --ca-file "$KM_DIR/pki/ca.pem" \
		--server-name istiod.istio-system.svc --token-file "$KM_DIR/token" \
		--cluster-id test-cluster --identity "$id" "$@" 2>>"$KM_DIR/certfetch.log"
}
calls() { km_istiod send '{"cmd": "ca-state"}'; }

out=$(fetch "$NODE_ID" --chain-out "$KM_DIR/node.pem")
check "its own identity: a certificate for $NODE_ID ($out)" eval '[[ "$out" == "ok $NODE_ID serial "* ]]'
out=$(fetch "$POD_ID" --impersonate --ttl 3600 --chain-out "$KM_DIR/pod.pem")
check "a pod's identity by ImpersonatedIdentity ($out)" eval '[[ "$out" == "ok $POD_ID serial "* ]]'
check "... valid for the TTL asked (3600 s, +60 s of the CA's back-dating)" \
	eval '[[ "$out" == ok* ]] && read -r _ _ _ _ _ valid _ <<<"$out" && [ $(( ${valid#*..} - ${valid%..*} )) = 3660 ]'
check "... the chain verifies against the mesh root, the leaf's only name the SPIFFE id" \
	eval 'openssl verify -CAfile "$KM_DIR/pki/ca.pem" "$KM_DIR/pod.pem" >/dev/null &&
	      openssl x509 -in "$KM_DIR/pod.pem" -noout -ext subjectAltName | grep -q "URI:$POD_ID"'
check "what the CA saw: the bearer token, clusterid, a CSR with no CN whose URI SAN is the identity" \
	eval 'calls | "$KM_PY" -c "import json, sys; c = json.load(sys.stdin)[\"calls\"][1]
sys.exit(not (c[\"authorization\"] == \"Bearer node-token\" and c[\"clusterid\"] == \"test-cluster\" and
              c[\"csr_cn\"] is None and c[\"csr_uris\"] == [\"$POD_ID\"] and c[\"impersonate\"] == \"$POD_ID\" and c[\"ttl\"] == 3600))"'

out=$(fetch "$POD_ID" --impersonate --token-file "$KM_DIR/bad-token")
check "a token the CA does not know: refused, UNAUTHENTICATED ($out)" \
	eval '[[ "$out" == "failed: CreateCertificate: grpc-status 16: authenticate failure" ]]'
out=$("$FETCH" --address "127.0.0.1:$KM_ISTIOD_PORT" --ca-file "$KM_DIR/pki/ca.pem" \
	--server-name istiod.istio-system.svc --token-file "$KM_DIR/token" --cluster-id other \
	--identity "$NODE_ID" 2>/dev/null)
check "another cluster: refused ($out)" eval '[[ "$out" == "failed: CreateCertificate: grpc-status 16: client claims"* ]]'
out=$(fetch "spiffe://$TD/ns/shop/sa/other" --impersonate)
check "an identity with no pod on the node: impersonation refused ($out)" \
	eval '[[ "$out" == *"grpc-status 16: request impersonation authentication failure" ]]'
out=$(fetch "$POD_ID" --impersonate --ttl 999999)
check "a TTL over the CA's maximum: refused, INVALID_ARGUMENT ($out)" eval '[[ "$out" == *"grpc-status 3: requested TTL"* ]]'

km_istiod send '{"cmd": "ca", "wrong_san": "spiffe://'$TD'/ns/kube-system/sa/admin"}' >/dev/null
out=$(fetch "$POD_ID" --impersonate)
check "a CA answering with a leaf for another identity: refused by the client ($out)" \
	eval '[[ "$out" == "failed: the certificate names spiffe://$TD/ns/kube-system/sa/admin, not $POD_ID" ]]'
km_istiod send '{"cmd": "ca", "wrong_san": null, "wrong_key": true}' >/dev/null
out=$(fetch "$POD_ID" --impersonate)
check "a CA answering with a leaf for another key: refused by the client ($out)" \
	eval '[[ "$out" == "failed: the certificate'"'"'s key is not the one this request sent" ]]'
km_istiod send '{"cmd": "ca", "wrong_key": false}' >/dev/null
check "a CA that is not there: a clear failure, no hang" \
	eval '[[ "$("$FETCH" --address 127.0.0.1:1 --ca-file "$KM_DIR/pki/ca.pem" --server-name istiod.istio-system.svc --token-file "$KM_DIR/token" --cluster-id test-cluster --identity "$NODE_ID" 2>/dev/null)" == "failed: "* ]]'
[ $KM_FAIL -eq 0 ] || { cat "$KM_DIR/certfetch.log"; tail -n 30 "$KM_DIR/istiod.log"; }
km_check_summary ca
