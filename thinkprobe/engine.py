"""The one entry point of a profile run, `run_profile`: the run's config, then the engine that
opts.engine names, the local pipeline (thinkprobe.pipeline) or a Ray cluster (thinkprobe.ray_engine,
imported only when asked for). Both commit the same chunks and assemble the same outputs through
thinkprobe.runner.
"""
from __future__ import annotations

from .config import Config
from .link import Linker
from .options import RunOptions
from .runner import run_config
from .timing import StageTimes

__all__ = ["RunOptions", "run_profile"]


def run_profile(opts: RunOptions, cfg: Config | None = None, linker: Linker | None = None,
                times: StageTimes | None = None, encoder=None) -> dict:
    """Profile every trace of the inputs into opts.out_dir with the engine opts.engine names
    ("local" or "ray"); returns the run summary. `cfg` replaces the config opts.config names;
    `linker` and `encoder` (local engine) ones loaded already; `times`, when given, collects
    seconds per stage."""
    cfg = run_config(opts, cfg)
    times = times if times is not None else StageTimes()
    if opts.engine == "ray":
        from .ray_engine import run_profile_ray

        return run_profile_ray(opts, cfg, times)
    if opts.engine != "local":
        raise ValueError(f"unknown engine {opts.engine!r}: use local or ray")
    from .pipeline import run_local

    return run_local(opts, cfg, linker, times, encoder)
