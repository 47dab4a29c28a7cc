#!/usr/bin/env python3
"""RecBole 1.2.1 through ../shared/recbole/run_rb.py, resumable across sessions.

RecBole's sequential reference runs take 1-10 hours on this CPU, longer than a session, and
a run dies with its session. This runs `run_rb.py` unchanged (same arguments, same JSON),
except that the trainer keeps OUT/TAG.state.pth after every finished epoch: the model, the
optimiser, early stopping's counters, the valid curve and epoch times so far, and every
random state the next epoch reads (torch's, numpy's, Python's and the train loader's
shuffling generator). Run the same command again and it continues after the last finished
epoch, as the uninterrupted run would have (docs/recbole-sequential.md: a 3-epoch FPMC run
killed and resumed gave the uninterrupted run's curve and figures). The
best model is kept at OUT/TAG.best.pth, so the final test reads it whichever session saved
it. On completion the state file is removed and the JSON's curve, epoch count, best epoch
and times cover every session, with `resumed_after_epochs` listing the interruptions.

    ~/.cache/recbole-1.2.1/pinned/bin/python scripts/recbole-resumable.py NARM --dataset ml100k \\
        --data-path data/ --tag NARM-seed2020 --out OUT --extra seed=2020
"""
import os
import random
import sys
import json
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "recbole"))


def option(name, default):
    """The value after `name` in the command line (run_rb.py's own options)."""
    argv = sys.argv
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else default


def resumable(trainer_class, state_path, best_path, history):
    """`trainer_class` saving its state after each epoch and resuming from it."""

    class Resumable(trainer_class):
        def __init__(self, config, model):
            super().__init__(config, model)
            self.saved_model_file = best_path
            self._first_epoch = None

        def fit(self, train_data, *args, **kwargs):
            self._train_data = train_data
            if os.path.exists(state_path):
                s = torch.load(state_path, map_location=self.device, weights_only=False)
                self.model.load_state_dict(s["state_dict"])
                self.model.load_other_parameter(s.get("other_parameter"))
                self.optimizer.load_state_dict(s["optimizer"])
                self.start_epoch, self.cur_step, self.best_valid_score = s["epoch"] + 1, s["cur_step"], s["best_valid_score"]
                torch.set_rng_state(s["torch_rng"])
                np.random.set_state(s["numpy_rng"])
                random.setstate(s["python_rng"])
                train_data.generator.set_state(s["loader_rng"])
                history.update(s["history"])
                history["resumed_after_epochs"].append(s["epoch"] + 1)
                self.logger.info(f"resumed after epoch {s['epoch'] + 1} from {state_path}")
            return super().fit(train_data, *args, **kwargs)

        def _save_state(self, epoch):
            state = {
                "epoch": epoch, "cur_step": self.cur_step, "best_valid_score": self.best_valid_score,
                "state_dict": self.model.state_dict(), "other_parameter": self.model.other_parameter(),
                "optimizer": self.optimizer.state_dict(), "torch_rng": torch.get_rng_state(),
                "numpy_rng": np.random.get_state(), "python_rng": random.getstate(),
                "loader_rng": self._train_data.generator.get_state(), "history": history,
            }
            torch.save(state, state_path + ".tmp", pickle_protocol=4)
            os.replace(state_path + ".tmp", state_path)   # a kill mid-write keeps the previous state

        def _train_epoch(self, train_data, epoch_idx, *args, **kwargs):
            # Epoch epoch_idx − 1 is finished here: trained, validated, early stopping updated.
            if self._first_epoch is None:
                self._first_epoch = epoch_idx
            elif epoch_idx > self._first_epoch:
                self._save_state(epoch_idx - 1)
            t = time.time()
            result = super()._train_epoch(train_data, epoch_idx, *args, **kwargs)
            history["train_s"].append(time.time() - t)
            return result

        def _valid_epoch(self, *args, **kwargs):
            t = time.time()
            result = super()._valid_epoch(*args, **kwargs)
            history["valid_s"].append(time.time() - t)
            history["valid"].append(result[0])
            return result

    return Resumable


def merge(json_path, history):
    """The finished run's JSON with the curve, epochs and times of every session."""
    with open(json_path) as f:
        res = json.load(f)
    curve = history["valid"]
    res["valid_mrr10_curve"] = curve
    res["epochs_run"] = len(history["train_s"])
    if curve:
        best = max(curve)
        res["best_epoch_0based"] = max(i for i, v in enumerate(curve) if v == best)
    res["time_train_epochs_s"] = float(sum(history["train_s"]))
    res["time_valid_s"] = float(sum(history["valid_s"]))
    res["resumed_after_epochs"] = history["resumed_after_epochs"]
    with open(json_path + ".tmp", "w") as f:
        json.dump(res, f, indent=1, default=str)
    os.replace(json_path + ".tmp", json_path)


def main():
    sys.path.insert(0, RUNNER)
    import run_rb

    tag, out = option("--tag", sys.argv[1] if len(sys.argv) > 1 else "run"), option("--out", "rb-runs")
    os.makedirs(out, exist_ok=True)
    state_path, best_path = os.path.join(out, f"{tag}.state.pth"), os.path.join(out, f"{tag}.best.pth")
    history = {"valid": [], "train_s": [], "valid_s": [], "resumed_after_epochs": []}
    get_trainer = run_rb.get_trainer
    run_rb.get_trainer = lambda model_type, model: resumable(get_trainer(model_type, model), state_path, best_path, history)
    run_rb.main()
    merge(os.path.join(out, f"{tag}.json"), history)
    if os.path.exists(state_path):
        os.remove(state_path)


if __name__ == "__main__":
    main()
