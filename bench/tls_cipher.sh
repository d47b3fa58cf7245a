#!/usr/bin/env bash
# tls_cipher.sh — decryption throughput of TLS 1.3's ciphers with wolfSSL and OpenSSL (see
# bench/tls_cipher_bench.c). Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/.."
build/bench/tls_cipher_bench "${MIB:-256}"
