"""The 5D cognitive profile: z-scores against a fitted corpus, the signed mean per dimension, the
saved norms.json read back, and the group means."""
from __future__ import annotations

import json
import random

import pytest

from thinkprobe.indicators import DIMENSIONS, INDICATORS, SIGNS
from thinkprobe.cognitive_profile import DIMENSION_NAMES, Normalizer, group_profiles, profile_row


def corpus(n: int = 12, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [{name: rng.uniform(0, 10) for name in INDICATORS} for _ in range(n)]


def test_z_scores_have_mean_zero_and_unit_spread():
    rows = corpus()
    norms = Normalizer().fit(rows)
    zs = [norms.z(r) for r in rows]
    for name in INDICATORS:
        values = [z[name] for z in zs]
        assert sum(values) / len(values) == pytest.approx(0, abs=1e-12)
        assert sum(v * v for v in values) / len(values) == pytest.approx(1)


def test_a_constant_indicator_scores_zero():
    rows = corpus()
    for r in rows:
        r["idea_count"] = 4.0
    norms = Normalizer().fit(rows)
    assert norms.std_["idea_count"] == 0
    assert {norms.z(r)["idea_count"] for r in rows} == {0.0}


def test_profile_reads_more_x_for_every_dimension():
    """Raising one indicator raises its dimension, except the flipped ones (SIGNS -1), which lower it."""
    base = {name: 0.0 for name in INDICATORS}
    for dim, names in DIMENSIONS.items():
        for name in names:
            up = profile_row({**base, name: 1.0})
            assert up[dim] == pytest.approx(SIGNS[name] / len(names))
            assert all(up[d] == 0 for d in DIMENSION_NAMES if d != dim)


def test_norms_saved_as_json_apply_to_another_corpus(tmp_path):
    norms = Normalizer().fit(corpus(seed=1))
    path = tmp_path / "norms.json"
    path.write_text(json.dumps(norms.to_json()), encoding="utf-8")
    loaded = Normalizer.load(path)
    other = corpus(seed=2)
    assert [loaded.z(r) for r in other] == [norms.z(r) for r in other]
    assert loaded.n_ == 12


@pytest.mark.parametrize("content", ["not json", json.dumps({"indicators": {}}), json.dumps([1, 2])])
def test_a_file_that_is_not_norms_json_is_refused_by_name(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json: not a ThinkProbe norms.json"):
        Normalizer.load(path)


def test_group_profiles_are_sorted_means_with_counts():
    rows = [{"model": "b", "domain": "x", **dict.fromkeys(DIMENSION_NAMES, 1.0)},
            {"model": "a", "domain": "x", **dict.fromkeys(DIMENSION_NAMES, 2.0)},
            {"model": "b", "domain": "y", **dict.fromkeys(DIMENSION_NAMES, 3.0)}]
    by_model = group_profiles(rows, ("model",))
    assert [(g["model"], g["n"], g["Breadth"]) for g in by_model] == [("a", 1, 2.0), ("b", 2, 2.0)]
    by_pair = group_profiles(rows, ("model", "domain"))
    assert [(g["model"], g["domain"]) for g in by_pair] == [("a", "x"), ("b", "x"), ("b", "y")]
