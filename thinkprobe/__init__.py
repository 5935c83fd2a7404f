"""ThinkProbe: non-generative profiler of LLM reasoning traces.

    >>> import thinkprobe
    >>> run = thinkprobe.profile("traces.jsonl", "out/")      # doctest: +SKIP
    >>> run.profiles.groupby("model").mean(numeric_only=True)  # doctest: +SKIP

The API (thinkprobe.api) is imported on first use, so `import thinkprobe` stays cheap.
"""
from .version import __version__

__all__ = ["profile", "stream", "load_run", "Run", "__version__"]

_API = frozenset({"profile", "load_run", "Run"})
_LIVE = frozenset({"stream"})  # thinkprobe.live: a module named stream would shadow the function


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in _LIVE:
        from . import live

        return getattr(live, name)
    raise AttributeError(f"module 'thinkprobe' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_API, *_LIVE})
