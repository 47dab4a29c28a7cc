#!/usr/bin/env python3
"""The reference bands: each learned model on RecBole's split of ml-100k, seeds 2020-2022,
against RecBole 1.2.1's figures in ../shared/reference/README.md (section A, read from that
file). Prints one Markdown row per model: recall@10 and ndcg@10 as mean ± sd over the
seeds, each seed's ndcg@10, RecBole's figures, and whether the mean lies within the band
(0.01). Too slow for the test suite (about 30 minutes for every model); the suite keeps a
short check per model and ReferenceTests' bands for some. Needs ../shared.
Usage: scripts/bands.py [--binary .build/release/recbench] [MODEL ...]"""
import json, os, re, statistics, subprocess, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
SHARED = os.path.join(ROOT, '..', 'shared', 'reference')
SPLIT = os.path.join(SHARED, 'ml-100k-recbole-split')
FEATURES = ('load_col={inter: [user_id, item_id, timestamp], user: [user_id, age, gender, occupation], '
            'item: [item_id, release_year, class]}')
# Models without a RecBole row of their own are held to a related row (the reference README says why).
HELD_TO = {'MacridVAE': 'MultiVAE', 'FFM': 'FM', 'DeepFM': 'FM'}
DEFAULT = ['BPR', 'MultiVAE', 'MultiDAE', 'RecVAE', 'MacridVAE', 'LightGCN', 'NeuMF', 'FM', 'FFM', 'DeepFM']
CONTEXT = {'FM', 'FFM', 'DeepFM'}


def recbole_rows():
    """Section A's table: model -> {column: value}."""
    text = open(os.path.join(SHARED, 'README.md'), encoding='utf-8').read()
    section = text[text.index('## A.'):text.index('## B.')]
    lines = [l for l in section.split('\n') if l.startswith('|')]
    header = [c.strip() for c in lines[0].strip('|').split('|')]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip('|').split('|')]
        rows[cells[0]] = dict(zip(header, cells))
    return rows


def run(binary, model, seed, data):
    args = [binary, 'run', '--model', model, '--config', os.path.join(ROOT, 'Configs', 'ml-100k.yml'), '--json', '--no-save', '--quiet',
            '--set', f'seed={seed}', '--set', 'checkpoint_dir=null', '--set', f'data_path={data}',
            '--set', 'benchmark_filename=[train,valid,test]']
    if model in CONTEXT:
        args += ['--set', FEATURES]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out)['test']


def context_data():
    """RecBole's split beside the shipped .user / .item files (what the context models read)."""
    folder = '/tmp/recbench-bands-context'
    os.makedirs(folder, exist_ok=True)
    for part in ('train', 'valid', 'test'):
        target = f'{folder}/ml-100k.{part}.inter'
        if not os.path.exists(target):
            os.symlink(os.path.abspath(f'{SPLIT}/ml-100k.{part}.inter'), target)
    for suffix in ('user', 'item'):
        target = f'{folder}/ml-100k.{suffix}'
        if not os.path.exists(target):
            os.symlink(os.path.abspath(f'{ROOT}/Datasets/ml-100k/ml-100k.{suffix}'), target)
    return folder


def main():
    args = sys.argv[1:]
    binary = os.path.join(ROOT, '.build', 'release', 'recbench')
    if args[:1] == ['--binary']:
        binary, args = args[1], args[2:]
    if not os.path.isdir(SPLIT):
        print('scripts/bands.py needs ../shared/reference (RecBole\'s split and figures): not found')
        return 2
    reference = recbole_rows()
    print('| model | recall@10 mean ± sd | ndcg@10 mean ± sd | ndcg@10 per seed | RecBole recall / ndcg (row) | within 0.01 |')
    print('|---|---|---|---|---|---|')
    for model in args or DEFAULT:
        data = context_data() if model in CONTEXT else SPLIT
        tests = [run(binary, model, seed, data) for seed in (2020, 2021, 2022)]
        recall = [t['recall@10'] for t in tests]
        ndcg = [t['ndcg@10'] for t in tests]
        row = reference[HELD_TO.get(model, model)]
        theirs = (float(row['recall@10']), float(row['ndcg@10']))
        ok = abs(statistics.mean(recall) - theirs[0]) <= 0.01 and abs(statistics.mean(ndcg) - theirs[1]) <= 0.01
        above = statistics.mean(recall) > theirs[0] and statistics.mean(ndcg) > theirs[1]
        verdict = '✓' if ok else ('above' if above else '✗')
        print(f'| {model} | {statistics.mean(recall):.4f} ± {statistics.stdev(recall):.4f} | {statistics.mean(ndcg):.4f} ± '
              f'{statistics.stdev(ndcg):.4f} | {" / ".join(f"{v:.4f}" for v in ndcg)} | {theirs[0]:.4f} / {theirs[1]:.4f} '
              f'({HELD_TO.get(model, model)}) | {verdict} |', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
