"""Sphinx configuration of the documentation site (`make docs`): the notebooks as executed by scripts/docs_build.py.

The source folder is the staging folder the build script writes (`_site_src/`, git-ignored); this folder holds only
the configuration and the API reference's template. MyST-NB renders the notebooks without executing them again.
"""
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_pyproject = tomllib.loads((ROOT / 'pyproject.toml').read_text())

project = 'posattn'
author = 'posattn developers'
copyright = '2022-2026, posattn developers; the paper: Meena Alfons'
import posattn
release = version = posattn.__version__

extensions = [
    'myst_nb',                     # notebooks (and Markdown pages) through MyST
    'sphinx.ext.autodoc',          # the API reference from the docstrings
    'sphinx.ext.autosummary',      # one page per module, found recursively
    'sphinx.ext.mathjax',
    'sphinx-mathjax-offline',      # MathJax 3 copied into _static: math renders without a CDN
]
templates_path = ['_templates']
exclude_patterns = ['figures/**', '**.ipynb_checkpoints']
root_doc = 'index'

# The notebooks are executed once by scripts/docs_build.py (long cells skipped, with a note in their place).
nb_execution_mode = 'off'
nb_output_stderr = 'show'
nb_merge_streams = True
myst_enable_extensions = ['dollarmath', 'amsmath', 'colon_fence', 'deflist']
myst_dmath_double_inline = True
myst_heading_anchors = 4       # GitHub's heading slugs: the notebooks link to ../DECISIONS.md#the-span
suppress_warnings = ['mystnb.unknown_mime_type']

# Docstrings are written in Markdown-ish plain text: `name` is code, as on the notebook pages.
default_role = 'code'
autosummary_generate = True
autodoc_default_options = {'members': True, 'show-inheritance': True, 'member-order': 'bysource'}
autodoc_typehints = 'description'
autodoc_preserve_defaults = True
add_module_names = False

html_theme = 'sphinx_book_theme'
html_title = 'posattn'
html_static_path = ['_static']
html_css_files = ['posattn.css']
html_copy_source = True        # the theme's download button: each page's source, a notebook with its outputs
html_show_sourcelink = False
html_theme_options = {
    'repository_url': _pyproject['project']['urls']['Repository'],
    'use_repository_button': True,
    'show_toc_level': 2,
    'navigation_with_keys': False,
}
html_last_updated_fmt = None
html_context = {'default_mode': 'light'} # an empty mode makes the theme log an error in the console

# The docstrings are plain text with `code` (nbdev's style), not reStructuredText: keep rST from reading |x|, *x* or x_
# outside the backticks as markup.
import re
_CODE = re.compile(r'(``.*?``|`[^`]*`)')
_MARKUP = re.compile(r'([*|\\]|_(?=\W|$))')


_DOC_URL = _pyproject['project']['urls']['Documentation'].rstrip('/') + '/'
_DOCS_LINE = re.compile(r'^Docs: ' + re.escape(_DOC_URL) + r'(\S+)\.html\.md$')


def _plain_docstring(app, what, name, obj, options, lines: list[str]):
    "Escape rST's inline markup characters outside code spans, in place; a module's `Docs:` link leads to its page here."
    for i, line in enumerate(lines):
        if m := _DOCS_LINE.match(line):
            lines[i] = f'Docs: :doc:`/{m[1]}` (as Markdown: `{m[1]}.html.md <../{m[1]}.html.md>`__)'
            continue
        parts = _CODE.split(line)
        lines[i] = ''.join(p if j % 2 else _MARKUP.sub(r'\\\1', p) for j, p in enumerate(parts))


def setup(app):
    app.connect('autodoc-process-docstring', _plain_docstring)
