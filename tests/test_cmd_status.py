"""``scrapy-fresh status`` on a known store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scrapy_fresh.commands import main
from scrapy_fresh.keys import url_key
from scrapy_fresh.store.base import PageState, Provider, SiteState, Status
from scrapy_fresh.store.sqlite import SQLiteStore

NOW = 2_000_000_000.0


def _page(
    url: str,
    status: Status,
    provider: Provider,
    next_due: float,
    *,
    visited: bool = True,
    p_c: float = 0.0,
    refresh_secs: float = 3600.0,
    visits: int = 0,
    changes: int = 0,
) -> PageState:
    host = url.split("/")[2]
    return PageState(
        key=url_key(url),
        url=url,
        host=host,
        status=status,
        provider=provider,
        first_seen=NOW - 86400,
        last_crawl=NOW - 100 if visited else None,
        next_due=next_due,
        p_c=p_c,
        refresh_secs=refresh_secs,
        visits=visits,
        changes=changes,
        in_flight_since=NOW - 5 if status is Status.IN_FLIGHT else None,
    )


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "state.sqlite"
    store = SQLiteStore(path)
    store.put_many(
        [
            _page(
                "http://a.test/1",
                Status.IDLE,
                Provider.NORMAL,
                NOW - 10,
                p_c=0.05,
                refresh_secs=300,
                visits=4,
                changes=0,
            ),
            _page(
                "http://a.test/2",
                Status.IDLE,
                Provider.SMART,
                NOW + 1800,
                p_c=0.5,
                refresh_secs=7200,
                visits=4,
                changes=2,
            ),
            _page(
                "http://a.test/3",
                Status.IDLE,
                Provider.SUPER,
                NOW + 7200,
                p_c=0.95,
                refresh_secs=3 * 86400,
                visits=2,
                changes=2,
            ),
            _page("http://a.test/4", Status.QUEUED, Provider.NORMAL, NOW - 1, visited=False),
            _page(
                "http://b.test/1",
                Status.IN_FLIGHT,
                Provider.SMART,
                NOW - 50,
                p_c=0.2,
                refresh_secs=20 * 86400,
                visits=1,
            ),
            _page("http://b.test/2", Status.GONE, Provider.NORMAL, NOW + 10 * 86400, visits=3),
        ]
    )
    store.put_site(SiteState("a.test", visits=10, changes=4, p_c=0.4, refresh_secs=5000.0))
    store.close()
    return path


def _status_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["status", "--json", "--now", str(NOW), *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_status_json_counts_a_known_store(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _status_json(capsys, "--sqlite-path", str(store_path))
    assert data["pages"] == 6
    assert data["hosts"] == 2
    assert data["status"] == {"queued": 1, "in_flight": 1, "idle": 3, "gone": 1}
    assert data["provider"] == {
        "normal": {"idle": 1, "queued": 1, "gone": 1},
        "smart": {"idle": 1, "in_flight": 1},
        "super": {"idle": 1},
    }
    assert data["due"] == {
        "now": 2,
        "next_hour": 1,
        "later": 2,
        "in_flight": 1,
    }  # the gone page is checked again later
    # Visited pages that are not gone: p_c 0.05, 0.5, 0.95, 0.2.
    assert data["p_c"]["counts"] == [1, 0, 1, 0, 0, 1, 0, 0, 0, 1]
    assert data["p_c"]["median"] == 0.5
    assert data["refresh_secs"]["bins"] == {
        "<10m": 1,
        "10m-1h": 0,
        "1h-6h": 1,
        "6h-1d": 0,
        "1d-7d": 1,
        ">=7d": 1,
    }
    assert data["refresh_secs"]["min"] == 300
    assert data["refresh_secs"]["max"] == 20 * 86400
    hosts = {h["host"]: h for h in data["top_hosts"]}
    assert [h["host"] for h in data["top_hosts"]] == ["a.test", "b.test"]
    assert hosts["a.test"] == {
        "host": "a.test",
        "pages": 4,
        "visits": 10,
        "changes": 4,
        "p_c": 0.4,
        "refresh_secs": 5000.0,
    }
    assert hosts["b.test"]["p_c"] is None


def test_status_due_counts_move_with_now(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["status", "--json", "--now", str(NOW + 4000), "--sqlite-path", str(store_path)]) == 0
    )
    assert json.loads(capsys.readouterr().out)["due"]["now"] == 3


def test_status_text(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--now", str(NOW), "--sqlite-path", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert "Status: queued 1, in_flight 1, idle 3, gone 1" in out
    assert "Due: now 2, next hour 1, later 2" in out


def test_status_without_a_store_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nothing.sqlite"
    assert main(["status", "--sqlite-path", str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err
    assert "--sqlite-path" in err
    assert not missing.exists()  # reading never creates a store


def test_status_reads_the_project_settings(
    store_path: Path, tmp_path: Path, python_env: dict[str, str]
) -> None:
    project = tmp_path / "proj"
    (project / "proj" / "spiders").mkdir(parents=True)
    (project / "scrapy.cfg").write_text("[settings]\ndefault = proj.settings\n")
    (project / "proj" / "__init__.py").write_text("")
    (project / "proj" / "spiders" / "__init__.py").write_text("")
    (project / "proj" / "settings.py").write_text(
        f'SPIDER_MODULES = ["proj.spiders"]\nFRESH_SQLITE_PATH = {str(store_path)!r}\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "scrapy_fresh.commands", "status", "--json", "--now", str(NOW)],
        cwd=project,
        env=python_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["pages"] == 6


def test_status_reports_trust_per_host_and_signal(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scrapy_fresh.policy.trust import TrustRecord
    from scrapy_fresh.providers.ledger import TRUST_NAMESPACE, HostTrust, trust_key

    store = SQLiteStore(store_path)
    kind = "sitemap"
    for host, record in [
        ("a.test", TrustRecord(confirmed=8.0, refuted=1.0)),
        ("b.test", TrustRecord(confirmed=0.0, refuted=6.0, demoted=True)),
    ]:
        store.put_meta(
            TRUST_NAMESPACE, trust_key(host, kind), HostTrust(host, kind, record).to_meta()
        )
    store.close()
    data = _status_json(capsys, "--sqlite-path", str(store_path))
    assert [(t["host"], t["demoted"]) for t in data["trust"]] == [
        ("b.test", True),
        ("a.test", False),
    ]
    assert data["trust"][1]["trust"] == pytest.approx(0.833, abs=1e-3)
    assert data["hosts"] == 2  # trust records are not hosts of pages
    assert main(["status", "--now", str(NOW), "--sqlite-path", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert "b.test" in out
    assert "DEMOTED" in out


def test_status_of_a_redis_store_says_what_the_same_sqlite_store_says(
    store_path: Path, capsys: pytest.CaptureFixture[str], client: object, prefix: str
) -> None:
    """The same records, sites, trust and blocked hosts in SQLite and in Redis: status
    (``--redis-key``, and the project's FRESH_STORE = 'redis') reports the same."""
    from scrapy_fresh.distributed.store import RedisStore
    from scrapy_fresh.policy.trust import Evidence
    from scrapy_fresh.providers.ledger import TrustLedger
    from tests.redis_helpers import SHARED_URL

    redis_store = RedisStore(client, prefix)  # type: ignore[arg-type]
    with SQLiteStore(store_path) as sqlite_store:
        for store in (sqlite_store, redis_store):
            TrustLedger(store).observe("b.test", "feed", Evidence.REFUTED)
            store.block_host("b.test", NOW - 60)
        redis_store.put_many(sqlite_store.iterate())
        for site in sqlite_store.sites():
            redis_store.put_site(site)
    from_sqlite = _status_json(capsys, "--sqlite-path", str(store_path))
    url = ["-s", f"REDIS_URL={SHARED_URL}"]
    from_redis = _status_json(capsys, "--redis-key", prefix, *url)
    project = _status_json(
        capsys, "-s", "FRESH_STORE=redis", "-s", f"FRESH_REDIS_KEY={prefix}", *url
    )
    assert from_redis.pop("store").startswith(f"{prefix} (")
    assert project.pop("store").startswith(f"{prefix} (")
    from_sqlite.pop("store")
    assert from_redis == from_sqlite == project
    assert from_redis["blocked"] == {"b.test": NOW - 60}
    assert [t["host"] for t in from_redis["trust"]] == ["b.test"]
    assert from_redis["pages"] == 6
