"""Sphinx configuration of the HTML book (built by book/build.py; `make book`).

book/build.py stages everything the book shows into book/_build/src/ (this file, the pages
written by hand, the lessons as committed, the generated pages and the vendored JavaScript)
and runs Sphinx there. The book reads offline: the notebooks are not executed, and every
script, style and font a page loads is served from the book's own _static/ folder — no page
asks another host for anything (tests/browser/test_book_pages.py checks it in Chromium).
"""
project = "The Pretraining Code"
author = "The Pretraining Code authors"
copyright = "the authors; code MIT, each corpus under its own licence (see the datasheet)"

extensions = ["myst_nb"]          # myst_nb brings myst_parser; sphinx.ext.mathjax is Sphinx's default

# -- the notebooks: shown with the outputs they were committed with (`make lessons` makes them)
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# -- JavaScript served by the book itself (book/build.py unpacks the pinned npm packages here)
# MathJax 3 from the npm package `mathjax`; Sphinx's default would load MathJax 4 from a CDN.
mathjax_path = "vendor/mathjax/tex-mml-chtml.js"
mathjax3_config = {"startup": {"typeset": True}}   # non-empty, so myst adds its classes to this one
mathjax4_config = None
# Static widget state: RequireJS and the ipywidgets HTML manager (npm: requirejs,
# @jupyter-widgets/html-manager) replace myst-nb's default CDN URLs. The manager would load a
# widget library it does not bundle from `data-jupyter-widgets-cdn`: pointed at a local folder,
# such a widget fails visibly (a console error the page test catches) instead of going online.
nb_ipywidgets_js = {
    "vendor/require.js": {},
    "widgets-require-config.js": {},   # where the bundled modules find their fonts (see the file)
    "vendor/html-manager/embed-amd.js": {"data-jupyter-widgets-cdn": "_static/vendor/not-bundled/"},
}
# html-manager 1.x calls the MathJax 2 API (MathJax.Hub.Queue) when a widget label is drawn;
# this shim maps it onto MathJax 3 (book/_static/mathjax2-shim.js).
html_js_files = ["mathjax2-shim.js"]

# -- pages
root_doc = "index"
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "_generated"]
html_theme = "furo"
html_title = "The Pretraining Code"
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {"navigation_with_keys": True}
suppress_warnings = ["myst.header"]   # the lessons start sections at level 2 under their level-1 title
