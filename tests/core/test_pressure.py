"""Context pressure: the batch ceiling of a turn shrinks as the context window fills."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap import Config, ConfigError, Policy, ToolResponse
from toolcap.core._pressure import (
    BYTES_PER_TOKEN,
    parse_window,
    pressure_ceiling,
    reported_tokens,
)

KB = 1024


@settings(deadline=None)
@given(ceiling=st.one_of(st.none(), st.integers(KB, 10**7)), window=st.integers(0, 10**8),
       reserve=st.integers(0, 10**6), used=st.one_of(st.none(), st.integers(0, 10**8)))
def test_the_ceiling_is_the_lesser_of_the_batch_ceiling_and_half_what_is_left(
    ceiling: int | None, window: int, reserve: int, used: int | None
) -> None:
    got = pressure_ceiling(ceiling, window, reserve, used)
    assert got is not None and got >= KB
    if ceiling is not None:
        assert got <= ceiling
    left = window - reserve - (used or 0)
    assert got <= max(KB, left // 2)
    # More used never loosens the bound.
    assert (pressure_ceiling(ceiling, window, reserve, (used or 0) + 1000) or 0) <= got


def test_without_a_window_the_ceiling_is_unchanged() -> None:
    assert pressure_ceiling(256 * KB, None, 32 * KB, 10**9) == 256 * KB


def test_windows_are_written_as_sizes_or_tokens() -> None:
    assert parse_window("800KB", key="context_window") == 800 * KB
    assert parse_window("200k tokens", key="context_window") == 200_000 * BYTES_PER_TOKEN
    assert parse_window("1M tokens", key="context_window") == 10**6 * BYTES_PER_TOKEN
    assert Config.from_mapping({"context_window": "128k tokens", "reserve": "8k tokens"}
                               ).reserve == 8000 * BYTES_PER_TOKEN
    with pytest.raises(ConfigError, match="context_window"):
        Config.from_mapping({"context_window": "lots"})
    with pytest.raises(ConfigError, match="reserve"):
        Config.from_mapping({"reserve": True})


def test_reported_usage_is_read_from_each_api() -> None:
    assert reported_tokens({"prompt_tokens": 900, "completion_tokens": 5}) == 900
    assert reported_tokens({"input_tokens": 100, "cache_read_input_tokens": 800,
                            "cache_creation_input_tokens": 50, "output_tokens": 7}) == 950
    assert reported_tokens(1234) == 1234
    assert reported_tokens({"total_tokens": 3}) is None


def test_the_seam_tightens_as_the_window_fills() -> None:
    config = Config(context_window=400 * KB, reserve=0)
    policy = Policy(config, sink=None, notices=False)
    batch = [ToolResponse("Read", "x" * 30 * KB), ToolResponse("Grep", "y" * 30 * KB)]
    roomy = policy.finalize(batch, context_used=0)
    full = policy.finalize(batch, context_used=360 * KB)
    assert all(r.capped_by is None for r in roomy)
    assert sum(r.delivered_bytes for r in full) <= 20 * KB
    assert {r.capped_by for r in full} == {"batch_ceiling"}


# -- in tokens ---------------------------------------------------------------------------


@settings(deadline=None)
@given(window=st.integers(0, 10**7), used=st.integers(0, 10**7),
       bytes_per_token=st.floats(0.5, 8.0))
def test_a_share_in_tokens_becomes_bytes_at_the_batch_rate(
    window: int, used: int, bytes_per_token: float
) -> None:
    got = pressure_ceiling(None, window, 0, used, bytes_per_token)
    assert got == max(KB, int(max(0, window - used) * 0.5 * bytes_per_token))


def test_under_tokens_the_window_and_reserve_are_tokens() -> None:
    config = Config.from_mapping({"context_window": "128k tokens", "reserve": "8k tokens",
                                  "measure": "tokens"})  # measure last: read first all the same
    assert (config.measure, config.context_window, config.reserve) == ("tokens", 128_000, 8000)
    assert Config(measure="tokens", context_window=50_000).context_window == 50_000
    assert Config(measure="tokens").reserve == 32 * KB  # 32,768 tokens
    assert Config().measure == "bytes"


@pytest.mark.parametrize(("table", "fragment"), [
    ({"measure": "tokens", "context_window": "800KB"},
     "context_window: '800KB' is in bytes, but the measure is tokens"),
    ({"measure": "tokens", "reserve": "8KB"}, "reserve: '8KB' is in bytes"),
    ({"measure": "words"}, 'measure: \'words\' is not a measure: write "bytes" or "tokens"'),
    ({"context_window": "25kb tokens"}, "context_window: invalid number of tokens"),
])
def test_bad_token_settings_are_one_line_errors_naming_the_file(
    table: dict[str, object], fragment: str
) -> None:
    with pytest.raises(ConfigError) as error:
        Config.from_mapping(table, source="toolcap.toml")
    assert fragment in str(error.value) and "toolcap.toml" in str(error.value)
    assert "\n" not in str(error.value)


def test_the_seam_holds_a_turn_to_its_share_of_tokens_whatever_the_text() -> None:
    from toolcap import token_counter

    count = token_counter()
    base64_like = "".join(f"{n * 2654435761 % 4294967296:08x}Zq+/" for n in range(4000))
    batch = [ToolResponse("Read", base64_like[:30 * KB]),
             ToolResponse("Grep", base64_like[-30 * KB:])]
    tools = {"*": {"size_threshold": "unlimited"}}
    in_tokens = Policy(Config(measure="tokens", context_window="40k tokens", reserve=0,
                              batch_ceiling="unlimited", tools=tools), sink=None, notices=False)
    in_bytes = Policy(Config(context_window="40k tokens", reserve=0, batch_ceiling="unlimited",
                             tools=tools), sink=None, notices=False)
    share = 20_000
    assert sum(count(r.content) for r in batch) > 1.5 * share  # the batch is over its share

    def delivered(policy: Policy) -> int:
        return sum(count(r.text or "") for r in policy.finalize(batch, context_used=0))

    # Bytes count a token as 3 bytes: this dense text gets far more than its share through;
    # counted in tokens, the turn keeps to its share (within what the markers add).
    assert delivered(in_bytes) > 1.2 * share
    assert 0.8 * share <= delivered(in_tokens) <= 1.05 * share
