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
#           then packs it into three parcels .gpu/c1, .gpu/c2, .gpu/c3 (the checkout itself is
#           about 23 MB, and one call carries at most 64 MiB in all): the spaCy wheel, the traces
#           and the first piece of the model's weights; the other wheels and the second piece; the
#           rest of the model.
#   there:  three calls, each following the last while the machine is still warm (it keeps /tmp
#           between calls: 30 s):
#           run(command="sh scripts/gpu_bench.sh install .gpu/c1", carry=[".gpu/c1"])
#           run(command="sh scripts/gpu_bench.sh install .gpu/c2", carry=[".gpu/c2"])
#           run(command="sh scripts/gpu_bench.sh run .gpu/c3", carry=[".gpu/c3"], timeout_s=590)
#   here:   the CPU fp32 reference of the same 50 traces and the comparison:
#           python -m thinkprobe.cli profile OUT/agree.jsonl -o runs/agree-cpu --device cpu --no-summary
#           tar xzf OUT/agree-cuda.tgz -C runs/agree-cuda-x && python scripts/device_agreement.py runs/agree-cpu runs/agree-cuda-x/run
#           then copy OUT/bench-gpu.json to docs/ and describe both in docs/benchmarks.md.
#
# `run` first profiles 50 real traces on the device (the agreement run, its outputs as a tarball),
# then benchmarks 1,000 (full pipeline, naive per-trace baseline on 100, cached rerun) with 8 worker
# processes for the CPU stages; the flat-memory check is a CPU figure and is skipped. DEVICE=cpu
# N=5 AGREE_N=3 rehearses it on a CPU machine.
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
    # the parcels: hard links, no copies; the weights cut in three pieces (cat joins them there)
    rm -rf .gpu/c1 .gpu/c2 .gpu/c3 && mkdir -p .gpu/c1 .gpu/c2 .gpu/c3
    ln .gpu/wheels/spacy-*.whl .gpu/c1/
    for w in .gpu/wheels/*.whl; do case "$w" in */spacy-[0-9]*) ;; *) ln "$w" .gpu/c2/ ;; esac; done
    cp -r .gpu/data .gpu/c1/data
    (cd .gpu/model && tar cf ../c3/model-files.tar --exclude model.safetensors .)
    w=.gpu/model/model.safetensors
    head -c 3000000 $w > .gpu/c1/weights.1
    tail -c +3000001 $w | head -c 18000000 > .gpu/c2/weights.2
    tail -c +21000001 $w > .gpu/c3/weights.3
    du -sh .gpu/c1 .gpu/c2 .gpu/c3
    ;;
install)
    # install the parcel's wheels into /tmp/site, keep its other files in /tmp/gpu
    parcel=${2:?usage: gpu_bench.sh install PARCEL}
    mkdir -p /tmp/gpu
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "$parcel"/*.whl
    (cd "$parcel" && tar cf - --exclude='*.whl' .) | tar xf - -C /tmp/gpu
    ls -la /tmp/gpu
    ;;
run)
    parcel=${2:?usage: gpu_bench.sh run PARCEL}
    cp -r "$parcel"/. /tmp/gpu/
    mkdir -p /tmp/gpu/model
    tar xf /tmp/gpu/model-files.tar -C /tmp/gpu/model
    cat /tmp/gpu/weights.1 /tmp/gpu/weights.2 /tmp/gpu/weights.3 > /tmp/gpu/model/model.safetensors
    sha256sum /tmp/gpu/model/model.safetensors
    out=${OUT:-gpu_bench_out}
    dev=${DEVICE:-cuda}
    mkdir -p "$out"
    export PYTHONPATH="/tmp/site:$PWD" THINKPROBE_DATA="/tmp/gpu/data" HF_HUB_OFFLINE=1 \
        NUMBA_CACHE_DIR=/tmp/numba PYTHONUNBUFFERED=1
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1 || true
    python3 -c "import spacy, torch, transformers; print('spaCy', spacy.__version__); print('torch', torch.__version__, 'transformers', transformers.__version__)" \
        >> "$out/gpu.txt"
    cat "$out/gpu.txt"
    # CPU/CUDA agreement: 50 of the traces profiled here; compared on the CPU machine against a CPU
    # fp32 run of the same file with scripts/device_agreement.py
    python3 -c "from thinkprobe.shared_data import real_corpus; print('\n'.join(real_corpus(${AGREE_N:-50})[0]))" \
        > "$out/agree.jsonl"
    rm -rf /tmp/agree && mkdir -p /tmp/agree
    /usr/bin/time -v python3 -m thinkprobe.cli profile "$out/agree.jsonl" -o /tmp/agree/run --device "$dev" \
        --encoder /tmp/gpu/model --no-summary > "$out/agree.log" 2>&1 || { tail -40 "$out/agree.log"; exit 1; }
    tail -25 "$out/agree.log"
    tar czf "$out/agree-$dev.tgz" -C /tmp/agree run/graphs.jsonl run/indicators.csv run/run.json run/errors.jsonl
    # the naive baseline (one trace per chunk, one process) on NAIVE_N traces: on all 1,000 it did not
    # end within the call's time; each figure is printed as it is measured (bench-gpu.log)
    timeout "${BENCH_S:-450}" python3 scripts/bench.py --device "$dev" -n "${N:-1000}" --naive-n "${NAIVE_N:-100}" \
        --scale 0 --workers "${WORKERS:-8}" --encoder /tmp/gpu/model --json "$out/bench-gpu.json" 2>&1 | tee "$out/bench-gpu.log"
    ;;
*)
    echo "usage: sh scripts/gpu_bench.sh prepare | install PARCEL | run PARCEL" >&2
    exit 2
    ;;
esac
