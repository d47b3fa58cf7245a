#!/usr/bin/env bash
# completion_test.sh — `kmeshctl completion bash|zsh|fish` loaded into the real shells and asked
# what they offer, as a user pressing Tab would: commands, each command's words and flags, the
# values a flag takes, global flags after the command; and every flag a command's --help names
# is completed for it (the table and the commands cannot drift apart). Takes a few seconds.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tests/lib/check.sh"
cd "$ROOT"
CTL=$ROOT/build/bin/kmeshctl

# in_bash WORD...: what bash completes for the last WORD (often "") of `kmeshctl WORD...`
in_bash() {
	bash -c 'source <("$0" completion bash) && COMP_WORDS=(kmeshctl "$@") && COMP_CWORD=$# &&
		_kmeshctl && printf "%s\n" "${COMPREPLY[@]}"' "$CTL" "$@"
}
# has WORD...: every WORD is a line of stdin
has() {
	local got
	got=$(cat)
	for w in "$@"; do grep -qxF -- "$w" <<<"$got" || { echo "# missing $w in: $(tr '\n' ' ' <<<"$got")"; return 1; }; done
}

commands=$("$CTL" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
check "the overview lists the commands ($(tr '\n' ' ' <<<"$commands"))" \
	eval '[ $(wc -l <<<"$commands") -ge 12 ] && grep -qx completion <<<"$commands"'
# shellcheck disable=SC2086
check "bash: every command is offered first" eval 'in_bash "" | has $commands'
check "bash: a prefix narrows it (du -> dump, de -> demand, d -> both)" eval '[ "$(in_bash du)" = dump ] && [ "$(in_bash de)" = demand ] && [ "$(in_bash d | sort | tr "\n" " ")" = "demand dump " ]'
check "bash: dump's words" eval 'in_bash dump "" | has tables xds policies ipsec --table --max-rows'
check "bash: a flag's values (dump tables --table)" \
	eval 'in_bash dump tables --table "" | has manage frontend service endpoint backend'
check "bash: global flags, and their values (-o)" eval '[ "$(in_bash -o "" | sort | tr "\n" " ")" = "json table yaml " ]'
check "bash: global flags after the command too (version --o -> --output)" \
	eval '[ "$(in_bash version --o)" = --output ]'
check "bash: a global flag's value is skipped to find the command (-o json waypoint)" \
	eval 'in_bash -o json waypoint "" | has generate apply list status delete --for --namespace -n'
check "bash: waypoint --for values" eval 'in_bash waypoint apply --for "" | has service workload all none'
check "bash: completion's shells" eval 'in_bash completion "" | has bash zsh fish'

# every --flag a command's --help shows is completed after that command
drift=""
for c in $commands; do
	offered=$(in_bash "$c" "")
	for f in $("$CTL" "$c" --help 2>&1 | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
		[ "$f" = --help ] && continue
		grep -qxF -- "$f" <<<"$offered" || drift+=" $c $f"
	done
done
check "every flag in a command's --help is completed for it (${drift:-none missing})" [ -z "$drift" ]

check "zsh: the script loads through bashcompinit and completes the same (dump -> its words)" \
	eval 'zsh -fc "autoload -U compinit && compinit -u -D && source <($CTL completion zsh) &&
		setopt ksharrays && COMP_WORDS=(kmeshctl dump \"\") && COMP_CWORD=2 && _kmeshctl &&
		print -l \"\${COMPREPLY[@]}\"" | has tables xds policies ipsec'
# (the output read whole first: grep -q stopping early would fail the pipe under pipefail)
check "fish: commands, with their summaries" \
	eval 'grep -q "^dump	tables | xds" <<<"$(fish -c "$CTL completion fish | source; complete -C \"kmeshctl \"")"'
check "fish: dump tables --table offers the tables" \
	eval 'fish -c "$CTL completion fish | source; complete -C \"kmeshctl dump tables --table \"" | has service endpoint'
check "fish: -o offers the formats" \
	eval 'fish -c "$CTL completion fish | source; complete -C \"kmeshctl version -o \"" | cut -f1 | has table json yaml'
check "an unknown shell is refused (exit 2)" eval '"$CTL" completion tcsh 2>/dev/null; [ $? -eq 2 ]'
km_check_summary completion
