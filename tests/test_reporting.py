"""The report's data (:func:`scrapy_fresh.reporting.build_report`) from real store records."""

from __future__ import annotations

from pathlib import Path

from scrapy_fresh.policy.trust import Evidence
from scrapy_fresh.providers.ledger import QuietClaim, TrustLedger, iter_trust
from scrapy_fresh.reporting import build_report
from scrapy_fresh.store.base import SiteState
from scrapy_fresh.store.sqlite import SQLiteStore


def test_site_list_holds_hosts_not_the_trust_ledger(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "fresh.db"))
    try:
        store.put_site(SiteState("example.com", p_c=0.25, visits=8, changes=2))
        ledger = TrustLedger(store)
        ledger.observe("example.com", "sitemap", Evidence.CONFIRMED)
        ledger.put_quiet_claim("ab12", QuietClaim(claimed_at=1.0, own_due=2.0, until=3.0))
        sites = list(store.sites())
        assert len(list(iter_trust(store))) == 1
    finally:
        store.close()
    assert len(sites) == 1  # the ledger's records are meta records, not sites
    report = build_report([], [], sites)
    assert [s["host"] for s in report["sites"]] == ["example.com"]
    assert report["sites"][0]["visits"] == 8
