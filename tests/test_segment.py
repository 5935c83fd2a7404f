"""Segmentation: the rule-based splitter, filler merging, offsets that tile the text, TextTiling."""
import functools
import json

import numpy as np
import pytest

from conftest import SAMPLES
from thinkprobe.records import Section
from thinkprobe.io.tags import SPECIAL_TOKEN
from thinkprobe.segment import fragment_spans, tile, unit_spans


def frags(text):
    return [text[s:e] for s, e in fragment_spans(text, 0, len(text))]


def units(text, config):
    section = Section("reasoning", "response", text, 0, len(text))
    return [text[s:e] for s, e in unit_spans(text, section, config)]


@pytest.mark.parametrize("text, expected", [
    ("The mean is 3.14 and the sd is 0.5. Next step.", ["The mean is 3.14 and the sd is 0.5.", "Next step."]),
    ("We use e.g. a grid, i.e. squares. Dr. Smith agrees.", ["We use e.g. a grid, i.e. squares.", "Dr. Smith agrees."]),
    ("1. First item here\n2. Second item here", ["1. First item here", "2. Second item here"]),
    ("So we get $x = 1. 5$ roughly. Then stop.", ["So we get $x = 1. 5$ roughly.", "Then stop."]),
    ("Before.\n\\[\na = b. \\\\ c = d.\n\\]\nAfter.", ["Before.", "\\[\na = b. \\\\ c = d.\n\\]", "After."]),
    ("Code:\n```python\nx = 1. \nprint(x)\n```\nDone.", ["Code:", "```python\nx = 1. \nprint(x)\n```", "Done."]),
    ("Is it 5? Yes! Great...", ["Is it 5?", "Yes!", "Great..."]),
    ("Run `a.b()` first. Then go.", ["Run `a.b()` first.", "Then go."]),
    ("我们需要计算。然后得到答案！", ["我们需要计算。", "然后得到答案！"]),
    ("no punctuation at all here", ["no punctuation at all here"]),
    ("## Step 2\nCompute it.", ["## Step 2", "Compute it."]),
    # a numbered bold heading stays whole past 9 (Thought Anchors: '10. **' and 'Next Layer:** ...' were two units)
    ("9. **Next Layer:** we add.\n10. **Next Layer:** we add more.\n11. *Final*: done.",
     ["9. **Next Layer:** we add.", "10. **Next Layer:** we add more.", "11. *Final*: done."]),
    # an ellipsis between terms or after a repeating decimal a lower-case word goes on from ends no sentence
    # (THINK-Bench: "≈ 8.333..." and "cm." were two units, "cm." typed a restatement); a capital still starts one
    ("So d ≈ 8.333... cm. The sum 1 + 2 + ... + 10 is 55. So x = 0.333... Then y. Hmm... so it is 8...",
     ["So d ≈ 8.333... cm.", "The sum 1 + 2 + ... + 10 is 55.", "So x = 0.333...", "Then y.", "Hmm...", "so it is 8..."]),
    # factorials and an ellipsis inside a list end no sentence; an opening bracket stays with its sentence
    ("So C(n, r) = n! / (r!(n-r)!). Then 8! / (5! * 3!) = 336. Done!",
     ["So C(n, r) = n! / (r!(n-r)!).", "Then 8! / (5! * 3!) = 336.", "Done!"]),
    ("It is 5! Now stop. Yes! so it goes.", ["It is 5!", "Now stop.", "Yes!", "so it goes."]),
    ("Find n such that \\( n!! \\) divides \\( 2012!! \\), then stop.",
     ["Find n such that \\( n!! \\) divides \\( 2012!! \\), then stop."]),  # double factorials (ProcessBench)
    ("The terms are (104, 114, ..., 194). Count them... Hmm. (It is 10.)",
     ["The terms are (104, 114, ..., 194).", "Count them...", "Hmm.", "(It is 10.)"]),
    # the unknown of an equation ends no sentence, unless a capital follows it
    ("So x = ? cm. Then 3 + 4 = ? Add them.", ["So x = ? cm.", "Then 3 + 4 = ?", "Add them."]),
    # a LaTeX environment inside inline math is part of its sentence (ProcessBench); on its own lines a block
    ("So $a = \\begin{pmatrix} x \\\\ y \\end{pmatrix}$ is given. The answer is $\\boxed{\\begin{pmatrix} 1 \\end{pmatrix}}$.",
     ["So $a = \\begin{pmatrix} x \\\\ y \\end{pmatrix}$ is given.", "The answer is $\\boxed{\\begin{pmatrix} 1 \\end{pmatrix}}$."]),
    ("It was approx. 3.5 km, approx. the same. It is approx. Then stop.",
     ["It was approx. 3.5 km, approx. the same.", "It is approx.", "Then stop."]),
    # a bold title glued to the sentence before it (gpt-5-mini's reasoning summaries) starts a unit
    ("I should check it.**Investigating album rankings**\n\nI'm looking at the charts. So **this** is it.",
     ["I should check it.", "**Investigating album rankings**", "I'm looking at the charts.", "So **this** is it."]),
    # a quotation mark that opens a sentence stays with it (BIG-Bench Mistake's word_sorting)
    ('The first letter: "bushwhack": "b" (2). "hippy": "h" (8). "yakima": "y" (25).',
     ['The first letter: "bushwhack": "b" (2).', '"hippy": "h" (8).', '"yakima": "y" (25).']),
    # prices are no math: dollar signs pair by pandoc's rule (MiP-Overthinking's GSM8K answers were
    # one unit from "$41" to "$1"); a formula between them still holds its sentence together
    ("She spent $41 on cupcakes. Let me confirm that. If each is $1, she bought 41.",
     ["She spent $41 on cupcakes.", "Let me confirm that.", "If each is $1, she bought 41."]),
    ("It costs $5-$10. Wait. The sum is $x. y$ here. Then \\$3. Then $2.40 a dozen.",
     ["It costs $5-$10.", "Wait.", "The sum is $x. y$ here.", "Then \\$3.", "Then $2.40 a dozen."]),
    # no sentence ends on a comma: spaCy cut after "etc.,", "Sr.," and "?)," (a second trial: QwQ, R1, tts)
    ("We count the first, the second, etc., up to the eighth hour. Joseph A. Roebling Sr., the engineer, built it.",
     ["We count the first, the second, etc., up to the eighth hour.", "Joseph A. Roebling Sr., the engineer, built it."]),
    ("Is it constant, right?), so r is also a constant. Done.", ["Is it constant, right?), so r is also a constant.", "Done."]),
    # math with spaces inside its dollar signs stays whole (QwQ-32B writes "$ x $": 51 ReasoningFlow traces)
    ("The roots satisfy $ x = 3. $ Then stop. It costs $5 each, so $n$ cost $5n. 2$ in all.",
     ["The roots satisfy $ x = 3. $ Then stop.", "It costs $5 each, so $n$ cost $5n. 2$ in all."]),
    ("We have\n\\begin{align}\nx &= 1. \\\\\ny &= 2\n\\end{align}\nSo done.",
     ["We have", "\\begin{align}\nx &= 1. \\\\\ny &= 2\n\\end{align}", "So done."]),
])
def test_fragments(text, expected):
    assert frags(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("Hmm. Okay. Let me add them. Wait, 2 + 2 = 4.", ["Hmm. Okay. Let me add them.", "Wait, 2 + 2 = 4."]),
    ("The sum is 4. Hmm.", ["The sum is 4. Hmm."]),
    ("Wait.\n\nSo the total is 12.", ["Wait.\n\nSo the total is 12."]),
    ("Okay.", ["Okay."]),
    # a bold title opens the part it names (Gemini's and GPT-5's thought summaries; "**Final Answer**" before a box);
    # a bold answer or option is no title
    ("**Evaluating NBA Finals Scoring**\nI need the 1996 totals first.",
     ["**Evaluating NBA Finals Scoring**\nI need the 1996 totals first."]),
    ("So it is 6.\n\n**Final Answer**\n\\boxed{6}", ["So it is 6.", "**Final Answer**", "\\boxed{6}"]),
    ("The answer is:\n\n**Option B**\n\nIt fits the data.", ["The answer is:", "**Option B**", "It fits the data."]),
    ("Therefore we conclude:\n\n**Answer: C**\n\nDone here.", ["Therefore we conclude:", "**Answer: C**", "Done here."]),
])
def test_filler_merges_into_next_unit(text, expected, config):
    assert units(text, config) == expected


def assert_tiles(text, start, end, spans):
    """Every non-whitespace character of text[start:end] lies in exactly one span, in order."""
    covered = np.zeros(len(text), dtype=int)
    last = start
    for s, e in spans:
        assert start <= s < e <= end and s >= last
        assert not text[s].isspace() and not text[e - 1].isspace()
        covered[s:e] += 1
        last = e
    special = {i for m in SPECIAL_TOKEN.finditer(text, start, end) for i in range(m.start(), m.end())}
    for i in range(start, end):
        expected = 0 if text[i].isspace() or i in special else 1  # chat-template tokens are never in a unit
        assert covered[i] == expected or (text[i].isspace() and covered[i] <= 1), (i, text[i])


def test_units_tile_sample_traces(config):
    for line in SAMPLES.read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["response"]
        close = text.index("</think>")
        start = text.find("<think>") + len("<think>") if "<think>" in text else 0
        section = Section("reasoning", "response", text, start, close)
        assert_tiles(text, start, close, unit_spans(text, section, config))


@pytest.mark.parametrize("text", [
    "", "   \n\n  ", "a", "x\u0000y. z", "...", "$$ unterminated display math. And more.",
    "```\nunterminated fence. x", "Hmm. Wait. Okay.", "A.B.C. D", "\t\tindent. \r\nwindows line. end",
    "word " * 5000,
])
def test_units_tile_odd_text(text, config):
    section = Section("reasoning", "response", text, 0, len(text))
    spans = unit_spans(text, section, config)
    assert_tiles(text, 0, len(text), spans)
    assert bool(spans) == bool(text.strip())


def test_long_line_is_cut(config):
    text = "word " * 10000
    spans = unit_spans(text, Section("reasoning", "r", text, 0, len(text)), config)
    assert len(spans) > 1 and max(e - s for s, e in spans) <= config["segment"]["max_line_chars"]


def test_tiling_finds_topic_shift_and_keeps_forced_starts():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=16), rng.normal(size=16)
    emb = np.array([a + 0.1 * rng.normal(size=16) for _ in range(8)] + [b + 0.1 * rng.normal(size=16) for _ in range(8)])
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    seg = tile(emb.astype(np.float32))
    assert seg.tolist() == [0] * 8 + [1] * 8
    seg = tile(emb.astype(np.float32), forced=[3])
    assert seg[3] == seg[2] + 1 and seg[8] == seg[7] + 1
    assert tile(np.zeros((0, 4), np.float32)).tolist() == []
    assert tile(emb[:2].astype(np.float32)).tolist() == [0, 0]


# --------------------------------------------------------------------------- linear-time equivalence


def _reference_fragment_spans(text, start, end, max_line_chars=20000):
    """fragment_spans as first written (Doc.text read at every use, abbreviation and enumeration
    searches over the whole prefix): quadratic in line length, kept here as the definition the
    linear version must match span for span."""
    from thinkprobe import segment as sg

    pieces = []
    for s, e, whole in sg._line_spans(text, start, end):
        span = sg._strip(text, s, e)
        if span:
            for a, b in sg._cut_long(text, span[0], span[1], max_line_chars) if not whole else [span]:
                pieces.append((a, b, whole))
    docs = iter(sg._nlp().pipe(text[s:e] for s, e, whole in pieces if not whole))
    out = []
    for s, e, whole in pieces:
        if whole:
            out.append((s, e))
            continue
        doc = next(docs)
        protected = [(m.start(), m.end()) for m in sg._INLINE.finditer(doc.text)]
        cuts = {sent.start_char for sent in doc.sents} | {m.start() for m in sg._CJK_END.finditer(doc.text)}
        cuts |= {m.end() for m in sg._MISSED_END.finditer(doc.text)} | {m.start() for m in sg._GLUED_BOLD.finditer(doc.text)}
        cuts = sorted({_reference_openers(doc.text, c) for c in cuts if 0 < c < len(doc.text)})
        cuts = [c for c in cuts if c > 0 and not any(a < c < b for a, b in protected)
                and not _reference_abbreviation(doc.text, c) and not _reference_formula(doc.text, c)
                and doc.text[:c].rstrip()[-1:] not in (",", ";") and doc.text[c:].lstrip()[:1] not in (",", ";")]
        bounds = [0]
        for c in cuts:
            if doc.text[c:c + 1].islower():
                m = sg._ENUM_TAIL.search(doc.text[:c].rstrip())
                c = m.start() if m else c
            if c > bounds[-1] and not sg._MARKER.match(doc.text[bounds[-1]:c]):
                bounds.append(c)
        bounds.append(len(doc.text))
        out.extend(span for a, b in zip(bounds, bounds[1:]) if (span := sg._strip(text, s + a, s + b)))
    return out


@functools.lru_cache(maxsize=1)
def _segment_settings():
    from thinkprobe.config import Config

    return Config.load().segment


def _reference_abbreviation(text, cut):
    """Abbreviations.holds over the whole prefix: the words before the cut end with an abbreviation
    of the config that does not end a sentence before the next word."""
    import re

    seg = _segment_settings()
    names = "|".join(re.escape(n) for n in sorted({*seg.abbreviations, *seg.final_abbreviations}, key=len, reverse=True))
    m = re.search(rf"(?<![\w.])({names})\.$", text[:cut].rstrip())
    if m is None:
        return False
    if m.group(1) in seg.abbreviations:
        return True
    if m.group(1) in seg.sentence_words and re.search(r"(?:\A|[.!?:;])\s*\Z", text[:m.start()]):
        return False
    following = text[cut:].split()
    word = re.match(r"[\w'’]+", following[0]).group() if following and re.match(r"[\w'’]+", following[0]) else None
    return word not in seg.sentence_starters


def _reference_openers(text, cut):
    """A cut right after opening brackets or quotation marks that follow a space (or open the text)
    moves before them."""
    import re

    m = re.search(r"(?:\A|\s)([(\[{\"'“‘«]+)\Z", text[:cut])
    return m.start(1) if m else cut


def _reference_formula(text, cut):
    """The last end mark before the cut (only spaces, brackets and operators between) is a factorial not
    followed by a capital or a quote, or an ellipsis followed by a comma or a closing bracket."""
    import re

    m = re.search(r"(\.\.\.|…|[.!?])[^\w.!?…]*\Z", text[:cut])
    if m is None:
        return False
    following = text[m.end(1):cut + 1].lstrip()[:1]
    if m.group(1) == "!":
        factorial = re.search(r"(?:\d|[)\]}]|(?<![^\W\d_])[A-Za-z])!!?\Z", text[:m.end(1)])
        return bool(factorial) and not (following.isupper() or following in ('"', "'", "“", "‘"))
    if m.group(1) == "?":  # the unknown of an equation
        return bool(re.search(r"=\s*\?\Z", text[:m.end(1)])) and not (following.isupper() or following in ('"', "'", "“", "‘"))
    if m.group(1) not in ("...", "…"):
        return False
    before, operators = text[:m.start(1)].rstrip(), "+-−=×/·<>≤≥≈"  # "1 + 2 + ... + 10"; "≈ 8.333... cm"
    if (following and following in ",)]}" + operators) or (before and before[-1] in operators):
        return True
    return following.islower() and bool(re.search(r"\d\.\d+\Z", before))


TRICKY = ("Use e.g. approx. 3 units. Then Dr. Who. So 1. first and 2. second, then a) this. "
          "Eq. 5 holds. We have $a. B$ and `x. Y` here. No. Really?! Fine... 我们。好！ z. (b) item. So n! / (r!(n-r)!) "
          "and 5! Then (1, 2, ..., 9) and {1,…, 3}. Wow! so. Done. (x) y = ? cm. z = ? Then w? no. So n!! and 7!! then. Wow!! Yes. "
          "So 1 + 2 + ... + 9 = 45... Then 0.333... cm and 0.5… so. Hmm... ok. x = 2... Then y.")


@pytest.mark.parametrize("text", [TRICKY, TRICKY * 40, TRICKY.replace(" ", "\n", 7)])
def test_fragments_equal_reference_on_tricky_text(text):
    assert fragment_spans(text, 0, len(text), 300) == _reference_fragment_spans(text, 0, len(text), 300)


def test_fragments_equal_reference_on_sample_traces():
    for line in SAMPLES.read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["response"]
        assert fragment_spans(text, 0, len(text)) == _reference_fragment_spans(text, 0, len(text))


@pytest.mark.realdata
def test_fragments_equal_reference_on_real_traces(shared_data):
    from thinkprobe.shared_data import real_corpus

    lines, _ = real_corpus(40)
    joined = []
    for line in lines:
        text = json.loads(line)["raw_text"]["response"]
        joined.append(text)
        assert fragment_spans(text, 0, len(text)) == _reference_fragment_spans(text, 0, len(text))
    # a degenerate one-line trace (30,000 characters: the reference is quadratic, 33 s at 100,000)
    one_line = " ".join(joined).replace("\n", " ")[:30_000]
    assert fragment_spans(one_line, 0, len(one_line)) == _reference_fragment_spans(one_line, 0, len(one_line))


def _reference_depth_scores(emb, window):
    """Hearst depth scores by climbing from every gap (quadratic on long monotone runs)."""
    n = len(emb)
    sims = []
    for g in range(n - 1):
        left = emb[max(0, g - window + 1):g + 1].sum(axis=0)
        right = emb[g + 1:min(n, g + 1 + window)].sum(axis=0)
        denom = np.sqrt((left * left).sum() * (right * right).sum())
        sims.append((left * right).sum() / denom if denom > 0 else 0.0)
    depth = []
    for g in range(n - 1):
        k = g
        while k > 0 and sims[k - 1] >= sims[k]:
            k -= 1
        j = g
        while j < n - 2 and sims[j + 1] >= sims[j]:
            j += 1
        depth.append((sims[k] - sims[g]) + (sims[j] - sims[g]))
    return np.array(depth)


@pytest.mark.parametrize("seed", range(6))
def test_depth_scores_equal_the_climbing_definition(seed):
    from thinkprobe.segment import depth_scores

    rng = np.random.default_rng(seed)
    n = 150
    emb = np.repeat(rng.normal(size=(n // 5, 8)), 5, axis=0) + rng.normal(scale=0.3 * (seed % 3), size=(n, 8))
    if seed == 5:
        emb = np.round(emb)  # ties: plateaus the climb walks over
        emb[::11] = 0.0
    emb = np.ascontiguousarray(emb, dtype=np.float64)
    np.testing.assert_allclose(depth_scores(emb, 3), _reference_depth_scores(emb, 3), rtol=0, atol=1e-12)


@pytest.mark.parametrize("char", ["!", "**", "(", "'", "=", "*=*."])
def test_a_long_punctuation_run_is_a_fragment_of_its_own(char):
    """A model's runaway '!!!!' or '****': spaCy's tokenizer splits such a run one character at a time
    in quadratic time (20,000 characters took 30 s and a longer one stalled a batch). A run of 200 or
    more is a fragment of its own, never read by spaCy; the text around it splits as it would alone."""
    from thinkprobe.segment import fragment_spans

    run = char * (10_000 // len(char))
    text = "Start here. " + run + "And then more. Wait, really!"
    spans = fragment_spans(text, 0, len(text))
    assert [text[a:b] for a, b in spans] == ["Start here.", run, "And then more.", "Wait, really!"]
    short = "Start here. " + char * 3 + " And then more."  # a short run is prose as before
    assert len(fragment_spans(short, 0, len(short))) <= 3


def test_a_markup_tag_alone_is_no_unit(config):
    """Thought Anchors' misalignment scenarios: '</SCRATCHPAD_REASONING>' and '</tool_use:email>' were
    Thought Units of their own. A tag alone merges like filler; a comparison is no tag."""
    text = ("<SCRATCHPAD_REASONING>\nI need to read the email. It asks to stop.\n</SCRATCHPAD_REASONING>\n"
            "<tool_use:email>\nto: x@y.com\n</tool_use:email>\nDone. So x < y and y > z.")
    got = units(text, config)
    assert got == ["<SCRATCHPAD_REASONING>\nI need to read the email.", "It asks to stop.",
                   "</SCRATCHPAD_REASONING>\n<tool_use:email>\nto: x@y.com", "</tool_use:email>\nDone.",
                   "So x < y and y > z."]


def test_a_question_mark_inside_a_bracketed_list_cuts_nothing():
    """BIG-Bench Mistake's word sorting writes an unknown order as '["argus" ? "avid"]': each '?' cut a
    unit mid-bracket. Outside a bracket a '?' still ends a question."""
    from thinkprobe.segment import fragment_spans

    text = 'We now have: (1) ["argus" ? "avid"] < (3) ["communicate" ? "metazoa" ? "merrill"]. Is that right? Yes.'
    assert [text[a:b] for a, b in fragment_spans(text, 0, len(text))] == [
        'We now have: (1) ["argus" ? "avid"] < (3) ["communicate" ? "metazoa" ? "merrill"].', "Is that right?", "Yes."]
    # a half-open interval or a question inside brackets still ends its question (a review's cases)
    text = "So x is in [0, 5). Is 5 included? No, it is excluded."
    assert [text[a:b] for a, b in fragment_spans(text, 0, len(text))] == [
        "So x is in [0, 5).", "Is 5 included?", "No, it is excluded."]
    text = "[Wait, is that right? Let me check the sum again.] So 12."
    assert len(fragment_spans(text, 0, len(text))) == 3
