"""Binary or text: real files of each type are named, text with a few odd bytes stays text."""

from __future__ import annotations

import gzip
import io
import sqlite3
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import json_documents, write_json
from toolcap.core._sniff import SNIFF_BYTES, binary_kind, binary_note, is_binary

PROPERTY = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def png() -> bytes:
    row = b"\x00" + b"\xff\x00\x00" * 4
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (len(body).to_bytes(4, "big") + kind + body
                + zlib.crc32(kind + body).to_bytes(4, "big"))
    header = (4).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00"
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(row * 4)) + chunk(b"IEND", b""))


def zipped() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.txt", "hello " * 100)
    return buffer.getvalue()


def sqlite_db(tmp_path: Path) -> bytes:
    path = tmp_path / "db.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("create table t (x text)")
        connection.execute("insert into t values ('row')")
    connection.close()
    return path.read_bytes()


@pytest.mark.parametrize(("make", "kind"), [
    (lambda _: png(), "PNG image"),
    (lambda _: b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 4, "JPEG image"),
    (lambda _: b"GIF89a\x01\x00\x01\x00\x80\x00\x00" + b"\x00" * 20 + b";", "GIF image"),
    (lambda _: b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + zlib.compress(b"stream" * 500), "PDF document"),
    (lambda _: gzip.compress(b"log line\n" * 1000), "gzip data"),
    (lambda _: zipped(), "zip archive"),
    (lambda _: b"\x00asm\x01\x00\x00\x00" + b"\x01\x04\x01\x60\x00\x00", "WebAssembly module"),
    (lambda _: b"\xcf\xfa\xed\xfe\x07\x00\x00\x01" + b"\x00" * 64, "Mach-O executable"),
    (sqlite_db, "SQLite database"),
])
def test_binary_inputs_are_named_by_their_type(make: object, kind: str, tmp_path: Path) -> None:
    data = make(tmp_path)  # type: ignore[operator]
    assert is_binary(data)
    assert binary_kind(data) == kind


def test_an_executable_on_this_machine_is_binary() -> None:
    data = Path(sys.executable).resolve().read_bytes()[:SNIFF_BYTES * 2]
    assert is_binary(data)
    assert binary_kind(data) in {"ELF executable", "Mach-O executable", "Windows executable"}


@pytest.mark.parametrize("text", [
    b"plain ASCII text\n" * 100,
    "UTF-8 text: caf\u00e9, \u6f22\u5b57, \U0001f600\n".encode() * 100,
    b"a log with colours \x1b[31mERROR\x1b[0m\r\n\ttabbed\x0c\n" * 100,
    b"text with a few invalid bytes: \xff here, \xc3\x28 there\n" * 50,
    b"caf\xe9 na\xefve r\xe9sum\xe9 (Latin-1 accents)\n" * 50,
    b"BM starts like a bitmap but is text\n",
    b"ID3 tags are text here\n",
    b"\xff\xfe a BOM-like start in otherwise text\n" * 20,
    b"",
])
def test_text_even_with_a_few_odd_bytes_stays_text(text: bytes) -> None:
    assert not is_binary(text)


def test_random_bytes_without_nul_are_still_binary() -> None:
    import random

    noise = random.Random(5).randbytes(20_000).replace(b"\x00", b"\x01")
    assert is_binary(noise) and binary_kind(noise) is None


@PROPERTY
@given(text=st.text(min_size=1, max_size=60), odd=st.binary(max_size=20),
       extra=st.integers(0, 40), rest=st.binary(max_size=200))
def test_the_first_bytes_alone_decide(text: str, odd: bytes, extra: int, rest: bytes) -> None:
    piece = text.encode("utf-8", "replace") + odd
    head = (piece * (SNIFF_BYTES // len(piece) + 1))[: SNIFF_BYTES + extra]
    assert is_binary(head + rest) == is_binary(head) == is_binary(head[:SNIFF_BYTES])


def test_the_note_names_type_size_and_reference() -> None:
    ref = "toolcap:" + "a" * 32
    assert binary_note(20_000, "PNG image", reference=ref, tried=True) == (
        f"[toolcap: binary output not shown: PNG image, 19.5 KB; full output: {ref}]")
    assert binary_note(5, None, reference=None, tried=True) == (
        "[toolcap: binary output not shown: binary data, 5 B; it could not be kept]")
    assert binary_note(5, None, reference=None, tried=False) == (
        "[toolcap: binary output not shown: binary data, 5 B]")


@PROPERTY
@given(document=json_documents, indent=st.sampled_from([None, "  ", "\t"]))
def test_a_json_document_is_never_binary(document: object, indent: str | None) -> None:
    assert not is_binary(write_json(document, indent).encode("utf-8"))


def test_del_and_real_replacement_characters_are_text() -> None:
    assert not is_binary(b'["\x7f\x7f"]')
    assert not is_binary("\ufffd\ufffd garbled once, long ago".encode())
    assert is_binary(b"\xff\xfe\xfd" * 10 + b" mostly not UTF-8")
