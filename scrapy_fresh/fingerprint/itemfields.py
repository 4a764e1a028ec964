"""Item fields judged one by one: exact hashes of normalised values, rules per field.

A page that yields items is judged by the fields of those items (see
:doc:`/topics/fingerprint`, "Items: exact per field"). Each counted field of each item
gets one 64-bit hash:

* its value normalised: a string has the matches of the field's ``ignore`` patterns
  replaced by a space, then every run of whitespace made one space and the ends
  stripped -- case, punctuation and **digits are kept**; a number, a bool or any other
  scalar is its ``str()``; a list or a dict is the JSON of its normalised members
  (dict keys sorted); ``None`` and missing fields are not counted;
* hashed with 64-bit BLAKE2b (:func:`value_hash`): two values have the same hash
  exactly when their normalised texts are equal (up to a 2**-64 collision).

A field marked fuzzy (``fuzzy_bits``) gets the 64-bit simhash of its normalised text
instead (:func:`~scrapy_fresh.fingerprint.shingles.fingerprint_text`, digits kept) and counts
as changed when more than ``fuzzy_bits`` bits differ: a threshold the user opts into
for one long text field, never a default.

The rules come from :setting:`FRESH_FINGERPRINT_FIELDS` and :setting:`FRESH_FIELD_RULES`,
the spider attributes ``fresh_fingerprint_fields`` and ``fresh_field_rules``, and the
request meta keys of the same names (:func:`merge_rules`). Standard library and
:mod:`scrapy_fresh.fingerprint.shingles` only: no Scrapy.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.fingerprint.code import code_text
from scrapy_fresh.fingerprint.shingles import fingerprint_text, hamming

__all__ = [
    "FIELD_PREFIX",
    "FIELD_SCHEME_KEY",
    "ITEM_HASH_VERSION",
    "FieldRule",
    "FieldRules",
    "ItemRules",
    "changed_fields",
    "describe_field_rules",
    "field_scheme",
    "field_scheme_of",
    "item_hashes",
    "match_items",
    "merge_rules",
    "normalise_value",
    "parse_field_rules",
    "parse_fields",
    "rebuild_field_rules",
    "tag_hashes",
    "untagged",
    "value_hash",
]

#: Item fields whose name starts with this are scrapy_fresh's own and never counted.
FIELD_PREFIX: Final = "fresh_"
#: Highest ``fuzzy_bits``: a simhash has 64 bits, and 64 would never see a change.
MAX_FUZZY_BITS: Final = 63
_RULE_KEYS: Final = ("code", "fuzzy_bits", "ignore", "skip")
#: Version of the normalising and hashing of field values: rules of another version
#: cannot be applied again to hash a page's items as they were hashed then.
ITEM_HASH_VERSION: Final = 1
#: Key under which a stored item's hashes keep the field scheme tag of the rules that
#: made them (a ``fresh_`` name: never a field).
FIELD_SCHEME_KEY: Final = "fresh_scheme"


@dataclass(frozen=True)
class FieldRule:
    """How one item field is compared.

    :param ignore: patterns whose matches are not content (a render time, a counter):
        replaced by a space before the value is normalised and hashed.
    :param fuzzy_bits: None (the default): the field is compared exactly. A number of
        bits: the field is compared by the simhash of its text and changed when more
        than this many bits differ (for a long text whose small edits do not matter).
    :param skip: the field is not counted at all.
    :param code: the field holds code: a value of several lines keeps each line's
        indentation (a line moved out of a loop is an edit; trailing spaces and blank
        lines still go), as a page's ``<pre>`` block does
        (:func:`~scrapy_fresh.fingerprint.code.code_text`). Off by default: the
        indentation of a value taken from the page's markup is the template's layout.
    """

    ignore: tuple[re.Pattern[str], ...] = ()
    fuzzy_bits: int | None = None
    skip: bool = False
    code: bool = False


#: Rules by field name; fields without a rule are compared exactly.
FieldRules = Mapping[str, FieldRule]
_EXACT: Final = FieldRule()


def parse_fields(value: Any, where: str) -> tuple[str, ...] | None:
    """The field names of :setting:`FRESH_FINGERPRINT_FIELDS` (or of the spider
    attribute or meta key ``where`` names): None for every field.

    >>> parse_fields("name, price", "FRESH_FINGERPRINT_FIELDS")
    ('name', 'price')
    >>> parse_fields(None, "FRESH_FINGERPRINT_FIELDS") is None
    True
    """
    if value is None:
        return None
    if isinstance(value, str):
        names = tuple(f.strip() for f in value.split(",") if f.strip())
    elif isinstance(value, (list, tuple)) and all(isinstance(f, str) for f in value):
        names = tuple(value)
    else:
        raise ConfigError(
            f"{where} ({value!r}) must be None (every field) or a list of field names."
        )
    if not names:
        raise ConfigError(f"{where} ({value!r}) names no field; use None for every field.")
    return names


def _patterns(value: Any, where: str) -> tuple[re.Pattern[str], ...]:
    items = [value] if isinstance(value, (str, re.Pattern)) else value
    if not isinstance(items, (list, tuple)):
        raise ConfigError(
            f"{where} ({value!r}) must be a regular expression or a list of them, "
            r"e.g. [r'rendered in \d+ ms']."
        )
    out: list[re.Pattern[str]] = []
    for item in items:
        if isinstance(item, re.Pattern):
            if not isinstance(item.pattern, str):
                raise ConfigError(f"{where} holds a bytes pattern ({item!r}); use str patterns.")
            out.append(item)
            continue
        if not isinstance(item, str) or not item:
            raise ConfigError(f"{where} holds {item!r}; expected a non-empty regular expression.")
        try:
            out.append(re.compile(item))
        except re.error as exc:
            raise ConfigError(
                f"{where} holds {item!r}, not a valid regular expression: {exc}."
            ) from None
    return tuple(out)


def _rule(value: Any, where: str) -> FieldRule:
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where} ({value!r}) must be a dict with some of the keys "
            f"{', '.join(_RULE_KEYS)}, e.g. {{'fuzzy_bits': 3}}."
        )
    unknown = [k for k in value if k not in _RULE_KEYS]
    if unknown:
        raise ConfigError(
            f"{where} has unknown key(s) {', '.join(map(repr, unknown))}; expected "
            f"{', '.join(_RULE_KEYS)}."
        )
    bits = value.get("fuzzy_bits")
    if bits is not None and (
        isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits <= MAX_FUZZY_BITS
    ):
        raise ConfigError(
            f"{where}['fuzzy_bits'] ({bits!r}) must be None (exact) or a whole number of bits "
            f"from 0 to {MAX_FUZZY_BITS}."
        )
    flags = {name: value.get(name, False) for name in ("skip", "code")}
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise ConfigError(f"{where}[{name!r}] ({flag!r}) must be True or False.")
    ignore = _patterns(value.get("ignore", ()), f"{where}['ignore']")
    return FieldRule(ignore=ignore, fuzzy_bits=bits, **flags)


def parse_field_rules(value: Any, where: str) -> dict[str, FieldRule]:
    """Validate field rules (:setting:`FRESH_FIELD_RULES`, a spider's ``fresh_field_rules``
    or a request's ``meta["fresh_field_rules"]``; ``where`` names the source in errors).

    >>> rules = parse_field_rules(
    ...     {"description": {"fuzzy_bits": 3}, "sidebar": {"ignore": r"rendered in \\d+ ms"}},
    ...     "FRESH_FIELD_RULES")
    >>> rules["description"].fuzzy_bits, rules["sidebar"].ignore[0].pattern
    (3, 'rendered in \\\\d+ ms')
    >>> parse_field_rules({"price": {"fuzzy": 1}}, "FRESH_FIELD_RULES")
    Traceback (most recent call last):
    ...
    scrapy_fresh.exceptions.ConfigError: FRESH_FIELD_RULES['price'] has unknown key(s) 'fuzzy'; expected code, fuzzy_bits, ignore, skip.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where} ({value!r}) must be a dict of field name -> rule, e.g. "
            "{'sidebar': {'ignore': [r'rendered in \\d+ ms']}, 'description': {'fuzzy_bits': 3}}."
        )
    rules: dict[str, FieldRule] = {}
    for name, rule in value.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where} has a bad field name {name!r}; expected a str.")
        rules[name] = _rule(rule, f"{where}[{name!r}]")
    return rules


def merge_rules(*layers: FieldRules) -> dict[str, FieldRule]:
    """Rules of several sources, later layers winning field by field (setting, then
    spider attribute, then request meta).

    >>> merged = merge_rules({"a": FieldRule(skip=True), "b": FieldRule(fuzzy_bits=2)},
    ...                      {"b": FieldRule()})
    >>> merged["a"].skip, merged["b"].fuzzy_bits
    (True, None)
    """
    merged: dict[str, FieldRule] = {}
    for layer in layers:
        merged.update(layer)
    return merged


def _text(value: str, rule: FieldRule) -> str:
    for pattern in rule.ignore:
        value = pattern.sub(" ", value)
    return code_text(value) if rule.code else " ".join(value.split())


def _plain(value: Any, rule: FieldRule) -> Any:
    """JSON-able form of a value, its strings normalised."""
    if isinstance(value, str):
        return _text(value, rule)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v, rule) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        members = [_plain(v, rule) for v in value]
        if isinstance(value, (set, frozenset)):
            members.sort(key=repr)
        return members
    return _text(str(value), rule)


def normalise_value(value: Any, rule: FieldRule = _EXACT) -> str | None:
    """The text of a field value that is compared; None for a value that is not counted.

    >>> normalise_value("  19   available\\n")
    '19 available'
    >>> normalise_value(51.77), normalise_value(True), normalise_value(None)
    ('51.77', 'True', None)
    >>> normalise_value(["a  b", 3])
    '["a b",3]'
    >>> rule = FieldRule(ignore=(re.compile(r"rendered in \\d+ ms"),))
    >>> normalise_value("Cart (2) -- rendered in 38 ms", rule)
    'Cart (2) --'
    """
    if value is None:
        return None
    if isinstance(value, str):
        return _text(value, rule)
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        return json.dumps(
            _plain(value, rule), ensure_ascii=False, sort_keys=True, separators=(",", ":")
        )
    return _text(str(value), rule)


def value_hash(text: str) -> int:
    """64-bit BLAKE2b of a normalised value, as an unsigned int.

    >>> value_hash("51.77") == value_hash("52.77")
    False
    >>> 0 <= value_hash("") < 2**64
    True
    """
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def item_hashes(
    item: Mapping[str, Any], fields: tuple[str, ...] | None, rules: FieldRules
) -> dict[str, int]:
    """The hash of each counted field of one item (given as a mapping, e.g. an ItemAdapter).

    A field counts when ``fields`` is None or names it, its name does not start with
    ``fresh_``, its rule does not skip it and its value is not None. Fuzzy fields get
    the simhash of their text (digits kept), the others :func:`value_hash`.

    >>> h = item_hashes({"name": "Mug", "price": "51.77", "fresh_changed": True}, None, {})
    >>> sorted(h)
    ['name', 'price']
    """
    out: dict[str, int] = {}
    for name, value in item.items():
        if not isinstance(name, str) or name.startswith(FIELD_PREFIX):
            continue
        if fields is not None and name not in fields:
            continue
        rule = rules.get(name, _EXACT)
        if rule.skip:
            continue
        text = normalise_value(value, rule)
        if text is None:
            continue
        if rule.fuzzy_bits is None:
            out[name] = value_hash(text)
        else:
            out[name] = fingerprint_text(text, normalize_digits=False)
    return out


def changed_fields(
    old: Mapping[str, int],
    new: Mapping[str, int],
    fields: tuple[str, ...] | None,
    rules: FieldRules,
) -> list[str]:
    """Names of the fields of one item that changed between two visits.

    In the new item's order, then fields that disappeared. A field present in only one
    of them changed (it appeared or went away) -- unless it is not counted any more
    (``fields`` or a ``skip`` rule): narrowing the rules reports nothing, widening them
    reports the added fields once. A fuzzy field changed when its simhashes differ in
    more than its ``fuzzy_bits``; the others when their hashes differ.

    >>> changed_fields({"price": 1, "stock": 2}, {"price": 3, "stock": 2}, None, {})
    ['price']
    >>> changed_fields({"price": 1, "old": 2}, {"price": 1}, ("price",), {})
    []
    """
    out: list[str] = []
    for name, value in new.items():
        before = old.get(name)
        if before is None:
            out.append(name)
            continue
        bits = rules.get(name, _EXACT).fuzzy_bits
        if (before != value) if bits is None else hamming(before, value) > bits:
            out.append(name)
    for name in old:
        if name in new:
            continue
        if (fields is not None and name not in fields) or rules.get(name, _EXACT).skip:
            continue
        out.append(name)
    return out


def match_items(
    old: Sequence[Mapping[str, int]], new: Sequence[Mapping[str, int]], key_field: str | None
) -> list[int | None]:
    """For each new item, the index of the previous visit's item it is compared with,
    or None for an item that is new on the page.

    Without a key field items are matched by position. With one, items whose key field
    has a hash are matched by that hash (the first unmatched previous item with it);
    items without it are matched by position among the previous items without it.

    >>> match_items([{"sku": 1}, {"sku": 2}], [{"sku": 2}, {"sku": 3}], "sku")
    [1, None]
    >>> match_items([{"a": 1}, {"a": 2}], [{"a": 5}], None)
    [0]
    """
    if key_field is None:
        return [i if i < len(old) else None for i in range(len(new))]
    by_key: dict[int, list[int]] = {}
    keyless: list[int] = []
    for i, hashes in enumerate(old):
        key = hashes.get(key_field)
        if key is None:
            keyless.append(i)
        else:
            by_key.setdefault(key, []).append(i)
    out: list[int | None] = []
    position = 0
    for hashes in new:
        key = hashes.get(key_field)
        if key is None:
            out.append(keyless[position] if position < len(keyless) else None)
            position += 1
            continue
        candidates = by_key.get(key)
        out.append(candidates.pop(0) if candidates else None)
    return out


@dataclass(frozen=True)
class ItemRules:
    """The fields counted and the rules of one page's items, as one hashable value
    (rules that change nothing are left out, and the fields named are sorted, once
    each: they hash nothing differently)."""

    fields: tuple[str, ...] | None
    rules: tuple[tuple[str, FieldRule], ...]

    @classmethod
    def of(cls, fields: tuple[str, ...] | None, rules: FieldRules) -> ItemRules:
        """The rules of a page's ``fields`` and ``rules``.

        >>> ItemRules.of(None, {"a": FieldRule()}) == ItemRules.of(None, {})
        True
        >>> ItemRules.of(("price", "sku", "price"), {}).fields
        ('price', 'sku')
        """
        named = None if fields is None else tuple(sorted(set(fields)))  # order: no matter
        return cls(named, tuple(sorted((n, r) for n, r in rules.items() if r != _EXACT)))

    def as_dict(self) -> dict[str, FieldRule]:
        return dict(self.rules)


def describe_field_rules(rules: ItemRules) -> dict[str, Any]:
    """The JSON the store keeps of ``rules`` (meta records ``field_scheme``)."""
    return {
        "version": ITEM_HASH_VERSION,
        "fields": None if rules.fields is None else list(rules.fields),
        "rules": {
            name: {
                "ignore": [[p.pattern, p.flags] for p in rule.ignore],
                "fuzzy_bits": rule.fuzzy_bits,
                "skip": rule.skip,
                # only when set: the rules described before it existed keep their tags
                **({"code": True} if rule.code else {}),
            }
            for name, rule in rules.rules
        },
    }


def rebuild_field_rules(held: Any) -> ItemRules | None:
    """The rules a stored description gives, or None (another :data:`ITEM_HASH_VERSION`,
    damage, other code).

    >>> rules = ItemRules.of(("price",), {"price": FieldRule(ignore=(re.compile("€"),))})
    >>> rebuild_field_rules(describe_field_rules(rules)) == rules
    True
    """
    if not isinstance(held, dict) or held.get("version") != ITEM_HASH_VERSION:
        return None
    try:
        fields = held.get("fields")
        rules = {
            name: FieldRule(
                ignore=tuple(re.compile(p, flags) for p, flags in rule.get("ignore") or ()),
                fuzzy_bits=rule.get("fuzzy_bits"),
                skip=bool(rule.get("skip")),
                code=bool(rule.get("code")),
            )
            for name, rule in (held.get("rules") or {}).items()
        }
        return ItemRules.of(None if fields is None else tuple(fields), rules)
    except (TypeError, ValueError, AttributeError, re.error):
        return None


@lru_cache(maxsize=256)
def field_scheme_of(rules: ItemRules) -> int:
    """The 32-bit field scheme tag of ``rules``: a hash of their description (equal
    rules, equal tags; other rules, other tags but for a 2**-32 collision).

    >>> field_scheme_of(ItemRules.of(None, {})) == field_scheme_of(ItemRules.of(None, {}))
    True
    >>> field_scheme_of(ItemRules.of(None, {})) == field_scheme_of(ItemRules.of(("a",), {}))
    False
    """
    text = json.dumps(describe_field_rules(rules), sort_keys=True, ensure_ascii=False)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")


def field_scheme(fields: tuple[str, ...] | None, rules: FieldRules) -> int:
    """:func:`field_scheme_of` the fields and rules of a page."""
    return field_scheme_of(ItemRules.of(fields, rules))


def tag_hashes(items: Sequence[Mapping[str, int]], tag: int) -> list[dict[str, int]]:
    """Items' hashes as a record keeps them: each with the field scheme tag of the rules
    that made them under :data:`FIELD_SCHEME_KEY`.

    >>> tag_hashes([{"price": 7}], 5)
    [{'price': 7, 'fresh_scheme': 5}]
    """
    return [{**hashes, FIELD_SCHEME_KEY: tag} for hashes in items]


def untagged(items: Sequence[Mapping[str, int]]) -> tuple[list[dict[str, int]], int | None]:
    """A record's item hashes without their field scheme tag, and the tag (None for
    hashes stored before tags, or of no item).

    >>> untagged([{"price": 7, "fresh_scheme": 5}])
    ([{'price': 7}], 5)
    >>> untagged([{"price": 7}])
    ([{'price': 7}], None)
    """
    tag = items[0].get(FIELD_SCHEME_KEY) if items else None
    if tag is None:
        return [dict(hashes) for hashes in items], None
    plain = [{k: v for k, v in hashes.items() if k != FIELD_SCHEME_KEY} for hashes in items]
    return plain, tag
