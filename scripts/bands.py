#!/usr/bin/env python3
"""The reference bands: each learned model, seeds 2020-2022, against its reference.

General and context-aware models run on RecBole's split of ml-100k against section A of
../shared/reference/README.md, or, for a general model section A lacks, against RecBole's runs
recorded here (docs/recbole-general/; issue 34's rule: each seed's recall@10 and ndcg@10 ≥
RecBole's at the same seed − 0.01, the verdict naming any seed below); issue 33's context-aware
models against RecBole's runs recorded there, both validated every 10 epochs (issue 33's rule:
the mean over seeds ≥ RecBole's mean − 0.02), or provisionally FM's row until RecBole's run
exists; FFM and DeepFM against RecBole's own runs of them once recorded there (validated every
10 epochs, the mean within 0.01), else FM's row; Item2vec against that file's gensim figures; sequential
models on the raw ml-100k under RecBole's next-item protocol against RecBole's own runs
(the JSONs in ../shared/reference/recbole-sequential/ and docs/recbole-sequential/,
averaged over the seeds measured). Prints one Markdown row per model: recall@10 and
ndcg@10 as mean ± sd over the seeds, each seed's ndcg@10, the reference, and whether the
mean lies within the band (0.01). Too slow for the test suite (hours with the sequential
models); the suite keeps a short check per model. Needs ../shared.
With --labeled DIR, the context-aware models under RecBole's labelled protocol instead: recbench on RecBole's labelled
split of each seed (DIR/split<seed>/, as scripts/recbole-labeled-split.py writes it) against RecBole's runs of the same
seed in docs/recbole-general/labeled/, test AUC and LogLoss per seed and their means (band: the mean AUC within 0.01).
Usage: scripts/bands.py [--binary .build/release/recbench] [--labeled DIR] [MODEL ...]"""
import json, os, re, statistics, subprocess, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
SHARED = os.path.join(ROOT, '..', 'shared', 'reference')
SPLIT = os.path.join(SHARED, 'ml-100k-recbole-split')
RAW = os.path.join(ROOT, '..', 'shared', 'datasets')
FEATURES = ('load_col={inter: [user_id, item_id, timestamp], user: [user_id, age, gender, occupation], '
            'item: [item_id, release_year, class]}')
# Models without a RecBole row of their own are held to a related row (the reference README says why), FFM and
# DeepFM until RecBole's own runs of them are recorded in docs/recbole-general/ (then held to those, within 0.01).
HELD_TO = {'MacridVAE': 'MultiVAE', 'FFM': 'FM', 'DeepFM': 'FM'}
# Issue 33's eleven: RecBole's runs here (validated every 10 epochs, which recbench then does too), else FM's row.
ISSUE33 = ['LR', 'FNN', 'WideDeep', 'FwFM', 'PNN', 'AFM', 'NFM', 'DCN', 'DSSM', 'xDeepFM', 'AutoInt']
DEFAULT = ['BPR', 'MultiVAE', 'MultiDAE', 'CDAE', 'RecVAE', 'MacridVAE', 'LightGCN', 'NeuMF', 'FM', 'FFM', 'DeepFM', 'Item2vec',
           'FPMC', 'STAMP', 'GRU4Rec', 'NARM', 'SASRec', 'BERT4Rec']
CONTEXT = {'FM', 'FFM', 'DeepFM'} | set(ISSUE33)
SEQUENTIAL = {'FPMC', 'GRU4Rec', 'NARM', 'STAMP', 'SASRec', 'BERT4Rec',
              'RepeatNet', 'HRM', 'NPE', 'FOSSIL', 'TransRec', 'SHAN', 'SRGNN', 'GCSAN', 'NextItNet', 'GRU4RecF'}
# The settings gensim's figures were measured at (reference README, "Item2vec").
EXTRA = {'Item2vec': ['threads=1', 'epochs=20', 'stopping_step=20', 'session_gap=86400', 'subsample=0'],
         # GRU4RecF reads the items' class, as RecBole's run does (run_rb.py loads it).
         'GRU4RecF': ['load_col={inter: [user_id, item_id, timestamp], item: [item_id, class]}']}
GENSIM = (0.1143, 0.1130)   # Item2vec: recall@10, ndcg@10, mask recbole, mean of seeds 2020-2022


def recbole_seeds(model, family='sequential'):
    """RecBole's test results run here, by seed (the shared reference's single run is seed 2020)."""
    runs = {}
    for folder in (os.path.join(SHARED, f'recbole-{family}'), os.path.join(ROOT, 'docs', f'recbole-{family}')):
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            seed = re.fullmatch(rf'{re.escape(model)}(?:-seed(\d+))?\.json', name)
            if seed:
                runs[int(seed.group(1) or 2020)] = json.load(open(os.path.join(folder, name)))['test_result']
    return runs


def recbole_runs(model, family='sequential'):
    """RecBole's test recall@10 and ndcg@10 for a model, mean of the seeds run here, and their count."""
    runs = list(recbole_seeds(model, family).values())
    if not runs:
        return None
    return statistics.mean(r['recall@10'] for r in runs), statistics.mean(r['ndcg@10'] for r in runs), len(runs)


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


def run(binary, model, seed, data, extra=(), configs=('ml-100k.yml',), features=True):
    args = [binary, 'run', '--model', model, '--json', '--no-save', '--quiet',
            '--set', f'seed={seed}', '--set', 'checkpoint_dir=null', '--set', f'data_path={data}']
    for config in configs:
        args += ['--config', os.path.join(ROOT, 'Configs', config)]
    if model not in SEQUENTIAL:
        args += ['--set', 'benchmark_filename=[train,valid,test]']
    if model in CONTEXT and features:
        args += ['--set', FEATURES]
    for assignment in EXTRA.get(model, []) + list(extra):
        args += ['--set', assignment]
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


LABELED = os.path.join(ROOT, 'docs', 'recbole-general', 'labeled')
LABELED_COLUMNS = ('load_col={inter: [user_id, item_id, label], user: [user_id, age, gender, occupation], '
                   'item: [item_id, release_year, class]}')


def labeled_bands(binary, splits, models):
    """Each model's test AUC / LogLoss per seed on RecBole's labelled split, beside RecBole's run of that seed."""
    print('| model | seed | RecBole AUC / LogLoss | recbench AUC / LogLoss | Δ AUC |')
    print('|---|---|---|---|---|')
    for model in models or sorted({n[:n.index('-labeled')] for n in os.listdir(LABELED)}):
        pairs = []
        for seed in (2020, 2021, 2022):
            path = os.path.join(LABELED, f'{model}-labeled-seed{seed}.json')
            data = os.path.join(splits, f'split{seed}')
            if not os.path.exists(path) or not os.path.isdir(data):
                continue
            theirs = json.load(open(path))['test_result']
            ours = run(binary, model, seed, data, ['threshold=null', LABELED_COLUMNS],
                       configs=('ml-100k.yml', 'ml-100k-labeled.yml'), features=False)
            pairs.append((theirs, ours))
            print(f'| {model} | {seed} | {theirs["auc"]:.4f} / {theirs["logloss"]:.4f} | {ours["auc"]:.4f} / {ours["logloss"]:.4f} | '
                  f'{ours["auc"] - theirs["auc"]:+.4f} |', flush=True)
        if pairs:   # one seed gets its verdict too, labelled as one
            mean = {side: {m: statistics.mean(p[i][m] for p in pairs) for m in ('auc', 'logloss')} for i, side in enumerate(('rb', 'us'))}
            delta = mean['us']['auc'] - mean['rb']['auc']
            print(f'| {model} | mean of {len(pairs)} | {mean["rb"]["auc"]:.4f} / {mean["rb"]["logloss"]:.4f} | {mean["us"]["auc"]:.4f} / '
                  f'{mean["us"]["logloss"]:.4f} | {delta:+.4f} {"✓" if abs(delta) <= 0.01 else "✗"} |', flush=True)
    return 0


def main():
    args = sys.argv[1:]
    binary = os.path.join(ROOT, '.build', 'release', 'recbench')
    if args[:1] == ['--binary']:
        binary, args = args[1], args[2:]
    if args[:1] == ['--labeled']:
        if len(args) < 2 or not os.path.isdir(args[1]):
            print('scripts/bands.py --labeled DIR: DIR must hold split2020/ … split2022/ (scripts/recbole-labeled-split.py writes them)')
            return 2
        return labeled_bands(binary, args[1], args[2:])
    if not os.path.isdir(SPLIT):
        print('scripts/bands.py needs ../shared/reference (RecBole\'s split and figures): not found')
        return 2
    reference = recbole_rows()
    floors = set()   # models held to issue 34's per-seed floor
    print('| model | recall@10 mean ± sd | ndcg@10 mean ± sd | ndcg@10 per seed | RecBole recall / ndcg (row) | verdict (within 0.01, or the rule named) |')
    print('|---|---|---|---|---|---|')
    for model in args or DEFAULT:
        data = context_data() if model in CONTEXT else (RAW if model in SEQUENTIAL else SPLIT)
        extra = []
        if model == 'Item2vec':
            theirs, label = GENSIM, 'gensim'
        elif model in SEQUENTIAL:
            measured = recbole_runs(model)
            if measured is None:
                print(f'| {model} | – | – | – | no RecBole run recorded | – |', flush=True)
                continue
            theirs, label = measured[:2], f'RecBole next-item, {measured[2]} seed(s)'
        elif (model in ISSUE33 or model in CONTEXT & set(HELD_TO)) and (measured := recbole_runs(model, 'general')):
            # RecBole's own runs, validated every 10 epochs (FFM's and DeepFM's once run here: else FM's row).
            theirs, label = measured[:2], f'RecBole, {measured[2]} seed(s), eval_step 10'
            extra = ['eval_step=10']
        elif model in ISSUE33 or HELD_TO.get(model, model) in reference:
            model_row = 'FM' if model in ISSUE33 else HELD_TO.get(model, model)
            row = reference[model_row]
            theirs, label = (float(row['recall@10']), float(row['ndcg@10'])), model_row
        else:
            measured = recbole_runs(model, 'general')
            if measured is None:
                print(f'| {model} | – | – | – | no RecBole run recorded | – |', flush=True)
                continue
            theirs, label = measured[:2], f'RecBole, {measured[2]} seed(s)'
            floors.add(model)
        tests = []
        for seed in (2020, 2021, 2022):
            tests.append(run(binary, model, seed, data, extra))
            # Each seed as it finishes (stderr), so an interrupted band keeps its finished runs.
            print(f'{model} seed {seed}: recall@10 {tests[-1]["recall@10"]:.4f} ndcg@10 {tests[-1]["ndcg@10"]:.4f}', file=sys.stderr, flush=True)
        recall = [t['recall@10'] for t in tests]
        ndcg = [t['ndcg@10'] for t in tests]
        ok = abs(statistics.mean(recall) - theirs[0]) <= 0.01 and abs(statistics.mean(ndcg) - theirs[1]) <= 0.01
        above = statistics.mean(recall) > theirs[0] and statistics.mean(ndcg) > theirs[1]
        verdict = '✓' if ok else ('above' if above else '✗')
        if extra and model in ISSUE33:   # issue 33's floor on the means
            verdict = ('✓ mean ≥ RecBole − 0.02' if statistics.mean(recall) >= theirs[0] - 0.02 and statistics.mean(ndcg) >= theirs[1] - 0.02
                       else '✗ mean below RecBole − 0.02')
        if model in floors:
            per_seed = recbole_seeds(model, 'general')
            below = [f'{seed} {metric} {t[metric]:.4f} < {per_seed[seed][metric] - 0.01:.4f}'
                     for seed, t in zip((2020, 2021, 2022), tests) if seed in per_seed for metric in ('recall@10', 'ndcg@10')
                     if t[metric] < per_seed[seed][metric] - 0.01]
            verdict = '✓ each seed ≥ its RecBole seed − 0.01' if not below else '✗ ' + '; '.join(below)
        print(f'| {model} | {statistics.mean(recall):.4f} ± {statistics.stdev(recall):.4f} | {statistics.mean(ndcg):.4f} ± '
              f'{statistics.stdev(ndcg):.4f} | {" / ".join(f"{v:.4f}" for v in ndcg)} | {theirs[0]:.4f} / {theirs[1]:.4f} '
              f'({label}) | {verdict} |', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
