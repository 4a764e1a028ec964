"""Pure policy maths: standard library only, no clock reads (every function takes ``now``).

Submodules:

* :mod:`~scrapy_fresh.policy.refresh` -- Sharma & Dixit self-adjusting refresh time, p_c.
* :mod:`~scrapy_fresh.policy.cost` -- the same rule when a check (a 304) costs little.
* :mod:`~scrapy_fresh.policy.priority` -- Xu et al. provider-aware priority scores and slots.
* :mod:`~scrapy_fresh.policy.metrics` -- freshness, age, harmonic staleness, P_fresh(R).
* :mod:`~scrapy_fresh.policy.estimators` -- change-rate estimators and WebFountain buckets.
* :mod:`~scrapy_fresh.policy.allocation` -- uniform, proportional, Cho-optimal, LambdaCrawl.
"""
