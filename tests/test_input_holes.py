"""Holes a red-team review found in the input layer: one small record that crashed a whole run
where it should be one InputError naming its file, record and field, and files whose size limits
were passed by the way they are encoded (a dictionary column, a compressed Arrow batch)."""
from __future__ import annotations

import json
import zipfile

from thinkprobe.io import iter_records


def _eval_log(path, header: bytes) -> None:
    sample = {"id": "q1", "epoch": 1, "input": "What is 2+3?", "target": "5",
              "messages": [{"role": "user", "content": "What is 2+3?"},
                           {"role": "assistant", "content": "<think>2 plus 3 is 5.</think>5"}]}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", header)
        z.writestr("samples/q1_epoch_1.json", json.dumps(sample))


def test_an_eval_log_whose_header_nests_too_deeply_is_one_error(tmp_path):
    deep = tmp_path / "deep.eval"  # 851 bytes of brackets raised RecursionError out of the run
    _eval_log(deep, b'{"eval": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    ((source, where, error),) = list(iter_records(deep))
    assert source == str(deep) and where == "file"
    assert error.field == "header.json" and "nested too deeply" in error.reason
