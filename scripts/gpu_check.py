#!/usr/bin/env python
"""The device check: posattn on a GPU in minutes, written to results/bench/gpu.json and gpu.md.

On a GPU, in this order (each section saved as it lands; a time budget cuts the tail):
1. one training step of every paper treatment at 32x32 against the fused-SDPA floor, every version side by side
   (fast, flex, triton, triton_band), float32 and bf16 autocast, then compiled, then 16x16: seconds per step,
   images/s, peak memory, the projected hours of one paper run. This decides what version='auto' runs on CUDA;
2. where each version's step spends its device time (torch.profiler, kernels by name);
3. one 2-D layer per window (9x9, the full span, 3x3, 17x17): the fused versions against fast, errors, time, peak
   memory and the memory a call leaves allocated;
4. torch.compile of the block against eager, the NaN semantics, host synchronisations per attention call, and every
   version and encoding against Version 1 in float64 (outputs and gradients; then under bf16 autocast);
5. the paper's layouts under each window, and a short real run through the runner on the offline CIFAR-10 copy.

Runs from the checkout with nothing installed (`PYTHONPATH=. python scripts/gpu_check.py`), on torch 2.11 and 2.14.
`--warm K/N` (N processes side by side, before the check) compiles the fused kernels into Triton's and Inductor's
on-disk caches, so that the check's time goes to measuring. `--quick` is a short pass to run first, correctness
first; `--device cpu --quick` runs on a machine without a GPU (CI) and writes to results/bench/gpu-cpu.json, which
is not versioned, so a CPU pass never replaces a GPU's results. An error in one section is recorded and the next
one runs.
"""
import argparse, copy, functools, json, math, os, platform, sys, tarfile, tempfile, time, traceback, warnings
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from posattn.layers.block import (PositionalSelfAttention, VERSIONS, TERMS_VERSIONS, FUSED_VERSIONS,  # noqa: E402
                                   DEVICE_VERSIONS, _load_fused)
from posattn.encodings.catalogue import PAPER_ENCODINGS, RELATIVE_ENCODINGS  # noqa: E402
from posattn.experiment.benchmark import _layer, peak_mb, _sync  # noqa: E402
from posattn.experiment.training_bench import train_model  # noqa: E402
from posattn.experiment.runs import code_version  # noqa: E402
from posattn.experiment.runs import PAPER_TREATMENTS, TREATMENTS  # noqa: E402

# The fused versions of the block (flex; triton, the positional term from the table P; triton_band, computed in the
# kernels, memory O(N)): trained on CUDA only (flex's backward and Triton's kernels need a GPU).
FUSED = FUSED_VERSIONS
GPU_ONLY = FUSED

PAPER = dict(batch=20, blocks=6, d=64, heads=8, sides=(32, 16))  # the paper's configuration (Section 5), and 16x16
SMALL = dict(batch=4, blocks=2, d=16, heads=2, sides=(8,))  # the CPU pass: the same code paths at a size CI runs in seconds
PAPER_RUN = dict(epochs=80, train=40_000, val=10_000)  # one paper run: 80 epochs of 40,000 images, validation each epoch
WINDOWS = ((3, 3), (9, 9), (17, 17), None)  # None: the full span


def _median_time(step, dev, repeats: int, warmup: int = 2) -> float:
    "Median seconds of `step` over `repeats` runs after `warmup` (CUDA events on a GPU)."
    for _ in range(warmup): step()
    times = []
    for _ in range(repeats):
        if dev.type == 'cuda':
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); step(); b.record(); b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    "max |a - b| / max |b| (NaN-aware: a NaN where b has none is an infinite error)."
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    if not torch.equal(a.isnan(), b.isnan()): return math.inf
    a, b = a.nan_to_num(), b.nan_to_num()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item() if b.numel() else 0.


def _grad_errors(got: list, want: list) -> float:
    "The largest relative error over the gradients, leaving out the ones that are 0 up to rounding (under 1e-6 of the largest)."
    top = max(w.abs().max().item() for w in want)
    return max([_rel(g, w) for g, w in zip(got, want) if w.abs().max().item() > 1e-6 * top] or [0.])


def _is_oom(e) -> bool: return 'out of memory' in str(e).lower()


# ---------------------------------------------------------------- 1. correctness
def _cases(quick: bool):
    "(structure_size, block options) of the correctness check."
    cases = [([20], dict(pe='baseline', span='gaussian', threshold=0.1)),
             ([6, 7], dict(pe='siren', dims=2, span='gaussian', threshold=0.2)),
             ([6, 7], dict(pe='siren', dims=2, span='gaussian')),
             ([3, 4, 3], dict(pe='siren', dims=3, span='gaussian', threshold=0.2))]
    if quick: return cases[1:3]
    return cases + [([6, 7], dict(pe=pe, dims=2)) for pe in RELATIVE_ENCODINGS if pe not in PAPER_ENCODINGS]


def _forward_backward(block, x, S, r):
    "Output and the gradients of (output * r).sum() for x and every parameter."
    x = x.clone().requires_grad_()
    y = block(x, S)
    params = [p for p in block.parameters() if p.requires_grad]
    grads = torch.autograd.grad((y * r).sum(), [x] + params, allow_unused=True)
    return y, [torch.zeros_like(t) if g is None else g for g, t in zip(grads, [x] + params)]


def correctness(dev, quick: bool, bf16: bool = False, time_left=lambda: math.inf) -> list[dict]:
    "Every version and encoding on `dev` against Version 1 in float64 on the CPU: in float32, or on one case under bfloat16 autocast (as training runs it), within bfloat16's rounding."
    rows, (out_tol, grad_tol) = [], ((5e-2, 1e-1) if bf16 else (1e-4, 1e-3))
    for S, opts in (_cases(True)[:1] if bf16 else _cases(quick)):
        if time_left() < 15: break  # the cases measured are counted in gpu.md
        torch.manual_seed(0)
        ref_block = PositionalSelfAttention(16, 2, version='v1', **opts).double()
        x, r = torch.randn(2, math.prod(S), 16, dtype=torch.float64), torch.randn(2, math.prod(S), 16, dtype=torch.float64)
        want_y, want_g = _forward_backward(ref_block, x, S, r)
        for version in (*VERSIONS, *FUSED):
            if version not in TERMS_VERSIONS and opts['pe'] not in PAPER_ENCODINGS: continue
            if version.startswith('triton') and opts['pe'] not in PAPER_ENCODINGS: continue  # other encodings: in its notebook (each geometry is a compilation here)
            if version in GPU_ONLY and dev.type != 'cuda': continue
            block = copy.deepcopy(ref_block).float().to(dev)
            block.version = version
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
                y, g = _forward_backward(block, x.float().to(dev), S, r.float().to(dev))
            rows.append(dict(structure=S, **{k: v for k, v in opts.items() if k != 'dims'}, version=version,
                             window=list(block.span_size(S)), out_err=_rel(y.float(), want_y),
                             grad_err=_grad_errors([t.float() for t in g], want_g)))
            rows[-1]['ok'] = rows[-1]['out_err'] < out_tol and rows[-1]['grad_err'] < grad_tol
    return rows


def nan_semantics(dev) -> list[dict]:
    "A NaN in a token reaches exactly the queries whose window holds it, on the device, in every version."
    rows = []
    S, (r, c) = [9, 10], (6, 0)
    for threshold in (0.1, 0.):
        torch.manual_seed(0)
        block = PositionalSelfAttention(16, 2, pe='siren', dims=2, span='gaussian', threshold=threshold).to(dev)
        with torch.no_grad(): block.span.sigma.copy_(torch.tensor([0.05, 0.05]))
        x = torch.randn(2, math.prod(S), 16, device=dev)
        x.view(2, *S, 16)[0, r, c, 3] = math.nan
        reach = [(w - 1) // 2 for w in block.span_size(S)]
        rows_, cols = torch.meshgrid(torch.arange(S[0]), torch.arange(S[1]), indexing='ij')
        hit = ((rows_ - r).abs() <= reach[0]) & ((cols - c).abs() <= reach[1])
        for version in (*VERSIONS, *(FUSED if dev.type == 'cuda' else ('flex',))):
            block.version = version
            with torch.no_grad(): y = block(x, S).cpu()  # flex runs forward on the CPU too
            ok = torch.equal(y[0].isnan().any(-1).view(*S), hit) and bool(torch.isfinite(y[1]).all())
            rows.append(dict(version=version, threshold=threshold, window=list(block.span_size(S)), ok=ok))
    return rows


def host_syncs(dev) -> list[dict]:
    "Synchronisations CUDA reports during one attention call (the window given), after a warm-up call, per version."
    if dev.type != 'cuda': return []
    rows = []
    S = (16, 16)
    for W in ((5, 5), (31, 31)):
        torch.manual_seed(0)
        block = _layer(S, W if W != (31, 31) else None, 16, 2).to(dev)
        q, k, value = (torch.randn(2, 2, 256, 8, device=dev, requires_grad=True) for _ in range(3))
        from posattn.encodings.catalogue import relative_terms
        terms = relative_terms(block.encoding, S, 2).times(lambda off: block.span(off, S))
        for version in (*VERSIONS, *FUSED):
            f = VERSIONS[version] if version in VERSIONS else _load_fused(version)
            call = (lambda: f(q, k, value, block.u, block.v, S, W, terms=terms)) if version in (*TERMS_VERSIONS, *FUSED) else \
                   (lambda: f(q, k, value, block.u, block.v, S, W, terms.query, terms.factor))
            call().sum().backward(); _sync(dev)  # warm: cached layouts are built once, with a read of their own
            torch.cuda.set_sync_debug_mode('warn')
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter('always')
                    out = call()
                torch.cuda.set_sync_debug_mode(0)
                out.sum().backward(); _sync(dev)
            finally: torch.cuda.set_sync_debug_mode(0)
            syncs = [str(w.message).split('\n')[0][:120] for w in caught if 'synchroniz' in str(w.message).lower()]
            rows.append(dict(version=version, window=list(W), forward_syncs=len(syncs), first=syncs[:2]))
    return rows


def compiled_block(dev, quick: bool) -> list[dict]:
    "torch.compile of the block against eager on `dev`: every version, SIREN in 2-D with a thresholded span."
    rows = []
    import torch._dynamo
    S = [6, 7]
    for version in (('fast', 'v1') if quick else (*VERSIONS, *(FUSED if dev.type == 'cuda' else ()))):
        torch._dynamo.reset(); torch.manual_seed(0)
        block = PositionalSelfAttention(16, 2, pe='siren', dims=2, span='gaussian', threshold=0.2, version=version).to(dev)
        x, r = torch.randn(2, 42, 16, device=dev), torch.randn(2, 42, 16, device=dev)
        t = time.perf_counter()
        try:
            want_y, want_g = _forward_backward(block, x, S, r)
            y, g = _forward_backward(torch.compile(block), x, S, r)
            rows.append(dict(version=version, out_err=_rel(y, want_y), grad_err=_grad_errors(g, want_g),
                             compile_s=round(time.perf_counter() - t, 1)))
            rows[-1]['ok'] = rows[-1]['out_err'] < 1e-5 and rows[-1]['grad_err'] < 1e-4
        except Exception as e:
            rows.append(dict(version=version, ok=False, error=f'{type(e).__name__}: {str(e)[:300]}'))
    return rows


# ---------------------------------------------------------------- 2. one layer
def layer(dev, quick: bool, size: dict) -> list[dict]:
    "Forward and backward of one layer at 32x32 (batch 20, d 64, 8 heads): fast, v1, v3 and SDPA under each window."
    rows = []
    side, B, d, H = size['sides'][0], size['batch'], size['d'], size['heads']
    S = (side, side)
    windows = ((3, 3) if side < 9 else (9, 9), None) if quick else WINDOWS
    for W in windows:
        for version in ('sdpa', 'fast', 'v1', 'v3'):
            if version == 'v3' and W is None and side == 32:  # K* alone would be B x N x 63^2 x d floats: 21 GB, twice with V*
                rows.append(dict(version=version, window='full', skipped='K* and V* of a 63x63 window: 42 GB')); continue
            if version == 'sdpa' and W != windows[0]: continue  # the floor ignores the window: measured once
            torch.manual_seed(0)
            block = _layer(S, W, d, H).to(dev)
            x = torch.randn(B, side * side, d, device=dev)
            def step():
                block.zero_grad(set_to_none=True)
                if version == 'sdpa':
                    from posattn.core.attention import merge_heads
                    y = block.out(merge_heads(F.scaled_dot_product_attention(*block.project(x))))
                else:
                    block.version = version
                    y = block(x, S)
                y.sum().backward()
            try:
                t = _median_time(step, dev, 3 if quick else 10)
                rows.append(dict(version=version, window='x'.join(map(str, W)) if W else 'full', ms=t * 1e3,
                                 peak_mb=peak_mb(step, dev)))
            except Exception as e:
                if not _is_oom(e): raise
                rows.append(dict(version=version, window='x'.join(map(str, W)) if W else 'full', skipped='out of memory'))
            finally:
                del block; torch.cuda.empty_cache() if dev.type == 'cuda' else None
    return rows


# ---------------------------------------------------------------- 3. training steps
def _train_setup(dev, treatment: str, side: int, amp: str, compiled: bool, version: str | None, size: dict):
    "(one training step, one evaluation) of a fresh classifier of `treatment`, as functions of nothing."
    import torch._dynamo
    torch._dynamo.reset(); torch.manual_seed(0)
    model = train_model(treatment, side, version=version, blocks=size['blocks'], d=size['d'], heads=size['heads']).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(size['batch'], *model.structure_size, 3, device=dev)
    y = torch.randint(0, 10, (size['batch'],), device=dev)
    run = torch.compile(model) if compiled else model
    cast = (lambda: torch.autocast(dev.type, dtype=torch.bfloat16)) if amp == 'bf16' else \
           (lambda: torch.autocast(dev.type, enabled=False))
    def step():
        opt.zero_grad(set_to_none=True)
        with cast(): loss = F.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
    def evaluate():
        with torch.no_grad(), cast(): run(x)
    return step, evaluate, model


def _train_case(dev, treatment: str, side: int, amp: str, compiled: bool, version: str | None, repeats: int,
                size: dict) -> dict:
    "One training step of the classifier of `treatment` (batch 20, 6 blocks, d 64, 8 heads): time, images/s, peak."
    step, evaluate, model = _train_setup(dev, treatment, side, amp, compiled, version, size)
    t0 = time.perf_counter()
    step(); _sync(dev)
    first_s = time.perf_counter() - t0  # compilation included
    t = _median_time(step, dev, repeats)
    model.eval(); t_eval = _median_time(evaluate, dev, max(2, repeats // 2)); model.train()
    peak = peak_mb(step, dev)
    steps = PAPER_RUN['train'] / size['batch']
    hours = PAPER_RUN['epochs'] * (steps * t + PAPER_RUN['val'] / size['batch'] * t_eval) / 3600
    return dict(step_s=t, images_per_s=size['batch'] / t, eval_s=t_eval, peak_mb=peak, first_step_s=first_s,
                paper_run_hours=hours)


def _train_plan(quick: bool, sides) -> list[tuple]:
    "(model, side, precision, compiled, version) of each training case, the most wanted first (a deadline cuts the tail)."
    s, models = sides[0], ('sdpa', 'none', *PAPER_TREATMENTS)
    if quick: return [(m, sides[-1], 'fp32', c, None) for c in (False, True) for m in ('sdpa', 'span_2d_threshold')]
    pair = ('siren_2d', 'span_2d_threshold')
    # the decision first: per precision the floor, fast and each fused version on the two treatments of the targets
    first = [case for amp in ('fp32', 'bf16') for case in
             [('sdpa', s, amp, False, None)] + [(m, s, amp, False, v) for v in ('fast', *FUSED) for m in pair]]
    others = [m for m in models if m not in ('sdpa', *pair)]
    rest = ([(m, s, amp, False, 'fast') for amp in ('fp32', 'bf16') for m in others]  # every paper treatment
            + [(m, s, amp, False, v) for amp in ('fp32', 'bf16') for v in FUSED for m in others if m != 'none'])
    return (first + rest + [(m, s, amp, True, f) for amp in ('fp32', 'bf16') for f in FUSED for m in pair]
            + [(m, s, 'fp32', True, None) for m in ('sdpa', *pair)]
            + [(m, s, 'fp32', c, 'v1') for c in (False, True) for m in pair]
            + [(m, s, 'bf16', True, None) for m in ('sdpa', 'span_2d_threshold')] + [('span_2d_threshold', s, 'bf16', True, 'v1')]
            + [(m, side, amp, False, None) for side in sides[1:] for amp in ('fp32', 'bf16') for m in models])


def warm(dev, share: str, size: dict) -> None:
    "Compile share K/N of the full pass's fused training cases (a few steps each) into Triton's and Inductor's caches on disk."
    k, n = (int(x) for x in share.split('/'))
    cases = [c for c in _train_plan(False, size['sides']) if c[4] in FUSED and not c[3]]
    side = size['sides'][0]
    probes = [('probe', w) for w in PROBE_WINDOWS(side)]
    items = cases[:12] + probes[:2] + cases[12:] + probes[2:]  # in the order the check meets them
    for item in items[k::n]:
        t = time.perf_counter()
        try:
            if item[0] == 'probe': flex_probe(dev, False, size, windows=[item[1]])
            else: _train_case(dev, *item[:4], item[4], 1, size)
        except Exception as e: print(f"warm {item}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        print(f"warm {share} {item} {time.perf_counter() - t:6.1f} s", flush=True)


def training(dev, quick: bool, size: dict, save, time_left) -> list[dict]:
    "A training step of every paper treatment and the floor, side by side, under each setting, while time is left."
    rows = []
    for model, side, amp, compiled, version in _train_plan(quick, size['sides']):
        row = dict(model=model, side=side, amp=amp, compiled=compiled,
                   version='-' if model == 'sdpa' else version or 'fast')
        if time_left() < (40 if compiled else 8):
            rows.append(dict(row, error='skipped: the time of the check ran out')); continue
        try: row.update(_train_case(dev, model, side, amp, compiled, version, 3 if quick else 8, size))
        except Exception as e:
            row.update(error=f'{type(e).__name__}: {str(e)[:300]}')
            if not _is_oom(e): traceback.print_exc()
        if dev.type == 'cuda': torch.cuda.empty_cache()
        rows.append(row); save(rows)
        print(f"  train {model:18s} {side}x{side} {amp} {'compiled' if compiled else 'eager':8s} {row['version']:4s} "
              + (f"{row['step_s'] * 1e3:8.1f} ms/step {row['paper_run_hours']:6.2f} h/run" if 'step_s' in row else row['error'][:80]),
              flush=True)
    return rows


def kernel_profile(dev, size: dict, time_left=lambda: math.inf, save=lambda rows: None, steps: int = 2) -> list[dict]:
    "Where a training step's device time goes, per version: its kernels by name and self device time (torch.profiler)."
    rows = []
    side = size['sides'][0]
    for amp in ('fp32', 'bf16'):
        for model in ('siren_2d', 'span_2d_threshold'):
            for version in ('fast', *(FUSED if dev.type == 'cuda' else ())):
                row = dict(model=model, side=side, amp=amp, version=version)
                if time_left() < 25: rows.append(dict(row, skipped='the time of the check ran out')); continue
                try:
                    step, _, _ = _train_setup(dev, model, side, amp, False, version, size)
                    for _ in range(3): step()
                    _sync(dev)
                    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if dev.type == 'cuda' else [])
                    t = time.perf_counter()
                    with torch.profiler.profile(activities=acts) as prof:
                        for _ in range(steps): step()
                        _sync(dev)
                    wall = (time.perf_counter() - t) / steps
                    # device kernels where there is a device, else the CPU's operators (the CPU pass checks the plumbing)
                    own = [(e.key, e.self_device_time_total if dev.type == 'cuda' else e.self_cpu_time_total)
                           for e in prof.key_averages()]
                    own = sorted(((k, us / steps / 1e3) for k, us in own if us > 0 and (dev.type == 'cuda' or k.startswith('aten::'))),
                                 key=lambda kv: -kv[1])
                    busy = sum(ms for _, ms in own)
                    row.update(wall_ms=wall * 1e3, busy_ms=busy, launches=sum(e.count for e in prof.key_averages()
                               if dev.type == 'cuda' and e.self_device_time_total > 0) / steps,
                               top=[dict(kernel=k[:90], ms=ms, share=ms / busy) for k, ms in own[:8]])
                except Exception as e:
                    row.update(error=f'{type(e).__name__}: {str(e)[:300]}'); traceback.print_exc()
                if dev.type == 'cuda': torch.cuda.empty_cache()
                rows.append(row); save(rows)
                print(f"  profile {model:18s} {amp} {version:12s} " + (f"wall {row['wall_ms']:.1f} ms, busy {row['busy_ms']:.1f} ms"
                      if 'wall_ms' in row else row.get('error', row.get('skipped', ''))[:80]), flush=True)
    return rows


# ---------------------------------------------------------------- 4. a real run
def real_run(dev, quick: bool, data_tar: Path | None, size: dict) -> dict:
    "The runner's paper profile on the offline CIFAR-10 copy (a few hundred steps and a validation); digits on the CPU."
    from posattn.experiment.runner import run
    root = Path(tempfile.mkdtemp(prefix='posattn-gpu-'))
    steps, val = (20 if quick else 300, 1000) if dev.type == 'cuda' else (5, 100)
    data = dict(dataset='digits', blocks=size['blocks'], d=size['d'], heads=size['heads'])  # CPU: the shipped digits
    if dev.type == 'cuda':
        if data_tar is None or not data_tar.is_file(): return dict(skipped=f'no CIFAR-10 copy at {data_tar}')
        with tarfile.open(data_tar) as tar: tar.extractall(root)  # the project's own archive
        data = dict(dataset='imagefolder', data_root=str(root / 'cifar10-jpeg' / 'train'))
    t = time.perf_counter()
    result = run('span_2d_threshold', 9188, 'paper', results_dir=root / 'results', figures_dir=root / 'figures',
                 train_size=steps * 20, val_size=val, epochs=1, device=str(dev), allow_slow=True, progress=False, **data)
    hist = result['history'][-1]
    return dict(treatment='span_2d_threshold', dataset=data['dataset'], steps=steps, train_images=steps * 20, val_images=val,
                seconds=time.perf_counter() - t, val_accuracy=hist.get('val_accuracy', hist.get('val_acc')),
                train_loss=hist.get('train_loss'), spans=[s['span_size'] for s in result.get('spans', [])],
                version=result.get('config', {}).get('version'))


# ---------------------------------------------------------------- 5. the fused versions against fast
def _allocated(dev) -> int:
    "Bytes PyTorch's allocator has handed out on `dev` (the device synchronised, Python's garbage collected)."
    import gc
    gc.collect(); _sync(dev)
    return torch.cuda.memory_allocated(dev) if dev.type == 'cuda' else 0


PROBE_WINDOWS = lambda side: ((9, 9), (2 * side - 1,) * 2, (3, 3), (17, 17))  # the target's two first


def flex_probe(dev, quick: bool, size: dict, time_left=lambda: math.inf, windows=None, save=lambda rows: None) -> list[dict]:
    "The fused versions against fast on one 2-D layer: errors of outputs and gradients, time of forward and backward, peak memory and the memory a call leaves allocated."
    from posattn.encodings.catalogue import relative_terms
    from posattn.layers.fast import attend_fast
    rows = []
    side, B, d, H = size['sides'][0], size['batch'], size['d'], size['heads']
    S = (side, side)
    for W in windows or (((9, 9),) if quick else PROBE_WINDOWS(side)):
        W = tuple(min(w, 2 * side - 1) for w in W)
        if time_left() < 30:
            rows.append(dict(window='x'.join(map(str, W)), skipped='the time of the check ran out')); continue
        torch.manual_seed(0)
        block = _layer(S, W if W[0] < 2 * side - 1 else None, d, H).to(dev)
        terms = relative_terms(block.encoding, S, H).times(lambda off: block.span(off, S))
        q, k, value = (torch.randn(B, H, side * side, d // H, device=dev, requires_grad=dev.type == 'cuda') for _ in range(3))
        leaves = [q, k, value, block.u, block.v, block.span.sigma, *block.encoding.parameters()]
        calls = dict(fast=lambda: attend_fast(q, k, value, block.u, block.v, S, W, terms=terms),
                     **{n: (lambda f=_load_fused(n): f(q, k, value, block.u, block.v, S, W, terms=terms)) for n in FUSED})
        row = dict(window='x'.join(map(str, W)), gaussian_table='per query')
        if dev.type != 'cuda':  # flex has no backward on the CPU: outputs only
            with torch.no_grad(): row['flex_out_err'] = _rel(calls['flex'](), calls['fast']())
            rows.append(row); continue
        r = torch.randn(B, H, side * side, d // H, device=dev)
        res = {}
        for name, f in calls.items():
            try:
                before = _allocated(dev)
                t = time.perf_counter()
                y = f(); res[name] = [y] + list(torch.autograd.grad((y * r).sum(), leaves))
                row[f'{name}_first_s'] = time.perf_counter() - t
                def step(f=f):
                    y = f(); torch.autograd.grad((y * r).sum(), leaves)
                row[f'{name}_ms'] = _median_time(step, dev, 5 if quick else 10) * 1e3
                row[f'{name}_peak_mb'] = peak_mb(step, dev)
                kept = sum(x.numel() * x.element_size() for x in res[name])  # the results this check keeps
                row[f'{name}_held_mb'] = (_allocated(dev) - before - kept) / 2**20  # what the calls left behind
            except Exception as e:  # one route failing must not hide the other's numbers
                row[f'{name}_error'] = f'{type(e).__name__}: {str(e)[:300]}'; traceback.print_exc()
        for name in FUSED:
            if name in res:
                row[f'{name}_out_err'] = _rel(res[name][0], res['fast'][0])
                row[f'{name}_grad_err'] = _grad_errors(res[name][1:], res['fast'][1:])
        rows.append(row); save(rows)
        print(f"  fused {row}", flush=True)
    return rows


# ---------------------------------------------------------------- 6. issue 38's targets, from what was measured
def _train_row(data, model, side, amp, version):
    return next((r for r in data.get('train', []) if (r['model'], r['side'], r['amp'], r['compiled'], r['version'])
                 == (model, side, amp, False, version) and 'step_s' in r), None)


def _over_floor(data, model, side, amp, version, key):
    "A training case's `key` (step_s, peak_mb) over the floor's, or None where either was not measured."
    row, floor = _train_row(data, model, side, amp, version), _train_row(data, 'sdpa', side, amp, '-')
    return row[key] / floor[key] if row and floor and floor.get(key) else None


def _worst(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _window_ratio(data, version, side):
    rows = {r['window']: r.get(f'{version}_ms') for r in data.get('flex', [])}
    full = f'{2 * side - 1}x{2 * side - 1}'
    return rows['9x9'] / rows[full] if rows.get('9x9') and rows.get(full) else None


# Each target: its name, the limit a measured value must not exceed, and how the value is read from the check's data
# (version, precision, side), for the eager training step at the paper's size.
TARGETS = [
    dict(name='float32 outputs against Version 1 (relative)', limit=1e-5, fp32_only=True,
         value=lambda d, v, amp, s: _worst(r['out_err'] for r in d.get('correctness', []) if r['version'] == v)),
    dict(name='float32 gradients against Version 1 (relative)', limit=1e-4, fp32_only=True,
         value=lambda d, v, amp, s: _worst(r['grad_err'] for r in d.get('correctness', []) if r['version'] == v)),
    dict(name='training step of siren_2d / floor', limit=1.3,
         value=lambda d, v, amp, s: _over_floor(d, 'siren_2d', s, amp, v, 'step_s')),
    dict(name='training step of span_2d_threshold / floor', limit=1.6,
         value=lambda d, v, amp, s: _over_floor(d, 'span_2d_threshold', s, amp, v, 'step_s')),
    dict(name='training step of every paper treatment measured / floor (the slowest)', limit=2.0,
         value=lambda d, v, amp, s: _worst(_over_floor(d, m, s, amp, v, 'step_s') for m in PAPER_TREATMENTS)),
    dict(name='peak memory of the training step / floor (the largest)', limit=3.0,
         value=lambda d, v, amp, s: _worst(_over_floor(d, m, s, amp, v, 'peak_mb') for m in PAPER_TREATMENTS)),
    dict(name='9x9 window / full span, one layer', limit=0.5, fp32_only=True,
         value=lambda d, v, amp, s: _window_ratio(d, v, s)),
    dict(name='one paper run, the slowest paper treatment measured (hours)', limit=2.0,
         value=lambda d, v, amp, s: _worst((_train_row(d, m, s, amp, v) or {}).get('paper_run_hours') for m in PAPER_TREATMENTS)),
]


def targets(data: dict, side: int = 32) -> list[dict]:
    "Each target of issue 38 for each version on CUDA and each precision: the measured value, the limit, met or not."
    out = []
    for amp in ('fp32', 'bf16'):
        for version in ('fast', *FUSED):
            for t in TARGETS:
                if amp == 'bf16' and t.get('fp32_only'): continue
                v = t['value'](data, version, amp, side)
                out.append(dict(version=version, amp=amp, target=t['name'], limit=t['limit'], value=v,
                                met=None if v is None else bool(v <= t['limit'])))
    return out


# ---------------------------------------------------------------- report
def _fmt(x, spec):
    return '' if x is None else format(x, spec)


def _is_old_probe(rows: list[dict]) -> bool:
    "Whether `rows` are the flex probe of the check before the Triton kernels (flex alone, errors without a version prefix)."
    return any('out_err' in r for r in rows)


def _old_probe_lines(rows: list[dict]) -> list[str]:
    "The flex probe's table as the check before the Triton kernels wrote it, so that its committed page is remade as it was."
    lines = ['## A probe of flex_attention against fast (one 2-D layer, forward and backward)', '',
             '| window | Gaussian table | out err | grad err | fast ms | flex ms | fast MB | flex MB |', '|---|---|---:|---:|---:|---:|---:|---:|']
    for r in rows:
        lines.append(f"| {r['window']} | {r.get('gaussian_table', '')} | {_fmt(r.get('out_err'), '.1e')} | {_fmt(r.get('grad_err'), '.1e')} | "
                     f"{_fmt(r.get('fast_ms'), '.2f')} | {_fmt(r.get('flex_ms'), '.2f')} | {_fmt(r.get('fast_peak_mb'), '.0f')} | "
                     f"{_fmt(r.get('flex_peak_mb'), '.0f')} |")
    return lines + ['']


def markdown(data: dict) -> str:
    "gpu.md: the tables of gpu.json."
    m, lines, z = data['machine'], [], data['size']
    at = f"batch {z['batch']}, d {z['d']}, {z['heads']} heads"
    lines += [f"# Device check ({'quick' if data['quick'] else 'full'} pass)", '',
              f"{m['device_name']}, torch {m['torch']}, triton {m.get('triton')}, Python {m['python']}; "
              f"posattn code {m['code_version']}; {data['finished']}; {data['wall_s']:.0f} s.", '']
    if data.get('errors'): lines += ['**Errors:** ' + '; '.join(f"{k}: {v.splitlines()[-1]}" for k, v in data['errors'].items()), '']
    if data.get('stopped'): lines += [f"**Stopped:** {data['stopped']}", '']
    if data.get('skipped'): lines += ['**Not run** (the time of the check ran out): ' + ', '.join(data['skipped']), '']
    c = data.get('correctness', [])
    if c:
        bad = [r for r in c if not r['ok']]
        lines += ['## Correctness against Version 1 in float64 on the CPU', '',
                  f"{len(c) - len(bad)} of {len(c)} (version, case) pairs within 1e-4 (outputs) and 1e-3 (gradients); "
                  f"largest errors: outputs {max(r['out_err'] for r in c):.1e}, gradients {max(r['grad_err'] for r in c):.1e}.", '']
        if bad: lines += ['Outside: ' + ', '.join(f"{r['version']} {r['pe']} {r['structure']}" for r in bad), '']
    if data.get('bf16'):
        lines += ['## bfloat16 autocast against Version 1 in float64 (within 5e-2 outputs, 1e-1 gradients)', '',
                  ', '.join(f"{r['version']}: {'ok' if r['ok'] else 'FAILED'} ({r['out_err']:.1e}, {r['grad_err']:.1e})"
                            for r in data['bf16']), '']
    for key, title in (('nan', 'NaN semantics on the device'), ('compile', 'torch.compile of the block against eager')):
        rows = data.get(key, [])
        if rows: lines += [f"## {title}", '', ', '.join(f"{r['version']}{' ' + str(r.get('threshold', '')) if key == 'nan' else ''}: "
                                                      f"{'ok' if r['ok'] else 'FAILED'}" for r in rows), '']
    if data.get('syncs'):
        lines += ['## Host synchronisations in one attention call (window given)', '',
                  ', '.join(f"{r['version']} {'x'.join(map(str, r['window']))}: {r['forward_syncs']}" for r in data['syncs']), '']
    if data.get('layer'):
        floor = next((r['ms'] for r in data['layer'] if r['version'] == 'sdpa' and 'ms' in r), None)
        lines += [f"## One layer at {z['sides'][0]}x{z['sides'][0]} ({at}), forward and backward", '',
                  '| version | window | ms | x SDPA | peak MB |', '|---|---|---:|---:|---:|']
        for r in data['layer']:
            lines.append(f"| {r['version']} | {r['window']} | {_fmt(r.get('ms'), '.2f')} | "
                         f"{_fmt(r['ms'] / floor if 'ms' in r and floor else None, '.2f')} | {_fmt(r.get('peak_mb'), '.0f')}"
                         + (f" ({r['skipped']})" if 'skipped' in r else '') + ' |')
        lines.append('')
    if data.get('train'):
        lines += [f"## One training step ({at}, {z['blocks']} blocks, Adam)", '',
                  'The floor is `sdpa` (the projections around fused SDPA, no positions) at the same size, precision and mode. '
                  'Hours: one paper run, 80 epochs of 2,000 steps and 500 validation batches, at these speeds.', '',
                  '| model | side | precision | mode | version | ms/step | x floor | images/s | peak MB | x floor | paper run h |',
                  '|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|']
        floors = {(r['side'], r['amp'], r['compiled']): r for r in data['train'] if r['model'] == 'sdpa' and 'step_s' in r}
        for r in data['train']:
            f = floors.get((r['side'], r['amp'], r['compiled']))
            if 'step_s' not in r:
                lines.append(f"| {r['model']} | {r['side']} | {r['amp']} | {'compiled' if r['compiled'] else 'eager'} | "
                             f"{r['version']} | {r['error'][:60]} | | | | | |"); continue
            lines.append(f"| {r['model']} | {r['side']} | {r['amp']} | {'compiled' if r['compiled'] else 'eager'} | {r['version']} | "
                         f"{r['step_s'] * 1e3:.1f} | {_fmt(r['step_s'] / f['step_s'] if f else None, '.2f')} | "
                         f"{r['images_per_s']:.0f} | {_fmt(r['peak_mb'], '.0f')} | "
                         f"{_fmt(r['peak_mb'] / f['peak_mb'] if f and f['peak_mb'] and r['peak_mb'] else None, '.2f')} | "
                         f"{r['paper_run_hours']:.2f} |")
        lines.append('')
    if data.get('profile'):
        lines += ["## Where a training step's time goes (torch.profiler, eager)", '',
                  'busy: the kernels\' own device time per step (on the CPU pass: the operators\' own CPU time); wall: the step '
                  'with the profiler on. busy well under wall means the device waits on the host (launches, Python); the kernels '
                  'named are where the device time goes.', '',
                  '| model | precision | version | wall ms | busy ms | busy / wall | kernels | the largest (share of busy) |',
                  '|---|---|---|---:|---:|---:|---:|---|']
        for r in data['profile']:
            if 'wall_ms' not in r:
                lines.append(f"| {r['model']} | {r['amp']} | {r['version']} | {(r.get('skipped') or r.get('error', ''))[:60]} | | | | |"); continue
            top = '; '.join(f"`{t['kernel'][:48]}` {t['share']:.0%}" for t in r['top'][:3])
            lines.append(f"| {r['model']} | {r['amp']} | {r['version']} | {r['wall_ms']:.1f} | {r['busy_ms']:.1f} | "
                         f"{r['busy_ms'] / r['wall_ms']:.2f} | {r['launches']:.0f} | {top} |")
        lines.append('')
    if data.get('flex') and _is_old_probe(data['flex']): lines += _old_probe_lines(data['flex'])
    elif data.get('flex'):
        lines += ['## The fused versions against fast (one 2-D layer, forward and backward)', '',
                  f"At {z['sides'][0]}x{z['sides'][0]}, {at}, float32. Errors are relative to fast's outputs and gradients; "
                  "held: the memory still allocated after the calls beyond the output and gradients the check keeps (scratch buffers, "
                  "or anything a call leaves on the output's autograd graph).", '',
                  '| window | version | out err | grad err | ms | fast ms | peak MB | fast MB | held MB | fast held MB |',
                  '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|']
        for r in data['flex']:
            if 'skipped' in r: lines.append(f"| {r['window']} | | | | {r['skipped']} | | | | | |"); continue
            for n in FUSED:
                err = lambda k: r.get(f'{n}_{k}')
                lines.append(f"| {r['window']} | {n} | {_fmt(err('out_err'), '.1e')} | {_fmt(err('grad_err'), '.1e')} | "
                             f"{_fmt(r.get(f'{n}_ms'), '.2f') or r.get(f'{n}_error', '')[:60]} | {_fmt(r.get('fast_ms'), '.2f')} | "
                             f"{_fmt(r.get(f'{n}_peak_mb'), '.0f')} | {_fmt(r.get('fast_peak_mb'), '.0f')} | "
                             f"{_fmt(r.get(f'{n}_held_mb'), '.1f')} | {_fmt(r.get('fast_held_mb'), '.1f')} |")
        lines.append('')
    if data.get('targets'):
        lines += [f"## Issue 38's targets (eager, {data['targets_side']}x{data['targets_side']}, batch {z['batch']})", '',
                  *(['The CPU pass: its sizes are not the targets\' (32x32, batch 20, on a GPU); the table only shows the check '
                     'computes them.', ''] if not data['machine']['device'].startswith('cuda') else []),
                  '| version | precision | target | measured | limit | met |', '|---|---|---|---:|---:|---|']
        for r in data['targets']:
            lines.append(f"| {r['version']} | {r.get('amp', 'fp32')} | {r['target']} | {_fmt(r['value'], '.3g') or 'not measured'} | {r['limit']:g} | "
                         f"{'' if r['met'] is None else 'yes' if r['met'] else 'NO'} |")
        lines.append('')
    rr = data.get('run')
    if rr:
        lines += ['## A real run through the runner', '']
        lines.append(rr.get('skipped') or (f"`span_2d_threshold`, paper profile, {rr['steps']} steps of batch 20 on {rr['dataset']} "
                     f"({'the offline CIFAR-10 copy' if rr['dataset'] == 'imagefolder' else 'a CPU check'}) and {rr['val_images']} "
                     f"validation images: {rr['seconds']:.0f} s in all (data loading included), "
                     f"validation accuracy {_fmt(rr['val_accuracy'], '.3f')} after one short epoch, version {rr['version']}."))
        lines.append('')
    return '\n'.join(lines)


def _atomic(path: Path, text: str):
    tmp = path.with_suffix(path.suffix + '.tmp')
    tmp.write_text(text); os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--quick', action='store_true', help='a pass of under a minute (run it first)')
    p.add_argument('--device', default='auto', help="'auto' (CUDA when there is one), 'cuda' or 'cpu'")
    p.add_argument('--out', default=None, help='folder of gpu.json and gpu.md (default results/bench; gpu-cpu.* on the CPU)')
    p.add_argument('--data-tar', default=str(ROOT / 'data' / 'cifar10-jpeg-train.tar.gz'),
                   help='the offline CIFAR-10 copy for the real run')
    p.add_argument('--budget', type=float, default=None, help='seconds the check may take (default 300, quick 60); the training cases stop first')
    p.add_argument('--skip', nargs='*', default=[], choices=['correctness', 'layer', 'train', 'profile', 'run', 'flex'])
    p.add_argument('--warm', default=None, metavar='K/N',
                   help="only compile share K of N of the fused training cases into the on-disk caches (run N such processes "
                        "side by side before the check: its timings then start with the kernels built)")
    p.add_argument('--train-share', type=float, default=0.6, help='the share of the budget the training cases may take (full pass on a GPU)')
    a = p.parse_args(argv)
    if a.device not in ('auto', 'cpu', 'cuda') and not a.device.startswith('cuda:'):
        p.error(f"--device={a.device!r} must be 'auto', 'cpu', 'cuda' or 'cuda:N'")
    dev = torch.device('cuda' if a.device == 'auto' and torch.cuda.is_available() else 'cpu' if a.device == 'auto' else a.device)
    if dev.type == 'cuda' and not torch.cuda.is_available(): p.error(f"--device={a.device!r}: this machine has no CUDA device")
    if dev.type == 'cpu' and not a.quick: p.error("on the CPU only --quick runs (the full check is sized for a GPU)")
    if a.warm:
        if dev.type != 'cuda': p.error('--warm compiles GPU kernels: it needs a CUDA device')
        try: k, n = (int(x) for x in a.warm.split('/')); assert 0 <= k < n
        except Exception: p.error(f"--warm={a.warm!r} must be K/N with 0 <= K < N, e.g. 0/4")
        torch.backends.cuda.matmul.allow_tf32 = False  # as the check runs: the same kernels, the same cache keys
        return warm(dev, a.warm, PAPER) or 0
    out = Path(a.out) if a.out else ROOT / 'results' / 'bench'
    out.mkdir(parents=True, exist_ok=True)
    stem = 'gpu' if dev.type == 'cuda' else 'gpu-cpu'
    if dev.type == 'cuda': torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32 in every comparison
    try: import triton; triton_version = triton.__version__
    except Exception: triton_version = None
    data = dict(quick=a.quick, machine=dict(device=str(dev), torch=torch.__version__, triton=triton_version,
                python=platform.python_version(), code_version=code_version(ROOT / 'posattn'),
                device_name=torch.cuda.get_device_name(dev) if dev.type == 'cuda' else platform.processor() or 'CPU',
                cuda=torch.version.cuda), errors={})
    t0 = time.perf_counter()
    budget = a.budget or (90 if a.quick else 300)
    time_left = lambda: budget - (time.perf_counter() - t0)
    def save(partial=None, key=None):
        if key is not None: data[key] = partial
        data['wall_s'], data['finished'] = time.perf_counter() - t0, time.strftime('%Y-%m-%d %H:%M:%S')
        data['targets'], data['targets_side'] = targets(data, size['sides'][0]), size['sides'][0]  # as far as measured
        _atomic(out / f'{stem}.json', json.dumps(data, indent=1, default=str))
        _atomic(out / f'{stem}.md', markdown(data))
    size = PAPER if dev.type == 'cuda' else SMALL
    data['size'] = size
    train_end = t0 + budget * (1 if a.quick else a.train_share)  # the training cases' own deadline
    sections = dict(
        train=lambda: training(dev, a.quick, size, lambda r: save(r, 'train'), lambda: train_end - time.perf_counter()),
        profile=lambda: kernel_profile(dev, size, time_left, save=lambda r: save(r, 'profile')),
        flex=lambda: flex_probe(dev, a.quick, size, time_left, save=lambda r: save(r, 'flex')), compile=lambda: compiled_block(dev, a.quick),
        nan=lambda: nan_semantics(dev), syncs=lambda: host_syncs(dev), correctness=lambda: correctness(dev, a.quick, time_left=time_left),
        bf16=lambda: correctness(dev, a.quick, bf16=True, time_left=time_left), layer=lambda: layer(dev, a.quick, size),
        run=lambda: real_run(dev, a.quick, Path(a.data_tar), size))
    # the order: on a GPU what decides the CUDA default first (the training step, then one layer per window); the
    # quick pass and the CPU pass check correctness first
    order = list(sections) if dev.type == 'cuda' and not a.quick else \
        ['correctness', 'bf16', 'nan', 'syncs', 'compile', 'layer', 'run', 'flex', 'train', 'profile']
    group = dict(bf16='correctness', nan='correctness', syncs='correctness', compile='correctness')
    data['skipped'] = {}
    for key in order:
        fn = sections[key]
        if group.get(key, key) in a.skip: continue
        if key != 'train' and time_left() < 20:
            data['skipped'][key] = 'the time of the check ran out'; save(); continue
        t = time.perf_counter()
        print(f"{key} ...", flush=True)
        try: data[key] = fn()
        except Exception:
            data['errors'][key] = traceback.format_exc(); traceback.print_exc()
        print(f"{key}: {time.perf_counter() - t:.1f} s", flush=True)
        save()
    print(markdown(data))
    failed = [r for k in ('correctness', 'bf16', 'nan', 'compile') for r in data.get(k, []) if not r.get('ok', True)]
    return 1 if data['errors'] or failed else 0


if __name__ == '__main__':
    sys.exit(main())
