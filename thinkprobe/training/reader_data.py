"""The reader's training data (issue 27): the token states of every prepared silver unit after the
encoder's frozen lower layers, computed once and cached (fp16, one flat memory-mapped array with
per-unit offsets), so that training the reader's top layers never reruns the frozen part.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

__all__ = ["cache_lower_states", "LowerStates"]


def cache_lower_states(rows: list[dict], out: Path, frozen: int = 4, threads: int = 2, batch: int = 64, log=print) -> None:
    """Token states after the first `frozen` layers of the encoder, for every unit of `rows` (in
    order), into out/states.f16 (tokens x hidden) with out/index.json (per row: doc_id and the
    token offset of each unit, plus the end)."""
    import torch

    from thinkprobe.reader import lower_states, tokenize
    from thinkprobe.encoder import Encoder

    torch.set_num_threads(threads)
    out.mkdir(parents=True, exist_ok=True)
    enc = Encoder(device="cpu", precision="fp32")
    model = enc.model
    texts = [u.text for r in rows for u in r["units"]]
    ids = tokenize(model, texts)
    lengths = np.array([len(x) for x in ids], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    hidden = model[0].auto_model.config.hidden_size
    states = np.lib.format.open_memmap(out / "states.npy", mode="w+", dtype=np.float16, shape=(int(offsets[-1]), hidden))
    order = np.lexsort((np.arange(len(ids)), lengths))
    t0 = time.time()
    done = 0
    groups = []
    for length in np.unique(lengths):
        members = order[lengths[order] == length]
        groups += [members[i:i + batch] for i in range(0, len(members), batch)]
    for g, idx in enumerate(groups):
        x = torch.tensor(np.stack([ids[k] for k in idx]))
        h = lower_states(model, x, frozen).numpy().astype(np.float16)
        for r, k in enumerate(idx):
            states[offsets[k]:offsets[k + 1]] = h[r]
        done += len(idx)
        if g % 200 == 0:
            el = time.time() - t0
            log(f"lower states: {done}/{len(ids)} units, {el:.0f} s, ETA {el / max(done, 1) * (len(ids) - done):.0f} s")
    states.flush()
    index, k = [], 0
    for r in rows:
        n = len(r["units"])
        index.append({"doc_id": r["doc_id"], "offsets": offsets[k:k + n + 1].tolist()})
        k += n
    (out / "index.json").write_text(json.dumps({"frozen": frozen, "rows": index}) + "\n", encoding="utf-8")
    log(f"cached {len(ids)} units, {int(offsets[-1])} tokens in {time.time() - t0:.0f} s")


class LowerStates:
    """The cached lower-layer token states: `units(doc_id)` -> list of (tokens x hidden) float16 arrays."""

    def __init__(self, folder: Path):
        self.states = np.load(Path(folder) / "states.npy", mmap_mode="r")
        meta = json.loads((Path(folder) / "index.json").read_text(encoding="utf-8"))
        self.frozen = meta["frozen"]
        self.rows = {r["doc_id"]: r["offsets"] for r in meta["rows"]}

    def units(self, doc_id: str) -> list[np.ndarray]:
        off = self.rows[doc_id]
        return [self.states[a:b] for a, b in zip(off, off[1:])]
