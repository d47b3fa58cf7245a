#!/usr/bin/env bash
# fake_kubectl.sh — stands in for `kubectl exec` in kmeshctl's node tests: the fake API server
# does not speak exec's streaming protocols. It appends its arguments (one line, tab-separated)
# to $FAKE_KUBECTL_DIR/calls, checks the shape kmeshctl must use ([--kubeconfig F] exec -n NS POD
# -c CONTAINER -- kmeshctl ARGS...), and runs the built kmeshctl ($FAKE_KUBECTL_CTL) with ARGS as
# if inside POD: with the environment in $FAKE_KUBECTL_DIR/POD.env (that "node's" sockets). A
# pod without one answers as kubectl does for a missing pod (exit 1).
set -uo pipefail
dir=${FAKE_KUBECTL_DIR:?}
(IFS=$'\t'; echo "$*") >>"$dir/calls"
[ "${1:-}" = --kubeconfig ] && shift 2
if [ "${1:-}" != exec ] || [ "${2:-}" != -n ] || [ "${5:-}" != -c ] || [ "${7:-}" != -- ] ||
	[ "${8:-}" != kmeshctl ]; then
	echo "fake kubectl: unexpected arguments: $*" >&2
	exit 2
fi
ns=$3 pod=$4 container=$6
shift 8
if [ ! -f "$dir/$pod.env" ]; then
	echo "Error from server (NotFound): pods \"$pod\" not found" >&2
	exit 1
fi
if [ "$container" != map-writer ]; then
	echo "error: container $container is not valid for pod $pod" >&2
	exit 1
fi
echo "$ns" >"$dir/last-namespace"
# shellcheck disable=SC2046
exec env $(cat "$dir/$pod.env") "${FAKE_KUBECTL_CTL:?}" "$@"
