#!/usr/bin/env bash
# dist.sh — `make dist`: a self-contained release tarball of the built binaries, for a machine
# that has none of their libraries (any glibc-based Linux of the same architecture):
#   kmesh-VERSION-linux-ARCH/
#     bin/        what to run: a small sh wrapper per program, which starts the real binary with
#                 the tarball's own dynamic loader and libraries; kmesh-cni (static) as is;
#                 kubectl-kmesh, kmeshctl as a kubectl plugin (`kubectl kmesh ...` once bin/ is
#                 on PATH)
#     libexec/    the real binaries, as built
#     lib/        every shared object they load, the loader among them (from ldd)
#     charts/kmesh/, systemd/ (the units), LICENSE, README.md
# into build/dist/ (or DIST_DIR), as .tar.gz beside the directory. Only the build machine's
# architecture: arm64 needs a cross toolchain and arm64 -dev libraries, which the build machine
# does not have (said at the end, not silently skipped). Needs a finished `make`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${DIST_DIR:-$root/build/dist}
version=$(build/bin/kmeshctl --version | awk '{print $2}' | tr -d ,)
arch=$(uname -m)
name=kmesh-$version-linux-$arch
dir=$out/$name
programs=(kmesh-map-writer kmesh-xds-agent kmesh-ipsec-agent kmesh-tunnel kmesh-cni-agent kmeshctl)
for p in "${programs[@]}" kmesh-cni; do
	[ -x "build/bin/$p" ] || { echo "dist.sh: build/bin/$p is missing: run make first" >&2; exit 1; }
done
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/libexec" "$dir/lib"
loader=$(readelf -l build/bin/kmeshctl | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
cp -L "$loader" "$dir/lib/"
loader_name=$(basename "$loader")
for p in "${programs[@]}"; do
	cp "build/bin/$p" "$dir/libexec/"
	# every library the program loads, from ldd ("name => path (addr)" lines)
	ldd "build/bin/$p" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
		[ -e "$dir/lib/$(basename "$lib")" ] || cp -L "$lib" "$dir/lib/"
	done
done
wrapper() { # wrapper NAME PROGRAM [ENV-ASSIGNMENT]: bin/NAME starts libexec/PROGRAM
	cat >"$dir/bin/$1" <<EOF
#!/bin/sh
# $1 from $name: libexec/$2 with this tarball's loader and libraries (mk/dist.sh)
d=\$(dirname "\$(readlink -f "\$0")")/..
${3:+export $3}
exec "\$d/lib/$loader_name" --library-path "\$d/lib" --argv0 "\$0" "\$d/libexec/$2" "\$@"
EOF
	chmod 0755 "$dir/bin/$1"
}
for p in "${programs[@]}"; do
	case $p in
	# the agent installs the plugin found beside it; started through the loader it would look
	# beside the loader
	kmesh-cni-agent) wrapper "$p" "$p" 'KMESH_CNI_PLUGIN_BINARY="$d/bin/kmesh-cni"' ;;
	*) wrapper "$p" "$p" ;;
	esac
done
wrapper kubectl-kmesh kmeshctl
cp build/bin/kmesh-cni "$dir/bin/" # static: runs as is, and is what the agent copies to nodes
mkdir -p "$dir/charts" "$dir/systemd"
cp -r charts/kmesh "$dir/charts/"
cp deploy/systemd/* "$dir/systemd/"
cp LICENSE README.md "$dir/"
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
echo "dist.sh: $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1); $(ls "$dir/lib" | wc -l) shared objects)" >&2
other=$([ "$arch" = x86_64 ] && echo aarch64 || echo x86_64)
if ! command -v "$other-linux-gnu-gcc" >/dev/null; then
	echo "dist.sh: no $other tarball: no $other-linux-gnu-gcc (and no $other -dev libraries) on this machine" >&2
fi
