#!/usr/bin/env bash
# chart_test.sh — charts/kmesh checked with a real helm (3.17, fetched by mk/helm.sh): lint,
# template with default and all-features values, the rendered objects checked (chart_checks.py:
# privileges per container, probes, mounts, RBAC, CRD), every rendered command line accepted by
# the real binaries, and values.schema.json refusing bad values with the key named.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tests/lib/check.sh"
PY=/usr/bin/python3
HELM=$("$ROOT/mk/helm.sh") || { echo "no helm"; exit 1; }
CHART=$ROOT/charts/kmesh
TMP=$(mktemp -d /tmp/kmesh-chart.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
render() { "$HELM" template kmesh "$CHART" --namespace kmesh-system --kube-version 1.30.0 --include-crds "$@"; }

check "helm lint --strict (default values)" "$HELM" lint --strict "$CHART" --namespace kmesh-system
check "helm lint --strict (every feature on)" "$HELM" lint --strict "$CHART" --namespace kmesh-system \
	--values "$ROOT/tests/deploy/values-all.yaml"

# run_all COMMANDS.json: each rendered command line with --help appended, run by the real binary
# of that name: every flag the chart passes is parsed and validated before --help ends it.
run_all() {
	local n=0 line name
	while IFS=$'\t' read -r name line; do
		eval "set -- $line"
		local bin=$ROOT/build/bin/$1
		shift
		if ! "$bin" "$@" --help >"$TMP/out" 2>&1; then
			echo "# $name: $(head -c 300 "$TMP/out")"
			return 1
		fi
		n=$((n + 1))
	done < <("$PY" -c 'import json, shlex, sys
for c in json.load(open(sys.argv[1])):
    print(c["name"] + "\t" + " ".join(shlex.quote(a) for a in c["argv"]))' "$1")
	[ $n -ge 4 ]
}

for mode in default all; do
	values=()
	[ $mode = all ] && values=(--values "$ROOT/tests/deploy/values-all.yaml")
	if render "${values[@]}" >"$TMP/$mode.yaml" 2>"$TMP/$mode.err"; then
		check "helm template ($mode values)" true
		"$PY" "$ROOT/tests/deploy/chart_checks.py" $mode "$TMP/$mode.yaml" "$TMP/$mode.json" >"$TMP/$mode.checks" 2>&1
		cat "$TMP/$mode.checks"
		check "chart_checks.py ($mode) ran to its end" grep -qx "# checks done" "$TMP/$mode.checks"
		KM_PASS=$((KM_PASS + $(grep -c '^ok' "$TMP/$mode.checks")))
		KM_FAIL=$((KM_FAIL + $(grep -c '^FAIL' "$TMP/$mode.checks")))
		check "every container's and probe's command line ($mode) is accepted by the real binary" run_all "$TMP/$mode.json"
	else
		check "helm template ($mode values): $(head -c 300 "$TMP/$mode.err")" false
	fi
done

# refused VALUE... -- TEXT: helm template with --set VALUE fails, its error containing TEXT
refused() {
	local sets=() out
	while [ "$1" != -- ]; do sets+=(--set "$1"); shift; done
	out=$(render "${sets[@]}" 2>&1 >/dev/null) && return 1
	grep -qF -- "$2" <<<"$out" || { echo "# got: $(head -c 300 <<<"$out")"; return 1; }
}
check "schema: an unknown log level is refused, naming the key" refused logLevel.xdsAgent=verbose -- "logLevel.xdsAgent"
check "schema: a table smaller than 16 entries is refused" refused tables.maxPods=8 -- "tables.maxPods"
check "schema: a fail policy other than open|closed is refused" refused cni.failPolicy=maybe -- "cni.failPolicy"
check "schema: the xDS agent as uid 0 is refused" refused xdsAgent.uid=0 -- "xdsAgent.uid"
out=$(render --show-only templates/daemonset.yaml 2>&1)
check "the xDS agent has a uid of its own by default (the xds role is given to it, not to nobody)" \
	eval 'grep -q -- "--allow=xds:uid=10901" <<<"$out" && ! grep -q "65534" <<<"$out"'
check "schema: an unknown key is refused (a typo is not silently ignored)" refused features.ipsek.enabled=true -- "ipsek"
check "schema: an extra mount without its mountPath is refused" refused "volumeMounts[0].name=x" -- "mountPath"
check "schema: env is NAME: value, not a list" refused "env[0]=x" -- "env"
check "schema: a port out of range is refused" refused metrics.port=70000 -- "metrics.port"
check "schema: an xDS address without a port is refused" refused xds.address=istiod -- "xds.address"
check "schema: a relative host path is refused" refused node.cgroupPath=sys/fs/cgroup -- "node.cgroupPath"
out=$("$HELM" template kmesh "$CHART" --namespace other --kube-version 1.30.0 --set features.ipsec.enabled=true 2>&1)
check "IPsec outside kmesh-system: refused with the reason" grep -qF "needs the release in namespace kmesh-system" <<<"$out"
out=$("$HELM" template kmesh "$CHART" --namespace kmesh-system --kube-version 1.28.0 2>&1)
check "Kubernetes older than 1.29 (no native sidecars): refused" grep -qF "incompatible with Kubernetes v1.28.0" <<<"$out"

out=$(render --set features.dns.enabled=true,features.dns.proxy.enabled=false,features.dns.resolvers[0]=169.254.20.10 --show-only templates/daemonset.yaml 2>&1)
check "DNS to another node-local resolver (proxy off): the redirect to it, port 53, no proxy, no interface" \
	eval 'grep -q -- "--dns-resolver=169.254.20.10" <<<"$out" && grep -q -- "--dns-port=53$" <<<"$out" && ! grep -q -- "--dns-address\|--dns-interface" <<<"$out"'
out=$(render --set features.dns.enabled=true,features.dns.proxy.address=fd00:53::53 --show-only templates/daemonset.yaml 2>&1)
check "the proxy on an IPv6 address: [ADDR]:PORT for the agent, the address for the redirect" \
	eval 'grep -q -- "--dns-address=\[fd00:53::53\]:15053" <<<"$out" && grep -q -- "--dns-resolver=fd00:53::53" <<<"$out"'
check "schema: an interface name longer than 15 characters is refused" refused features.dns.proxy.interface=a-very-long-interface -- "features.dns.proxy.interface"
out=$(render --set cleanupOnExit=true,features.ipsec.enabled=true --show-only templates/daemonset.yaml 2>&1)
check "cleanupOnExit: the map writer detaches and unpins, the IPsec agent uninstalls, the CNI installer unchains" \
	eval 'grep -q -- "- --detach-on-exit" <<<"$out" && grep -q -- "- --uninstall-on-exit" <<<"$out" && ! grep -q -- "--keep-on-exit" <<<"$out"'
out=$(render --set features.ipsec.enabled=true --show-only templates/daemonset.yaml 2>&1)
check "... and by default none of it (restarts and upgrades keep everything in place)" \
	eval '! grep -q -- "--detach-on-exit" <<<"$out" && ! grep -q -- "--uninstall-on-exit" <<<"$out" && grep -q -- "- --keep-on-exit" <<<"$out"'

# Node-scoped writes (issue 25, item 6): RBAC cannot scope patch to one node's pods; the
# admission policy does, on API servers that have it. Its expressions are written for the API
# server's CEL; here the rendered policy's shape is checked.
VAP=admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy
render --api-versions "$VAP" --set features.ipsec.enabled=true >"$TMP/vap.yaml" 2>&1
check "nodeScopedWrites (default): a ValidatingAdmissionPolicy and its Deny binding for the chart's service account" \
	"$ROOT/tests/deploy/admission_checks.py" "$TMP/vap.yaml" system:serviceaccount:kmesh-system:kmesh
check "... absent where the API server has no ValidatingAdmissionPolicy v1 (before 1.30)" \
	eval '! render | grep -q "kind: ValidatingAdmissionPolicy"'
check "... and when turned off (nodeScopedWrites=false)" \
	eval '! render --api-versions "$VAP" --set nodeScopedWrites=false | grep -q "kind: ValidatingAdmissionPolicy"'
check "... which lets only kmesh.net/redirection change, and with features.hbone.advertise ambient.istio.io/redirection too" \
	eval '! grep -q "ambient.istio.io/redirection" "$TMP/vap.yaml" &&
	      render --api-versions "$VAP" --set tunnel.enabled=true,features.hbone.advertise=true |
	      grep -q "k in \[.kmesh.net/redirection., .ambient.istio.io/redirection.\]"'
check "features.hbone.advertise without the tunnel is refused (pods would be sent to a 15008 nobody serves)" \
	refused features.hbone.advertise=true -- "features.hbone.advertise needs tunnel.enabled"
check "features.hbone.outbound without the tunnel is refused (nobody would carry those connections)" \
	refused features.hbone.outbound.enabled=true -- "features.hbone.outbound.enabled needs tunnel.enabled"
check "features.hbone.outbound.overIpsec reaches the xDS agent (kernel by default; hbone when set)" \
	eval 'render --set tunnel.enabled=true,features.hbone.outbound.enabled=true | grep -q -- "--hbone-over-ipsec=kernel" &&
	      render --set tunnel.enabled=true,features.hbone.outbound.enabled=true,features.hbone.outbound.overIpsec=hbone |
	      grep -q -- "--hbone-over-ipsec=hbone"'
check "features.hbone.outbound.overIpsec other than kernel or hbone is refused, naming the key" \
	refused features.hbone.outbound.overIpsec=maybe -- "overIpsec"
check "features.hbone.waypointProtocol hbone without outbound is refused" \
	refused tunnel.enabled=true,features.hbone.waypointProtocol=hbone -- "waypointProtocol hbone needs"
check "features.hbone.waypointProtocol other than hbone or tlv is refused, naming the key" \
	refused features.hbone.waypointProtocol=udp -- "waypointProtocol"
check "features.authz.plaintextIdentity other than address or none is refused, naming the key" \
	refused features.authz.plaintextIdentity=maybe -- "plaintextIdentity"
check "the tunnel as the xDS agent's uid is refused (it holds workload keys)" \
	refused tunnel.enabled=true,tunnel.uid=10901 -- "tunnel.uid must differ from xdsAgent.uid"

# The image's packages: each library a binary links (its NEEDED entries) must come from a package
# the Dockerfile installs (libc6 is in the base image).
image_has_every_library() {
	local lib pkg missing=
	for lib in $(for b in "$ROOT"/build/bin/kmesh-* "$ROOT"/build/bin/kmeshctl; do
			readelf -d "$b" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'; done | sort -u); do
		pkg=$(dpkg -S "*/$lib" 2>/dev/null | cut -d: -f1 | grep -v -- -dev | head -n 1)
		[ -n "$pkg" ] || { echo "# no package has $lib"; return 1; }
		[ "$pkg" = libc6 ] || grep -qw -- "$pkg" "$ROOT/deploy/image/Dockerfile" || missing+=" $pkg($lib)"
	done
	[ -z "$missing" ] || { echo "# the Dockerfile lacks:$missing"; return 1; }
}
check "the image installs the package of every library the binaries link" image_has_every_library

km_check_summary chart
