"""A marker read back from a text, and said again with another original size: what a
second cut uses to state the size of the original the first cut came from."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap import human_size
from toolcap.core._marker import DEFAULT_MARKER, Marker

REF = "toolcap:" + "ab" * 16
TEMPLATES = [
    DEFAULT_MARKER,
    "[cut: {dropped} of {original} dropped{where}]",
    "<<{kept}/{original} {reference} again {reference}>>",
    "{original}|{kept}",
]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(template=st.sampled_from(TEMPLATES), original=st.integers(1024, 2**40),
       kept=st.integers(0, 2**20), reference=st.sampled_from([None, REF]),
       before=st.text(max_size=40), after=st.text(max_size=40))
def test_a_rendering_reads_back_as_what_it_says(
    template: str, original: int, kept: int, reference: str | None, before: str, after: str
) -> None:
    marker = Marker.parse(template)
    rendered = marker.render(original=original, kept=kept, reference=reference)
    found = [seen for seen in marker.find(before + "\n" + rendered + "\n" + after)
             if seen.start == len(before) + 1]
    assert len(found) == 1
    (seen,) = found
    assert seen.end - seen.start == len(rendered)
    assert seen.original == human_size(original)
    if "{kept}" in template:
        assert seen.kept == human_size(kept)
    if "{where}" in template or "{reference}" in template:
        assert seen.reference == reference
    # Said again with the same size, it is the same text; with another, only the size moves.
    assert marker.restate(seen, human_size(original)) == rendered or "{dropped}" in template
    again = marker.restate(seen, "195.3 KB")
    assert "195.3 KB" in again
    assert len(again.encode()) <= marker.reserve(len(reference) if reference else 0)


def test_a_template_with_a_conversion_is_not_read_back() -> None:
    marker = Marker.parse("[cut {original!r}]")
    assert marker.find(marker.render(original=5000, kept=1, reference=None)) == []


def test_text_that_only_looks_like_a_marker_in_part_is_not_one() -> None:
    marker = Marker()
    assert marker.find("[toolcap: output truncated, kept lots of it]") == []
