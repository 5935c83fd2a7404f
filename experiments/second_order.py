"""Experiment (issue 27), not part of the product: do the parser's far decisions gain from seeing
its other decisions (a second-order refinement over the candidate graph)?

The parser scores every candidate pair independently (first order): whether j builds on a far unit
i cannot depend on whether j already has a sure near parent, or on what else i is a parent of. Here
the parser network scores the pairs once, then every unit gathers messages over its candidate pairs,
weighted by those first scores: as a child, a softmax over its candidate parents and the sum of
their arc probabilities; as a parent, the same over its candidate children (the pair's hidden vector
carries the message, so pair features and distance travel with it), plus its expected in- and
out-degree. A residual update of each unit's state from those messages feeds a second arc scorer
(its own head / dependent / bucket / pair projections) whose logits are added to the first pass's.
The loss is the parser's usual one on the final logits, so the first pass learns through both.
Memory stays linear (messages are sums over the candidate pairs, index_add by unit).

    python experiments/second_order.py train <train_parser.py train flags>        # with the refinement
    python experiments/second_order.py train --first-order <the same flags>       # the same run without

Scoring runs a trace's pairs in one block (the refinement needs all of a trace's pairs at once).
A folder written with --out holds this network's weights, which the product's loader cannot read.
"""
import sys
from functools import partial
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import thinkprobe.link.parser as parser_mod  # noqa: E402
import thinkprobe.link.parser.linker as parser_linker  # noqa: E402
import thinkprobe.link.parser.model_dir as parser_model_dir  # noqa: E402
import thinkprobe.training.parser_cli as parser_cli  # noqa: E402

_build = parser_mod.build_parser_model


def build_second_order(dim, unit_size, proj=128, hidden=128, layers=1, arc_hidden=128, context="bilstm",
                       pair_feats=True, dropout=0.2, pair_size=parser_mod.SHARED_PAIR_FEATURES):
    import torch
    from torch import nn

    from thinkprobe.link.candidates import DISTANCE_BUCKETS
    from thinkprobe.link.protocol import PAIR_CLASSES

    base = _build(dim, unit_size, proj, hidden, layers, arc_hidden, context, pair_feats, dropout, pair_size)
    size = base.head.in_features

    def segment_softmax(s, idx, n):
        top = torch.full((n,), float("-inf")).scatter_reduce(0, idx, s, "amax", include_self=True)
        e = torch.exp(s - top[idx])
        return e / torch.zeros(n).index_add(0, idx, e)[idx]

    class SecondOrder(nn.Module):
        def __init__(self):
            super().__init__()
            self.base = base
            self.msg = nn.Linear(arc_hidden, 4 * arc_hidden)
            self.update = nn.Sequential(nn.Linear(size + 4 * arc_hidden + 2, size), nn.Tanh(), nn.Dropout(dropout))
            self.head2 = nn.Linear(size, arc_hidden)
            self.dep2 = nn.Linear(size, arc_hidden)
            self.bucket2 = nn.Embedding(len(DISTANCE_BUCKETS) + 1, arc_hidden)
            self.pair2 = nn.Linear(pair_size, arc_hidden)
            self.arc2 = nn.Sequential(nn.Linear(2 * arc_hidden, arc_hidden), nn.ReLU(), nn.Dropout(dropout),
                                      nn.Linear(arc_hidden, len(PAIR_CLASSES)))
            nn.init.zeros_(self.arc2[-1].weight)
            nn.init.zeros_(self.arc2[-1].bias)

        def states(self, emb, uf, lengths):
            return self.base.states(emb, uf, lengths)

        def type_logits(self, h):
            return self.base.type_logits(h)

        def project(self, h_flat):
            return None

        def pair_logits(self, h_flat, gi, gj, bucket, pf, projected=None):
            b = self.base
            heads, deps = b.project(h_flat)
            a, d = heads[gi], deps[gj]
            z = a + d + b.bucket(bucket)
            if b.pair is not None:
                z = z + b.pair(pf)
            zr = torch.relu(z)
            first = b.arc(torch.cat([zr, a * d], dim=-1))
            s, n = first[:, 0], h_flat.shape[0]
            p = torch.sigmoid(s)
            m = self.msg(zr).chunk(4, dim=1)
            w = (segment_softmax(s, gj, n), p, segment_softmax(s, gi, n), p)
            to = (gj, gj, gi, gi)
            parts = [torch.zeros(n, arc_hidden).index_add(0, t, wk[:, None] * mk) for t, wk, mk in zip(to, w, m)]
            degree = [torch.log1p(torch.zeros(n).index_add(0, t, p))[:, None] for t in (gj, gi)]
            h2 = h_flat + self.update(torch.cat([h_flat, *parts, *degree], dim=1))
            a2, d2 = self.head2(h2)[gi], self.dep2(h2)[gj]
            z2 = torch.relu(a2 + d2 + self.bucket2(bucket) + self.pair2(pf))
            return first + self.arc2(torch.cat([z2, a2 * d2], dim=-1))

    return SecondOrder()


if __name__ == "__main__":
    # the refinement needs all of a trace's pairs at once: one scoring block per trace
    # the training code looks both names up in thinkprobe.link.parser; the parser's loader and linker
    # in the modules that use them
    one_block = partial(parser_mod.run_parser, block=1 << 40)
    parser_cli.main_with(sys.argv[1:], "--first-order",
                         *(mock.patch.object(m, "build_parser_model", build_second_order) for m in (parser_mod, parser_model_dir)),
                         *(mock.patch.object(m, "run_parser", one_block) for m in (parser_mod, parser_linker)))
