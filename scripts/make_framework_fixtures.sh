#!/usr/bin/env bash
# Rewrites tests/data/frameworks/ with the evaluation frameworks' own libraries (not needed by
# `make test`, which reads the committed files). Needs the network's package registry once:
#   bash scripts/make_framework_fixtures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.cache/fixtures-venv
python3 -m venv "$venv"
"$venv/bin/pip" install -q inspect_ai datasets torch transformers scikit-learn sacrebleu nltk pytablewriter aenum \
  gitpython "latex2sympy2_extended==1.0.6"
"$venv/bin/pip" install -q --no-deps lighteval==0.13.0
out=tests/data/frameworks
"$venv/bin/python" scripts/fixtures/inspect_gen.py "$out"
rm -rf "$out/details"
"$venv/bin/python" scripts/fixtures/lighteval_gen.py "$out"
