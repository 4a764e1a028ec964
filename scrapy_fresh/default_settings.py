"""Every ``FRESH_*`` setting's default, in one place.

Enabling flags first, then alphabetical. Each setting is documented in
``docs/reference/settings.rst``: add it there when you add it here.
"""

from __future__ import annotations

from scrapy_fresh.policy.refresh import DEFAULT_HALF_LIFE_VISITS, DEFAULT_P_G, DEFAULT_P_L

FRESH_ENABLED = True

#: Conditional check: "auto" learns per host; "conditional", "head" or "none" force one way.
FRESH_CHECK = "auto"
#: Pages without items: selectors (CSS, or XPath as "xpath:..." or starting with "/") of
#: the elements whose text is the content; [] for the page's main content.
FRESH_CONTENT_INCLUDE: list[str] = []
#: Pages without items: selectors of elements that are not content.
FRESH_CONTENT_EXCLUDE: list[str] = []
#: Pages without items: regular expressions whose matches in the text are not content.
FRESH_CONTENT_IGNORE: list[str] = []
#: Pages without items: built-in noise rules (scrapy_fresh.fingerprint.content.NOISE_RULES) that run;
#: None for all of them.
FRESH_CONTENT_NOISE_RULES: list[str] | None = None
#: Pages without items: the targets of the content's links and images are content too.
FRESH_CONTENT_LINKS = False
#: Pages fetched per ``cycle``-mode run (due re-crawls plus new URLs); 0 means no limit.
FRESH_CYCLE_BUDGET = 0
#: With a cycle budget: budget the due pages leave is spent on pages not due yet, best first.
FRESH_CYCLE_FILL = True
#: Cycle mode: records due up to this many seconds from now count as due. None: half the
#: measured time between runs (rounding due times to the nearest run); 0: none.
FRESH_CYCLE_LOOKAHEAD_SECS: float | None = None
#: Cycle mode: longest total Retry-After back-off a run waits for one host; a longer one
#: leaves the host's remaining pages due for the next run.
FRESH_CYCLE_MAX_WAIT_SECS = 60.0
#: Refresh time of a new URL whose site has no history yet (Sharma & Dixit t_0).
FRESH_DEFAULT_REFRESH_SECS = 86400.0
#: Drop items whose counted fields did not change.
FRESH_DROP_UNCHANGED_ITEMS = False
#: Base wait after a failed visit (5xx, timeout, DNS); doubled per consecutive error.
FRESH_ERROR_BACKOFF_SECS = 300.0
#: Rules per item field: {"sidebar": {"ignore": [r"rendered in \d+ ms"]},
#: "description": {"fuzzy_bits": 3}, "tracking": {"skip": True}}; other fields are exact.
FRESH_FIELD_RULES: dict[str, dict[str, object]] = {}
#: Item fields whose changes count; None means every field of the item.
FRESH_FINGERPRINT_FIELDS = None
#: Pages judged by neither item fields nor a content digest (records from before them):
#: simhash distance (bits) above which they count as changed.
FRESH_FINGERPRINT_THRESHOLD_BITS = 3
#: Download attempts of one host in a row (Scrapy's retries included) that got no answer
#: (refused, no DNS answer, timed out) before its other pages are held back for the error
#: back-off (doubled per pause; in cycle mode usually until the next run). 0: never.
FRESH_UNREACHABLE_ATTEMPTS = 9
#: How many consecutive 404/410 answers make a page ``gone``.
FRESH_GONE_CONFIRMATIONS = 2
#: Opt in to length probes: pages without ETag or Last-Modified get a HEAD request whose
#: unchanged Content-Length stands for "unchanged" (a same-length edit is then missed until
#: the next full download). Off: such pages are downloaded in full on every visit.
FRESH_LENGTH_PROBE = False
#: With FRESH_LENGTH_PROBE: every this-many-th visit of a length-probed page downloads it
#: in full anyway (a same-length edit shows in no header). 0 or 1: no length-only probes.
FRESH_LENGTH_PROBE_FULL_EVERY = 4
#: Longest refresh time the self-adjusting rule may reach.
FRESH_MAX_REFRESH_SECS = 30 * 86400.0
#: Least share of a full download a cheap check (a 304, a HEAD probe) counts for in the
#: cost-aware refresh rule, whatever its bytes; 1.0 is Sharma & Dixit's rule unchanged.
FRESH_MIN_CHECK_COST_RATIO = 0.05
#: Shortest refresh time the self-adjusting rule may reach.
FRESH_MIN_REFRESH_SECS = 60.0
#: "cycle" (fetch what is due, then close) or "continuous" (stay open, fetch as pages come due).
FRESH_MODE = "cycle"
#: Share of each cycle's budget reserved for newly discovered URLs (WebFountain's mix).
FRESH_NEW_URL_SHARE = 0.2
#: Degree-of-success band of Sharma & Dixit: p_l.
FRESH_PC_LOWER = DEFAULT_P_L
#: Degree-of-success band of Sharma & Dixit: p_g.
FRESH_PC_UPPER = DEFAULT_P_G
#: Visits after which an old visit counts half in p_c (0 never fades: plain changes/visits).
FRESH_PC_HALF_LIFE_VISITS = DEFAULT_HALF_LIFE_VISITS
#: Provider level per domain: {"example.com": "smart"}; subdomains inherit.
FRESH_PROVIDERS: dict[str, str] = {}
#: Raise a page from normal to smart/super when its provider publishes update signals.
FRESH_PROVIDER_AUTODETECT = True
#: With ROBOTSTXT_OBEY off: request each host's robots.txt for its Sitemap: lines.
FRESH_PROVIDER_FETCH_ROBOTS = False
#: Largest sitemap or feed body read for signals, as downloaded (gzip or not).
FRESH_PROVIDER_MAX_BYTES = 50 * 1024 * 1024
#: Most entries (URLs, items) read from one sitemap or feed; the rest are counted only.
FRESH_PROVIDER_MAX_ENTRIES = 50_000
#: Largest sitemap or feed after gunzip (a gzip bomb stops here).
FRESH_PROVIDER_MAX_INFLATED_BYTES = 50 * 1024 * 1024
#: Deepest sitemap followed: 0 = robots.txt lines only, 1 = their index's children, ...
FRESH_PROVIDER_MAX_SITEMAP_DEPTH = 2
#: Most sitemaps sitemap discovery takes per host in one run.
FRESH_PROVIDER_MAX_SITEMAPS = 50
#: Read update signals from headers, sitemaps, feeds and request meta.
FRESH_PROVIDER_SIGNALS = True
#: Follow robots.txt Sitemap: lines and sitemap indexes to read their <lastmod> signals.
FRESH_PROVIDER_SITEMAPS = True
#: Aging factor alpha of Xu et al. eq. 6 (weight of the last cycle's accesses).
FRESH_PRIORITY_ALPHA = 0.8
#: Weight beta of past over future scores in Xu et al. eq. 7 (S_unified).
FRESH_PRIORITY_BETA = 0.8
#: Re-crawl score: "gain" (expected fresh time a fetch buys) or "xu" (Xu et al. eq. 4-7 alone).
FRESH_PRIORITY_SCORE = "gain"
#: Window s of Xu et al. eq. 6: cycles of access history used to predict the next.
FRESH_PRIORITY_WINDOW_CYCLES = 5
#: Prefix of the Redis store's keys (FRESH_STORE = "redis"); %(spider)s is the spider's name.
FRESH_REDIS_KEY = "%(spider)s:fresh"
#: Redis frontier: seconds a worker holds a URL it took before another worker may take it.
FRESH_REDIS_LEASE_SECS = 600.0
#: Seconds the SQLite store keeps the crawl's record writes in memory before writing them
#: in one short transaction (0: a transaction per visit); see scrapy_fresh.crawl.commits.
FRESH_COMMIT_SECS = 1.0
#: Seconds between progress log lines of a crawl (0: none); see scrapy_fresh.crawl.progress.
FRESH_PROGRESS_SECS = 30.0
#: Continuous mode: port of a Prometheus endpoint with the fresh/* stats (0: none).
FRESH_PROMETHEUS_PORT = 0
#: Address the Prometheus endpoint listens on.
FRESH_PROMETHEUS_ADDRESS = "127.0.0.1"
#: Operator's bounds on refresh times per host or URL regex (scrapy_fresh.policy.schedule).
FRESH_SCHEDULE_RULES: list[dict[str, object]] = []
#: Path of the SQLite store; a relative path is resolved under the project's .scrapy/ dir.
FRESH_SQLITE_PATH = "fresh/%(spider)s.sqlite"
#: Learn per host and signal kind whether a provider's signals hold; ignore them if not.
FRESH_TRUST = True
#: Judged quiet claims (max-age, Expires, <ttl>, skip windows) a host needs before they
#: defer its pages by half the claimed time (0: defer as far as the judged ones allow).
FRESH_TRUST_QUIET_EVIDENCE = 3.0
#: Trust (0-1) at or above which a demoted host's signals are used again.
FRESH_TRUST_RECOVER = 0.6
#: Trust (0-1) below which a host's signals of one kind are ignored.
FRESH_TRUST_THRESHOLD = 0.5
#: Store backend: "sqlite" (one machine), "memory", "redis" (several processes) or an import path.
FRESH_STORE = "sqlite"
#: JSON-lines log of every visit and download (for ``scrapy-fresh report``); "" turns it off.
FRESH_VISIT_LOG = "fresh/visits.jsonl"

# -- change output (scrapy_fresh.changes.compare, scrapy_fresh.crawl.gone, scrapy_fresh.crawl.webhook) ------
#: Keep the counted fields of a page's items with its record (compressed), so that a
#: changed item gets fresh_previous and fresh_diff.
FRESH_KEEP_ITEMS = False
#: Most bytes (compressed) kept per page; a page whose items need more keeps none.
FRESH_KEEP_ITEMS_MAX_BYTES = 65536
#: Item field that identifies an item on its page (e.g. "sku"); None: by position.
FRESH_ITEM_KEY_FIELD: str | None = None
#: Text fields of at least this many characters get a unified diff in fresh_diff.
FRESH_DIFF_MIN_CHARS = 200
#: Send a PageGone item through the item pipelines when a page becomes gone.
FRESH_GONE_ITEMS = True
#: URL the webhook extension POSTs each change to; "" turns it off.
FRESH_WEBHOOK_URL = ""
#: Secret of the HMAC-SHA256 signature of each delivery (X-Fresh-Signature).
FRESH_WEBHOOK_SECRET = ""
#: SQLite outbox of deliveries not acknowledged yet (relative: under .scrapy/).
FRESH_WEBHOOK_OUTBOX = "fresh/webhook-%(spider)s.sqlite"
#: First wait after a failed delivery; doubled per failure up to FRESH_WEBHOOK_MAX_BACKOFF_SECS.
FRESH_WEBHOOK_BACKOFF_SECS = 1.0
#: Longest wait between two attempts of one delivery.
FRESH_WEBHOOK_MAX_BACKOFF_SECS = 300.0
#: Seconds one POST may take.
FRESH_WEBHOOK_TIMEOUT_SECS = 10.0
#: Seconds the crawl waits at its end for the outbox to empty (the rest goes next run).
FRESH_WEBHOOK_CLOSE_WAIT_SECS = 10.0
