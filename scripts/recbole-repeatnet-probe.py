#!/usr/bin/env python3
"""RecBole 1.2.1's RepeatNet on ml-100k (next-item protocol, run_rb.py's settings), with its mean
repeat-mode probability P(repeat) over the validation examples after each epoch: what recbench's
run prints as "repeat mode" (docs/models.md compares the two).
Usage: PYTHON scripts/recbole-repeatnet-probe.py DATA_PATH [SEED [EPOCHS]]   (PYTHON: RecBole's environment;
DATA_PATH holds ml100k/ml100k.inter; needs ../shared/recbole beside the repository)."""
import os, sys
import torch

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'recbole')
sys.path.insert(0, HERE)
import run_rb  # noqa: E402,F401  (its patch of RecBole's collector, as every reference run has it)
from recbole.config import Config  # noqa: E402
from recbole.data import create_dataset, data_preparation  # noqa: E402
from recbole.utils import init_seed, init_logger, get_model, get_trainer  # noqa: E402


def main():
    data, seed, epochs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2020, int(sys.argv[3]) if len(sys.argv) > 3 else 2
    cfg = {'train_neg_sample_args': None, 'repeatable': True, 'data_path': data, 'seed': seed, 'epochs': epochs, 'stopping_step': epochs}
    config = Config(model='RepeatNet', dataset='ml100k', config_file_list=[os.path.join(HERE, 'rb_base.yaml')], config_dict=cfg)
    init_seed(config['seed'], config['reproducibility'])
    init_logger(config)
    train_data, valid_data, _ = data_preparation(config, create_dataset(config))
    init_seed(config['seed'] + config['local_rank'], config['reproducibility'])
    model = get_model('RepeatNet')(config, train_data._dataset).to(config['device'])
    trainer = get_trainer(config['MODEL_TYPE'], config['model'])(config, model)
    modes, predict, validate = [], model.full_sort_predict, trainer._valid_epoch

    def full_sort_predict(interaction):
        scores = predict(interaction)
        modes.append(model.repeat_explore[:, 0].detach())
        return scores

    def valid_epoch(*args, **kwargs):
        modes.clear()
        result = validate(*args, **kwargs)
        print(f'valid mrr@10 {result[0]:.4f} mean P(repeat) {float(torch.cat(modes).mean()):.4f}', flush=True)
        return result

    model.full_sort_predict, trainer._valid_epoch = full_sort_predict, valid_epoch
    trainer.fit(train_data, valid_data, saved=False, show_progress=False)


if __name__ == '__main__':
    main()
