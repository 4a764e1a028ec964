"""Settings of the example project, to read top to bottom.

Everything scrapy_fresh does is switched on by the one ADDONS line; the FRESH_* lines
below only spell out the choices (most are the defaults, a few are tuned for a demo
site whose clock runs fast). Every FRESH_* setting is in docs/reference/settings.rst.
"""

BOT_NAME = "example_project"
SPIDER_MODULES = ["example_project.spiders"]
NEWSPIDER_MODULE = "example_project.spiders"

# The whole scrapy_fresh setup: scheduler, conditional-check middleware, change
# judging, item pipeline and visit log.
ADDONS = {"scrapy_fresh.Addon": 0}

# Be a good citizen: robots.txt is obeyed (its Disallow and its Crawl-delay, which
# scrapy_fresh's scheduler applies per host).
ROBOTSTXT_OBEY = True
USER_AGENT = "scrapy-fresh-example/1.0"
LOG_LEVEL = "INFO"
TELNETCONSOLE_ENABLED = False

# The demo site (`scrapy-fresh demo-site`); the spiders start from its sections.
DEMO_SITE_URL = "http://127.0.0.1:8069"
# Demo only: scrapy_fresh reads the demo site's fast clock (see democlock.py).
EXTENSIONS = {"example_project.democlock.DemoClock": 0}

# -- scrapy_fresh ---------------------------------------------------------------------
# "cycle": each `scrapy crawl` fetches what is due now (plus new URLs) and stops; run it
# from cron. "continuous" would keep the spider open and fetch pages as they come due.
FRESH_MODE = "cycle"
# Pages per cycle (due re-crawls plus new URLs); 0 = no limit. The demo site is small.
FRESH_CYCLE_BUDGET = 0
# Longest Retry-After back-off a cycle run waits for one host (in all); a longer one
# leaves the host's pages due for the next run. The demo's clock runs fast: its flaky
# pages ask for 120 demo seconds, a few milliseconds of real time, so the demo waits.
FRESH_CYCLE_MAX_WAIT_SECS = 3600.0
# Share of a limited budget kept for newly found URLs (WebFountain's mix).
FRESH_NEW_URL_SHARE = 0.2
# How to check a known page cheaply: "auto" sends If-None-Match / If-Modified-Since
# where the page has validators and learns per host whether a HEAD probe is better.
FRESH_CHECK = "auto"
# A check answered 304 costs a few hundred bytes; it counts as at least this share of a
# full download, so pages whose host answers them are re-checked more often than pages
# that must be downloaded to be checked (1.0: every visit counts as a download).
FRESH_MIN_CHECK_COST_RATIO = 0.05
# Where URL records live: SQLite files under .scrapy/ (one machine), one per spider
# (%(spider)s is the spider's name): a store belongs to one spider, whose callbacks
# rebuild its due requests.
FRESH_STORE = "sqlite"
FRESH_SQLITE_PATH = "fresh/%(spider)s.sqlite"
# The visit log `scrapy-fresh report` draws its history from ("" = no log).
FRESH_VISIT_LOG = "fresh/visits.jsonl"
# A new page is first revisited after this long (then its own history decides).
# Demo: 6 hours, since the demo site lives days in minutes.
FRESH_DEFAULT_REFRESH_SECS = 6 * 3600.0
# The self-adjusting refresh time (Sharma & Dixit) stays within these bounds.
FRESH_MIN_REFRESH_SECS = 30 * 60.0
FRESH_MAX_REFRESH_SECS = 14 * 86400.0
# The band of the degree of success p_c = changes / visits: above p_g a page is revisited
# sooner, below p_l later, in between its refresh time stays.
FRESH_PC_LOWER = 0.3
FRESH_PC_UPPER = 0.7
# Old visits fade: after this many visits one counts half in p_c.
FRESH_PC_HALF_LIFE_VISITS = 10.0
# Judge a page by these item fields only, each compared exactly (digits kept): the
# footer's timestamp or ad is not a change.
FRESH_FINGERPRINT_FIELDS = ["title", "body", "date"]
# Pages without items (the indexes) are judged by their simhash: further apart than this
# many bits (of 64) means a real change.
FRESH_FINGERPRINT_THRESHOLD_BITS = 3
# Keep the items of unchanged pages (they get fresh_changed = False); True drops them.
FRESH_DROP_UNCHANGED_ITEMS = False
# Two 404/410 answers in a row and a page is gone (kept, so it is not "rediscovered").
FRESH_GONE_CONFIRMATIONS = 2
# After a failure (5xx, timeout) wait this long, doubled per failure in a row.
FRESH_ERROR_BACKOFF_SECS = 1800.0
# Provider levels per domain; here each spider says it with `fresh_provider` instead.
FRESH_PROVIDERS: dict[str, str] = {}
