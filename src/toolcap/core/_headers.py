"""What an HTTP header sent upstream may hold: one rule for ``--header``,
``--header-env`` and ``toolcap wrap``.

A name is an RFC 9110 token; a value is visible ASCII, spaces and tabs. Anything
else would be sent as a malformed request (the server drops the connection, which
reads as a network failure) or could not be encoded at all.
"""

from __future__ import annotations

import string

__all__ = ["header_problem"]

_TOKEN = frozenset(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~")


def header_problem(name: str, value: str) -> str | None:
    """Why no HTTP request can carry the header ``name: value``, or None.

    The reason never quotes the value: it may be a secret.
    """
    if not name:
        return "its name is empty"
    if not _TOKEN.issuperset(name):
        return (f"its name {name!r} holds a character no header name may "
                "(letters, digits and !#$%&'*+-.^_`|~ only)")
    if not all(char == "\t" or " " <= char <= "~" for char in value):
        return (f"the value of {name} holds a character no header value may "
                "(printable ASCII, spaces and tabs only)")
    return None
