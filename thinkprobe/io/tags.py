"""Reasoning inside tags (<think>, <thinking>, gpt-oss channels ...): the tag table, and splitting a
text into its reasoning and answer parts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TAG_PAIRS", "OSS_ANALYSIS", "OSS_FINAL", "OSS_BARE_ANALYSIS", "OSS_BARE_FINAL", "S1_THINK", "S1_ANSWER",
           "S1_BARE_THINK", "FINAL_MARK", "LEADING_TOKENS", "TRAILING_TOKENS", "END_OF_TURN", "SPECIAL_TOKEN", "Split", "split_tags", "trim",
           "reasoning_blocks", "answer_parts"]


TAG_PAIRS = (
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"),
    ("<thought>", "</thought>"),
    ("<|begin_of_thought|>", "<|end_of_thought|>"),
    ("◁think▷", "◁/think▷"),
    ("[THINK]", "[/THINK]"),
)


OSS_ANALYSIS = "<|channel|>analysis<|message|>"


OSS_FINAL = "<|channel|>final<|message|>"


# gpt-oss output decoded with special tokens skipped: "analysis<reasoning>assistantfinal<answer>".
OSS_BARE_ANALYSIS, OSS_BARE_FINAL = "analysis", "assistantfinal"


# s1 / s1.1 (budget forcing): "<|im_start|>think\n<reasoning><|im_start|>answer\n<answer>". Decoded with
# special tokens skipped the markers are bare lines, "think\n<reasoning>\nanswer\n<answer>" (MiP-Overthinking's
# s1.1 files): the bare form is read only when the text opens with a line that is exactly "think".
S1_THINK, S1_ANSWER = "<|im_start|>think", "<|im_start|>answer"
S1_BARE_THINK = "think"
_S1_BARE_OPEN = re.compile(r"\s*think[ \t]*\n")
_S1_BARE_ANSWER = re.compile(r"\n[ \t]*answer[ \t]*(?:\n|\Z)")


# Chat-template tokens that often survive at the edges of a span; they are not the model's words. The answer
# tags of R1-Zero-style outputs ("<think>...</think> <answer>42</answer>") are format, not answer, too.
LEADING_TOKENS = ("<|begin_of_solution|>", "<answer>")


# a chat template's end of turn: a text closed by one was ended by the model itself, not cut off (Qwen3-8B on
# tts_knowledge: "<think>... Answer: I don't know.<|im_end|>", never closing its think block)
END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<｜end▁of▁sentence｜>", "<|end|>", "</s>")
TRAILING_TOKENS = ("<|end_of_solution|>", *END_OF_TURN, "<|return|>", "</answer>")


# Any chat-template special token: <|im_end|>, <|eot_id|>, <|endoftext|>, DeepSeek's <｜end▁of▁sentence｜>, </s>.
# Trimmed from the edges of every span (trim) and never inside a Thought Unit (thinkprobe.segment cuts there).
SPECIAL_TOKEN = re.compile(r"<\|[A-Za-z0-9_.:-]{1,40}\|>|<｜[^｜\s<>]{1,40}｜>|</s>")
_SPECIAL_AT_END = re.compile(rf"(?:{SPECIAL_TOKEN.pattern})\Z")


@dataclass(frozen=True)
class Split:
    """Where reasoning and answer lie inside one text, before whitespace trimming."""

    tag: str | None
    reasoning: tuple[int, int]
    answer: tuple[int, int] | None
    open_tag_missing: bool = False
    truncated: bool = False


def split_tags(text: str) -> Split:
    """Find the reasoning span by inline tags; without tags the whole text is the reasoning, but for
    a closing "#### <answer>" (GSM8K's convention) or a last line "The answer is: <answer>"
    (WizardMath's), which is the answer.

    >>> text = "2 + 3 = 5.\\nSo she has 5 apples.\\n#### 5 "
    >>> s = split_tags(text); s.tag, text[slice(*s.reasoning)], text[slice(*s.answer)]
    (None, '2 + 3 = 5.\\nSo she has 5 apples.\\n', '5 ')
    >>> split_tags("#### Notes\\nJust a heading above.").answer is None
    True
    >>> text = "So $x = 0.15$.\\n\\nThe answer is: 0.15.\\n\\n"
    >>> s = split_tags(text); text[slice(*s.reasoning)], text[slice(*s.answer)]
    ('So $x = 0.15$.\\n', '0.15.')
    """
    split = _split_gpt_oss(text) or _split_s1(text) or _split_paired_tags(text)
    if split:
        return split
    lead = len(text) - len(text.lstrip())
    final = text.find(OSS_BARE_FINAL)
    if text.startswith(OSS_BARE_ANALYSIS, lead) and final > lead:
        start = lead + len(OSS_BARE_ANALYSIS)
        return Split(OSS_BARE_ANALYSIS, (start, final), (final + len(OSS_BARE_FINAL), len(text)))
    mark = text.rfind(FINAL_MARK)
    if mark > 0 and text[mark - 1].isspace() and text[:mark].strip():
        rest = text[mark + len(FINAL_MARK):]
        answer = rest.strip()
        if answer and "\n" not in answer:
            return Split(None, (0, mark), (len(text) - len(rest.lstrip()), len(text)))
    line = ANSWER_LINE.search(text)
    if line and text[:line.start()].strip():
        return Split(None, (0, line.start()), line.span(1) if line.group(1) is not None else line.span(2))
    return Split(None, (0, len(text)), None)


# GSM8K's answer mark, which models trained on it (Abel, WizardMath, MetaMath: ReasonEval's outputs) end
# their untagged chain of thought with: "#### 5", on a line of its own or after the last sentence. Read
# as the answer when nothing but that answer, on one line, follows it.
FINAL_MARK = "####"

# WizardMath's and MetaMath's closing line (ReasonEval's WizardMath outputs): "The answer is: 0.15." on a
# line of its own, the last of the text, or PRM800K's closing step "# Answer" and the answer on the
# line after it; read as the answer as "####" is. MR-BEN's closing step "Solution: Choice_B" is the
# answer too ("Solution: None of the choices ..." as well), kept whole (group 2: the option is read from it).
ANSWER_LINE = re.compile(r"\n[ \t]*(?:(?:The answer is:|#[ \t]*Answer[ \t]*\n\s*)[ \t]*(\S[^\n]*?)"
                         r"|(Solution:[ \t]*\S[^\n]*?))\s*\Z")


def _split_gpt_oss(text: str) -> Split | None:
    begin = text.find(OSS_ANALYSIS)
    if begin < 0:
        return None
    start = begin + len(OSS_ANALYSIS)
    final = text.find(OSS_FINAL, start)
    limit = final if final >= 0 else len(text)
    end = text.rfind("<|end|>", start, limit)
    if final >= 0:
        if end < 0:  # no <|end|>: stop at the "<|start|>assistant" header of the final message
            header = text.rfind("<|start|>", start, final)
            end = header if header >= 0 else final
        return Split(OSS_ANALYSIS, (start, end), (final + len(OSS_FINAL), len(text)))
    if end < 0:
        return Split(OSS_ANALYSIS, (start, len(text)), None, truncated=True)
    return Split(OSS_ANALYSIS, (start, end), None)


def _split_s1(text: str) -> Split | None:
    """s1 / s1.1's think / answer markers, raw (<|im_start|>think) or bare (a first line "think")."""
    begin = text.find(S1_THINK)
    if begin >= 0:
        start = begin + len(S1_THINK)
        answer = text.find(S1_ANSWER, start)
        if answer < 0:
            return Split(S1_THINK, (start, len(text)), None, truncated=True)
        return Split(S1_THINK, (start, answer), (answer + len(S1_ANSWER), len(text)))
    opening = _S1_BARE_OPEN.match(text)
    if not opening:
        return None
    marker = _S1_BARE_ANSWER.search(text, opening.end() - 1)
    if marker is None:
        return Split(S1_BARE_THINK, (opening.end(), len(text)), None, truncated=True)
    return Split(S1_BARE_THINK, (opening.end(), marker.start()), (marker.end(), len(text)))


# Code: a ``` or ~~~ fence (closed, or running to the end of the text where `closed` is false) or an inline
# `code span` of one or two backticks, which ends within its paragraph.
_CODE = re.compile(r"(```|~~~).*?(?:\1|(?P<end>\Z))|(?<!`)(`{1,2})(?!`)(?:[^`\n]|\n(?![ \t]*\n))+?(?<!`)\3(?!`)",
                   re.DOTALL)


def _in_code(text: str, start: int = 0, end: int | None = None, closed: bool = True):
    """A test of whether a position of text[start:end] lies inside code (_CODE)."""
    spans = [(m.start(), m.end()) for m in _CODE.finditer(text, start, len(text) if end is None else end)
             if not (closed and m.group("end") is not None)]
    return lambda i: any(a <= i < b for a, b in spans)


def _find_tag(text: str, tag: str, last: bool, in_code) -> int:
    """The first (last) position of tag in text outside code; -1 when none."""
    i = text.rfind(tag) if last else text.find(tag)
    while i >= 0 and in_code(i):
        i = text.rfind(tag, 0, i) if last else text.find(tag, i + 1)
    return i


def _split_paired_tags(text: str) -> Split | None:
    # The style whose first tag comes earliest wins; a prompt before the opening tag is skipped. A tag
    # quoted in code ("`<think>`", a fenced example) is text: where a style's tags are all in code, the
    # style is absent; an opening outside code with no closing outside it keeps the last closing (a stray
    # backtick before the real one).
    best, in_code = None, (_in_code(text) if "`" in text or "~~~" in text else lambda i: False)
    for opening, closing in TAG_PAIRS:
        o, c = _find_tag(text, opening, False, in_code), _find_tag(text, closing, True, in_code)
        if o >= 0 and c < o + len(opening):
            c = text.rfind(closing)
        if o < 0 and c < 0:
            continue
        first = o if o >= 0 else c
        if best is None or first < best[0]:
            best = (first, opening, closing, o, c)
    if best is None:
        return None
    _, opening, closing, o, c = best
    if o >= 0 and c >= o + len(opening):  # first opening .. last closing: nested/repeated tags stay inside
        return Split(opening, (o + len(opening), c), (c + len(closing), len(text)))
    if o >= 0:  # cut off at a length limit, unless the model ended its turn itself (an end token last)
        return Split(opening, (o + len(opening), len(text)), None, truncated=not text.rstrip().endswith(END_OF_TURN))
    return Split(opening, (0, c), (c + len(closing), len(text)), open_tag_missing=True)


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink [start, end) so it starts and ends on a character of the model's own text."""
    while True:
        before = (start, end)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        for token in LEADING_TOKENS:
            if text.startswith(token, start, end):
                start += len(token)
        for token in TRAILING_TOKENS:
            if end - start >= len(token) and text.endswith(token, start, end):
                end -= len(token)
        lead = SPECIAL_TOKEN.match(text, start, end)
        if lead:
            start = lead.end()
        tail = _SPECIAL_AT_END.search(text, max(start, end - 48), end)
        if tail:
            end = tail.start()
        if (start, end) == before:
            return start, end


# A block the model tags as reasoning inside what follows its thinking: <think>, <thinking>, <reasoning>,
# <thought>, <scratchpad>, <SCRATCHPAD_REASONING> (agentic scenarios ask the model to reason there before
# acting), any case; its name, case as written, closes it. A tag of another name (<ThinkingIndicator> in
# code), one never closed (an answer that mentions "<thinking> tags") or one inside code (a ``` or ~~~
# fence, an inline `code span`, which ends within its paragraph) is text.
_REASONING_OPEN = re.compile(r"<((?i:think|thinking|thoughts?|reasoning|scratchpad|scratchpad_reasoning))>")


def reasoning_blocks(text: str, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """The tagged reasoning blocks inside text[start:end], in order: (opening tag start, content start,
    content end, closing tag end); only closed blocks, outside code (fences, inline code spans).

    >>> t = "Sent.<SCRATCHPAD_REASONING>why</SCRATCHPAD_REASONING> Done."
    >>> [t[b:c] for _, b, c, _ in reasoning_blocks(t, 0, len(t))]
    ['why']
    >>> reasoning_blocks("Wrap it in <thinking> tags.", 0, 27), reasoning_blocks("```<think>x</think>```", 0, 22)
    ([], [])
    >>> reasoning_blocks("Use `<think>x</think>`.", 0, 23), reasoning_blocks("~~~\\n<think>x</think>\\n~~~", 0, 24)
    ([], [])
    """
    in_code = _in_code(text, start, end, closed=False)  # an unclosed fence runs to the end

    out, pos = [], start
    while True:
        m = _REASONING_OPEN.search(text, pos, end)
        if m is None:
            return out
        if in_code(m.start()):
            pos = m.end()
            continue
        close = text.find(f"</{m.group(1)}>", m.end(), end)
        while close >= 0 and in_code(close):  # a closing tag quoted in code closes nothing
            close = text.find(f"</{m.group(1)}>", close + 1, end)
        if close < 0:
            return out
        out.append((m.start(), m.end(), close, close + len(m.group(1)) + 3))
        pos = close + len(m.group(1)) + 3


def answer_parts(text: str, start: int, end: int) -> list[tuple[str, int, int]]:
    """(name, start, end) of the parts of an answer span: "answer" pieces and, between them, the blocks
    it tags as reasoning (QwQ's <SCRATCHPAD_REASONING> after its </think> in an agentic scenario) as
    "reasoning", in text order, each trimmed, tags left out. Read in the reasoning's own field only, so
    that every section of one name reads one text."""
    parts, pos = [], start
    for opening, a, b, closing in reasoning_blocks(text, start, end):
        for name, s, e in (("answer", pos, opening), ("reasoning", a, b)):
            s, e = trim(text, s, e)
            if s < e:
                parts.append((name, s, e))
        pos = closing
    s, e = trim(text, pos, end)
    return parts + [("answer", s, e)] if s < e else parts
