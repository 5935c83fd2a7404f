"""Provider API responses and evaluation-harness samples saved as they come, turned into the plain
records detection reads (registered in thinkprobe.io.layouts' table):

- Anthropic Message Batches results (``custom_id`` + ``result``): a succeeded result's message, with the
  request's id; an errored, canceled or expired request is a skip that says which, and why;
- Google Gemini ``generateContent`` responses (REST camelCase or SDK snake_case), alone or in a batch
  output line (``key`` + ``response``): the parts marked ``thought`` are the reasoning (summaries of the
  model's thinking: marked summarised), the other text parts the answer; one record per candidate. A
  response that counts thinking tokens but returns no thought part is skipped as "reasoning not returned";
- chat completions with several choices (``n`` > 1): one record per choice (``:g<N>``), where only the
  first had been read;
- a streamed chat completion saved chunk by chunk: each chunk is a skip that says so (a piece of a
  response, not a response);
- vLLM offline ``RequestOutput`` objects saved as JSON (``prompt`` + ``outputs[].text``): one record per
  output;
- lm-evaluation-harness samples (``doc_id`` + ``resps``): lm-eval writes a generation once per filter of
  its task (gsm8k: strict-match, then flexible-extract), each line with that filter's grade; the
  generation is profiled once, under the file's first filter, and its records under later filters are
  skipped with a reason naming both. With ``repeats`` > 1 each repeat is a record of its own (``:g<N>``),
  ungraded (the metric is over all repeats).

Each expander takes (record, source, locator, state): `state` is a dict kept for one input file.
"""
from __future__ import annotations

from typing import Any, Iterator

from ..records import InputError
from .guess import HIDDEN_REASONING

__all__ = ["API_LAYOUTS", "cut_by_limit", "hidden_reasoning_tokens", "split_choices"]


def _get(node: Any, *keys: str) -> Any:
    """node[k1][k2]... for the first spelling of each key a dict has (camelCase or snake_case), else None."""
    for key in keys:
        if not isinstance(node, dict):
            return None
        spellings = key.split("|")
        node = next((node[k] for k in spellings if k in node), None)
    return node


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
        why = f"batch request {result['type']}" + (f": {error}" if isinstance(error, str) and error else "")
        yield locator, InputError(source, locator, "result", why)
        return
    out = {k: v for k, v in message.items() if k != "id"}
    out.update(layout="anthropic_batch", trace_id=str(record["custom_id"]), source_id=str(record["custom_id"]),
               response_id=message.get("id"),
               derived_from={"trace_id": "custom_id", "source_id": "custom_id", "model": "result.message.model"})
    yield locator, out


# ----------------------------------------------------------------------------- Gemini


def _gemini_body(record: dict) -> dict | None:
    body = record.get("response") if isinstance(record.get("response"), dict) and "key" in record else record
    candidates = body.get("candidates") if isinstance(body, dict) else None
    if isinstance(candidates, list) and candidates and all(
            isinstance(c, dict) and isinstance(_get(c, "content", "parts"), list) for c in candidates):
        return body
    return None


def is_gemini(record: dict) -> bool:
    return _gemini_body(record) is not None


def _expand_gemini(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    body = _gemini_body(record)
    prefix = "response." if body is not record else ""
    model = _get(body, "modelVersion|model_version")
    rid = record.get("key") if body is not record else _get(body, "responseId|response_id")
    thoughts = _get(body, "usageMetadata|usage_metadata", "thoughtsTokenCount|thoughts_token_count")
    candidates = body["candidates"]
    for g, cand in enumerate(candidates):
        parts = [p for p in _get(cand, "content", "parts") if isinstance(p, dict) and isinstance(p.get("text"), str)]
        here = f"{prefix}candidates[{g}].content.parts"
        reasoning = "\n\n".join(p["text"] for p in parts if p.get("thought") is True and p["text"].strip())
        answer = "".join(p["text"] for p in parts if p.get("thought") is not True)
        out = {k: v for k, v in record.items() if k not in ("candidates", "response")}
        out.update(layout="gemini", model=model, response=answer, generation=g if len(candidates) > 1 else None,
                   finish_reason=_get(cand, "finishReason|finish_reason"))
        if rid is not None:
            out["trace_id"] = str(rid) + (f":g{g}" if len(candidates) > 1 else "")
            out["source_id"] = str(rid)
        origin = {"response": f"{here}[not thought].text", "model": f"{prefix}modelVersion",
                  "trace_id": "key" if prefix else "responseId", "source_id": "key" if prefix else "responseId"}
        if reasoning:
            out["reasoning"], origin["reasoning"] = reasoning, f"{here}[thought].text (thought summary)"
        elif isinstance(thoughts, int) and thoughts > 0:
            yield locator, InputError(source, locator, here, f"{HIDDEN_REASONING}: the response counts {thoughts:,} "
                                      "thinking tokens but returns no thought part (request them with includeThoughts), "
                                      "so its text is the final answer only", model=model)
            continue
        out["derived_from"] = origin
        yield locator, {k: v for k, v in out.items() if v is not None}


# ----------------------------------------------------------------------------- several choices / outputs


def is_multi_choice(record: dict) -> bool:
    choices = record.get("choices")
    return isinstance(choices, list) and len(choices) > 1 and all(
        isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices)


def split_choices(record: dict, locator: int | str) -> Iterator:
    """One record per choice of a chat completion (`n` > 1), each with that choice alone and `:g<N>`
    after its id; a completion of one choice is itself."""
    if not is_multi_choice(record):
        yield locator, record
        return
    base = record.get("trace_id", record.get("id"))
    origin = dict(record.get("derived_from") or {})
    for g, choice in enumerate(record["choices"]):
        out = {**record, "choices": [choice], "generation": g, "layout": record.get("layout", "chat_choices")}
        if base is not None:
            out["trace_id"], out["source_id"] = f"{base}:g{g}", str(record.get("source_id", base))
            origin.setdefault("trace_id", "id")
            origin.setdefault("source_id", "id")
        # where detection reads choices[0], provenance names the choice read
        paths = [f"message.{k}" for k in choice["message"]] + [k for k in choice if k != "message"]
        out["derived_from"] = {**origin, "generation": f"choices[{g}]",
                               **{f"choices[0].{p}": f"choices[{g}].{p}" for p in paths}}
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
                   derived_from={"response": f"outputs[{g}].text", "trace_id": "request_id", "source_id": "request_id"})
        if rid is not None:
            out["trace_id"] = f"{rid}:g{g}" if len(outputs) > 1 else str(rid)
            out["source_id"] = str(rid)
        if len(outputs) > 1:
            out["generation"] = g
        yield locator, out


def is_stream_chunk(record: dict) -> bool:
    choices = record.get("choices")
    return record.get("object") == "chat.completion.chunk" or isinstance(choices, list) and bool(choices) and all(
        isinstance(c, dict) and isinstance(c.get("delta"), dict) and "message" not in c for c in choices)


def _expand_chunk(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    yield locator, InputError(source, locator, "choices[0].delta", "a streamed chunk: one piece of a response, not a "
                              "whole one; join each response's chunks into one record first, or replay the text with "
                              "thinkprobe watch", model=record.get("model") if isinstance(record.get("model"), str) else None)


# ----------------------------------------------------------------------------- lm-evaluation-harness


def is_lm_eval(record: dict) -> bool:
    return "doc_id" in record and isinstance(record.get("resps"), list) and ("filtered_resps" in record or "doc" in record)


_LM_EVAL_KEYS = frozenset({"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
                           "doc_hash", "prompt_hash", "target_hash"})


def _expand_lm_eval(record: dict, source: str, locator: int | str, state: dict) -> Iterator:
    filt = record.get("filter")
    if isinstance(filt, str):
        first = state.setdefault("lm_eval_filter", filt)
        if filt != first:
            if record["doc_id"] in state.setdefault("lm_eval_docs", set()):
                yield locator, InputError(source, locator, "filter", f"a generation lm-eval wrote again under another "
                                          f"filter: doc {record['doc_id']} under {filt!r}, profiled once under the "
                                          f"file's first filter {first!r}")
                return
        else:
            state.setdefault("lm_eval_docs", set()).add(record["doc_id"])
    resps = record["resps"]
    repeats = resps[0] if resps and isinstance(resps[0], list) else None
    if not repeats or len(repeats) < 2:
        yield locator, {**record, "layout": "lm_eval"}
        return
    # one record per repeat; the task's metrics (maj@k, pass@k) are over all repeats, so no repeat's grade
    metrics = {k: v for k, v in record.items() if k not in _LM_EVAL_KEYS}
    for g, text in enumerate(repeats):
        out = {k: v for k, v in record.items() if k in _LM_EVAL_KEYS}
        out.update(layout="lm_eval", response=text, generation=g, trace_id=f"{record['doc_id']}:g{g}",
                   source_id=str(record["doc_id"]), lm_eval_metrics=metrics,
                   derived_from={"response": f"resps[0][{g}]", "trace_id": "doc_id", "source_id": "doc_id"})
        yield locator, out


# ----------------------------------------------------------------------------- cut at a length limit

# (path, values): where an API says that an output stopped at its token limit
_LIMIT_STOPS = (("finish_reason", ("length", "MAX_TOKENS")), ("choices[0].finish_reason", ("length",)),
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
    ("chat_choices", is_multi_choice, _expand_choices),
    ("stream_chunk", is_stream_chunk, _expand_chunk),
    ("vllm_offline", is_vllm_output, _expand_vllm),
    ("lm_eval", is_lm_eval, _expand_lm_eval),
)


# (path, what it counts): where an API counts the reasoning tokens of an output
_REASONING_TOKENS = ("usage.completion_tokens_details.reasoning_tokens", "usage.output_tokens_details.reasoning_tokens")


def hidden_reasoning_tokens(record: dict, get_path) -> tuple[str, int] | None:
    """(field, count) where the record counts reasoning tokens (OpenAI's usage details): a record that
    holds no reasoning text then had its thinking hidden (o-series, GPT-5), and its text is the
    answer only. None when it counts none."""
    for path in _REASONING_TOKENS:
        found, value = get_path(record, path)
        if found and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return path, value
    return None
