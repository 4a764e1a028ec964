"""``python -m scrapy_fresh.commands`` runs the ``scrapy-fresh`` command line."""

import sys

from scrapy_fresh.commands import main

sys.exit(main())
