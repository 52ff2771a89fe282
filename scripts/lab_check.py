#!/usr/bin/env python
"""A real-browser check: run notebooks through JupyterLab's UI in headless Chromium and look at the result.

For each notebook (a path under nbs/): open it in JupyterLab, wait for the kernel, choose Run > Run All Cells, wait
until the kernel is idle again, then fail on any error output, any code cell left unexecuted, any broken image (an
<img> whose naturalWidth is 0), any dialog (kernel died, select kernel, ...) or error notification, and save a
full-page screenshot as <out>/<notebook stem>.png.

JupyterLab runs on 127.0.0.1 (a free port, a random token) on a copy of the working tree in a temporary folder with
the repository's layout, so the notebooks see the same relative paths (../figures, ../results) as in `make lab`,
and nothing the notebooks or JupyterLab write (outputs, figures, checkpoints) reaches the repository: only the
screenshots do. JupyterLab and its kernels are stopped at the end, also on failure.

    python scripts/lab_check.py [--venv .venv] [--out figures/lab] [--timeout 900] index.ipynb 07_block.ipynb
"""
from __future__ import annotations
import argparse, hashlib, json, os, secrets, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMEDRIVER = '/usr/bin/chromedriver'
CHROMIUM = ('/usr/lib/chromium/chromium', '/usr/bin/chromium') # the binary itself first: Debian's wrapper adds flags
CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync',
                  '--hide-scrollbars', '--window-size=1400,1000']
# JupyterLab user settings for the check: every cell attached to the page (so all are checked and photographed), no
# empty space after the last cell (the screenshot ends with the notebook), no autosave (the notebook is never
# written). News and update requests are left to the venv's overrides.json (written by `make setup`), as `make lab`
# gets them: a notification asking about either fails the check.
LAB_SETTINGS = {
    '@jupyterlab/notebook-extension/tracker.jupyterlab-settings': {'windowingMode': 'none', 'scrollPastEnd': False},
    '@jupyterlab/docmanager-extension/plugin.jupyterlab-settings': {'autosave': False},
}


class CheckFailed(Exception):
    "A notebook failed in the browser; the message says which and why."


def _log(msg: str): print(f'lab-check: {msg}', flush=True)


def _free_port() -> int:
    "A TCP port on 127.0.0.1 that is free now."
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]


def _mirror(dest: Path):
    "Copy the working tree's files that git tracks or would track (not ignored ones) to `dest`; link data/."
    try: out = subprocess.run(['git', 'ls-files', '-z', '-co', '--exclude-standard'], cwd=ROOT, check=True,
                              capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError): out = None
    if out is None: # not a git checkout: everything but the usual scratch folders
        shutil.copytree(ROOT, dest, symlinks=True, ignore=shutil.ignore_patterns(
            '.git', '.venv', 'data', '__pycache__', '.ipynb_checkpoints', '_proc', '_docs', 'wandb'))
    else:
        for rel in filter(None, out.decode().split('\0')):
            src = ROOT / rel
            if not src.is_file(): continue # deleted in the working tree
            (dest / rel).parent.mkdir(parents=True, exist_ok=True); shutil.copy2(src, dest / rel)
    if (ROOT / 'data').is_dir() and not (dest / 'data').exists(): (dest / 'data').symlink_to(ROOT / 'data')


def _digest(p: Path) -> str: return hashlib.sha1(p.read_bytes()).hexdigest()


class Lab:
    "JupyterLab from the venv on 127.0.0.1 over a copy of the repository; a context manager that stops it."
    def __init__(self, venv: Path, tmp: Path, args: list[str] = ()):
        self.venv, self.tmp, self.repo, self.args = venv, tmp, tmp / 'repo', list(args) # args: more server options
        self.port, self.token = _free_port(), secrets.token_hex(16)
        self.url = f'http://127.0.0.1:{self.port}'
        self.log_path = tmp / 'jupyter-lab.log'
        self.proc = None

    def __enter__(self):
        _mirror(self.repo)
        settings = self.tmp / 'lab-settings'
        for name, value in LAB_SETTINGS.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True); (settings / name).write_text(json.dumps(value))
        env = {k: v for k, v in os.environ.items() if k not in ('IN_TEST', 'JUPYTER_TOKEN')}
        env.update(PYTHONPATH=str(self.repo), # the kernel imports this checkout's posattn, not an installed one
                   JUPYTER_RUNTIME_DIR=str(self.tmp / 'runtime'), IPYTHONDIR=str(self.tmp / 'ipython'))
        jupyter = self.venv / 'bin' / 'jupyter'
        if not jupyter.exists(): raise CheckFailed(f'{jupyter} does not exist: run `make setup` first')
        cmd = [str(jupyter), 'lab', '--no-browser', '--ServerApp.ip=127.0.0.1', f'--ServerApp.port={self.port}',
               '--ServerApp.port_retries=0', f'--IdentityProvider.token={self.token}',
               f'--ServerApp.root_dir={self.repo}', f'--LabApp.user_settings_dir={settings}',
               f'--LabApp.workspaces_dir={self.tmp / "workspaces"}',
               '--LabApp.expose_app_in_browser=True'] # the page's notebook model is read, never driven, through it
        if hasattr(os, 'geteuid') and os.geteuid() == 0: cmd.append('--allow-root')
        cmd += self.args
        self.log = open(self.log_path, 'w')
        self.proc = subprocess.Popen(cmd, cwd=self.repo, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True) # its own process group: the kernels stop with it
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CheckFailed(f'JupyterLab exited with {self.proc.returncode} while starting:\n{self.log_tail()}')
            try:
                with urllib.request.urlopen(f'{self.url}/api/status?token={self.token}', timeout=2) as r:
                    if r.status == 200: return self._settings_loaded()
            except OSError: pass
            time.sleep(0.5)
        raise CheckFailed(f'JupyterLab did not answer on {self.url} within 120 s:\n{self.log_tail()}')

    def _settings_loaded(self):
        "Fail when JupyterLab could not read the venv's settings overrides (make setup writes them)."
        bad = [l for l in self.log_tail(200).splitlines() if 'Failed loading overrides' in l]
        if bad: raise CheckFailed(f'JupyterLab ignored the settings overrides of {self.venv}/share/jupyter/lab/settings: '
                                  f'{bad[0].strip()} (run `make setup` again)')
        return self

    def log_tail(self, n: int = 30) -> str:
        self.log.flush()
        return '\n'.join(self.log_path.read_text(errors='replace').splitlines()[-n:])

    def __exit__(self, *exc):
        if self.proc is None or self.proc.poll() is not None: return
        try: os.killpg(self.proc.pid, signal.SIGTERM) # the server shuts its kernels down on SIGTERM
        except ProcessLookupError: return
        try: self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired: pass
        try: os.killpg(self.proc.pid, signal.SIGKILL) # whatever is left of the group (a stuck kernel)
        except ProcessLookupError: pass
        self.proc.wait(); self.log.close()


def _browser(tmp: Path, console: bool = False, timeout: float = 120):
    "Headless Chromium driven by Debian's chromedriver, with a fresh profile (and the console's messages if `console`)."
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError: raise CheckFailed('selenium is not installed in the venv: pip install selenium')
    binary = next((b for b in CHROMIUM if Path(b).exists()), None)
    if binary is None or not Path(CHROMEDRIVER).exists():
        raise CheckFailed('Chromium or chromedriver is missing: run `make browser` (apt-get install chromium chromium-driver)')
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for f in CHROMIUM_FLAGS + [f'--user-data-dir={tmp / "chromium-profile"}']: opts.add_argument(f)
    if console: opts.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER, log_output=str(tmp / 'chromedriver.log')), options=opts)
    driver.set_page_load_timeout(timeout)
    return driver


# JavaScript run in the page: what the notebook panel shows right now.
_STATE_JS = r"""
const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
if (!panel) return null;
const cells = [...panel.querySelectorAll('.jp-Notebook > .jp-Cell, .jp-WindowedPanel-viewport > .jp-Cell')];
const code = cells.filter(c => c.classList.contains('jp-CodeCell'));
const prompt = c => { const p = c.querySelector('.jp-InputArea-prompt'); return p ? p.innerText.trim() : ''; };
const text = e => e.innerText.trim().slice(0, 1500);
const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget; // exposed by --LabApp.expose_app_in_browser
const model = widget && widget.content && widget.content.model ? widget.content.model.toJSON() : null;
return {
  cells: cells.length,
  prompts: code.map(prompt),
  status: (panel.querySelector('.jp-Notebook-ExecutionIndicator') || {dataset: {}}).dataset.status || null,
  kernel: (panel.querySelector('.jp-KernelName') || {innerText: ''}).innerText.trim(),
  dirty: !!document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty'),
  // outputs as the notebook model holds them (the DOM renders an error and a stderr stream alike)
  errors: model ? model.cells.flatMap((c, i) => (c.outputs || []).filter(o => o.output_type === 'error')
      .map(o => [i, c.execution_count, [].concat(c.source).join('').split('\n')[0], `${o.ename}: ${o.evalue}`])) : [],
  stderr: model ? model.cells.flatMap((c, i) => (c.outputs || []).filter(o => o.output_type === 'stream' &&
      o.name === 'stderr').map(o => [i, [].concat(o.text).join('')])) : [],
  metadata: model ? model.metadata : null,
  images: [...panel.querySelectorAll('img')].map(i => [i.getAttribute('src').slice(0, 200), i.complete, i.naturalWidth]),
  dialogs: [...document.querySelectorAll('.jp-Dialog')].map(text),
  toasts: [...document.querySelectorAll('.Toastify__toast--error')].map(text),
  notices: [...document.querySelectorAll('.Toastify__toast')].map(text).filter(t => /news|update/i.test(t)),
};
"""


def _state(driver) -> dict | None: return driver.execute_script(_STATE_JS)


def _no_dialogs(nb: str, st: dict):
    if st['dialogs']: raise CheckFailed(f'{nb}: a dialog appeared: {st["dialogs"][0]!r}')
    if st['toasts']: raise CheckFailed(f'{nb}: an error notification appeared: {st["toasts"][0]!r}')
    if st['notices']: raise CheckFailed(f'{nb}: JupyterLab asked about news or updates: {st["notices"][0]!r}')


def _wait(driver, nb: str, what: str, ok, timeout: float) -> dict:
    "Poll the page until `ok(state)`; fail on a dialog, a dead kernel or the timeout."
    deadline, st = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        st = _state(driver)
        if st is not None:
            _no_dialogs(nb, st)
            if st['status'] == 'dead': raise CheckFailed(f'{nb}: the kernel is dead ({what})')
            if ok(st): return st
        time.sleep(0.5)
    raise CheckFailed(f'{nb}: timed out after {timeout:.0f} s {what}; last state: '
                      f'{ {k: st[k] for k in ("status", "prompts", "kernel")} if st else "no notebook panel"}')


def _command(driver, menu: str, command: str):
    "Choose a command from JupyterLab's menu bar, as a user would click it."
    from selenium.webdriver.common.by import By
    driver.find_element(By.XPATH, f"//li[contains(@class,'lm-MenuBar-item')][.//div[text()='{menu}']]").click()
    item = driver.find_element(By.CSS_SELECTOR, f"li.lm-Menu-item[data-command='{command}']")
    item.click()


def _screenshot(driver, path: Path, max_height: int = 30000):
    "A screenshot of the whole notebook: grow the window until the notebook no longer scrolls, then shoot."
    width, height = driver.get_window_size()['width'], driver.get_window_size()['height']
    js = "const s=document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer');" \
         "return s ? [s.scrollHeight, s.clientHeight] : [0, 0];"
    for _ in range(5):
        scroll, client = driver.execute_script(js)
        if scroll <= client or height >= max_height: break
        height = min(max_height, height + scroll - client + 40)
        driver.set_window_size(width, height); time.sleep(1.0)
    driver.execute_script("const s=document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
                          ".jp-WindowedPanel-outer'); if (s) s.scrollTop = 0;")
    time.sleep(0.5)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f'.{path.stem}.tmp.png')
    if not driver.save_screenshot(str(tmp)): raise CheckFailed(f'could not save the screenshot {path}')
    os.replace(tmp, path)
    driver.set_window_size(width, 1000)


def check_notebook(driver, lab: Lab, nb: str, out: Path, timeout: float) -> dict:
    "Open `nb` (a path under nbs/), run all its cells through the UI, check what it shows, save its screenshot."
    t0 = time.monotonic()
    file = lab.repo / 'nbs' / nb
    before = _digest(file)
    # `reset` starts from an empty workspace, so only this notebook is open.
    driver.get(f'{lab.url}/lab/tree/nbs/{nb}?reset&token={lab.token}')
    opened = _wait(driver, nb, 'waiting for the notebook and its kernel',
                   lambda s: s['cells'] > 0 and s['status'] == 'idle' and s['kernel'] not in ('', 'No Kernel'), 180)
    t_open = time.monotonic() - t0
    time.sleep(2) # JupyterLab writes the kernel's metadata into the model once it is connected
    opened = _state(driver)
    if opened['dirty']:
        on_disk = json.loads(file.read_text())['metadata']
        changed = {k: (on_disk.get(k), v) for k, v in (opened['metadata'] or {}).items() if on_disk.get(k) != v}
        _log(f'{nb}: note: JupyterLab marks it modified right after opening (see scripts/lab_metadata.py); '
             'its metadata (file -> JupyterLab): '
             + '; '.join(f'{k}: {json.dumps(a)} -> {json.dumps(b)}' for k, (a, b) in changed.items()))
    _command(driver, 'View', 'filebrowser:toggle-main') # hide the file browser: the notebook gets the width
    t_run = time.monotonic()
    _command(driver, 'Run', 'runmenu:run-all') # Run > Run All Cells
    n_code = len(opened['prompts'])
    started = lambda s: any('*' in p for p in s['prompts']) or all(p.strip('[]: ') for p in s['prompts'])
    if n_code: _wait(driver, nb, 'waiting for Run All Cells to start', started, 60)
    done = _wait(driver, nb, 'running all cells', lambda s: s['status'] == 'idle' and
                 not any('*' in p for p in s['prompts']), timeout)
    ran = time.monotonic() - t_run
    if done['errors']:
        i, count, line, error = done['errors'][0]
        raise CheckFailed(f'{nb}: cell {i + 1} of {done["cells"]} (In [{count}], starting {line!r}) raised {error}')
    not_run = [i for i, p in enumerate(done['prompts']) if not p.strip('[]: ')]
    if not_run: raise CheckFailed(f'{nb}: code cells {not_run} (among the code cells) were not executed by Run All Cells')
    # images: wait until each has loaded or failed, then a naturalWidth of 0 is a broken image
    done = _wait(driver, nb, 'waiting for images to load', lambda s: all(c for _, c, _ in s['images']), 30)
    broken = [src.split('?')[0].replace(lab.url, '') for src, _, w in done['images'] if w == 0]
    if broken: raise CheckFailed(f'{nb}: broken image(s), the server could not give: {broken}')
    shot = out / f'{Path(nb).stem}.png'
    _screenshot(driver, shot)
    _no_dialogs(nb, _state(driver))
    if _digest(file) != before: raise CheckFailed(f'{nb}: JupyterLab saved the notebook (it must not)')
    for i, text in done['stderr']: _log(f'{nb}: note: cell {i} wrote to stderr: {text[:300]!r}')
    return dict(notebook=nb, cells=done['cells'], code_cells=n_code, images=len(done['images']),
                open_seconds=round(t_open, 1), run_seconds=round(ran, 1), total_seconds=round(time.monotonic() - t0, 1), screenshot=str(shot))


def _shown(path: Path) -> Path:
    "A path as the log shows it: relative to the repository when inside it (an --out elsewhere is shown whole)."
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('notebooks', nargs='+', help='notebooks under nbs/, e.g. index.ipynb')
    p.add_argument('--venv', default='.venv', help="the project's venv (its bin/jupyter runs JupyterLab)")
    p.add_argument('--out', default='figures/lab', help='folder for the screenshots, relative to the repository')
    p.add_argument('--timeout', type=float, default=900, help='seconds allowed for one notebook to run')
    p.add_argument('--keep', action='store_true', help='keep the temporary folder (logs, the copy) for debugging')
    a = p.parse_args(argv)
    nbs = [n[len('nbs/'):] if n.startswith('nbs/') else n for n in a.notebooks]
    missing = [n for n in nbs if not (ROOT / 'nbs' / n).is_file()]
    if missing: raise SystemExit(f'lab-check FAILED: no such notebook(s) under {ROOT / "nbs"}: {missing}')
    venv, out = (ROOT / a.venv).resolve(), ROOT / a.out
    tmp = Path(tempfile.mkdtemp(prefix='lab-check-'))
    t0, results, driver = time.monotonic(), [], None
    try:
        with Lab(venv, tmp) as lab:
            _log(f'JupyterLab {lab.url} (127.0.0.1 only, token) on a copy of the repository in {tmp}')
            try:
                driver = _browser(tmp)
                for nb in nbs:
                    try: r = check_notebook(driver, lab, nb, out, a.timeout)
                    except Exception:
                        shot = Path(tempfile.gettempdir()) / f'lab-check-{Path(nb).stem}-failed.png'
                        try: driver.save_screenshot(str(shot)); _log(f'{nb}: the page when it failed: {shot}')
                        except Exception: pass
                        raise
                    results.append(r)
                    _log(f"{nb}: OK: opened with an idle kernel in {r['open_seconds']} s, {r['code_cells']} code cells run in "
                         f"{r['run_seconds']} s, {r['images']} images, "
                         f"screenshot {_shown(Path(r['screenshot']))}")
            except Exception as e: # a failed check, or the browser could not do what was asked (selenium's errors)
                what = str(e) if isinstance(e, CheckFailed) else \
                       f'the browser failed: {type(e).__name__}: {getattr(e, "msg", None) or e}'
                raise CheckFailed(f'{what}\n--- the last lines of the JupyterLab log ---\n{lab.log_tail()}') from None
            finally:
                if driver is not None: driver.quit()
                # kernels' own warnings and errors (they reach only the server's log)
                kernel_warnings = list(dict.fromkeys(
                    l.strip() for l in lab.log_path.read_text(errors='replace').splitlines()
                    if l.startswith('[IPKernelApp]') and any(w in l for w in ('WARNING', 'ERROR', 'CRITICAL'))))
    except CheckFailed as e:
        print(f'lab-check FAILED: {e}', file=sys.stderr)
        if a.keep: print(f'lab-check: logs and the copy kept in {tmp}', file=sys.stderr)
        return 1
    finally:
        if not a.keep: shutil.rmtree(tmp, ignore_errors=True)
    for line in kernel_warnings: _log(f'note: a kernel logged: {line}')
    _log(f'all {len(results)} notebook(s) ran without errors in {time.monotonic() - t0:.0f} s')
    return 0


if __name__ == '__main__': sys.exit(main())
