"""Properties of the seam over random batches: bounds hold, nothing grows or is invented."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import large_text
from toolcap import Config, Policy, ToolResponse
from toolcap.core._utf8 import sanitize
from toolcap.store import MemoryStore

PROPERTY = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

contents = st.one_of(
    large_text(max_bytes=30_000),
    st.lists(large_text(max_bytes=12_000), min_size=0, max_size=4),
    st.none(),
)
batches = st.lists(
    st.builds(ToolResponse, tool=st.sampled_from(["Read", "Grep", "Bash"]), content=contents,
              is_error=st.booleans()),
    min_size=0, max_size=6,
)
limits = st.one_of(st.none(), st.integers(1024, 20_000))


def parts_of(response: ToolResponse) -> list[str]:
    content = response.content
    if content is None:
        return []
    items = [content] if isinstance(content, (str, bytes)) else list(content)
    return [sanitize(p) if isinstance(p, str) else p.decode("utf-8", "replace") for p in items]


@PROPERTY
@given(batch=batches, threshold=limits, ceiling=limits)
def test_every_batch_is_bounded_by_threshold_and_ceiling(
    batch: list[ToolResponse], threshold: int | None, ceiling: int | None
) -> None:
    config = Config(batch_ceiling=ceiling, tools={"*": {"size_threshold": threshold}})
    results = Policy(config, sink=None, notices=False).finalize(batch)
    assert len(results) == len(batch)
    if ceiling is not None:
        assert sum(r.delivered_bytes for r in results) <= ceiling
    for response, result in zip(batch, results, strict=True):
        assert (result.parts is None) == (response.content is None)
        if result.parts is None:
            continue
        assert result.text is not None
        # What a caller sends (the joined text) is what is counted: always valid UTF-8.
        assert result.delivered_bytes == len(result.text.encode("utf-8"))
        originals = parts_of(response)
        if len(result.parts) < len(originals):
            # Collapsed: whole parts around the one part that holds the marker.
            middle = next(i for i, p in enumerate(result.parts) if p != originals[i])
            assert "[toolcap:" in result.parts[middle] or result.delivered_bytes < 200
            after = len(result.parts) - middle - 1
            assert list(result.parts[:middle]) == originals[:middle]
            assert list(result.parts[middle + 1 :]) == originals[len(originals) - after :]
            continue
        assert len(result.parts) == len(originals)
        whole = len("\n".join(originals).encode())
        assert result.delivered_bytes <= whole  # no response grows
        if threshold is not None:
            assert result.delivered_bytes <= threshold
        if result.capped_by is None:
            assert list(result.parts) == originals
            continue
        # A cut says so: a marker stands in the response, unless its whole share of
        # the budget was too small to hold one.
        assert "[toolcap:" in result.text or result.delivered_bytes < 200
        for part, original in zip(result.parts, originals, strict=True):
            if part != original:
                assert "[toolcap:" in part or part == ""


@PROPERTY
@given(batch=batches, ceiling=limits)
def test_finalize_is_deterministic_and_idempotent(
    batch: list[ToolResponse], ceiling: int | None
) -> None:
    policy = Policy(Config(batch_ceiling=ceiling), sink=None, notices=False)
    first = policy.finalize(batch)
    assert policy.finalize(batch) == first
    again = policy.finalize([result.as_response() for result in first])
    assert [r.parts for r in again] == [r.parts for r in first]
    assert all(r.capped_by is None for r in again)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(count=st.one_of(st.integers(1, 300), st.integers(30_000, 120_000)),
       part=st.sampled_from(["", "x", "line\n", "日本語", "a" * 40]),
       threshold=st.integers(1024, 64 * 1024),
       strategy=st.sampled_from(["head", "tail", "head_tail"]))
def test_any_number_of_parts_is_bounded_and_a_cut_names_its_artifact(
    count: int, part: str, threshold: int, strategy: str
) -> None:
    store = MemoryStore()
    config = Config(batch_ceiling=None,
                    tools={"*": {"size_threshold": threshold, "strategy": strategy}})
    (result,) = Policy(config, sink=store, notices=False).finalize(
        [ToolResponse("t", [part] * count)])
    assert result.text is not None and result.parts is not None
    assert len(result.text.encode("utf-8")) == result.delivered_bytes <= threshold
    whole = len("\n".join([part] * count).encode("utf-8"))
    if whole <= threshold:
        assert result.capped_by is None and len(result.parts) == count
        return
    assert result.capped_by == "size_threshold"
    assert result.artifacts and all(ref in result.text for ref in result.artifacts)
    assert "[toolcap: output truncated" in result.text
    # Nothing fabricated: every delivered part is an original part or holds the marker.
    assert all(p == part or "[toolcap:" in p for p in result.parts)
