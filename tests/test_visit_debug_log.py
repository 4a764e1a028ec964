"""debug_wanted: the per-visit DEBUG line is built only when a handler would take it."""

from __future__ import annotations

import itertools
import logging

from scrapy_fresh.crawl.visits import debug_wanted

_names = itertools.count()


def tree() -> logging.Logger:
    """A new logger under a new parent that does not propagate (pytest's handlers are
    left out), configured as Scrapy does it: the loggers let every level through, the level
    filtering done by the handler."""
    name = f"fresh-debug-test-{next(_names)}"
    parent = logging.getLogger(name)
    parent.propagate = False
    parent.setLevel(logging.DEBUG)  # Scrapy's root logger: NOTSET, every level passes
    return logging.getLogger(f"{name}.visits")


def test_a_handler_at_info_takes_no_debug_record():
    log = tree()
    log.parent.addHandler(logging.NullHandler())
    log.parent.handlers[0].setLevel(logging.INFO)
    assert log.isEnabledFor(logging.DEBUG)  # what the level alone says
    assert not debug_wanted(log)
    log.addHandler(logging.NullHandler())  # NOTSET: takes every record
    assert debug_wanted(log)


def test_levels_propagation_and_the_last_resort():
    log = tree()
    log.parent.addHandler(logging.NullHandler())
    assert debug_wanted(log)
    log = tree()
    log.parent.addHandler(logging.NullHandler())
    log.setLevel(logging.INFO)
    assert not debug_wanted(log)
    log = tree()
    log.parent.addHandler(logging.NullHandler())
    log.propagate = False
    assert not debug_wanted(log)  # no handler: the last resort, at WARNING
    quiet = logging.NullHandler()
    quiet.setLevel(logging.WARNING)
    log.addHandler(quiet)
    assert not debug_wanted(log)


def test_caplog_at_debug_still_gets_the_line(caplog):
    caplog.set_level(logging.DEBUG, logger="scrapy_fresh.crawl.visits")
    assert debug_wanted(logging.getLogger("scrapy_fresh.crawl.visits"))
