#!/bin/sh
# The GPU benchmark of issue 6 as one prepared script, for the lent H200 machine (the `device`
# tool; /work/.library/device/README.md). That machine has PyTorch, transformers,
# sentence-transformers, numba, scipy, networkx, click, pyyaml and tqdm, but no spaCy, no MiniLM
# package, no network, and not ../shared/data. So:
#
#   here:   sh scripts/gpu_bench.sh prepare
#           builds the ignored folder .gpu/: wheels for spaCy and its needs (Python 3.12,
#           manylinux; about 55 MB), MiniLM's weights in fp16 (about 45 MB: the CUDA encoder runs
#           in fp16 anyway, so the outputs are those of the installed model) and the v1 traces.
#   there:  two calls, because one call carries at most 64 MiB; the second must follow while
#           the machine is still warm (it keeps /tmp between calls):
#           run(command="sh scripts/gpu_bench.sh install", carry=[".gpu/wheels"])
#           run(command="sh scripts/gpu_bench.sh run", carry=[".gpu/model", ".gpu/data"], timeout_s=540)
#           then copy $OUT/bench-gpu.json to docs/ and describe it in docs/benchmarks.md.
#
# `run` profiles 1,000 real traces (full pipeline, naive per-trace baseline, cached rerun) with 8
# worker processes for the CPU stages; the flat-memory check is a CPU figure and is skipped.
set -eu
cmd=${1:-run}
case "$cmd" in
prepare)
    py=${PYTHON:-.venv/bin/python}
    mkdir -p .gpu/wheels .gpu/model .gpu/data/reasoningflow/v1
    pins=$($py -m pip list --format=freeze 2>/dev/null | grep -i -E '^(spacy|spacy-legacy|spacy-loggers|thinc|blis|cymem|preshed|murmurhash|srsly|wasabi|catalogue|confection|weasel|cloudpathlib|smart[-_]open|langcodes|language[-_]data|marisa-trie|pydantic|pydantic[-_]core|annotated-types|typing-inspection)==')
    # shellcheck disable=SC2086
    $py -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
        -d .gpu/wheels $pins
    $py - <<'EOF'
import shutil
from pathlib import Path

from safetensors.torch import load_file, save_file

from thinkprobe.encoder import default_encoder_path

src, dst = default_encoder_path(), Path(".gpu/model")
for p in src.rglob("*"):
    if p.is_file() and p.name != "model.safetensors":
        (dst / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, dst / p.relative_to(src))
save_file({k: v.half().contiguous() for k, v in load_file(str(src / "model.safetensors")).items()},
          str(dst / "model.safetensors"), metadata={"format": "pt"})
EOF
    data=${THINKPROBE_DATA:-../shared/data}
    cp "$data/reasoningflow/v1/v1_raw_data.jsonl.gz" .gpu/data/reasoningflow/v1/
    du -sh .gpu/wheels .gpu/model .gpu/data
    ;;
install)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/wheels/*.whl
    PYTHONPATH=/tmp/site python3 -c "import spacy; print('spaCy', spacy.__version__, 'installed in /tmp/site')"
    ;;
run)
    out=${OUT:-gpu_bench_out}
    mkdir -p "$out"
    export PYTHONPATH="/tmp/site:$PWD" THINKPROBE_DATA="$PWD/.gpu/data" HF_HUB_OFFLINE=1 \
        NUMBA_CACHE_DIR=/tmp/numba PYTHONUNBUFFERED=1
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
    python3 scripts/bench.py --device cuda -n "${N:-1000}" --scale 0 --workers "${WORKERS:-8}" \
        --encoder .gpu/model --json "$out/bench-gpu.json" 2>&1 | tee "$out/bench-gpu.log"
    ;;
*)
    echo "usage: sh scripts/gpu_bench.sh prepare|install|run" >&2
    exit 2
    ;;
esac
