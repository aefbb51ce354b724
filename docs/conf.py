"""Sphinx configuration of fjax's documentation; ``python docs/build.py`` builds it."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

project = "fjax"
author = "fjax contributors"
copyright = "fjax contributors"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

exclude_patterns = ["_build", ".doctrees", "**.ipynb_checkpoints"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# Notebooks are rendered from the outputs stored in them; the test suite executes them.
nb_execution_mode = "off"
# Headings of the Markdown pages (architecture.md links its own sections) get anchors.
myst_heading_anchors = 3

# The API pages list their names themselves (docs/build.py). Type comments are not read: fjax
# has none, and looking for them re-parses every function's source.
autodoc_use_type_comments = False
autodoc_typehints = "none"
toc_object_entries = False  # the API pages list their names in a table; a toc of ~2,000 entries is slow
napoleon_google_docstring = True
napoleon_numpy_docstring = False
add_module_names = False

html_theme = "furo"
html_title = "fjax"
html_copy_source = False
html_show_sourcelink = False


def _tensor_docstrings(app, what, name, obj, options, lines):
    """A Tensor method that is a documented ``fjax`` function, or an undocumented in-place method,
    gets one line pointing to the function's entry (see ``build.tensor_pointer_doc``)."""
    if name.startswith("fjax.Tensor."):
        from build import tensor_pointer_doc

        import fjax

        doc = tensor_pointer_doc(fjax, name.rsplit(".", 1)[1])
        if doc:
            lines[:] = [doc]


def _napoleon_prose_properties(app, what, name, obj, options, lines):
    """napoleon, except that a property's or attribute's docstring is read as prose: napoleon
    takes its first line ``a: b`` for ``type: description``, while fjax writes "The real part
    (fjax.real): a copy ..."."""
    from sphinx.ext.napoleon import _process_docstring

    _process_docstring(app, "method" if what in ("property", "attribute") else what, name, obj, options, lines)


def setup(app):
    from sphinx.ext.napoleon import _process_docstring

    for listener in list(app.events.listeners["autodoc-process-docstring"]):
        if listener.handler is _process_docstring:
            app.disconnect(listener.id)
    app.connect("autodoc-process-docstring", _napoleon_prose_properties)
    # Before napoleon (priority 500) reads the docstring it replaces.
    app.connect("autodoc-process-docstring", _tensor_docstrings, priority=100)
