"""Where one layer's forward and backward peaks on the CPU, operation by operation: the bytes the C allocator holds in
use (glibc's mallinfo2: heap and mmapped blocks) after every aten operation of a warm step, against the start. Unlike
the benchmarks' peak (the process' resident high-water mark, `posattn.bench.layer.peak_mb`), it does not count freed
memory the allocator kept, so two cases that allocate alike read alike. Linux with glibc 2.33 or later only.

    python scripts/peak_ops.py --structure 8 16 16 --batch 2 --windows full 13x25x25 5x21x21
"""
from __future__ import annotations
import argparse, ctypes, sys
import torch
from torch.utils._python_dispatch import TorchDispatchMode

FIELDS = ('arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in FIELDS]


def _in_use():
    "A function returning the bytes glibc's allocator holds in use; SystemExit where there is no mallinfo2."
    try: libc = ctypes.CDLL('libc.so.6'); f = libc.mallinfo2
    except (OSError, AttributeError):
        sys.exit('peak_ops: needs Linux with glibc 2.33 or later (mallinfo2); use the benchmarks\' peak_mb elsewhere')
    f.restype = _MallInfo2
    return lambda: (lambda m: m.uordblks + m.hblkhd)(f())


class _Track(TorchDispatchMode):
    "Bytes in use after every aten operation run under it."
    def __init__(self, in_use):
        super().__init__()
        self.in_use, self.log = in_use, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.log.append((str(func), self.in_use()))
        return out


def _window(text: str, dims: int) -> tuple[int, ...] | None:
    if text == 'full': return None
    try: w = tuple(int(s) for s in text.split('x'))
    except ValueError: w = ()
    if len(w) != dims or any(s < 1 or s % 2 == 0 for s in w):
        sys.exit(f"peak_ops: --windows {text!r} must be 'full' or {dims} odd sizes joined by x (like {'x'.join(['5'] * dims)})")
    return w


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    a.add_argument('--structure', type=int, nargs='+', default=[8, 16, 16], help='StructureSize, 1 to 3 sizes')
    a.add_argument('--batch', type=int, default=2)
    a.add_argument('--windows', nargs='+', default=['full'], help="'full' (no threshold) or SpanSizes like 13x25x25")
    a.add_argument('--context', type=int, default=3, help='operations shown before the peak')
    o = a.parse_args(argv)
    if not 1 <= len(o.structure) <= 3 or min(o.structure) < 1 or o.batch < 1:
        sys.exit(f'peak_ops: --structure takes 1 to 3 positive sizes (got {o.structure}) and --batch a positive number')
    from posattn.bench.layer import measured_layer
    S, in_use = tuple(o.structure), _in_use()
    windows = [_window(w, len(S)) for w in o.windows]
    torch.set_num_threads(1)
    for w in windows:
        torch.manual_seed(0)
        block, x = measured_layer(S, w, 64, 8), torch.randn(o.batch, torch.Size(S).numel(), 64)
        def step():
            block.zero_grad(set_to_none=True)
            block(x, S).sum().backward()
        step()  # the plan, the masks and the scratch buffers: built by the first call, kept by the next
        start, track = in_use(), _Track(in_use)
        with track: step()
        i = max(range(len(track.log)), key=lambda j: track.log[j][1])
        name = 'full span' if w is None else 'x'.join(map(str, w))
        print(f"{name}: peak {(track.log[i][1] - start) / 2**20:.1f} MB over the start, at operation {i + 1} of "
              f"{len(track.log)} ({track.log[i][0]})")
        for f, u in track.log[max(0, i - o.context):i]: print(f'    before: {f} {(u - start) / 2**20:.1f} MB')
    return 0


if __name__ == '__main__':
    sys.exit(main())
