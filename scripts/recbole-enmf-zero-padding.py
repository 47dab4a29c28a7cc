#!/usr/bin/env python3
"""RecBole 1.2.1's ENMF with its padding item's embedding zeroed, otherwise ../shared/recbole/run_rb.py unchanged.

RecBole's ENMF reads each user's history padded to the longest one (591 slots on ml-100k's train
split) with item 0, whose embedding xavier initialisation makes non-zero and `padding_idx` keeps
fixed, and counts every padded slot as a positive: ((1 - w) y^2 - 2y) with y = h . (p_u * q_0).
Zeroing q_0 after initialisation makes those slots score 0 and carry no gradient, which is what
recbench's ENMF computes (its positives are a user's train items only). Used to measure how much
of RecBole's gap to recbench the padding makes (docs/recbole-general.md, "ENMF").

    cd WORK && ~/.cache/recbole-1.2.1/pinned/bin/python scripts/recbole-enmf-zero-padding.py ENMF \\
        --dataset ml100k --data-path data/ --tag ENMF-zeropad-seed2020 --out OUT --extra seed=2020
"""
import importlib.util
import os

import torch
from recbole.model.general_recommender import enmf

RUN_RB = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'recbole', 'run_rb.py')
_initialise = enmf.ENMF.__init__


def initialise_without_padding(self, config, dataset):
    _initialise(self, config, dataset)
    with torch.no_grad():
        self.item_embedding.weight[0].zero_()


enmf.ENMF.__init__ = initialise_without_padding
spec = importlib.util.spec_from_file_location('run_rb', RUN_RB)
run_rb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_rb)
run_rb.main()
