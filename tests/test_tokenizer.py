"""The real tokenizer (``toolcap[tokens]``): tiktoken's o200k_base, loaded with no
network; and the estimate held to its documented bound against it."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import token_corpora
from toolcap import _tokenizer, estimate_tokens, token_counter
from toolcap.core._tokens import ESTIMATE_BOUND
from toolcap.core._utf8 import utf8_size
from toolcap.protocols import TokenCounter

tiktoken = pytest.importorskip("tiktoken")


@pytest.fixture(scope="module")
def o200k() -> _tokenizer.O200kCounter:
    counter = _tokenizer.o200k_counter()
    assert counter is not None, "toolcap[tokens] is in the test extra: it must load"
    return counter


def test_the_encoding_is_tiktokens_own_o200k_base(
    o200k: _tokenizer.O200kCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiktoken_ext import openai_public

    path = _tokenizer.vocabulary_file()
    assert path is not None
    asked: list[tuple[str, str | None]] = []

    def from_the_package(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        asked.append((url, expected_hash))
        return _tokenizer.load_ranks(path)

    # tiktoken's definition of o200k_base, its vocabulary read from the package rather
    # than downloaded: the same split, special tokens, ranks and file hash as ours.
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", from_the_package)
    definition = openai_public.o200k_base()
    assert asked[0][0].endswith("/o200k_base.tiktoken")
    assert asked[0][1] == _tokenizer.O200K_SHA256
    assert definition["pat_str"] == o200k.encoding._pat_str
    assert definition["special_tokens"] == o200k.encoding._special_tokens
    assert definition["mergeable_ranks"] == o200k.encoding._mergeable_ranks
    assert o200k("hello world") == 2
    assert isinstance(o200k, TokenCounter) and token_counter() is o200k


def test_loading_touches_no_network_and_no_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    script = (
        "import sys\n"
        "def refuse(event, args):\n"
        "    if event.startswith('socket.') or event == 'urllib.Request':\n"
        "        raise RuntimeError('network: ' + event)\n"
        "sys.addaudithook(refuse)\n"
        "from toolcap._tokenizer import o200k_counter\n"
        "counter = o200k_counter()\n"
        "print(counter.name, counter('hello world'))\n"
    )
    unreachable = "http://127.0.0.1:9"
    env = {**os.environ, "HTTP_PROXY": unreachable, "HTTPS_PROXY": unreachable,
           "http_proxy": unreachable, "https_proxy": unreachable, "NO_PROXY": "",
           "TIKTOKEN_CACHE_DIR": str(cache), "DATA_GYM_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["o200k_base", "2"]
    assert list(cache.iterdir()) == []


def test_without_the_vocabulary_tokens_are_estimated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tokenizer, "_DATA_PACKAGE", "no_such_package_of_toolcap")
    assert _tokenizer.vocabulary_file() is None
    assert _tokenizer._load() is None
    monkeypatch.setattr(_tokenizer, "_loaded", [None])
    assert token_counter() is estimate_tokens
    assert _tokenizer.measure_of("bytes") is utf8_size
    assert _tokenizer.measure_of("tokens") is estimate_tokens
    assert _tokenizer.measure_of("tokens", len)("four") == 4


def test_a_file_that_is_not_the_vocabulary_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "o200k_base.tiktoken.gz"
    fake.write_bytes(gzip.compress(b"YQ== 0\nYg== 1\n"))
    with pytest.raises(ValueError, match="SHA-256 differs"):
        _tokenizer.load_ranks(fake)


@pytest.mark.parametrize("text", [
    " " * (1 << 20), "\n" * (1 << 20), "a" * (1 << 20), "Ab1+" * (1 << 18),
    "<|endoftext|> and <|endofprompt|>", "lone \ud800 surrogate", "",
])
def test_the_real_counter_takes_hostile_text(o200k: _tokenizer.O200kCounter, text: str) -> None:
    # A megabyte of spaces overflows tiktoken's own stack when counted in one piece.
    count = o200k(text)
    assert (count == 0) == (text == "")
    assert count <= utf8_size(text)


def test_the_estimate_is_within_its_bound_on_the_four_corpora(
    o200k: _tokenizer.O200kCounter
) -> None:
    errors: dict[str, float] = {}
    for name, text in token_corpora().items():
        real = o200k(text)
        errors[name] = (estimate_tokens(text) - real) / real
    assert set(errors) >= {"ascii", "cjk", "json", "base64"}
    assert all(abs(error) <= ESTIMATE_BOUND for error in errors.values()), errors


def test_long_texts_count_within_a_token_a_piece(o200k: _tokenizer.O200kCounter) -> None:
    texts = token_corpora()
    for text in (texts["ascii"] * 4, texts["json"] * 2, texts["cjk"] * 8):
        whole = len(o200k.encoding.encode_ordinary(text))
        pieces = -(-len(text) // (_tokenizer._PIECE // 2))
        assert abs(o200k(text) - whole) <= pieces




def test_the_corpora_are_what_their_names_say() -> None:
    texts = token_corpora()
    assert texts["ascii"].isascii() and not texts["cjk"].isascii()
    json.loads(texts["json"])
    assert set(texts["base64 one line"]) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def test_token_counts_are_remembered_by_content_within_a_bound() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text)

    measure = _tokenizer.measure_of("tokens", count)
    assert [measure("a text"), measure("a text"), measure("another")] == [6, 6, 7]
    assert counted == ["a text", "another"]
    assert _tokenizer.measure_of("tokens", count)("a text") == 6  # shared between calls
    assert counted == ["a text", "another"]
    for number in range(_tokenizer.COUNTS_KEPT):
        measure(f"text {number}")
    counted.clear()
    measure("a text")  # the oldest count has made room for the newest
    measure(f"text {_tokenizer.COUNTS_KEPT - 1}")
    assert counted == ["a text"]
    assert _tokenizer.remembering(estimate_tokens) is estimate_tokens
