"""The measuring tools of the parser (`train_parser.py cv`, experiments/decode_variants.py) score
with `training.dev_cv.adapted_outputs`: with the model as it is, its outputs must be what the
linker of a run computes on the same trace, restatement gate included."""
import numpy as np

from conftest import REPO

MODEL = REPO / "models" / "parser-minilm-reader"


def test_unadapted_outputs_equal_the_linkers_with_the_gate(shared_data, config, encoder):
    from thinkprobe.link.parser import ParserLinker
    from thinkprobe.link.protocol import TYPE_CLASSES
    from thinkprobe.reasoningflow import load_docs
    from thinkprobe.training.dev_cv import adapted_outputs, dev_examples
    from thinkprobe.training.parser_data import doc_question, encode_rows

    docs = load_docs(shared_data / "reasoningflow" / "v0" / "v0_human_D")
    docs = sorted(docs, key=lambda d: len(d["raw_text"]["response"]))[:2]  # the two shortest traces
    assert all(doc_question(d) for d in docs)  # the gate reads the question
    rows = encode_rows(docs, [0, 1], encoder, config)
    outs = adapted_outputs(MODEL, dev_examples(MODEL, docs, rows), [], 0, 0.0)
    linker = ParserLinker(MODEL)
    assert linker.gate is not None
    scored = linker.score([(r["units"], r["emb"], doc_question(docs[r["doc_index"]])) for r in rows])
    rpt = TYPE_CLASSES.index("RPT")
    for out, ref in zip(outs, scored):
        for key in ("i", "j", "origin"):
            assert out[key].tolist() == ref[key].tolist()
        np.testing.assert_allclose(out["probs"], ref["probs"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out["types"], ref["types"], rtol=1e-5, atol=1e-6)
        # the gate decided RPT: each unit's RPT probability is 0 or 1 (the first unit's is the head's)
        assert set(np.round(out["types"][1:, rpt], 6).tolist()) <= {0.0, 1.0}
    assert len(outs) == 2

