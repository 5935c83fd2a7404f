"""The parser model folder's card (README.md): what the model is, its data and splits, its
held-out silver scores, its adaptation to human annotations, how to retrain it, and the licence
caveat of its training data. Written by `train_parser.py train / ensemble` and by `cv --write`.
"""
from __future__ import annotations

import json
from pathlib import Path

from .parser_data import BF16_WORDS, FP32_WORDS

__all__ = ["epochs_used", "model_card"]


def epochs_used(t: dict) -> str:
    """Which epochs' weights a network has, from its training record."""
    if t.get("average_last"):
        return f"weights averaged over epochs {t['epochs'] - t['average_last'] + 1}-{t['epochs']} of {t['epochs']}"
    return f"best epoch {t['best_epoch']} of {t['epochs']}"


def model_card(meta: dict, out: Path) -> str:
    """The model card: what the model is, its data and splits, its held-out silver scores, how to
    retrain it, and the licence caveat of its training data. Dev-set scores: docs/accuracy.md."""
    from thinkprobe.reasoningflow import EDGE_LABEL_MAP, NODE_LABEL_MAP

    t, m, h = meta["training"], meta["model"], meta["training"]["heldout_silver"]
    size = sum(p.stat().st_size for p in out.glob("*.safetensors"))
    gens = ", ".join(f"{g} {n}" for g, n in t["generators"].items())
    edge_rows = "\n".join(f"| {label} | {kind}{' (' + pol + ')' if pol else ''} |" for label, (kind, pol) in EDGE_LABEL_MAP.items())
    node_rows = "\n".join(f"| {label} | {kind} |" for label, kind in NODE_LABEL_MAP.items())
    d = meta["decode"]
    ens = ""
    if meta.get("members"):
        ens = ("\n\n**An ensemble** of " + str(len(meta["members"])) + " such networks trained alike (" + "; ".join(
            f"{x['folder']}: {a['layers']}-layer BiLSTM {a['hidden']}, {epochs_used(x)}, held-out silver "
            f"edge F1 {x['heldout_silver']['edge_f1']:.3f} / far {x['heldout_silver']['far_edge_f1']:.3f}"
            for x, a in zip(t["members"], meta["members"])) + "); their probabilities are averaged and the thresholds "
            "were refitted for the average (`python scripts/train_parser.py ensemble A B --out DIR`). The description "
            "below is of the first member.")
    flags = " --lexical-pairs" if meta.get("lexical_pairs") else ""
    if meta["candidates"].get("number_lookback"):
        flags += f" --number-lookback {meta['candidates']['number_lookback']}"
    if t.get("listwise"):
        flags += f" --listwise {t['listwise']:g}"
    listwise = (f" + {t['listwise']:g} x parent ranking (for each unit with a silver parent among its candidates, minus the mean "
                "log-softmax of its parents' arc logits over its candidates: `listwise_loss`, `--listwise`)") if t.get("listwise") else ""
    rate = f" --type-rate-ratio {t['type_rate_ratio']:g}" if t.get("type_rate_ratio") else ""
    reader = meta.get("reader")
    reader_flags = f" --reader-epochs {reader['epochs']} --reader-lr {reader['lr']:g}" if reader else ""
    rerank = meta.get("rerank")
    per_trace = bool(rerank) and rerank.get("select") == "trace"
    cand_flags = f" --top-k 0 --rerank-pool {rerank['pool']} --learned-k {rerank['keep']}{' --rerank-trace' if per_trace else ''}" if rerank else ""
    own_rerank = [cand_flags + (f" --rerank-hidden {rerank['hidden']}" if rerank and rerank["hidden"] != 128 else "")] + \
        [cand_flags + " --rerank-from runs/A" if rerank else ""] * 8

    def own_flags(x, a):
        return "".join(f" --{name} {value:g}" for name, value, default in (
            ("layers", a["layers"], 1), ("hidden", a["hidden"], 96), ("epochs", x["epochs"], 10),
            ("average-last", x.get("average_last", 0), 0), ("seed", x.get("seed", 0), 0)) if value != default)

    adapt = meta.get("adaptation")
    human = ("The human-annotated v0 traces (v0_human_D, the dev set) were not used for training, epochs,\n"
             "thresholds or architecture.")
    if adapt:
        r, cvm, cvs = adapt["recipe"], adapt["mean"], adapt["sd"]
        human = (f"**Adapted to human annotations**: after silver training, every network was fine-tuned on the 20 dev "
                 f"traces of human annotator D ({adapt['gold']}) for {r['adapt_epochs']} epochs (AdamW, lr {r['adapt_lr']:g}, "
                 f"the same losses; decoding {'recalibrated' if r['calibrate'] else 'unchanged'}). The recipe was chosen by "
                 f"document-level 5-fold cross-validation with the folds of {adapt['folds']}, fixed before training: "
                 f"adapted on four folds, scored on the fifth, edge F1 {cvm['edge_f1']:.3f} (sd {cvs['edge_f1']:.3f}), "
                 f"far-edge F1 {cvm['far_edge_f1']:.3f} ({cvs['far_edge_f1']:.3f}), type macro-F1 {cvm['type_macro_f1']:.3f} "
                 f"({cvs['type_macro_f1']:.3f}), recall of links > 10 apart {cvm['recall_gt10']:.3f} ({cvs['recall_gt10']:.3f}); "
                 f"without adaptation {adapt['unadapted_mean']['edge_f1']:.3f} / {adapt['unadapted_mean']['far_edge_f1']:.3f} / "
                 f"{adapt['unadapted_mean']['type_macro_f1']:.3f} / {adapt['unadapted_mean']['recall_gt10']:.3f}. So the dev set "
                 "is no longer a test of this model: only those cross-validated numbers are (traces.txt marks those "
                 "twenty traces `adapted`, and eval-gold says so when it scores them).")
        retrain_adapt = (f"\n    python scripts/train_parser.py cv --model models/{meta['name']} --adapt-epochs {r['adapt_epochs']} "
                         f"--adapt-lr {r['adapt_lr']:g}{'' if r['calibrate'] else ' --no-calibrate'} --write")
    folders = [f"runs/{chr(65 + k)}" for k in range(len(meta.get("members") or ()))]
    fp32 = t.get("encoding") == FP32_WORDS
    prepare = "prepare" if fp32 else "prepare --bf16"
    if reader:
        prepare += f" && python scripts/train_parser.py lower --frozen {reader['frozen']}"
    retrain = (f"    python scripts/train_parser.py {prepare} && python scripts/train_parser.py train{flags}{reader_flags}{own_rerank[0]}{own_flags(t, m)}{rate} --out models/{meta['name']}"
               if not meta.get("members") else
               f"    python scripts/train_parser.py {prepare}\n" +
               # with a reader: one run fine-tunes it (with a 1-layer parser of its own), every member reuses it
               (f"    python scripts/train_parser.py train{flags}{reader_flags} --out runs/R\n" if reader else "") + "".join(
                   f"    python scripts/train_parser.py train{flags}{' --reader-from runs/R' if reader else ''}{r}"
                   f"{own_flags(x, a)} --out {f}\n"
                   for f, x, a, r in zip(folders, t["members"], meta["members"], own_rerank)) +
               f"    python scripts/train_parser.py ensemble {' '.join(folders)}{rate} --out models/{meta['name']}")
    if adapt:
        retrain += retrain_adapt
    reader_line = ""
    if reader:
        reader_line = (f"- reader: the encoder's top {reader['layers']} layers (above its {reader['frozen']} frozen ones), fine-tuned "
                       f"jointly with a parser for {reader['epochs']} epochs (AdamW, lr {reader['lr']:g}) on cached lower-layer token "
                       "states, then frozen (`thinkprobe/reader.py`, reader.safetensors, float16); in the pipeline they run "
                       "inside the encoder's forward pass on its lower layers' output (`Encoder.attach_reader`), and their "
                       "mean-pooled, normalised vector of each unit joins its embedding as the network's input;\n")
    c = meta["candidates"]
    lookbacks = (f"earlier planning units, earlier conclusion units for concluding or critiquing units, recent block starts"
                 f"{', the units that last wrote one of j' + chr(39) + 's numbers (number_lookback)' if c.get('number_lookback') else ''}")
    horizon = f" among the {c['horizon']} before j (the horizon: time linear in the length)" if c.get("horizon") else ""
    if per_trace:
        candidates_line = (
            f"Candidates per unit j: {json.dumps(c)}: the window of preceding units and, beyond it, the pairs of the trace a "
            f"learned reranker finds most probable as parents, as many as rules would propose beyond the window (each unit's "
            f"{rerank['keep']} most similar earlier units and its look-backs), chosen from each unit's pool: its {rerank['pool']} most "
            f"similar earlier units beyond the window{horizon} (found block by block, never an n x n matrix) and its look-backs "
            f"({lookbacks}). So a unit whose parent is likely far gets many, one that needs none few (rerank.safetensors, "
            f"`thinkprobe/link/rerank.py`: an MLP with two hidden layers of {rerank['hidden']} over the pair features, the distance "
            "bucket and both units' features, and a \"none of them\" score from the unit's features; trained with a softmax over "
            "each unit's pool and that option against its silver parents, every unit with a pool counted, the epoch of the lowest "
            "held-out loss kept; `best_in_trace`); its log-probability of each kept pair is the parser's last pair feature.")
    else:
        rerank_words = (f"the {rerank['keep']} units a learned reranker scores highest among the {rerank['pool']} most similar earlier "
                        "units beyond the window (rerank.safetensors, `thinkprobe/link/rerank.py`: an MLP with two hidden layers of "
                        f"{rerank['hidden']} over the pair features, the distance bucket and both units' features, trained with a "
                        "softmax over each unit's pool against its silver parents, the epoch of the lowest held-out loss kept; "
                        "about a minute per epoch on one core) in place of ") if rerank else ""
        candidates_line = (f"Candidates per unit j: {json.dumps(c)}: the window of preceding units, {rerank_words}the top-k\n"
                           f"most similar earlier units beyond the window{horizon} (found block by block, never an n x n matrix), earlier\n"
                           f"{lookbacks.replace('earlier planning units, ', 'planning units, ', 1)}.")
    return f"""# {meta['name']}: ThinkProbe's trace-level parser (linker and typer)

{"Small torch networks" if meta.get("members") else "One small torch network"} ({size / 1e6:.2f} MB of safetensors weights) over the frozen all-MiniLM-L6-v2
unit embeddings of the pipeline{" and the vectors of its reader (below)" if reader else ""} (nothing else is loaded; no network), `thinkprobe/link/parser/`:

- unit inputs: the embedding and {len(meta['cue_names'])} lexicon cue flags (from `configs/`), {len(meta['shape_patterns'])}
  text-shape flags (patterns in `config.json`) and 10 numeric features (position, length, section, block
  start, similarity to the neighbours and to the most similar earlier unit), projected to {m['proj']};
{reader_line}- contextualizer: {"a " + str(m['layers']) + "-layer BiLSTM with " + str(m['hidden']) + " units per direction over the whole trace (cost linear in its length)" if m['context'] == 'bilstm' else 'none (ablation)'};
- arc scorer per candidate pair (i < j): head and dependent projections of the two states ({m['arc_hidden']}),
  their product, a distance-bucket embedding{" and 16 pair features (cosine, its rank among j's candidates, its gap to j's best earlier similarity, distance, blocks, sections, word overlap, candidate origin, plan / block-start relations)" if m['pair_feats'] else ''}{" and 3 lexical ones (word overlap weighted by inverse unit frequency within the trace, a shared number, i last wrote one of j's numbers)" if meta.get('lexical_pairs') else ''};
  outputs one arc logit (a sigmoid per arc: several parents allowed) and 8 edge-label logits (the
  6 edge types, critique split by polarity);
- node-type head on the states: FAC RSN EXP CRT MET CON RPT (provisional; SYN and the final CRT /
  RPT follow from the edges, `nodetypes.finalise_type`).{ens}

Trained jointly: arc BCE{listwise} + {t['label_weight']} x label CE (positives only, class weights) + {t['type_weight']} x type CE.

{candidates_line}
Types: the type head's most probable type after adding per-type offsets to its log-probabilities
({d.get('type_offsets')}; fitted on the held-out silver units for macro-F1, `fit_type_offsets`{"; every type's predicted count kept within a factor " + format(t['type_rate_ratio'], 'g') + " of its silver count, since the indicators are type rates" if t.get('type_rate_ratio') else ""}).
Decoding (`link.decode.decode_edges`): an edge where the arc probability is at least {d['threshold_near']:.2f}
(window) / {d['threshold_far']:.2f} (beyond), labelled by the most probable label{" (critique labels only for units typed " + " or ".join(d.get('critique_types', ['CRT'])) + ", repetition only for RPT: labels follow types)" if d.get('labels_follow_types') else ''}{"; a planning unit's critique pairs become elaborations" if d.get('plans_elaborate') else ""}; {"every unit but the first gets a forward parent in its window" if d.get('force_parent', True) else "a unit gets no forward parent unless one is probable enough (no forced parent: it opens a new line of thought)"}; a
unit typed CRT or RPT gets its most probable critique / repetition target in its window{"; a unit typed CRT also critiques every other candidate whose critique probability reaches " + format(d['threshold_critique'], 'g') + " (window or beyond)" if d.get('threshold_critique') is not None else ""}; a pair carries one edge{"; synthesis edges stand only where a unit draws on " + str(d['synthesis_min_blocks']) + " or more topical blocks (else inference)" if d.get('synthesis_min_blocks') else ""}{"; a unit with its own critique, repetition or synthesis edge keeps a forward parent only at probability " + format(d['structural_parent_max'], 'g') + " or above, a planning unit always" if d.get('structural_parent_max') is not None else ""}.
These rules were chosen by how close the profile of held-out graphs comes to the silver graphs' (docs/accuracy.md).

## Data and splits

`{t['data']}` (ReasoningFlow v1 silver graphs annotated by Gemini-3.1-pro), all traces, long ones
included ({t['train_traces'] + t['heldout_traces']} with two or more units; generators: {gens}). Each trace was split, encoded
({t.get('encoding') or BF16_WORDS}) and
tiled by our own pipeline; silver nodes were projected onto our units (most overlap) and labels
mapped as below. Held out: the traces whose sha1(doc_id) falls in the {"lowest " + format(t['val_frac'], '.0%') if not t.get('val_start') else format(t['val_start'], '.0%') + " to " + format(t['val_start'] + t['val_frac'], '.0%')}
({t['heldout_traces']} traces); {"the weights (" + epochs_used(t) + ")" if t.get("average_last") else "the epoch (" + str(t['best_epoch']) + " of " + str(t['epochs']) + ", lowest held-out loss)"}, the type offsets and the thresholds (grid
0.1-0.7, maximising edge F1 + far-edge F1 scored as eval-gold scores) were chosen on them.
`traces.txt` lists every trace with its split. {t['train_units']:,} training units, {t['train_pairs']:,} candidate pairs.
{human}

Retrain (after the one-off data preparation):

{retrain}

(seeded; one torch thread and deterministic algorithms: a second run of member A's command with
`--epochs 14` repeated its first 10 epochs' losses and its held-out scores exactly, on the same
machine. On 2 shared CPU cores: {"about 11 minutes of fp32 encoding once with `prepare --shards 2`" if fp32 else "about 25 minutes of bf16 encoding once on CPUs with bf16 instructions (about 10 times slower on CPUs without them, where fp32 takes 11 minutes but changes the last bits of the training data)"},
{"then about 5 minutes caching the lower layers' token states (`lower`), about 18 minutes per epoch of fine-tuning the reader with its parser on both cores, " if reader else ""}then about 4 minutes per 10 epochs of training (22 s an epoch on one free core) and 1-3 of fitting{"; the adaptation takes about a minute" if adapt else ""}.)

## Scores

Held-out silver traces, scored as eval-gold scores (node pairs after projection onto the silver
nodes): edge F1 {h['edge_f1']:.3f} (P {h['edge_p']:.3f}, R {h['edge_r']:.3f}), labelled edge F1 {h['labelled_edge_f1']:.3f},
far-edge F1 {h['far_edge_f1']:.3f}, node type macro-F1 {h['type_macro_f1']:.3f}.
Dev set (human annotator D) and the comparison with the old default: docs/accuracy.md.

## Label mapping (spec section 7; `thinkprobe/evalgold.py`)

| ReasoningFlow node | ours |
|---|---|
{node_rows}
| reflection | CRT when an incoming reflect:* / validate:attack edge shows it evaluates an earlier node, else MET |

| ReasoningFlow edge | ours |
|---|---|
{edge_rows}

Synthesis has no ReasoningFlow label: a unit with inference edges from units of two or more other
topical blocks gets synthesis edges instead when it is a conclusion or has a synthesis cue, or
when the sources span three or more blocks. Edges from question (context) nodes are dropped.

## Licence caveat

The weights are derived from ReasoningFlow data (GitHub jinulee-v/reasoningflow), whose
repository states no licence, with silver labels produced by Gemini-3.1-pro (Google's terms for
model outputs may apply). Research use only; do not redistribute outside the project. The encoder
it builds on, all-MiniLM-L6-v2, is Apache-2.0.
"""
