"""Packaging for scrapy_fresh; tool configuration lives in pyproject.toml."""

import re
from pathlib import Path

from setuptools import Extension, find_packages, setup

HERE = Path(__file__).parent
VERSION = re.search(
    r'^__version__ = "([^"]+)"', (HERE / "scrapy_fresh" / "__init__.py").read_text(), re.MULTILINE
).group(1)

setup(
    name="scrapy-fresh",
    version=VERSION,
    description="Keep a Scrapy-crawled collection fresh: due-time scheduling, "
    "conditional checks, change fingerprints and self-adjusting refresh times.",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    packages=find_packages(include=["scrapy_fresh", "scrapy_fresh.*"]),
    package_data={"scrapy_fresh": ["py.typed", "_speedups.pyi"]},
    # The C version of the fast fingerprint hash (scrapy_fresh/fingerprint/shingles.py uses it
    # when importable). optional=True: without a C compiler the install still succeeds
    # and fingerprint.py computes the same answers with NumPy.
    ext_modules=[Extension("scrapy_fresh._speedups", ["scrapy_fresh/_speedups.c"], optional=True)],
    entry_points={"console_scripts": ["scrapy-fresh = scrapy_fresh.commands:main"]},
    python_requires=">=3.10",
    install_requires=[
        "scrapy>=2.13",
        # imported directly (scrapy brings them too)
        "Twisted>=21.7",
        "itemadapter>=0.8",
        "w3lib>=2.1",
        "lxml>=5",
        "numpy>=1.24",
        # the page digest's HTML5 parser and text extraction (scrapy_fresh/fingerprint/content.py)
        "resiliparse>=0.15",
    ],
    extras_require={
        "redis": ["redis>=5", "scrapy-redis>=0.9"],
        "prometheus": ["prometheus-client>=0.17"],
        "test": [
            "prometheus-client>=0.17",
            "pytest>=8",
            "pytest-twisted>=1.14",
            "pytest-xdist>=3.5",
            # the reference simhash the fingerprint tests and benchmarks compare against
            "simhash>=2.1",
            "hypothesis>=6.100",
            "redis>=5",
            "scrapy-redis>=0.9",
            "matplotlib>=3.7",
        ],
        "docs": ["sphinx>=7"],
        "plots": ["matplotlib>=3.7"],
        "dev": ["ruff>=0.6", "mypy>=1.10"],
    },
    classifiers=[
        "Framework :: Scrapy",
        "Programming Language :: Python :: 3",
        "Typing :: Typed",
    ],
)
