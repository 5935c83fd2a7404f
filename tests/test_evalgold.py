"""The gold scorer on hand-made ReasoningFlow documents with known answers: perfect match,
shifted boundary, missing edge, swapped direction, far edges, label mapping, the baseline."""
import pytest

from thinkprobe.evalgold import baseline_docs, format_scores, score, window_diff
from thinkprobe.reasoningflow import edge_types, map_edge_label, node_types

TEXT = "We know x = 2. So y = 4. Wait, is that right? Yes, y = 4 holds. The answer is 4."
# sentence spans (start, end) of TEXT, each span's trailing space included (gold nodes tile the text)
CUTS = [0, 15, 25, 46, 64, len(TEXT)]
SPANS = list(zip(CUTS, CUTS[1:]))
LABELS = ["fact", "reasoning", "reflection", "reasoning", "conclusion"]
GOLD_EDGES = [(0, 1, "reason:infer"), (1, 2, "reflect:uncertain"), (1, 3, "validate:support"), (3, 4, "reason:infer")]


def doc(spans=SPANS, labels=LABELS, edges=GOLD_EDGES, doc_id="d1", question_edges=()):
    nodes = [{"id": "ctx0", "label": "context", "text": "Q?", "source": "question", "start": 0, "end": 2}]
    nodes += [{"id": f"resp{k}", "label": lab, "text": TEXT[s:e], "source": "response", "start": s, "end": e}
              for k, ((s, e), lab) in enumerate(zip(spans, labels))]
    es = [{"id": f"e{k}", "source_node_id": f"resp{a}", "dest_node_id": f"resp{b}", "label": lab}
          for k, (a, b, lab) in enumerate(edges)]
    es += [{"id": f"q{k}", "source_node_id": "ctx0", "dest_node_id": f"resp{b}", "label": lab}
           for k, (b, lab) in enumerate(question_edges)]
    return {"doc_id": doc_id, "raw_text": {"question": "Q?", "response": TEXT}, "nodes": nodes, "edges": es}


def test_spans_tile_the_text():
    assert "".join(TEXT[s:e] for s, e in SPANS) == TEXT
    assert TEXT[SPANS[2][0]:SPANS[2][1]].startswith("Wait")


def test_perfect_match_scores_one():
    s = score([doc()], [doc()])
    for key in ("boundary", "edges", "edges_labelled", "far_edges"):
        assert s[key]["f1"] == pytest.approx(1.0), key
    assert s["window_diff"] == 0.0
    assert s["types"]["accuracy"] == 1.0 and s["types"]["macro_f1"] == 1.0
    assert s["critique_polarity_accuracy"] == 1.0


def test_boundary_across_whitespace_is_the_same_boundary():
    # predicted units without their trailing space: boundaries differ only by whitespace
    stripped = [(s, s + len(TEXT[s:e].rstrip())) for s, e in SPANS]
    s = score([doc()], [doc(spans=stripped)])
    assert s["boundary"]["f1"] == 1.0 and s["window_diff"] == 0.0


def test_shifted_boundary():
    # the boundary before node 1 moved 3 characters into it: 3 of 4 gold boundaries found
    spans = list(SPANS)
    spans[0] = (0, 18)
    spans[1] = (18, 25)
    s = score([doc()], [doc(spans=spans)])
    b = s["boundary"]
    assert (b["tp"], b["pred"], b["gold"]) == (3, 4, 4)
    assert b["precision"] == 0.75 and b["recall"] == 0.75
    assert 0 < s["window_diff"] < 1
    # edges survive the shift: every unit still overlaps its own gold node most
    assert s["edges"]["f1"] == 1.0


def test_missing_edge():
    pred = doc(edges=GOLD_EDGES[:-1])
    s = score([doc()], [pred])
    e = s["edges"]
    assert (e["tp"], e["pred"], e["gold"]) == (3, 3, 4)
    assert e["precision"] == 1.0 and e["recall"] == 0.75 and e["f1"] == pytest.approx(6 / 7)


def test_swapped_direction_matches_undirected():
    swapped = [(b, a, lab) for a, b, lab in GOLD_EDGES]
    s = score([doc()], [doc(edges=swapped)])
    assert s["edges"]["f1"] == 1.0
    assert s["edges_labelled"]["f1"] == 1.0  # the label fixes the direction; pairs are unordered


def test_wrong_label_counts_unlabelled_only():
    wrong = [(0, 1, "reason:restate")] + GOLD_EDGES[1:]
    s = score([doc()], [doc(edges=wrong)])
    assert s["edges"]["f1"] == 1.0
    assert s["edges_labelled"]["tp"] == 3


def test_far_edges_are_pairs_more_than_one_node_apart():
    s = score([doc()], [doc()])
    assert s["far_edges"]["gold"] == 1  # (1, 3) only
    pred = doc(edges=[e for e in GOLD_EDGES if e[:2] != (1, 3)])
    s = score([doc()], [pred])
    assert s["far_edges"]["recall"] == 0.0 and s["edges"]["recall"] == 0.75


def test_question_edges_and_context_nodes_are_left_out():
    gold = doc(question_edges=[(0, "reason:restate"), (4, "validate:support")])
    s = score([gold], [doc()])
    assert s["edges"]["gold"] == 4 and s["edges"]["f1"] == 1.0
    assert s["types"]["nodes"] == 5


def test_label_mapping():
    assert map_edge_label("reason:execute") == ("inference", "")
    assert map_edge_label("plan:backtrack") == ("critique", "negate")
    assert map_edge_label("plan:proceed", "planning") == ("elaboration", "")
    assert map_edge_label("plan:decompose", "assumption") == ("branch", "")
    assert map_edge_label("reasoning:infer") == ("inference", "")  # misspelling in LLM files
    assert map_edge_label("no:such") is None
    # reflection: CRT when it evaluates an earlier node, MET otherwise
    assert node_types(doc()) == ["FAC", "RSN", "CRT", "RSN", "CON"]
    no_eval = doc(edges=[e for e in GOLD_EDGES if e[2] != "reflect:uncertain"])
    assert node_types(no_eval)[2] == "MET"
    assert (1, 2, "critique", "uncertain") in edge_types(doc())


def test_our_types_and_edges_are_read_from_the_export_fields():
    pred = doc()
    pred["nodes"][2]["thinkprobe_type"] = "SYN"  # counts as reasoning
    pred["edges"][0]["thinkprobe_type"] = "synthesis"  # counts as inference
    assert node_types(pred)[1] == "RSN"
    assert edge_types(pred)[0][2] == "inference"


def test_only_shared_documents_are_scored():
    s = score([doc(), doc(doc_id="d2")], [doc()])
    assert s["docs"] == 1 and s["missing_predictions"] == ["d2"]
    with pytest.raises(ValueError):
        other = doc()
        other["raw_text"] = {"question": "", "response": TEXT + " more"}
        score([doc()], [other])


def test_candidate_recall_of_far_edges():
    pred = doc(edges=GOLD_EDGES[:1])
    pred["thinkprobe_candidates"] = [[0, 1], [1, 2]]
    assert score([doc()], [pred])["far_candidate_recall"] == 0.0
    pred["thinkprobe_candidates"].append([1, 3])
    assert score([doc()], [pred])["far_candidate_recall"] == 1.0
    assert score([doc()], [doc()])["far_candidate_recall"] is None


def test_window_diff_known_values():
    assert window_diff("aaaa bbbb", {5}, {5}, 2) == 0.0
    # 8 content characters, k = 2: 2 of the 6 windows straddle the missed boundary
    assert window_diff("aaaa bbbb", {5}, set(), 2) == pytest.approx(1 / 3)


def test_trivial_baseline_sentences_chained():
    base = baseline_docs([doc()])[0]
    assert [n["text"] for n in base["nodes"]][:2] == ["We know x = 2.", "So y = 4."]
    assert len(base["edges"]) == len(base["nodes"]) - 1
    s = score([doc()], [base])
    assert s["boundary"]["f1"] == 1.0
    assert s["edges"]["tp"] == 3  # the chain finds the adjacent gold edges only


def test_format_scores_lists_every_score():
    text = format_scores(score([doc()], [doc()]), "demo")
    for name in ("boundary P", "boundary R", "boundary F1", "WindowDiff", "type acc", "type macro-F1", "edge F1",
                 "labelled edge F1", "far-edge F1", "far cand. recall"):
        assert name in text


def test_recall_and_precision_by_gold_distance():
    # gold pairs: (0,1) (1,2) (3,4) at distance 1, (1,3) at 2; predict (0,4) at 4 instead of (1,3)
    pred = doc(edges=[e for e in GOLD_EDGES if e[:2] != (1, 3)] + [(0, 4, "reason:infer")])
    b = score([doc()], [pred])["by_distance"]
    assert (b["1"]["tp"], b["1"]["pred"], b["1"]["gold"]) == (3, 3, 3)
    assert (b["2-3"]["tp"], b["2-3"]["gold"], b["2-3"]["pred"]) == (0, 1, 0)
    assert (b["4-10"]["tp"], b["4-10"]["pred"], b["4-10"]["gold"]) == (0, 1, 0)
    assert b[">10"]["gold"] == 0


def test_paired_bootstrap_over_documents():
    from thinkprobe.evalgold import paired_bootstrap

    gold = [doc(doc_id=f"d{k}") for k in range(6)]
    perfect = score(gold, [doc(doc_id=f"d{k}") for k in range(6)])
    worse = score(gold, [doc(doc_id=f"d{k}", edges=GOLD_EDGES[:2] if k % 2 else GOLD_EDGES) for k in range(6)])
    boot = paired_bootstrap(perfect, worse, samples=200, seed=1)
    e = boot["edge F1"]
    assert e["a"] == 1.0 and e["diff"] == pytest.approx(1.0 - worse["edges"]["f1"])
    assert 0 <= e["low"] <= e["diff"] <= e["high"] and e["p_not_better"] < 0.05
    same = paired_bootstrap(perfect, perfect, samples=50)
    assert all(r["diff"] == 0 and r["low"] == r["high"] == 0 for r in same.values())


def test_documents_a_model_trained_or_adapted_on_are_named(tmp_path):
    from thinkprobe.evalgold import held_out_docs, seen_docs

    (tmp_path / "traces.txt").write_text("d1\ttrain\nd2\theldout\nd3\tadapted\n", encoding="utf-8")
    docs = [doc(doc_id=d) for d in ("d1", "d2", "d3", "d4")]
    assert seen_docs(docs, tmp_path) == ["d1", "d3"]
    assert [d["doc_id"] for d in held_out_docs(docs, tmp_path)] == ["d2"]
    assert seen_docs(docs, None) == [] and seen_docs(docs, tmp_path / "no-model") == []


def test_the_shipped_reader_parser_never_saw_the_dev_traces(shared_data):
    """Its weights were trained on silver traces only (not adapted to human D since 2026-12-04), so
    eval-gold scores v0_human_D as a test; its traces.txt lists silver traces only."""
    import json

    from thinkprobe.evalgold import load_docs, seen_docs
    from thinkprobe.link import LINKERS, MODELS_DIR

    dev = load_docs(shared_data / "reasoningflow" / "v0" / "v0_human_D")
    folder = MODELS_DIR / LINKERS["parser-reader"].model
    assert "adaptation" not in json.loads((folder / "config.json").read_text(encoding="utf-8"))
    marks = {line.split("\t")[1] for line in (folder / "traces.txt").read_text(encoding="utf-8").splitlines()}
    assert len(dev) == 20 and seen_docs(dev, folder) == [] and marks == {"train", "heldout"}


def test_predicted_documents_keep_the_generator_so_their_untagged_answers_are_profiled():
    """The documents `train_parser.py cv --indicators` profiles (`scored_doc`) keep the gold
    document's metadata: profiled without it, every document is one unknown model, and a short
    untagged answer among tagged traces is set apart as an answer without thinking (left out of the
    indicator agreement, as 72 of 133 held-out silver traces were)."""
    from thinkprobe.agreement import profile_graphs
    from thinkprobe.records import Edge, ThoughtUnit
    from thinkprobe.training.parser_fit import scored_doc

    def doc(doc_id, generator, sentences, think):
        body = " ".join(sentences)
        response = f"<think>{body}</think>The answer is 3." if think else body
        start = response.index(sentences[0])
        units, pos = [], start
        for k, s in enumerate(sentences):
            units.append(ThoughtUnit(k, "reasoning", pos, pos + len(s), s, segment=0, node_type="RSN"))
            pos += len(s) + 1
        gold = {"doc_id": doc_id, "raw_text": {"question": "What is x?", "response": response},
                "metadata": {"generator": generator}}
        return scored_doc(gold, units, [Edge(k, k + 1, "inference") for k in range(len(units) - 1)])

    steps = [f"Step {k}: so x = {k % 4} after checking the sum again." for k in range(12)]
    docs = [doc(f"t{k}", "thinker", steps[k:] + steps[:k], True) for k in range(3)]
    docs.append(doc("plain", "plain-model", ["x is 3.", "So the answer is 3."], False))
    assert all(d["metadata"]["generator"] for d in docs)
    rows, errors = profile_graphs(docs, device="cpu")
    assert sorted(rows) == ["plain", "t0", "t1", "t2"] and not errors
    bare, bare_errors = profile_graphs([{k: v for k, v in d.items() if k != "metadata"} for d in docs], device="cpu")
    assert "plain" not in bare and [e["doc_id"] for e in bare_errors] == ["plain"]  # what the cv profiled before
