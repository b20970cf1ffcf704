"""The words of the pages (report/glossary.yaml): their meanings, shown in every target page's
glossary, and a filter that links the first use of each in a passage (each section of a page: the
first screen, the chip's box, the verdict table, the chip's section, the tables, and each of the
appendix's sections, linked to the target page's glossary) to its meaning. A use inside a link, a
code span or a tag's attributes is never linked."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from markupsafe import Markup

from offload_repro.core.data import DataError, validate
from offload_repro.core.files import REPO_ROOT, read_yaml

GLOSSARY_FILE = "report/glossary.yaml"
READS = ("report/glossary.yaml",)  # read by a fixed path: the rules take it as an input
# a tag, or a whole <a>, <code> or <summary> element: passed over as it is
SKIPPED = re.compile(r"<(a|code|summary)\b[^>]*>.*?</\1>|<[^>]+>", re.S)


@cache
def load_glossary() -> list[dict[str, Any]]:
    terms = validate(read_yaml(REPO_ROOT / GLOSSARY_FILE), "glossary", GLOSSARY_FILE)["terms"]
    for number, term in enumerate(terms, 1):
        for pattern in term["first_use"]:
            try:
                re.compile(pattern)
            except re.error as err:
                where = f"{GLOSSARY_FILE}: term {number} (id '{term['id']}'), field 'first_use'"
                raise DataError(f"{where}: '{pattern}' is not a regular expression ({err})") from None
    return terms


def glossed(html: str, meanings_on: str = "") -> Markup:
    """`html` with the first use of each glossary word in its text linked to the word's meaning, on
    this page or on the page `meanings_on` (the appendix links to its target page's glossary)."""
    html = str(html)  # plain text from here: a Markup piece would escape the links added to it
    pending = [(term["id"], [re.compile(p, re.IGNORECASE) for p in term["first_use"]]) for term in load_glossary()]
    pieces, last = [], 0
    for skipped in SKIPPED.finditer(html):
        pieces += [("text", html[last : skipped.start()]), ("markup", skipped.group(0))]
        last = skipped.end()
    pieces.append(("text", html[last:]))
    out = []
    for kind, piece in pieces:
        if kind == "text":
            piece = _linked(piece, pending, meanings_on)
        out.append(piece)
    return Markup("".join(out))


def _linked(text: str, pending: list[tuple[str, list[re.Pattern[str]]]], meanings_on: str = "") -> str:
    """`text` with the first use of each pending word linked (the words linked leave `pending`); uses
    that overlap an earlier one are left for later text."""
    found = []
    for term_id, patterns in pending:
        first = min((m for p in patterns if (m := p.search(text))), key=lambda m: m.start(), default=None)
        if first is not None:
            found.append((first.start(), first.end(), term_id))
    pieces, last = [], 0
    for start, end, term_id in sorted(found):
        if start < last:
            continue
        pieces += [text[last:start], f'<a class="term" href="{meanings_on}#term-{term_id}">{text[start:end]}</a>']
        last = end
        pending[:] = [entry for entry in pending if entry[0] != term_id]
    return "".join(pieces) + text[last:]
