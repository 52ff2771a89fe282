"""Probe runs of one treatment whose initial weights come from one RandomState and everything else (the data split,
the training order, dropout) from another: does a run that stays at chance owe it to its initialisation or to its
data? Each pair is written to <out>/init-<a>-rest-<b>.json as it finishes; finished pairs are kept.

    PYTHONPATH=. python scripts/cross_seeds.py [--treatment siren_2d] [--pairs 9188:9188 3:9188 ...] [--out results/open/cross]

A pair a:a repeats the sweep's own run of RandomState a: when the stored run under --reference was made by this code
(the same source fingerprint), the script checks it bit for bit (`same_as_sweep`); otherwise it says the code differs."""
import argparse, json, sys, time
from pathlib import Path
import torch
from posattn.experiment.data import load_data
from posattn.experiment.runner import model_for, resolve_config
from posattn.experiment.runs import atomic_write_text, code_version, project_root
from posattn.experiment.train import train

PAIRS = ('9188:9188', '3:9188', '4:1321', '361:1', '9188:3', '1321:4', '1:361')  # (init : rest), failed x solved


def run_pair(treatment: str, init: int, rest: int) -> dict:
    "One probe run: weights drawn after torch.manual_seed(init), data, order and dropout from `rest`."
    cfg = resolve_config(treatment, rest, 'probe')
    torch.set_num_threads(cfg['threads'] or 1)
    data = load_data(cfg['dataset'], cfg['layout'], rest, cfg['data_root'], cfg['resolution'], cfg['train_size'], cfg['val_size'])
    torch.manual_seed(init)
    model = model_for(cfg, data.channels, len(data.classes), data.structure_size)
    start = time.time()
    history = train(model, data, cfg['epochs'], rest, cfg['batch_size'], cfg['accumulate'], cfg['lr'], cfg['betas'],
                    cfg['eval_batch_size'], progress=False)
    return dict(treatment=treatment, init=init, rest=rest, history=history, val_acc_max=max(h['val_acc'] for h in history),
                wall_time_s=time.time() - start, code=code_version())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--treatment', default='siren_2d')
    ap.add_argument('--pairs', nargs='+', default=list(PAIRS), help='init:rest RandomStates (default: %(default)s)')
    ap.add_argument('--out', default='results/open/cross')
    ap.add_argument('--reference', default='results/probe', help="the sweep's runs a pair a:a is checked against")
    args = ap.parse_args(argv)
    pairs = []
    for p in args.pairs:
        try: a, b = (int(x) for x in p.split(':'))
        except ValueError: sys.exit(f"--pairs: {p!r} is not init:rest, two integers (e.g. 3:9188)")
        pairs.append((a, b))
    out = project_root() / args.out
    for a, b in pairs:
        path = out / f'init-{a}-rest-{b}.json'
        if path.exists(): print(f'{path}: kept'); continue
        r = run_pair(args.treatment, a, b)
        if a == b:
            ref = project_root() / args.reference / args.treatment / f'seed-{a}.json'
            if ref.exists():
                stored = json.loads(ref.read_text())
                if stored.get('code') == r['code']:
                    r['same_as_sweep'] = [h['val_acc'] for h in stored['history']] == [h['val_acc'] for h in r['history']]
                else: print(f"{ref} was made by other code ({stored.get('code') or 'not recorded'}; now {r['code']}): not compared")
        atomic_write_text(json.dumps(r, indent=1), path)
        print(f"init {a}, rest {b}: best {r['val_acc_max']:.4f} ({r['wall_time_s']:.0f} s) -> {path}", flush=True)


if __name__ == '__main__':
    main()
