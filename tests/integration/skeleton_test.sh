#!/usr/bin/env bash
# skeleton_test.sh — the walking skeleton end to end, as root, with the real processes:
# a VIP is load-balanced over backend pods by the connect programs, configured from a file that
# the unprivileged xDS agent watches; the map writer enforces roles; nothing is left behind.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

VIP=10.96.123.10
config() { # config "b1 b2 ..." [unhealthy-backend]: the service and the listed backends
	local first=1 b
	{
		echo '{"resources": ['
		echo '{"service": {"name": "web", "namespace": "demo", "hostname": "web.demo.svc.cluster.local",'
		echo "  \"addresses\": [{\"network\": \"\", \"address\": \"$VIP\"}],"
		echo '  "ports": [{"servicePort": 80, "targetPort": 8080}]}}'
		for b in $1; do
			local status=HEALTHY
			[ "$b" = "${2:-}" ] && status=UNHEALTHY
			echo ",{\"workload\": {\"uid\": \"Kubernetes//Pod/demo/$b\", \"name\": \"$b\", \"namespace\": \"demo\","
			echo "  \"addresses\": [\"$KM_SUBNET.2${b#b}\"], \"status\": \"$status\","
			echo '  "services": {"demo/web.demo.svc.cluster.local": {"ports": [{"servicePort": 80, "targetPort": 8080}]}}}}'
		done
		echo ']}'
	} | km_write_config
}

PREFIX=kmt$$
trap 'km_env_cleanup' EXIT
km_env_setup "$PREFIX"
km_pod_add client "$KM_SUBNET.10"
km_pod_add outsider "$KM_SUBNET.11"
for b in b1 b2 b3; do
	km_pod_add "$b" "$KM_SUBNET.2${b#b}"
	km_backend_start "$b" 8080
done
for b in b1 b2 b3; do km_wait_listen "$b" 8080 || exit 1; done

# --- start-up failures say what to do and leave nothing behind
mkdir -p "$KM_DIR/plain"
"$KM_BIN/kmesh-map-writer" --bpffs-dir "$KM_DIR/plain/kmesh" --cgroup "$KM_CGROUP" \
	--socket "$KM_DIR/plain.sock" >"$KM_DIR/plain.log" 2>&1
rc=$?
check "a bpffs directory on another filesystem: exit 1, says to mount a bpffs" \
	eval '[ $rc = 1 ] && grep -q "is not on a bpf filesystem.*mount -t bpf bpf" "$KM_DIR/plain.log"'
check "... and creates nothing there" test ! -e "$KM_DIR/plain/kmesh"
"$KM_BIN/kmesh-map-writer" --bpffs-dir "$KM_DIR/bpffs/failed" --cgroup "$KM_DIR/no-such-cgroup" \
	--socket "$KM_DIR/failed.sock" >"$KM_DIR/failed.log" 2>&1
check "a start that fails after creating its bpffs directories removes them" \
	eval 'grep -q "cannot open cgroup" "$KM_DIR/failed.log" && [ ! -e "$KM_DIR/bpffs/failed" ]'

config "b1 b2 b3"
km_map_writer_start || exit 1
km_agent_start
check "a fresh start logs no libbpf warning (no pinned link yet is expected)" \
	eval '! grep -q "libbpf" "$KM_DIR/map-writer.log"'
check "map writer enrolls the client netns (cni role)" \
	"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" --pod demo/client
check "agent converges: 3 endpoints" km_wait_rows endpoint "^endpoint" 3

# --- the agent is unprivileged (uid 65534, every capability set empty, read from /proc)
read -r uid capeff capprm capbnd <<<"$(km_agent_caps)"
check "xds agent runs as uid 65534" test "$uid" = 65534
check "xds agent has no effective/permitted/bounding capabilities" \
	test "$capeff$capprm$capbnd" = 000000000000000000000000000000000000000000000000

# --- load balancing
out=$(km_connect client $VIP 80 --count 300)
echo "$out" | sed 's/^/       /'
for b in b1 b2 b3; do
	check "300 connections: $b gets a fair share (60..140)" within "$(count_of $b <<<"$out")" 60 140
done
check "300 connections: none failed" test "$(grep -c error <<<"$out")" -eq 0
out=$(km_connect client "::ffff:$VIP" 80 --count 30 --ipv6)
check "IPv6 socket to the v4-mapped VIP is balanced too (connect6)" \
	test "$(($(count_of b1 <<<"$out") + $(count_of b2 <<<"$out") + $(count_of b3 <<<"$out")))" -eq 30
out=$(km_connect client $VIP 81 --count 3)
check "a port not in the service is not rewritten" test "$(count_of error:ENETUNREACH <<<"$out")" -eq 3
out=$(km_connect outsider $VIP 80 --count 3)
check "a netns that is not enrolled is not redirected" test "$(count_of error:ENETUNREACH <<<"$out")" -eq 3
out=$(km_connect client "$KM_SUBNET.22" 8080 --count 3)
check "direct pod-IP access is left alone" test "$(count_of b2 <<<"$out")" -eq 3

# --- changes in the file
config "b1 b2"
check "removing b3 from the file: 2 endpoints" km_wait_rows endpoint "^endpoint" 2
out=$(km_connect client $VIP 80 --count 150)
check "after removal no new connection reaches b3" test "$(count_of b3 <<<"$out")" -eq 0
check "after removal b1 and b2 take all 150" \
	test "$(($(count_of b1 <<<"$out") + $(count_of b2 <<<"$out")))" -eq 150
check "b3's backend row is gone" km_wait_rows backend "^backend" 2

config "b1 b2 b3"
check "adding b3 back: 3 endpoints" km_wait_rows endpoint "^endpoint" 3
out=$(km_connect client $VIP 80 --count 300)
check "after adding, b3 gets connections again (60..140)" within "$(count_of b3 <<<"$out")" 60 140

config "b1 b2 b3" b2
check "b2 unhealthy: 2 endpoints" km_wait_rows endpoint "^endpoint" 2
out=$(km_connect client $VIP 80 --count 150)
check "an unhealthy workload gets no new connections" test "$(count_of b2 <<<"$out")" -eq 0

echo '{"resources": [ {"service": {"namespace": "demo"}} ]}' | km_write_config
sleep 0.5
out=$(km_connect client $VIP 80 --count 20)
check "a bad edit keeps the previous configuration" test "$(grep -c error <<<"$out")" -eq 0
echo 'not json' | km_write_config
sleep 0.5
check "an unparsable file keeps the previous configuration" km_wait_rows endpoint "^endpoint" 2
check "the agent logs why the file was rejected" grep -q "not valid JSON" "$KM_DIR/xds-agent.log"

echo '{"resources": []}' | km_write_config
check "an empty file removes every row" km_wait_rows frontend "^frontend" 0
out=$(km_connect client $VIP 80 --count 3)
check "without the service the VIP is not rewritten" test "$(count_of error:ENETUNREACH <<<"$out")" -eq 3

# --- roles and robustness of the map writer socket
check "uid 65534 may take the xds role: the agent (uid 65534) holds it" \
	grep -q "uid 65534 (kmesh-xds-agent) connected as xds" "$KM_DIR/map-writer.log"
setpriv --reuid=65534 --regid=65534 --clear-groups "$KM_TESTCTL" hello --socket "$KM_SOCKET" --role xds
rc=$?
check "... and a second peer is refused it while the agent is connected (one xds writer)" \
	eval '[ $rc -eq 3 ] && grep -q "role '"'"'xds'"'"' is held by pid" "$KM_DIR/map-writer.log"'
setpriv --reuid=65533 --regid=65534 --clear-groups "$KM_TESTCTL" hello --socket "$KM_SOCKET" --role xds
check "uid 65533 (not allowed) is refused the xds role" test $? -eq 3
setpriv --reuid=65534 --regid=65534 --clear-groups "$KM_TESTCTL" hello --socket "$KM_SOCKET" --role cni
check "uid 65534 is refused the cni role" test $? -eq 3
check "the map writer logs the refusal" grep -q "uid 65533 gid 65534 may not take role 'xds'" "$KM_DIR/map-writer.log"
check "garbage and oversize frames are handled" "$KM_TESTCTL" abuse --socket "$KM_SOCKET"
check "an admin sets the map writer's log level" \
	eval '"$KM_TESTCTL" log-level --socket "$KM_SOCKET" --level info &&
	      grep -q "log level set to info by pid" "$KM_DIR/map-writer.log"'
setpriv --reuid=65534 --regid=65534 --clear-groups "$KM_TESTCTL" hello --socket "$KM_SOCKET" --role ipsec
check "uid 65534 (allowed xds only) is refused the ipsec role" test $? -eq 3
check "unenroll" "$KM_TESTCTL" unenroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)"
check "manage table empty after unenroll" km_wait_rows manage "^manage" 0

# --- clean shutdown and cleanup
bpffs=$KM_DIR/bpffs/kmesh
kill -TERM "$KM_MW_PID"
wait "$KM_MW_PID"
check "map writer exits 0 on SIGTERM" test $? -eq 0
check "--detach-on-exit unpins every map and link" test ! -e "$bpffs"
[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer xds-agent
cg=$KM_CGROUP
node=$KM_NODE
dir=$KM_DIR
km_env_cleanup
trap - EXIT
check "cleanup removes the cgroup" test ! -d "$cg"
check "cleanup removes the namespaces" test -z "$(ip netns list | grep "^$PREFIX-")"
check "cleanup removes the run directory and bpffs mount" test ! -e "$dir"

km_check_summary skeleton
