"""ThinkProbe: non-generative profiler of LLM reasoning traces."""
__version__ = "0.1.0"
