"""Binary or text: the one place that decides it, names the type and writes the note.

Bytes that are not text (a NUL byte early, a known binary signature, or mostly
invalid UTF-8) are never shown as replacement characters: every path (the seam's
``bytes`` parts, a stream through ``toolcap cap``/``run``) delivers one line
instead, naming the size, a type guess and the artifact. The decision looks only
at the first :data:`SNIFF_BYTES` bytes, so a stream makes it as early, and the
same, as a whole input does. Pure.
"""

from __future__ import annotations

import codecs

from ._sizes import human_size

__all__ = ["SNIFF_BYTES", "Sniffer", "binary_kind", "binary_note", "is_binary"]

#: How much of an input decides whether it is binary.
SNIFF_BYTES = 8192

# Signatures at offset 0 (or at ``offset``), most specific first. One table for every path.
_SIGNATURES: tuple[tuple[bytes, str, int], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image", 0),
    (b"\xff\xd8\xff", "JPEG image", 0),
    (b"GIF87a", "GIF image", 0),
    (b"GIF89a", "GIF image", 0),
    (b"%PDF-", "PDF document", 0),
    (b"\x1f\x8b", "gzip data", 0),
    (b"PK\x03\x04", "zip archive", 0),
    (b"PK\x05\x06", "zip archive", 0),
    (b"\x7fELF", "ELF executable", 0),
    (b"\xfe\xed\xfa\xce", "Mach-O executable", 0),
    (b"\xfe\xed\xfa\xcf", "Mach-O executable", 0),
    (b"\xce\xfa\xed\xfe", "Mach-O executable", 0),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable", 0),
    (b"\xca\xfe\xba\xbe", "Mach-O universal binary or Java class", 0),
    (b"\x00asm", "WebAssembly module", 0),
    (b"SQLite format 3\x00", "SQLite database", 0),
    (b"MZ", "Windows executable", 0),
    (b"BZh", "bzip2 data", 0),
    (b"\xfd7zXZ\x00", "xz data", 0),
    (b"(\xb5/\xfd", "zstd data", 0),
    (b"7z\xbc\xaf\x27\x1c", "7-zip archive", 0),
    (b"ustar", "tar archive", 257),
    (b"RIFF", "RIFF media (WAV, AVI or WebP)", 0),
    (b"OggS", "Ogg media", 0),
    (b"fLaC", "FLAC audio", 0),
    (b"ID3", "MP3 audio", 0),
    (b"ftyp", "MP4 or QuickTime media", 4),
    (b"\x1aE\xdf\xa3", "Matroska or WebM media", 0),
    (b"wOFF", "WOFF font", 0),
    (b"wOF2", "WOFF2 font", 0),
    (b"\x00\x01\x00\x00\x00", "TrueType font", 0),
    (b"II*\x00", "TIFF image", 0),
    (b"MM\x00*", "TIFF image", 0),
    (b"BM", "BMP image", 0),
    (b"\x00\x00\x01\x00", "ICO image", 0),
    (b"\xff\xfe", "UTF-16 text (little-endian)", 0),
    (b"\xfe\xff", "UTF-16 text (big-endian)", 0),
)
# Signatures that plain text may start with too ("BM", "ID3", "MZ"…): they name a
# type, but only the content itself makes such an input binary.
_TEXTUAL = frozenset({b"MZ", b"BZh", b"RIFF", b"OggS", b"fLaC", b"ID3", b"BM", b"wOFF", b"wOF2",
                       b"ftyp", b"ustar", b"\xff\xfe", b"\xfe\xff"})
# Control characters that text does carry: tab, line feed, vertical tab, form feed,
# carriage return, escape (terminal colours).
_TEXT_CONTROLS = frozenset("\t\n\x0b\x0c\r\x1b")
# DEL is not counted: JSON and text may carry it as it is.
_CONTROLS = frozenset(chr(c) for c in range(32)) - _TEXT_CONTROLS
# More than this share of odd characters (replaced bytes, control characters) is
# "mostly not text": a text with a few invalid bytes stays text.
_ODD_SHARE = 0.3


def binary_kind(sample: bytes | bytearray) -> str | None:
    """The type a binary signature at the start of ``sample`` names, or ``None``."""
    for signature, kind, offset in _SIGNATURES:
        if sample.startswith(signature, offset):
            return kind
    return None


def is_binary(data: bytes | bytearray) -> bool:
    """Whether ``data`` is not text, judged by its first :data:`SNIFF_BYTES` bytes.

    Binary: a NUL byte there, a binary signature, or over 30% of the decoded
    characters being replacements or control characters that text does not use.
    A character cut at the sample's end is not counted, so a stream decides from
    its first bytes exactly as the whole input decides.
    """
    sample = bytes(data[:SNIFF_BYTES])
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    for signature, _, offset in _SIGNATURES:
        if signature not in _TEXTUAL and sample.startswith(signature, offset):
            return True
    text, _ = codecs.utf_8_decode(sample, "replace", False)
    if not text:
        return False
    # Only bytes that are not UTF-8 count, not a U+FFFD the input really holds: so
    # valid UTF-8 without control characters (a JSON document) is always text.
    replaced = text.count("\ufffd") - sample.count("\ufffd".encode())
    odd = replaced + sum(text.count(c) for c in _CONTROLS)
    return odd > _ODD_SHARE * len(text)


def binary_note(size: int, kind: str | None, *, reference: str | None, tried: bool) -> str:
    """The one line delivered for a binary input: its type guess, size and artifact."""
    text = f"[toolcap: binary output not shown: {kind or 'binary data'}, {human_size(size)}"
    if reference:
        return f"{text}; full output: {reference}]"
    return f"{text}; it could not be kept]" if tried else f"{text}]"


class Sniffer:
    """A stream's first bytes, until they decide whether it is binary (as a whole input would)."""

    def __init__(self) -> None:
        self.sample = bytearray()
        #: ``None`` until decided.
        self.binary: bool | None = None

    def take(self, chunk: bytes) -> None:
        """Take the stream's next bytes; decides once :data:`SNIFF_BYTES` have come."""
        if self.binary is None:
            self.sample += chunk[: SNIFF_BYTES - len(self.sample)]
            if len(self.sample) >= SNIFF_BYTES:
                self.binary = is_binary(self.sample)

    def decide(self) -> bool:
        """The decision, made from what came if the stream ended before it was made."""
        if self.binary is None:
            self.binary = is_binary(self.sample)
        return self.binary

    def note(self, size: int, *, reference: str | None, tried: bool) -> str:
        """:func:`binary_note` for this stream of ``size`` bytes."""
        return binary_note(size, binary_kind(self.sample), reference=reference, tried=tried)
