#!/usr/bin/env python
"""`make test-slurm`: the smoke grid through `python -m posattn.sweep --executor slurm`, one task requeued mid-run,
checked against the local executor's results for the same runs.

On the one-node cluster of `make slurm-up`: submit the smoke grid (treatments siren_1d and span_2d, RandomStates 9188
and 2755) as ONE job array to the `debug` partition, into a fresh results folder (not under /tmp); as soon as the
span_2d-seed-9188 run has written its first epoch's checkpoint, `scontrol requeue` its task; release it from SLURM's
requeue delay a few seconds later (`scontrol update JobId=.. StartTime=now`); meanwhile run the same four runs with
`--executor local` into another folder. Then check that every run of both folders is finished, that each SLURM
result equals the local one bit for bit (val_acc_max, best_epoch, the history without its timings, the learned
spans), and that the requeue happened and was resumed: the run's attempts file has a `terminated` attempt then an
`ok` one with SLURM_RESTART_COUNT=1, sacct shows REQUEUED then COMPLETED, and the result says it resumed from a
checkpoint. Prints the evidence and the time taken; exit code 0 when every check holds, 1 otherwise.

    python scripts/slurm/test_sweep.py [--folder DIR] [--timeout-s 900] [--keep-requeue-delay]
"""
import argparse, json, os, shutil, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's posattn, not an installed one
from posattn.experiment.cluster import attempts, log_tail
from posattn.experiment.runs import is_finished, run_paths
from posattn.experiment.sweep import sweep_status

TREATMENTS, SEEDS, VICTIM = ('siren_1d', 'span_2d'), (9188, 2755), ('span_2d', 9188)
os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH')])), PYTHONUNBUFFERED='1')
ENV = dict(os.environ)  # every command below (and SLURM's tasks, which inherit it) uses this checkout's posattn


def say(*lines): print(*(f'test-slurm: {l}' for l in lines), sep='\n', flush=True)

def sh(*cmd: str) -> str: return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()

def sweep_cmd(results: Path, *executor: str) -> list[str]:
    "The command a user would type for the smoke grid into `results`."
    return [sys.executable, '-m', 'posattn.sweep', '--profile', 'smoke', '--treatments', *TREATMENTS,
            '--seeds', *map(str, SEEDS), '--results-dir', str(results), '-p', f'figures_dir={results.parent / ("figures-" + results.name)}',
            '-p', 'threads=1', *executor]

def requeue_victim(results: Path, job_id: str, timeout_s: float) -> int | None:
    "`scontrol requeue` the victim's task once its first checkpoint exists and before its result: the epoch it had."
    paths = run_paths('smoke', *VICTIM, results)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if is_finished(paths['result']): return None  # too late: it finished first
        if paths['checkpoint'].exists():
            import torch
            try: epoch = torch.load(paths['checkpoint'], map_location='cpu', weights_only=True)['epoch']
            except Exception: time.sleep(0.1); continue  # being replaced this instant
            say(f'the victim {VICTIM[0]}-seed-{VICTIM[1]} (task {job_id}) checkpointed epoch {epoch}: scontrol requeue {job_id}')
            r = subprocess.run(['scontrol', 'requeue', job_id], capture_output=True, text=True)
            if r.returncode: say(f'scontrol requeue failed: {r.stderr.strip()}'); return None
            return epoch
        time.sleep(0.1)
    return None

def wait_slurm(results: Path, job_ids: list[str], keep_delay: bool, timeout_s: float) -> list:
    "Poll the sweep's status until every run is done or failed, releasing requeued tasks held by BeginTime after 5 s."
    held, deadline = {}, time.time() + timeout_s
    while True:
        rows = sweep_status('smoke', results).get('smoke', [])
        if (rows and all(r.state in ('done', 'failed') for r in rows)) or time.time() > deadline: return rows
        for j in job_ids:
            if keep_delay or sh('squeue', '-h', '-j', j, '-o', '%T %r') != 'PENDING BeginTime': continue
            if time.time() - held.setdefault(j, time.time()) >= 5:
                say(f'{j} waits for its BeginTime after the requeue: scontrol update JobId={j} StartTime=now')
                subprocess.run(['scontrol', 'update', f'JobId={j}', 'StartTime=now'], capture_output=True); held.pop(j)
        time.sleep(1)

def same_run(a: dict, b: dict) -> list[str]:
    "What differs between two results of one run, bit for bit (timings aside)."
    strip = lambda h: [{k: v for k, v in e.items() if k != 'seconds'} for e in h]
    return [k for k, x, y in (('val_acc_max', a['val_acc_max'], b['val_acc_max']), ('best_epoch', a['best_epoch'], b['best_epoch']),
                              ('history', strip(a['history']), strip(b['history'])), ('spans', a['spans'], b['spans'])) if x != y]

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--folder', default=os.environ.get('POSATTN_SLURM_DIR', '/var/lib/posattn-slurm') + '/test-sweep')
    ap.add_argument('--timeout-s', type=float, default=900)
    ap.add_argument('--keep-requeue-delay', action='store_true', help="wait out SLURM's ~2 minutes before a requeued task restarts")
    a = ap.parse_args()
    t0 = time.time()
    if shutil.which('sbatch') is None or subprocess.run(['scontrol', 'ping'], capture_output=True).returncode:
        say('no SLURM controller answers (run `make slurm-up` first)'); return 1
    root = Path(a.folder) / time.strftime('%Y%m%d-%H%M%S')
    slurm, local = root / 'slurm', root / 'local'
    root.mkdir(parents=True)
    say(f'results: SLURM {slurm}, local {local}')

    # 1. the grid as one SLURM array, exactly as a user submits it
    cmd = sweep_cmd(slurm, '--executor', 'slurm', '--partition', 'debug', '--time', '10', '--cpus-per-run', '1', '--mem-gb', '1')
    say('$ python ' + ' '.join(cmd[1:]))
    sub = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ENV)
    print(sub.stdout + sub.stderr, flush=True)
    if sub.returncode: say(f'the SLURM sweep exited with {sub.returncode}'); return 1
    manifest = [json.loads(l) for l in (slurm / 'smoke/submitit/runs.jsonl').read_text().splitlines()]
    jobs = {m['name']: m['job_id'] for m in manifest}
    victim = jobs[f'{VICTIM[0]}-seed-{VICTIM[1]}']

    # 2. the same runs on the local executor, meanwhile
    lcmd = sweep_cmd(local, '--executor', 'local', '--jobs', '2')
    say('$ python ' + ' '.join(lcmd[1:]) + '   (in the background)')
    local_sweep = subprocess.Popen(lcmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=ENV)

    # 3. requeue one task mid-run, let every run end
    epoch = requeue_victim(slurm, victim, a.timeout_s)
    rows = wait_slurm(slurm, [victim], a.keep_requeue_delay, a.timeout_s)
    out, _ = local_sweep.communicate(timeout=a.timeout_s)
    print(out, flush=True)
    t_runs = time.time() - t0

    # 4. the evidence
    st = sh(sys.executable, '-m', 'posattn.sweep', '--status', '--profile', 'smoke', '--results-dir', str(slurm))
    say('$ python -m posattn.sweep --status --profile smoke --results-dir ' + str(slurm)); print(st, flush=True)
    vp = run_paths('smoke', *VICTIM, slurm)
    state = Path(f"{vp['log']}.state.jsonl")
    say(f'attempts file of the requeued run ({state}):'); print(state.read_text(), flush=True)
    vlog = vp['log'].read_text().splitlines()
    say('its log, attempt headers and resume lines:')
    print('\n'.join(l for l in vlog if l.startswith('=== ') or 'resumed from epoch' in l), flush=True)
    array = victim.split('_')[0]
    time.sleep(2)  # accounting reaches slurmdbd a moment after the end
    say(f'$ sacct -D -X -j {array} -o JobID,State,Start,End,ExitCode'); print(sh('sacct', '-D', '-X', '-j', array, '-o', 'JobID%12,State%12,Start,End,ExitCode'), flush=True)
    victim_states = sh('sacct', '-D', '-X', '-n', '-P', '-j', victim, '-o', 'State').split()

    # 5. the checks
    checks = {'the SLURM sweep submitted one array of 4 tasks': len({j.split('_')[0] for j in jobs.values()}) == 1 and len(jobs) == 4,
              'a task was requeued mid-run (after a checkpoint, before its result)': epoch is not None,
              'every SLURM run is done': [r.state for r in rows] == ['done'] * 4,
              'the local sweep exited with 0': local_sweep.returncode == 0}
    results = {}
    for t in TREATMENTS:
        for s in SEEDS:
            pair = [run_paths('smoke', t, s, r)['result'] for r in (slurm, local)]
            checks[f'{t}-seed-{s}: finished in both folders'] = all(is_finished(p) for p in pair)
            if all(is_finished(p) for p in pair):
                results[(t, s)] = [json.loads(p.read_text()) for p in pair]
                diff = same_run(*results[(t, s)])
                checks[f'{t}-seed-{s}: SLURM == local bit for bit' + (f' (differs: {diff})' if diff else '')] = not diff
    att = attempts(state)
    checks['the requeued run: attempts terminated, then ok with SLURM_RESTART_COUNT=1'] = (
        [x.get('end') for x in att] == ['terminated', 'ok'] and att[1].get('slurm_restart_count') == '1')
    checks['the requeued run resumed from its checkpoint (result resumed_from)'] = bool(
        epoch and results.get(VICTIM) and results[VICTIM][0]['resumed_from'] == [epoch])
    checks['sacct: the requeued task REQUEUED, then COMPLETED'] = victim_states[:1] == ['REQUEUED'] and victim_states[-1:] == ['COMPLETED']
    checks['--status: the requeued run done after 2 attempts, 1 requeue'] = any(
        r.name == f'{VICTIM[0]}-seed-{VICTIM[1]}' and (r.state, r.attempts, r.requeues) == ('done', 2, 1) for r in rows)
    for r in rows:
        if r.state == 'failed': say(f'{r.name} failed: {r.note}\n{r.tail}')
    print('\ntest-slurm checks:')
    for k, v in checks.items(): print(f"  {'PASS' if v else 'FAIL'}  {k}")
    say(f'{sum(checks.values())}/{len(checks)} checks passed; runs took {t_runs:.0f}s, all {time.time() - t0:.0f}s; files in {root}')
    return 0 if all(checks.values()) else 1


if __name__ == '__main__':
    sys.exit(main())
