#!/usr/bin/env bash
# push_cost_test.sh — a ceiling on what a full push costs the xDS agent, time as a ratio to a
# baseline measured in the same run, memory per resource, so a change cannot silently bring back what issue 26 found (the 100k
# push's agent going from 63 to 118 MB when authorization and telemetry copied what the model
# holds): bench/xds_push.sh once at 30,000 workloads and 3,000 services against the fake istiod,
#   - time: push sent -> every row applied, over decoding the same bytes and building the model
#     and its table operations (build/bench/decode_bench, same run);
#   - memory: what the agent grows by (peak RSS less its RSS once connected, before the push),
#     per resource pushed;
#   - the model's own heap per resource (deterministic: the same bytes, the same allocator);
#   - with the agent's queue bound below the push's size, so the one large response is over it.
# Needs root.
cd "$(dirname "$0")/../.."
source tests/lib/check.sh
if [[ "${KM_BIN:-}" == */san-bin ]]; then
	# the sanitizers multiply memory and time: the ceilings are for the release build, which
	# make integration checks
	echo "push_cost: skipped with the sanitized daemons (checked by make integration)"
	exit 0
fi
# --xds-max-queued below the push's 6 MB: a response over the queue bound, alone, must still be
# applied in slices while the map writer works (drained at once, its ops piled up unsent: 1.82x
# here, and at 1M workloads ~200 MB more with the map writer idle until the end)
out=$(AGENT_FLAGS="--xds-max-queued 1048576" WORKLOADS=30000 SERVICES=3000 REPS=1 FLAPS=100 \
	bash bench/xds_push.sh 2>&1)
rc=$?
cost=$(sed -n 's/^<!-- cost: \(.*\) -->$/\1/p' <<<"$out")
check "bench/xds_push.sh ran at 30,000 workloads (rc $rc)" eval '[ $rc -eq 0 ] && [ -n "$cost" ]'
[ $KM_FAIL -eq 0 ] || { echo "$out" | tail -20; km_check_summary push_cost; exit 1; }
read -r _ e2e _ model_ms _ peak _ idle _ model_bytes _ resources _ full_bytes <<<"$cost"
echo "$out" | grep -E '^\| (push sent|xDS agent)'
# Measured on the 2-core test machine: push -> applied 3.0-4.4x decode plus model; the agent
# grows by 295 bytes per resource at 30k (9 MB: the model, authorization's identities and the
# message being applied; 349 at a model of 344, 400-432 at 395, 515-570 at 488, 610-665 while
# authorization and telemetry kept address maps and records of their own); the model holds 298
# bytes per resource, its one address index and authorization's record of each workload (in
# the workload's entry) included (344 before the workload and service entries, the workload's
# struct and memberships and the service's resource shrank again, 2026-11-28's third session;
# 488 before packed sizes were counted exactly, the service entry
# shrank to a third, the id, name and address tables were sized by half steps, the workload
# entry lost 16 bytes, the workload's uid became a shared prefix and its hostname went out of
# line with its waypoint; 431 before the index and the record
# moved in; 582 before the workload's repeated strings were interned, 547 before its shared
# fields became two profiles and its waypoint went out of line, 456 before istiod's version was
# kept as a number); with authorization attached the same 488, so authorization keeps 0 bytes
# per resource beyond the model (deterministic, decode_bench: the same bytes, the same
# allocator; 132 while it kept its own address map and records: 563 against 431).
# With 300 more bytes kept per workload outside the model (a copy of its uid and addresses, as
# authorization and telemetry once added) the agent grew by ~9 MB more here, ~950 bytes per
# resource. The agent's growth was a ratio to the model's heap (1.23-1.29x, ceiling 1.50x)
# until the model shrank under it while the rest stayed (1.33-1.45x: the ratio no longer
# measured what it was for); bytes per resource does, against the same regression. The
# ceilings leave room for a noisy machine, not for that, nor for half of it, nor for a push
# that waits for the whole message twice; the heap ceilings are close, being counted, not
# sampled.
TIME_CEILING=800    # x100: push -> applied over decode plus model
GROWTH_CEILING=380  # bytes the agent grows by per resource
MODEL_CEILING=315   # bytes of model heap per resource, its address index included
AUTHZ_CEILING=16    # bytes per resource authorization keeps beyond the model
x100() { printf '%d.%02d' $(($1 / 100)) $(($1 % 100)); }
time_x100=$(awk -v a="$e2e" -v b="$model_ms" 'BEGIN {printf "%d", a * 100000 / b}')
growth_x100=$(awk -v p="$peak" -v i="$idle" -v m="$model_bytes" 'BEGIN {printf "%d", (p - i) * 1048576 * 100 / m}')
growth_per_resource=$(awk -v p="$peak" -v i="$idle" -v n="$resources" 'BEGIN {printf "%d", (p - i) * 1048576 / n}')
per_resource=$((model_bytes / resources))
full_per_resource=$((full_bytes / resources))
echo "push -> applied $e2e s = $(x100 "$time_x100")x decode plus model ($model_ms ms);" \
	"agent $idle -> $peak MB = $growth_per_resource bytes per resource, $(x100 "$growth_x100")x the model's heap;" \
	"model $per_resource bytes per resource, $full_per_resource with authorization attached"
check "push -> applied at most $(x100 $TIME_CEILING)x decoding and building the model" [ "$time_x100" -le "$TIME_CEILING" ]
check "the agent grows by at most $GROWTH_CEILING bytes per resource" \
	[ "$growth_per_resource" -le "$GROWTH_CEILING" ]
check "the model holds at most $MODEL_CEILING bytes per resource" [ "$per_resource" -le "$MODEL_CEILING" ]
check "authorization keeps at most $AUTHZ_CEILING bytes per resource beyond the model" \
	[ $((full_per_resource - per_resource)) -le "$AUTHZ_CEILING" ]
km_check_summary push_cost
