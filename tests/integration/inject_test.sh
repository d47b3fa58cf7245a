#!/usr/bin/env bash
# inject_test.sh — kmeshctl inject into a running mesh fed by the fake istiod: an event changes
# a VIP's backends (real connections from an enrolled pod prove it), a policy injected denies a
# real connection and its removal lets it through, a bad resource is refused by name while the
# rest of the event applies, and a reconnect to istiod brings istiod's own versions back (the
# injected ones carry a version istiod never sends). The IPsec agent's events: kmeshctl_test.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

S=$KM_SUBNET
VIP=10.96.9.1
CTL=$KM_ROOT/build/bin/kmeshctl
inject() { # inject EVENT-JSON [kmeshctl options]: kmeshctl inject xds-agent, the event on stdin
	"$CTL" --xds-socket "$KM_AGENT_SOCKET" "${@:2}" inject xds-agent - <<<"$1"
}
wl() { # wl NAME IP [SERVICES-JSON]: a workload of namespace t
	echo '{"workload": {"uid": "Kubernetes//Pod/t/'$1'", "name": "'$1'", "namespace": "t",
	  "serviceAccount": "'$1'-sa", "addresses": ["'$2'"], "services": {'${3:-}'}}}'
}
WEB='"t/web.t": {"ports": [{"servicePort": 80, "targetPort": 8080}]}'
answers() { # answers N: where N connections to the VIP went, "COUNT NAME" lines
	km_connect client "$VIP" 80 --count "$1" --timeout 1
}
all_reach() { # all_reach NAME: 10 connections, every one answered by NAME (within 3 s)
	for _ in $(seq 1 30); do
		[ "$(answers 10)" = "10 $1" ] && return 0
		sleep 0.1
	done
	answers 10 >&2
	return 1
}

trap 'km_env_cleanup' EXIT
km_env_setup kmj$$
km_pod_add client "$S.10"
km_pod_add b1 "$S.21"
km_pod_add b2 "$S.22"
km_backend_start b1 8080
km_backend_start b2 8080
km_wait_listen b1 8080 && km_wait_listen b2 8080 || exit 1
km_make_pki
echo t1 >"$KM_DIR/token"
chmod 644 "$KM_DIR/token"
km_istiod_start
km_istiod send '{"cmd": "set", "resources": [
 {"service": {"name": "web", "namespace": "t", "hostname": "web.t", "addresses": [{"address": "'$VIP'"}],
   "ports": [{"servicePort": 80, "targetPort": 8080}]}},
 '"$(wl client "$S.10"),$(wl b1 "$S.21" "$WEB"),$(wl b2 "$S.22")"']}' >/dev/null
km_map_writer_start || exit 1
km_agent_start_xds
for p in client b1 b2; do
	"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path $p)" >/dev/null
done
check "istiod's state: the VIP's one backend is b1" all_reach b1

out=$(inject '{"resources": ['"$(wl b2 "$S.22" "$WEB")"'], "removedResources": ["Kubernetes//Pod/t/b1"]}' -o json)
check "inject: b2 joins the service and b1 goes, in one event (2 applied)" \
	eval '"$KM_PY" -c "import json, sys; d = json.loads(sys.argv[1]); sys.exit(not (d[0][\"applied\"] == 2 and \"Address: 1 applied, 0 refused, 1 removed\" in d[0][\"result\"]))" "$out"'
check "... and every connection to the VIP now reaches b2" all_reach b2
# (the dump lists workloads in the order of its id table: sorted here)
check "... and the agent's model says so" \
	eval '[ "$(km_agent_json "sorted(w[\"uid\"] for w in d[\"model\"][\"workload_list\"])")" = "[\"Kubernetes//Pod/t/b2\", \"Kubernetes//Pod/t/client\"]" ]'

DENY='{"authorization": {"name": "deny-web", "namespace": "t", "scope": "NAMESPACE", "action": "DENY",
  "rules": [{"clauses": [{"matches": [{"destinationPorts": [8080], "principals": [{"suffix": "/sa/client-sa"}]}]}]}]}}'
inject '{"resources": ['"$DENY"']}' >/dev/null
check "an injected DENY policy is compiled" \
	eval '[ "$(km_agent_json "[p[\"name\"] for p in d[\"authz\"][\"compiled\"]]")" = "[\"t/deny-web\"]" ]'
check "... and denies the real connection (refused at once)" eval '[ "$(answers 1)" = "1 error:ECONNREFUSED" ]'
inject '{"removedPolicies": ["t/deny-web"]}' >/dev/null
check "removing it lets connections through again" all_reach b2

out=$(inject '{"resources": [{"workload": {"uid": "Kubernetes//Pod/t/bad", "addresses": ["1.2.3"]}}, '"$(wl b3 "$S.23")"']}' 2>&1)
rc=$?
check "a bad resource: exit 1, refused by name with the reason" \
	eval '[ $rc = 1 ] && grep -q "Kubernetes//Pod/t/bad: resources\[0\].workload.addresses\[0\]: .1.2.3. is neither an IP address nor base64 of one" <<<"$out"'
check "... while the rest of the event applied" \
	eval '[ "$(km_agent_json "\"Kubernetes//Pod/t/b3\" in [w[\"uid\"] for w in d[\"model\"][\"workload_list\"]]")" = true ]'
out=$(inject '{"resources": [' 2>&1)
rc=$?
check "malformed JSON: exit 1, with the parser's words" eval '[ $rc = 1 ] && grep -q "not valid JSON" <<<"$out"'
out=$(inject '{"resource": []}' 2>&1)
rc=$?
check "an unknown key (a typo) is refused, not ignored" eval '[ $rc = 1 ] && grep -q "unknown key .resource." <<<"$out"'
out=$("$CTL" --xds-socket "$KM_AGENT_SOCKET" inject map-writer - </dev/null 2>&1)
rc=$?
check "events go to agents only: usage error for the map writer" eval '[ $rc = 2 ] && grep -q "events go to xds-agent or ipsec-agent" <<<"$out"'

km_istiod send '{"cmd": "end-stream", "code": 14, "message": "test"}' >/dev/null
check "after a reconnect istiod's versions win again: the VIP's backend is b1" all_reach b1
initial_version() { # the version of Address NAME the agent named in its last subscription
	km_istiod send '{"cmd": "state"}' | "$KM_PY" -c 'import json, sys
reqs = [r for s in json.load(sys.stdin)["streams"] for r in s["requests"] if r["type_url"].endswith("Address") and not r["nonce"]]
print(reqs[-1]["initial"].get(sys.argv[1], "-"))' "$1"
}
check "... because the agent named b2's version as kmeshctl-inject, which istiod replaced" \
	eval '[ "$(initial_version Kubernetes//Pod/t/b2)" = kmeshctl-inject ]'

km_check_summary inject
