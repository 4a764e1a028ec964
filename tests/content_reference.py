"""The page digest as :mod:`scrapy_fresh.fingerprint.content` first computed it (version 1, before
the speed work of issue 15): a plain reference that the fast path must equal.

Kept simple on purpose: one regex pass per noise step, every step compiled here from
:data:`~scrapy_fresh.fingerprint.content.NOISE_RULES`, a regex pass for lone surrogates, and the
set-based pruning of the tree around the chosen content. Used by
``tests/test_content_reference.py`` and ``bench/change_detection.py --speed``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import DOMNode, HTMLTree

from scrapy_fresh.fingerprint import content
from scrapy_fresh.fingerprint.content import NOISE_RULES, ContentRules, Digest
from scrapy_fresh.fingerprint.shingles import _decode, fingerprint_text

_SURROGATE = re.compile("[\ud800-\udfff]")
CODE_START, CODE_END = "\ufdd0", "\ufdd1"  # around the text of <pre> and <code>


def _steps(names: tuple[str, ...]) -> list[tuple[Callable[[str], str], tuple[str, ...]]]:
    steps: list[tuple[Callable[[str], str], tuple[str, ...]]] = []
    for name, rule in NOISE_RULES.items():
        if name in names:
            for step, placeholder, probes in rule.steps:
                if isinstance(step, str):
                    pattern, replacement = re.compile(step), placeholder
                    step = lambda text, p=pattern, r=replacement: p.sub(r, text)  # noqa: E731
                steps.append((step, probes))
    return steps


def _keep_only(tree: HTMLTree, nodes: list[DOMNode]) -> None:
    """From the document down: keep ``nodes`` whole, enter their ancestors, drop the rest."""
    keep = set(nodes)
    ancestors: set[DOMNode] = set()
    for node in nodes:
        parent = node.parent
        while parent is not None:
            ancestors.add(parent)
            parent = parent.parent
    stack = [tree.document]
    while stack:
        for child in list(stack.pop().child_nodes):
            if child in ancestors:
                stack.append(child)
            elif child not in keep:
                child.decompose()


def extract(text: str, rules: ContentRules) -> str:
    if any(content._is_xpath(s) for s in rules.include + rules.exclude):
        text = content._mark_xpath(text, rules)
    tree = HTMLTree.parse(text)
    document = tree.document
    if tree.body is None or document is None:
        return ""
    skip = content._css(rules, rules.exclude)
    if rules.include:
        found: list[DOMNode] = []
        for selector in content._css(rules, rules.include):
            found.extend(document.query_selector_all(selector))
        nodes = content._outermost(found)
        if not nodes:
            return ""
        _keep_only(tree, nodes)
    else:
        for landmark in ("main, [role=main]", "article"):
            nodes = content._outermost(document.query_selector_all(landmark))
            articles_text = sum(len(n.text) for n in nodes)
            if nodes and (landmark != "article" or articles_text > len(tree.body.text) / 2):
                _keep_only(tree, nodes)
                skip.append(", ".join(content.BOILERPLATE_SELECTORS))
                break
        else:
            skip.append(
                ", ".join(content.BOILERPLATE_SELECTORS + content.PAGE_FURNITURE_SELECTORS)
            )
    for node in document.query_selector_all("pre, code"):
        if node.first_child is not None:
            node.insert_before(document.create_text_node(CODE_START), node.first_child)
            node.append_child(document.create_text_node(CODE_END))
    return str(
        extract_plain_text(
            tree,
            preserve_formatting=True,
            main_content=False,
            alt_texts=True,
            form_fields=True,
            skip_elements=skip,
        )
    )


def _denoise(text: str, rules: ContentRules) -> str:
    steps = _steps(rules.noise)
    lower = text.lower() if steps else ""
    for step, probes in steps:
        if not probes or any(p in (text if p[0] == "{" else lower) for p in probes):
            text = step(text)
    return text


def normalize(text: str, rules: ContentRules) -> str:
    for pattern in rules.ignore:
        text = re.compile(pattern, re.MULTILINE).sub("", text)
    # code (between the marks, at any depth) gets no noise rule; its lines keep their indent
    pieces: list[tuple[bool, str]] = [(False, "")]
    depth = 0
    for char in text:
        if char == CODE_START:
            depth += 1
        elif char == CODE_END:
            depth -= 1
        elif (depth > 0) == pieces[-1][0]:
            pieces[-1] = (pieces[-1][0], pieces[-1][1] + char)
        else:
            pieces.append((depth > 0, char))
    out = []
    for is_code, piece in pieces:
        if not is_code:
            out.append(" ".join(_denoise(piece, rules).split()))
        elif "\n" in piece:
            out.append("\n".join(line.rstrip() for line in piece.split("\n") if line.strip()))
        else:
            out.append(" ".join(piece.split()))
    return " ".join(part for part in out if part)


def content_text(
    html: str | bytes, encoding: str | None = None, rules: ContentRules = content.DEFAULT_RULES
) -> str:
    text = _decode(html, encoding)
    text = _SURROGATE.sub("\ufffd", text.replace("\x00", "\ufffd"))
    text = text.replace(CODE_START, "").replace(CODE_END, "")
    return normalize(extract(content.separate_xml(text), rules), rules)


def digest(
    html: str | bytes, encoding: str | None = None, rules: ContentRules = content.DEFAULT_RULES
) -> Digest:
    text = content_text(html, encoding, rules)
    hashed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=6).digest(), "big")
    return Digest(rules.scheme << content.HASH_BITS | hashed, fingerprint_text(text))
