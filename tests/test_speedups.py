"""The C extension scrapy_fresh._speedups gives exactly the answers of the NumPy code
of scrapy_fresh.fingerprint.shingles (the reference): per-feature hashes, simhash votes with
and without weights, and text fingerprints.

``make test`` installs the package with ``pip install -e .``, which builds the
extension, so a missing extension fails these tests instead of skipping them.
"""

from __future__ import annotations

import contextlib
import gc
import random
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_fresh.fingerprint import _hashdef, _vector
from scrapy_fresh.fingerprint import shingles as fp
from scrapy_fresh.fingerprint.shingles import (
    fingerprint_html,
    fingerprint_text,
    hash_feature,
    shingles,
    simhash_features,
    words,
)

try:
    from scrapy_fresh import _speedups
except ImportError:  # pragma: no cover - reported by test_extension_is_built
    _speedups = None  # type: ignore[assignment]

BUILD_HINT = (
    "scrapy_fresh._speedups (scrapy_fresh/_speedups.c) is not built: run pip install -e . "
    "with a C compiler (make test does)."
)
T = TypeVar("T")


def ext() -> Any:
    if _speedups is None:  # pragma: no cover
        pytest.fail(BUILD_HINT)
    return _speedups


@contextlib.contextmanager
def numpy_path() -> Iterator[None]:
    """Run fingerprint.py as if the extension were not built."""
    saved = fp._speedups
    fp._speedups = None  # type: ignore[assignment]
    try:
        yield
    finally:
        fp._speedups = saved


def both(call: Callable[[], T]) -> tuple[T, T]:
    """``call()`` with the C extension, then with NumPy only."""
    ext()
    with_c = call()
    with numpy_path():
        with_numpy = call()
    return with_c, with_numpy


def same_outcome(call: Callable[[], object]) -> None:
    """C and NumPy give the same value, or raise the same error with the same message."""
    outcomes = []
    for use_c in (True, False):
        with contextlib.ExitStack() as stack:
            if not use_c:
                stack.enter_context(numpy_path())
            try:
                outcomes.append(("value", call()))
            except (TypeError, ValueError, OverflowError) as exc:
                outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[0] == outcomes[1]


def test_extension_is_built():
    try:
        from scrapy_fresh import _speedups as module
    except ImportError as exc:  # pragma: no cover
        pytest.fail(f"{BUILD_HINT} ({exc})")
    assert fp._speedups is module
    assert module.__file__ is not None
    assert module.__file__.endswith((".so", ".pyd"))


def _prints_ok(python_exe: str, python_env: dict[str, str], code: str) -> None:
    """Run ``code`` in a new interpreter: it must print ``ok`` and nothing else."""
    result = subprocess.run(
        [python_exe, "-c", code], capture_output=True, text=True, env=python_env, check=False
    )
    assert result.stdout == "ok\n", result.stderr


def test_numpy_is_used_when_the_extension_is_missing(python_exe, python_env):
    code = (
        "import sys\n"
        "sys.modules['scrapy_fresh._speedups'] = None  # import fails: as if not built\n"
        "from scrapy_fresh.fingerprint import shingles as fp\n"
        "assert fp._speedups is None\n"
        "text = 'The quick brown fox jumps over the lazy dog'\n"
        "assert fp.fingerprint_text(text) == 0x231C575468662840\n"
        "assert fp.hash_feature('cat sat', mode='fast') == 0x7E785978560B86B\n"
        "assert fp.simhash_features(fp.shingles(text), mode='fast') == 0x231C575468662840\n"
        "print('ok')\n"
    )
    _prints_ok(python_exe, python_env, code)


def test_a_crawl_with_the_extension_never_loads_numpy(python_exe, python_env):
    """With the C extension, NumPy (objects every full garbage collection walks, time at
    start-up) is loaded only by what needs it: not by the add-on's
    components, not by judging a page or its items."""
    ext()
    code = (
        "import sys\n"
        "from scrapy_fresh.crawl import addon, gone, middlewares, pipelines, progress\n"
        "from scrapy_fresh.crawl import prometheus, provider_middleware, scheduler\n"
        "from scrapy_fresh.crawl import visitlog, webhook\n"
        "from scrapy_fresh.fingerprint import content, itemfields\n"
        "from scrapy_fresh.fingerprint import shingles as fp\n"
        "page = b'<html><body><main><p>Ducks swim at 10:30.</p></main></body></html>'\n"
        "a = content.digest(page).simhash\n"
        "b = fp.fingerprint_html(page)\n"
        "assert fp.changed(a, b) in (True, False) and fp.hamming(a, a) == 0\n"
        "itemfields.value_hash('19.99')\n"
        "assert 'numpy' not in sys.modules, 'numpy loaded'\n"
        "fp.words('now the NumPy code')\n"
        "assert 'numpy' in sys.modules\n"
        "print('ok')\n"
    )
    _prints_ok(python_exe, python_env, code)


# ---------------------------------------------------------------------------------------
# Per-feature hashes
# ---------------------------------------------------------------------------------------

SPECIAL = "\x00 a\xe9\xff\u0100\u4e2d\ud7ff\ud800\udbff\udc00\udfff\ue000\uffff\U00010000\U0001f600\U0010ffff"
any_char = st.characters(exclude_categories=()) | st.sampled_from(SPECIAL)
feature = st.text(alphabet=any_char, max_size=40) | st.text(
    alphabet=any_char, min_size=60, max_size=300
)


def numpy_hashes(features: list[str]) -> bytes:
    return _vector._fast_hashes(features, "\x00".join(features)).tobytes()


@given(st.lists(feature, max_size=60))
@example([])
@example([""])
@example(["", "", "a\x00b", "\x00"])
@example(["\ud800x", "\udfff", "\U0010ffff" * 70, "a" * 64, "b" * 65, "c" * 63, "d" * 128])
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_per_feature_hashes_equal_numpy_and_definition(features):
    c_bytes = ext().fast_hashes(features)
    assert c_bytes == numpy_hashes(features)
    assert ext().fast_hashes(tuple(features)) == c_bytes
    expected = [_hashdef._fast_hash(f) for f in features]  # the plain Python definition
    assert [int.from_bytes(c_bytes[8 * i : 8 * i + 8], "big") for i in range(len(features))] == (
        expected
    )
    assert [ext().fast_hash(f) for f in features] == expected
    assert [hash_feature(f, mode="fast") for f in features] == expected


@pytest.mark.parametrize("char", ["x", "\xe9", "\u4e2d", "\U0001f600", "\udc80"])
@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1000, 70_000, 200_001])
def test_long_features_of_every_width(char, size):
    text = "".join(chr(ord(char) + i % 7) for i in range(min(size, 50))) + char * (size - 50)
    text = text[:size]
    assert ext().fast_hash(text) == _vector._fast_hash_any(text)
    assert ext().fast_hashes([text, "ab", text]) == numpy_hashes([text, "ab", text])


def test_golden_values_with_c():
    assert ext().fast_hash("cat sat") == 0x7E785978560B86B
    assert ext().fingerprint_text("The quick brown fox jumps over the lazy dog", 2, True) == (
        0x231C575468662840
    )


# ---------------------------------------------------------------------------------------
# The vote: simhash_features(..., mode="fast")
# ---------------------------------------------------------------------------------------


def c_handles(features: object) -> bool:
    """Whether the C vote computes ``features`` itself (rather than leaving it to Python)."""
    return ext().simhash(features) is not None


def assert_same_simhash(features: Any, *, handled: bool | None = None) -> None:
    with_c, with_numpy = both(lambda: simhash_features(features, mode="fast"))
    assert with_c == with_numpy
    if handled is not None:
        assert c_handles(features) is handled


@given(st.lists(feature, max_size=300))
@example([])
@example(["same"] * 7)
@example(["a", "b"])  # a tie: 1 of 2 is not more than half
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_str_features(features):
    assert_same_simhash(features, handled=True)
    assert_same_simhash(tuple(features), handled=True)


small_ints = st.integers(-300, 300)
big_ints = st.integers(-(2**61), 2**61)
huge_ints = st.integers(-(2**70), 2**70)
floats = st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from(
    [0.1, 0.2, 0.3, -0.0, 1e-300, 5e-324, 1e300]
)
weight = small_ints | big_ints | floats | st.booleans()
item = (
    feature
    | st.tuples(feature, weight)
    | st.lists(feature, min_size=2, max_size=2).map(lambda pair: [pair[0], len(pair[1])])
)


@given(st.lists(st.tuples(feature, small_ints | st.booleans()), max_size=200))
@example([("a", 0)])
@example([("a", 1), ("b", -1)])  # total 0, yet bits of "a" win
@example([("a", 2**60), ("b", -(2**60))])  # |weights| add up to 2**61: still C
def test_int_weights(features):
    assert_same_simhash(features, handled=True)
    assert_same_simhash(dict(features))
    assert_same_simhash([list(pair) for pair in features], handled=True)


@given(st.lists(st.tuples(feature, big_ints), max_size=50))
def test_big_int_weights(features):
    # Exact in int64 while the absolute weights add up to at most 2**61; else Python.
    assert_same_simhash(features)
    fits = sum(abs(w) for _, w in features) <= 2**61
    assert c_handles(features) is fits


@given(st.lists(st.tuples(feature, huge_ints), max_size=30))
def test_huge_int_weights_are_left_to_python(features):
    assert_same_simhash(features)


@given(st.lists(st.tuples(feature, floats | small_ints), min_size=1, max_size=200))
@example([("a", 0.1), ("b", 0.2), ("c", -0.3)])
@example([("a", 1e308), ("b", 1e308), ("c", -1e308)])  # the sums overflow to inf
@example([("a", 0.5), ("b", 2**60 + 1)])  # an int among floats is rounded like float()
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_float_weights(features):
    assert_same_simhash(features, handled=True)
    assert_same_simhash(dict(features))


@given(st.lists(item, max_size=150))
@example(["a", ("b", 2.5), "c"])
@example([("a", 7), "b"])
@example(["a", ["b", 3]])
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_mixed_bare_str_and_pairs(features):
    assert_same_simhash(features)
    assert_same_simhash(tuple(features))


@given(st.dictionaries(feature, weight, max_size=150))
def test_dicts(features):
    assert_same_simhash(features)


@pytest.mark.parametrize(
    "features",
    [
        [("a", np.int64(300)), ("b", 1)],
        [("a", np.float64(2.5)), ("b", 1)],
        [("a", Fraction(1, 3)), ("b", 1)],
        [("a", 10**400), ("b", 0.5)],
        [("a", 1), ("b", float("nan"))],
        [("a", float("inf"))],
        [("a", "heavy")],
        [(1, 2)],
        [b"bytes"],
        [("a", 1, 2)],
        ["a", None],
        {1: 2},
        {"a": np.int32(3)},
    ],
)
def test_what_c_leaves_to_python(features):
    assert not c_handles(features)
    same_outcome(lambda: simhash_features(features, mode="fast"))


def test_subclasses_are_left_to_python():
    class Weight(int):
        def __int__(self) -> int:
            return 5

    class Features(list):  # type: ignore[type-arg]
        pass

    assert_same_simhash([("a", Weight(1)), ("b", 2)])
    assert_same_simhash(Features(["a", "b", "c"]))
    assert not c_handles([("a", Weight(1))])


def test_iterators_and_generators():
    features = [f"feature {i}" for i in range(30_000)]
    weighted = [(f, i % 3) for i, f in enumerate(features)]

    def check(make: Callable[[list[Any]], Any], items: list[Any]) -> None:
        with_c, with_numpy = both(lambda: simhash_features(make(items), mode="fast"))
        assert with_c == with_numpy == simhash_features(items, mode="fast")

    for make in (iter, lambda x: (f for f in x), set):
        check(make, features)
        check(make, weighted)
    assert_same_simhash(features, handled=True)


def test_more_than_one_batch():
    rng = random.Random(1)
    names = [f"f{rng.randrange(10**6)} x" for _ in range(40_000)]
    ints = [(n, rng.randint(-5, 30)) for n in names]
    floats_ = [(n, rng.uniform(-1, 3)) for n in names]
    # Unit and int weights are exact: C does them in one go, batches or not.
    assert_same_simhash(names, handled=True)
    assert_same_simhash(ints, handled=True)
    assert_same_simhash(dict(ints), handled=True)
    assert_same_simhash(names[:20_000] + ints[20_000:], handled=True)  # a unit batch first
    assert_same_simhash(ints[:20_000] + names[20_000:], handled=True)
    # Float sums round per batch of 16384 features: left to Python (with C hashes).
    assert_same_simhash(floats_, handled=False)
    assert_same_simhash(floats_[: fp._CHUNK], handled=True)
    assert_same_simhash(floats_[: fp._CHUNK + 1], handled=False)
    assert_same_simhash(names[:20_000] + floats_[20_000:], handled=False)


# ---------------------------------------------------------------------------------------
# Text fingerprints
# ---------------------------------------------------------------------------------------

unicode_text = st.text(
    alphabet=st.sampled_from("aZ09_ -,.\n\t\xa0éÉßİΣσς٠١٢中😀\u0301\u2028\ud800\U00010400")
    | st.characters(exclude_categories=()),
    max_size=200,
)


def assert_same_text(text: str, k: int, normalize_digits: bool = True) -> None:
    with_c, with_numpy = both(
        lambda: fingerprint_text(text, k=k, normalize_digits=normalize_digits)
    )
    assert with_c == with_numpy
    # Also the definition: the simhash of the shingles (hashed by the NumPy code).
    with numpy_path():
        expected = simhash_features(
            shingles(words(text, normalize_digits=normalize_digits), k), mode="fast"
        )
    assert with_c == expected


@given(unicode_text, st.integers(1, 6), st.booleans())
@example("", 2, True)
@example("!!! ...", 1, False)
@example("one", 4, True)
@example("one two three four", 4, True)
@example("a0 0b 00 0_0 ٣٤5 x", 1, True)
@example("İstanbul ΟΔΟΣ ΣΑΣ Σ 12:30 ٣٤", 2, True)
@example("ABC DEF", 2, False)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_text_fingerprints(text, k, normalize_digits):
    assert_same_text(text, k, normalize_digits)


@given(
    st.lists(st.text(alphabet="aZ0129_٣Σé中😀", min_size=1, max_size=300), max_size=6),
    st.sampled_from([" ", "\n", ", ", "\ud800", "\u2028"]),
    st.integers(1, 4),
    st.booleans(),
)
@example(["a" * 63 + "12" + "b" * 70], " ", 1, True)
@example(["0" * 200, "x" + "9" * 130 + "y"], " ", 2, True)
@example(["0" * 200, "x" + "9" * 130 + "y"], " ", 2, False)
def test_long_words(word_list, separator, k, normalize_digits):
    # Words of more than 64 characters, digit runs across 64-character blocks.
    assert_same_text(separator.join(word_list), k, normalize_digits)


@pytest.mark.parametrize("k", [1, 2, 3, 63, 64, 65, 200, 10**30])
def test_text_fingerprints_for_any_k(k):
    text = " ".join(f"w{i % 37} Ä{i % 5}" for i in range(150))
    assert_same_text(text, k)
    assert_same_text("just three words", k)


def test_long_texts_cut_in_pieces():
    rng = random.Random(3)
    vocabulary = ["word", "Ωμέγα", "ΟΔΟΣ", "中文", "emoji😀", "x_y", "12:30", "naïve", "Σ"]
    parts = [rng.choice(vocabulary) + rng.choice([" ", "\n", ", ", "Σ "]) for _ in range(70_000)]
    text = "".join(parts)
    assert len(text) > 5 * _hashdef._TEXT_CHUNK
    for k in (1, 2, 5):
        assert_same_text(text, k)
    ascii_text = " ".join(f"word{i % 300}" for i in range(40_000))
    assert_same_text(ascii_text + " " + text, 2)
    huge_word = "a b " + "c" * 300_000 + " d e f"
    for k in (1, 4, 20):
        assert_same_text(huge_word, k)


def test_text_that_is_not_a_plain_str():
    class Shouting(str):
        def lower(self) -> str:
            return self.upper()

    # Both paths read a str subclass as the plain str it holds.
    text = Shouting("Some Words here")
    with_c, with_numpy = both(lambda: fingerprint_text(text))
    assert with_c == with_numpy == fingerprint_text("Some Words here")


def page_text(seed: int, size: int) -> str:
    """Article-like text: words, names, numbers, punctuation, some accents."""
    rng = random.Random(seed)
    syllables = [
        "ka",
        "lo",
        "mi",
        "ne",
        "ra",
        "to",
        "su",
        "vi",
        "den",
        "mar",
        "tel",
        "phé",
        "strï",
    ]
    vocabulary = [
        "".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(3000)
    ]
    out: list[str] = []
    length = 0
    while length < size:
        sentence = rng.choices(vocabulary, k=rng.randint(6, 20))
        if rng.random() < 0.3:
            sentence[rng.randrange(len(sentence))] = str(rng.randint(0, 5000))
        out.append(" ".join(sentence).capitalize() + rng.choice([". ", "! ", ", ", ".\n"]))
        length += len(out[-1])
    return "".join(out)


@pytest.mark.parametrize("seed", range(4))
def test_real_size_pages(seed):
    text = page_text(seed, 12_000)
    for k in (1, 2, 4):
        features = shingles(text, k)
        assert len(features) > 1_400
        assert_same_simhash(features, handled=True)
        counts: dict[str, int] = {}
        for feat in features:
            counts[feat] = counts.get(feat, 0) + 1
        assert_same_simhash(counts, handled=True)
        assert_same_simhash({f: n / 3 for f, n in counts.items()}, handled=True)
        assert_same_text(text, k)
    html = f"<html><body><nav>Menu</nav><article><p>{text}</p></article></body></html>"
    with_c, with_numpy = both(lambda: fingerprint_html(html))
    assert with_c == with_numpy


# ---------------------------------------------------------------------------------------
# Bad arguments, memory
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda c: c.fast_hash(b"x"), TypeError, r"feature \(bytes\) must be a str"),
        (lambda c: c.fast_hashes("abc"), TypeError, r"features \(str\) must be a list or tuple"),
        (lambda c: c.fast_hashes(["a", 1]), TypeError, r"features\[1\] \(int\) must be a str"),
        (lambda c: c.simhash(iter(["a"])), TypeError, r"features \(list_iterator\) must be"),
        (lambda c: c.simhash("abc"), TypeError, r"features \(str\) must be a list, tuple"),
        (lambda c: c.fingerprint_text(b"x", 2, True), TypeError, r"text \(bytes\) must be a str"),
        (lambda c: c.fingerprint_text("x", 2.0, True), TypeError, r"k \(float\) must be an int"),
        (lambda c: c.fingerprint_text("x", True, True), TypeError, r"k \(bool\) must be an int"),
        (lambda c: c.fingerprint_text("x", 0, True), ValueError, r"k \(0\) must be at least 1"),
        (lambda c: c.fingerprint_text("x", -(10**30), True), ValueError, r"k \(-1000"),
        (lambda c: c.fingerprint_text("x", 2), TypeError, "takes 3 arguments"),
    ],
)
def test_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(ext())


def test_no_memory_is_kept():
    # A leaked reference or buffer per call would add megabytes over these calls.
    c = ext()
    text = page_text(9, 3_000) + " Ωμέγα 😀"
    features = shingles(text, 2)
    weighted = [(f, i % 7) for i, f in enumerate(features)]
    floats_ = {f: i / 7 for i, f in enumerate(features)}
    bad = [("a", 1), ("b", np.int8(1))]

    def work(rounds: int) -> None:
        for _ in range(rounds):
            c.fast_hash(text)
            c.fast_hashes(features)
            c.simhash(features)
            c.simhash(weighted)
            c.simhash(floats_)
            c.simhash(bad)
            c.fingerprint_text(text, 2, True)
            c.fingerprint_text(text, 300, False)
            with contextlib.suppress(TypeError):
                c.fast_hashes(["a", 1])

    def rss_kb() -> int:
        gc.collect()
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)

    work(200)  # warm up: caches, allocator pools
    rss, blocks, refs = rss_kb(), sys.getallocatedblocks(), sys.getrefcount(features)
    work(3_000)
    assert sys.getrefcount(features) == refs
    assert sys.getallocatedblocks() - blocks < 1_000  # a leaked object per call: 3,000
    assert rss_kb() - rss < 8_000  # kB; a leaked buffer per call: 12 MB or more
