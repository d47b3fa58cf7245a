# tunnel-env.sh — a node with kmesh-tunnel for the HBONE tests (sourced after mesh-env.sh and
# check.sh): the real CNI chain (Debian's bridge + host-local, then kmesh-cni) and CNI agent
# (--hbone on, its pods from a fake Kubernetes API), the map writer, the xDS agent (from its config
# file) and the tunnel, whose certificates come from the fake istiod's CA (10 s TTL). The fake
# API knows the pods mesh/c1 and mesh/c2 (service account client), mesh/s1 (server) and plain/b1
# (outside the mesh); pod_add makes one. km_tunnel_env_setup PREFIX sets it all up; the helpers
# below act on it (TUNNEL: the tunnel's pid; S1, C1: the pods' addresses once added).
# KM_TUNNEL_CERT_TTL (10 s), KM_TUNNEL_LOG_LEVEL (debug), KM_TUNNEL_PING_MS (the tunnel's 10 s) and
# KM_TUNNEL_REPORT_S (1 s: open streams' bytes) change how the tunnel runs. KM_TUNNEL_OUTBOUND=ADDR
# turns HBONE outbound on: the map writer puts ADDR on its interface and the tunnel's getsockopt
# program on the tunnel's cgroup (--tunnel-cgroup auto: the tunnel names it), the agent sends HBONE workloads of other nodes there, and the
# tunnel (and the fake istiod) run in the node's network namespace, the tunnel in its cgroup.
# Several nodes in one test: KM_NODE_NAME (node-1), KM_POD_SUBNET (10.125.0: its pods' /24) and
# KM_PKI_FROM (a directory whose CA this node shares; default a CA of its own) before the setup,
# and km_node_switch to move between them (below).

km_tunnel_env_setup() {
	km_env_setup "$1" >/dev/null
	KM_NODE_NAME=${KM_NODE_NAME:-node-1}
	KM_POD_SUBNET=${KM_POD_SUBNET:-10.125.0}
	if [ -n "${KM_PKI_FROM:-}" ]; then
		cp -a "$KM_PKI_FROM" "$KM_DIR/pki"
	else
		km_make_pki
	fi
	CNI=$KM_DIR/cni
	CONFLIST=$CNI/net.d/10-kmtest.conflist
	mkdir -p "$CNI/bin" "$CNI/net.d" "$CNI/sa" "$CNI/cache" "$KM_DIR/metrics"
	cp "$KM_DIR/pki/ca.pem" "$CNI/sa/ca.crt"
	echo "token-1" >"$CNI/sa/token"
	TD=cluster.local
	NODE_ID=spiffe://$TD/ns/kmesh-system/sa/kmesh
	CLIENT_ID=spiffe://$TD/ns/mesh/sa/client
	SERVER_ID=spiffe://$TD/ns/mesh/sa/server
	echo "node-token" >"$KM_DIR/token"

	cat >"$KM_DIR/kube.json" <<-'JSON'
	{"namespaces": {"mesh": {"labels": {"istio.io/dataplane-mode": "Kmesh"}}, "plain": {}},
	 "pods": {"mesh/c1": {"serviceAccount": "client"}, "mesh/c2": {"serviceAccount": "client"},
	          "mesh/s1": {"serviceAccount": "server"}, "mesh/s2": {"serviceAccount": "server"},
	          "mesh/c3": {"serviceAccount": "late"}, "mesh/c4": {"serviceAccount": "later"},
	          "plain/b1": {"serviceAccount": "client"}}}
	JSON
	km_kube_api_start "$KM_DIR/kube.json" token-1
	local routes= # a default route (to the tunnel's link-local address) only when it is used
	[ -n "${KM_TUNNEL_OUTBOUND:-}" ] && routes='"routes": [{"dst": "0.0.0.0/0"}],'
	cat >"$CONFLIST" <<-JSON
	{"cniVersion": "1.0.0", "name": "kmtest",
	 "plugins": [{"type": "bridge", "bridge": "cni0", "isGateway": true,
	              "ipam": {"type": "host-local", "ranges": [[{"subnet": "$KM_POD_SUBNET.0/24"}]],
	                       $routes
	                       "dataDir": "$CNI/ipam"}}]}
	JSON
	[ -n "${KM_TUNNEL_OUTBOUND:-}" ] && KM_ISTIOD_NETNS=node && km_tunnel_cgroup_make
	km_istiod_start --ca-cert "$KM_DIR/pki/ca.pem" --ca-key "$KM_DIR/pki/ca.key"
	km_istiod send '{"cmd": "ca", "tokens": {"node-token": "'$NODE_ID'"}, "cluster": "test-cluster",
		"trusted": ["'$NODE_ID'"], "allowed": ["'$CLIENT_ID'", "'$SERVER_ID'"]}' >/dev/null
	km_map_writer_start ${KM_TUNNEL_OUTBOUND:+--tunnel-cgroup auto \
		--dns-interface "kmt$$" --tunnel-address "$KM_TUNNEL_OUTBOUND"} || exit 1
	[ -s "$KM_CONFIG" ] || echo '{"resources": []}' | km_write_config
	# the policies the tunnel asks about (role tunnel on its admin socket)
	km_agent_start --node-name "$KM_NODE_NAME" ${KM_TUNNEL_OUTBOUND:+--tunnel-address "$KM_TUNNEL_OUTBOUND"} \
		${KM_AGENT_ARGS:-}

	TSOCK=$KM_DIR/tunnel/tunnel.sock
	mkdir -p "$KM_DIR/tunnel"
	tunnel_start || { echo "the tunnel did not start"; cat "$KM_DIR/tunnel.log"; exit 1; }

	AGENT_SOCK=$CNI/state/agent.sock
	ip netns exec "$KM_NODE" env KUBERNETES_SERVICE_HOST=127.0.0.1 \
		KUBERNETES_SERVICE_PORT="$KM_KUBE_PORT" KMESH_SERVICE_ACCOUNT_DIR="$CNI/sa" \
		"$KM_BIN/kmesh-cni-agent" install --cni-bin-dir "$CNI/bin" --cni-conf-dir "$CNI/net.d" \
		--plugin-binary "$KM_BIN/kmesh-cni" --node-name "$KM_NODE_NAME" --map-writer-socket "$KM_SOCKET" \
		--state-dir "$CNI/state" --reconcile-ms 200 --tunnel-socket "$TSOCK" --hbone on \
		--log-level debug >>"$KM_DIR/installer.log" 2>&1 &
	KM_PIDS+=($!)
	for _ in $(seq 1 50); do
		[ -S "$AGENT_SOCK" ] && grep -q "cache: .* pods listed" "$KM_DIR/installer.log" &&
			grep -q kmesh-cni "$CONFLIST" 2>/dev/null && break
		sleep 0.1
	done
}

CTL() { "$KM_ROOT/build/bin/kmeshctl" --tunnel-socket "$TSOCK" "$@"; }

# Several nodes in one test, each a whole environment (its namespaces, cgroups, bpffs, processes,
# certificates): km_node_switch NAME keeps the current node's variables and makes NAME's current
# (a NAME not seen yet starts with none: set it up next); km_nodes_cleanup removes them all.
KM_NODE_VARS="KM_PREFIX KM_DIR KM_PIDS KM_PODS KM_OWN_CG2_MOUNT KM_CGROUP KM_NODE KM_SOCKET
	KM_CONFIG KM_MW_PID KM_AGENT_SOCKET KM_AGENT_PID KM_KUBE_PORT KM_ISTIOD_CTL KM_ISTIOD_PORT
	KM_ISTIOD_NETNS KM_TUNNEL_CGROUP KM_STEADY_OUT KM_NODE_NAME KM_POD_SUBNET KM_AGENT_ARGS CNI
	CONFLIST TSOCK TUNNEL AGENT_SOCK"
declare -A KM_NODE_STATE=()
KM_CUR_NODE=
km_node_switch() {
	local v
	if [ -n "$KM_CUR_NODE" ]; then
		KM_NODE_STATE[$KM_CUR_NODE]=$(for v in $KM_NODE_VARS; do declare -p "$v" 2>/dev/null; done |
			sed -e 's/^declare -\(-\|[a-zA-Z]*\) /declare -g\1 /' -e 's/^declare -g- /declare -g /')
	fi
	for v in $KM_NODE_VARS; do unset "$v"; done
	KM_CUR_NODE=$1
	eval "${KM_NODE_STATE[$1]:-}"
}
# km_nodes_link NS1 CIDR1 NS2 CIDR2: the network between two nodes' namespaces, a veth (10.124.9.1
# and .2), each routing the other's pod CIDR over it.
km_nodes_link() {
	ip link add "kmn$$" netns "$1" type veth peer name "kmn$$" netns "$3"
	ip -n "$1" addr add 10.124.9.1/30 dev "kmn$$"
	ip -n "$3" addr add 10.124.9.2/30 dev "kmn$$"
	ip -n "$1" link set "kmn$$" up
	ip -n "$3" link set "kmn$$" up
	ip -n "$1" route add "$4" via 10.124.9.2
	ip -n "$3" route add "$2" via 10.124.9.1
	ip netns exec "$1" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$3" sysctl -qw net.ipv4.ip_forward=1
}
km_nodes_cleanup() {
	local n cur=$KM_CUR_NODE
	[ -n "$cur" ] || { km_env_cleanup; return; }
	km_node_switch "$cur" # (saves the current one's latest)
	for n in "${!KM_NODE_STATE[@]}"; do km_node_switch "$n"; km_env_stop; done
	wait 2>/dev/null
	for n in "${!KM_NODE_STATE[@]}"; do km_node_switch "$n"; km_env_remove; done
}

tunnel_start() {
	local in_cgroup=() # HBONE outbound: in its cgroup and the node's netns, as one process (TUNNEL)
	[ -n "${KM_TUNNEL_OUTBOUND:-}" ] && in_cgroup=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"'
		"$KM_TUNNEL_CGROUP" nsenter --net="/run/netns/$KM_NODE")
	${in_cgroup[@]+"${in_cgroup[@]}"} "$KM_BIN/kmesh-tunnel" --socket "$TSOCK" --ca-address "127.0.0.1:$KM_ISTIOD_PORT" \
		--ca-root-file "$KM_DIR/pki/ca.pem" --ca-server-name istiod.istio-system.svc \
		--ca-token-file "$KM_DIR/token" --cluster-id test-cluster --cert-ttl "${KM_TUNNEL_CERT_TTL:-10}" \
		--hbone-inbound on --map-writer-socket "$KM_SOCKET" --xds-socket "$KM_DIR/run/xds-agent.sock" \
		--hbone-handshake-timeout-ms 1000 ${KM_TUNNEL_PING_MS:+--hbone-ping-ms "$KM_TUNNEL_PING_MS"} \
		--conn-report-interval "${KM_TUNNEL_REPORT_S:-1}" \
		--metrics-dir "$KM_DIR/metrics" --log-level "${KM_TUNNEL_LOG_LEVEL:-debug}" ${KM_TUNNEL_ARGS:-} \
		${KM_TUNNEL_OUTBOUND:+--hbone-outbound-address "$KM_TUNNEL_OUTBOUND"} \
		>>"$KM_DIR/tunnel.log" 2>&1 &
	TUNNEL=$!
	KM_PIDS+=($TUNNEL)
	for _ in $(seq 1 50); do [ -S "$TSOCK" ] && return 0; sleep 0.1; done
	return 1
}

chain() { # chain ADD|DEL POD NAMESPACE
	ip netns exec "$KM_NODE" "$KM_PY" "$KM_ROOT/tests/lib/cni_chain.py" "$1" --conflist "$CONFLIST" \
		--cni-path "$CNI/bin:/usr/lib/cni" --cache "$CNI/cache" --container-id "ctr-$2" \
		--netns "/run/netns/$KM_PREFIX-$2" --pod-namespace "$3" --pod-name "$2"
}

pod_add() { # pod_add POD NAMESPACE
	ip netns add "$KM_PREFIX-$1"
	KM_PODS+=("$KM_PREFIX-$1")
	ip -n "$KM_PREFIX-$1" link set lo up
	chain ADD "$1" "$2" >"$CNI/$1.result" 2>"$CNI/$1.err" || cat "$CNI/$1.err"
}

certs() { CTL -o json dump certs; }
# cert_is ID PYTHON-EXPR: the dump's certificate for ID (c; None when absent) makes EXPR true
cert_is() {
	certs | "$KM_PY" -c 'import json, sys
d = json.load(sys.stdin); c = ([x for x in d["certs"] if x["identity"] == sys.argv[1]] or [None])[0]
sys.exit(not eval(sys.argv[2]))' "$1" "$2"
}

wait_cert() { # wait_cert ID EXPR [TENTHS]
	for _ in $(seq 1 "${3:-50}"); do cert_is "$1" "$2" && return 0; sleep 0.1; done
	cert_is "$1" "$2"
}

ca_calls() { # ca_calls ID: CreateCertificate calls the CA saw for ID
	km_istiod send '{"cmd": "ca-state"}' | "$KM_PY" -c 'import json, sys
print(sum(1 for c in json.load(sys.stdin)["calls"] if c["impersonate"] == sys.argv[1]))' "$1"
}

metric() { awk -v m="$1" '$1 == m {print $2}' "$KM_DIR/metrics/tunnel.prom"; }
serial_of() { certs | "$KM_PY" -c 'import json, sys; print([c["serial"] for c in json.load(sys.stdin)["certs"] if c["identity"] == sys.argv[1]][0])' "$1"; }
ip_of() { "$KM_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["ips"][0]["address"].split("/")[0])' "$CNI/$1.result"; }
client_cert() { # client_cert NAME URI [CA [DAYS]]: a client certificate of the test CA (or CA's),
	# valid for DAYS (1; 0: expired a second after it is made); URI "a,URI:b" gives two
	local d=$KM_DIR/pki ca=${3:-ca} days=${4:-1}
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/" -keyout "$d/$1.key" \
		-out "$d/$1.csr" 2>/dev/null
	printf 'subjectAltName=critical,URI:%s\nextendedKeyUsage=clientAuth,serverAuth\n' "$2" >"$d/$1.ext"
	openssl x509 -req -in "$d/$1.csr" -CA "$d/$ca.pem" -CAkey "$d/$ca.key" -CAcreateserial \
		-days "$days" -extfile "$d/$1.ext" -out "$d/$1.pem" 2>/dev/null
}
hbone() { # hbone CERT AUTHORITY [client options]: from pod $HBONE_FROM (c1) to s1's 15008
	km_in_pod "${HBONE_FROM:-c1}" /usr/bin/python3 "$KM_ROOT/tests/lib/hbone_client.py" "$S1" --authority "$2" \
		${1:+--cert "$KM_DIR/pki/$1.pem" --key "$KM_DIR/pki/$1.key"} --ca "$KM_DIR/pki/ca.pem" "${@:3}" 2>&1
}
eventually() { # eventually CMD...: true within 5 s
	for _ in $(seq 1 25); do "$@" && return 0; sleep 0.2; done
	"$@"
}
