#!/usr/bin/env python
"""Prove posattn.experiment.cluster on the real one-node SLURM cluster (`make slurm-up` first).

Submits a 4-task job array of a small resumable command (it counts to N, saving its progress after each step, and
writes a done file at the end) to the `debug` partition, `scontrol requeue`s one task mid-run, waits, and checks:
every run finished; the requeued run has two attempts, the second with SLURM_RESTART_COUNT=1, and resumed from its
saved progress (not from 0); sacct shows the requeue (REQUEUED, then COMPLETED). Then a 5th run with a 1-minute time
limit and a 45 s signal delay: submitit's USR2 arrives 15-45 s in, checkpoint() requeues it (submitit calls
`scontrol requeue` itself), and it resumes and finishes. Prints the evidence; exit code 0 when every check holds, 1
otherwise. Not part of `make test` (CI has no SLURM). SLURM holds a requeued job back for ~2 minutes (BeginTime);
the test releases it after 5 s (`scontrol update JobId=.. StartTime=now`) unless --keep-requeue-delay.

    python scripts/slurm/selftest.py [--folder DIR] [--steps 30] [--step-s 0.5] [--keep-requeue-delay]
"""
import argparse, json, os, shutil, subprocess, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's posattn, not an installed one
from posattn.experiment.cluster import RunTask, make_executor, submit, status, status_table, attempts, log_tail

COUNT = '''import pathlib, sys, time
progress, done, n, step = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
k = int(progress.read_text()) if progress.exists() else 0
print(f"resuming at {k} of {n}", flush=True)
while k < n:
    time.sleep(step); k += 1
    tmp = progress.with_suffix('.tmp'); tmp.write_text(str(k)); tmp.replace(progress)  # atomic, like a checkpoint
done.write_text(str(k)); print(f"counted to {k}", flush=True)
'''


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


_held_since: dict = {}

def release(job_id: str, keep_delay: bool, after_s: float = 5.0) -> None:
    """Release a requeued job held back by SLURM's requeue delay (pending, reason BeginTime), `after_s` seconds after
    it was first seen held: released in the same second as its requeue, slurmd refuses it ("Job credential revoked")
    and the job fails, which is what the delay protects against."""
    line = sh('squeue', '-h', '-j', job_id, '-o', '%T %r')
    if keep_delay or line != 'PENDING BeginTime': return
    first = _held_since.setdefault(job_id, time.time())
    if time.time() - first >= after_s:
        print(f'selftest: {job_id} is {line} after its requeue; releasing it: scontrol update JobId={job_id} StartTime=now')
        subprocess.run(['scontrol', 'update', f'JobId={job_id}', 'StartTime=now'], check=False)
        _held_since.pop(job_id)


def sacct_final(job_id: str, timeout_s: float = 60) -> list:
    "The job's states in sacct, every record (-D), once the last one is final (accounting reaches slurmdbd a bit late)."
    deadline = time.time() + timeout_s
    while True:
        states = sh('sacct', '-D', '-n', '-X', '-P', '-j', job_id, '-o', 'State').split()
        if (states and states[-1] not in ('PENDING', 'RUNNING', 'REQUEUED', 'COMPLETING')) or time.time() > deadline:
            return states
        time.sleep(1)


def wait_all(folder: Path, job_ids, keep_delay: bool, timeout_s: float):
    "Poll status(folder) until every run is done or failed, releasing requeued jobs."
    deadline = time.time() + timeout_s
    while True:
        rows = status(folder)
        if all(r.state in ('done', 'failed') for r in rows) or time.time() > deadline: return rows
        for j in job_ids: release(j, keep_delay)
        time.sleep(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--folder', default=os.environ.get('POSATTN_SLURM_DIR', '/var/lib/posattn-slurm') + '/selftest')
    ap.add_argument('--steps', type=int, default=30)
    ap.add_argument('--step-s', type=float, default=0.5)
    ap.add_argument('--keep-requeue-delay', action='store_true',
                    help="wait out SLURM's delay before a requeued job may start again instead of releasing it")
    ap.add_argument('--timeout-s', type=float, default=600)
    a = ap.parse_args()
    t_start = time.time()
    if shutil.which('sbatch') is None or subprocess.run(['scontrol', 'ping'], capture_output=True).returncode:
        print('selftest: no SLURM controller answers (run `make slurm-up` first)'); return 1
    root = Path(a.folder) / time.strftime('%Y%m%d-%H%M%S')
    root.mkdir(parents=True)
    script = root / 'count.py'; script.write_text(COUNT)
    tasks = [RunTask(f'count-{i}', [sys.executable, str(script), str(root / f'work/{i}.progress'),
                                    str(root / f'work/{i}.done'), str(a.steps), str(a.step_s)],
                     log=root / f'logs/count-{i}.log', done=root / f'work/{i}.done') for i in range(4)]
    (root / 'work').mkdir()
    ex = make_executor('slurm', root / 'submitit', partition='debug', time='00:10:00', cpus_per_run=1, mem_gb=1,
                       array_parallelism=4)
    jobs = submit(tasks, ex)
    victim = jobs[1].job_id  # e.g. '12_1'
    progress = root / 'work/1.progress'

    # requeue task 1 once it is running and has saved some progress
    deadline = time.time() + 120
    while time.time() < deadline and not (progress.exists() and int(progress.read_text() or 0) >= 5):
        time.sleep(0.2)
    if not progress.exists():
        print(f'selftest: task {victim} never started'); print(sh('squeue')); return 1
    before = int(progress.read_text())
    print(f'\nselftest: requeueing {victim} at progress {before}/{a.steps}: scontrol requeue {victim}')
    r = subprocess.run(['scontrol', 'requeue', victim], capture_output=True, text=True)
    if r.returncode: print('selftest: scontrol requeue failed:', r.stderr); return 1
    rows = wait_all(root / 'submitit', [victim], a.keep_requeue_delay, a.timeout_s)
    print('\n' + status_table(rows))

    checks = {}
    checks['all 4 runs done'] = [r.state for r in rows] == ['done'] * 4
    checks['every done file says steps'] = all((root / f'work/{i}.done').exists() and
                                               int((root / f'work/{i}.done').read_text()) == a.steps for i in range(4))
    att = attempts(tasks[1].state)
    print(f'\nselftest: state file of count-1 ({tasks[1].state}):')
    print(Path(tasks[1].state).read_text())
    checks['count-1 has 2 attempts'] = len(att) == 2
    checks['count-1 attempt 2 has SLURM_RESTART_COUNT=1'] = len(att) == 2 and att[1].get('slurm_restart_count') == '1'
    checks['count-1 attempt 1 ended terminated'] = len(att) == 2 and att[0].get('end') == 'terminated'
    log1 = Path(tasks[1].log).read_text()
    print(f'selftest: log of count-1 ({tasks[1].log}):\n{log1}')
    resumed = [int(l.split()[2]) for l in log1.splitlines() if l.startswith('resuming at')]
    checks['count-1 resumed from its saved progress'] = len(resumed) == 2 and resumed[0] == 0 and resumed[1] >= before
    others = [attempts(t.state) for t in tasks[:1] + tasks[2:]]
    checks['the other 3 ran once'] = all(len(x) == 1 and x[0].get('end') == 'ok' for x in others)
    array_id = victim.split('_')[0]
    states1 = sacct_final(victim)
    acct = sh('sacct', '-D', '-j', array_id, '-X', '-o', 'JobID%12,State%12,Start,End,ExitCode,NodeList')
    print(f'selftest: sacct -D -j {array_id} -X\n{acct}')
    checks['sacct shows count-1 REQUEUED then COMPLETED'] = states1 == ['REQUEUED', 'COMPLETED']
    results = [j.result() for j in jobs]
    checks['job.result() of each task'] = [x['status'] for x in results] == ['ok'] * 4
    print(f"selftest: job.result(): {json.dumps(results)}")

    # a 5th run that outlives its time limit: submitit's signal, checkpoint(), requeue by submitit, resume
    # slurmctld checks time limits every 30 s: the signal due 15 s in comes 15-45 s in, so the run lasts 50 s
    slow_steps = int(50 / a.step_s)
    slow = RunTask('slow', [sys.executable, str(script), str(root / 'work/slow.progress'), str(root / 'work/slow.done'),
                            str(slow_steps), str(a.step_s)], log=root / 'logs/slow.log', done=root / 'work/slow.done')
    ex = make_executor('slurm', root / 'submitit-timeout', partition='debug', time=1, signal_delay_s=45,
                       cpus_per_run=1, mem_gb=1, max_timeouts=5)
    print(f'\nselftest: a run of {slow_steps * a.step_s:.0f}s with time=1 (minute), signal_delay_s=45')
    job, = submit([slow], ex)
    rows = wait_all(root / 'submitit-timeout', [job.job_id], a.keep_requeue_delay, a.timeout_s)
    print(status_table(rows))
    print(f'selftest: state file of slow:\n{Path(slow.state).read_text()}')
    print(f'selftest: log of slow:\n{Path(slow.log).read_text()}')
    print('selftest: submitit\'s log of the job (stderr):\n' + log_tail(job.paths.stderr, 12))
    att = attempts(slow.state)
    checks['slow run done'] = [r.state for r in rows] == ['done']
    checks['slow attempt 1 ended requeued by checkpoint()'] = len(att) >= 2 and att[0].get('end') == 'requeued'
    resumed = [int(l.split()[2]) for l in Path(slow.log).read_text().splitlines() if l.startswith('resuming at')]
    checks['slow attempt 2 has SLURM_RESTART_COUNT=1 and resumed'] = (
        len(att) >= 2 and att[1].get('slurm_restart_count') == '1' and len(resumed) >= 2 and 0 < resumed[1] < slow_steps)
    acct = sacct_final(job.job_id)
    print(f'selftest: sacct -D -j {job.job_id}: {acct}')
    checks['sacct shows slow REQUEUED then COMPLETED'] = acct[:1] == ['REQUEUED'] and acct[-1:] == ['COMPLETED'] and len(acct) == len(att)

    print('\nselftest checks:')
    for k, v in checks.items(): print(f"  {'PASS' if v else 'FAIL'}  {k}")
    print(f'selftest: {sum(checks.values())}/{len(checks)} checks passed in {time.time() - t_start:.1f}s; files in {root}')
    return 0 if all(checks.values()) else 1


if __name__ == '__main__':
    sys.exit(main())
