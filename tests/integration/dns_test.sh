#!/usr/bin/env bash
# dns_test.sh — the node DNS proxy (the xDS agent's --dns-address), asked with dig from an enrolled
# pod (and getent, glibc's resolver with the pod's search list) whose port-53 traffic the map
# writer sends there (--dns-resolver, --dns-port): a service's
# A and AAAA from the model, in every form a pod's search list makes; a host only a ServiceEntry
# declares; a headless service's pods; names that are not the mesh's forwarded to the upstream
# (dnsmasq in a namespace of its own): an address, an NXDOMAIN, and an answer too large for UDP
# that comes back truncated and completes over TCP; every query over UDP and TCP, IPv4 and IPv6
# transport; a service that arrives or goes is answered or forwarded within a second (no
# rebuild); a workload istiod names by hostname only (ServiceEntry resolution DNS) resolved by
# the agent on its loop, every address kept (and a backend each: a service's connections reach
# every address), its answer followed within the TTL when it changes and kept when the name
# stops resolving; the counters on the metrics page. Last, headless services of 200 and 5,000
# pods (issue 47: the proxy answered 64 of them): every pod over TCP and through getent, UDP
# answers truncated as they should be, and past one message's 65,535 bytes every pod in one of
# two answers.
set -uo pipefail
source "$(dirname "$0")/../lib/mesh-env.sh"
source "$(dirname "$0")/../lib/check.sh"

S=$KM_SUBNET
S6=$KM_SUBNET6
PORT=15053
q() { # q ARGS...: dig from the client pod, short answers sorted (its port-53 traffic is redirected)
	km_in_pod client dig +time=2 +tries=1 "$@" | sort
}
status() { km_in_pod client dig +time=2 +tries=1 "$@" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p'; }

trap 'km_env_cleanup' EXIT
km_env_setup kmd$$
km_pod_add client "$S.10" "${S6}10"
km_pod_add b1 "$S.21"
km_pod_add b2 "$S.22"
km_pod_add up "$S.53"
printf '192.0.2.10 app.example.com\n192.0.2.11 app.example.com\n' >"$KM_DIR/app.hosts"
printf '%s multi.example.com\n%s multi.example.com\n' "$S.21" "$S.22" >"$KM_DIR/multi.hosts"
long=$(printf 'x%.0s' $(seq 1 200))
txt=()
for i in $(seq 1 12); do txt+=(--txt-record="big.example.com,$i$long"); done
km_in_pod up dnsmasq --keep-in-foreground --no-resolv --no-hosts --user=root --port=53 \
	--listen-address="$S.53" --bind-interfaces --address=/ext.example.com/192.0.2.7 \
	--local=/example.com/ --local=/cluster.local/ "${txt[@]}" --addn-hosts="$KM_DIR/app.hosts" --addn-hosts="$KM_DIR/multi.hosts" \
	--local-ttl=1 --pid-file= 2>"$KM_DIR/dnsmasq.log" &
KM_PIDS+=($!)
km_wait_listen up 53 -u || exit 1
wl() { # wl NAME IP [SERVICES]
	echo '{"workload": {"uid": "Kubernetes//Pod/t/'$1'", "name": "'$1'", "namespace": "t",
	  "addresses": ["'$2'"], "services": {'${3:-}'}}}'
}
mesh() { # mesh [EXTRA-RESOURCE]: the mesh's configuration file
	cat <<JSON | km_write_config
{"resources": [
 {"service": {"name": "web", "namespace": "t", "hostname": "web.t.svc.cluster.local",
   "addresses": [{"address": "10.96.9.1"}, {"address": "fd00:96::9:1"}], "ports": [{"servicePort": 80}]}},
 {"service": {"name": "api.external.com", "namespace": "t", "hostname": "api.external.com",
   "addresses": [{"address": "240.240.0.5"}], "ports": [{"servicePort": 443}]}},
 {"service": {"name": "hl", "namespace": "t", "hostname": "hl.t.svc.cluster.local", "ports": [{"servicePort": 80}]}},
 {"service": {"name": "app", "namespace": "t", "hostname": "app.t.svc.cluster.local", "ports": [{"servicePort": 80}]}},
 {"workload": {"uid": "Kubernetes//ServiceEntry/t/app", "name": "app", "namespace": "t", "hostname": "app.example.com",
   "services": {"t/app.t.svc.cluster.local": {}}}},
 {"service": {"name": "multi", "namespace": "t", "hostname": "multi.t.svc.cluster.local",
   "addresses": [{"address": "10.96.9.30"}], "ports": [{"servicePort": 80, "targetPort": 8080}]}},
 {"workload": {"uid": "Kubernetes//ServiceEntry/t/multi", "name": "multi", "namespace": "t", "hostname": "multi.example.com",
   "services": {"t/multi.t.svc.cluster.local": {}}}},
 {"service": {"name": "lit", "namespace": "t", "hostname": "lit.t.svc.cluster.local", "ports": [{"servicePort": 80}]}},
 {"workload": {"uid": "Kubernetes//ServiceEntry/t/lit", "name": "lit", "namespace": "t", "hostname": "192.0.2.77",
   "services": {"t/lit.t.svc.cluster.local": {}}}},
 $(wl client "$S.10"), $(wl b1 "$S.21" '"t/hl.t.svc.cluster.local": {}'), $(wl b2 "$S.22" '"t/hl.t.svc.cluster.local": {}')
 ${1:+, $1}
]}
JSON
}
mesh
km_map_writer_start --dns-resolver "$S.1" --dns-resolver "${S6}1" --dns-port $PORT || exit 1
KM_AGENT_NETNS=node
km_agent_start --dns-address "[::]:$PORT" --dns-upstream "$S.53" --hostname-dns-server "$S.53"
"$KM_TESTCTL" enroll --socket "$KM_SOCKET" --netns "$(km_netns_path client)" >/dev/null
for _ in $(seq 1 50); do
	[ -n "$(ip netns exec "$KM_NODE" ss -Hlnu "sport = :$PORT")" ] && grep -q "serving DNS" "$KM_DIR/xds-agent.log" && break
	sleep 0.1
done
km_wait_rows service "^service" 6 >/dev/null || exit 1

for t in "" +tcp; do
	via=${t:-+notcp}
	check "$via: a service's A record from the model, authoritative" \
		eval '[ "$(q $t +short @10.96.0.10 web.t.svc.cluster.local)" = 10.96.9.1 ] && says "flags: qr aa" km_in_pod client dig $t @10.96.0.10 web.t.svc.cluster.local'
	check "$via: its AAAA" eval '[ "$(q $t +short @10.96.0.10 web.t.svc.cluster.local AAAA)" = fd00:96::9:1 ]'
	check "$via: the forms a pod's search list makes (web.t, web.t.svc, web.t.svc.cluster.local.t.svc.cluster.local)" \
		eval '[ "$(q $t +short @10.96.0.10 web.t)" = 10.96.9.1 ] && [ "$(q $t +short @10.96.0.10 web.t.svc)" = 10.96.9.1 ] && [ "$(q $t +short @10.96.0.10 web.t.svc.cluster.local.t.svc.cluster.local)" = 10.96.9.1 ]'
	check "$via: a host only a ServiceEntry declares, also at a pod's first search (api.external.com.t.svc.cluster.local)" \
		eval '[ "$(q $t +short @10.96.0.10 api.external.com)" = 240.240.0.5 ] && [ "$(q $t +short @10.96.0.10 api.external.com.t.svc.cluster.local)" = 240.240.0.5 ]'
	check "$via: a headless service: its pods' addresses" \
		eval '[ "$(q $t +short @10.96.0.10 hl.t.svc.cluster.local | tr "\n" " ")" = "$S.21 $S.22 " ]'
	check "$via: another name forwarded upstream: its address" \
		eval '[ "$(q $t +short @10.96.0.10 ext.example.com)" = 192.0.2.7 ]'
	check "$via: NXDOMAIN from upstream passed on" eval '[ "$(status $t @10.96.0.10 nope.example.com)" = NXDOMAIN ]'
done
# glibc's resolver as a pod's program uses it (getent): the pod's resolv.conf, with its search
# list and ndots:5, bound over /etc/resolv.conf in a mount namespace of the command's own
printf 'nameserver 10.96.0.10\nsearch t.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5 attempts:1 timeout:2\n' >"$KM_DIR/pod-resolv.conf"
pod_getent() { km_in_pod client unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf && exec getent "$@"' "$KM_DIR/pod-resolv.conf" "$@"; }
check "getent from the pod (glibc, its search list): a short name, name.ns, a ServiceEntry host, a forwarded name" \
	eval '[ "$(pod_getent ahostsv4 web | awk "NR==1{print \$1}")" = 10.96.9.1 ] && [ "$(pod_getent ahostsv4 web.t | awk "NR==1{print \$1}")" = 10.96.9.1 ] && [ "$(pod_getent ahostsv4 api.external.com | awk "NR==1{print \$1}")" = 240.240.0.5 ] && [ "$(pod_getent ahostsv4 ext.example.com | awk "NR==1{print \$1}")" = 192.0.2.7 ]'
check "... and an unknown name fails as it should (NXDOMAIN through every search form)" \
	eval '! pod_getent ahostsv4 nope.example.com >/dev/null'
check "over IPv6 transport too (the redirect's IPv6 resolver, the proxy's dual-stack socket)" \
	eval '[ "$(q -6 +short @fd00:96::a web.t.svc.cluster.local)" = 10.96.9.1 ] && [ "$(q -6 +short @fd00:96::a ext.example.com)" = 192.0.2.7 ]'
check "an answer too large for UDP comes back truncated" \
	eval 'ans=$(km_in_pod client dig +notcp +ignore @10.96.0.10 big.example.com TXT) && grep -q "flags: qr.* tc" <<<"$ans"'
check "... and completes over TCP (dig retries there): all 12 records" \
	eval '[ "$(q +short @10.96.0.10 big.example.com TXT | wc -l)" = 12 ]'
mesh '{"service": {"name": "late", "namespace": "t", "hostname": "late.t.svc.cluster.local", "addresses": [{"address": "10.96.9.7"}], "ports": [{"servicePort": 80}]}}'
check "a service that arrives is answered within a second" \
	eval 'for _ in $(seq 1 20); do [ "$(q +short @10.96.0.10 late.t.svc.cluster.local)" = 10.96.9.7 ] && break; sleep 0.1; done; [ "$(q +short @10.96.0.10 late.t.svc.cluster.local)" = 10.96.9.7 ]'
mesh
check "... and once it goes, the name is upstream's again (NXDOMAIN)" \
	eval 'for _ in $(seq 1 20); do [ "$(status @10.96.0.10 late.t.svc.cluster.local)" = NXDOMAIN ] && break; sleep 0.1; done; [ "$(status @10.96.0.10 late.t.svc.cluster.local)" = NXDOMAIN ]'
app() { q +short @10.96.0.10 app.t.svc.cluster.local | tr "\n" " "; } # headless: the workload's addresses
check "a workload named by hostname: resolved by the agent, both addresses kept" \
	eval 'for _ in $(seq 1 30); do [ "$(app)" = "192.0.2.10 192.0.2.11 " ] && break; sleep 0.1; done; [ "$(app)" = "192.0.2.10 192.0.2.11 " ]'
check "... and its backend row carries the address" \
	eval 'rows=$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table backend) && grep -q "192.0.2.1[01]" <<<"$rows"'
km_backend_start b1 8080
km_backend_start b2 8080
km_wait_listen b1 8080 && km_wait_listen b2 8080 || exit 1
check "a name that resolves to two pods: a backend each, a service's connections reach both" \
	eval 'out=$(km_connect client 10.96.9.30 80 --count 40); echo "$out"; echo "$out" | grep -q " b1$" && echo "$out" | grep -q " b2$"'
printf '192.0.2.12 app.example.com\n' >"$KM_DIR/app.hosts"
pkill -HUP -f "dnsmasq .*$KM_DIR/app.hosts"
check "its answer changes (TTL 1 s): followed within 3 s, the backend rows too (the second address's row gone)" \
	eval 'for _ in $(seq 1 30); do [ "$(app)" = "192.0.2.12 " ] && break; sleep 0.1; done; [ "$(app)" = "192.0.2.12 " ] && rows=$("$KM_TESTCTL" dump --socket "$KM_SOCKET" --table backend) && grep -q "192.0.2.12" <<<"$rows" && ! grep -q "192.0.2.1[01]" <<<"$rows"'
: >"$KM_DIR/app.hosts"
pkill -HUP -f "dnsmasq .*$KM_DIR/app.hosts"
sleep 3
check "the name stops resolving: the last good address is kept, the failure counted" \
	eval '[ "$(app)" = "192.0.2.12 " ] && km_metrics_has "^kmesh_hostname_resolution_failures_total [1-9]" && grep -q "app.example.com of workload Kubernetes//ServiceEntry/t/app: .*its last addresses are kept" "$KM_DIR/xds-agent.log"'
check "a hostname c-ares answers at once (an address literal) is resolved too" \
	eval 'for _ in $(seq 1 20); do [ "$(q +short @10.96.0.10 lit.t.svc.cluster.local)" = 192.0.2.77 ] && break; sleep 0.1; done; [ "$(q +short @10.96.0.10 lit.t.svc.cluster.local)" = 192.0.2.77 ]'
# a TCP client that asks and never reads: closed once 256 KiB of answers wait for it
km_in_pod client "$KM_PY" -c 'import socket, struct, sys, time
q = bytes.fromhex("1234010000010000000000000377656201740373766307636c7573746572056c6f63616c0000010001")
s = socket.socket()
# small before it connects, so the window it offers was always small: shrunk after, the agent
# may send within the larger window first, segments this socket then drops, and both ends stall
# (the client cannot send, the agent holds less than the bound): a TCP deadlock, not the agent
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.settimeout(5)
s.connect(("10.96.0.10", 53))
m = struct.pack(">H", len(q)) + q
sent, t0, end = 0, time.monotonic(), "all sent"
try:
    for _ in range(400):
        s.sendall(m * 500)
        sent += 500
except OSError as e:
    end = repr(e)
print("sent %d queries in %.1f s, ended by %s" % (sent, time.monotonic() - t0, end), file=sys.stderr)
time.sleep(4)  # held open, never read: the agent must be the one to close it (an exit would
               # reset the connection first, and the agent would close it for that instead)' 2>"$KM_DIR/flood.log"
slow_closed() { # on a failure, what the flood client saw and what the proxy counted
	for _ in $(seq 1 30); do km_metrics_has "^kmesh_dns_tcp_slow_closed_total [1-9]" && return 0; sleep 0.1; done
	cat "$KM_DIR/flood.log" >&2
	km_metrics | grep "^kmesh_dns" >&2
	return 1
}
check "a TCP client that asks and never reads is closed (its answers do not pile up in the agent)" slow_closed
check "the proxy's counters on the metrics page" \
	eval 'km_metrics_has "^kmesh_dns_queries_total{result=\"answered\"} [1-9]" && km_metrics_has "^kmesh_dns_queries_total{result=\"forwarded\"} [1-9]" && km_metrics_has "^kmesh_dns_truncated_total 0" && km_metrics_has "^kmesh_dns_names 6"'

# headless services of many pods (addresses in the model only; nothing is sent to them):
# "big", 200 pods, 10.250.0.1-200; "huge", 5,000 pods, 10.251.0.0-10.251.19.135
many=$(for i in $(seq 1 200); do
	printf '{"workload": {"uid": "Kubernetes//Pod/t/big-%d", "name": "big-%d", "namespace": "t", "addresses": ["10.250.0.%d"], "services": {"t/big.t.svc.cluster.local": {}}}},\n' $i $i $i
done; for i in $(seq 0 4999); do
	printf '{"workload": {"uid": "Kubernetes//Pod/t/huge-%d", "name": "huge-%d", "namespace": "t", "addresses": ["10.251.%d.%d"], "services": {"t/huge.t.svc.cluster.local": {}}}},\n' $i $i $((i / 256)) $((i % 256))
done)
mesh "$many"'{"service": {"name": "big", "namespace": "t", "hostname": "big.t.svc.cluster.local", "ports": [{"servicePort": 9042}]}},
 {"service": {"name": "huge", "namespace": "t", "hostname": "huge.t.svc.cluster.local", "ports": [{"servicePort": 9042}]}}'
for _ in $(seq 1 50); do [ "$(q +tcp +short @10.96.0.10 huge.t.svc.cluster.local | wc -l)" -gt 4000 ] && break; sleep 0.2; done
check "a headless service of 200 pods over TCP: every pod, each once" \
	eval '[ "$(q +tcp +short @10.96.0.10 big.t.svc.cluster.local | sort -u | grep -c "^10\.250\.0\.")" = 200 ]'
udp_big=$(km_in_pod client dig +notcp +ignore +time=2 +tries=1 @10.96.0.10 big.t.svc.cluster.local)
check "... over UDP (dig's EDNS size, 1232 bytes): as many as fit (73), TC set" \
	eval 'grep -q "flags: qr aa.* tc" <<<"$udp_big" && [ "$(grep -c "IN.A.10\.250\.0\." <<<"$udp_big")" = 73 ]'
check "... glibc (getent ahostsv4, no EDNS: 512 bytes over UDP) retries over TCP and gets all 200" \
	eval '[ "$(pod_getent ahostsv4 big.t.svc.cluster.local | awk "{print \$1}" | sort -u | grep -c "^10\.250\.0\.")" = 200 ]'
h1=$(q +tcp +short @10.96.0.10 huge.t.svc.cluster.local)
h2=$(q +tcp +short @10.96.0.10 huge.t.svc.cluster.local)
check "5,000 pods, past one message: each TCP answer as full as 65,535 bytes allows (4,092 with dig's OPT record)" \
	eval '[ "$(wc -l <<<"$h1")" = 4092 ] && [ "$(wc -l <<<"$h2")" = 4092 ]'
check "... and the second starts where the first stopped: every pod in one of the two" \
	eval '[ "$(printf "%s\n%s\n" "$h1" "$h2" | sort -u | grep -c "^10\.251\.")" = 5000 ]'
# (glibc asks the search list's first form, huge.t.svc.cluster.local.t.svc.cluster.local, whose
# longer question leaves room for 4,092)
check "... glibc takes the whole 64 KiB answer (getent ahostsv4: 4,092 pods)" \
	eval '[ "$(pod_getent ahostsv4 huge.t.svc.cluster.local | awk "{print \$1}" | sort -u | grep -c "^10\.251\.")" = 4092 ]'
check "the counters: UDP answers truncated, TCP answers clipped at one message" \
	eval 'km_metrics_has "^kmesh_dns_truncated_total [1-9]" && [ "$(km_metrics | awk "\$1 == \"kmesh_dns_clipped_total\" {print \$2}")" -ge 3 ]'

km_check_summary dns
