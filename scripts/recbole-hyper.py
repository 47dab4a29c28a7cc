#!/usr/bin/env python
"""RecBole 1.2.1's hyper-parameter search (HyperTuning, hyperopt) on the shared protocol, for
comparison with `recbench tune`. Run with the Python of the environment ../shared/recbole/setup.sh
builds (hyperopt installed into it):

    recbole-hyper.py MODEL SPACE_FILE --trials N [--algo bayes|random] [--seed 2020] [--out DIR]

Each trial is RecBole's own `objective_function` (quick_start.py) step by step: Config, init_seed,
create_dataset, data_preparation, model, trainer.fit on the valid split, trainer.evaluate on the
test split; only the `tune.report` call (ray, not installed) is left out. HyperTuning's
`early_stop` is set to the trial count, so exactly N trials run. Prints one line
`RESULT_JSON {...}` (best valid score and parameters, every trial's, wall seconds) and writes
OUT/MODEL-hyper.json.
"""
import argparse, json, logging, os, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("space")
ap.add_argument("--trials", type=int, required=True)
ap.add_argument("--algo", default="bayes")
ap.add_argument("--seed", type=int, default=2020)
ap.add_argument("--dataset", default="ml100k")
ap.add_argument("--data-path", default="data/")
ap.add_argument("--shared", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../shared/recbole"))
ap.add_argument("--out", default="rb-runs")
args = ap.parse_args()

sys.path.insert(0, os.path.abspath(args.shared))
import run_rb  # noqa: E402  (its numpy/torch/collector shims apply on import)
from logging import getLogger  # noqa: E402
from recbole.config import Config  # noqa: E402
from recbole.data import create_dataset, data_preparation  # noqa: E402
from recbole.utils import init_logger, get_model, get_trainer, init_seed  # noqa: E402
from recbole.trainer import HyperTuning  # noqa: E402

base = os.path.join(os.path.abspath(args.shared), "rb_base.yaml")
fixed = {"model": args.model, "dataset": args.dataset, "data_path": args.data_path, "seed": args.seed}
if args.model in run_rb.NON_SAMPLING:
    fixed["train_neg_sample_args"] = None
fixed.update(run_rb.PER_MODEL.get(args.model, {}))
trials = []


def objective(config_dict=None, config_file_list=None, saved=True):
    start = time.time()
    config = Config(config_dict={**fixed, **config_dict}, config_file_list=config_file_list)
    init_seed(config["seed"], config["reproducibility"])
    logger = getLogger()
    for handler in logger.handlers[:]:
        logger.removeHandler(handler)
    init_logger(config)
    logging.basicConfig(level=logging.ERROR)
    dataset = create_dataset(config)
    train_data, valid_data, test_data = data_preparation(config, dataset)
    init_seed(config["seed"], config["reproducibility"])
    model = get_model(config["model"])(config, train_data._dataset).to(config["device"])
    trainer = get_trainer(config["MODEL_TYPE"], config["model"])(config, model)
    best_valid_score, best_valid_result = trainer.fit(train_data, valid_data, verbose=False, saved=saved)
    test_result = trainer.evaluate(test_data, load_best_model=saved)
    trials.append({"params": dict(config_dict), "best_valid_score": float(best_valid_score), "seconds": time.time() - start})
    print(f"trial {len(trials)}: {config_dict} valid {best_valid_score:.4f} ({time.time() - start:.1f} s)", file=sys.stderr, flush=True)
    return {"model": config["model"], "best_valid_score": best_valid_score, "valid_score_bigger": config["valid_metric_bigger"],
            "best_valid_result": best_valid_result, "test_result": test_result}


start = time.time()
hp = HyperTuning(objective, params_file=args.space, fixed_config_file_list=[base], algo=args.algo,
                 max_evals=args.trials, early_stop=args.trials)
hp.run()
result = {"model": args.model, "algo": args.algo, "trials": len(trials), "seed": args.seed,
          "best_valid_score": max(t["best_valid_score"] for t in trials), "best_params": {k: (v.item() if hasattr(v, "item") else v)
          for k, v in hp.best_params.items()}, "wall_seconds": time.time() - start, "every_trial": trials}
os.makedirs(args.out, exist_ok=True)
with open(os.path.join(args.out, f"{args.model}-hyper.json"), "w") as f:
    json.dump(result, f, indent=1, default=str)
print("RESULT_JSON " + json.dumps(result, default=str))
