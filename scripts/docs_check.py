#!/usr/bin/env python
"""The documentation site in a real browser: open every page of `_site/` in headless Chromium and look at it.

The site is served on 127.0.0.1 (a free port). Each HTML page must load without a browser console error; every <img>
must have loaded (naturalWidth > 0); every link inside the site must lead to a file that exists and, with a
#fragment, to an element with that id; every page with math must have it rendered by MathJax (no raw TeX left, no
MathJax error) and nothing may be fetched from outside the site (no CDN); no page may show an error output
(a traceback) or a reStructuredText error. The modules' `Docs:` links (the Documentation URL of pyproject.toml)
must name files of the site. A full-page screenshot of a few pages is saved under <out>/ to be looked at.

    python scripts/docs_check.py [--site _site] [--out figures/docs] [--screenshots index core.span ...]
"""
from __future__ import annotations
import argparse, functools, http.server, posixpath, re, sys, tempfile, threading, time, tomllib
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lab_check import CheckFailed, _browser # the same browser as `make lab-check`

ROOT = Path(__file__).resolve().parents[1]
DOC_URL = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['urls']['Documentation'].rstrip('/') + '/'
SCREENSHOTS = ['index', 'core.span', 'reference/posattn.core.span', 'DECISIONS']

# JavaScript run in the loaded page: what it shows. Math is waited for (MathJax typesets after the load event).
_PAGE_JS = r"""
const done = arguments[arguments.length - 1];
const wait = (window.MathJax && MathJax.startup && MathJax.startup.promise) ? MathJax.startup.promise : Promise.resolve();
wait.then(() => {
  const text = e => e.innerText.trim().slice(0, 300);
  done({
    title: document.title,
    images: [...document.images].map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    math: document.querySelectorAll('.math, div.math, span.math').length,
    mathjax: document.querySelectorAll('mjx-container').length,
    raw_tex: [...document.querySelectorAll('.math')].filter(e => !e.querySelector('mjx-container')).map(text),
    tex_errors: [...document.querySelectorAll('mjx-merror')].map(e => e.getAttribute('data-mjx-error') || text(e)),
    tracebacks: [...document.querySelectorAll('.output.traceback, .output.error')].map(text),
    rst_errors: [...document.querySelectorAll('.system-message, .problematic')].map(text),
    resources: performance.getEntriesByType('resource').map(r => r.name),
    skipped: (document.body.innerText.match(/Not executed for this site/g) || []).length,
  });
});
"""


def _log(msg: str): print(f'docs-check: {msg}', flush=True)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    "Serve `site` on 127.0.0.1 at a free port, from a thread; return the server and its base URL."
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f'http://127.0.0.1:{server.server_address[1]}/'


def browser(tmp: Path):
    "Headless Chromium as `make lab-check` drives it, keeping the console's messages."
    driver = _browser(tmp, console=True, timeout=60)
    driver.set_script_timeout(60)
    return driver


def target_file(site: Path, url: str, base: str) -> Path | None:
    "The file of `site` that an internal `url` names (a folder means its index.html); None for an external URL."
    if url.startswith(DOC_URL): path = url[len(DOC_URL):]
    elif url.startswith(base): path = url[len(base):]
    else: return None
    path = unquote(urldefrag(urlparse(path).path if '://' in path else path.split('?')[0])[0])
    f = site / path
    return f / 'index.html' if f.is_dir() or path in ('', '/') else f


def check_page(driver, site: Path, base: str, page: Path) -> tuple[dict, list[str]]:
    "Load `page`; return what it shows and what is wrong with the page itself."
    rel = page.relative_to(site).as_posix()
    driver.get(base + rel)
    st = driver.execute_async_script(_PAGE_JS)
    console = [e['message'] for e in driver.get_log('browser') if e['level'] == 'SEVERE'
               and not e['message'].startswith(base + 'favicon.ico ')] # the browser's own guess, not a link of the site
    problems = []
    if console: problems.append(f'console errors: {console[:3]}')
    broken = [src for src, complete, width in st['images'] if not width]
    if broken: problems.append(f'broken image(s): {broken[:5]}')
    outside = [r for r in st['resources'] if not r.startswith(base)]
    if outside: problems.append(f'fetched from outside the site: {outside[:3]}')
    if st['math'] and not st['mathjax']: problems.append(f'{st["math"]} math element(s) and none rendered by MathJax')
    if st['raw_tex']: problems.append(f'math left as TeX: {st["raw_tex"][:2]}')
    if st['tex_errors']: problems.append(f'MathJax errors: {st["tex_errors"][:3]}')
    if st['tracebacks']: problems.append(f'an error output: {st["tracebacks"][0]!r}')
    if st['rst_errors']: problems.append(f'a reStructuredText error: {st["rst_errors"][0]!r}')
    return st, [f'{rel}: {p}' for p in problems]


def check_links(site: Path, base: str, pages: dict[str, dict]) -> tuple[int, int, list[str]]:
    "Every internal link leads to an existing file (and id); return the internal and external links and the problems."
    internal = external = 0; problems = []
    for rel, st in pages.items():
        for url in st['links']:
            f = target_file(site, url, base)
            if f is None: external += 1; continue
            internal += 1
            if not f.is_file():
                problems.append(f'{rel}: a link to {url} names {f.relative_to(site)}, which is not in the site'); continue
            frag = urldefrag(url)[1]
            target = f.relative_to(site).as_posix()
            if frag and target in pages and unquote(frag) not in pages[target]['ids']:
                problems.append(f'{rel}: the link {url} names an id that {target} does not have')
    return internal, external, problems


def check_docs_links(site: Path) -> tuple[int, list[str]]:
    "The `Docs:` URL of every module of posattn/ names a file of the site (and its HTML page exists)."
    n, problems = 0, []
    for py in sorted((ROOT / 'posattn').rglob('*.py')):
        for url in re.findall(r'^Docs: (\S+?)(?:""")?$', py.read_text(), re.M):
            f = target_file(site, url, '\0')
            if f is None: problems.append(f'{py.relative_to(ROOT)}: its Docs: link {url} is not under {DOC_URL}'); continue
            html = f.with_suffix('') if f.suffix == '.md' else f
            missing = [p.relative_to(site).as_posix() for p in (f, html) if not p.is_file()]
            if missing: problems.append(f'{py.relative_to(ROOT)}: its Docs: link {url} names {missing}, not in the site')
            n += 1
    return n, problems


def screenshot(driver, base: str, rel: str, path: Path, max_height: int = 30000):
    "A full-page screenshot of page `rel` (the window grown to the page's height)."
    driver.set_window_size(1400, 1000)
    driver.get(base + rel)
    driver.execute_async_script(_PAGE_JS)
    height = driver.execute_script('return document.documentElement.scrollHeight')
    driver.set_window_size(1400, min(max_height, height + 20)); time.sleep(0.5)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not driver.save_screenshot(str(path)): raise CheckFailed(f'could not save the screenshot {path}')
    driver.set_window_size(1400, 1000)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--site', default='_site', help='the built site (make docs), relative to the repository')
    p.add_argument('--out', default='figures/docs', help='folder for the screenshots, relative to the repository')
    p.add_argument('--screenshots', nargs='*', default=SCREENSHOTS, help='pages to photograph (without .html)')
    a = p.parse_args(argv)
    site, out = ROOT / a.site, ROOT / a.out
    if not (site / 'index.html').is_file():
        print(f'docs-check FAILED: {site / "index.html"} does not exist: run `make docs` first', file=sys.stderr); return 1
    html = sorted(f for f in site.rglob('*.html') if not f.relative_to(site).parts[0].startswith('_'))
    t0, server, driver = time.monotonic(), None, None
    try:
        with tempfile.TemporaryDirectory(prefix='docs-check-') as tmp:
            server, base = serve(site)
            driver = browser(Path(tmp))
            pages, problems = {}, []
            for f in html:
                pages[f.relative_to(site).as_posix()], found = check_page(driver, site, base, f); problems += found
            internal, external, found = check_links(site, base, pages); problems += found
            docs, found = check_docs_links(site); problems += found
            for name in a.screenshots:
                if f'{name}.html' not in pages: raise CheckFailed(f'no page {name}.html to photograph')
                screenshot(driver, base, f'{name}.html', out / f'{name.replace("/", "_")}.png')
            if problems: raise CheckFailed(f'{len(problems)} problem(s) in {len(pages)} pages (screenshots in {out}):\n  '
                                           + '\n  '.join(problems[:40]) + ('\n  ...' if len(problems) > 40 else ''))
    except CheckFailed as e:
        print(f'docs-check FAILED: {e}', file=sys.stderr); return 1
    except Exception as e: # selenium's own failures: the browser could not do what was asked
        print(f'docs-check FAILED: the browser failed: {type(e).__name__}: {getattr(e, "msg", None) or e}', file=sys.stderr)
        return 1
    finally:
        if driver is not None: driver.quit()
        if server is not None: server.shutdown()
    n_img = sum(len(st['images']) for st in pages.values())
    n_math = sum(1 for st in pages.values() if st['math'])
    skipped = sum(st['skipped'] for st in pages.values())
    _log(f'{len(pages)} pages load without errors: {n_img} images, {internal} internal links (files and ids exist), '
         f'{external} external links (not followed), math rendered on {n_math} pages, {skipped} long cells marked '
         f'not executed, {docs} Docs: links of posattn/ name pages of the site')
    _log(f'screenshots: {", ".join(str((out / (n.replace("/", "_") + ".png")).relative_to(ROOT)) for n in a.screenshots)} '
         f'({time.monotonic() - t0:.0f} s)')
    return 0


if __name__ == '__main__': sys.exit(main())
