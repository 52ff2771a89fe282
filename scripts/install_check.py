"""What `pip install .` gives a researcher who wants the layer alone: the wheel of this checkout, installed into a
fresh venv next to PyTorch and nothing else, runs README.md's "Use it in your model" snippet; the experiment platform
refuses to import with a message naming its extra; and the packages of that install are counted against the extras'.

    python scripts/install_check.py --torch 2.14.1      (make install-check)"""
import argparse, json, re, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sh(*cmd, may_fail: bool = False, **kw) -> subprocess.CompletedProcess:
    "Run `cmd`; unless it `may_fail`, its output on failure, then exit."
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode and not may_fail:
        sys.exit(f"install-check: {' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def snippet(readme: Path) -> str:
    "The first python block under README.md's 'Use it in your model' heading."
    m = re.search(r'^## Use it in your model\n.*?```python\n(.*?)```', readme.read_text(), re.S | re.M)
    if not m: sys.exit(f"install-check: no python block under '## Use it in your model' in {readme}")
    return m.group(1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--torch', required=True, help="the PyTorch version to install next to the wheel (the Makefile's TORCH)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='posattn-install-') as tmp:
        tmp = Path(tmp)
        print('install-check: building the wheel', flush=True)
        sh(sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '-q', '-w', tmp / 'dist', ROOT)
        wheel = next((tmp / 'dist').glob('posattn-*.whl'))
        print(f'install-check: a fresh venv with torch=={args.torch} and {wheel.name}', flush=True)
        sh(sys.executable, '-m', 'venv', tmp / 'venv')
        py = tmp / 'venv' / 'bin' / 'python'
        sh(py, '-m', 'pip', 'install', '-q', f'torch=={args.torch}')
        sh(py, '-m', 'pip', 'install', '-q', wheel)
        installed = json.loads(sh(py, '-m', 'pip', 'list', '--format=json').stdout)
        report = tmp / 'extras.json'
        sh(py, '-m', 'pip', 'install', '-q', '--dry-run', '--ignore-installed', '--report', report, f'{wheel}[experiments,lab]')
        full = json.loads(report.read_text())['install']
        code = snippet(ROOT / 'README.md') + "\nassert y.shape == (4, 1024, 64), y.shape\nprint('snippet: y', tuple(y.shape), 'window', block.span_size([32, 32]))\n"
        print(sh(py, '-c', code, cwd=tmp).stdout.strip())
        r = sh(py, '-c', 'import posattn.experiment', cwd=tmp, may_fail=True)
        if r.returncode == 0 or "pip install '.[experiments]' in a posattn checkout" not in r.stderr:
            sys.exit(f"install-check: importing posattn.experiment without its extra should name the extra; got:\n{r.stderr[-2000:]}")
        print('experiment without the extra:', r.stderr.strip().splitlines()[-1])
        print(f'install-check: passed; the layer alone installs {len(installed)} packages (pip and posattn included), '
              f'the experiments and lab extras would make it {len(full)}')


if __name__ == '__main__':
    main()
