"""Sizes: the grammar and the human_size examples of the README, verbatim."""

from __future__ import annotations

import pytest

from toolcap import ConfigError, human_size, parse_limit, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16384", 16384),
        (16384, 16384),
        ("0", 0),
        ("512B", 512),
        ("512 b", 512),
        ("1K", 1024),
        ("1kb", 1024),
        ("1KiB", 1024),
        ("32KB", 32768),
        ("1M", 1048576),
        ("1MB", 1048576),
        ("1mib", 1048576),
        ("1.5MB", 1572864),
        ("1G", 1073741824),
        ("2 GiB", 2147483648),
        ("1.0000001KB", 1024),
        ("0.5KB", 512),
        (" 8KB ", 8192),
    ],
)
def test_parse_size_accepts_the_documented_grammar(text: str | int, expected: int) -> None:
    assert parse_size(text) == expected


def test_parse_size_rounds_decimals_down() -> None:
    assert parse_size("1.9999B") == 1
    assert parse_size("1.5KB") == 1536
    assert parse_size("0.1KB") == 102


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("12XB", "unknown unit 'XB'"),
        ("-1KB", "negative"),
        ("KB", "invalid size 'KB'"),
        ("", "invalid size ''"),
        ("1.2.3KB", "invalid size"),
        ("99999999999999999999999GB", "too large"),
        ("1e9", "invalid size '1e9'"),
    ],
)
def test_parse_size_rejects_with_the_value_named(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        parse_size(text)


def test_parse_size_rejects_negative_and_non_numbers() -> None:
    with pytest.raises(ConfigError, match="negative"):
        parse_size(-5)
    with pytest.raises(ConfigError, match="expected a size"):
        parse_size(True)
    with pytest.raises(ConfigError, match="expected a size"):
        parse_size(1.5)  # type: ignore[arg-type]


def test_config_error_is_a_value_error_naming_key_and_file() -> None:
    with pytest.raises(ValueError) as caught:
        parse_size("10 parsecs", key="tools.Read.size_threshold", file="toolcap.toml")
    assert str(caught.value).startswith("toolcap.toml: tools.Read.size_threshold: ")
    assert "'10 parsecs'" in str(caught.value)


@pytest.mark.parametrize("value", ["unlimited", "UNLIMITED", " Unlimited ", None])
def test_parse_limit_reads_unlimited_as_none(value: str | None) -> None:
    assert parse_limit(value) is None


def test_parse_limit_refuses_zero_with_a_hint_toward_unlimited() -> None:
    with pytest.raises(ConfigError, match='write "unlimited" for no limit'):
        parse_limit(0, key="size_threshold")
    with pytest.raises(ConfigError, match='"unlimited"'):
        parse_limit("0KB", key="size_threshold")


@pytest.mark.parametrize("value", ["512B", 1023, "0.5KB", "1000"])
def test_parse_limit_refuses_anything_below_one_kilobyte(value: str | int) -> None:
    with pytest.raises(ConfigError, match="below the 1KB minimum"):
        parse_limit(value, key="size_threshold")


def test_parse_limit_accepts_one_kilobyte_and_up() -> None:
    assert parse_limit("1KB") == 1024
    assert parse_limit(1024) == 1024
    assert parse_limit("256KB") == 262144


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "0 B"),
        (512, "512 B"),
        (1023, "1023 B"),
        (1024, "1.0 KB"),
        (1536, "1.5 KB"),
        (637952, "623.0 KB"),
        (1048575, "1023.9 KB"),
        (1048576, "1.0 MB"),
        (3250586, "3.1 MB"),
        (10900000, "10.3 MB"),
        (1073741824, "1.0 GB"),
        (5 * 1073741824 + 1073741823, "5.9 GB"),
    ],
)
def test_human_size_matches_readme_examples(n: int, expected: str) -> None:
    assert human_size(n) == expected


def test_human_size_truncates_tenths_instead_of_rounding() -> None:
    assert human_size(1024 + 1023) == "1.9 KB"
    assert human_size(2 * 1048576 - 1) == "1.9 MB"


@pytest.mark.parametrize("value", [1536.0, 1024.5, float("nan"), True, "1536", None])
def test_human_size_refuses_what_is_not_a_whole_number_of_bytes(value: object) -> None:
    # 1536.0 used to print as '1.0.5.0 KB'.
    with pytest.raises(TypeError, match="whole number of bytes"):
        human_size(value)  # type: ignore[arg-type]
