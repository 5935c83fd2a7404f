"""The trace-level parser backend (issue 11): reads a whole trace at once and links and types its
units jointly, trained by scripts/train_parser.py on ReasoningFlow silver graphs and shipped in
models/parser-<name>/.

Model (torch, small, CPU-friendly):
- unit inputs: the frozen MiniLM embedding, projected, plus unit features (lexicon cue flags,
  text-shape flags whose patterns are stored with the model, position, length, section, block
  start, similarity to the neighbours and to the most similar earlier unit; with `question`, the
  unit's word and number overlap with the trace's question, for restatements of it);
- a contextualizer over the trace's units in order: a BiLSTM (linear in the trace length);
- an arc scorer for each candidate pair (i < j): an MLP over the two contextual states (as head and
  dependent), their product, a distance-bucket embedding and pair features (cosine, its rank among
  j's candidates, blocks, word overlap, where the candidate came from; with `lexical_pairs`, also
  idf-weighted word overlap, a shared number, and whether i last wrote one of j's numbers). Its outputs are one arc
  logit (a sigmoid per arc: a unit may have several parents) and edge-label logits;
- a node-type head on the contextual states.

Candidates per unit j: a window of preceding units, the top-k most similar earlier units found
block by block (no n x n matrix: memory is O(block x n); with a `horizon`, only among the units
that many before j, so time is linear too), a cue-driven look-back (last planning units, last
conclusion units for concluding / critiquing units, recent block starts) and, with
`number_lookback`, the units that last wrote one of j's numbers.
Decoding reuses `decode.decode_edges`: the arc probability and the label distribution become the
pair-class probabilities the other trained backends give.

One module per stage: `candidates` (the blocked similarity search, number mentions and the
candidate pairs), `features` (unit and pair features, the reranker's choice of candidates: what the
network reads of a trace), `network` (the torch network and its outputs), `runner` (scoring traces
with it), `model_dir` (model folders: load, write, an untrained one for tests) and `linker` (the
`ParserLinker` backend and its `ParserTyper`), `gate` (the restatement gate: RPT decided with the
question). Every name is importable from here.
"""
from __future__ import annotations

from ..candidates import DISTANCE_BUCKETS, distance_bucket
from ..features import SHARED_PAIR_FEATURES
from ..models import read_model_dir
from .candidates import earlier_topk, last_mentions, number_index, parser_candidates
from .features import (LEXICAL_PAIR_FEATURES, LOGP_FLOOR, QUESTION_FEATURES, ParserFeaturizer, candidate_rank,
                       lexical_pair_features, pair_features, question_overlap, trace_features, unit_features)
from .gate import gated_trace_types, gated_types
from .linker import ParserLinker, ParserTyper
from .model_dir import init_model_dir, load_parser_model, write_model_dir
from .network import build_parser_model, pair_class_probs, predict_types
from .runner import run_parser

# The names above are all importable from here (the training code, the tests and the experiment scripts do);
# `__all__` lists the backend's own, as before the package.
__all__ = [
    "DISTANCE_BUCKETS", "ParserFeaturizer", "parser_candidates", "earlier_topk", "trace_features",
    "build_parser_model", "ParserLinker", "ParserTyper", "distance_bucket", "LEXICAL_PAIR_FEATURES", "lexical_pair_features",
    "number_index", "last_mentions", "predict_types", "unit_features", "QUESTION_FEATURES", "question_overlap", "gated_types",
    "gated_trace_types",
]
