"""Per-relation validation accuracy of finished probe runs, read from their final checkpoints: which of the probe's
relations (same row, same column, diagonal, anti-diagonal) a run learned. A checkpoint is used only when its history
is the stored result's, epoch by epoch; runs without one are listed as such. Written to <out> (JSON).

    PYTHONPATH=. python scripts/per_class.py [--treatments span_2d span_2d_threshold ...] [--results results] [--out results/open/per_class.json]
"""
import argparse, json
from pathlib import Path
import torch
from posattn.experiment.data import load_data
from posattn.experiment.probe import PROBE_CLASSES
from posattn.experiment.runner import model_for
from posattn.experiment.runs import atomic_write_text, project_root
from posattn.experiment.train import read_checkpoint

TREATMENTS = ('span_2d', 'span_2d_threshold', 'span_2d_cov', 'span_2d_cov_threshold')


def per_class(result: dict, checkpoint: Path) -> dict[str, float] | str:
    "Validation accuracy per relation of the checkpoint's model; a reason string when the checkpoint is not this run's."
    ckpt = read_checkpoint(checkpoint)
    if [h['val_acc'] for h in ckpt['history']] != [h['val_acc'] for h in result['history']]:
        return 'checkpoint of another run'
    cfg = result['config']
    torch.set_num_threads(1)
    data = load_data(cfg['dataset'], cfg['layout'], cfg['seed'], cfg['data_root'], cfg['resolution'], cfg['train_size'], cfg['val_size'])
    model = model_for(cfg, data.channels, len(data.classes), data.structure_size)
    model.load_state_dict(ckpt['model'])
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(data.val_x[i:i + 500]).argmax(-1) for i in range(0, len(data.val_y), 500)])
    return {name: (pred[data.val_y == k] == k).float().mean().item() for k, name in enumerate(PROBE_CLASSES)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--treatments', nargs='+', default=list(TREATMENTS))
    ap.add_argument('--results', default='results', help='holds probe/<treatment>/seed-*.json and their checkpoints/')
    ap.add_argument('--out', default='results/open/per_class.json')
    args = ap.parse_args(argv)
    root = Path(args.results) if Path(args.results).is_absolute() else project_root() / args.results
    rows = []
    for t in args.treatments:
        files = sorted((root / 'probe' / t).glob('seed-*.json'))
        if not files: raise SystemExit(f"--treatments: no runs of {t!r} under {root / 'probe'}")
        for f in files:
            result = json.loads(f.read_text())
            ck = f.parent / 'checkpoints' / f'seed-{result["seed"]}.pt'
            got = per_class(result, ck) if ck.exists() else 'no checkpoint'
            rows.append(dict(treatment=t, seed=result['seed'], val_acc_max=result['val_acc_max'],
                             val_acc_final=result['history'][-1]['val_acc'], code=result.get('code'),
                             **({'per_class': got} if isinstance(got, dict) else {'missing': got})))
            print(t, result['seed'], got, flush=True)
    out = project_root() / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(json.dumps(dict(classes=list(PROBE_CLASSES), runs=rows), indent=1), out)
    print(f'{len(rows)} runs -> {out}')


if __name__ == '__main__':
    main()
