"""Provider API responses and evaluation-harness samples saved as they come, turned into the plain
records detection reads (registered in thinkprobe.io.layouts' table):

- Anthropic Message Batches results (``custom_id`` + ``result``): a succeeded result's message, with the
  request's id; an errored, canceled or expired request is a skip that says which, and why;
- Google Gemini ``generateContent`` responses (REST camelCase or SDK snake_case), alone or in a batch
  output line (``key`` + ``response``): one record per candidate (detection reads its parts: thought
  parts are the reasoning, summaries, marked so); a blocked prompt or a candidate without text is a
  skip that says why;
- chat completions with several choices (``n`` > 1): one record per choice (``:g<N>`` after whatever id
  the record gets), where only the first had been read;
- a provider response a record keeps under one of its keys (``{"id": .., "model": .., "response": <a chat
  completion or an Anthropic Message>}``): read as if it stood alone, the record's own fields taking
  precedence (its id, model, question); the response's id is kept as ``response_id``, an id of last
  resort. The key stays, so ``--*-field`` paths into it still work. Two such keys are left as they are
  (which one is the trace is the user's choice: detection's error names what each holds);
- a streamed chat completion saved chunk by chunk (``chat.completion.chunk`` lines): the consecutive chunks
  of one ``id`` are joined into one completion (each choice's reasoning_content / reasoning deltas, then
  its content deltas, in order; finish_reason and usage from the last chunk that has them), read at the
  first chunk's line. A stream that ends before any finish_reason was cut off: a skip that says so, as
  is a chunk without an id. `finish_stream` gives the last stream of a file (formats, traces call it);
- vLLM offline ``RequestOutput`` objects saved as JSON (``prompt`` + ``outputs[].text``): one record per
  output;
- lm-evaluation-harness samples (``doc_id`` + ``resps``): lm-eval writes a generation once per filter of
  its task (gsm8k: strict-match, then flexible-extract), each line with that filter's grade; the
  generation (the same document and texts) is profiled once, under the first filter it comes with in
  the file, and its records under later filters are skipped with a reason naming both. With
  ``repeats`` > 1 each repeat is a record of its own (``:g<N>``), ungraded (the metrics, which lm-eval
  names in ``metrics`` and older files leave as the other numbers, are over all repeats: kept under
  ``lm_eval_metrics``). Older files name no filter: the same document and texts again is still one
  generation.

Each expander takes (record, source, locator, state): `state` is a dict kept for one input file. A record
that stands for one of several generations carries `part` (its number), which detection appends to its
trace id as ``:g<N>``, and `derived_from` maps the paths detection reads to the ones it came from.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Iterator

from ..records import InputError
from .guess import HIDDEN_REASONING

__all__ = ["API_LAYOUTS", "STREAM", "cut_by_limit", "finish_stream", "held_responses", "hidden_reasoning_tokens", "is_stream_chunk", "provider_object", "scalar_id", "split_choices"]


def _get(node: Any, *keys: str) -> Any:
    """node[k1][k2]... for the first spelling of each key a dict has (camelCase or snake_case), else None."""
    for key in keys:
        if not isinstance(node, dict):
            return None
        spellings = key.split("|")
        node = next((node[k] for k in spellings if k in node), None)
    return node


def scalar_id(value: Any) -> str | None:
    """An id a layout reads (a batch line's custom_id, a Gemini response's responseId) as text; None
    for anything that is no id (absent, null, a bool, an object, a list, empty text)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or isinstance(value, str) and not value.strip():
        return None
    return str(value)


# ----------------------------------------------------------------------------- Anthropic Message Batches


def is_anthropic_batch(record: dict) -> bool:
    result = record.get("result")
    return "custom_id" in record and isinstance(result, dict) and isinstance(result.get("type"), str) and (
        "message" in result or result["type"] in ("errored", "canceled", "expired"))


def _expand_anthropic_batch(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    result = record["result"]
    message = result.get("message")
    if result["type"] != "succeeded" or not isinstance(message, dict):
        error = _get(result, "error", "error", "message") or _get(result, "error", "message")
        why = (f"batch request {result['type']}" + (f": {error}" if isinstance(error, str) and error else "")
               if result["type"] != "succeeded" else "batch request succeeded but its result holds no message")
        yield locator, InputError(source, locator, "result", why, trace_id=scalar_id(record["custom_id"]))
        return
    out = {k: v for k, v in message.items() if k != "id"}
    out.update(layout="anthropic_batch", response_id=message.get("id"),
               derived_from={"trace_id": "custom_id", "source_id": "custom_id", "model": "result.message.model",
                             "content": "result.message.content", "content[": "result.message.content["})
    if scalar_id(record["custom_id"]) is not None:
        out["trace_id"] = out["source_id"] = scalar_id(record["custom_id"])
    yield locator, out


# ----------------------------------------------------------------------------- Gemini


def _gemini_body(record: dict) -> dict | None:
    """The generateContent response a record is (or, as a batch output line, holds under `response`)."""
    body = record.get("response") if isinstance(record.get("response"), dict) and "key" in record else record
    if not isinstance(body, dict):
        return None
    candidates = body.get("candidates")
    if isinstance(candidates, list) and candidates and all(
            isinstance(c, dict) and ("content" in c or _get(c, "finishReason|finish_reason")) for c in candidates):
        return body
    if candidates in (None, []) and _get(body, "promptFeedback|prompt_feedback", "blockReason|block_reason"):
        return body
    return None


def is_gemini(record: dict) -> bool:
    return _gemini_body(record) is not None


def _expand_gemini(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    """One record per candidate, each the response with that candidate alone (detection reads
    candidates[0].content.parts: thinkprobe.io.blocks.thought_parts); a batch line's response with the
    line's key as id. A blocked prompt, or a candidate without text, is a skip that says why."""
    body = _gemini_body(record)
    batch = body is not record
    prefix = "response." if batch else ""
    model = _get(body, "modelVersion|model_version")
    candidates = body.get("candidates") or []
    # the id its trace would get (detection's: a batch line's key, else the response's own id)
    rid = scalar_id(record["key"]) if batch else scalar_id(_get(body, "responseId|response_id"))
    if not candidates:
        block = _get(body, "promptFeedback|prompt_feedback", "blockReason|block_reason")
        yield locator, InputError(source, locator, f"{prefix}promptFeedback", f"the prompt was blocked ({block}): "
                                  "the response has no output", model=model if isinstance(model, str) else None,
                                  trace_id=rid)
        return
    thoughts = _get(body, "usageMetadata|usage_metadata", "thoughtsTokenCount|thoughts_token_count")
    for g, cand in enumerate(candidates):
        here = f"{prefix}candidates[{g}]"
        parts = _get(cand, "content", "parts")
        if not isinstance(parts, list) or not any(isinstance(p, dict) and isinstance(p.get("text"), str) for p in parts):
            stop = _get(cand, "finishReason|finish_reason")
            spent = (f"; its thinking took the whole output budget ({thoughts:,} thinking tokens, none returned)"
                     if stop == "MAX_TOKENS" and isinstance(thoughts, int) and thoughts > 0 else "")
            yield locator, InputError(source, locator, f"{here}.content", f"the candidate holds no text (finishReason "
                                      f"{stop}){spent}", model=model if isinstance(model, str) else None,
                                      trace_id=rid and (f"{rid}:g{g}" if len(candidates) > 1 else rid))
            continue
        out = {**body, "candidates": [cand], "layout": "gemini"}
        origin = {"candidates[0].": f"{here}."}
        if batch:  # the response's own fields, read from under the line's `response`
            origin.update({name: f"response.{name}" for k in body if k != "candidates" for name in (k, f"{k}.")})
            out.update(trace_id=str(record["key"]), source_id=str(record["key"]))
            origin.update(trace_id="key", source_id="key")
        if len(candidates) > 1:
            out["part"] = g
        out["derived_from"] = origin
        yield locator, out


# ----------------------------------------------------------------------------- a response under a key


def provider_object(value: Any) -> str | None:
    """What provider response `value` is, in words ("an OpenAI chat completion", "an Anthropic
    Message"), or None: a chat completion's choices each hold a message (and it names itself one, or
    each choice its finish_reason: inspect_ai's ModelOutput, with stop_reason, is not one); a Message
    is an assistant's, with a list of content blocks."""
    if not isinstance(value, dict):
        return None
    choices = value.get("choices")
    if isinstance(choices, list) and choices and all(isinstance(c, dict) and isinstance(c.get("message"), dict)
                                                     for c in choices) and (
            value.get("object") == "chat.completion" or all("finish_reason" in c for c in choices)):
        return "an OpenAI chat completion"
    if value.get("type") == "message" and value.get("role") == "assistant" and isinstance(value.get("content"), list):
        return "an Anthropic Message"
    return None


def held_responses(record: dict) -> dict[str, str]:
    """The record's keys that hold a provider response, with what each holds (`provider_object`)."""
    return {k: kind for k, v in record.items() if isinstance(k, str) and (kind := provider_object(v))}


def is_wrapped_response(record: dict) -> bool:
    return provider_object(record) is None and len(held_responses(record)) == 1


def _expand_wrapped(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    """The response under the record's key, read as if it stood alone, with the record's own fields
    over its own (one record per choice of a chat completion with several)."""
    key = next(iter(held_responses(record)))
    inner = record[key]
    moved = [k for k in inner if k not in record and k != "id"]
    origin = {name: f"{key}.{k}{name[len(k):]}" for k in moved for name in (k, f"{k}.", f"{k}[")}
    out = {**{k: inner[k] for k in moved}, **record, "layout": "wrapped_response"}
    if "response_id" not in record and "id" in inner:
        out["response_id"], origin["response_id"] = inner["id"], f"{key}.id"
    if "model" in record and isinstance(inner.get("model"), str):  # the response's own (Claude 4's: a summary)
        out["response_model"], origin["response_model"] = inner["model"], f"{key}.model"
    choices = out.get("choices") if "choices" in moved else None
    if not isinstance(choices, list) or len(choices) < 2:
        yield locator, {**out, "derived_from": origin}
        return
    for g, choice in enumerate(choices):  # several choices (n > 1): one record each, as alone
        yield locator, {**out, "choices": [choice], "part": g,
                        "derived_from": {"choices[0].": f"{key}.choices[{g}].", **origin}}


# ----------------------------------------------------------------------------- several choices / outputs


def is_multi_choice(record: dict) -> bool:
    choices = record.get("choices")
    return isinstance(choices, list) and len(choices) > 1 and all(
        isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices)


def split_choices(record: dict, locator: int | str) -> Iterator:
    """One record per choice of a chat completion (`n` > 1), each with that choice alone (`part`: its id
    gets `:g<N>`); a completion of one choice is itself."""
    if not is_multi_choice(record):
        yield locator, record
        return
    for g, choice in enumerate(record["choices"]):
        out = {**record, "choices": [choice], "part": g, "layout": record.get("layout", "chat_choices")}
        # where detection reads choices[0], provenance names the choice read
        out["derived_from"] = {**(record.get("derived_from") or {}), "choices[0].": f"choices[{g}]."}
        yield locator, out


def _expand_choices(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    yield from split_choices(record, locator)


def is_vllm_output(record: dict) -> bool:
    outputs = record.get("outputs")
    return "prompt" in record and isinstance(outputs, list) and bool(outputs) and all(
        isinstance(o, dict) and isinstance(o.get("text"), str) for o in outputs)


def _expand_vllm(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    outputs = record["outputs"]
    rid = record.get("request_id")
    for g, output in enumerate(outputs):
        out = {k: v for k, v in record.items() if k != "outputs"}
        out.update(layout="vllm_offline", response=output["text"], finish_reason=output.get("finish_reason"),
                   derived_from={"response": f"outputs[{g}].text", "finish_reason": f"outputs[{g}].finish_reason",
                                 "trace_id": "request_id", "source_id": "request_id"})
        if rid is not None and not isinstance(rid, (dict, list)):
            out["trace_id"] = out["source_id"] = str(rid)
        if len(outputs) > 1:
            out["part"] = g
        yield locator, out


STREAM = "stream_chunks"  # the per-file state key of the stream being joined


def is_stream_chunk(record: dict) -> bool:
    choices = record.get("choices")
    return record.get("object") == "chat.completion.chunk" or isinstance(choices, list) and bool(choices) and all(
        isinstance(c, dict) and isinstance(c.get("delta"), dict) and "message" not in c for c in choices)


def _expand_chunk(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    """Kept in `state` until the stream ends (another id, another kind of record, the end of the file)."""
    rid = scalar_id(record.get("id"))
    if rid is None:
        yield from finish_stream(source, state)
        yield locator, InputError(source, locator, "choices[0].delta", "a streamed chunk without an id: one piece of a "
                                  "response, not a whole one, and nothing says which response; join its chunks into "
                                  "one record first", model=record.get("model") if isinstance(record.get("model"), str) else None)
        return
    if state.get(STREAM) is not None and state[STREAM]["id"] != rid:
        yield from finish_stream(source, state)
    stream = state.setdefault(STREAM, {"id": rid, "first": locator, "last": locator, "chunks": 0, "meta": {}, "choices": {}})
    stream["last"], stream["chunks"] = locator, stream["chunks"] + 1
    stream["meta"].update({k: record[k] for k in ("model", "created", "system_fingerprint", "usage")
                           if record.get(k) is not None})
    for choice in record.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        index = choice["index"] if isinstance(choice.get("index"), int) and not isinstance(choice["index"], bool) else 0
        acc = stream["choices"].setdefault(index, {"reasoning_content": [], "reasoning": [], "content": [], "stop": None})
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        for key in ("reasoning_content", "reasoning", "content"):
            if isinstance(delta.get(key), str):
                acc[key].append(delta[key])
        if choice.get("finish_reason") is not None:
            acc["stop"] = choice["finish_reason"]


def finish_stream(source: str, state: dict) -> Iterator:
    """The completion the chunks kept in `state` make (one record per choice), or the skip that says why
    they make none; nothing when no stream is pending."""
    stream = state.pop(STREAM, None)
    if stream is None:
        return
    first, model = stream["first"], stream["meta"].get("model")
    where = f"{stream['chunks']} chunk{'s' if stream['chunks'] > 1 else ''}" + (
        f", {first} to {stream['last']}" if stream["chunks"] > 1 else "")
    if not stream["choices"] or all(acc["stop"] is None for acc in stream["choices"].values()):
        yield first, InputError(source, first, "choices[0].finish_reason", f"a streamed response cut off ({where}): no "
                                "chunk gives a finish_reason, so it is not a whole response" if stream["choices"] else
                                f"a streamed response without text ({where})",
                                model=model if isinstance(model, str) else None, trace_id=stream["id"])
        return
    choices = sorted(stream["choices"].items())
    for g, (index, acc) in enumerate(choices):
        message = {"role": "assistant", **{k: "".join(acc[k]) for k in ("reasoning_content", "reasoning") if acc[k]},
                   "content": "".join(acc["content"]) if acc["content"] else None}
        out = {"id": stream["id"], "object": "chat.completion", **stream["meta"], "layout": STREAM,
               "choices": [{"index": index, "message": message, "finish_reason": acc["stop"]}],
               "derived_from": {"choices[0].message.": f"choices[{index}].delta.", "choices[0].": f"choices[{index}]."},
               "stream": {"chunks": stream["chunks"], "first": first, "last": stream["last"]}}
        if len(choices) > 1:
            out["part"] = g
        yield first, out


# ----------------------------------------------------------------------------- lm-evaluation-harness


def is_lm_eval(record: dict) -> bool:
    return "doc_id" in record and isinstance(record.get("resps"), list) and ("filtered_resps" in record or "doc" in record)


# The keys of an lm-eval sample that are no metric (older files name no `metrics` list: every other number is one)
_LM_EVAL_STRUCTURE = frozenset({"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter",
                                "metrics", "doc_hash", "prompt_hash", "target_hash"})


def _expand_lm_eval(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    # the same document and generations again: written once per filter (named or, in older files, not)
    key = hashlib.sha1(json.dumps([record["doc_id"], record.get("doc"), record["resps"]], sort_keys=True, default=str)
                       .encode("utf-8", "surrogatepass")).hexdigest()
    filt = record.get("filter") if isinstance(record.get("filter"), str) else None
    seen = state.setdefault("lm_eval_generations", {})
    if key in seen:
        doc = str(record["doc_id"])[:80]
        yield locator, InputError(source, locator, "filter" if filt else "resps", (
            f"a generation lm-eval wrote again under another filter: doc {doc}"
            + (f" under {filt!r}" if filt else " (this record names no filter)") + ", profiled once under "
            + (f"the first filter it came with, {seen[key]!r}" if seen[key] else
               "its first record (which names no filter), with that record's grade")))
        return
    seen[key] = filt
    resps = record["resps"]
    repeats = resps[0] if resps and isinstance(resps[0], list) else None
    if not repeats or len(repeats) < 2:
        yield locator, {**record, "layout": "lm_eval"}
        return
    # one record per repeat; the task's metrics (maj@k, pass@k) are over all repeats, so no repeat's grade
    named = record.get("metrics")
    metrics = ({k: record[k] for k in map(str, named) if k in record} if isinstance(named, list) else
               {k: v for k, v in record.items() if k not in _LM_EVAL_STRUCTURE and isinstance(v, (int, float))})
    for g, text in enumerate(repeats):
        out = {k: v for k, v in record.items() if k not in metrics and k not in ("resps", "filtered_resps")}
        out.update(layout="lm_eval", response=text, part=g, lm_eval_metrics=metrics,
                   derived_from={"response": f"resps[0][{g}]"})
        yield locator, out


# ----------------------------------------------------------------------------- cut at a length limit

# (path, values): where an API says that an output stopped at its token limit
_LIMIT_STOPS = (("finish_reason", ("length",)), ("choices[0].finish_reason", ("length",)),
                ("candidates[0].finishReason", ("MAX_TOKENS",)), ("candidates[0].finish_reason", ("MAX_TOKENS",)),
                ("output.choices[0].stop_reason", ("max_tokens",)),
                ("stop_reason", ("max_tokens",)), ("incomplete_details.reason", ("max_output_tokens",)),
                ("done_reason", ("length",)))  # done_reason: Ollama


def cut_by_limit(record: dict, get_path) -> str | None:
    """Where the record says that its output stopped at a token limit (chat completions' finish_reason
    "length", Anthropic's stop_reason "max_tokens", a Responses object's incomplete_details, Gemini's
    MAX_TOKENS), as "field=value"; None when it says nothing of the kind."""
    for path, values in _LIMIT_STOPS:
        found, value = get_path(record, path)
        if found and value in values:
            return f"{path}={value}"
    return None


API_LAYOUTS = (
    ("anthropic_batch", is_anthropic_batch, _expand_anthropic_batch),
    ("gemini", is_gemini, _expand_gemini),
    ("wrapped_response", is_wrapped_response, _expand_wrapped),
    ("chat_choices", is_multi_choice, _expand_choices),
    ("stream_chunk", is_stream_chunk, _expand_chunk),
    ("vllm_offline", is_vllm_output, _expand_vllm),
    ("lm_eval", is_lm_eval, _expand_lm_eval),
)


# Where an API counts the reasoning tokens of an output
_REASONING_TOKENS = ("usage.completion_tokens_details.reasoning_tokens", "usage.output_tokens_details.reasoning_tokens",
                     "usageMetadata.thoughtsTokenCount", "usage_metadata.thoughts_token_count",  # OpenAI, Gemini
                     "reasoning_tokens")  # a record's own count (tts_knowledge's gpt-5-mini)


def hidden_reasoning_tokens(record: dict, get_path) -> tuple[str, int] | None:
    """(field, count) where the record counts reasoning tokens (OpenAI's usage details, Gemini's usage
    metadata): a record that holds no reasoning text then had its thinking hidden (o-series, GPT-5;
    Gemini without includeThoughts), and its text is the answer only. None when it counts none."""
    for path in _REASONING_TOKENS:
        found, value = get_path(record, path)
        if found and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return path, value
    return None
