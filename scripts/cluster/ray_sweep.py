#!/usr/bin/env python3
"""Run a recbench sweep as N Ray tasks, one shard each: the launcher only launches.

    scripts/cluster/ray_sweep.py --shards N [--address auto] [--recbench PATH] -- SWEEP-ARGUMENTS...

Each task runs `recbench sweep SWEEP-ARGUMENTS --shard i/N` in this folder (the results
folder the config names must be on storage every node sees); the driver waits for all
and exits non-zero if any shard did. Without --address it starts a local Ray instance
(`ray.init()`); with one it joins that cluster (`ray start --head` elsewhere). A shard that
fails can be rerun alone with the same command line plus `--only i`: finished runs are
skipped. `recbench report RESULTS` tabulates every shard's runs.
"""
import argparse
import os
import subprocess
import sys

import ray


@ray.remote
def shard(index, count, recbench, arguments, folder):
    """One `recbench sweep --shard index/count`; returns (index, exit code, output tail)."""
    done = subprocess.run([recbench, "sweep", *arguments, "--shard", f"{index}/{count}"],
                          cwd=folder, capture_output=True, text=True)
    return index, done.returncode, (done.stdout + done.stderr)[-2000:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", type=int, required=True)
    parser.add_argument("--address", default=None, help="a Ray cluster to join (default: a local instance)")
    parser.add_argument("--recbench", default=os.environ.get("RECBENCH", "recbench"))
    parser.add_argument("--cpus-per-shard", type=float, default=2)
    parser.add_argument("--only", type=int, action="append", help="run only these shard numbers (repeatable)")
    parser.add_argument("sweep", nargs=argparse.REMAINDER, help="-- then the sweep's own arguments")
    args = parser.parse_args()
    arguments = args.sweep[1:] if args.sweep[:1] == ["--"] else args.sweep
    ray.init(address=args.address)
    indices = args.only or range(1, args.shards + 1)
    task = shard.options(num_cpus=args.cpus_per_shard)
    futures = [task.remote(i, args.shards, os.path.abspath(args.recbench) if os.sep in args.recbench else args.recbench,
                           arguments, os.getcwd()) for i in indices]
    failed = 0
    for index, code, tail in ray.get(futures):
        last = tail.strip().splitlines()[-1] if tail.strip() else ""
        print(f"shard {index}/{args.shards}: exit {code} · {last}")
        failed += code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
