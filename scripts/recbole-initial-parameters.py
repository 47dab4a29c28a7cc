#!/usr/bin/env python
"""Dump a RecBole 1.2.1 model's initial parameters at a seed, built as ../shared/recbole/run_rb.py
builds it (same config, same call order, so the same random stream), with the token order of its
user and item ids: the starting point of a run, to start recbench from the same one (issue 34's
GCMC question: does recbench's early-stopping rate differ from RecBole's because of the
initialisation or of the training loop?).

    PYTHON scripts/recbole-initial-parameters.py MODEL SEED OUT [--data-path DIR] [--dataset ml100k]

PYTHON: the environment ../shared/recbole/setup.sh builds. Writes OUT/<parameter>.npy for each
entry of the model's state_dict (dots as underscores), OUT/ids.json (user_tokens, item_tokens:
RecBole's id → token, index 0 being its padding; shapes) and, for the models it knows the layout
of (GCMC), OUT/recbench.params: the same start as a recbench checkpoint, for `--set
init_parameters=OUT/recbench.params`. recbench numbers tokens in order of first appearance in the
files it reads, which differs from RecBole's file when recbench reads a split's files: give them,
in recbench's reading order, with `--recbench-files train.inter valid.inter test.inter`.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "recbole"))
import run_rb  # noqa: E402  (its numpy/torch shims and imports)
import struct  # noqa: E402
import numpy as np  # noqa: E402
from recbole.config import Config  # noqa: E402
from recbole.data import create_dataset, data_preparation  # noqa: E402
from recbole.utils import init_seed, get_model  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("seed", type=int)
ap.add_argument("out")
ap.add_argument("--data-path", default="data/")
ap.add_argument("--dataset", default="ml100k")
ap.add_argument("--recbench-files", nargs="*", default=None, help="the .inter files recbench reads, in its order")
args = ap.parse_args()

cfg = dict(run_rb.PER_MODEL.get(args.model, {}), data_path=args.data_path, seed=args.seed)
if args.model in run_rb.NON_SAMPLING:
    cfg["train_neg_sample_args"] = None
config = Config(model=args.model, dataset=args.dataset, config_file_list=[os.path.join(run_rb.HERE, "rb_base.yaml")], config_dict=cfg)
init_seed(config["seed"], config["reproducibility"])
dataset = create_dataset(config)
train_data, _, _ = data_preparation(config, dataset)
init_seed(config["seed"] + config["local_rank"], config["reproducibility"])
model = get_model(args.model)(config, train_data._dataset)
os.makedirs(args.out, exist_ok=True)
state = model.state_dict()
for name, tensor in state.items():
    np.save(os.path.join(args.out, name.replace(".", "_") + ".npy"), tensor.detach().cpu().numpy())
with open(os.path.join(args.out, "ids.json"), "w") as f:
    json.dump({"user_tokens": list(dataset.field2id_token[config["USER_ID_FIELD"]]),
               "item_tokens": list(dataset.field2id_token[config["ITEM_ID_FIELD"]]),
               "shapes": {k: list(v.shape) for k, v in state.items()}}, f)
print({k: list(v.shape) for k, v in state.items()})


def write_checkpoint(path, parameters):
    """recbench's Checkpoint format: magic, count, then per parameter its name, rows, columns, float32 LE."""
    with open(path, "wb") as f:
        f.write(b"RBCKPT1\n" + struct.pack("<I", len(parameters)))
        for name, m in parameters:
            m = np.ascontiguousarray(m, dtype="<f4")
            f.write(struct.pack("<I", len(name)) + name.encode() + struct.pack("<II", *m.shape) + m.tobytes())


def recbench_order(field, recbole_tokens):
    """RecBole's row of each token, in recbench's id order (first appearance in --recbench-files)."""
    row = {t: i for i, t in enumerate(recbole_tokens)}
    if not args.recbench_files:
        return list(range(1, len(recbole_tokens)))
    order, seen = [], set()
    for path in args.recbench_files:
        with open(path) as f:
            header = f.readline().rstrip("\n").split("\t")
            column = [h.split(":")[0] for h in header].index(config[field])
            for line in f:
                token = line.rstrip("\n").split("\t")[column]
                if token not in seen:
                    seen.add(token)
                    order.append(row[token])
    return order


if args.model == "GCMC":
    # Node table: users then items, each in recbench's id order (RecBole's padding rows dropped).
    w = state["GcEncoder.weights_u.0"].numpy()
    user_tokens = dataset.field2id_token[config["USER_ID_FIELD"]]
    users = recbench_order("USER_ID_FIELD", user_tokens)
    items = [len(user_tokens) + r for r in recbench_order("ITEM_ID_FIELD", dataset.field2id_token[config["ITEM_ID_FIELD"]])]
    nodes = w[users + items]
    bases = sorted(k for k in state if k.startswith("BiDecoder.weights."))
    write_checkpoint(os.path.join(args.out, "recbench.params"),
                     [("node_weight", nodes), ("dense", state["GcEncoder.dense_layer_u.weight"].numpy().T)]
                     + [(f"basis.{b}", state[k].numpy()) for b, k in enumerate(bases)]
                     + [("combine", state["BiDecoder.dense_layer.weight"].numpy().T)])
