"""The demo site's vocabulary: titles (:mod:`~scrapy_fresh.demo.model`) and text
(:mod:`~scrapy_fresh.demo.render`) are drawn from it."""

from __future__ import annotations

__all__ = ["WORDS"]

_WORD_TEXT = (
    "river market signal garden copper window harbor lantern meadow orbit canvas pepper "
    "thunder velvet quarry saddle timber violet walnut yonder anchor basket candle dagger "
    "ember falcon glacier hollow island jungle kettle ladder marble nectar oyster pillow "
    "quiver ribbon silver tunnel umbrella vessel wander zephyr bridge cedar delta forest "
    "granite horizon ivory jasper kernel lagoon mosaic nebula orchard prairie quartz"
)
WORDS = tuple(_WORD_TEXT.split(" "))
