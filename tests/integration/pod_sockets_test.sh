#!/usr/bin/env bash
# pod_sockets_test.sh — the map writer makes sockets inside an enrolled pod's network namespace
# for the tunnel and sends them over SCM_RIGHTS (PodSockets, role tunnel: issue 48, so the tunnel
# needs no CAP_SYS_ADMIN). Checked with tests/tools/kmesh-podsock, playing the tunnel:
#   - a listener on the pod's 15008, made in the pod (its netns cookie), that takes a connection
#     another pod makes to the pod's address, the caller's address seen as it is;
#   - unbound sockets made in the pod, which reach an application inside it at the pod's address,
#     from the pod's own address;
#   - refused: a pod not enrolled (NOT_FOUND), a role other than tunnel (PERMISSION_DENIED), a
#     non-root uid not allowed the role (at hello), too many sockets or a bad family
#     (BAD_REQUEST), a port an application of the pod holds (said so);
#   - a listener on 15008 records the pod's address in km_hbone (the kernel's authorization leaves
#     SYNs to that port to the tunnel), until the pod is unenrolled;
#   - the map writer keeps none of the sockets: its descriptor count is back where it was;
#   - and takes none: descriptors a peer attaches to its frames are dropped by the kernel.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

PODSOCK=$KM_ROOT/build/tests/kmesh-podsock
trap 'km_env_cleanup' EXIT
km_env_setup kmps$$ >/dev/null
km_pod_add client "$KM_SUBNET.10"
km_pod_add server "$KM_SUBNET.21"
km_backend_start server 8080
km_wait_listen server 8080 || exit 1
km_map_writer_start || exit 1
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path server)" --pod t/server >/dev/null
SERVER_COOKIE=$(ip netns exec "$KM_PREFIX-server" "$KM_PY" -c 'import socket
s = socket.socket(); print(int.from_bytes(s.getsockopt(socket.SOL_SOCKET, 71, 8), "little"))')
podsock() { "$PODSOCK" --socket "$KM_SOCKET" --netns "$(km_netns_path server)" "$@" 2>&1; }
fds_of_mw() { ls "/proc/$KM_MW_PID/fd" | wc -l; }
FDS_BEFORE=$(fds_of_mw)

podsock --listen 15008 --accept >"$KM_DIR/listen.out" &
LISTENER=$!
for _ in $(seq 1 50); do grep -q "^listener" "$KM_DIR/listen.out" && break; sleep 0.1; done
answer=$(km_in_pod client "$KM_PY" -c 'import socket, sys
s = socket.create_connection((sys.argv[1], 15008), timeout=5); print(s.recv(64).decode().strip())' "$KM_SUBNET.21" 2>&1)
wait "$LISTENER"
check "a listener on the pod's 15008, made inside the pod (its netns cookie), sent over SCM_RIGHTS" \
	eval 'grep -q "^reply OK applied 1" "$KM_DIR/listen.out" &&
	      grep -q "^listener cookie $SERVER_COOKIE port 15008$" "$KM_DIR/listen.out"'
check "... which takes another pod's connection to the pod's address, the caller seen as itself" \
	eval '[ "$answer" = hello ] && grep -q "^accepted from $KM_SUBNET.10:" "$KM_DIR/listen.out"'

hbone_rows() { bpftool map dump pinned "$(find "$KM_DIR/bpffs/kmesh" -name km_hbone | head -1)" -j |
	"$KM_PY" -c 'import json, sys; print(len(json.load(sys.stdin)))'; }
check "the pod's 15008 is the tunnel's now: its one address recorded in km_hbone" test "$(hbone_rows)" = 1
out=$(podsock --connect 3 --family 4 --connect-to "$KM_SUBNET.21:8080")
check "unbound sockets made inside the pod (3), which reach its application at the pod's address from the pod's own" \
	eval 'grep -q "^reply OK applied 3" <<<"$out" && [ "$(grep -c "^socket cookie $SERVER_COOKIE family 4$" <<<"$out")" = 3 ] &&
	      grep -q "^connected from $KM_SUBNET.21:" <<<"$out" && grep -q "^read server" <<<"$out"'
out=$(podsock --listen 15009 --connect 2 --family 6)
check "a listener and IPv6 sockets in one reply, the listener first" \
	eval 'grep -q "^reply OK applied 3" <<<"$out" && [ "$(sed -n 2p <<<"$out")" = "listener cookie $SERVER_COOKIE port 15009" ] &&
	      [ "$(grep -c "family 6$" <<<"$out")" = 2 ]'

out=$("$PODSOCK" --socket "$KM_SOCKET" --netns "$(km_netns_path client)" --listen 15008 2>&1)
check "a pod that is not enrolled: NOT_FOUND, no socket" \
	eval 'grep -q "^reply NOT_FOUND applied 0" <<<"$out" && ! grep -q "^listener" <<<"$out"'
out=$(podsock --role cni --listen 15008)
check "another role (cni) may not ask: PERMISSION_DENIED" grep -q "^reply PERMISSION_DENIED applied 0" <<<"$out"
out=$(setpriv --reuid="$KM_NOBODY" --regid="$KM_NOBODY" --clear-groups "$PODSOCK" --socket "$KM_SOCKET" \
	--cookie "$SERVER_COOKIE" --listen 15008 2>&1)
check "a uid not allowed the tunnel role (--allow tunnel:uid=...): refused at hello" \
	eval '! grep -q "^reply OK" <<<"$out" && grep -q "hello" <<<"$out"'
out=$(podsock --connect 65 --family 4)
check "more than 64 sockets: BAD_REQUEST" grep -q "^reply BAD_REQUEST applied 0" <<<"$out"
out=$(podsock --connect 1 --family 5)
check "a family other than 4 or 6: BAD_REQUEST" grep -q "^reply BAD_REQUEST applied 0" <<<"$out"
out=$(podsock --listen 8080)
check "a port an application of the pod listens on: refused, saying so" \
	eval 'grep -q "^reply INTERNAL applied 0: port 8080 in the pod: Address already in use (an application of the pod listens there)" <<<"$out"'
for _ in $(seq 1 10); do podsock --listen 15010 --connect 8 --family 4 >/dev/null; done
check "10 more requests: the map writer holds none of the sockets it sent ($FDS_BEFORE descriptors before, $(fds_of_mw) after)" \
	eval '[ "$(fds_of_mw)" -le "$FDS_BEFORE" ]'
# 10 peers, each attaching 60 descriptors to the start of a hello, kept connected meanwhile
"$KM_PY" - "$KM_SOCKET" <<'PY' &
import os, socket, sys, time
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(60)]
peers = []
for _ in range(10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    socket.send_fds(s, [b"\x00\x00"], fds)
    peers.append(s)
print("sent", flush=True)
time.sleep(10)
PY
HOLDER=$!
sleep 0.5
# the fewest of three looks: a descriptor the map writer holds for a moment of its own (a pod
# pass entering a namespace) is not one a peer attached
HELD=$( (fds_of_mw; sleep 0.2; fds_of_mw; sleep 0.2; fds_of_mw) | sort -n | head -1)
kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
check "descriptors peers attach to their frames are never taken: 10 peers x 60, the map writer holds $HELD (10 more sockets)" \
	eval '[ "$HELD" -le $((FDS_BEFORE + 10)) ]'
"$KM_TESTCTL" unenroll --socket "$KM_SOCKET" --netns "$(km_netns_path server)" >/dev/null
check "... and forgotten when the pod is unenrolled" test "$(hbone_rows)" = 0
[ $KM_FAIL -eq 0 ] || km_dump_logs map-writer
km_check_summary pod-sockets
