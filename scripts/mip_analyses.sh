#!/usr/bin/env bash
# CoTJudger's analyses on the MiP-Overthinking MATH responses (normal condition): 15 models on the
# same 52 graded questions, one `thinkprobe profile` run. docs/redundancy.md shows its figures.
#   bash scripts/mip_analyses.sh [OUT]        (default OUT: mip_math_run; about 25 min on 2 cores)
# The data: $THINKPROBE_DATA or ../shared/data (see that folder's README). Models whose answers sit
# in a field named after the model ("gpt-4o (question)") get it as a per-input override; the model
# is the folder name.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${THINKPROBE_DATA:-../shared/data}/mip_overthinking/response/math/normal"
out="${1:-mip_math_run}"
inputs=()
for m in DSQ Gemma227 Limo QwQ Qwen32 phi3 s1.1; do
  inputs+=("$data/$m/response.json.gz")
done
for pair in "deepseekR1:deepseek-reasoner" "gemini1_5:gemini-1.5-flash" "gemini2:gemini-2.0-flash" \
            "gpt3_5:gpt-3.5-turbo" "gpt4o:gpt-4o" "o1:o1" "o1mini_medium:o1-mini" "o3mini_medium:o3-mini"; do
  inputs+=("$data/${pair%%:*}/response.json.gz::reasoning-field=${pair#*:} (question)")
done
exec "${THINKPROBE:-.venv/bin/thinkprobe}" profile "${inputs[@]}" --path-pattern '(?P<model>[^/]+)/response\.json' \
  --domain math -o "$out" --overwrite
