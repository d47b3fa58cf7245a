# mesh-env.sh — a private mesh on one machine, for the integration tests and the demo.
# Sourced, not run. Everything it creates carries the run's own prefix and lives inside
# namespaces, a sub-cgroup and a bpffs mount made here, and km_env_cleanup removes it all:
#   - a "node" network namespace with a bridge; each "pod" is a network namespace on it;
#   - a private bpffs mount and a cgroup-v2 sub-cgroup the programs attach to;
#   - the real kmesh-map-writer and kmesh-xds-agent, the agent as uid 65534 with no capabilities.
# Traffic only ever goes to addresses inside these namespaces.

KM_ROOT=${KM_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
KM_BIN=${KM_BIN:-$KM_ROOT/build/bin} # build/san-bin: the daemons under ASan+UBSan
KM_TESTCTL=$KM_ROOT/build/tests/kmesh-testctl
KM_PY=/usr/bin/python3
KM_NOBODY=65534
KM_SUBNET=10.123.0
KM_SUBNET6=fd00:7b::

km_log() { echo "[$(date +%T)] $*"; }

# km_env_setup PREFIX: creates the run directory, bpffs, cgroup and node namespace.
km_env_setup() {
	KM_PREFIX=$1
	KM_DIR=$(mktemp -d "/tmp/$KM_PREFIX.XXXXXX")
	chmod 755 "$KM_DIR"
	KM_PIDS=()
	KM_PODS=()
	KM_OWN_CG2_MOUNT=
	mkdir -p "$KM_DIR/bpffs"
	mount -t bpf bpf "$KM_DIR/bpffs"
	local cg2
	cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	if [ -z "$cg2" ]; then
		cg2=$KM_DIR/cgroup2
		mkdir -p "$cg2"
		mount -t cgroup2 none "$cg2"
		KM_OWN_CG2_MOUNT=$cg2
	fi
	KM_CGROUP=$cg2/$KM_PREFIX
	mkdir "$KM_CGROUP"
	KM_NODE=$KM_PREFIX-node
	ip netns add "$KM_NODE"
	ip -n "$KM_NODE" link set lo up
	ip -n "$KM_NODE" link add br0 type bridge
	ip -n "$KM_NODE" addr add "$KM_SUBNET.1/24" dev br0
	ip -n "$KM_NODE" addr add "${KM_SUBNET6}1/64" dev br0 nodad
	ip -n "$KM_NODE" link set br0 up
	KM_SOCKET=$KM_DIR/map-writer.sock
	KM_CONFIG=$KM_DIR/mesh.json
}

# km_pod_add NAME IP [IP6]: a pod network namespace on the node bridge. Only the pod subnets are
# routed, so a connect() that BPF did not rewrite to a pod fails at once (ENETUNREACH).
km_pod_add() {
	local name=$1 ip=$2 ip6=${3:-} ns=$KM_PREFIX-$1 idx=${#KM_PODS[@]}
	ip netns add "$ns"
	KM_PODS+=("$ns") # tracked at once, so a failure below is still cleaned up
	ip -n "$ns" link set lo up
	ip link add "km${idx}p$$" netns "$ns" type veth peer name "km${idx}n$$" netns "$KM_NODE"
	ip -n "$ns" link set "km${idx}p$$" name eth0
	ip -n "$ns" addr add "$ip/24" dev eth0
	[ -n "$ip6" ] && ip -n "$ns" addr add "$ip6/64" dev eth0 nodad
	ip -n "$ns" link set eth0 up
	ip -n "$KM_NODE" link set "km${idx}n$$" master br0 up
}

km_netns_path() { echo "/run/netns/$KM_PREFIX-$1"; }

# km_in_pod NAME CMD...: run CMD inside the pod's netns and the test cgroup.
km_in_pod() {
	local ns=$KM_PREFIX-$1
	shift
	# Join the cgroup first: 'ip netns exec' remounts /sys, which hides the cgroup mount.
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$KM_CGROUP" ip netns exec "$ns" "$@"
}

# km_tunnel_cgroup_make: a cgroup beside the pods' for the tunnel (the map writer's
# --tunnel-cgroup puts the tunnel's getsockopt program there); sets KM_TUNNEL_CGROUP.
km_tunnel_cgroup_make() {
	KM_TUNNEL_CGROUP=$KM_CGROUP-tunnel
	mkdir "$KM_TUNNEL_CGROUP"
}

# km_in_tunnel_cgroup CMD...: run CMD in the tunnel's cgroup and the node's network namespace.
km_in_tunnel_cgroup() {
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$KM_TUNNEL_CGROUP" \
		nsenter --net="/run/netns/$KM_NODE" "$@"
}

# km_backend_start NAME PORT: a backend pod answering with its name.
km_backend_start() {
	km_in_pod "$1" "$KM_PY" "$KM_ROOT/tests/lib/backend.py" "$1" "${@:2}" &
	KM_PIDS+=($!)
}

# km_server_start NAME SCRIPT ARGS...: another test server (tests/lib/SCRIPT) in a pod.
km_server_start() {
	local pod=$1 script=$2
	shift 2
	km_in_pod "$pod" "$KM_PY" "$KM_ROOT/tests/lib/$script" "$@" &
	KM_PIDS+=($!)
}

# km_steady_start POD HOST PORT: new connections at 300/s from POD until km_steady_stop.
km_steady_start() {
	KM_STEADY_OUT=$KM_DIR/steady.out
	km_in_pod "$1" "$KM_PY" "$KM_ROOT/tests/lib/steady_client.py" "$2" "$3" --rate 300 \
		--out "$KM_STEADY_OUT" &
}

# km_steady_stop: stops it; sets KM_STEADY_OK, KM_STEADY_FAILED, KM_STEADY_SECONDS.
km_steady_stop() {
	local detail
	pkill -TERM -f "steady_client.py .*--out $KM_STEADY_OUT"
	for _ in $(seq 1 50); do [ -s "$KM_STEADY_OUT" ] && break; sleep 0.1; done
	read -r _ KM_STEADY_OK _ KM_STEADY_FAILED _ KM_STEADY_SECONDS detail <"$KM_STEADY_OUT"
	km_log "steady client: $KM_STEADY_OK ok, $KM_STEADY_FAILED failed in $KM_STEADY_SECONDS s $detail"
}

# km_wait_listen NAME PORT [-u]: until the backend listens (2 s at most); -u: a UDP socket.
km_wait_listen() {
	local i
	for i in $(seq 1 40); do
		[ -n "$(ip netns exec "$KM_PREFIX-$1" ss -Hln "${3:--t}" "sport = :$2")" ] && return 0
		sleep 0.05
	done
	echo "backend $1 did not start listening on $2" >&2
	return 1
}

# km_connect POD HOST PORT [client.py options]: prints "<count> <answer>" lines.
km_connect() {
	local pod=$1
	shift
	km_in_pod "$pod" "$KM_PY" "$KM_ROOT/tests/lib/client.py" "$@"
}

km_map_writer_start() {
	rm -f "$KM_SOCKET" # a killed one leaves its socket file: wait for the new one's
	# in the node's network namespace, where it puts tc programs (IPsec) on interfaces; nsenter,
	# not 'ip netns exec', which would hide the cgroup mount under /sys
	# KM_MW_WRAP: a command the map writer runs under (e.g. setpriv with fewer privileges)
	nsenter --net="/run/netns/$KM_NODE" ${KM_MW_WRAP[@]+"${KM_MW_WRAP[@]}"} "$KM_BIN/kmesh-map-writer" --bpffs-dir "$KM_DIR/bpffs/kmesh" --cgroup "$KM_CGROUP" \
		--socket "$KM_SOCKET" --socket-group "$KM_NOBODY" --allow "xds:uid=$KM_NOBODY" \
		--max-pods 1024 --max-frontends 4096 --max-services 1024 --max-endpoints 4096 \
		--max-backends 4096 --detach-on-exit --metrics-dir "$KM_DIR/metrics" --metrics-interval 1 \
		--cni-metrics-file "$KM_DIR/cni/state/metrics.prom" --cni-state-dir "$KM_DIR/cni/state" \
		"$@" >>"$KM_DIR/map-writer.log" 2>&1 &
	KM_MW_PID=$!
	KM_PIDS+=($KM_MW_PID)
	local i
	for i in $(seq 1 100); do
		[ -S "$KM_SOCKET" ] && return 0
		kill -0 $KM_MW_PID 2>/dev/null || break
		sleep 0.05
	done
	echo "kmesh-map-writer did not start:" >&2
	cat "$KM_DIR/map-writer.log" >&2
	return 1
}

# km_hbone_row IPV4: the row the map writer writes when the tunnel takes a pod's 15008 (kmesh_maps.h,
# km_hbone: v4-mapped address -> netns cookie), written directly: for benches that show what the
# tunnel changes in the kernel without running one.
km_hbone_row() {
	local a b c d
	IFS=. read -r a b c d <<<"$1"
	bpftool map update pinned "$KM_DIR/bpffs/kmesh/maps/km_hbone" \
		key hex 00 00 00 00 00 00 00 00 00 00 ff ff $(printf '%02x %02x %02x %02x' "$a" "$b" "$c" "$d") \
		value hex 01 00 00 00 00 00 00 00
}

# km_ipsec_cidr_row update|delete A.B.C.D/LEN: the row the IPsec agent writes in km_ipsec_cidr for
# a peer node's pod CIDR (kmesh_maps.h: v4-mapped, prefix 96 + LEN; peer id 1), written directly:
# for tests of what the kernel does with it where XFRM cannot run.
km_ipsec_cidr_row() {
	local a b c d len v=()
	IFS=./ read -r a b c d len <<<"$2"
	[ "$1" = update ] && v=(value hex 01 00 00 00 00 00 00 00)
	bpftool map "$1" pinned "$KM_DIR/bpffs/kmesh/maps/km_ipsec_cidr" key hex \
		$(printf '%02x' $((96 + len))) 00 00 00 00 00 00 00 00 00 00 00 00 00 ff ff \
		$(printf '%02x %02x %02x %02x' "$a" "$b" "$c" "$d") ${v[@]+"${v[@]}"}
}

# The agent runs as uid/gid 65534 with empty capability sets (see km_agent_caps).
km_agent_run() { # km_agent_run LOG ARGS...: an unprivileged agent in the background; its admin
	local log=$1 # socket is LOG with .sock for .log, in a directory uid 65534 may write
	shift
	mkdir -p "$KM_DIR/run"
	chown "$KM_NOBODY:$KM_NOBODY" "$KM_DIR/run"
	KM_AGENT_SOCKET=$KM_DIR/run/$(basename "${log%.log}").sock
	# KM_AGENT_WRAP: a command the agent runs under (a profiler, e.g. heaptrack -o FILE)
	# KM_AGENT_NETNS=node: in the node's network namespace (to serve on the node's address)
	${KM_AGENT_NETNS:+nsenter --net=/run/netns/$KM_NODE} \
	setpriv --reuid=$KM_NOBODY --regid=$KM_NOBODY --clear-groups --inh-caps=-all \
		--bounding-set=-all --no-new-privs ${KM_AGENT_WRAP[@]+"${KM_AGENT_WRAP[@]}"} \
		"$KM_BIN/kmesh-xds-agent" --map-writer-socket "$KM_SOCKET" \
		--admin-socket "$KM_AGENT_SOCKET" --metrics-address 127.0.0.1:0 \
		--metrics-dir "$KM_DIR/metrics" "$@" >>"$log" 2>&1 &
	KM_PIDS+=($!)
}

# km_metrics [PATH]: GET the agent's metrics endpoint (loopback, the port it logged it chose).
km_metrics() {
	local port
	port=$(sed -n 's/.*serving metrics on .* (port \([0-9]*\)).*/\1/p' "$KM_DIR/xds-agent.log" | tail -n 1)
	[ -n "$port" ] || { echo "the agent logged no metrics port" >&2; return 1; }
	${KM_AGENT_NETNS:+ip netns exec "$KM_NODE"} curl -sS --max-time 5 "http://127.0.0.1:$port${1:-/metrics}"
}

# km_metrics_has REGEX: the metrics page has a line matching REGEX (the page is read whole
# first: `km_metrics | grep -q` fails under pipefail when grep stops curl mid-write).
km_metrics_has() {
	local page
	page=$(km_metrics) || return 1
	grep -q -- "$1" <<<"$page"
}

# km_agent_json EXPR: evaluate EXPR over the agent's admin dump (as `d`); prints the result.
km_agent_json() {
	"$KM_TESTCTL" agent-dump --socket "$KM_DIR/run/xds-agent.sock" |
		"$KM_PY" -c 'import json, sys; d = json.load(sys.stdin); print(json.dumps(eval(sys.argv[1])))' "$1"
}

# km_wait_agent EXPR SECONDS: until the agent's dump (its items too) satisfies EXPR (a Python
# expression over d); on a timeout, says what it waited for.
km_wait_agent() {
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(KM_DUMP_ITEMS=1 km_agent_json "$1" 2>/dev/null)" = true ] && return 0
		sleep 0.2
	done
	echo "timed out after $2 s: $1" >&2
	return 1
}

km_agent_start() { # from the config file
	km_agent_run "$KM_DIR/xds-agent.log" --config-file "$KM_CONFIG" "$@"
	KM_AGENT_PID=$!
}

km_agent_start_xds() { # from the fake istiod, over TLS, with a token
	km_agent_run "$KM_DIR/xds-agent.log" --xds-address "127.0.0.1:$KM_ISTIOD_PORT" \
		--xds-ca-file "$KM_DIR/pki/ca.pem" --xds-server-name istiod.istio-system.svc \
		--xds-token-file "$KM_DIR/token" --cluster-id test-cluster --instance-ip 10.123.0.2 \
		--pod-name kmesh-abc --pod-namespace kmesh-system --node-name node-1 "$@"
	KM_AGENT_PID=$!
}

# km_make_pki: a test CA and an istiod certificate for istiod.istio-system.svc, made now.
km_make_pki() {
	local d=$KM_DIR/pki
	mkdir -p "$d"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj "/O=kmesh-test/CN=test-ca" -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=istiod" \
		-keyout "$d/istiod.key" -out "$d/istiod.csr" 2>/dev/null
	printf 'subjectAltName=DNS:istiod.istio-system.svc\nextendedKeyUsage=serverAuth\n' >"$d/ext"
	openssl x509 -req -in "$d/istiod.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 1 -extfile "$d/ext" -out "$d/istiod.pem" 2>/dev/null
	chmod 755 "$d"
	chmod 644 "$d/ca.pem"
}

# km_port_file FILE: the port a test server wrote into FILE once listening (5 s at most).
km_port_file() {
	local i
	for i in $(seq 1 100); do
		[ -s "$1" ] && break
		sleep 0.05
	done
	cat "$1"
}

# km_make_cert NAME SAN: a server certificate signed by the test CA (km_make_pki first), in
# $KM_DIR/pki/NAME.pem and NAME.key; SAN e.g. "IP:127.0.0.1".
km_make_cert() {
	local d=$KM_DIR/pki
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$d/$1.key" -out "$d/$1.csr" 2>/dev/null
	printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$2" >"$d/$1.ext"
	openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 1 -extfile "$d/$1.ext" -out "$d/$1.pem" 2>/dev/null
}

# km_kube_api_start STATE TOKEN: the fake Kubernetes API (tests/lib/fake_kube_api.py) over TLS
# on a free port of the node namespace's loopback, where the CNI plugin runs; objects from the
# JSON file STATE; requests logged to $KM_DIR/kube-api.requests. Sets KM_KUBE_PORT.
# km_kubeconfig_write TOKEN: $KM_DIR/kubeconfig for the fake API (km_kube_api_start) and token.
km_kubeconfig_write() {
	cat >"$KM_DIR/kubeconfig" <<JSON
{"apiVersion": "v1", "kind": "Config", "current-context": "t",
 "clusters": [{"name": "t", "cluster": {"server": "https://127.0.0.1:$KM_KUBE_PORT",
                                        "certificate-authority": "$KM_DIR/pki/ca.pem"}}],
 "users": [{"name": "t", "user": {"token": "$1"}}],
 "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}]}
JSON
}

km_kube_api_start() {
	km_make_cert kube-api IP:127.0.0.1
	rm -f "$KM_DIR/kube-api.port"
	ip netns exec "$KM_NODE" "$KM_PY" "$KM_ROOT/tests/lib/fake_kube_api.py" \
		--cert "$KM_DIR/pki/kube-api.pem" --key "$KM_DIR/pki/kube-api.key" --state "$1" \
		--token "$2" --log "$KM_DIR/kube-api.requests" --port-file "$KM_DIR/kube-api.port" \
		>>"$KM_DIR/kube-api.log" 2>&1 &
	KM_PIDS+=($!)
	KM_KUBE_PORT=$(km_port_file "$KM_DIR/kube-api.port")
}

# km_istiod_start [fake_istiod.py options]: the fake istiod over TLS on a free loopback port.
km_istiod_start() {
	mkdir -p "$KM_DIR/py"
	protoc --proto_path="$KM_ROOT/proto" --python_out="$KM_DIR/py" "$KM_ROOT"/proto/*.proto
	KM_ISTIOD_CTL=$KM_DIR/istiod.ctl
	# KM_ISTIOD_NETNS=node: in the node's network namespace (for a tunnel that runs there)
	${KM_ISTIOD_NETNS:+ip netns exec "$KM_NODE"} \
	env PYTHONPATH=$KM_DIR/py "$KM_PY" "$KM_ROOT/tests/lib/fake_istiod.py" --control "$KM_ISTIOD_CTL" \
		--port-file "$KM_DIR/istiod.port" --cert "$KM_DIR/pki/istiod.pem" \
		--key "$KM_DIR/pki/istiod.key" "$@" >>"$KM_DIR/istiod.log" 2>&1 &
	KM_PIDS+=($!)
	KM_ISTIOD_PORT=$(km_port_file "$KM_DIR/istiod.port")
}

km_istiod() { # km_istiod send|query|wait ARG...
	"$KM_PY" "$KM_ROOT/tests/lib/istiod_ctl.py" "$KM_ISTIOD_CTL" "$@"
}

# km_agent_caps: "uid capeff capprm capbnd" of the running agent, from /proc.
km_agent_caps() {
	awk '/^Uid:/{u=$2} /^CapEff:/{e=$2} /^CapPrm:/{p=$2} /^CapBnd:/{b=$2} END{print u, e, p, b}' \
		"/proc/$KM_AGENT_PID/status"
}

# km_write_config FILE-CONTENT: replace the config atomically (as an editor or ConfigMap would).
km_write_config() {
	cat >"$KM_CONFIG.tmp"
	chmod 644 "$KM_CONFIG.tmp"
	mv -f "$KM_CONFIG.tmp" "$KM_CONFIG"
}

# km_wait_rows TABLE PATTERN COUNT: until the map writer's table has COUNT rows matching.
km_wait_rows() {
	local i n
	for i in $(seq 1 100); do
		n=$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table "$1" 2>/dev/null | grep -c -- "$2")
		[ "$n" -eq "$3" ] && return 0
		sleep 0.1
	done
	echo "table $1: $n rows match '$2', expected $3" >&2
	"$KM_TESTCTL" dump --socket "$KM_SOCKET" --table "$1" >&2 2>/dev/null
	return 1
}

km_dump_logs() { # km_dump_logs NAME...: the last lines of $KM_DIR/NAME.log, for a failing test
	local f
	for f in "$@"; do
		echo "---- $f log"
		tail -n 30 "$KM_DIR/$f.log" 2>/dev/null
	done
}

km_env_cleanup() {
	km_env_stop
	wait 2>/dev/null
	km_env_remove
}

# km_env_stop: the first half of km_env_cleanup, which kills this environment's processes and
# waits for none (several environments in one test stop all before the one wait).
km_env_stop() {
	local pid
	set +e
	[ -n "${KM_AGENT_PID:-}" ] && kill -TERM "$KM_AGENT_PID" 2>/dev/null
	[ -n "${KM_MW_PID:-}" ] && kill -TERM "$KM_MW_PID" 2>/dev/null
	for pid in "${KM_MW_PID:-}" "${KM_AGENT_PID:-}"; do
		[ -n "$pid" ] || continue
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	done
	# only PIDs that are still this shell's children: a process killed and reaped earlier may have
	# had its PID reused by now, after a long run. Each is taken off the job table first: a
	# non-interactive bash reports a background job that a signal killed ("line N: PID Killed
	# ...") at its next command, noise at the end of every run (issue 47)
	for pid in "${KM_PIDS[@]}"; do
		[ "$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$$" ] || continue
		disown "$pid" 2>/dev/null
		kill -KILL "$pid" 2>/dev/null
		for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	done
	# a steady client a failed check left running would keep the wait below from returning
	[ -n "${KM_STEADY_OUT:-}" ] && pkill -KILL -f "steady_client.py .*--out $KM_STEADY_OUT" 2>/dev/null
}

# km_env_remove: the second half: the namespaces, cgroups, bpffs and run directory.
km_env_remove() {
	local ns cg
	set +e
	for ns in "${KM_PODS[@]}" "${KM_NODE:-}"; do
		[ -n "$ns" ] && ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		[ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
	done
	for cg in "${KM_CGROUP:-}" "${KM_TUNNEL_CGROUP:-}"; do
		[ -n "$cg" ] && [ -d "$cg" ] || continue
		xargs -r kill -KILL <"$cg/cgroup.procs" 2>/dev/null
		for _ in $(seq 1 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.05; done
	done
	if [ -n "${KM_DIR:-}" ]; then
		umount "$KM_DIR/bpffs" 2>/dev/null
		[ -n "$KM_OWN_CG2_MOUNT" ] && umount "$KM_OWN_CG2_MOUNT" 2>/dev/null
		rm -rf "$KM_DIR"
	fi
}
