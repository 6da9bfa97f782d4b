#!/usr/bin/env bash
# The main job on the bundled example skills: validate the library, run the paired-arm eval
# of every skill (and of diff-review once more beside the rest of the library, and once with
# the real agent CLI in both arms, and offline in all five real agent CLIs side by side), and
# measure triggers across the library both ways (the catalog call, and the real agent CLI
# routing each prompt itself: Claude Code, or Codex for an OpenAI model), then run one round
# of tuning a skill's description (chosen on validation, reported on test), and end with the
# whole library as a matrix of the builtin agent and that CLI. With ANTHROPIC_API_KEY or
# OPENAI_API_KEY set it uses that provider; without, the scripted demo driver (offline).
set -euo pipefail
cd "$(dirname "$0")/.."
SB=.venv/bin/skillbench
if [ -n "${SKILLBENCH_MODEL:-}" ]; then
  model="$SKILLBENCH_MODEL"
  echo "demo: using SKILLBENCH_MODEL=$model"
elif [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  model="anthropic/claude-sonnet-4-6"
  echo "demo: using $model (ANTHROPIC_API_KEY is set)"
elif [ -n "${OPENAI_API_KEY:-}" ]; then
  model="openai/${OPENAI_MODEL:-gpt-4.1}"
  echo "demo: using $model (OPENAI_API_KEY is set${OPENAI_BASE_URL:+, server $OPENAI_BASE_URL})"
else
  model="scripted/demo"
  echo "demo: no ANTHROPIC_API_KEY or OPENAI_API_KEY set, so this run uses the scripted demo" \
       "driver (scripted/demo): a fixed script, not a model. It shows the pipeline; it does" \
       "not measure the skill."
fi
out="${DEMO_OUT:-.skillbench/demo/$(date -u +%Y%m%d-%H%M%S)}"
echo
echo "== skillbench check skills/"
"$SB" check skills/
for dir in skills/*/; do
  name=$(basename "$dir")
  echo
  echo "== skillbench eval skills/$name"
  status=0
  "$SB" eval "skills/$name" --model "$model" --out "$out/$name" --no-gen || status=$?
  # 1 is a FAIL verdict and 3 an INCONCLUSIVE one (too few decided units), results like
  # any other; 2 (or a signal's code) means the run itself failed
  case "$status" in 0 | 1 | 3) ;; *) exit "$status" ;; esac
done
# the library arm: diff-review again, every arm beside the library's other three skills (the
# baseline has them too): does it still help, and still fire, when they compete?
echo
echo "== skillbench eval skills/diff-review --with-library skills/"
status=0
"$SB" eval skills/diff-review --with-library skills/ --model "$model" \
  --out "$out/diff-review-library" --no-gen --execution-only || status=$?
case "$status" in 0 | 1 | 3) ;; *) exit "$status" ;; esac
case "$model" in openai/*) agent=codex ;; *) agent=claude-code ;; esac
# the skill the way users consume it: the real agent CLI in both arms, on one case to keep
# the demo short (offline, the scripted driver plays the CLI's own tools through a fake server)
echo
echo "== skillbench eval skills/diff-review --agent $agent --case small-change"
status=0
"$SB" eval skills/diff-review --agent "$agent" --case small-change --model "$model" \
  --out "$out/diff-review-$agent" --no-gen --execution-only || status=$?
case "$status" in 0 | 1 | 3) ;; *) exit "$status" ;; esac
# offline, the same case in all five real agent CLIs side by side: one set, a cell per agent,
# the scripted driver playing each CLI's own tools (a real model runs in one CLI or another)
if [ "$model" = scripted/demo ]; then
  agents=claude-code,codex,opencode,gemini-cli,copilot
  echo
  echo "== skillbench eval skills/diff-review --agent $agents --case small-change"
  status=0
  "$SB" eval skills/diff-review --agent "$agents" --case small-change --model "$model" \
    --out "$out/agents" --no-gen --execution-only || status=$?
  case "$status" in 0 | 1 | 3) ;; *) exit "$status" ;; esac
fi
echo
echo "== skillbench triggers skills/ --method both --agent $agent"
"$SB" triggers skills/ --model "$model" --method both --agent "$agent"
echo
echo "== skillbench tune skills/skill-eval-author --method catalog --rounds 1 --runs 1"
"$SB" tune skills/skill-eval-author --model "$model" --method catalog --rounds 1 --runs 1 \
  --out "$out/tune"
# the library as a matrix: every skill in the builtin agent and in the real agent CLI, each
# cell a paired eval of its own, all cells in one plan, one --parallel pool and one ledger
echo
echo "== skillbench eval skills/ --agent builtin,$agent"
status=0
"$SB" eval skills/ --agent "builtin,$agent" --model "$model" --out "$out/matrix" --no-gen \
  --execution-only || status=$?
case "$status" in 0 | 1 | 3) ;; *) exit "$status" ;; esac
echo
echo "demo: done; each eval's transcripts, journal, summary, receipt and report.html are in"
echo "$out/<skill>, and each matrix cell's in $out/matrix/cells/<cell>. Read one in a browser"
echo "(skillbench view $out/diff-review serves it):"
echo "$out/diff-review/report.html"
