import os
import socket
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parent.parent / ".cache" / "numba"))

from thinkprobe.shared_data import data_dir  # noqa: E402  (after the environment above is set)

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "thinkprobe" / "samples" / "traces.jsonl"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = data_dir()
    if path is None:
        pytest.skip("real third-party traces not found: set THINKPROBE_DATA or place them at ../shared/data")
    return path


@pytest.fixture(scope="session")
def config():
    from thinkprobe.config import Config

    return Config.load()


@pytest.fixture(scope="session")
def encoder():
    from thinkprobe.encoder import Encoder

    return Encoder(device="cpu")


# The test files that take longest, longest first (their tests' seconds summed from `pytest
# --junitxml` on the 2-core machine, 2026-12-07: 264, 149, 109, 96, 85, 77, 77, 71, 48, 42, 42, 38),
# run first: `make test` hands whole files to two workers in collection order (pytest-xdist, --dist
# loadfile), and a long file handed out last would leave one worker idle while it runs.
SLOWEST_FILES = ("test_ray.py", "test_isolation.py", "test_pipeline.py", "test_report.py", "test_realdata.py",
                 "test_corpora.py", "test_reliability.py", "test_stream.py", "test_legibility.py", "test_groups.py",
                 "test_analyses.py", "test_link_contract.py")


def pytest_collection_modifyitems(items):
    rank = {name: k for k, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


class NetworkUsed(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch):
    """Fail on any attempt to open a network connection (sockets of every family)."""

    def guard(*args, **kwargs):
        raise NetworkUsed(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", guard)
    monkeypatch.setattr(socket.socket, "connect_ex", guard)
    monkeypatch.setattr(socket, "create_connection", guard)
    monkeypatch.setattr(socket, "getaddrinfo", guard)
    yield
