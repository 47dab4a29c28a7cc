#!/usr/bin/env python3
"""Kill-injection for `recbench sweep` (issue 16): SIGKILL a sweep at N moments, resume it
each time, and check that nothing finished is lost or corrupted.

    scripts/kill-injection.py [--kills 20] [--binary .build/release/recbench] [--seed 1]

A small sweep (Pop, ItemKNN, EASE, BPR, MultiVAE, ALS on the shipped ml-100k, learned
models 4 epochs with checkpoints) is first run uninterrupted for the reference table. Then
kills alternate between two kinds:
  * at a random moment: the sweep's whole process group is SIGKILLed after a random delay;
  * inside a write: strace makes the Nth rename(2) of the process tree deliver SIGKILL to
    its caller (the temp file written and synced, the rename not done: a result record,
    per-user file, checkpoint or failure record half-committed), then the group is killed.
After every kill each stored record must parse; the sweep is rerun, and each time a rerun
completes the results must hold every run exactly once, with the reference table (seconds
columns aside), no `.failed.json` and no temp file; then a fresh round starts. Needs
strace. Prints one summary line; exits 1 on any loss, corruption or leftover.
"""
import argparse
import csv
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = "Pop,ItemKNN,EASE,BPR,MultiVAE,ALS"
CONFIG = """dataset: ml-100k
data_path: {data}
load_col: {{inter: [user_id, item_id, timestamp]}}
eval_args: {{order: TO, split: {{RS: [0.8, 0.1, 0.1]}}, group_by: user, mode: full}}
topk: [10]
metrics: [Recall, MRR, NDCG, Hit, Precision]
valid_metric: MRR@10
epochs: 4
stopping_step: 4
results_dir: {results}
checkpoint_dir: {checkpoints}
"""


def sweep_command(binary, config):
    return [binary, "sweep", "--config", config, "--models", MODELS, "--quiet"]


def table(binary, results):
    """The report as CSV rows, without the seconds columns (they differ run to run)."""
    out = subprocess.run([binary, "report", results, "--format", "csv"], capture_output=True, text=True, check=True).stdout
    rows = list(csv.reader(io.StringIO(out)))
    keep = [i for i, name in enumerate(rows[0]) if not name.endswith("_seconds")]
    return sorted(tuple(r[i] for i in keep) for r in rows)


def files(root, suffix):
    return [os.path.join(d, f) for d, _, names in os.walk(root) for f in names if f.endswith(suffix)]


def records(results):
    return [p for p in files(results, ".json") if not p.endswith((".peruser.json", ".failed.json"))]


def corrupted(results):
    bad = 0
    for path in files(results, ".json"):
        try:
            with open(path) as f:
                json.load(f)
        except (ValueError, OSError):
            bad += 1
    return bad


def injected_kill(work, prefix):
    """(True, target path) once strace has killed a process at an injected rename (its
    per-process log ends with the rename that never returned, then the kill)."""
    for name in os.listdir(work):
        if not name.startswith(os.path.basename(prefix) + "."):
            continue
        with open(os.path.join(work, name)) as f:
            log = f.read()
        if "killed by SIGKILL" in log:
            renames = [line for line in log.splitlines() if line.startswith("rename(") and line.rstrip().endswith("= ?")]
            if renames:
                parts = renames[-1].split('"')
                return True, parts[3] if len(parts) >= 4 else "?"
    return False, ""


def kill_group(process):
    """SIGKILL the whole process group and wait until every member is gone (the rerun
    comes after the crash, as a user's would)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    for _ in range(500):
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--binary", default=os.path.join(REPO, ".build/release/recbench"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="recbench-kill-")
    data = os.path.join(REPO, "Datasets")

    def config_for(name):
        path = os.path.join(work, name + ".yml")
        with open(path, "w") as f:
            f.write(CONFIG.format(data=data, results=os.path.join(work, name), checkpoints=os.path.join(work, name + "-ckpt")))
        return path

    # The reference: one uninterrupted sweep, its wall time and its number of renames.
    reference_config = config_for("reference")
    start = time.monotonic()
    subprocess.run(sweep_command(args.binary, reference_config), check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    reference = table(args.binary, os.path.join(work, "reference"))
    expected_runs = len(records(os.path.join(work, "reference")))
    trace = os.path.join(work, "renames.strace")
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=rename", "-o", trace] + sweep_command(args.binary, config_for("renames")), check=True, stdout=subprocess.DEVNULL)
    renames = sum(1 for line in open(trace) if "rename(" in line)

    kills, kinds, lost, bad, leftovers, rounds = 0, {}, 0, 0, 0, 0
    round_name, attempts = None, 0
    while kills < args.kills or round_name is not None:
        if round_name is None:
            rounds += 1
            round_name = f"round{rounds}"
            config = config_for(round_name)
        results = os.path.join(work, round_name)
        finishing = kills >= args.kills
        in_write = kills % 2 == 1 and not finishing
        strace_prefix = os.path.join(work, f"attempt{attempts}.strace")
        command = sweep_command(args.binary, config)
        if in_write:
            # strace counts renames per process: a run makes a few (checkpoints, its per-user
            # file, its record), so small counts hit every kind of write.
            n = rng.choice([1, 2, 2, 3, rng.randint(1, max(1, renames))])
            command = ["strace", "-ff", "-qq", "-o", strace_prefix, "-e", "trace=rename", "-e", f"inject=rename:signal=KILL:when={n}"] + command
        process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        killed = False
        if finishing:
            process.wait()
        elif in_write:
            # When the injected rename has killed its caller, kill the rest of the group too,
            # as a crash of the machine would.
            while not killed and process.poll() is None:
                time.sleep(0.01)
                killed, target = injected_kill(work, strace_prefix)
            if not killed:
                killed, target = injected_kill(work, strace_prefix)
            if killed:
                kind = ("checkpoint" if target.endswith(".params") else "failure record" if target.endswith(".failed.json")
                        else "per-user file" if target.endswith(".peruser.json") else "result record")
                kinds["inside a " + kind + " write"] = kinds.get("inside a " + kind + " write", 0) + 1
            kill_group(process)
        else:
            # Within the time the runs still to do should take.
            pending = max(1, expected_runs - len(records(results)))
            time.sleep(rng.uniform(0.02, wall * pending / expected_runs))
            killed = process.poll() is None
            if killed:
                kinds["at a random moment"] = kinds.get("at a random moment", 0) + 1
            kill_group(process)
        attempts += 1
        for name in os.listdir(work):
            if name.startswith(os.path.basename(strace_prefix) + "."):
                os.unlink(os.path.join(work, name))
        if os.environ.get("KILL_DEBUG"):
            print(f"attempt {attempts}: {round_name} in_write={in_write} killed={killed} rc={process.returncode} records={len(records(results))}", file=sys.stderr)
        bad += corrupted(results)
        if killed:
            kills += 1
            continue
        # The sweep ran to its end: the round must be complete and clean.
        stored = records(results)
        lost += abs(expected_runs - len(stored))
        temps = files(results, ".tmp") + files(results + "-ckpt", ".tmp") + files(results, ".failed.json")
        leftovers += len(temps)
        if table(args.binary, results) != reference:
            lost += 1
            print(f"{round_name}: the table differs from the uninterrupted sweep's", file=sys.stderr)
        round_name = None

    if lost == 0 and bad == 0 and leftovers == 0:
        shutil.rmtree(work)
    else:
        print(f"kept {work} for inspection", file=sys.stderr)
    detail = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
    print(f"kill-injection: {kills} kills ({detail}) over {rounds} rounds, {attempts} sweep starts; "
          f"{lost} lost, {bad} corrupted, {leftovers} temp files; every round's table "
          f"{'equals' if lost == 0 else 'DIFFERS from'} the uninterrupted sweep's ({expected_runs} runs)")
    return 0 if lost == 0 and bad == 0 and leftovers == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
