"""A message fits when it is within every limit of its tool (of every tool, when the
tool is not known yet); the least limit of each tool is kept for a bounded set of
tool names."""

from __future__ import annotations

from toolcap import Policy
from toolcap._config import Config
from toolcap.proxy._hooks import _LEAST_LIMITS_KEPT, ProxyHooks

KB = 1024


def hooks() -> ProxyHooks:
    config = Config.from_mapping({"batch_ceiling": "100KB", "tools": {
        "*": {"size_threshold": "32KB"}, "wide": {"size_threshold": "1MB"},
        "narrow": {"size_threshold": "2KB"}}})
    return ProxyHooks(Policy(config), wire_budget=64 * KB)


def test_a_message_fits_within_the_least_limit_of_its_tool() -> None:
    fitting = hooks()
    for tool, least in (("wide", 64 * KB), ("narrow", 2 * KB), ("other", 32 * KB),
                        (None, 2 * KB)):
        for _ in range(2):  # worked out, then kept: the same answer
            assert fitting.fits(tool, least)
            assert not fitting.fits(tool, least + 1)


def test_made_up_tool_names_keep_a_bounded_number_of_limits() -> None:
    fitting = hooks()
    for number in range(3 * _LEAST_LIMITS_KEPT):
        assert fitting.fits(f"made-up-{number}", 32 * KB)
        assert len(fitting._least_limits) <= _LEAST_LIMITS_KEPT
