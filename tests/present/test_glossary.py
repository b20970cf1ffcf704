"""The glossary (report/glossary.yaml): every word's meaning on the page, and the first use of each in
a passage linked to it, never inside a link, a code span or a tag."""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import REPO
from offload_repro.core.data import DataError
from offload_repro.present import glossary


def test_the_first_use_of_each_word_links_to_its_meaning_and_no_other_use_does():
    passage = (
        '<li>Offloading at <a href="#x">remat</a> speed: <code>remat</code>, then remat twice, remat;'
        ' 4.78 pp, LHS <span title="LHS">off</span></li>'
    )
    linked = str(glossary.glossed(passage))
    links = re.findall(r'<a class="term" href="#term-([a-z-]+)">([^<]+)</a>', linked)
    assert links == [("offload", "Offloading"), ("remat", "remat"), ("pp", "pp"), ("lhs", "LHS")]
    assert '<a href="#x">remat</a>' in linked and "<code>remat</code>" in linked and 'title="LHS"' in linked
    assert "4.78 " in linked  # the number stays outside the link to the unit


def test_every_word_has_an_id_a_meaning_and_patterns_that_compile():
    terms = glossary.load_glossary()
    ids = [term["id"] for term in terms]
    assert len(ids) == len(set(ids)) and {"remat", "device-save", "offload", "lhs", "pp", "regime"} <= set(ids)


def test_a_pattern_that_does_not_compile_is_refused_naming_the_file_the_word_and_the_field(tmp_path, monkeypatch):
    data = yaml.safe_load((REPO / glossary.GLOSSARY_FILE).read_text())
    data["terms"][2]["first_use"] = ["(unclosed"]
    (tmp_path / "report").mkdir()
    (tmp_path / glossary.GLOSSARY_FILE).write_text(yaml.safe_dump(data))
    monkeypatch.setattr(glossary, "REPO_ROOT", tmp_path)
    glossary.load_glossary.cache_clear()
    try:
        with pytest.raises(DataError, match=r"report/glossary.yaml: term 3 \(id 'offload'\), field 'first_use'"):
            glossary.load_glossary()
    finally:
        glossary.load_glossary.cache_clear()


def test_a_passage_on_another_page_links_to_the_target_pages_glossary():
    linked = str(glossary.glossed("<p>The remat row.</p>", "cpu.html"))
    assert linked == '<p>The <a class="term" href="cpu.html#term-remat">remat</a> row.</p>'
