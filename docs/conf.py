"""Sphinx configuration for scrapy_fresh."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "scrapy_fresh"
author = "scrapy_fresh developers"
copyright = "2026, scrapy_fresh developers"

from scrapy_fresh import __version__ as release  # noqa: E402

version = release
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
exclude_patterns = ["_build"]
html_theme = "alabaster"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
nitpicky = False


def setup(app):
    # Roles and directives for settings, stats and signals: ``:setting:`FRESH_STORE```.
    app.add_crossref_type("setting", "setting", indextemplate="pair: %s; setting")
    app.add_crossref_type("stat", "stat", indextemplate="pair: %s; stat")
    app.add_crossref_type("signal", "signal", indextemplate="pair: %s; signal")
    app.add_crossref_type("reqmeta", "reqmeta", indextemplate="pair: %s; reqmeta")
