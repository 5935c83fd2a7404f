#!/usr/bin/env python3
"""Profile a multi-model sample of real traces and write the whole run (graphs, indicators,
profile, stats, redundancy, report) under OUT/run; extra arguments go to `thinkprobe profile`.

Designs (`--design`):
  balanced  (default) a balanced design on the same questions: the three reasoning models of
            ReasoningFlow v1 (DeepSeek-R1, QwQ-32B, gpt-oss-120b), each on every AIME 2024 (30) and
            ArgKP (24) question and on the same seeded sample of GPQA-diamond questions (`--gpqa`,
            default 48): 3 x 102 = 306 traces, every question answered by all three models.
  tts       tts_knowledge: four raw-CoT reasoning models at natural length (r1-distill-qwen-14b exd0,
            qwen3-14b exd0, gpt-oss-20b low, grok-3-mini low) on the same seeded `--questions` SimpleQA
            and FRAMES questions each (default 40: 4 x 2 x 40 = 320 traces), with the graders'
            correctness labels.
  sample    N ReasoningFlow v1 traces drawn with a fixed seed over all five generators (the sample
            `thinkprobe bench -n N` uses; not balanced).

    python scripts/real_multimodel.py --design balanced -o runs/v1_balanced --cache-dir runs/cache
"""
import argparse
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

from thinkprobe.shared_data import data_dir, real_corpus
from thinkprobe.indicators import DIMENSIONS

RF_REASONING = ("DeepSeek-R1", "QwQ-32B", "gpt-oss-120b")
TTS_MODELS = {  # model name -> output file (natural-length level)
    "R1-Distill-Qwen-14B": "r1-distill-qwen-14b/DeepSeek-R1-Distill-Qwen-14B_{bench}_exd0.jsonl.gz",
    "Qwen3-14B": "qwen3-14b/Qwen3-14B_{bench}_exd0.jsonl.gz",
    "gpt-oss-20b": "gpt-oss-20b/gpt-oss-20b_{bench}_low_effort.jsonl.gz",
    "grok-3-mini": "grok-3-mini/grok-3-mini_{bench}_low_effort.jsonl.gz",
}


def balanced_rf(root: Path, gpqa: int, seed: int) -> tuple[list[str], str]:
    path = root / "reasoningflow" / "v1" / "v1_raw_data.jsonl.gz"
    by_key = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            meta = rec["metadata"]
            if meta["generator"] in RF_REASONING:
                by_key[(meta["domain"], meta["question_id"], meta["generator"])] = line.rstrip("\n")
    questions: dict[str, set[str]] = {}
    for domain, qid, _ in by_key:
        questions.setdefault(domain, set()).add(qid)
    chosen = []
    for domain in sorted(questions):
        # only questions every model answered, in a fixed order
        ids = sorted(q for q in questions[domain] if all((domain, q, m) in by_key for m in RF_REASONING))
        if domain == "gpqa-diamond":
            ids = sorted(random.Random(seed).sample(ids, min(gpqa, len(ids))))
        chosen += [(domain, q) for q in ids]
    lines = [by_key[(d, q, m)] for d, q in chosen for m in RF_REASONING]
    counts = {d: sum(1 for dd, _ in chosen if dd == d) for d in sorted(questions)}
    desc = (f"{len(lines)} traces: {', '.join(RF_REASONING)} on the same questions "
            f"({', '.join(f'{d} {n}' for d, n in counts.items())}; GPQA sampled with seed {seed}) "
            f"from {path.relative_to(root.parent)}")
    return lines, desc


def balanced_tts(root: Path, n_questions: int, seed: int) -> tuple[list[str], str]:
    base = root / "tts_knowledge" / "outputs"
    lines = []
    for bench in ("simpleqa", "frames"):
        per_model = {}
        for model, pattern in TTS_MODELS.items():
            with gzip.open(base / pattern.format(bench=bench), "rt", encoding="utf-8") as f:
                recs = [json.loads(x) for x in f if x.strip()]
            per_model[model] = {str(r["id"]): r for r in recs if (r.get("thought") or "").strip()}
        common = sorted(set.intersection(*(set(v) for v in per_model.values())), key=lambda s: (len(s), s))
        ids = sorted(random.Random(seed).sample(common, min(n_questions, len(common))), key=lambda s: (len(s), s))
        for qid in ids:
            for model in TTS_MODELS:
                r = dict(per_model[model][qid])
                r.update(id=f"{bench}_{qid}_{model}", model=model, domain=bench, question_id=f"{bench}-{qid}")
                lines.append(json.dumps(r, ensure_ascii=False))
    desc = (f"{len(lines)} traces: {', '.join(TTS_MODELS)} on the same {n_questions} SimpleQA and "
            f"{n_questions} FRAMES questions (seed {seed}) from tts_knowledge/outputs")
    return lines, desc


def _f(x, digits=3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def findings_tables(run_dir: Path) -> str:
    """The effect-size and reliability tables of docs/findings.md, in Markdown, from stats.json."""
    stats = json.loads((run_dir / "stats.json").read_text(encoding="utf-8"))
    out = ["| variable | ε² model | ε² domain | raw ratio | chance ε² model / domain | corrected model | "
           "corrected domain | corrected ratio | length R² | length-controlled corrected model | "
           "length-controlled corrected domain | length-controlled ratio | split-half reliability (raw / length-controlled) |",
           "|" + "---|" * 13]
    for e in stats["variables"]:
        lc = e["length_controlled"]
        ratio = e["ratio_corrected"]
        lratio = e["ratio_length_corrected"]

        def r(x):
            return "–" if x["value"] is None else {"domain": "≥", "model": "≤", None: ""}[x["floored"]] + _f(x["value"], 1)

        name = e["variable"] if e["kind"] == "indicator" else f"**{e['variable']}**"
        sig = {by: " *" if e[by].get("significant") else "" for by in ("model", "domain")}
        lsig = {by: " *" if lc[by].get("significant") else "" for by in ("model", "domain")}
        rel = e["reliability"]
        out.append(f"| {name} | {_f(e['model']['eps2'])}{sig['model']} | {_f(e['domain']['eps2'])}{sig['domain']} | "
                   f"{_f(e['ratio'], 1)} | {_f(e['model'].get('eps2_expected'))} / {_f(e['domain'].get('eps2_expected'))} | "
                   f"{_f(e['model'].get('eps2_corrected'))} | {_f(e['domain'].get('eps2_corrected'))} | {r(ratio)} | "
                   f"{_f(lc['fit']['r2'], 2)} | {_f(lc['model'].get('eps2_corrected'))}{lsig['model']} | "
                   f"{_f(lc['domain'].get('eps2_corrected'))}{lsig['domain']} | {r(lratio)} | "
                   f"{_f(rel['split_half']['spearman_brown'], 2)} / "
                   f"{_f(rel['split_half_length_controlled']['spearman_brown'], 2)} |")
    o = stats["outcome"]
    if o["graded"]:
        cv = o["cross_validated"]
        out += ["", f"Outcome ({o['graded']} graded, {o['wrong']} wrong, labels from {o['labels_from']}): "
                    f"cross-validated AUROC model + log tokens {_f(cv.get('auroc_model_length'))}, "
                    f"+ indicators {_f(cv.get('auroc_model_length_indicators'))}.", "",
                "| variable | AUROC wrong, pooled | AUROC wrong, within model |", "|---|---|---|"]
        out += [f"| {e['variable']} | {_f(e['outcome']['auroc_wrong'], 2)} | "
                f"{_f(e['outcome']['auroc_wrong_within_model'], 2)} |" for e in stats["variables"] if e["outcome"]]
    profiles = [mp for mp in stats["model_profiles"]]
    out += ["", "| model | n | " + " | ".join(DIMENSIONS) + " |", "|" + "---|" * (2 + len(DIMENSIONS))]
    out += [f"| {mp['model']} | {mp['n']} | " + " | ".join(
        f"{mp['dimensions'][d]['mean']:+.2f} [{mp['dimensions'][d]['ci_low']:+.2f}, {mp['dimensions'][d]['ci_high']:+.2f}]"
        for d in DIMENSIONS) + " |" for mp in profiles]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--design", choices=("balanced", "tts", "sample"), default="balanced")
    ap.add_argument("-n", type=int, default=100, help="traces in the sample (design sample)")
    ap.add_argument("--gpqa", type=int, default=48, help="GPQA-diamond questions (design balanced)")
    ap.add_argument("--questions", type=int, default=40, help="questions per benchmark (design tts)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--out", default="runs/v1_balanced")
    ap.add_argument("--tables-only", action="store_true", help="print the findings tables of an existing OUT/run")
    args, extra = ap.parse_known_args()
    if args.tables_only:
        print(findings_tables(Path(args.out) / "run"))
        return 0
    root = data_dir()
    if root is None:
        sys.exit("../shared/data not found: set THINKPROBE_DATA to the folder holding reasoningflow/")
    if args.design == "balanced":
        lines, corpus = balanced_rf(root, args.gpqa, args.seed)
    elif args.design == "tts":
        lines, corpus = balanced_tts(root, args.questions, args.seed)
    else:
        lines, corpus = real_corpus(args.n, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sample = out / "sample.jsonl"
    sample.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "thinkprobe.cli", "profile", str(sample), "-o", str(out / "run"), *extra]
    print(corpus, "\n" + " ".join(cmd), flush=True)
    status = subprocess.call(cmd)
    if status == 0:
        print(findings_tables(out / "run"))
    return status


if __name__ == "__main__":
    sys.exit(main())
