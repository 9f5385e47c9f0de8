"""Helpers shared by the tests: the real ``toolcap`` command in an isolated environment."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from toolcap.core._refs import REF, reference_for

__all__ = ["PYTHON", "REF", "TOOLCAP", "Toolcap", "reference_of", "run_writers_together",
           "token_corpora"]

TOOLCAP = str(Path(sys.executable).with_name("toolcap"))
PYTHON = sys.executable


class Toolcap:
    """Runs ``toolcap`` with its own artifact store and no configuration file in reach."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.artifacts = home / "artifacts"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCAP_")}
        self.env["TOOLCAP_ARTIFACTS"] = str(self.artifacts)
        self.config_dir = home / "user-config"  # XDG: the user file is config_dir/toolcap/
        self.env["XDG_CONFIG_HOME"] = str(self.config_dir)
        self.env["PYTHONUNBUFFERED"] = "1"

    def __call__(self, *args: str, input: bytes | None = None, timeout: float = 120,
                 env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run ``toolcap ARGS``; ``env`` adds to (or overrides) the isolated environment."""
        return subprocess.run([TOOLCAP, *args], input=input, capture_output=True,
                              env={**self.env, **(env or {})}, cwd=cwd or self.home,
                              timeout=timeout, check=False)

    def popen(self, args: Sequence[str], **options: object) -> subprocess.Popen[bytes]:
        return subprocess.Popen([TOOLCAP, *args], env=self.env, cwd=self.home,
                                **options)  # type: ignore[call-overload]

    def store(self):  # type: ignore[no-untyped-def]
        from toolcap.store import LocalStore

        return LocalStore(str(self.artifacts))


def reference_of(data: bytes) -> str:
    """The reference a one-shot put of ``data`` gives."""
    return reference_for(data)


#: Set this variable (``TOOLCAP_WRITE_CASES=1``) to rewrite golden files from what the code
#: now gives, then read the diff before committing: the one convention for tests/data.
WRITE_CASES = "TOOLCAP_WRITE_CASES"


def assert_golden(path: Path, actual: bytes) -> None:
    """``actual`` must equal the golden file ``path`` byte for byte.

    With ``TOOLCAP_WRITE_CASES`` set, the file is (re)written first, so a deliberate
    change of behaviour is one run and one reviewed diff.
    """
    if os.environ.get(WRITE_CASES):
        path.write_bytes(actual)
    expected = path.read_bytes()
    assert actual == expected, (
        f"{path.name} differs from what the code gives; if the change is deliberate, run "
        f"with {WRITE_CASES}=1 and review the diff")


TOKEN_CORPORA = Path(__file__).parent / "data" / "tokens"


def token_corpora() -> dict[str, str]:
    """The texts the token estimate is calibrated and held to: English text and code,
    CJK text, JSON (indented and compact) and base64 (MIME lines and one line)."""
    texts = {path.stem: path.read_text(encoding="utf-8")
             for path in sorted(TOKEN_CORPORA.iterdir()) if path.suffix in (".txt", ".json")}
    texts["json compact"] = json.dumps(json.loads(texts["json"]), ensure_ascii=False)
    texts["base64 one line"] = texts["base64"].replace("\n", "")
    return texts


def run_writers_together(script: str, root: Path, count: int) -> None:
    """Run ``count`` processes of ``script`` (args: root, index) released at once on stdin.

    Each must print ``done``; all are waited for (killed if a check fails first).
    """
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(root), str(who)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for who in range(count)
    ]
    try:
        for writer in writers:
            assert writer.stdin is not None
            writer.stdin.write(b"go\n")
            writer.stdin.close()
        for writer in writers:
            assert writer.stdout is not None and writer.stderr is not None
            out, err = writer.stdout.read(), writer.stderr.read()
            assert writer.wait(timeout=300) == 0, err.decode()
            assert out == b"done\n"
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()


class TcpRelay:
    """A TCP relay on 127.0.0.1 in front of ``target``: each connection is piped both
    ways, and :meth:`passes` sees each piece first (a subclass counts or drops)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def passes(self, data: bytes, answer: bool) -> bool:
        """Whether the connection goes on after ``data`` (sent by the target when
        ``answer``) is relayed. Runs before the data is sent on."""
        return True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, answer: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                going_on = self.passes(data, answer)
                sink.sendall(data)
                if not going_on:
                    break
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()
