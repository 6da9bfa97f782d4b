#!/usr/bin/env bash
# The formatter lays the code out. A `# fmt: skip` / `# fmt: off` is allowed only where a table's
# alignment carries meaning, and then the line above says why (`# aligned: ...`).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(git ls-files '*.py' | xargs awk '/# fmt: (skip|off)/ && prev !~ /# aligned:/ {print FILENAME":"FNR": "$0} {prev=$0}' || true)
if [ -n "$bad" ]; then
  echo "$bad"
  echo "formatter marker without a reason: put '# aligned: <why>' on the line above, or remove it" >&2
  exit 1
fi
