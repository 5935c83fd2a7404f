"""Agreement of ThinkProbe's final-answer verdict with the datasets' own correctness labels.

Draws labelled reasoning traces with gold answers from ../shared/data (MiP-Overthinking math:
GPT-4o judge `eval_result` 1 = correct / 2 = incorrect; tts-knowledge SimpleQA and FRAMES:
SimpleQA grader `grading` A = correct / B = incorrect; abstentions and "not attempted" are left
out), runs answer extraction + verification (thinkprobe.redundancy) on each
trace and reports how often our verdict equals the label: overall, per dataset and per model.

Two ways to build the graph records:
  rule-only (always): units by the project's rule-based segmenter, types by the cue lexicon, a
      chain of inference edges. No encoder; the verdict depends on answer extraction only.
  --profile: the full pipeline (encoder + linker) through `thinkprobe.engine.run_profile` on the
      sample written as JSONL, then thinkprobe.redundancy.write_redundancy on the run folder; gives
      the model-level redundancy table (CoTJudger's Table 1 columns) and the end-to-end agreement.

    python scripts/redundancy_agreement.py --out redundancy_eval            # rule-only, 200 records
    python scripts/redundancy_agreement.py --out redundancy_eval --profile  # + full pipeline table
    python scripts/redundancy_agreement.py --out redundancy_eval --profile --reuse-run  # redo the tables only
    python scripts/redundancy_agreement.py --matchers   # + math-verify against our normalisation (pip install math-verify)

The rules were written while reading MiP-Overthinking math records (all of them are eligible
here, so that part is not held out) and the first 40 labelled records of one SimpleQA and one
FRAMES file per tts-knowledge model; the tts-knowledge sample skips those (--tts-skip).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import re
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from thinkprobe.config import Config  # noqa: E402
from thinkprobe.nodetypes import cue_categories, provisional_type  # noqa: E402
from thinkprobe.records import Section, iter_graph_records  # noqa: E402
from thinkprobe.redundancy import (answers_match, format_model_table, redundancy_row,  # noqa: E402
                                   write_redundancy)
from thinkprobe.segment import unit_spans  # noqa: E402

MIP_MODELS = {"deepseekR1": "DeepSeek-R1", "DSQ": "R1-Distill-Qwen-32B", "QwQ": "QwQ-32B", "s1.1": "s1.1-32B"}
TTS_MODELS = ("r1-distill-qwen-7b", "r1-distill-qwen-14b", "r1-distill-llama-8b", "qwen3-8b", "qwen3-14b",
              "gpt-oss-20b", "grok-3-mini", "claude-sonnet-4", "gemini-2_5-flash", "gpt-5-mini")
# Thinking level per model: the natural one first (exd0 = no forced extension).
TTS_LEVELS = ("exd0", "low_effort", "budget1024", "exd2", "medium_effort", "budget2048", "high_effort")
_SPECIAL = re.compile(r"<\|[^|]{1,40}\|>|<｜[^｜]{1,40}｜>|</?think>")


def data_root(arg: str | None) -> Path:
    from thinkprobe.shared_data import data_dir

    root = Path(arg) if arg else data_dir()
    if root is None or not root.is_dir():
        sys.exit(f"data folder not found: {arg or '../shared/data'} (set THINKPROBE_DATA or pass --data)")
    return root


def _split_mip(model_dir: str, text: str) -> tuple[str, str]:
    if "</think>" in text:
        reasoning, answer = text.rsplit("</think>", 1)
        return reasoning.replace("<think>", ""), answer
    marks = list(re.finditer(r"\nanswer\n", text))  # s1.1: "think\n... answer\n..."
    if marks:
        return re.sub(r"^think\n", "", text[: marks[-1].start()]), text[marks[-1].end():]
    return text, ""


def mip_records(root: Path, n: int, rng: random.Random) -> list[dict]:
    """n records from MiP-Overthinking math (both conditions), n / 4 per thinking model."""
    base = root / "mip_overthinking" / "response" / "math"
    out = []
    per_model = n // len(MIP_MODELS)
    for model_dir, model in MIP_MODELS.items():
        pool = []
        for condition in ("normal", "MiP"):
            path = base / condition / model_dir / "response.json.gz"
            if not path.exists():
                continue
            with gzip.open(path, "rt", encoding="utf-8") as f:
                items = json.load(f)
            field = ("deepseek-reasoner (question)" if condition == "normal" else "deepseek-reasoner (insufficient_question)") \
                if model_dir == "deepseekR1" else "model_answer"
            for k, item in enumerate(items):
                if item.get("eval_result") in (1, 2) and item.get(field):
                    reasoning, answer = _split_mip(model_dir, item[field])
                    question = item.get("question") if condition == "normal" else item.get("insufficient_question")
                    pool.append({"trace_id": f"mip/math-{condition}/{model_dir}/{k}", "model": model,
                                 "domain": f"math-{condition}", "dataset": "mip_overthinking", "question": question,
                                 "gold": str(item["answer"]), "label": item["eval_result"] == 1,
                                 "reasoning": reasoning, "answer": answer})
        out += rng.sample(pool, min(per_model, len(pool)))
    return out


def tts_records(root: Path, n: int, rng: random.Random, skip: int) -> list[dict]:
    """n records from tts-knowledge, n / 10 per model, half SimpleQA and half FRAMES, graded A or B,
    with non-empty reasoning; the first `skip` graded records of each file are left out."""
    base = root / "tts_knowledge" / "outputs"
    out = []
    per_bench = max(1, n // (2 * len(TTS_MODELS)))
    for model in TTS_MODELS:
        for bench in ("simpleqa", "frames"):
            files = sorted((base / model).glob(f"*_{bench}_*.jsonl.gz")) if (base / model).is_dir() else []
            files = [f for level in TTS_LEVELS for f in files if f.name.endswith(f"_{level}.jsonl.gz")]
            if not files:
                continue
            path = files[0]
            pool, graded = [], 0
            with gzip.open(path, "rt", encoding="utf-8") as f:
                for line in f:
                    item = json.loads(line)
                    if item.get("grading") not in ("A", "B"):
                        continue
                    graded += 1
                    reasoning = item.get("thought") or item.get("thought_summary") or ""
                    if graded <= skip or not reasoning.strip() or not (item.get("response") or "").strip():
                        continue
                    pool.append({"trace_id": f"tts/{path.name.removesuffix('.jsonl.gz')}/{item['id']}", "model": model,
                                 "domain": bench, "dataset": "tts_knowledge", "question": item.get("problem"),
                                 "gold": str(item["answer"]), "label": item["grading"] == "A",
                                 "reasoning": _SPECIAL.sub("", reasoning), "answer": _SPECIAL.sub("", item["response"])})
            out += rng.sample(pool, min(per_bench, len(pool)))
    return out


def rule_only_graph(rec: dict, cfg: Config) -> dict:
    """A graph record without the encoder: rule-based units of both sections, lexicon types, and
    a chain of inference edges."""
    units = []
    for name in ("reasoning", "answer"):
        text = rec[name]
        if not text.strip():
            continue
        section = Section(name, name, text, 0, len(text))
        for start, end in unit_spans(text, section, cfg):
            unit_text = text[start:end]
            units.append({"id": len(units), "section": name, "start": start, "end": end, "text": unit_text,
                          "type": provisional_type(cue_categories(unit_text, cfg), cfg), "tokens": len(unit_text.split())})
    return {"trace_id": rec["trace_id"], "model": rec["model"], "domain": rec["domain"], "question": rec["question"],
            "gold_answer": rec["gold"], "correct": None, "units": units,
            "edges": [{"src": k, "dst": k + 1, "type": "inference", "polarity": None} for k in range(len(units) - 1)]}


def agreement_table(results: list[dict], key: str) -> list[dict]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        groups[r[key]].append(r)
    rows = []
    for name in sorted(groups):
        g = groups[name]
        rows.append({key: name, "n": len(g), "agree": sum(r["agree"] for r in g),
                     "agreement": sum(r["agree"] for r in g) / len(g),
                     "label_correct": sum(r["label"] for r in g), "ours_correct": sum(bool(r["ours"]) for r in g),
                     "false_pos": sum(bool(r["ours"]) and not r["label"] for r in g),
                     "false_neg": sum(r["label"] and not r["ours"] for r in g)})
    return rows


def print_table(rows: list[dict], key: str) -> None:
    print(f"| {key} | n | agreement | label correct | ours correct | ours correct, label not | label correct, ours not |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[key]} | {r['n']} | {r['agreement']:.1%} ({r['agree']}/{r['n']}) | {r['label_correct']} | "
              f"{r['ours_correct']} | {r['false_pos']} | {r['false_neg']} |")


def report(results: list[dict], title: str) -> dict:
    overall = agreement_table([{**r, "all": "all"} for r in results], "all")[0]
    print(f"\n## {title}: {overall['agreement']:.1%} agreement ({overall['agree']}/{overall['n']})\n")
    by_dataset = agreement_table(results, "dataset")
    by_model = agreement_table(results, "model")
    print_table(by_dataset, "dataset")
    print()
    print_table(by_model, "model")
    return {"overall": overall, "by_dataset": by_dataset, "by_model": by_model}


def math_verify_match(pred: str, gold: str) -> bool:
    """math-verify's verdict (Hugging Face's LaTeX / number equivalence through sympy): each side
    parsed as written and, when that finds nothing, inside $...$ (a bare LaTeX value)."""
    from math_verify import parse, verify

    def parsed(text: str):
        return parse(text) or parse(f"${text}$")

    try:
        return bool(verify(parsed(gold), parsed(pred)))
    except Exception:  # noqa: BLE001 - a value it cannot read is not a match
        return False


def compare_matchers(results: list[dict]) -> dict:
    """Agreement with the labels when the final answer is compared with the gold answer by our
    normalisation (answers_match), by math-verify, or by either. Extraction is ours throughout."""
    matchers = {"ours (answers_match)": answers_match, "math-verify": math_verify_match,
                "math-verify or ours": lambda p, g: math_verify_match(p, g) or answers_match(p, g)}
    out = {}
    for name, match in matchers.items():
        scored = [{**r, "ours": bool(r["final_answer"]) and match(r["final_answer"], r["gold"])} for r in results]
        for r in scored:
            r["agree"] = r["ours"] == r["label"]
        out[name] = report(scored, f"Rule-only graphs, final answer compared by {name}")
    return out


def write_sample(records: list[dict], path: Path) -> None:
    """The sample in a form `thinkprobe profile` reads without flags: reasoning inside <think> tags
    of `response`, the gold answer in `answer`, the dataset's label in `label` (not a grade field: a
    grade the records carry would win over the verdict measured here)."""
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps({"id": r["trace_id"], "model": r["model"], "domain": r["domain"], "question": r["question"],
                                "answer": r["gold"], "label": r["label"],
                                "response": f"<think>\n{r['reasoning'].strip()}\n</think>\n\n{r['answer'].strip()}"},
                               ensure_ascii=False) + "\n")


def profile_sample(sample: Path, run_dir: Path, labels: dict[str, dict], device: str, reuse: bool) -> tuple[list[dict], dict]:
    if not (reuse and (run_dir / "graphs.jsonl").exists()):
        from thinkprobe.engine import RunOptions, run_profile

        run_profile(RunOptions(inputs=[str(sample)], out_dir=str(run_dir), device=device, progress=False, cache=False))
    summary = write_redundancy(run_dir)
    results = []
    for g in iter_graph_records(run_dir):
        _, extra = redundancy_row(g)
        rec = labels[g["trace_id"]]
        results.append({"trace_id": g["trace_id"], "model": g["model"], "dataset": rec["dataset"],
                        "label": rec["label"], "ours": extra["final_correct"],
                        "agree": extra["final_correct"] == rec["label"]})
    return results, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="shared data folder (default: $THINKPROBE_DATA or ../shared/data)")
    ap.add_argument("--n-mip", type=int, default=100, help="MiP-Overthinking math records (per model: n / 4)")
    ap.add_argument("--n-tts", type=int, default=100, help="tts-knowledge records (per model and benchmark: n / 20)")
    ap.add_argument("--tts-skip", type=int, default=40, help="graded records at the start of each tts file to leave out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="folder for sample.jsonl, per-record verdicts and agreement.json")
    ap.add_argument("--profile", action="store_true", help="also run the full pipeline on the sample (needs --out)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--matchers", action="store_true",
                    help="also compare the final answers with math-verify instead of our normalisation")
    ap.add_argument("--reuse-run", action="store_true",
                    help="with --profile: keep OUT/run/graphs.jsonl from an earlier run, recompute only the redundancy files")
    args = ap.parse_args()

    root = data_root(args.data)
    rng = random.Random(args.seed)
    records = mip_records(root, args.n_mip, rng) + tts_records(root, args.n_tts, rng, args.tts_skip)
    if not records:
        sys.exit(f"no labelled records found under {root}")
    cfg = Config.load()

    results, rows = [], []
    for rec in records:
        row, extra = redundancy_row(rule_only_graph(rec, cfg))
        final = extra["final_answer"]
        results.append({"trace_id": rec["trace_id"], "model": rec["model"], "dataset": rec["dataset"],
                        "label": rec["label"], "ours": extra["final_correct"], "agree": extra["final_correct"] == rec["label"],
                        "gold": rec["gold"], "final_answer": final["value"] if final else "",
                        "final_kind": final["kind"] if final else ""})
        rows.append(row)
    print(f"{len(records)} labelled records from {root}")
    summary = {"records": len(records), "seed": args.seed, "rule_only": report(results, "Rule-only graphs")}
    if args.matchers:
        summary["matchers"] = compare_matchers(results)

    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        with open(args.out / "verdicts.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(results[0]))
            w.writeheader()
            w.writerows(results)
        write_sample(records, args.out / "sample.jsonl")
        if args.profile:
            labels = {r["trace_id"]: r for r in records}
            full, red = profile_sample(args.out / "sample.jsonl", args.out / "run", labels, args.device, args.reuse_run)
            summary["full_pipeline"] = report(full, "Full pipeline (thinkprobe profile)")
            print("\n## Model-level redundancy table (full pipeline)\n")
            print(format_model_table(red["models"]))
            summary["model_redundancy"] = red["models"]
        (args.out / "agreement.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {args.out}/verdicts.csv, sample.jsonl, agreement.json" + (", run/" if args.profile else ""))


if __name__ == "__main__":
    main()
