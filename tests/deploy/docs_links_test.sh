#!/usr/bin/env bash
# docs_links_test.sh — every relative link in README.md and docs/*.md names a file that exists
# (a renamed or removed page breaks no reader's path), and every page in docs/ is linked from
# somewhere, so none is unreachable. Takes a second.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tests/lib/check.sh"
cd "$ROOT"

broken=$(/usr/bin/python3 - <<'PY'
import os, re, glob
bad = []
for page in ["README.md"] + sorted(glob.glob("docs/*.md")):
    text = open(page, encoding="utf-8").read()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(page), target.split("#")[0]))
        if not os.path.exists(path):
            bad.append(f"{page} -> {target}")
print(" ".join(bad))
PY
)
check "every relative link in README.md and docs/ resolves (${broken:-all do})" [ -z "$broken" ]
orphans=$(/usr/bin/python3 - <<'PY'
import re, glob, os
linked = set()
for page in ["README.md"] + glob.glob("docs/*.md"):
    for target in re.findall(r"\]\(([^)\s#]+)", open(page, encoding="utf-8").read()):
        linked.add(os.path.normpath(os.path.join(os.path.dirname(page), target)))
print(" ".join(p for p in sorted(glob.glob("docs/*.md")) if p not in linked))
PY
)
check "every page in docs/ is linked from README.md or another page (${orphans:-none alone})" [ -z "$orphans" ]
km_check_summary docs-links
