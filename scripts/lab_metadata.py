#!/usr/bin/env python
"""Give notebooks the metadata JupyterLab writes into them, so that they open unmodified and saving changes nothing.

When JupyterLab connects a notebook to its kernel it sets two notebook metadata keys from the kernel: `kernelspec`
(name, display name and language of the kernel spec) and `language_info` (the kernel's kernel_info reply). A
notebook whose committed metadata differ opens as modified, and saving it writes them. This script asks the
venv's kernel (the one JupyterLab starts) for the same two values and writes them into the given notebooks.
`nbdev-clean` keeps them when pyproject.toml's [tool.nbdev] has `allowed_metadata_keys = ["language_info"]` and
the kernel spec's display name equals its name (nbdev-clean always writes `display_name = name`): `make setup`
installs the venv's python3 kernel spec with the display name `python3`.

    .venv/bin/python scripts/lab_metadata.py nbs/*.ipynb && .venv/bin/nbdev-clean
"""
import json, sys
from pathlib import Path
from jupyter_client.manager import start_new_kernel


def kernel_metadata(name: str = 'python3') -> dict:
    "The `kernelspec` and `language_info` metadata JupyterLab writes for kernel `name`."
    km, kc = start_new_kernel(kernel_name=name, transport_encryption='auto') # CurveZMQ keys: see the Makefile
    try: info = kc.kernel_info(reply=True, timeout=60)['content']['language_info']
    finally: kc.stop_channels(); km.shutdown_kernel(now=True)
    spec = km.kernel_spec
    if spec.display_name != name:
        raise SystemExit(f'the {name!r} kernel spec ({spec.resource_dir}) is displayed as {spec.display_name!r}: '
                         f'nbdev-clean writes display_name={name!r}, so JupyterLab would mark every notebook modified. '
                         f'Run `make setup` (it installs the kernel spec with --display-name {name}).')
    return dict(kernelspec=dict(display_name=spec.display_name, language=spec.language, name=name), language_info=info)


def main(paths: list[str]) -> int:
    if not paths: raise SystemExit(__doc__)
    meta, changed = kernel_metadata(), []
    for p in map(Path, paths):
        nb = json.loads(p.read_text(encoding='utf-8'))
        new = {**nb.get('metadata', {}), **meta}
        if new == nb.get('metadata'): continue
        nb['metadata'] = new; changed.append(p)
        p.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + '\n', encoding='utf-8')
    print(f'lab_metadata: language_info {meta["language_info"]["name"]} {meta["language_info"]["version"]}; '
          f'{len(changed)} of {len(paths)} notebook(s) updated{": " if changed else ""}{", ".join(map(str, changed))}')
    return 0


if __name__ == '__main__': sys.exit(main(sys.argv[1:]))
