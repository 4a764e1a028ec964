"""The contract every URL state store passes (docs/topics/stores, "Writing your own store").

Subclass :class:`StoreContract` in a ``test_store_<backend>.py`` module and give the
class a ``make_store`` fixture: a callable that returns a new, empty store each time it
is called (and closes what it made at teardown)::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def make_store(self, tmp_path):
            stores = []

            def make():
                stores.append(MyStore(...))
                return stores[-1]

            yield make
            for store in stores:
                store.close()

The tests only use the :class:`~scrapy_fresh.store.base.StateStore` protocol, so they
run unchanged on every backend. :meth:`StoreContract.test_matches_reference_model`
runs random operation sequences on a new store and on
:class:`~scrapy_fresh.store.memory.MemoryStore` and checks that they agree.
"""

from __future__ import annotations

import math
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.keys import url_key
from scrapy_fresh.store.base import (
    MAX_FUTURE_UPDATES,
    MAX_PAST_UPDATES,
    PageState,
    Provider,
    SiteState,
    StateStore,
    Status,
)
from scrapy_fresh.store.memory import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Callable

    StoreFactory = Callable[[], StateStore]

__all__ = ["StoreContract", "page"]


def page(n: int | str, **fields: Any) -> PageState:
    """Return a record for ``https://example.com/page/<n>`` with ``fields`` set."""
    url = f"https://example.com/page/{n}"
    fields.setdefault("host", "example.com")
    return PageState(key=url_key(url), url=url, **fields)


def full_page(n: int | str = "full") -> PageState:
    """A record in which every field has a non-default value."""
    url = f"https://例え.テスト/パス/{n}?q=ü&emoji=😀#frag"
    return PageState(
        key=url_key(url),
        url=url,
        host="例え.テスト",
        status=Status.IDLE,
        provider=Provider.SUPER,
        first_seen=1_700_000_000.123456,
        last_crawl=1_700_086_400.5,
        next_due=1_700_172_800.25,
        in_flight_since=None,
        refresh_secs=78.57142857142857,
        p_l=0.25,
        p_g=0.75,
        visits=7,
        changes=3,
        p_c=3 / 7,
        change_bucket=255,
        change_rate=1.5e-6,
        errors=2,
        fingerprint=(1 << 64) - 1,
        etag='W/"ü-5f3c"',
        last_modified="Wed, 21 Oct 2015 07:28:00 GMT",
        content_length=123_456,
        access_count=42,
        past_updates=[1_699_000_000.5, 1_698_000_000.0],
        future_updates=[(1_700_500_000.0, 0.9), (1_700_400_000.0, 0.5)],
        request={
            "method": "GET",
            "callback": "parse_item",
            "meta": {"depth": 2, "tags": ["a", "ü"], "ratio": 0.5, "flag": True, "none": None},
            "priority": -3,
        },
        field_hashes=[{"name": 1, "price": (1 << 64) - 1, "stock": 1 << 63}, {}, {"ü": 0}],
        content_hash=(1 << 63) + 5,
    )


class StoreContract:
    """Tests that every :class:`~scrapy_fresh.store.base.StateStore` backend passes."""

    @pytest.fixture
    def make_store(self) -> StoreFactory:
        raise NotImplementedError("A StoreContract subclass must define a make_store fixture.")

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> StateStore:
        return make_store()

    # -- protocol and empty store ------------------------------------------------------

    def test_implements_protocol(self, store: StateStore) -> None:
        assert isinstance(store, StateStore)

    def test_empty_store(self, store: StateStore) -> None:
        key = page(0).key
        assert len(store) == 0
        assert store.get(key) is None
        assert store.get_many([key]) == {}
        assert store.get_many([]) == {}
        assert store.due(1e12, 10) == []
        assert store.next_due_time() is None
        assert store.counts() == dict.fromkeys(Status, 0)
        assert list(store.iterate()) == []
        assert list(store.sites()) == []
        assert store.get_site("example.com") is None
        assert store.release_in_flight() == 0
        assert store.delete(key) is False
        store.mark_in_flight([key], 1.0)  # unknown keys are ignored
        store.put_many([])
        assert store.add_many([]) == []
        store.flush()
        assert len(store) == 0

    # -- round trips ---------------------------------------------------------------------

    def test_round_trip_every_field(self, store: StateStore) -> None:
        state = full_page()
        store.put(state)
        got = store.get(state.key)
        assert got is not None
        assert got.doc_id > 0
        state.doc_id = got.doc_id
        assert got == state
        assert isinstance(got.status, Status)
        assert isinstance(got.provider, Provider)
        assert got.future_updates == [(1_700_400_000.0, 0.5), (1_700_500_000.0, 0.9)]

    def test_round_trip_defaults(self, store: StateStore) -> None:
        state = page(1)
        store.put(state)
        got = store.get(state.key)
        assert got is not None
        assert got == PageState(
            key=state.key, url=state.url, host="example.com", doc_id=got.doc_id
        )

    @pytest.mark.parametrize(
        "fields",
        [
            {"last_crawl": 0.0, "in_flight_since": 0.0, "change_rate": 0.0},
            {"fingerprint": 0, "content_length": 0, "etag": "", "last_modified": ""},
            {"first_seen": 0.0, "next_due": 0.0, "refresh_secs": 0.0, "p_l": 0.0, "p_g": 0.0},
            {"next_due": math.inf, "first_seen": -1.5, "refresh_secs": 1e-300},
            {"host": "", "request": {}, "past_updates": [], "future_updates": []},
            {"content_hash": 0, "field_hashes": [{}]},
        ],
        ids=[
            "zero-times",
            "zero-validators",
            "zero-floats",
            "extreme-floats",
            "empty",
            "zero-hashes",
        ],
    )
    def test_none_and_zero_are_different(self, store: StateStore, fields: dict[str, Any]) -> None:
        state = page(2, **fields)
        store.put(state)
        got = store.get(state.key)
        assert got is not None
        for name, value in fields.items():
            assert getattr(got, name) == value, name
            assert type(getattr(got, name)) is type(value), name
        nones = page(3)
        store.put(nones)
        got = store.get(nones.key)
        assert got is not None
        assert got.last_crawl is None
        assert got.fingerprint is None
        assert got.etag is None
        assert got.change_rate is None
        assert got.content_hash is None
        assert got.field_hashes == []

    @pytest.mark.parametrize(
        "fingerprint", [0, 1, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, (1 << 64) - 1]
    )
    def test_fingerprints_are_unsigned_64_bit(self, store: StateStore, fingerprint: int) -> None:
        state = page(4, fingerprint=fingerprint)
        store.put(state)
        got = store.get(state.key)
        assert got is not None
        assert got.fingerprint == fingerprint
        assert store.get_many([state.key])[state.key].fingerprint == fingerprint
        assert next(iter(store.iterate())).fingerprint == fingerprint

    @pytest.mark.parametrize("value", [0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1])
    def test_verdict_hashes_are_unsigned_64_bit_and_copied(
        self, store: StateStore, value: int
    ) -> None:
        state = page(4, content_hash=value, field_hashes=[{"price": value, "stock": 1}, {}])
        store.put(state)
        state.field_hashes[0]["price"] = 7  # the store kept its own copy
        got = store.get(state.key)
        assert got is not None
        assert (got.content_hash, got.field_hashes) == (value, [{"price": value, "stock": 1}, {}])
        got.field_hashes[0]["stock"] = 2
        got.field_hashes.append({"x": 3})
        for read in (store.get(state.key), store.get_many([state.key])[state.key],
                     next(iter(store.iterate()))):  # fmt: skip
            assert read is not None
            assert (read.content_hash, read.field_hashes) == (
                value, [{"price": value, "stock": 1}, {}]
            )  # fmt: skip

    @pytest.mark.parametrize("kept", [None, b"", bytes(range(256)) * 40])
    def test_kept_items_come_back_byte_for_byte(
        self, store: StateStore, kept: bytes | None
    ) -> None:
        state = page(5, kept_items=kept, visits=1, last_crawl=10.0)
        store.put(state)
        for read in (store.get(state.key), store.get_many([state.key])[state.key],
                     next(iter(store.iterate()))):  # fmt: skip
            assert read is not None
            assert read.kept_items == kept
        assert PageState.from_dict(state.to_dict()).kept_items == kept

    def test_kept_items_of_another_type_are_refused(self, store: StateStore) -> None:
        state = page(6)
        state.kept_items = "text"  # type: ignore[assignment]
        with pytest.raises(TypeError, match="kept_items"):
            store.put(state)

    @pytest.mark.parametrize(
        "url",
        [
            "https://例え.テスト/パス?q=ü",
            "https://example.com/\U0001f600/x\x00y",
            "https://example.com/" + "a" * 5000,
            "http://[::1]:8080/ok",
        ],
        ids=["idn", "astral-and-nul", "long", "ipv6"],
    )
    def test_unicode_and_long_urls(self, store: StateStore, url: str) -> None:
        state = PageState(key=url_key(url), url=url, host=url.split("/")[2])
        store.put(state)
        got = store.get(state.key)
        assert got is not None
        assert (got.url, got.host) == (state.url, state.host)

    def test_lists_are_bounded(self, store: StateStore) -> None:
        state = page(5)
        # Assigned after construction, so PageState did not bound them.
        state.past_updates = [float(t) for t in range(100, 0, -1)]
        state.future_updates = [(float(t), 0.5) for t in range(100, 0, -1)]
        store.put(state)
        got = store.get(state.key)
        assert got is not None
        assert got.past_updates == [float(t) for t in range(100 - MAX_PAST_UPDATES + 1, 101)]
        assert got.future_updates == [(float(t), 0.5) for t in range(1, MAX_FUTURE_UPDATES + 1)]

    def test_lists_are_normalised(self, store: StateStore) -> None:
        state = page(5)
        state.past_updates = [3, 1, 2]  # type: ignore[list-item]  # ints, unsorted
        state.future_updates = [[9, 1], (4, 0)]  # type: ignore[list-item]
        store.put(state)
        got = store.get(state.key)
        assert got is not None
        assert got.past_updates == [1.0, 2.0, 3.0]
        assert all(type(t) is float for t in got.past_updates)
        assert got.future_updates == [(4.0, 0.0), (9.0, 1.0)]
        assert all(type(u) is tuple for u in got.future_updates)
        assert replace(got) == got  # what PageState() itself would build

    def test_request_is_json(self, store: StateStore) -> None:
        state = page(6, request={"meta": {"pair": (1, 2), "big": 1 << 70, "f": 1.0, "i": 1}})
        store.put(state)
        got = store.get(state.key)
        assert got is not None
        assert got.request == {"meta": {"pair": [1, 2], "big": 1 << 70, "f": 1.0, "i": 1}}
        assert type(got.request["meta"]["f"]) is float
        assert type(got.request["meta"]["i"]) is int

    # -- bad input ---------------------------------------------------------------------------

    @pytest.mark.parametrize("key", ["", "abc", "A" * 40, "g" * 40, "0" * 41, " " + "0" * 39])
    def test_bad_keys_are_rejected(self, store: StateStore, key: str) -> None:
        with pytest.raises(ValueError, match="40-character lower-case hex"):
            store.get(key)
        with pytest.raises(ValueError, match="40-character lower-case hex"):
            store.put(PageState(key=key, url="https://example.com/"))
        with pytest.raises(ValueError, match="40-character lower-case hex"):
            store.delete(key)
        with pytest.raises(ValueError, match="40-character lower-case hex"):
            store.mark_in_flight([key], 1.0)
        assert len(store) == 0

    @pytest.mark.parametrize(
        ("name", "value", "error"),
        [
            ("next_due", math.nan, ValueError),
            ("change_rate", math.nan, ValueError),
            ("fingerprint", -1, ValueError),
            ("fingerprint", 1 << 64, ValueError),
            ("content_hash", -1, ValueError),
            ("content_hash", 1 << 64, ValueError),
            ("field_hashes", [{"price": 1 << 64}], TypeError),
            ("field_hashes", [{"price": "1"}], TypeError),
            ("field_hashes", {"price": 1}, TypeError),
            ("change_bucket", 256, ValueError),
            ("status", "bogus", ValueError),
            ("provider", "bogus", ValueError),
            ("visits", 1 << 63, ValueError),
            ("doc_id", -1, ValueError),
            ("request", {"body": b"bytes"}, TypeError),
            ("request", ["not", "a", "dict"], TypeError),
            ("url", None, TypeError),
        ],
    )
    def test_bad_records_change_nothing(
        self, store: StateStore, name: str, value: Any, error: type[Exception]
    ) -> None:
        good = page(7)
        store.put(good)
        bad = page(8)
        setattr(bad, name, value)  # after construction, as a buggy caller would
        with pytest.raises(error):
            store.put(bad)
        with pytest.raises(error):
            store.put_many([page(9), bad, page(10)])
        with pytest.raises(error):
            store.add_many([page(9), bad])
        assert [s.key for s in store.iterate()] == [good.key]
        assert store.counts()[Status.QUEUED] == 1

    # -- doc ids, upsert, add_many ---------------------------------------------------------

    def test_put_assigns_increasing_doc_ids(self, store: StateStore) -> None:
        states = [page(n) for n in range(5)]
        store.put_many(states[:3])
        store.put(states[3])
        store.put_many(states[4:])
        doc_ids = [store.get(s.key).doc_id for s in states]  # type: ignore[union-attr]
        assert doc_ids == sorted(doc_ids)
        assert len(set(doc_ids)) == 5
        assert doc_ids[0] >= 1
        assert all(s.doc_id == 0 for s in states)  # the records passed in are unchanged

    def test_upsert_replaces_fields_and_keeps_doc_id(self, store: StateStore) -> None:
        store.put(page(1, next_due=5.0, etag="a"))
        doc_id = store.get(page(1).key).doc_id  # type: ignore[union-attr]
        store.put(page(1, next_due=9.0, etag=None, visits=1, status=Status.IDLE))
        got = store.get(page(1).key)
        assert got is not None
        assert (got.doc_id, got.next_due, got.etag, got.visits) == (doc_id, 9.0, None, 1)
        store.put(page(1, doc_id=doc_id + 100))  # an existing record keeps its doc_id
        assert store.get(page(1).key).doc_id == doc_id  # type: ignore[union-attr]
        assert len(store) == 1

    def test_doc_ids_are_not_reused(self, store: StateStore) -> None:
        store.put_many([page(1), page(2)])
        last = store.get(page(2).key).doc_id  # type: ignore[union-attr]
        assert store.delete(page(2).key)
        store.put(page(3))
        assert store.get(page(3).key).doc_id > last  # type: ignore[union-attr]

    def test_explicit_doc_ids(self, store: StateStore) -> None:
        store.put(page(1, doc_id=10))
        assert store.get(page(1).key).doc_id == 10  # type: ignore[union-attr]
        store.put(page(2))
        assert store.get(page(2).key).doc_id == 11  # type: ignore[union-attr]
        with pytest.raises(StoreError, match="doc_id"):
            store.put_many([page(3), page(4, doc_id=10)])
        with pytest.raises(StoreError, match="doc_id"):
            store.add_many([page(3), page(4, doc_id=11)])
        assert store.get(page(3).key) is None  # the whole batch was refused
        assert len(store) == 2

    def test_a_write_never_moves_a_record_back(self, store: StateStore) -> None:
        """A copy read before a visit was committed is refused, the rest of the call is
        written, and the refusal is counted."""
        visited = page(1, status=Status.IDLE, visits=2, last_crawl=50.0, fingerprint=7, etag='"v"')
        store.put(visited)
        refused = store.regressions_refused  # type: ignore[attr-defined]
        older = [
            page(1, status=Status.IN_FLIGHT),  # the blank record of a new URL
            page(1, status=Status.IDLE, visits=1, last_crawl=60.0),  # fewer visits
            page(1, status=Status.IDLE, visits=2, last_crawl=40.0),  # an older visit
        ]
        for state in older:
            store.put_many([state, page(2, next_due=len(older))])
        got = store.get(page(1).key)
        assert got is not None
        assert (got.visits, got.last_crawl, got.fingerprint, got.etag) == (2, 50.0, 7, '"v"')
        assert store.regressions_refused == refused + 3  # type: ignore[attr-defined]
        assert store.get(page(2).key) is not None  # the rest of the call was written
        store.put(page(1, status=Status.IDLE, visits=2, last_crawl=50.0, next_due=99.0))
        store.put(page(1, status=Status.IDLE, visits=3, last_crawl=70.0, fingerprint=8))
        got = store.get(page(1).key)
        assert got is not None
        assert (got.visits, got.last_crawl, got.fingerprint) == (3, 70.0, 8)
        assert store.regressions_refused == refused + 3  # type: ignore[attr-defined]

    def test_a_write_in_one_call_is_checked_against_the_one_before(
        self, store: StateStore
    ) -> None:
        new, visited = page(1), page(1, status=Status.IDLE, last_crawl=5.0)
        store.put_many([visited, new])
        got = store.get(page(1).key)
        assert got is not None
        assert got.last_crawl == 5.0

    def test_add_many_inserts_only_absent_keys(self, store: StateStore) -> None:
        store.put(page(1, next_due=5.0, visits=3, status=Status.IDLE))
        added = store.add_many([page(2), page(1, next_due=0.0), page(3), page(2, next_due=7.0)])
        assert added == [page(2).key, page(3).key]
        one = store.get(page(1).key)
        assert one is not None
        assert (one.next_due, one.visits, one.status) == (5.0, 3, Status.IDLE)
        two = store.get(page(2).key)
        assert two is not None
        assert two.next_due == 0.0  # the first of the duplicates wins
        assert len(store) == 3
        assert store.add_many([page(1), page(2)]) == []

    def test_big_batches(self, store: StateStore) -> None:
        states = [page(n, next_due=float(n % 97)) for n in range(5000)]
        store.put_many(iter(states))  # any iterable
        assert len(store) == 5000
        added = store.add_many(page(n) for n in range(4000, 6000))
        assert len(added) == 1000
        got = store.get_many(s.key for s in states[::7])
        assert len(got) == len(states[::7])
        store.mark_in_flight((s.key for s in states[:3000]), 1.0)
        assert store.counts()[Status.IN_FLIGHT] == 3000
        assert store.release_in_flight() == 3000

    def test_get_many(self, store: StateStore) -> None:
        store.put_many([page(1), page(2)])
        got = store.get_many([page(1).key, page(3).key, page(1).key, page(2).key])
        assert set(got) == {page(1).key, page(2).key}
        assert got[page(2).key].url == page(2).url

    # -- copies ---------------------------------------------------------------------------

    def test_records_are_copies(self, store: StateStore) -> None:
        state = full_page()
        store.put(state)
        state.visits = 99
        state.request["meta"]["tags"].append("changed")
        state.past_updates.append(2e9)
        got = store.get(state.key)
        assert got is not None
        assert got.visits == 7
        assert got.request["meta"]["tags"] == ["a", "ü"]
        got.visits = 100
        got.request["meta"]["depth"] = 100
        got.past_updates.clear()
        got.future_updates.clear()
        for again in (
            store.get(state.key),
            store.get_many([state.key])[state.key],
            store.due(2e9, 1)[0],
            next(iter(store.iterate())),
        ):
            assert again is not None
            assert again.visits == 7
            assert again.request["meta"]["depth"] == 2
            assert len(again.past_updates) == 2
            assert len(again.future_updates) == 2
            again.request["meta"]["depth"] = 0

    # -- due --------------------------------------------------------------------------------

    def test_due_order_and_limit(self, store: StateStore) -> None:
        states = [page(n, next_due=float(n % 5)) for n in range(20)]
        store.put_many(states)
        expected = sorted(states, key=lambda s: (s.next_due, s.key))
        assert [s.key for s in store.due(10.0, 100)] == [s.key for s in expected]
        assert [s.key for s in store.due(10.0, 7)] == [s.key for s in expected[:7]]
        assert [s.key for s in store.due(2.0, 100)] == [
            s.key for s in expected if s.next_due <= 2.0
        ]
        assert store.due(10.0, 0) == []
        assert store.due(-1.0, 10) == []
        with pytest.raises(ValueError, match="limit"):
            store.due(10.0, -1)

    def test_due_ties_are_ordered_by_key(self, store: StateStore) -> None:
        states = [page(n, next_due=1.0) for n in range(50)]
        store.put_many(states)
        keys = sorted(s.key for s in states)
        assert [s.key for s in store.due(1.0, 10)] == keys[:10]
        store.mark_in_flight(keys[:10], 2.0)
        assert [s.key for s in store.due(1.0, 10)] == keys[10:20]

    def test_due_includes_queued_idle_and_gone_not_in_flight(self, store: StateStore) -> None:
        store.put_many(
            [
                page("queued", next_due=1.0),
                page("idle", next_due=2.0, status=Status.IDLE, visits=1),
                page("gone", next_due=0.5, status=Status.GONE, visits=1),
                page("flying", next_due=0.0, status=Status.IN_FLIGHT, in_flight_since=0.0),
                page("future", next_due=11.0),
                page("now", next_due=10.0, status=Status.IDLE, visits=2),
            ]
        )
        due = [s.url.rsplit("/", 1)[1] for s in store.due(10.0, 10)]
        assert due == ["gone", "queued", "idle", "now"]  # a gone page is checked again
        assert store.next_due_time() == 0.5
        store.put(
            page("gone", next_due=0.5, status=Status.IN_FLIGHT, visits=1, in_flight_since=9.0)
        )
        store.put(page("queued", next_due=1.0, status=Status.IN_FLIGHT, in_flight_since=9.0))
        store.put(
            page("idle", next_due=2.0, status=Status.IN_FLIGHT, visits=1, in_flight_since=9.0)
        )
        assert store.next_due_time() == 10.0
        store.delete(page("now").key)
        assert store.next_due_time() == 11.0
        store.delete(page("future").key)
        assert store.next_due_time() is None
        assert store.due(1e12, 10) == []

    def test_due_follows_updates(self, store: StateStore) -> None:
        store.put_many([page(n, next_due=float(n)) for n in range(10)])
        store.put(page(9, next_due=-1.0))
        store.put(page(0, next_due=100.0))
        store.put(page(0, next_due=50.0))
        assert [s.next_due for s in store.due(1000.0, 3)] == [-1.0, 1.0, 2.0]
        assert [s.next_due for s in store.due(1000.0, 100)][-1] == 50.0
        assert len(store.due(1000.0, 100)) == 10

    # -- in flight ------------------------------------------------------------------------

    def test_mark_and_release_in_flight(self, store: StateStore) -> None:
        store.put_many(
            [
                page(1, next_due=1.0),
                page(2, next_due=1.0, status=Status.IDLE, visits=4),
                page(3, next_due=1.0),
            ]
        )
        store.mark_in_flight([page(1).key, page(2).key, page(99).key], 100.0)
        one = store.get(page(1).key)
        assert one is not None
        assert (one.status, one.in_flight_since) == (Status.IN_FLIGHT, 100.0)
        assert [s.key for s in store.due(10.0, 10)] == [page(3).key]
        assert store.counts()[Status.IN_FLIGHT] == 2
        store.mark_in_flight([page(3).key], 200.0)
        assert store.release_in_flight(older_than=100.0) == 0  # strictly before
        assert store.release_in_flight(older_than=150.0) == 2
        one, two, three = (store.get(page(n).key) for n in (1, 2, 3))
        assert one is not None
        assert two is not None
        assert three is not None
        assert (one.status, one.in_flight_since) == (Status.QUEUED, None)
        assert (two.status, two.in_flight_since) == (Status.IDLE, None)
        assert three.status == Status.IN_FLIGHT
        assert store.release_in_flight() == 1
        assert store.counts()[Status.IN_FLIGHT] == 0
        assert len(store.due(10.0, 10)) == 3

    def test_release_in_flight_without_lease_time(self, store: StateStore) -> None:
        store.put(page(1, status=Status.IN_FLIGHT, visits=1))
        assert store.release_in_flight(older_than=0.0) == 1
        assert store.get(page(1).key).status == Status.IDLE  # type: ignore[union-attr]

    def test_nan_times_are_rejected(self, store: StateStore) -> None:
        store.put(page(1, status=Status.IN_FLIGHT, in_flight_since=5.0))
        with pytest.raises(ValueError, match="NaN"):
            store.mark_in_flight([page(1).key], math.nan)
        with pytest.raises(ValueError, match="NaN"):
            store.release_in_flight(older_than=math.nan)
        assert store.get(page(1).key).in_flight_since == 5.0  # type: ignore[union-attr]

    def test_mark_in_flight_twice_keeps_counts(self, store: StateStore) -> None:
        store.put(page(1))
        store.mark_in_flight([page(1).key], 1.0)
        store.mark_in_flight([page(1).key, page(1).key], 2.0)
        assert store.get(page(1).key).in_flight_since == 2.0  # type: ignore[union-attr]
        assert store.counts() == {**dict.fromkeys(Status, 0), Status.IN_FLIGHT: 1}

    # -- counts, len, iterate, delete ------------------------------------------------------

    def test_counts_and_len(self, store: StateStore) -> None:
        store.put_many(
            [page(n, status=Status.IDLE, visits=1) for n in range(3)]
            + [page(n) for n in range(3, 5)]
            + [page(5, status=Status.GONE)]
        )
        assert store.counts() == {
            Status.QUEUED: 2,
            Status.IDLE: 3,
            Status.IN_FLIGHT: 0,
            Status.GONE: 1,
        }
        store.put(page(0, status=Status.GONE, visits=1))  # idle -> gone
        store.delete(page(3).key)
        assert store.counts() == {
            Status.QUEUED: 1,
            Status.IDLE: 2,
            Status.IN_FLIGHT: 0,
            Status.GONE: 2,
        }
        assert len(store) == 5

    def test_iterate_in_batches(self, store: StateStore) -> None:
        states = [page(n) for n in range(2345)]
        store.put_many(states)
        for batch_size in (1000, 1, 2345, 5000):
            keys = [s.key for s in store.iterate(batch_size=batch_size)]
            assert len(keys) == len(states)
            assert set(keys) == {s.key for s in states}
        with pytest.raises(ValueError, match="batch_size"):
            list(store.iterate(batch_size=0))

    def test_iterate_while_writing(self, store: StateStore) -> None:
        states = [page(n) for n in range(300)]
        store.put_many(states)
        seen = []
        for state in store.iterate(batch_size=50):
            seen.append(state.key)
            state.visits += 1
            store.put(state)  # updating records does not make them come back
        assert sorted(seen) == sorted(s.key for s in states)
        assert all(s.visits == 1 for s in store.iterate())

    def test_delete(self, store: StateStore) -> None:
        store.put_many([page(1, next_due=1.0), page(2, next_due=2.0)])
        assert store.delete(page(1).key) is True
        assert store.delete(page(1).key) is False
        assert store.get(page(1).key) is None
        assert [s.key for s in store.due(10.0, 10)] == [page(2).key]
        assert [s.key for s in store.iterate()] == [page(2).key]
        assert len(store) == 1
        store.put(page(1))
        assert len(store) == 2

    # -- operator's controls ------------------------------------------------------------

    def test_make_due_moves_queued_and_idle_records_only(self, store: StateStore) -> None:
        store.put_many(
            [
                page("later", next_due=500.0, status=Status.IDLE, visits=2, last_crawl=5.0),
                page("new", next_due=300.0),
                page("soon", next_due=50.0),
                page("gone", next_due=900.0, status=Status.GONE, visits=1),
                page("flying", next_due=900.0, status=Status.IN_FLIGHT, in_flight_since=1.0),
            ]
        )
        keys = [page(n).key for n in ("new", "later", "soon", "gone", "flying", "absent")]
        assert store.make_due([*keys, page("new").key], 100.0) == keys[:2]
        later = store.get(page("later").key)
        assert later is not None
        assert (later.next_due, later.visits, later.last_crawl) == (100.0, 2, 5.0)
        assert later.status is Status.IDLE
        due = store.due(100.0, 10)
        assert [s.next_due for s in due] == [50.0, 100.0, 100.0]  # the index follows
        assert {s.key for s in due} == {page(n).key for n in ("soon", "later", "new")}
        assert store.next_due_time() == 50.0
        for name in ("gone", "flying"):
            record = store.get(page(name).key)
            assert record is not None
            assert record.next_due == 900.0
        assert store.make_due(keys, 100.0) == []  # due already: nothing to do
        assert store.count_due(100.0) == 3
        assert (store.count_due(49.0), store.count_due(50.0)) == (0, 1)
        assert store.count_due(1000.0) == 4  # the gone one too, not the one in flight

    def test_make_due_rejects_bad_keys_before_writing(self, store: StateStore) -> None:
        store.put(page(1, next_due=500.0))
        with pytest.raises(ValueError, match="key"):
            store.make_due([page(1).key, "nope"], 1.0)
        record = store.get(page(1).key)
        assert record is not None
        assert record.next_due == 500.0

    def test_block_and_unblock_hosts(self, store: StateStore) -> None:
        assert store.blocked_hosts() == {}
        assert store.block_host("a.example", 10.0) is True
        assert store.block_host("a.example", 20.0) is False  # blocked since 10
        assert store.block_host("b.example:8080", 30.0) is True
        assert store.blocked_hosts() == {"a.example": 10.0, "b.example:8080": 30.0}
        assert store.unblock_host("a.example") is True
        assert store.unblock_host("a.example") is False
        assert store.blocked_hosts() == {"b.example:8080": 30.0}
        assert len(store) == 0  # no page records made
        assert list(store.sites()) == []  # nor site records
        with pytest.raises(ValueError, match="host"):
            store.block_host("", 1.0)

    # -- sites --------------------------------------------------------------------------

    def test_sites(self, store: StateStore) -> None:
        site = SiteState(
            "例え.テスト", visits=10, changes=4, p_c=0.4, refresh_secs=None, updated_at=5.5,
            checks={"not_modified": 3, "lying": 1},
        )  # fmt: skip
        store.put_site(site)
        store.put_site(SiteState("example.com", refresh_secs=3600.0))
        got = store.get_site("例え.テスト")
        assert got == site
        assert got is not site
        assert got.refresh_secs is None
        site.visits = 11
        store.put_site(site)
        assert store.get_site("例え.テスト").visits == 11  # type: ignore[union-attr]
        assert sorted(s.host for s in store.sites()) == ["example.com", "例え.テスト"]
        assert store.get_site("other.com") is None
        assert len(store) == 0  # sites are not page records

    def test_site_bad_values(self, store: StateStore) -> None:
        with pytest.raises(ValueError, match="NaN"):
            store.put_site(SiteState("example.com", p_c=math.nan))
        with pytest.raises(TypeError, match="checks"):
            store.put_site(SiteState("example.com", checks={"ignored": 1.5}))  # type: ignore[dict-item]
        assert list(store.sites()) == []

    # -- meta records -------------------------------------------------------------------

    def test_meta_records(self, store: StateStore) -> None:
        value = {"observations": 3, "demoted": False, "until": None, "hours": [0, 23], "n": 0.5}
        store.put_meta("trust", "sitemap/例え.テスト", value)
        store.put_meta("trust", "feed/a.example", {"x": 1})
        store.put_meta("quiet", "sitemap/例え.テスト", {"other": "namespace"})
        got = store.get_meta("trust", "sitemap/例え.テスト")
        assert got == value
        assert got is not value
        got["n"] = 9  # copied out: the store keeps its value
        value["observations"] = 4  # copied in
        assert store.get_meta("trust", "sitemap/例え.テスト")["n"] == 0.5  # type: ignore[index]
        assert [k for k, _ in store.meta("trust")] == ["feed/a.example", "sitemap/例え.テスト"]
        assert list(store.meta("quiet")) == [("sitemap/例え.テスト", {"other": "namespace"})]
        assert list(store.meta("run")) == []
        assert store.get_meta("trust", "nothing") is None
        assert store.delete_meta("trust", "feed/a.example") is True
        assert store.delete_meta("trust", "feed/a.example") is False
        assert [k for k, _ in store.meta("trust")] == ["sitemap/例え.テスト"]
        assert len(store) == 0  # neither page records...
        assert list(store.sites()) == []  # ...nor site records
        assert list(store.iterate()) == []

    def test_meta_values_come_back_as_json_gives_them(self, store: StateStore) -> None:
        store.put_meta("run", "cycle", {"t": (1, 2), 3: "int key", "nested": {"a": [None]}})
        assert store.get_meta("run", "cycle") == {
            "t": [1, 2],
            "3": "int key",
            "nested": {"a": [None]},
        }

    def test_update_meta(self, store: StateStore) -> None:
        seen: list[Any] = []

        def count(value: dict[str, Any] | None) -> dict[str, Any]:
            seen.append(value)
            return {"n": (value or {"n": 0})["n"] + 1}

        assert store.update_meta("trust", "k", count) == {"n": 1}
        assert store.update_meta("trust", "k", count) == {"n": 2}
        assert seen == [None, {"n": 1}]
        assert store.update_meta("trust", "k", lambda value: None) is None  # left as it is
        assert store.get_meta("trust", "k") == {"n": 2}

        def bad(value: dict[str, Any] | None) -> dict[str, Any]:
            return {"n": math.nan}

        with pytest.raises(ValueError, match="trust/k"):
            store.update_meta("trust", "k", bad)
        assert store.get_meta("trust", "k") == {"n": 2}  # nothing written

    @pytest.mark.parametrize(
        ("namespace", "key", "value", "error", "words"),
        [
            ("Trust", "k", {}, ValueError, "namespace"),
            ("", "k", {}, ValueError, "namespace"),
            ("a/b", "k", {}, ValueError, "namespace"),
            ("trust", "", {}, ValueError, "meta key"),
            ("trust", "x" * 1025, {}, ValueError, "meta key"),
            ("trust", "a\0b", {}, ValueError, "meta key"),
            ("trust", "k", [1], TypeError, "dict"),
            ("trust", "k", {"t": math.inf}, ValueError, "trust/k"),
            ("trust", "k", {"t": b"bytes"}, TypeError, "JSON"),
        ],
    )
    def test_meta_bad_input(
        self, store: StateStore, namespace: str, key: str, value: Any,
        error: type[Exception], words: str,
    ) -> None:  # fmt: skip
        with pytest.raises(error, match=words):
            store.put_meta(namespace, key, value)
        assert list(store.meta("trust")) == []

    # -- lifecycle ----------------------------------------------------------------------

    def test_close_is_idempotent_and_final(self, make_store: StoreFactory) -> None:
        store = make_store()
        store.put(page(1))
        store.close()
        store.close()
        with pytest.raises(StoreError, match="closed"):
            store.get(page(1).key)
        with pytest.raises(StoreError, match="closed"):
            store.put(page(2))
        with pytest.raises(StoreError, match="closed"):
            len(store)

    def test_context_manager(self, make_store: StoreFactory) -> None:
        with make_store() as store:  # type: ignore[attr-defined]
            store.put(page(1))
        with pytest.raises(StoreError, match="closed"):
            store.get(page(1).key)

    def test_flush(self, store: StateStore) -> None:
        store.put(page(1))
        store.flush()
        store.flush()
        assert len(store) == 1

    def test_threads(self, store: StateStore) -> None:
        # Backends document their thread safety; the ones tested here share the
        # store between threads (calls are serialised).
        if not getattr(self, "thread_safe", True):
            pytest.skip("this backend is not thread-safe")
        errors: list[Exception] = []

        def work(t: int) -> None:
            try:
                for n in range(50):
                    store.put(page(f"{t}-{n}", next_due=float(n)))
                    store.due(25.0, 5)
            except Exception as exc:  # noqa: BLE001  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(store) == 200

    # -- the model --------------------------------------------------------------------------

    def test_matches_reference_model(self, make_store: StoreFactory) -> None:
        machine = _reference_machine(make_store)
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=40,
                stateful_step_count=25,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )


# -- the model-based test ---------------------------------------------------------------------

_URLS = [f"https://example.com/m/{n}" for n in range(8)] + ["https://例え.テスト/ü"]
_HOSTS = ["example.com", "例え.テスト", ""]
_times = st.sampled_from([0.0, 1.0, 2.5, 10.0, 1e9]) | st.floats(
    -1e10, 1e10, allow_nan=False, allow_infinity=False
)
_maybe_time = st.none() | _times
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@st.composite
def _pages(draw: st.DrawFn) -> PageState:
    url = draw(st.sampled_from(_URLS))
    return PageState(
        key=url_key(url),
        url=url,
        host=draw(st.sampled_from(_HOSTS)),
        # Explicit doc_ids are tested apart: backends may leave gaps, so the doc_ids
        # they give differ, and so would clashes with explicit ones.
        doc_id=0,
        status=draw(st.sampled_from(Status)),
        provider=draw(st.sampled_from(Provider)),
        first_seen=draw(_times),
        last_crawl=draw(_maybe_time),
        next_due=draw(_times),
        in_flight_since=draw(_maybe_time),
        refresh_secs=draw(_times),
        p_l=draw(st.floats(0, 1)),
        p_g=draw(st.floats(0, 1)),
        visits=draw(st.integers(0, 3)),
        changes=draw(st.integers(0, 3)),
        p_c=draw(st.floats(0, 1)),
        change_bucket=draw(st.integers(0, 255)),
        change_rate=draw(st.none() | st.floats(0, 10)),
        errors=draw(st.integers(0, (1 << 63) - 1)),
        fingerprint=draw(st.none() | st.integers(0, (1 << 64) - 1)),
        etag=draw(st.none() | st.text(max_size=8)),
        last_modified=draw(st.none() | st.text(max_size=8)),
        content_length=draw(st.none() | st.integers(-(1 << 63), (1 << 63) - 1)),
        access_count=draw(st.integers(0, 10)),
        past_updates=draw(st.lists(_times, max_size=MAX_PAST_UPDATES + 2)),
        future_updates=draw(st.lists(st.tuples(_times, st.floats(0, 1)), max_size=3)),
        request=draw(st.dictionaries(st.text(max_size=6), _json, max_size=3)),
        field_hashes=draw(
            st.lists(
                st.dictionaries(st.text(max_size=6), st.integers(0, (1 << 64) - 1), max_size=3),
                max_size=3,
            )
        ),
        content_hash=draw(st.none() | st.integers(0, (1 << 64) - 1)),
    )


_sites = st.builds(
    SiteState,
    host=st.sampled_from(_HOSTS),
    visits=st.integers(0, 100),
    changes=st.integers(0, 100),
    p_c=st.floats(0, 1),
    refresh_secs=st.none() | st.floats(1, 1e7),
    updated_at=_times,
)
_keys = st.sampled_from([url_key(u) for u in _URLS])
_META_NAMESPACES = ("trust", "quiet")
_meta_names = st.tuples(st.sampled_from(_META_NAMESPACES), st.sampled_from(["a", "b/c", "é"]))
_meta_values = st.dictionaries(
    st.sampled_from(["n", "t", "v"]),
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(0, 1e9) | st.text(max_size=3),
    max_size=3,
)


def _without_doc_ids(value: Any) -> Any:
    """``value`` with the doc_id of every record in it set to 0."""
    if isinstance(value, PageState):
        return replace(value, doc_id=0)
    if isinstance(value, dict):
        return {k: _without_doc_ids(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_doc_ids(v) for v in value]
    return value


def _reference_machine(make_store: StoreFactory) -> type[RuleBasedStateMachine]:
    """A state machine that runs the same calls on a new store and on MemoryStore."""

    class ReferenceModel(RuleBasedStateMachine):
        @initialize()
        def open(self) -> None:
            self.store = make_store()
            self.model = MemoryStore()
            self.doc_ids: dict[str, int] = {}
            self.max_doc_id = 0

        def both(self, method: str, *args: Any) -> Any:
            """Call ``method`` on both stores; they must agree on results and errors."""
            try:
                expected = getattr(self.model, method)(*args)
            except (StoreError, ValueError, TypeError) as exc:
                with pytest.raises(type(exc)):
                    getattr(self.store, method)(*args)
                return None
            got = getattr(self.store, method)(*args)
            assert _without_doc_ids(got) == _without_doc_ids(expected), method
            return got

        @rule(states=st.lists(_pages(), max_size=4))
        def put_many(self, states: list[PageState]) -> None:
            self.both("put_many", states)

        @rule(state=_pages())
        def put(self, state: PageState) -> None:
            self.both("put", state)

        @rule(states=st.lists(_pages(), max_size=4))
        def add_many(self, states: list[PageState]) -> None:
            self.both("add_many", states)

        @rule(key=_keys)
        def delete(self, key: str) -> None:
            self.both("delete", key)

        @rule(now=_times, limit=st.integers(0, 10))
        def due(self, now: float, limit: int) -> None:
            self.both("due", now, limit)

        @rule(keys=st.lists(_keys, max_size=4), now=_times)
        def mark_in_flight(self, keys: list[str], now: float) -> None:
            self.both("mark_in_flight", keys, now)

        @rule(older_than=_maybe_time)
        def release_in_flight(self, older_than: float | None) -> None:
            self.both("release_in_flight", older_than)

        @rule(keys=st.lists(_keys, max_size=4))
        def get_many(self, keys: list[str]) -> None:
            self.both("get_many", keys)

        @rule(site=_sites)
        def put_site(self, site: SiteState) -> None:
            self.both("put_site", site)

        @rule(host=st.sampled_from(_HOSTS))
        def get_site(self, host: str) -> None:
            self.both("get_site", host)

        @rule(name=_meta_names, value=_meta_values)
        def put_meta(self, name: tuple[str, str], value: dict[str, Any]) -> None:
            self.both("put_meta", *name, value)

        @rule(name=_meta_names, add=st.integers(-3, 3), keep=st.booleans())
        def update_meta(self, name: tuple[str, str], add: int, keep: bool) -> None:
            def change(value: dict[str, Any] | None) -> dict[str, Any] | None:
                if keep:
                    return None
                return {**(value or {}), "n": int((value or {}).get("n", 0)) + add}

            self.both("update_meta", *name, change)

        @rule(name=_meta_names)
        def delete_meta(self, name: tuple[str, str]) -> None:
            self.both("delete_meta", *name)

        @rule()
        def flush(self) -> None:
            self.both("flush")

        @invariant()
        def same_records(self) -> None:
            if not hasattr(self, "store"):
                return
            assert len(self.store) == len(self.model)
            assert self.store.counts() == self.model.counts()
            assert self.store.next_due_time() == self.model.next_due_time()
            expected = {s.key: s for s in self.model.iterate()}
            got = {s.key: s for s in self.store.iterate(batch_size=3)}
            assert _without_doc_ids(got) == _without_doc_ids(expected)
            assert sorted(self.store.sites(), key=lambda s: s.host) == list(self.model.sites())
            for namespace in _META_NAMESPACES:
                assert list(self.store.meta(namespace)) == list(self.model.meta(namespace))

        @invariant()
        def doc_ids_are_stable_unique_and_never_reused(self) -> None:
            if not hasattr(self, "store"):
                return
            doc_ids = {s.key: s.doc_id for s in self.store.iterate()}
            assert len(set(doc_ids.values())) == len(doc_ids)
            for key, doc_id in doc_ids.items():
                if key in self.doc_ids:
                    assert doc_id == self.doc_ids[key]
                else:
                    assert doc_id > self.max_doc_id
            self.doc_ids = doc_ids
            self.max_doc_id = max([self.max_doc_id, *doc_ids.values()])

        @invariant()
        def no_record_moves_back(self) -> None:
            """visits and last_crawl of a record never go back while it exists."""
            if not hasattr(self, "store"):
                return
            marks = {s.key: (s.visits, s.last_crawl) for s in self.store.iterate()}
            for key, (visits, last) in marks.items():
                before = getattr(self, "marks", {}).get(key)
                if before is not None:
                    assert visits >= before[0]
                    assert before[1] is None or (last is not None and last >= before[1])
            self.marks = marks
            assert self.store.regressions_refused == self.model.regressions_refused  # type: ignore[attr-defined]

        def teardown(self) -> None:
            if hasattr(self, "store"):
                self.store.close()
                self.model.close()

    return ReferenceModel
