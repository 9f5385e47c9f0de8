"""Tokens in the pure core: the ``"25k tokens"`` spelling, amounts by measure, the
pieces a tokenizer counts, and the estimate's shape (its error is tested against
the real tokenizer in tests/test_tokenizer.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _strategies import any_character, large_text
from toolcap import ConfigError
from toolcap.core._tokens import (
    BYTES_PER_TOKEN,
    check_measure,
    estimate_tokens,
    human_tokens,
    parse_amount,
    token_pieces,
    tokens_spelled,
)


@pytest.mark.parametrize(("text", "tokens"), [
    ("25k tokens", 25_000), ("25K tokens", 25_000), ("25ktokens", 25_000),
    ("1.5M tokens", 1_500_000), ("1.001k tokens", 1001), ("800 tokens", 800),
    ("1 token", 1), (" 200k  TOKENS ", 200_000), ("0 tokens", 0),
])
def test_numbers_of_tokens_are_spelled_with_k_or_m_then_tokens(text: str, tokens: int) -> None:
    assert tokens_spelled(text) == tokens


@pytest.mark.parametrize("text", [
    "25kb tokens", "25 kilotokens", "-3 tokens", "tokens", "12 tokenz", "1e5 tokens",
    "25k tokens please", "k tokens", "2.5.1k tokens", "25 GB tokens", "x" * 500 + " tokens",
])
def test_a_bad_spelling_of_tokens_is_a_one_line_error_naming_the_grammar(text: str) -> None:
    with pytest.raises(ConfigError) as error:
        tokens_spelled(text, key="trigger")
    message = str(error.value)
    assert "\n" not in message and message.startswith("trigger: invalid number of tokens")
    assert "'25k tokens'" in message and len(message) < 300


def test_what_names_no_tokens_is_not_spelled_in_tokens() -> None:
    assert tokens_spelled("32KB") is None
    assert tokens_spelled(4096) is None
    assert tokens_spelled(None) is None


def test_amounts_follow_the_measure() -> None:
    assert parse_amount("32KB", key="k") == 32 * 1024
    assert parse_amount("25k tokens", key="k") == 25_000 * BYTES_PER_TOKEN
    assert parse_amount(4096, key="k") == 4096
    assert parse_amount("25k tokens", key="k", measure="tokens") == 25_000
    assert parse_amount(4096, key="k", measure="tokens") == 4096
    assert parse_amount("4096", key="k", measure="tokens") == 4096


@pytest.mark.parametrize(("value", "fragment"), [
    ("32KB", "is in bytes, but the measure is tokens"),
    ("32 apples", "unknown unit"),
    (True, "not a size or a number of tokens"),
    (1.5, "not a size or a number of tokens"),
    (-5, "cannot be negative"),
])
def test_a_size_where_tokens_are_measured_is_refused_in_one_line(
    value: object, fragment: str
) -> None:
    with pytest.raises(ConfigError, match=fragment) as error:
        parse_amount(value, key="trigger", measure="tokens")
    assert "\n" not in str(error.value) and str(error.value).startswith("trigger: ")


def test_the_measure_is_bytes_or_tokens() -> None:
    assert check_measure("bytes") == "bytes" and check_measure("tokens") == "tokens"
    with pytest.raises(ConfigError, match=r'measure: .* write "bytes" or "tokens"'):
        check_measure("words")


@pytest.mark.parametrize(("n", "shown"), [
    (0, "0 tokens"), (999, "999 tokens"), (1000, "1.0k tokens"), (25_399, "25.3k tokens"),
    (999_999, "999.9k tokens"), (1_000_000, "1.0M tokens"), (1_250_000, "1.2M tokens"),
])
def test_numbers_of_tokens_read_like_sizes(n: int, shown: str) -> None:
    assert human_tokens(n) == shown


@settings(deadline=None)
@given(text=large_text(max_bytes=60_000), size=st.integers(2, 5000))
def test_pieces_are_the_text_in_bounded_parts(text: str, size: int) -> None:
    pieces = token_pieces(text, size)
    assert "".join(pieces) == text
    assert all(0 < len(piece) <= size for piece in pieces) or pieces == [text]


def test_pieces_end_at_a_line_break_when_there_is_one() -> None:
    pieces = token_pieces("a line of text\n" * 1000, 100)
    assert all(piece.endswith("\n") for piece in pieces)


@settings(deadline=None)
@given(text=st.text(alphabet=any_character, max_size=300))
def test_the_estimate_is_zero_only_for_no_text_and_grows_with_the_text(text: str) -> None:
    estimate = estimate_tokens(text)
    assert (estimate == 0) == (text == "")
    assert estimate_tokens(text + text) >= estimate


@pytest.mark.parametrize("unit", [" ", "\n", "a", "é", "中", "😀", "\ud800", "Ab1+"])
def test_the_estimate_takes_a_megabyte_run_of_anything(unit: str) -> None:
    text = unit * (1 << 20)
    assert 0 < estimate_tokens(text) <= 4 * len(text)
