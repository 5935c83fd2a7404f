"""Reasoning and answers kept in typed pieces: Anthropic and Mistral content blocks, OpenAI Responses
output items, inspect_ai content, OpenRouter's ``reasoning_details``, a chat turn's reasoning key.
Several pieces of one reasoning are joined into one text (provenance ``joined`` says how), and so are
an answer's text pieces (Anthropic splits a cited answer into several text blocks), so that no part
of either is dropped. Used by thinkprobe.io.detect, which tries these places in its order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

__all__ = ["Found", "ENCRYPTED", "BLOCK_SEPARATOR", "TURN_REASONING_KEYS", "SUMMARY_FIELD", "joined",
           "typed_blocks", "thought_parts", "field_candidates", "turn_candidates"]


# Why a record holds no reasoning to profile although it has a place for it.
ENCRYPTED = "reasoning is encrypted or redacted only (no visible text): nothing to profile"


# Several pieces of one reasoning (content blocks, summary parts) are joined into one text with this.
BLOCK_SEPARATOR = "\n\n"


TURN_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


# thought_summary, thoughtSummary, Responses' reasoning summary parts, a layout's "(thought summary)"
SUMMARY_FIELD = re.compile(r"(?:^|[.\]_ ])(?i:summary)\b|[a-z]Summary\b")


@dataclass(frozen=True)
class Found:
    """Where the reasoning text is: a field path, its text, the fields a separate answer may be in,
    whether the place is a dedicated one (a reasoning field, thinking blocks, a chat turn's reasoning
    key, a field the user named) and, when several pieces were joined into one text, how. ``empty``
    marks a dedicated place that is present but holds no text (null, "", or only encrypted /
    redacted blocks when ``reason`` says so). ``answer``: (name, text) of an answer joined from
    several pieces, the name being one of ``answer_fields``; ``summarised``: the API says the text is
    a summary of the thinking, whatever its field is called."""

    path: str
    text: Any
    answer_fields: tuple[str, ...]
    joined: dict | None = None
    dedicated: bool = False
    empty: bool = False
    reason: str = "empty reasoning"
    answer: tuple[str, str] | None = None
    summarised: bool = False  # the text is a summary of the model's thinking (Gemini's thought parts)


def joined(path: str, pieces: list[tuple[str, str]], separator: str) -> tuple[str, str, dict | None]:
    """(field, text, joined provenance): one piece stays itself, several are joined with ``separator``."""
    if len(pieces) == 1:
        return pieces[0][0], pieces[0][1], None
    text = separator.join(piece for _, piece in pieces)
    info = {"field": path, "parts": len(pieces), "separator": separator}
    if all(SUMMARY_FIELD.search(p) for p, _ in pieces):  # a Responses summary in several parts
        info["from"] = pieces[0][0].rsplit("[", 1)[0]  # output[0].summary: what the parts are of
    return path, text, info


def _answer(parts: list[tuple[int, str, str]]) -> tuple[tuple[str, ...], tuple[str, str] | None]:
    """(answer fields, joined answer) of an answer's text pieces (block index, path, text): one piece is
    its own field; several are one text, pieces of adjacent blocks run on (a cited answer's blocks
    split sentences) and others are separated by a blank line, named by the blocks they came from."""
    if len(parts) <= 1:
        return tuple(p for _, p, _ in parts), None
    text = parts[0][2]
    for (before, _, _), (index, _, piece) in zip(parts, parts[1:]):
        text += ("" if index - before <= 1 else BLOCK_SEPARATOR) + piece
    name = _joined_name([p for _, p, _ in parts])
    return (name,), (name, text)


_LAST_INDEX = re.compile(r"^(.*)\[(\d+)\]\.text$")


def _joined_name(paths: list[str]) -> str:
    """One name for pieces joined: content[1].text, content[2].text -> content[1,2].text (the pieces'
    common place with their indices); pieces from different places are named one by one, with "+"."""
    found = [_LAST_INDEX.match(p) for p in paths]
    if all(found) and len({m.group(1) for m in found}) == 1:
        return f"{found[0].group(1)}[{','.join(m.group(2) for m in found)}].text"
    return "+".join(paths)


def _thinking_texts(block: dict, at: str) -> list[tuple[str, str]]:
    """A thinking block's text: Anthropic's string, or Mistral's list of text chunks."""
    value = block.get("thinking")
    if isinstance(value, str):
        return [(f"{at}.thinking", value)]
    if isinstance(value, list):
        return [(f"{at}.thinking[{k}].text", c["text"]) for k, c in enumerate(value)
                if isinstance(c, dict) and isinstance(c.get("text"), str)]
    return []


def typed_blocks(items: list, path: str) -> Found | None | bool:
    """Reasoning in a list of typed blocks: Anthropic ``{"type": "thinking", "thinking": ...}`` content
    blocks (Mistral's ``thinking`` a list of text chunks), OpenAI Responses ``{"type": "reasoning",
    "summary"/"content": [{"text": ...}]}`` output items, inspect_ai ``{"type": "reasoning",
    "reasoning": ..., "redacted": false}`` content. Several pieces are joined; so are the answer's text
    blocks / output_text parts. Returns None when ``items`` are not typed blocks, False when they are but
    hold no reasoning, and an empty `Found` (reason ENCRYPTED) when their reasoning is encrypted,
    redacted or omitted only (Anthropic's thinking "" with a signature: display "omitted")."""
    if not items or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in items):
        return None
    pieces: list[tuple[str, str]] = []
    answers: list[tuple[int, str, str]] = []
    hidden = None  # the first encrypted / redacted reasoning block
    for i, block in enumerate(items):
        kind, at = block["type"], f"{path}[{i}]"
        if kind == "thinking":
            texts = [(p, t) for p, t in _thinking_texts(block, at) if t.strip()]
            pieces.extend(texts)
            if not texts and block.get("signature"):  # its thinking omitted: signed, not shown
                hidden = hidden or at
        elif kind == "redacted_thinking":
            hidden = hidden or at
        elif kind == "reasoning" and isinstance(block.get("reasoning"), str):  # inspect_ai ContentReasoning
            if not block.get("redacted"):
                pieces.append((f"{at}.reasoning", block["reasoning"]))
            elif isinstance(block.get("summary"), str) and block["summary"].strip():
                pieces.append((f"{at}.summary", block["summary"]))
            else:
                hidden = hidden or at
        elif kind == "reasoning":
            # raw reasoning text (content) when the API returns it, else the summary
            before = len(pieces)
            for part_list in ("content", "summary"):
                parts = block.get(part_list)
                texts = [(f"{at}.{part_list}[{k}].text", p["text"]) for k, p in enumerate(parts or ())
                         if isinstance(p, dict) and isinstance(p.get("text"), str)] if isinstance(parts, list) else []
                if texts:
                    pieces.extend(texts)
                    break
            if len(pieces) == before and block.get("encrypted_content"):
                hidden = hidden or f"{at}.encrypted_content"
        elif kind == "text" and isinstance(block.get("text"), str):
            answers.append((i, f"{at}.text", block["text"]))
        elif kind == "message" and isinstance(block.get("content"), list):
            answers.extend((i, f"{at}.content[{k}].text", part["text"]) for k, part in enumerate(block["content"])
                           if isinstance(part, dict) and part.get("type") == "output_text"
                           and isinstance(part.get("text"), str))
    answer_fields, answer = _answer(answers)
    pieces = [(p, t) for p, t in pieces if t.strip()]
    if not pieces:
        if hidden:
            return Found(hidden, None, answer_fields, dedicated=True, empty=True, reason=ENCRYPTED, answer=answer)
        return False
    field, text, info = joined(path, pieces, BLOCK_SEPARATOR)
    return Found(field, text, answer_fields, info, dedicated=True, answer=answer)


def thought_parts(parts: list, path: str) -> tuple[Found, bool] | None:
    """Gemini's ``candidates[].content.parts``: the parts marked ``thought`` are the reasoning (summaries
    of the model's thinking: marked so), the other text parts the answer. (candidate, strong): the
    thoughts joined, or without any the text alone (weak, as an untagged output); None when `parts`
    hold no text."""
    if not parts or not all(isinstance(p, dict) for p in parts):
        return None
    texts = [(k, f"{path}[{k}].text", p["text"], p.get("thought") is True) for k, p in enumerate(parts)
             if isinstance(p.get("text"), str)]
    thoughts = [(at, text) for _, at, text, thought in texts if thought and text.strip()]
    answers = [(k, at, text) for k, at, text, thought in texts if not thought]
    answer_fields, answer = _answer(answers)
    if thoughts:
        field, text, info = joined(path, thoughts, BLOCK_SEPARATOR)
        return Found(field, text, answer_fields, info, dedicated=True, answer=answer, summarised=True), True
    if answers:
        return Found(answer[0] if answer else answers[0][1], answer[1] if answer else answers[0][2], ()), False
    return None


def field_candidates(value, path: str) -> Iterator[tuple[Found, bool]]:
    """The candidate a field's value at `path` gives: its reasoning (strong) when it is a list of
    typed blocks, the value itself (weak) when it is not typed blocks, none when the blocks hold no
    reasoning."""
    blocks = typed_blocks(value, path) if isinstance(value, list) else None
    if blocks:
        yield blocks, True
    elif blocks is None:
        yield Found(path, value, ()), False


def _reasoning_details(turn: dict, prefix: str, content_path: str) -> Found | None:
    """OpenRouter's ``reasoning_details`` where its ``reasoning`` string is missing or null: the text or
    summary entries joined, or an empty Found (ENCRYPTED) when they are encrypted only."""
    details = turn.get("reasoning_details")
    if not isinstance(details, list) or not details or isinstance(turn.get("reasoning"), str) and turn["reasoning"].strip():
        return None
    pieces, hidden = [], None
    for k, d in enumerate(details):
        if not isinstance(d, dict):
            continue
        key = {"reasoning.text": "text", "reasoning.summary": "summary"}.get(str(d.get("type")))
        if key and isinstance(d.get(key), str) and d[key].strip():
            pieces.append((f"{prefix}.reasoning_details[{k}].{key}", d[key]))
        elif d.get("type") == "reasoning.encrypted":
            hidden = hidden or f"{prefix}.reasoning_details[{k}]"
    if pieces:
        field, text, info = joined(f"{prefix}.reasoning_details", pieces, BLOCK_SEPARATOR)
        return Found(field, text, (content_path,), info, dedicated=True)
    if hidden:
        return Found(hidden, None, (content_path,), dedicated=True, empty=True, reason=ENCRYPTED)
    return None


def turn_candidates(turn: dict, prefix: str) -> Iterator[tuple[Found, bool]]:
    """A chat turn's reasoning: its reasoning key (a null one: none, its content the answer),
    OpenRouter's reasoning_details, then what its content holds."""
    content_key = "content" if "content" in turn else "value"
    content_path = f"{prefix}.{content_key}"
    if (details := _reasoning_details(turn, prefix, content_path)) is not None:
        yield details, True
    for key in TURN_REASONING_KEYS:
        if key not in turn:
            continue
        value = turn[key]
        if isinstance(value, str) and value.strip():
            yield Found(f"{prefix}.{key}", value, (content_path,), dedicated=True), True
        elif value is None or isinstance(value, str):  # reasoning_content: null -> content is the answer
            yield Found(f"{prefix}.{key}", None, (content_path,), dedicated=True, empty=True), True
    yield from field_candidates(turn.get(content_key), content_path)
