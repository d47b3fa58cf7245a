#!/usr/bin/env bash
# ipsec_test.sh — the real kmesh-ipsec-agent in the test's node network namespace (its XFRM
# objects never touch the host's): the key file loaded and advertised, the local in/fwd policies
# in the kernel, a peer given over the admin socket, the kernel's refusal of ESP states (this
# kernel has no ESP) reported clearly, refused peers (by message and by kmeshctl inject) tried
# again on a timer until they leave, a rotation through the watched key file, bad key files
# refused while the loaded keys stay (each counted and logged as "key file refused: PATH:
# REASON"), the map writer's IPsec tables kept equal to the peers (also across a crash of the
# agent), and everything removed on exit.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"
source "$(dirname "$0")/../lib/ipsec-env.sh"

policies() { ip -n "$KM_NODE" xfrm policy; }
has_esp_state() { says "proto esp" ip -n "$KM_NODE" xfrm state; }

trap 'km_env_cleanup' EXIT
km_env_setup kmi$$
nic_setup
key_file 1 17
km_map_writer_start || exit 1
start_agent

check "the key file's SPI 1 is loaded and advertised" dump_is 'd["advertised_spi"] == 1 and d["current_spi"] == 1'
check "in and fwd policies to the local pod CIDR: mark 0xd0, an any-source ESP tunnel template" \
	eval '[ "$(policies | grep -c "dst 10.244.1.0/24")" = 2 ] && says "dir in" policies &&
	      says "dir fwd" policies && says "mark 0xd0/0xffffffff" policies &&
	      says "tmpl src 0.0.0.0 dst 0.0.0.0" policies'

reply=$("$KM_TESTCTL" ipsec-peer --socket "$KM_DIR/ipsec.sock" --name node-b --spi 1 \
	--addrs 10.0.0.2 --boot-id "$KM_BOOT_B" --cidrs 10.244.2.0/24)
check "a peer over the admin socket is taken (id 1)" dump_is '[p["id"] for p in d["peers"]] == [1]'
check "the map writer's IPsec tables get its address and pod CIDR (for the tc programs)" \
	eval 'rows_are peer "ipsec_peer 10.0.0.2 id 1" && rows_are cidr "ipsec_cidr 10.244.2.0/24 peer 1"'
if has_esp_state; then
	check "this kernel has ESP: the peer's ingress state is installed, with its peer-id mark" \
		says "mark 0x10000/0xfff0000" ip -n "$KM_NODE" xfrm state
else
	check "the kernel's refusal of the ESP state is reported clearly (in the log)" \
		logged "add ESP state 10.0.0.2 -> 10.0.0.1 spi 1: the kernel refused it: Function not implemented (this kernel has no ESP support for the AEAD"
	check "... and in the admin reply" eval 'echo "$reply" | grep -q "spi 1: Function not implemented"'
	check "... and counted" dump_is 'd["errors"] >= 1 and d["xfrm_refused"] >= 1'

	# a peer whose state the kernel refused is tried again on a timer (1 s, doubling), whoever
	# gave it: node-b came as the admin socket's message, node-r comes by kmeshctl inject
	"$KM_ROOT/build/bin/kmeshctl" --ipsec-socket "$KM_DIR/ipsec.sock" inject ipsec-agent - >/dev/null <<<'{"type": "ADDED",
	  "object": {"apiVersion": "kmesh.net/v1alpha1", "kind": "KmeshNodeInfo",
	  "metadata": {"name": "node-r", "namespace": "kmesh-system"}, "spec": {"spi": 1,
	  "addresses": ["10.0.0.5"], "bootID": "rrrrrrrr-1111-2222-3333-444444444444",
	  "podCIDRS": ["10.244.5.0/24"]}}}'
	req0=$(dump_field 'd["xfrm_requests"]') r0=$(grep -c "add ESP state 10.0.0.5 -> 10.0.0.1" "$KM_DIR/ipsec.log")
	check "refused peers are tried again on a timer, with no new event: netlink requests rise" \
		dump_within 8 "d['xfrm_requests'] >= $req0 + 4"
	check "... both the peer given by message and the one given by kmeshctl inject (2 tries each within 8 s)" \
		dump_within 8 "sorted((p['name'], p['retries'] >= 2) for p in d['peers']) == [('node-b', True), ('node-r', True)]"
	check "... each try sent to the kernel again" \
		eval '[ "$(grep -c "add ESP state 10.0.0.5 -> 10.0.0.1" "$KM_DIR/ipsec.log")" -ge $((r0 + 2)) ]'
	check "... the log saying when the next try comes (1 s, then 2 s, doubling)" \
		eval 'logged "peer node-r: not every rule is in place" && logged "; trying again in 2 s"'
	check "... and the metrics counting the tries and the peers waiting for one" \
		eval 'for _ in $(seq 1 30); do grep -qx "kmesh_ipsec_peers_pending 2" "$KM_DIR/metrics/ipsec-agent.prom" && break; sleep 0.1; done
		      grep -qx "kmesh_ipsec_peers_pending 2" "$KM_DIR/metrics/ipsec-agent.prom" &&
		      grep -Eqx "kmesh_ipsec_peer_retries_total ([4-9]|[0-9]{2,})" "$KM_DIR/metrics/ipsec-agent.prom"'
	"$KM_ROOT/build/bin/kmeshctl" --ipsec-socket "$KM_DIR/ipsec.sock" inject ipsec-agent - >/dev/null <<<'{"type": "DELETED",
	  "object": {"apiVersion": "kmesh.net/v1alpha1", "kind": "KmeshNodeInfo",
	  "metadata": {"name": "node-r", "namespace": "kmesh-system"}}}'
	gone=$(grep -c "ESP state 10.0.0.5 -> 10.0.0.1" "$KM_DIR/ipsec.log")
	sleep 4
	check "a refused peer that leaves is not tried again" \
		eval '[ "$(grep -c "ESP state 10.0.0.5 -> 10.0.0.1" "$KM_DIR/ipsec.log")" = "$gone" ] &&
		      dump_is "[p[\"name\"] for p in d[\"peers\"]] == [\"node-b\"]"'
fi

key_file 2 18
check "a rotation through the watched key file: SPI 2 loaded" logged "key SPI 2 (rfc4106(gcm(aes))) loaded"
check "... and SPI 1 kept for the peer still using it" dump_is 'sorted(k["spi"] for k in d["keys"]) == [1, 2] and d["current_spi"] == 2'
key_file 3 19 35
check "a key file with a 35-byte key is refused, saying why" \
	logged "must be base64 of 20, 28, 36 bytes for rfc4106(gcm(aes)) (key and salt); the keys already loaded stay in use"
# every kind of bad file is refused the same way: counted, and logged as "key file refused:
# PATH: REASON" (what docs/troubleshooting.md tells operators to look for)
check "... counted as refused (kmesh_ipsec_key_files_refused_total), logged as 'key file refused: PATH: REASON'" \
	eval 'dump_is "d[\"key_files_refused\"] == 1" &&
	      logged "key file refused: $KM_DIR/ipsec/ipSec: \"aeadKey\" must be base64 of 20, 28, 36 bytes"'
raw_key_file() { printf '%s' "$1" >"$KM_DIR/ipsec/.ipSec.tmp" && chmod 600 "$KM_DIR/ipsec/.ipSec.tmp" && mv "$KM_DIR/ipsec/.ipSec.tmp" "$KM_DIR/ipsec/ipSec"; }
good_b64=$("$KM_PY" -c 'import base64; print(base64.b64encode(bytes([21]) * 36).decode())')
refused=1
bad_file() { # bad_file WHAT TEXT REASON: TEXT as the key file is refused, counted, REASON logged
	raw_key_file "$2"
	refused=$((refused + 1)) why=$3
	check "a key file $1 is refused and counted ($refused), saying why" \
		eval 'dump_is "d[\"key_files_refused\"] == $refused and d[\"current_spi\"] == 2" &&
		      logged "key file refused: $KM_DIR/ipsec/ipSec: $why"'
}
bad_file "that is not JSON" 'spi: 3' "not JSON (line 1)"
bad_file "that is empty" '' "not JSON (line 1)"
bad_file "that is not an object" '[3]' "not a JSON object"
bad_file "with SPI 0" '{"spi": 0, "aeadKeyName": "rfc4106(gcm(aes))", "aeadKey": "'"$good_b64"'", "length": 128}' \
	'"spi" must be an integer from 1 to 4294967295'
bad_file "naming an AEAD Linux ESP does not offer" \
	'{"spi": 3, "aeadKeyName": "rfc4543(gcm(aes))", "aeadKey": "'"$good_b64"'", "length": 128}' \
	'"aeadKeyName" must name an AEAD that Linux ESP offers'
bad_file "whose key is not base64" '{"spi": 3, "aeadKeyName": "rfc4106(gcm(aes))", "aeadKey": "!!", "length": 128}' \
	'"aeadKey" must be base64 of 20, 28, 36 bytes'
bad_file "with a 100-bit ICV" '{"spi": 3, "aeadKeyName": "rfc4106(gcm(aes))", "aeadKey": "'"$good_b64"'", "length": 100}' \
	'"length" (ICV bits) must be 64, 96, 128'
bad_file "larger than 64 KiB" "$(printf '%70000s' '')" "larger than 65536 bytes"
# a valid key in a file other users may read: refused (the chart's Secret volume is 0400)
printf '%s' '{"spi": 3, "aeadKeyName": "rfc4106(gcm(aes))", "aeadKey": "'"$good_b64"'", "length": 128}' \
	>"$KM_DIR/ipsec/.ipSec.tmp" && chmod 644 "$KM_DIR/ipsec/.ipSec.tmp" && mv "$KM_DIR/ipsec/.ipSec.tmp" "$KM_DIR/ipsec/ipSec"
refused=$((refused + 1))
check "a valid key file that other users may read (0644) is refused and counted ($refused), saying how to fix it" \
	eval 'dump_is "d[\"key_files_refused\"] == $refused and d[\"current_spi\"] == 2" &&
	      logged "key file refused: $KM_DIR/ipsec/ipSec: mode 0644 lets other users read or write the key: chmod 0600"'
key_file 2 99
check "a key file reusing SPI 2 with another key is refused" logged "SPI 2 already names another key"
check "... and the agent keeps SPI 2, counting every refused file (9 malformed, 1 open to others, 1 reusing an SPI)" \
	dump_is 'd["current_spi"] == 2 and d["key_files_refused"] == 11'
check "... logged as 'key file refused: PATH: REASON'" \
	logged "key file refused: $KM_DIR/ipsec/ipSec: SPI 2 already names another key"
check "... and in the metrics file" \
	eval 'for _ in $(seq 1 30); do grep -qx "kmesh_ipsec_key_files_refused_total 11" "$KM_DIR/metrics/ipsec-agent.prom" && break; sleep 0.1; done
	      grep -qx "kmesh_ipsec_key_files_refused_total 11" "$KM_DIR/metrics/ipsec-agent.prom"'

bad=$("$KM_TESTCTL" ipsec-peer --socket "$KM_DIR/ipsec.sock" --name node-x --spi 1 \
	--addrs 10.0.0.9 --boot-id short 2>&1)
check "a peer with a short boot id is refused by name (Kmesh panics on it)" \
	eval 'echo "$bad" | grep -q "BAD_REQUEST: node node-x: boot id .short. must be 36 to 63 characters"'
"$KM_TESTCTL" ipsec-peer-gone --socket "$KM_DIR/ipsec.sock" --name node-x >/dev/null
"$KM_TESTCTL" ipsec-peer-gone --socket "$KM_DIR/ipsec.sock" --name node-b >/dev/null
check "peers that leave are forgotten" dump_is 'd["peers"] == []'
check "... and their rows leave the map writer's tables" eval 'rows_are peer "" && rows_are cidr ""'

# a peer's rows outlive a crash of the agent; the next agent, which does not know that peer,
# removes them when it connects
"$KM_TESTCTL" ipsec-peer --socket "$KM_DIR/ipsec.sock" --name node-c --spi 1 --addrs 10.0.0.3 \
	--boot-id "cccccccc-1111-2222-3333-444444444444" --cidrs 10.244.3.0/24 >/dev/null
rows_are cidr "ipsec_cidr 10.244.3.0/24 peer 1" || true
kill -KILL "$AGENT"
wait "$AGENT" 2>/dev/null
check "after a crash the rows are still there" rows_are cidr "ipsec_cidr 10.244.3.0/24 peer 1"
start_agent
check "the restarted agent removes the rows of peers it does not know" \
	eval 'rows_are peer "" && rows_are cidr ""'

check "the log level is set over the admin socket" \
	eval '"$KM_TESTCTL" log-level --socket "$KM_DIR/ipsec.sock" --level warn && logged "log level set to warn"'
check "... and an unknown one is refused, naming the known ones" \
	eval 'out=$("$KM_TESTCTL" log-level --socket "$KM_DIR/ipsec.sock" --level loud 2>&1)
	      [ $? -ne 0 ] && echo "$out" | grep -q "BAD_REQUEST: unknown log level (error, warn, info, debug)"'

kill -TERM "$AGENT"
wait "$AGENT"
check "SIGTERM: a clean exit" test $? -eq 0
check "--uninstall-on-exit removed every policy it installed" test -z "$(policies)"

[ $KM_FAIL -eq 0 ] || cat "$KM_DIR/ipsec.log"
km_check_summary ipsec
