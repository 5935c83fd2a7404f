"""Property tests (hypothesis) that try to break the loader, the splitter and the indicators with
arbitrary input: the loader never raises anything but InputError and gives stripped sections inside
their text; the splitter's units tile every non-whitespace character of any section exactly once;
the indicators are finite, in their documented ranges, equal between the numba kernels and the
reference, and do not move under edge order, duplicate edges or relabelling of units where their
definition does not read unit positions.

Sized to run in well under 30 s (`make test` runs them); raise THINKPROBE_HYPOTHESIS_SCALE to
search longer, e.g. THINKPROBE_HYPOTHESIS_SCALE=20 for a nightly run.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from thinkprobe.indicators import INDICATORS, compute_indicators, reference_indicators
from thinkprobe.io import FieldMap, detect
from thinkprobe.records import EDGE_TYPES, NODE_TYPES, GraphArrays, InputError, Section, Trace
from thinkprobe.io.tags import SPECIAL_TOKEN
from thinkprobe.segment import unit_spans

SCALE = max(1, int(os.environ.get("THINKPROBE_HYPOTHESIS_SCALE", "1")))


def budget(examples: int):
    return settings(max_examples=examples * SCALE, deadline=None, derandomize=SCALE == 1,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --------------------------------------------------------------------------- text strategies

# Characters and pieces the splitter and the tag finder treat specially, mixed with plain words.
CHARS = (
    "aZx1e9 .,;:?!…。！？、$`\\#*-_~()[]{}<>|/=+'\"\n\t\r\u00a0\u3000\u2028\u200b\x00\x07\x0b\x1c"
    "中文数学αβγاللغةالعربية"
)
PIECES = [
    "```", "```py\n", "~~~", "$$", "$", "\\[", "\\]", "\\(", "\\)", "\\begin{align}", "\\end{align}",
    "\\begin{proof}", "\\end{proof}", "\\frac{a}{b}", "e.g.", "i.e.", "Dr.", "3.14", "1.", "2)", "(a)", "iv.",
    "...", "?!", "Hmm.", "Wait,", "Okay.", "So", "Let me think.", "## Step 1\n", "# ", "- ", "* ",
    "\n\n", "  ", " ", "word", "The answer is 4.", "We compute x = 3.", "我们需要计算。", "然后得到答案！",
    "هذا هو الجواب.", "`code.x()`", "<think>", "</think>", "<|im_end|>", "<｜end▁of▁sentence｜>",
]
fragments = st.one_of(st.sampled_from(PIECES), st.text(alphabet=CHARS, max_size=6))
structured_text = st.lists(fragments, max_size=40).map("".join)
any_text = st.one_of(structured_text, st.text(max_size=200))


def assert_tiles(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    """Units lie in [start, end) in order, each stripped and non-empty, and together cover every
    non-whitespace character of text[start:end] exactly once."""
    covered = [0] * len(text)
    last = start
    for s, e in spans:
        assert start <= last <= s < e <= end, (s, e, last)
        assert not text[s].isspace() and not text[e - 1].isspace(), (s, e)
        for i in range(s, e):
            covered[i] += 1
        last = e
    special = {i for m in SPECIAL_TOKEN.finditer(text, start, end) for i in range(m.start(), m.end())}
    for i in range(start, end):
        if not text[i].isspace():  # a chat-template token (<|im_end|>) is never inside a unit
            assert covered[i] == (0 if i in special else 1), (i, text[i], covered[i])
    assert bool(spans) == bool(SPECIAL_TOKEN.sub("", text[start:end]).strip())


# --------------------------------------------------------------------------- the splitter


@budget(250)
@given(text=any_text)
def test_units_tile_any_text(text, config):
    section = Section("reasoning", "response", text, 0, len(text))
    assert_tiles(text, 0, len(text), unit_spans(text, section, config))


@budget(150)
@given(before=any_text, body=any_text, after=any_text)
def test_units_tile_a_section_inside_a_longer_field(before, body, after, config):
    """Offsets point into the whole field string; nothing outside the section becomes a unit."""
    text = before + body + after
    start, end = len(before), len(before) + len(body)
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    assume(start < end)
    section = Section("reasoning", "response", text, start, end)
    assert_tiles(text, start, end, unit_spans(text, section, config))


@budget(15)
@given(word=st.sampled_from(["alpha", "数学", "x=1;", "العربية"]), repeat=st.integers(3000, 9000),
       sep=st.sampled_from([" ", "", "\t"]))
def test_units_tile_long_lines(word, repeat, sep, config):
    """Lines past max_line_chars are cut (at whitespace when there is any) and still tile."""
    text = sep.join([word] * repeat)
    section = Section("reasoning", "response", text, 0, len(text))
    spans = unit_spans(text, section, config)
    assert_tiles(text, 0, len(text), spans)
    assert max(e - s for s, e in spans) <= config["segment"]["max_line_chars"]


# --------------------------------------------------------------------------- the loader

TAGS = [
    "<think>", "</think>", "<thinking>", "</thinking>", "<reasoning>", "</reasoning>", "<thought>", "</thought>",
    "<|begin_of_thought|>", "<|end_of_thought|>", "◁think▷", "◁/think▷", "[THINK]", "[/THINK]",
    "<|channel|>analysis<|message|>", "<|channel|>final<|message|>", "<|end|>", "<|start|>assistant",
    "analysis", "assistantfinal", "<|begin_of_solution|>", "<|end_of_solution|>", "<|im_end|>", "</s>",
    "<answer>", "</answer>",
]
tagged_text = st.lists(st.one_of(st.sampled_from(TAGS), fragments), max_size=12).map("".join)
KEYS = [
    "reasoning_content", "reasoning", "reasonings", "thinking", "thought", "thought_summary", "full_cot",
    "thinking_trajectories", "think_content", "response", "output", "prediction", "content", "model_answer",
    "generations", "messages", "conversations", "raw_text", "model", "model_name", "generator", "metadata",
    "domain", "task", "subject", "source", "category", "trace_id", "id", "doc_id", "question", "problem",
    "prompt", "answer", "gold", "correct", "is_correct", "grading", "role", "from", "value",
]
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), tagged_text, st.text(max_size=20))
turn = st.fixed_dictionaries(
    {"role": st.sampled_from(["assistant", "user", "gpt", "human", "system", "model", 3])},
    optional={"content": st.one_of(tagged_text, scalars), "value": tagged_text,
              "reasoning_content": st.one_of(tagged_text, scalars)},
)


def _json_values(leaves):
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), children, max_size=4),
            st.lists(turn, max_size=3),
        ),
        max_leaves=12,
    )


records = st.dictionaries(st.sampled_from(KEYS), _json_values(scalars), max_size=8)
overrides = st.builds(
    FieldMap,
    reasoning_field=st.one_of(st.none(), st.sampled_from(["response", "raw_text.response", "generations[0]",
                                                         "messages[-1].content", "a.b[2]", "[0]", "..", ""])),
    model_field=st.one_of(st.none(), st.sampled_from(["metadata.generator", "model", "x[1]"])),
    domain_field=st.one_of(st.none(), st.sampled_from(["task", "metadata.domain"])),
    id_field=st.one_of(st.none(), st.sampled_from(["id", "metadata.id", "messages[0]"])),
)


def assert_trace_is_sound(trace: Trace) -> None:
    assert trace.sections and trace.sections[0].name == "reasoning"
    assert [s.name for s in trace.sections] in (["reasoning"], ["reasoning", "answer"])
    for s in trace.sections:
        assert isinstance(s.text, str) and isinstance(s.field, str) and s.field
        assert 0 <= s.start < s.end <= len(s.text), (s.start, s.end, len(s.text))
        assert not s.text[s.start].isspace() and not s.text[s.end - 1].isspace()
        assert s.content == s.content.strip()
    for value in (trace.trace_id, trace.model, trace.domain):
        assert isinstance(value, str) and value.strip()
    assert trace.correct in (None, True, False)
    assert isinstance(trace.record, int) and trace.record >= 0


@budget(400)
@given(record=records, fields=overrides)
def test_detect_raises_only_input_errors(record, fields):
    try:
        trace = detect(record, fields, "in.jsonl", "line 3")
    except InputError as exc:
        assert exc.source == "in.jsonl" and exc.record == "line 3" and exc.reason
        assert isinstance(exc.field, str)
        return
    assert_trace_is_sound(trace)
    assert trace.record == 2  # "line 3" -> 0-based position


@budget(300)
@given(text=tagged_text, answer=st.one_of(st.none(), tagged_text), field=st.sampled_from(
    ["response", "output", "content", "reasoning_content", "thinking", "full_cot"]))
def test_detect_on_tagged_text(text, answer, field):
    """The tag finder on arbitrary mixes of every tag style, with and without a separate answer."""
    record = {field: text, "model": "m"}
    if answer is not None and field != "content":
        record["content"] = answer
    try:
        trace = detect(record, FieldMap(), "in.jsonl", 0)
    except InputError as exc:
        assert exc.reason and exc.record == 0
        return
    assert_trace_is_sound(trace)
    assert trace.reasoning.text in (text, answer)  # "content" is also a place reasoning is looked for


@budget(100)
@given(value=_json_values(scalars))
def test_detect_on_non_records(value):
    """Whatever a JSON document holds at record level is a Trace or an InputError."""
    try:
        trace = detect(value, FieldMap(), "in.json", 5)
    except InputError as exc:
        assert exc.reason
        return
    assert isinstance(value, dict)
    assert_trace_is_sound(trace)


# --------------------------------------------------------------------------- the indicators

RATIOS = {
    "backtracking_rate", "cross_branch_connectivity", "convergence_index", "recurrence_ratio",
    "self_reflection_rate", "hedging_density", "perspective_taking", "redundancy_ratio",
}
INTEGERS = {"idea_count", "semantic_spread", "max_chain_depth"}
# Indicators whose definition (docs/indicators.md) reads no unit position: counts and ratios over
# node types, edge types and flags, strongly connected components, clusters of embeddings.
POSITION_FREE = (
    "branching_factor", "semantic_spread", "exploration_ratio", "backtracking_rate", "convergence_index",
    "recurrence_ratio", "self_reflection_rate", "critique_ratio", "hedging_density", "perspective_taking",
    "tokens_per_idea", "redundancy_ratio",
)
CONTENT = {NODE_TYPES.index(t) for t in ("FAC", "RSN", "EXP", "SYN", "CON")}


@st.composite
def graphs(draw, *, max_n: int = 14, wild_floats: bool = False, wild_edges: bool = False, generic: bool = False):
    """An arbitrary GraphArrays: any node types, any edges (both directions, self-loops, repeats;
    with wild_edges also ends and types out of range), embeddings of any dimension including zero
    vectors (with wild_floats also NaN and infinities), token counts, concreteness and flags."""
    n = draw(st.integers(0, max_n))
    node_type = draw(st.lists(st.integers(0, len(NODE_TYPES) - 1), min_size=n, max_size=n))
    lo, hi = (-1, n) if wild_edges else (0, max(n - 1, 0))
    type_hi = len(EDGE_TYPES) + (1 if wild_edges else 0) - 1
    type_lo = -1 if wild_edges else 0
    m_max = 0 if n == 0 and not wild_edges else 3 * max(n, 1)
    edges = draw(st.lists(st.tuples(st.integers(lo, hi), st.integers(lo, hi), st.integers(type_lo, type_hi)),
                          max_size=m_max))
    dim = draw(st.integers(1, 4))
    if generic:  # continuous vectors: no exact ties in the clustering
        seed = draw(st.integers(0, 2**32 - 1))
        emb = np.random.default_rng(seed).normal(size=(n, dim))
    else:
        elements = (st.floats(width=32) if wild_floats
                    else st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5]), st.floats(-1e3, 1e3, width=32)))
        emb = np.array(draw(st.lists(st.lists(elements, min_size=dim, max_size=dim), min_size=n, max_size=n)),
                       dtype=np.float64).reshape(n, dim)
    conc_elements = st.floats(width=64) if wild_floats else st.floats(0.0, 1.0)
    return GraphArrays(
        n=n,
        node_type=np.array(node_type, np.int8),
        edge_src=np.array([s for s, _, _ in edges], np.int32),
        edge_dst=np.array([d for _, d, _ in edges], np.int32),
        edge_type=np.array([t for _, _, t in edges], np.int8),
        embeddings=emb.astype(np.float32) if n else np.zeros((0, dim), np.float32),
        tokens=np.array(draw(st.lists(st.integers(0, 100_000), min_size=n, max_size=n)), np.int32),
        concreteness=np.array(draw(st.lists(conc_elements, min_size=n, max_size=n)), np.float64),
        hedge=np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), np.bool_),
        perspective=np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), np.bool_),
    )


def with_edges(g: GraphArrays, order) -> GraphArrays:
    order = np.asarray(order, np.int64)
    return GraphArrays(g.n, g.node_type, g.edge_src[order], g.edge_dst[order], g.edge_type[order],
                       g.embeddings, g.tokens, g.concreteness, g.hedge, g.perspective)


def assert_documented_ranges(g: GraphArrays, ind: dict[str, float]) -> None:
    n = g.n
    assert list(ind) == list(INDICATORS)
    for name, value in ind.items():
        assert type(value) is float and math.isfinite(value), (name, value)
        if name != "specificity_gradient":
            assert value >= 0.0, (name, value)
        if name in RATIOS:
            assert value <= 1.0, (name, value)
        if name in INTEGERS:
            assert value == int(value), (name, value)
    assert ind["initial_diversity"] <= 2.0
    if n == 0:
        assert set(ind.values()) == {0.0}
        return
    content = int(np.isin(g.node_type, list(CONTENT)).sum())
    assert 1 <= ind["idea_count"] <= n
    assert ind["semantic_spread"] <= content
    assert ind["mean_branch_depth"] <= ind["max_chain_depth"] <= n - 1
    assert ind["revision_depth"] <= n - 1
    assert ind["critique_ratio"] <= n


@budget(300)
@given(g=graphs(wild_edges=True))
def test_indicators_finite_in_range_and_numba_equals_reference(g):
    fast, slow = compute_indicators(g), reference_indicators(g)
    assert_documented_ranges(g, fast)
    for name in INDICATORS:
        assert fast[name] == pytest.approx(slow[name], rel=1e-9, abs=1e-9), name


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's overflow notes on inputs like 1e308 are expected
@budget(150)
@given(g=graphs(wild_floats=True, wild_edges=True))
def test_indicators_finite_for_non_finite_inputs(g):
    """NaN or infinite embeddings and concreteness (never produced by the encoder) still give finite numbers."""
    for implementation in (compute_indicators, reference_indicators):
        ind = implementation(g)
        assert all(type(v) is float and math.isfinite(v) for v in ind.values()), ind


@budget(150)
@given(g=graphs(wild_edges=True), data=st.data())
def test_indicators_ignore_edge_order_and_duplicate_edges(g, data):
    m = len(g.edge_src)
    assume(m > 0)
    expected = compute_indicators(g)
    shuffled = data.draw(st.permutations(list(range(m))))
    assert compute_indicators(with_edges(g, shuffled)) == expected
    extra = data.draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=2 * m))
    assert compute_indicators(with_edges(g, list(range(m)) + extra)) == expected


@budget(150)
@given(g=graphs(generic=True), data=st.data())
def test_position_free_indicators_ignore_unit_relabelling(g, data):
    """Renumbering the units (edges, types, embeddings and flags follow) changes nothing that does
    not read positions; the branch and depth indicators, which do, are left out by definition."""
    perm = np.array(data.draw(st.permutations(list(range(g.n)))), np.int64)  # new index of unit i
    inv = np.argsort(perm) if g.n else perm
    relabelled = GraphArrays(
        g.n, g.node_type[inv], perm[g.edge_src].astype(np.int32) if len(g.edge_src) else g.edge_src,
        perm[g.edge_dst].astype(np.int32) if len(g.edge_dst) else g.edge_dst, g.edge_type,
        g.embeddings[inv], g.tokens[inv], g.concreteness[inv], g.hedge[inv], g.perspective[inv],
    )
    before, after = compute_indicators(g), compute_indicators(relabelled)
    for name in POSITION_FREE:
        assert after[name] == pytest.approx(before[name], rel=1e-12, abs=1e-12), name
    assert reference_indicators(relabelled)["recurrence_ratio"] == pytest.approx(before["recurrence_ratio"])
