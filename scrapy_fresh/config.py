"""All ``FRESH_*`` settings read and validated once: :meth:`FreshConfig.from_settings`.

A bad value stops the crawl at start-up with a :class:`~scrapy_fresh.exceptions.ConfigError`
(a ``ValueError``) that names the setting, the value and what is expected.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy_fresh import default_settings
from scrapy_fresh._boolean import parse_flag
from scrapy_fresh.changes.compare import ChangeConfig
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.fingerprint.content import DEFAULT_RULES, ContentRules
from scrapy_fresh.fingerprint.itemfields import (
    FIELD_PREFIX,
    FieldRule,
    parse_field_rules,
    parse_fields,
)
from scrapy_fresh.frontier.revisit import RevisitPolicy
from scrapy_fresh.frontier.scoring import SCORE_RULES, ScoreParams
from scrapy_fresh.policy.refresh import decay_for_half_life
from scrapy_fresh.policy.schedule import NO_RULES, ScheduleRules
from scrapy_fresh.store.base import Provider, StateStore

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = [
    "CHECK_MODES",
    "MODES",
    "STORES",
    "FreshConfig",
    "change_config",
    "flag",
    "parse_provider",
    "pc_decay",
    "revisit_policy",
    "score_params",
]

MODES = ("cycle", "continuous")
CHECK_MODES = ("auto", "conditional", "head", "none")
STORES = ("sqlite", "memory", "redis")
#: A path whose only placeholder is %(spider)s (and %% for a literal %).
_SPIDER_TEMPLATE = re.compile(r"(?:[^%]|%%|%\(spider\)s)*")
_PROVIDERS = tuple(p.value for p in Provider)
#: The methods a FRESH_STORE class must have (those of the StateStore protocol).
_STORE_METHODS = tuple(
    sorted(n for n, v in vars(StateStore).items() if callable(v) and not n.startswith("_"))
)
#: Widest simhash difference, in bits (a threshold of 64 would never see a change).
FINGERPRINT_BITS = 64


def parse_provider(value: Any, where: str) -> Provider:
    """Return the :class:`Provider` named by ``value``; ``where`` names its source in errors.

    >>> parse_provider("Smart", "meta['fresh_provider']").value
    'smart'
    """
    if isinstance(value, Provider):
        return value
    if isinstance(value, str) and value.strip().lower() in _PROVIDERS:
        return Provider(value.strip().lower())
    raise ConfigError(
        f"{where} ({value!r}) is not a provider level; expected one of {', '.join(_PROVIDERS)}."
    )


def _setting(settings: BaseSettings, name: str) -> Any:
    return settings.get(name, getattr(default_settings, name))


def flag(settings: BaseSettings, name: str) -> bool:
    """A boolean setting, with its default from :mod:`scrapy_fresh.default_settings`:
    True/False, 1/0, or "true"/"false", as Scrapy's getbool reads them."""
    return parse_flag(_setting(settings, name), name)


def _spider_path(settings: BaseSettings, name: str) -> str:
    """A file path setting in which %(spider)s is the only placeholder."""
    path = _setting(settings, name)
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(f"{name} ({path!r}) must be a non-empty path.")
    if _SPIDER_TEMPLATE.fullmatch(path) is None:
        raise ConfigError(
            f"{name} ({path!r}) must be a path in which %(spider)s (the spider's name) is "
            "the only placeholder; write a literal % as %%."
        )
    return path.strip()


def _store(settings: BaseSettings) -> str:
    """FRESH_STORE: a built-in store's name, or the import path of a StateStore class."""
    raw = _setting(settings, "FRESH_STORE")
    name = raw.strip() if isinstance(raw, str) else ""
    if name.lower() in STORES:
        return name.lower()
    if "." not in name:
        raise ConfigError(
            f"FRESH_STORE ({raw!r}) must be one of {', '.join(STORES)} or the import path "
            "of a StateStore class."
        )
    _check_store_class(name)
    return name


def _check_store_class(path: str) -> None:
    """Import ``path``; raise unless it is a class with the StateStore methods."""
    module, _, name = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"FRESH_STORE ({path!r}) cannot be imported: {exc}. Expected 'sqlite', "
            "'memory', 'redis' or the import path of a StateStore class."
        ) from None
    missing = [m for m in _STORE_METHODS if not callable(getattr(found, m, None))]
    if not isinstance(found, type) or missing:
        what = "a class" if isinstance(found, type) else f"a {type(found).__name__}"
        raise ConfigError(
            f"FRESH_STORE ({path!r}) is {what} that does not implement the StateStore "
            f"protocol (scrapy_fresh.store.base.StateStore; missing: "
            f"{', '.join(missing) or 'not a class'})."
        )


def _number(
    settings: BaseSettings,
    name: str,
    *,
    low: float | None = None,
    low_open: bool = False,
    high: float | None = None,
) -> float:
    raw = _setting(settings, name)
    if isinstance(raw, bool):
        raise ConfigError(f"{name} ({raw!r}) must be a number, not a boolean.")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} ({raw!r}) must be a number.") from None
    if not math.isfinite(value):
        raise ConfigError(f"{name} ({raw!r}) must be a finite number.")
    if low is not None and (value <= low if low_open else value < low):
        relation = "higher than" if low_open else "at least"
        raise ConfigError(f"{name} ({raw!r}) must be {relation} {low:g}.")
    if high is not None and value > high:
        raise ConfigError(f"{name} ({raw!r}) must be at most {high:g}.")
    return value


def _integer(settings: BaseSettings, name: str, *, low: int, high: int | None = None) -> int:
    raw = _setting(settings, name)
    value = _number(settings, name, low=low, high=high)
    if value != int(value):
        raise ConfigError(f"{name} ({raw!r}) must be a whole number.")
    return int(value)


def _choice(settings: BaseSettings, name: str, choices: tuple[str, ...]) -> str:
    raw = _setting(settings, name)
    value = str(raw).strip().lower() if isinstance(raw, str) else raw
    if value not in choices:
        raise ConfigError(f"{name} ({raw!r}) must be one of {', '.join(choices)}.")
    return str(value)


def _address(settings: BaseSettings, name: str) -> str:
    """A host name or IP address to listen on."""
    raw = _setting(settings, name)
    if not isinstance(raw, str) or not raw.strip() or any(c.isspace() for c in raw.strip()):
        raise ConfigError(
            f"{name} ({raw!r}) must be a host name or IP address to listen on, such as "
            "'127.0.0.1' or '0.0.0.0'."
        )
    return raw.strip()


def _providers(settings: BaseSettings) -> dict[str, Provider]:
    raw = _setting(settings, "FRESH_PROVIDERS") or {}
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"FRESH_PROVIDERS ({raw!r}) must be a dict of domain -> provider level, "
            'e.g. {"example.com": "smart"}.'
        )
    result: dict[str, Provider] = {}
    for domain, level in raw.items():
        if not isinstance(domain, str) or not domain.strip():
            raise ConfigError(
                f"FRESH_PROVIDERS has a bad domain {domain!r}; expected a host name."
            )
        result[domain.strip().lower().lstrip(".")] = parse_provider(
            level, f"FRESH_PROVIDERS[{domain!r}]"
        )
    return result


@dataclass(frozen=True)
class FreshConfig:
    """The validated ``FRESH_*`` settings (see ``docs/reference/settings.rst``)."""

    enabled: bool = default_settings.FRESH_ENABLED
    store: str = default_settings.FRESH_STORE
    sqlite_path: str = default_settings.FRESH_SQLITE_PATH
    mode: str = default_settings.FRESH_MODE
    cycle_budget: int = default_settings.FRESH_CYCLE_BUDGET
    #: None: half the measured time between cycle runs (:mod:`scrapy_fresh.policy.cadence`).
    cycle_lookahead_secs: float | None = default_settings.FRESH_CYCLE_LOOKAHEAD_SECS
    cycle_max_wait_secs: float = default_settings.FRESH_CYCLE_MAX_WAIT_SECS
    new_url_share: float = default_settings.FRESH_NEW_URL_SHARE
    check: str = default_settings.FRESH_CHECK
    min_check_cost_ratio: float = default_settings.FRESH_MIN_CHECK_COST_RATIO
    length_probe: bool = default_settings.FRESH_LENGTH_PROBE
    length_probe_full_every: int = default_settings.FRESH_LENGTH_PROBE_FULL_EVERY
    default_refresh_secs: float = default_settings.FRESH_DEFAULT_REFRESH_SECS
    min_refresh_secs: float = default_settings.FRESH_MIN_REFRESH_SECS
    max_refresh_secs: float = default_settings.FRESH_MAX_REFRESH_SECS
    pc_lower: float = default_settings.FRESH_PC_LOWER
    pc_upper: float = default_settings.FRESH_PC_UPPER
    pc_half_life_visits: float = default_settings.FRESH_PC_HALF_LIFE_VISITS
    providers: dict[str, Provider] = field(default_factory=dict)
    drop_unchanged_items: bool = default_settings.FRESH_DROP_UNCHANGED_ITEMS
    fingerprint_fields: tuple[str, ...] | None = default_settings.FRESH_FINGERPRINT_FIELDS
    field_rules: dict[str, FieldRule] = field(default_factory=dict)
    fingerprint_threshold_bits: int = default_settings.FRESH_FINGERPRINT_THRESHOLD_BITS
    content_rules: ContentRules = DEFAULT_RULES
    gone_confirmations: int = default_settings.FRESH_GONE_CONFIRMATIONS
    error_backoff_secs: float = default_settings.FRESH_ERROR_BACKOFF_SECS
    unreachable_attempts: int = default_settings.FRESH_UNREACHABLE_ATTEMPTS
    priority_alpha: float = default_settings.FRESH_PRIORITY_ALPHA
    priority_beta: float = default_settings.FRESH_PRIORITY_BETA
    priority_window_cycles: int = default_settings.FRESH_PRIORITY_WINDOW_CYCLES
    priority_score: str = default_settings.FRESH_PRIORITY_SCORE
    cycle_fill: bool = default_settings.FRESH_CYCLE_FILL
    visit_log: str = default_settings.FRESH_VISIT_LOG
    progress_secs: float = default_settings.FRESH_PROGRESS_SECS
    commit_secs: float = default_settings.FRESH_COMMIT_SECS
    redis_key: str = default_settings.FRESH_REDIS_KEY
    redis_lease_secs: float = default_settings.FRESH_REDIS_LEASE_SECS
    provider_signals: bool = default_settings.FRESH_PROVIDER_SIGNALS
    provider_autodetect: bool = default_settings.FRESH_PROVIDER_AUTODETECT
    provider_max_bytes: int = default_settings.FRESH_PROVIDER_MAX_BYTES
    provider_max_inflated_bytes: int = default_settings.FRESH_PROVIDER_MAX_INFLATED_BYTES
    provider_max_entries: int = default_settings.FRESH_PROVIDER_MAX_ENTRIES
    provider_sitemaps: bool = default_settings.FRESH_PROVIDER_SITEMAPS
    provider_fetch_robots: bool = default_settings.FRESH_PROVIDER_FETCH_ROBOTS
    provider_max_sitemaps: int = default_settings.FRESH_PROVIDER_MAX_SITEMAPS
    provider_max_sitemap_depth: int = default_settings.FRESH_PROVIDER_MAX_SITEMAP_DEPTH
    trust: bool = default_settings.FRESH_TRUST
    trust_threshold: float = default_settings.FRESH_TRUST_THRESHOLD
    trust_recover: float = default_settings.FRESH_TRUST_RECOVER
    trust_quiet_evidence: float = default_settings.FRESH_TRUST_QUIET_EVIDENCE
    schedule_rules: ScheduleRules = NO_RULES
    prometheus_port: int = default_settings.FRESH_PROMETHEUS_PORT
    prometheus_address: str = default_settings.FRESH_PROMETHEUS_ADDRESS
    changes: ChangeConfig = field(default_factory=ChangeConfig)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FreshConfig:
        """Read and validate every ``FRESH_*`` setting; raise ConfigError on the first bad one."""
        store = _store(settings)
        sqlite_path = _setting(settings, "FRESH_SQLITE_PATH")
        if not isinstance(sqlite_path, str) or not sqlite_path.strip():
            raise ConfigError(f"FRESH_SQLITE_PATH ({sqlite_path!r}) must be a non-empty path.")
        if _SPIDER_TEMPLATE.fullmatch(sqlite_path) is None:
            raise ConfigError(
                f"FRESH_SQLITE_PATH ({sqlite_path!r}) must be a path in which %(spider)s (the "
                "spider's name) is the only placeholder; write a literal % as %%."
            )
        visit_log = _setting(settings, "FRESH_VISIT_LOG")
        if visit_log is None:
            visit_log = ""
        if not isinstance(visit_log, str):
            raise ConfigError(
                f'FRESH_VISIT_LOG ({visit_log!r}) must be a file path, or "" for no log.'
            )
        redis_key = _setting(settings, "FRESH_REDIS_KEY")
        try:
            redis_key % {"spider": "spider"}
        except (TypeError, KeyError, ValueError):
            raise ConfigError(
                f"FRESH_REDIS_KEY ({redis_key!r}) must be a key prefix such as "
                "'%(spider)s:fresh' (%(spider)s is the only placeholder)."
            ) from None
        if not isinstance(redis_key, str) or not redis_key.strip():
            raise ConfigError(f"FRESH_REDIS_KEY ({redis_key!r}) must be a non-empty key prefix.")
        fp_fields = parse_fields(
            _setting(settings, "FRESH_FINGERPRINT_FIELDS"), "FRESH_FINGERPRINT_FIELDS"
        )
        field_rules = parse_field_rules(
            _setting(settings, "FRESH_FIELD_RULES"), "FRESH_FIELD_RULES"
        )
        changes = change_config(settings)
        changes.check_rules(fp_fields, field_rules)
        config = cls(
            changes=changes,
            enabled=flag(settings, "FRESH_ENABLED"),
            store=store,
            sqlite_path=sqlite_path,
            mode=_choice(settings, "FRESH_MODE", MODES),
            cycle_budget=_integer(settings, "FRESH_CYCLE_BUDGET", low=0),
            cycle_lookahead_secs=(
                None
                if _setting(settings, "FRESH_CYCLE_LOOKAHEAD_SECS") is None
                else _number(settings, "FRESH_CYCLE_LOOKAHEAD_SECS", low=0.0)
            ),
            cycle_max_wait_secs=_number(settings, "FRESH_CYCLE_MAX_WAIT_SECS", low=0.0),
            new_url_share=_number(settings, "FRESH_NEW_URL_SHARE", low=0.0, high=1.0),
            check=_choice(settings, "FRESH_CHECK", CHECK_MODES),
            min_check_cost_ratio=_number(
                settings, "FRESH_MIN_CHECK_COST_RATIO", low=0.0, low_open=True, high=1.0
            ),
            length_probe=flag(settings, "FRESH_LENGTH_PROBE"),
            length_probe_full_every=_integer(settings, "FRESH_LENGTH_PROBE_FULL_EVERY", low=0),
            default_refresh_secs=_number(
                settings, "FRESH_DEFAULT_REFRESH_SECS", low=0.0, low_open=True
            ),
            min_refresh_secs=_number(settings, "FRESH_MIN_REFRESH_SECS", low=0.0, low_open=True),
            max_refresh_secs=_number(settings, "FRESH_MAX_REFRESH_SECS", low=0.0, low_open=True),
            pc_lower=_number(settings, "FRESH_PC_LOWER", low=0.0, low_open=True, high=1.0),
            pc_upper=_number(settings, "FRESH_PC_UPPER", low=0.0, low_open=True, high=1.0),
            pc_half_life_visits=_number(settings, "FRESH_PC_HALF_LIFE_VISITS", low=0.0),
            providers=_providers(settings),
            drop_unchanged_items=flag(settings, "FRESH_DROP_UNCHANGED_ITEMS"),
            fingerprint_fields=fp_fields,
            field_rules=field_rules,
            fingerprint_threshold_bits=_integer(
                settings, "FRESH_FINGERPRINT_THRESHOLD_BITS", low=0, high=FINGERPRINT_BITS - 1
            ),
            content_rules=ContentRules.from_settings(settings),
            gone_confirmations=_integer(settings, "FRESH_GONE_CONFIRMATIONS", low=1),
            error_backoff_secs=_number(
                settings, "FRESH_ERROR_BACKOFF_SECS", low=0.0, low_open=True
            ),
            unreachable_attempts=_integer(settings, "FRESH_UNREACHABLE_ATTEMPTS", low=0),
            priority_alpha=_number(settings, "FRESH_PRIORITY_ALPHA", low=0.0, high=1.0),
            priority_beta=_number(settings, "FRESH_PRIORITY_BETA", low=0.0, high=1.0),
            priority_window_cycles=_integer(settings, "FRESH_PRIORITY_WINDOW_CYCLES", low=2),
            priority_score=_choice(settings, "FRESH_PRIORITY_SCORE", SCORE_RULES),
            cycle_fill=flag(settings, "FRESH_CYCLE_FILL"),
            visit_log=visit_log.strip(),
            progress_secs=_number(settings, "FRESH_PROGRESS_SECS", low=0.0),
            commit_secs=_number(settings, "FRESH_COMMIT_SECS", low=0.0),
            redis_key=redis_key.strip(),
            redis_lease_secs=_number(settings, "FRESH_REDIS_LEASE_SECS", low=0.0, low_open=True),
            provider_signals=flag(settings, "FRESH_PROVIDER_SIGNALS"),
            provider_autodetect=flag(settings, "FRESH_PROVIDER_AUTODETECT"),
            provider_max_bytes=_integer(settings, "FRESH_PROVIDER_MAX_BYTES", low=1),
            provider_max_inflated_bytes=_integer(
                settings, "FRESH_PROVIDER_MAX_INFLATED_BYTES", low=1
            ),
            provider_max_entries=_integer(settings, "FRESH_PROVIDER_MAX_ENTRIES", low=1),
            provider_sitemaps=flag(settings, "FRESH_PROVIDER_SITEMAPS"),
            provider_fetch_robots=flag(settings, "FRESH_PROVIDER_FETCH_ROBOTS"),
            provider_max_sitemaps=_integer(settings, "FRESH_PROVIDER_MAX_SITEMAPS", low=1),
            provider_max_sitemap_depth=_integer(
                settings, "FRESH_PROVIDER_MAX_SITEMAP_DEPTH", low=0
            ),
            trust=flag(settings, "FRESH_TRUST"),
            trust_threshold=_number(settings, "FRESH_TRUST_THRESHOLD", low=0.0, high=1.0),
            trust_recover=_number(settings, "FRESH_TRUST_RECOVER", low=0.0, high=1.0),
            trust_quiet_evidence=_number(settings, "FRESH_TRUST_QUIET_EVIDENCE", low=0.0),
            schedule_rules=ScheduleRules.parse(
                _setting(settings, "FRESH_SCHEDULE_RULES"), "FRESH_SCHEDULE_RULES"
            ),
            prometheus_port=_integer(settings, "FRESH_PROMETHEUS_PORT", low=0, high=65535),
            prometheus_address=_address(settings, "FRESH_PROMETHEUS_ADDRESS"),
        )
        config._check_combinations()
        return config

    def _check_combinations(self) -> None:
        if self.store == "redis" and self.cycle_budget:
            raise ConfigError(
                f"FRESH_CYCLE_BUDGET ({self.cycle_budget!r}) cannot be kept with "
                "FRESH_STORE = 'redis': the workers share one frontier and fetch every due "
                "page. Set FRESH_CYCLE_BUDGET = 0, or limit each worker with Scrapy's "
                "CLOSESPIDER_PAGECOUNT."
            )
        if self.prometheus_port and self.mode != "continuous":
            raise ConfigError(
                f"FRESH_PROMETHEUS_PORT ({self.prometheus_port!r}) serves continuous mode "
                "only (FRESH_MODE = 'continuous'); a cycle run exports its numbers with "
                "`scrapy-fresh status --prometheus` (node_exporter's textfile collector)."
            )
        if self.pc_lower >= self.pc_upper:
            raise ConfigError(
                f"FRESH_PC_LOWER ({self.pc_lower!r}) must be lower than "
                f"FRESH_PC_UPPER ({self.pc_upper!r})."
            )
        if self.trust_recover < self.trust_threshold:
            raise ConfigError(
                f"FRESH_TRUST_RECOVER ({self.trust_recover!r}) must not be lower than "
                f"FRESH_TRUST_THRESHOLD ({self.trust_threshold!r})."
            )
        if self.min_refresh_secs > self.max_refresh_secs:
            raise ConfigError(
                f"FRESH_MIN_REFRESH_SECS ({self.min_refresh_secs!r}) must not exceed "
                f"FRESH_MAX_REFRESH_SECS ({self.max_refresh_secs!r})."
            )
        if not self.min_refresh_secs <= self.default_refresh_secs <= self.max_refresh_secs:
            raise ConfigError(
                f"FRESH_DEFAULT_REFRESH_SECS ({self.default_refresh_secs!r}) must lie between "
                f"FRESH_MIN_REFRESH_SECS ({self.min_refresh_secs!r}) and "
                f"FRESH_MAX_REFRESH_SECS ({self.max_refresh_secs!r})."
            )

    def provider_for_host(self, host: str) -> Provider | None:
        """The level :setting:`FRESH_PROVIDERS` gives ``host`` (a subdomain inherits), or None.

        >>> FreshConfig(providers={"example.com": Provider.SMART}).provider_for_host(
        ...     "news.example.com:8080").value
        'smart'
        """
        if not self.providers:  # the default: asked once per visit
            return None
        name = host.split(":", 1)[0].lower()
        while name:
            if name in self.providers:
                return self.providers[name]
            if "." not in name:
                return None
            name = name.split(".", 1)[1]
        return None


def score_params(config: FreshConfig) -> ScoreParams:
    """The scores' constants from the ``FRESH_PRIORITY_*`` settings (the rate in the
    ``gain`` score uses the refresh rule's p_c decay, :setting:`FRESH_PC_HALF_LIFE_VISITS`)."""
    return ScoreParams(
        alpha=config.priority_alpha,
        beta=config.priority_beta,
        s=config.priority_window_cycles,
        rule=config.priority_score,
        decay=pc_decay(config.pc_half_life_visits),
        fill=config.cycle_fill,
    )


def revisit_policy(config: FreshConfig) -> RevisitPolicy:
    """The refresh rule's parameters (:func:`~scrapy_fresh.frontier.revisit.record_visit`)
    from the ``FRESH_*`` settings."""
    return RevisitPolicy(
        p_l=config.pc_lower,
        p_g=config.pc_upper,
        min_refresh_secs=config.min_refresh_secs,
        max_refresh_secs=config.max_refresh_secs,
        default_refresh_secs=config.default_refresh_secs,
        decay=pc_decay(config.pc_half_life_visits),
        error_backoff_secs=config.error_backoff_secs,
        gone_confirmations=config.gone_confirmations,
        rules=config.schedule_rules,
    )


def pc_decay(half_life_visits: float) -> float:
    """The factor record_visit keeps of old counts per visit, from
    :setting:`FRESH_PC_HALF_LIFE_VISITS`; 0 means no fading (plain changes / visits)."""
    return 1.0 if half_life_visits <= 0 else decay_for_half_life(half_life_visits)


def change_config(settings: BaseSettings) -> ChangeConfig:
    """Read and validate the change settings; a bad value raises ConfigError naming it."""
    key = _setting(settings, "FRESH_ITEM_KEY_FIELD")
    if key is not None and (not isinstance(key, str) or not key.strip()):
        raise ConfigError(
            f"FRESH_ITEM_KEY_FIELD ({key!r}) must be None (items matched by position) "
            "or the name of an item field that identifies an item, e.g. 'sku'."
        )
    if isinstance(key, str) and key.strip().startswith(FIELD_PREFIX):
        raise ConfigError(
            f"FRESH_ITEM_KEY_FIELD ({key!r}) names a field of scrapy_fresh's own "
            f"(they start with {FIELD_PREFIX!r}); name a field of your items."
        )
    texts = {}
    for name in ("FRESH_WEBHOOK_URL", "FRESH_WEBHOOK_SECRET"):
        value = _setting(settings, name)
        if not isinstance(value, str):
            raise ConfigError(f"{name} ({value!r}) must be a string, or '' for none.")
        texts[name] = value.strip()
    url = texts["FRESH_WEBHOOK_URL"]
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"FRESH_WEBHOOK_URL ({url!r}) must be an http:// or https:// URL.")
    if url and not texts["FRESH_WEBHOOK_SECRET"]:
        raise ConfigError(
            "FRESH_WEBHOOK_SECRET must be set (a non-empty string) when FRESH_WEBHOOK_URL "
            "is: every delivery is signed with it."
        )
    config = ChangeConfig(
        keep_items=flag(settings, "FRESH_KEEP_ITEMS"),
        keep_items_max_bytes=_integer(settings, "FRESH_KEEP_ITEMS_MAX_BYTES", low=1),
        item_key_field=key.strip() if isinstance(key, str) else None,
        diff_min_chars=_integer(settings, "FRESH_DIFF_MIN_CHARS", low=1),
        gone_items=flag(settings, "FRESH_GONE_ITEMS"),
        webhook_url=url,
        webhook_secret=texts["FRESH_WEBHOOK_SECRET"],
        webhook_outbox=_spider_path(settings, "FRESH_WEBHOOK_OUTBOX"),
        webhook_backoff_secs=_number(
            settings, "FRESH_WEBHOOK_BACKOFF_SECS", low=0.0, low_open=True
        ),
        webhook_max_backoff_secs=_number(
            settings, "FRESH_WEBHOOK_MAX_BACKOFF_SECS", low=0.0, low_open=True
        ),
        webhook_timeout_secs=_number(
            settings, "FRESH_WEBHOOK_TIMEOUT_SECS", low=0.0, low_open=True
        ),
        webhook_close_wait_secs=_number(settings, "FRESH_WEBHOOK_CLOSE_WAIT_SECS", low=0.0),
    )
    if config.webhook_max_backoff_secs < config.webhook_backoff_secs:
        raise ConfigError(
            f"FRESH_WEBHOOK_MAX_BACKOFF_SECS ({config.webhook_max_backoff_secs!r}) must "
            f"not be lower than FRESH_WEBHOOK_BACKOFF_SECS ({config.webhook_backoff_secs!r})."
        )
    return config
