"""Binary named, not garbled: the seam stores bytes that are not text and delivers one line."""

from __future__ import annotations

import gzip
import io
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import large_text
from helpers import reference_of
from toolcap import Config, Policy, ToolResponse, parse_size
from toolcap.core._sniff import is_binary
from toolcap.store import MemoryStore

PROPERTY = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NOTICE = re.compile(r"^\S+: sent (.+?) of (.+?) to the assistant \((\w+)\)")


def test_a_binary_response_under_the_limit_is_stored_and_named_in_one_line() -> None:
    data = gzip.compress(b"a log line\n" * 5000)
    store, stderr = MemoryStore(), io.StringIO()
    (result,) = Policy(sink=store, stderr=stderr).finalize([ToolResponse("Read", data)])
    reference = reference_of(data)
    assert result.text == (
        f"[toolcap: binary output not shown: gzip data, {len(data)} B; full output: {reference}]")
    assert result.capped_by == "binary" and result.artifacts == (reference,)
    assert result.original_bytes == len(data) and "\ufffd" not in result.text
    assert store.read_bytes(reference) == data
    assert stderr.getvalue() == f"Read: sent 0 B of {len(data)} B to the assistant (binary)\n"


def test_twenty_thousand_random_bytes_no_longer_become_32_kb_of_replacement_characters() -> None:
    import random

    data = random.Random(1).randbytes(20_000)
    stderr = io.StringIO()
    (result,) = Policy(sink=MemoryStore(), stderr=stderr).finalize([ToolResponse("t", data)])
    assert result.delivered_bytes < 200 and "\ufffd" not in (result.text or "")
    assert stderr.getvalue() == "t: sent 0 B of 19.5 KB to the assistant (binary)\n"


def test_guard_names_binary_without_storing_and_finalizing_again_changes_nothing() -> None:
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10
    (guarded,) = Policy(sink=None).guard([ToolResponse("t", data)])
    assert guarded.text == "[toolcap: binary output not shown: PNG image, 2.5 KB]"
    (again,) = Policy(sink=None).guard([guarded.as_response()])
    assert again.text == guarded.text and again.capped_by is None


def test_a_binary_part_beside_text_parts_is_named_and_the_text_kept() -> None:
    store = MemoryStore()
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    (result,) = Policy(sink=store, notices=False).finalize(
        [ToolResponse("t", ["before", png, b"after \xff text"])])
    assert result.parts == ("before",
                            f"[toolcap: binary output not shown: PNG image, 16 B; full output: "
                            f"{reference_of(png)}]", "after \ufffd text")
    assert store.read_bytes(reference_of(png)) == png


def test_a_store_failure_says_the_binary_could_not_be_kept() -> None:
    class Full(MemoryStore):
        def put(self, data: bytes, *, tool: str | None = None) -> str:
            raise OSError(28, "No space left on device")

    (result,) = Policy(sink=Full(), notices=False).finalize([ToolResponse("t", b"\x00\x01")])
    assert result.text == (
        "[toolcap: binary output not shown: binary data, 2 B; it could not be kept]")
    assert result.not_kept == "No space left on device" and result.artifacts == ()


contents = st.one_of(
    st.binary(max_size=12_000),
    large_text(max_bytes=12_000).map(lambda t: t.encode("utf-8", "surrogatepass")),
    large_text(max_bytes=12_000),
    st.lists(st.binary(max_size=3000) | large_text(max_bytes=3000), max_size=4),
)


@PROPERTY
@given(content=contents, threshold=st.none() | st.integers(1024, 9000),
       ceiling=st.none() | st.integers(1024, 9000))
def test_no_notice_ever_says_more_was_sent_than_received(
    content: str | bytes | list[str | bytes], threshold: int | None, ceiling: int | None
) -> None:
    stderr = io.StringIO()
    config = Config(batch_ceiling=ceiling, tools={"*": {"size_threshold": threshold}})
    (result,) = Policy(config, sink=MemoryStore(), stderr=stderr).finalize(
        [ToolResponse("t", content)])
    line = stderr.getvalue()
    if result.capped_by is None:
        assert line == ""
        return
    match = NOTICE.match(line)
    assert match is not None, line
    assert parse_size(match[1].replace(" ", "")) <= parse_size(match[2].replace(" ", ""))
    if isinstance(content, bytes) and is_binary(content):
        assert result.capped_by == "binary" and result.text is not None
        assert result.text.startswith("[toolcap: binary output not shown: ")
