#!/usr/bin/env python
"""The committed tables and figures, rebuilt from the committed runs with nothing trained: Tables 5-7 of each profile
(nbs/reproduce.ipynb) and the study's tables (nbs/study.ipynb), in the order `make study` ends with, then the open
questions' (nbs/study_open_questions.ipynb), the timm ViT comparison's (nbs/study_vit.ipynb), the 3-D study's
(nbs/study_3d.ipynb), the grid study's (nbs/study_grid.ipynb, from the stored evaluations) and the paper's encoding against
today's (nbs/study_today.ipynb, from the same evaluations and the grid study's tables); timings are read, never measured. `make tables` rebuilds them in place.
With --check (`make check-sync`) they are rebuilt in a copy of results/ and the command fails, naming each file, when a
committed one differs from what the runs make, is missing, or is no longer made: a run committed without its tables,
or tables left from older code.

    python scripts/tables.py [--check]
"""
from __future__ import annotations
import argparse, filecmp, shutil, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ('cpu', 'study', 'probe')  # the profiles whose tables are committed, in `make study`'s order
TABLES = tuple(f'{p}/tables' for p in PROFILES) + ('open', 'vit/tables', 'study_3d', 'grid/tables', 'today')  # the folders of results/ that hold tables (open/: inputs too)
SUFFIXES = ('.md', '.csv')  # a table is written as both
TABLES += ('span_cost/tables',)  # the span's cost (nbs/study_span_cost.ipynb)


def rebuild(results: Path | None = None, figures: Path | None = None) -> None:
    "Run the notebooks that write the tables; into `results` and `figures` when given (runs read from `results`)."
    where = [] if results is None else ['-p', 'results_dir', str(results), '-p', 'figures_dir', str(figures)]
    out = results or ROOT / 'results'
    jobs = [('reproduce', ['-p', 'profile', p], out / p / 'reproduce.ipynb') for p in PROFILES]
    jobs.append(('study', ['-p', 'measure', 'False'], out / 'study' / 'study.ipynb'))
    jobs.append(('study_open_questions', ['-p', 'measure', 'False'], out / 'open' / 'study_open_questions.ipynb'))
    jobs.append(('study_vit', [], out / 'vit' / 'study_vit.ipynb'))
    jobs.append(('study_3d', ['-p', 'measure', 'False'], out / 'study_3d' / 'study_3d.ipynb'))
    jobs.append(('study_grid', ['-p', 'measure', 'False'], out / 'grid' / 'study_grid.ipynb'))
    jobs.append(('study_today', [], out / 'today' / 'notebooks' / 'study_today.ipynb'))  # after the grid study: reads its tables
    jobs.append(('study_span_cost', ['-p', 'measure', 'False'], out / 'span_cost' / 'notebooks' / 'study_span_cost.ipynb'))
    for notebook, params, executed in jobs:
        executed.parent.mkdir(parents=True, exist_ok=True)
        print(f'{notebook}.ipynb {" ".join(params[1:])}', flush=True)
        subprocess.run([sys.executable, '-m', 'papermill', '--cwd', 'nbs', f'nbs/{notebook}.ipynb', str(executed), *params,
                        *where, '--no-progress-bar', '--log-level', 'WARNING'], cwd=ROOT, check=True)


def _tables(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES} if folder.is_dir() else set()


def _figures(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob('*') if p.is_file()} if folder.is_dir() else set()


def _not_copied(folder: str, names: list[str]) -> set[str]:
    "What the copy of results/ leaves out: the tables, so that the notebooks write them anew."
    if Path(folder).relative_to(ROOT / 'results').as_posix() not in TABLES: return set()
    return {n for n in names if Path(n).suffix in SUFFIXES}


def differences(made: Path) -> list[str]:
    "What differs between the committed tables and figures and those rebuilt under `made` (its results/ and figures/)."
    out = []
    for folder in TABLES:
        new, old = made / 'results' / folder, ROOT / 'results' / folder
        for name in sorted(_tables(new) | _tables(old)):
            where = f'results/{folder}/{name}'
            if name not in _tables(old): out.append(f'{where}: made by the runs, not committed')
            elif name not in _tables(new): out.append(f'{where}: committed, but no longer made')
            elif not filecmp.cmp(new / name, old / name, shallow=False): out.append(f'{where}: differs')
    for name in sorted(_figures(made / 'figures')):  # the figures the notebooks write (not the runs' own figures)
        if not (ROOT / 'figures' / name).is_file(): out.append(f'figures/{name}: made by the runs, not committed')
        elif not filecmp.cmp(made / 'figures' / name, ROOT / 'figures' / name, shallow=False):
            out.append(f'figures/{name}: differs')
    return out


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    a.add_argument('--check', action='store_true', help='rebuild in a copy and compare with the committed files')
    if not a.parse_args(argv).check:
        rebuild()
        return 0
    with tempfile.TemporaryDirectory(prefix='posattn-tables-') as tmp:
        shutil.copytree(ROOT / 'results', Path(tmp) / 'results', ignore=_not_copied)
        rebuild(Path(tmp) / 'results', Path(tmp) / 'figures')
        found = differences(Path(tmp))
    if found:
        print('The committed tables are not what the committed runs make:', *found, 'Run `make tables` and commit the '
              'result.', sep='\n  ', file=sys.stderr)
        return 1
    print(f"Tables 5-7 of {', '.join(PROFILES)}, the study's and the open questions' tables and their figures are what "
          'the committed runs make')
    return 0


if __name__ == '__main__':
    sys.exit(main())
