#!/usr/bin/env python
"""The device check: posattn on a GPU in minutes, written to results/bench/gpu.json and gpu.md.

The command line of posattn.bench.device (nbs/47g_bench.device.ipynb), which measures and writes the pages.

In this order on every pass, the most wanted first (each section saved as it lands; a time budget cuts the tail):
1. one training step of siren_2d and span_2d_threshold at 32x32 against the fused-SDPA floor, every version side by
   side (fast, flex, triton, triton_band), float32 and bf16 autocast: seconds per step, images/s, peak memory, the
   projected hours of one paper run. This decides what version='auto' runs on CUDA;
2. where the slowest fused version's step spends its device time, beside fast's (torch.profiler, kernels by name);
3. the converted ViT-S/16 against timm's own (training steps at batch 32);
4. one 2-D layer per window (9x9, the full span, 3x3, 17x17): the fused versions against fast, errors, time, peak
   memory and the memory a call leaves allocated;
5. every version and encoding against Version 1 in float64 (outputs and gradients; then under bf16 autocast), the NaN
   semantics, host synchronisations per attention call, torch.compile of the block against eager;
6. the other training cases (every paper treatment, compiled, Version 1, 16x16), the paper's layouts under each
   window, and a short real run through the runner on the offline CIFAR-10 copy.

Runs from the checkout with nothing installed (`PYTHONPATH=. python scripts/gpu_check.py`), on torch 2.11 and 2.14.
`--warm K/N` (N processes side by side, before the check) compiles the fused kernels into Triton's and Inductor's
on-disk caches, so that the check's time goes to measuring. `--quick` is a short pass in the same order, with fewer
cases; `--device cpu --quick` runs every section on a machine without a GPU (CI) at small sizes and writes to
results/bench/gpu-cpu.json, which is not versioned, so a CPU pass never replaces a GPU's results. An error in one
section is recorded and the next one runs.
"""
import argparse, sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from posattn.bench import device  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--quick', action='store_true', help='a short pass, the same sections with fewer cases (run it first)')
    p.add_argument('--device', default='auto', help="'auto' (CUDA when there is one), 'cuda' or 'cpu'")
    p.add_argument('--out', default=None, help='folder of gpu.json and gpu.md (default results/bench; gpu-cpu.* on the CPU)')
    p.add_argument('--data-tar', default=str(ROOT / 'data' / 'cifar10-jpeg-train.tar.gz'),
                   help='the offline CIFAR-10 copy for the real run')
    p.add_argument('--budget', type=float, default=None,
                   help=f"seconds the check may take (default {device.BUDGET['full']}, quick {device.BUDGET['quick']}, "
                        f"on the CPU {device.BUDGET['cpu']}); the training cases stop at --train-share of it")
    p.add_argument('--skip', nargs='*', default=[], choices=list(device.SKIPPABLE))
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
        return device.warm(dev, a.warm, device.PAPER) or 0
    return device.check(dev, a.quick, a.out or ROOT / 'results' / 'bench', a.data_tar, a.budget, a.skip, a.train_share)


if __name__ == '__main__':
    sys.exit(main())
