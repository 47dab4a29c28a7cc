#!/usr/bin/env python
"""Prints RecBole 1.2.1's next-item examples and split of a small hand-made log.

The log (below) has a user whose rows are out of time order with a tie, a user with one
interaction, users with 2, 3, 4 and 12 interactions, repeats, and MAX_ITEM_LIST_LENGTH 3.
Output, one line per example: part, user token, target token, input tokens (oldest first).
SequenceProtocolTests holds this output as its expected value. Run with RecBole's
environment (../shared/recbole/setup.sh):
    ~/.cache/recbole-1.2.1/pinned/bin/python scripts/recbole-sequence-fixture.py
"""
import os, sys, tempfile
import numpy as np
for _n, _v in (("float_", np.float64), ("complex_", np.complex128), ("unicode_", np.str_)):
    if _n not in np.__dict__:
        setattr(np, _n, _v)
from recbole.config import Config
from recbole.data import create_dataset

LOG = """user_id:token	item_id:token	timestamp:float
a	i1	5
a	i2	3
a	i3	3
a	i4	1
a	i5	9
a	i1	7
b	i2	4
c	i3	1
c	i4	2
d	i5	1
d	i6	2
d	i7	3
e	i1	1
e	i2	2
e	i1	3
e	i3	4
e	i1	5
e	i4	6
e	i5	7
e	i6	8
e	i1	9
e	i7	10
e	i8	11
e	i1	12
f	i8	1
f	i7	2
f	i8	3
f	i6	4
"""

root = tempfile.mkdtemp()
os.makedirs(os.path.join(root, "seqfix"))
with open(os.path.join(root, "seqfix", "seqfix.inter"), "w") as f:
    f.write(LOG)
config = Config(model="GRU4Rec", dataset="seqfix", config_dict={
    "data_path": root, "load_col": {"inter": ["user_id", "item_id", "timestamp"]},
    "eval_args": {"split": {"RS": [0.8, 0.1, 0.1]}, "order": "TO", "group_by": "user", "mode": "full"},
    "train_neg_sample_args": None, "repeatable": True, "MAX_ITEM_LIST_LENGTH": 3,
    "use_gpu": False, "state": "ERROR", "show_progress": False})
dataset = create_dataset(config)
for name, part in zip(("train", "valid", "test"), dataset.build()):
    feat = part.inter_feat
    for r in range(len(feat)):
        user = dataset.id2token("user_id", int(feat["user_id"][r]))
        target = dataset.id2token("item_id", int(feat["item_id"][r]))
        n = int(feat["item_length"][r])
        history = [dataset.id2token("item_id", int(i)) for i in feat["item_id_list"][r][:n]]
        print(name, user, target, " ".join(history), sep="\t")
