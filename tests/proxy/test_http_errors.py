"""The one-line reasons for HTTP upstream failures: bounded, single-line, naming the URL."""

from __future__ import annotations

import pytest

pytest.importorskip("httpx2")

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.proxy._http_errors import describe_status

URL = "https://mcp.example.com/mcp"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(status=st.integers(400, 599) | st.sampled_from([401, 403, 404, 405, 500]),
       body=st.binary(max_size=4096), in_session=st.booleans())
def test_a_status_line_is_one_bounded_line_naming_the_url_whatever_the_body(
    status: int, body: bytes, in_session: bool
) -> None:
    line = describe_status(URL, status, body, in_session)
    assert line.startswith(f"{URL} answered HTTP {status}")
    assert line.isprintable()
    assert len(line) <= len(URL) + 120 + 160 + 3
