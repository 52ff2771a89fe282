#!/usr/bin/env python
"""Measure how often notebook kernels started side by side lose a port, and whether the sweep's restart saves the run.

Each round starts `--width` papermill runs of a one-cell notebook at once, each as the sweep runs it: a RunTask whose
`restart_when` is the sweep's kernel check (or none with `--no-restart`). It prints one JSON line: the runs, those
that failed, those started again, and each restarted run's attempts. Nothing is written outside a temporary folder.

    .venv/bin/python scripts/kernel_port_race.py --rounds 20 --width 10
"""
import argparse, concurrent.futures as cf, json, sys, tempfile
from pathlib import Path
import nbformat
from posattn.experiment.cluster import RunFailed, RunTask, attempts
from posattn.experiment.sweep import _kernel_not_started  # the predicate the sweep gives its tasks


def _notebook(path: Path) -> Path:
    "A one-cell notebook run by the python3 kernel."
    nb = nbformat.v4.new_notebook(); nb.cells = [nbformat.v4.new_code_cell('x = 1')]
    nb.metadata['kernelspec'] = dict(name='python3', display_name='Python 3', language='python')
    nbformat.write(nb, str(path)); return path


def _run(folder: Path, name: str, restart: bool) -> tuple[bool, list]:
    "One run as the sweep runs it: whether it finished, and its attempts' ends."
    t = RunTask(name, [sys.executable, '-m', 'papermill', str(folder / 'one_cell.ipynb'), str(folder / f'{name}.ipynb'),
                       '--no-progress-bar'], log=folder / f'{name}.log', restart_when=_kernel_not_started if restart else None)
    try: t.run_once(); ok = True
    except RunFailed: ok = False
    return ok, [a['end'] for a in attempts(t.state)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--rounds', type=int, default=15, help='rounds of runs started together (default 15)')
    p.add_argument('--width', type=int, default=8, help='runs started at once in each round (default 8)')
    p.add_argument('--no-restart', action='store_true', help='no restart_when: what plain papermill runs do')
    a = p.parse_args(argv)
    for name in ('rounds', 'width'):
        if getattr(a, name) < 1: p.error(f'--{name}={getattr(a, name)} must be a positive integer')
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d); _notebook(folder / 'one_cell.ipynb'); res = []
        for i in range(a.rounds):
            with cf.ThreadPoolExecutor(a.width) as ex:
                res += list(ex.map(lambda j: _run(folder, f'r{i}-{j}', not a.no_restart), range(a.width)))
            print(f'round {i + 1} of {a.rounds}: {sum(not ok for ok, _ in res)} failed so far', file=sys.stderr, flush=True)
    print(json.dumps(dict(runs=len(res), width=a.width, restart=not a.no_restart, failed=sum(not ok for ok, _ in res),
                          restarted=sum(len(e) > 1 for _, e in res), attempts=[e for _, e in res if len(e) > 1])))
    return 0


if __name__ == '__main__': sys.exit(main())
