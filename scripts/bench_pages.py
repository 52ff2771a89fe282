#!/usr/bin/env python
"""The benchmark pages results/bench/*.md, each written from the JSON file of the same name: the layer and training
benchmarks' by posattn.bench.report (PAGES), the device check's (gpu*.md) by posattn.bench.device_report. With
--check (`make check-sync`) nothing is written: the pages are made again in a temporary folder and the command fails,
naming each file, when a committed page differs from what its JSON makes, is missing, or is made by no JSON. The
Markdown files of posattn.bench.report.NOT_PAGES are left as they are (the README, the journal, and a page of an
older check in a layout no writer knows any more).

    python scripts/bench_pages.py [--check]
"""
from __future__ import annotations
import argparse, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's posattn, whatever is installed
from posattn.bench.report import PAGES, stale_pages, write_pages
from posattn.bench.device_report import markdown
from posattn.bench.vit import vit_page

BENCH = ROOT / 'results' / 'bench'
WRITERS = PAGES | dict(gpu=markdown, vit=vit_page)  # every page's writer, by name (gpu-<anything>.md: gpu's)


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    a.add_argument('--check', action='store_true', help='write nothing; fail when a committed page is not what its JSON makes')
    if not a.parse_args(argv).check:
        print('wrote', *write_pages(BENCH, WRITERS))
        return 0
    found = stale_pages(BENCH, WRITERS)
    if found:
        print('The benchmark pages are not what their JSON makes:', *found, 'Run `python scripts/bench_pages.py` and '
              'commit the result.', sep='\n  ', file=sys.stderr)
        return 1
    print('The benchmark pages of results/bench/ are what their JSON makes')
    return 0


if __name__ == '__main__':
    sys.exit(main())
