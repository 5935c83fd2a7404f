"""The config is checked when it loads: a key the defaults lack, a value of the wrong kind or a
pattern that does not compile fails with the key's name; stages read typed sections."""
import pytest

from thinkprobe.config import Config, ConfigError


def write(tmp_path, text):
    path = tmp_path / "my.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text, key", [
    ("link:\n  windw: 4\n", "link.windw"),                       # a misspelt key
    ("segmnt:\n  min_unit_chars: 2\n", "segmnt"),                # a misspelt section
    ("link:\n  window: four\n", "link.window"),                  # a string for a number
    ("stats:\n  alpha: [0.05]\n", "stats.alpha"),                # a list for a number
    ("segment:\n  tiling: 3\n", "segment.tiling"),               # a number for a mapping
    ("lexicon:\n  CRT: ['(unclosed']\n", "lexicon.CRT[0]"),      # a pattern that does not compile
    ("lexicon:\n  MYCUE: [3]\n", "lexicon.MYCUE[0]"),            # a new category still holds patterns
])
def test_a_wrong_key_or_value_names_the_key(tmp_path, text, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")) as info:
        Config.load(path)
    assert str(path) in str(info.value)


def test_an_integer_field_refuses_a_fraction(tmp_path):
    with pytest.raises(ConfigError, match="link.window"):  # a number, as the defaults have, but not a count
        Config.load(write(tmp_path, "link:\n  window: 2.5\n"))


def test_typed_sections_read_the_merged_config(tmp_path):
    cfg = Config.load(write(tmp_path, "link:\n  window: 5\nstats:\n  alpha: 0.01\nlexicon:\n  MYCUE: ['\\\\bhmm\\\\b']\n"))
    assert cfg.link.window == 5 and cfg.link.top_k == Config.load().link.top_k
    assert cfg.stats.alpha == 0.01 and isinstance(cfg.stats.factor_shuffles, int)
    assert cfg.tiling.window == cfg.data["segment"]["tiling"]["window"]
    assert cfg.encoder.batch_size == cfg.data["encoder"]["batch_size"]
    assert "MYCUE" in cfg.lexicon  # a new lexicon category is the user's to add
    assert cfg.with_overrides({"limits": {"max_units": 7}})["limits"]["max_units"] == 7
    with pytest.raises(ConfigError, match="limits.max_unit"):
        cfg.with_overrides({"limits": {"max_unit": 7}})


def test_the_command_reports_a_bad_config_by_key(tmp_path):
    from click.testing import CliRunner

    from conftest import SAMPLES
    from thinkprobe.cli import main

    path = write(tmp_path, "indicators:\n  cluster_distanse: 0.4\n")
    res = CliRunner().invoke(main, ["profile", str(SAMPLES), "-o", str(tmp_path / "a" / "out"), "--config", str(path),
                                    "--no-progress", "--no-cache"])
    assert res.exit_code == 1 and res.output.startswith("Error: ") and "indicators.cluster_distanse" in res.output
    assert not (tmp_path / "a").exists()  # the folders the run made to hold it go again, empty
