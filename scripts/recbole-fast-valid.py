#!/usr/bin/env python
"""Run ../shared/recbole/run_rb.py with RecBole's per-epoch validation computed in one pass.

    PYTHON scripts/recbole-fast-valid.py MODEL [run_rb.py's arguments]

For a general model whose `full_sort_predict` scores every user at once (GCMC), RecBole's
full-ranking validation recomputes the model for every small eval batch (about two users each
on ml-100k): 25 s of GCMC's 29 s epochs on one thread. This replaces `Trainer._valid_epoch` by
the same valid MRR@10 from one call — the scores of all users, the padding item and each user's
training items set to −inf, the first valid item's rank in the top 10, averaged over users with
valid items, rounded to `metric_decimal_place` — so a seed study runs ~6× faster. Everything
else is run_rb.py's own run: its call order (so its random streams), training, early stopping
and the test evaluation by RecBole's evaluator. Check a seed against a run_rb.py JSON first:
the valid curves must be equal.
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "recbole"))
import run_rb  # noqa: E402
from recbole.trainer import Trainer  # noqa: E402


def history(dataset, config):
    feat = dataset.inter_feat
    return feat[config["USER_ID_FIELD"]].long(), feat[config["ITEM_ID_FIELD"]].long()


@torch.no_grad()
def fast_valid_epoch(self, valid_data, show_progress=False):
    config, model = self.config, self.model
    model.eval()
    users_all = torch.arange(valid_data._dataset.user_num)
    interaction = {config["USER_ID_FIELD"]: users_all}
    scores = model.full_sort_predict(interaction).view(len(users_all), -1).clone()
    scores[:, 0] = -float("inf")
    hu, hi = history(self._fast_train_dataset, config)
    scores[hu, hi] = -float("inf")
    vu, vi = history(valid_data._dataset, config)
    positive = torch.zeros_like(scores, dtype=torch.bool)
    positive[vu, vi] = True
    users = torch.unique(vu)
    top = torch.topk(scores[users], 10, dim=-1).indices
    hits = positive[users.unsqueeze(1), top]
    first = torch.where(hits.any(1), hits.float().argmax(1) + 1, torch.zeros(len(users), dtype=torch.long))
    rr = torch.where(first > 0, 1.0 / first.clamp(min=1).double(), torch.zeros(len(users), dtype=torch.double))
    mrr = round(rr.mean().item(), config["metric_decimal_place"])
    return mrr, {"mrr@10": mrr}


original_fit = Trainer.fit


def fit(self, train_data, valid_data=None, *args, **kwargs):
    self._fast_train_dataset = train_data._dataset
    return original_fit(self, train_data, valid_data, *args, **kwargs)


Trainer.fit = fit
Trainer._valid_epoch = fast_valid_epoch

if __name__ == "__main__":
    run_rb.main()
