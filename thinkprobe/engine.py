"""Which engine runs a profile: the local pipeline (thinkprobe.pipeline) or a Ray cluster
(thinkprobe.ray_engine, imported only when asked for). Both commit the same chunks and assemble the
same outputs; this module sits above both so that neither imports the other's caller.
"""
from __future__ import annotations

from .config import Config
from .link import Linker
from .pipeline import RunOptions, run_config
from .pipeline import run_profile as run_local
from .timing import StageTimes

__all__ = ["run_profile"]


def run_profile(opts: RunOptions, cfg: Config | None = None, linker: Linker | None = None,
                times: StageTimes | None = None) -> dict:
    """Profile every trace of the inputs into opts.out_dir with the engine opts.engine names
    ("local" or "ray"); returns the run summary."""
    if opts.engine == "ray":
        from .ray_engine import run_profile_ray

        return run_profile_ray(opts, run_config(opts, cfg), times)
    if opts.engine != "local":
        raise ValueError(f"unknown engine {opts.engine!r}: use local or ray")
    return run_local(opts, cfg, linker, times)
