#!/usr/bin/env python
"""Write RecBole 1.2.1's labelled split of ml-100k (its context-aware protocol) as three atomic files.

Usage (RecBole's environment, `../shared/recbole/setup.sh`):
    ~/.cache/recbole-1.2.1/pinned/bin/python scripts/recbole-labeled-split.py --data-path RB_WORK/data/ --seed 2020 --out DIR

RecBole shuffles the whole log with torch's generator (`eval_args: {split: {RS: [0.8, 0.1, 0.1]}, order: RO,
group_by: ~}`), which recbench does not reproduce; with the parts written as DIR/ml-100k/ml-100k.{train,valid,test}.inter
(`label:float` holding RecBole's threshold labels, `rating: 4`; beside them the repository's ml-100k `.user`
and `.item`) both tools can be run on the same rows:
    recbench run --model FM --config Configs/ml-100k.yml --config Configs/ml-100k-labeled.yml --set data_path=DIR \
        --set 'benchmark_filename=[train,valid,test]' --set threshold=~ \
        --set 'load_col={inter: [user_id, item_id, label], user: [user_id, age, gender, occupation], item: [item_id, release_year, class]}'
The config is run_rb.py's (rb_base.yaml and the context-aware keys), built the way run_rb.py builds it, so the
split is the one `run_rb.py MODEL --extra seed=S ...` trains on.
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "recbole"))
import run_rb  # noqa: E402  (its numpy and torch shims)
from recbole.config import Config  # noqa: E402
from recbole.data import create_dataset, data_preparation  # noqa: E402
from recbole.utils import init_seed  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-path", required=True)
    ap.add_argument("--dataset", default="ml100k")
    ap.add_argument("--seed", type=int, default=2020)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="FM", help="a context-aware model (the split does not depend on it)")
    args = ap.parse_args()
    cfg = dict(run_rb.PER_MODEL[args.model])
    cfg.update({
        "data_path": args.data_path, "seed": args.seed, "RATING_FIELD": "rating",
        "load_col": {"inter": ["user_id", "item_id", "rating", "timestamp"], "user": ["user_id", "age", "gender", "occupation"],
                     "item": ["item_id", "release_year", "class"]},
        "threshold": {"rating": 4}, "train_neg_sample_args": None, "metrics": ["AUC", "LogLoss"], "valid_metric": "AUC",
        "eval_args": {"split": {"RS": [0.8, 0.1, 0.1]}, "order": "RO", "group_by": None, "mode": "labeled"},
    })
    config = Config(model=args.model, dataset=args.dataset, config_file_list=[os.path.join(os.path.dirname(run_rb.__file__), "rb_base.yaml")],
                    config_dict=cfg)
    init_seed(config["seed"], config["reproducibility"])
    dataset = create_dataset(config)
    parts = data_preparation(config, dataset)
    folder = os.path.join(args.out, "ml-100k")   # recbench reads DATA_PATH/DATASET/DATASET.*
    os.makedirs(folder, exist_ok=True)
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    for side in ["user", "item"]:
        shutil.copyfile(os.path.join(repo, "Datasets", "ml-100k", f"ml-100k.{side}"), os.path.join(folder, f"ml-100k.{side}"))
    for name, loader in zip(["train", "valid", "test"], parts):
        inter = loader._dataset.inter_feat
        users = dataset.id2token("user_id", inter["user_id"].numpy())
        items = dataset.id2token("item_id", inter["item_id"].numpy())
        labels = inter["label"].numpy()
        with open(os.path.join(folder, f"ml-100k.{name}.inter"), "w") as f:
            f.write("user_id:token\titem_id:token\tlabel:float\n")
            for u, i, y in zip(users, items, labels):
                f.write(f"{u}\t{i}\t{float(y):g}\n")
        print(name, len(labels), "rows,", int((labels == 1).sum()), "labelled 1")


if __name__ == "__main__":
    main()
