"""``toolcap.compact``: mask a conversation's older tool outputs, keeping each original.

The shapes are read by the adapters' own readers (the same reading as the per-turn
bound and ``toolcap repair``); which outputs to mask is decided by the pure
planner of :mod:`toolcap.core._compaction`; this module measures (as
:mod:`._compactoutput` says), stores the originals and writes the placeholders back
in the conversation's own shape. The settings are read by :mod:`._compactsettings`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from .._config import Config
from .._finalize import Policy
from .._tokenizer import counter_name, measure_of, token_counter
from ..core._compaction import SAMPLE_REFERENCE, Output, is_placeholder, plan_compaction
from ..core._errors import ConfigError
from ..core._sizes import human_size
from ..core._tokens import check_measure, human_tokens
from ..protocols import ArtifactSink, TokenCounter
from ._common import Entry, field, resolve, with_field
from ._compactoutput import content_size, original_of, placeholder_of
from ._compactsettings import compaction_settings
from ._shapes import FORMATS, detect_format, entries_of

__all__ = [
    "FORMATS",
    "CompactReport",
    "Compacted",
    "MaskedOutput",
    "NotMasked",
    "compact",
    "detect_format",
]

T = TypeVar("T")


@dataclass(frozen=True)
class MaskedOutput:
    """A tool output replaced by its placeholder; ``reference`` reads the original back.

    ``size`` and ``placeholder_size`` are in the report's measure (bytes or tokens).
    """

    where: str
    tool: str
    call_id: str | None
    size: int
    placeholder_size: int
    reference: str


@dataclass(frozen=True)
class NotMasked:
    """A tool output that was to be masked and was not, and why (its original could not
    be stored: it is left whole, so nothing is lost)."""

    where: str
    tool: str
    call_id: str | None
    reason: str


@dataclass(frozen=True)
class CompactReport:
    """What :func:`compact` did.

    ``before`` and ``after`` are the tool outputs' total measure (in ``measure``'s
    unit, as ``trigger`` and ``target``), ``outputs`` how many there are;
    ``reason`` says in words why the result is what it is; ``counter`` names
    what counted tokens (``"o200k_base"``, ``"estimate"``, the name of a given
    tokenizer), ``None`` for bytes.
    """

    format: str
    outputs: int
    before: int
    after: int
    trigger: int
    target: int
    masked: tuple[MaskedOutput, ...]
    not_masked: tuple[NotMasked, ...]
    reason: str
    measure: str = "bytes"
    counter: str | None = None

    def __str__(self) -> str:
        shown = human_size if self.measure == "bytes" else human_tokens
        by = f", counted by {self.counter}" if self.counter else ""
        line = (f"compacted {len(self.masked)} of {self.outputs} tool outputs:"
                f" {shown(self.before)} → {shown(self.after)}"
                f" (trigger {shown(self.trigger)}, target {shown(self.target)}{by};"
                f" {self.reason})")
        for failed in self.not_masked:
            line += f"\n  {failed.where} {failed.tool}: not masked ({failed.reason})"
        return line


@dataclass(frozen=True)
class Compacted(Generic[T]):
    """:func:`compact`'s result: the new conversation and the report. Unpacks as a pair."""

    messages: list[T]
    report: CompactReport

    def __iter__(self) -> Iterator[Any]:
        return iter((self.messages, self.report))


def _where(shape: str, where: Any) -> str:
    if shape == "anthropic":
        return f"message {where[0]} block {where[1]}"
    return f"message {where}"


def _replace(items: list[Any], shape: str, where: Any, placeholder: str) -> None:
    if shape == "anthropic":
        index, position = where
        blocks = list(field(items[index], "content"))
        blocks[position] = with_field(blocks[position], "content", placeholder)
        items[index] = with_field(items[index], "content", blocks)
    else:
        key = "output" if shape == "responses" else "content"
        items[where] = with_field(items[where], key, placeholder)


# -- compact ---------------------------------------------------------------------------


def compact(
    messages: Iterable[T],
    *,
    format: str | None = None,
    trigger: str | int | float | None = None,
    target: str | int | float | None = None,
    keep_recent: str | int | float | None = None,
    exclude_tools: Iterable[str] = (),
    context_window: str | int | None = None,
    policy: Policy | None = None,
    store: ArtifactSink | None = None,
    measure: str = "bytes",
    tokenizer: TokenCounter | None = None,
) -> Compacted[T]:
    """Replace the oldest tool outputs of a conversation by placeholders, keeping each original.

    Args:
        messages: OpenAI Chat Completions messages, OpenAI Responses input items,
            Anthropic Messages or LangChain messages (dicts or the SDKs' objects).
        format: ``"chat"``, ``"responses"``, ``"anthropic"`` or ``"langchain"``;
            by default told from the items' shapes.
        trigger: compact only when the tool outputs together measure more than
            this: an amount (``"512KB"``; ``"128k tokens"``; a whole number, in
            ``measure``'s unit) or a share of ``context_window`` (``0.5``).
            Default: half the window, else 512 KB (128k tokens).
        target: the low watermark the oldest outputs are masked down to. Default:
            half the trigger.
        keep_recent: the newest outputs that fit in this amount together are never
            masked (the latest turn's outputs never are). Default 64 KB (16k tokens).
        exclude_tools: tools whose outputs are never masked (a memory tool, say).
        context_window: the model's window, for ``trigger``/``target`` shares.
        policy: its artifact store keeps the originals; default: the configured one.
        store: an artifact store to use instead of the policy's.
        measure: ``"bytes"`` (UTF-8, exact) or ``"tokens"``: counted by
            ``tokenizer``, else o200k_base when ``toolcap[tokens]`` is installed,
            else an estimate. Under ``"tokens"`` every amount is in tokens (a
            size such as ``"512KB"`` is refused); under ``"bytes"`` an amount in
            tokens counts 3 bytes a token.
        tokenizer: a :class:`toolcap.protocols.TokenCounter` for ``"tokens"``.

    Returns:
        ``(messages, report)``: a new list (the input is not modified; items
        that did not change are the same objects) and a :class:`CompactReport`.
        A masked output's content becomes one text, the placeholder, naming the
        tool, its size, the reference of its original (stored before it is
        masked; an output that cannot be stored is left whole and reported),
        the start and end of its text and how to read it back. Every call keeps
        its result, ids and order unchanged. Between the trigger and the target
        nothing changes, so the prompt's prefix stays cacheable; compacting the
        result again with the same settings changes nothing.
    """
    items: list[Any] = list(messages)
    shape = detect_format(items) if format is None else format
    if shape not in FORMATS:
        raise ConfigError(f"unknown conversation format {shape!r}; use one of {', '.join(FORMATS)}",
                          key="format")
    tokens = check_measure(measure) == "tokens"
    settings = compaction_settings(trigger, target, keep_recent, context_window, measure)
    counter = token_counter(tokenizer) if tokens else None
    size_of = measure_of(measure, counter)
    excluded = frozenset(exclude_tools)
    results = [entry for entry in entries_of(items, shape) if entry.kind in ("turn", "result")]
    found: list[tuple[Entry, int | None, int]] = []  # entry, size, turn
    turn = 0
    for entry in results:
        if entry.kind == "turn":
            turn += 1
        elif entry.result is not None:
            found.append((entry, content_size(entry.result.content, size_of, tokens), turn))
    outputs = [Output(size or 0, at) for _, size, at in found]
    before = sum(output.size for output in outputs)

    def report(after: int, masked: Sequence[MaskedOutput], failed: Sequence[NotMasked],
               reason: str) -> CompactReport:
        return CompactReport(shape, len(found), before, after, settings.trigger, settings.target,
                             tuple(masked), tuple(failed), reason, measure,
                             None if counter is None else counter_name(counter))

    if before <= settings.trigger:  # the common case: measured once, nothing else done
        reason = "at or below the trigger: nothing to do"
        return Compacted(items, report(before, (), (), reason))

    outputs = []
    for entry, size, at in found:
        result = entry.result
        assert result is not None
        content = result.content
        masked = is_placeholder(content)
        skip = size is None or masked or result.tool in excluded
        placeholder = 0 if skip else size_of(
            placeholder_of(result.tool, content, SAMPLE_REFERENCE))
        outputs.append(Output(size or 0, at, placeholder, masked, skip and not masked))

    keeper = _keeper(policy, store)
    references: dict[int, str] = {}
    placeholders: dict[int, str] = {}
    failures: dict[int, str] = {}
    while True:  # planned again when an original cannot be stored, or a placeholder
        # measures otherwise with its real reference (in tokens, hex digits vary)
        plan = plan_compaction(outputs, trigger=settings.trigger, target=settings.target,
                               keep_recent=settings.keep_recent,
                               unavailable=frozenset(failures))
        again = False
        for index in plan.mask:
            if index in references:
                continue
            result = found[index][0].result
            assert result is not None
            reference, why = keeper.keep(
                original_of(result.content), tool=result.tool)
            if reference is None:
                failures[index] = why or "the store failed"
                again = True
                continue
            references[index] = reference
            placeholders[index] = placeholder_of(result.tool, result.content, reference)
            measured = size_of(placeholders[index])
            if measured != outputs[index].placeholder:
                outputs[index] = replace(outputs[index], placeholder=measured)
                again = True
        if not again:
            break

    masked_outputs: list[MaskedOutput] = []
    for index in plan.mask:
        entry = found[index][0]
        result = entry.result
        assert result is not None
        text = placeholders[index]
        _replace(items, shape, entry.where, text)
        masked_outputs.append(MaskedOutput(_where(shape, entry.where), result.tool,
                                           result.call_id, outputs[index].size,
                                           outputs[index].placeholder, references[index]))
    not_masked = []
    for index, why in sorted(failures.items()):
        entry = found[index][0]
        assert entry.result is not None
        not_masked.append(NotMasked(_where(shape, entry.where), entry.result.tool,
                                    entry.result.call_id, why))
    return Compacted(items, report(plan.after, masked_outputs, not_masked, plan.reason))


def _keeper(policy: Policy | None, store: ArtifactSink | None) -> Policy:
    """The policy whose store keeps the originals: ``store`` if given, else ``policy``'s."""
    if store is None:
        return resolve(policy)
    config = policy.config if policy is not None else Config()
    return Policy(config, sink=store, notices=False)
