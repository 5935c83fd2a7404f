"""Train ThinkProbe's linker (pair classifier) and type head from ReasoningFlow-format graphs.

Data: the silver bundle of Gemini-3.1-pro graphs (../shared/data/reasoningflow/v1/
v1_llm_gemini-3.1-pro-preview.jsonl.gz). Each trace is segmented and encoded by our own pipeline
(`thinkprobe.graph.build_graphs`, no linking), the silver nodes are projected onto our units by
character overlap, silver labels are mapped to ours (spec section 7, `thinkprobe.evalgold`), and
every candidate pair (window + similarity top-k + cue look-back) becomes a training example:
its mapped edge class, or no-edge. A held-out part of the silver traces picks the epoch count and
the decoding thresholds; the human dev set (v0_human_D) is never read here.

    python scripts/train_linker.py                       # -> models/linker-minilm-mlp/
    python scripts/train_linker.py --docs 400 --cache /tmp/tp-emb.pkl
    python scripts/train_linker.py --cross-encoder --base DIR --out models/xenc   # GPU recommended

Seeded and deterministic on CPU (one torch thread while training).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from thinkprobe.training.linker import main  # noqa: E402  (the code lives in the package; this is its command line)

if __name__ == "__main__":
    main()
