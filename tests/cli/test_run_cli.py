"""``toolcap run`` with real commands: merged output, exit status, signals, timeouts."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from helpers import PYTHON, Toolcap, reference_of
from toolcap import human_size
from toolcap.shell import _run

STATUS = re.compile(rb"\[[^\n]*exit status \d+\]\n\Z")


def script(body: str) -> list[str]:
    return [PYTHON, "-c", textwrap.dedent(body)]


def test_stdout_and_stderr_are_merged_in_arrival_order(toolcap: Toolcap) -> None:
    result = toolcap("run", "--", *script("""
        import os
        for i in range(50):
            os.write(1, b"out %d\\n" % i)
            os.write(2, b"err %d\\n" % i)
    """))
    expected = b"".join(b"out %d\nerr %d\n" % (i, i) for i in range(50))
    assert result.stdout == expected + b"[exit status 0]\n"
    assert result.returncode == 0 and result.stderr == b""


def test_exit_code_is_the_commands_and_the_last_line_says_so(toolcap: Toolcap) -> None:
    result = toolcap("run", "--", "sh", "-c", "echo failing; exit 3")
    assert result.returncode == 3
    assert result.stdout == b"failing\n[exit status 3]\n"


def test_output_without_final_newline_gets_one_before_the_status(toolcap: Toolcap) -> None:
    result = toolcap("run", "--", "printf", "no newline")
    assert result.stdout == b"no newline\n[exit status 0]\n"


def test_killed_by_a_signal_exits_128_plus_n_and_names_it(toolcap: Toolcap) -> None:
    result = toolcap("run", "--", "sh", "-c", "echo before; kill -KILL $$")
    assert result.returncode == 128 + 9
    assert result.stdout == b"before\n[killed by signal SIGKILL (9); exit status 137]\n"


def test_non_utf8_output_that_fits_passes_byte_for_byte(toolcap: Toolcap) -> None:
    result = toolcap("run", "--", *script("""
        import os
        os.write(1, b"\\xff\\xfe bytes \\xc3\\x28\\n")
    """))
    assert result.stdout == b"\xff\xfe bytes \xc3\x28\n[exit status 0]\n"


def test_large_non_utf8_output_is_bounded_keeps_the_end_and_is_spilled_exactly(
    toolcap: Toolcap,
) -> None:
    body = """
        import os
        for i in range(20000):
            os.write(1 if i % 2 else 2, b"line %05d \\xff\\n" % i)
        os.write(1, b"the error is at the end\\n")
        raise SystemExit(1)
    """
    result = toolcap("run", "--limit", "4KB", "--", *script(body))
    assert result.returncode == 1
    out = result.stdout
    assert len(out) <= 4096 and STATUS.search(out)
    text = out.decode("utf-8")  # invalid bytes replaced in what is delivered
    assert text.endswith("the error is at the end\n[exit status 1]\n")
    assert text.startswith("line 00000 \ufffd\n")
    original = b"".join(b"line %05d \xff\n" % i for i in range(20000))
    original += b"the error is at the end\n"
    reference = reference_of(original)
    assert reference in text
    assert toolcap.store().read_bytes(reference) == original  # the exact bytes
    assert result.stderr.decode() == (
        f"run: sent {human_size(len(out) - len(STATUS.search(out).group()))} "  # type: ignore[union-attr]
        f"of {human_size(len(original))} to the assistant (size_threshold)\n"
    )


def test_tools_run_table_configures_it(toolcap: Toolcap) -> None:
    (toolcap.home / "toolcap.toml").write_text('[tools.run]\nsize_threshold = "1KB"\n')
    result = toolcap("run", "--no-spill", "--", "seq", "100000")
    assert len(result.stdout) <= 1024
    assert result.stdout.endswith(b"99999\n100000\n[exit status 0]\n")
    assert not toolcap.artifacts.exists()


def test_a_missing_command_is_one_line_and_exit_127(toolcap: Toolcap) -> None:
    result = toolcap("run", "--", "no-such-command-for-toolcap")
    assert result.returncode == 127
    assert result.stdout == b""
    assert result.stderr == (b"toolcap: error: cannot run 'no-such-command-for-toolcap': "
                             b"No such file or directory\n")


def test_no_command_is_a_usage_error(toolcap: Toolcap) -> None:
    result = toolcap("run", "--")
    assert result.returncode == 2 and result.stderr.count(b"\n") == 1


def wait_dead(pids: list[int], seconds: float = 10.0) -> list[int]:
    """Wait (on pidfds, not by sleeping) until each pid has exited; return any still alive."""
    alive = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # gone and reaped
        try:
            ready, _, _ = select.select([fd], [], [], seconds)
            if not ready:
                alive.append(pid)
        finally:
            os.close(fd)
    return alive


def test_timeout_kills_the_whole_process_group_children_included(
    toolcap: Toolcap, tmp_path: Path
) -> None:
    # The command starts two children (one ignores SIGTERM) and would outlive the timeout.
    pids_file = tmp_path / "pids"
    body = f"""
        import os, signal, subprocess, sys, time
        stubborn = subprocess.Popen([sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
        plain = subprocess.Popen(["sleep", "600"])
        with open({str(pids_file)!r} + ".tmp", "w") as f:
            f.write("%d %d %d" % (os.getpid(), stubborn.pid, plain.pid))
        os.rename({str(pids_file)!r} + ".tmp", {str(pids_file)!r})
        print("started", flush=True)
        time.sleep(600)
    """
    # Long enough for a slow machine to start both children before the timeout.
    result = toolcap("run", "--timeout", "8", "--", *script(body))
    pids = [int(p) for p in pids_file.read_text().split()]
    assert wait_dead(pids) == []
    assert result.stdout.startswith(b"started\n")
    assert result.stdout.endswith(
        b"[timed out after 8s, process group killed; killed by signal SIGTERM (15); "
        b"exit status 143]\n")
    assert result.returncode == 143


def test_ctrl_c_is_forwarded_to_the_command(toolcap: Toolcap, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    body = f"""
        import signal, sys, time
        def stop(signum, frame):
            print("got SIGINT, cleaning up", flush=True)
            sys.exit(5)
        signal.signal(signal.SIGINT, stop)
        with open({str(ready)!r}, "w") as fifo:
            fifo.write("ready\\n")
        time.sleep(600)
    """
    process = toolcap.popen(["run", "--", *script(body)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    with open(ready) as fifo:  # blocks until the command has set its handler
        assert fifo.readline() == "ready\n"
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 5
    assert out == b"got SIGINT, cleaning up\n[interrupted (SIGINT forwarded); exit status 5]\n"


def test_unlimited_streams_output_as_it_comes(toolcap: Toolcap) -> None:
    result = toolcap("run", "--limit", "unlimited", "--", "seq", "200000")
    expected = b"".join(b"%d\n" % i for i in range(1, 200001))
    assert result.stdout == expected + b"[exit status 0]\n"


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_run, "KILL_GRACE_SECONDS", 0.3)
    chunks: list[bytes] = []
    body = """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("stubborn", flush=True)
        time.sleep(600)
    """
    # The timeout leaves a slow machine time to start Python and ignore SIGTERM.
    ended = _run.run_command(script(body), chunks.append, timeout=5)
    assert ended.timed_out and ended.signal == signal.SIGKILL and ended.status == 137
    assert b"".join(chunks) == b"stubborn\n"
    assert ended.line() == ("[timed out after 5s, process group killed; "
                            "killed by signal SIGKILL (9); exit status 137]")


def test_output_held_open_by_a_background_child_is_not_waited_for_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_run, "DRAIN_SECONDS", 0.2)
    chunks: list[bytes] = []
    ended = _run.run_command(["sh", "-c", "sleep 600 & echo $!; echo done"], chunks.append)
    background, done = b"".join(chunks).split()
    try:
        assert ended.status == 0 and done == b"done"
    finally:
        os.kill(int(background), signal.SIGKILL)
    assert wait_dead([int(background)]) == []


def test_a_timed_out_command_that_exits_cleanly_does_not_report_success() -> None:
    assert _run.Exit(0, timed_out=True, timeout=2).status == 124


def test_the_status_line_fits_its_reserve_however_often_ctrl_c_was_pressed() -> None:
    from toolcap.cli._run import STATUS_RESERVE

    ended = _run.Exit(-signal.SIGKILL, timed_out=False, forwarded=(signal.SIGINT,) * 50
                      + (signal.SIGTERM,) * 50)
    line = ended.line()
    assert line == ("[interrupted (SIGINT, SIGTERM forwarded); killed by signal SIGKILL (9); "
                    "exit status 137]")
    assert len(line.encode()) + 1 <= STATUS_RESERVE


def read_fifo(path: Path, process: subprocess.Popen[bytes], seconds: float = 60) -> bytes:
    """What a command writes to the FIFO ``path``, waiting on it (not by sleeping), for at
    most ``seconds``, and failing at once if ``process`` exits first."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    data = b""
    try:
        with os.fdopen(os.pidfd_open(process.pid), "rb") as exited:
            deadline = time.monotonic() + seconds
            while not data.endswith(b"\n"):
                left = deadline - time.monotonic()
                assert left > 0, "the command never wrote to the FIFO"
                ready, _, _ = select.select([fd, exited], [], [], left)
                assert exited not in ready or data, f"toolcap exited ({process.wait()})"
                if fd in ready:
                    data += os.read(fd, 4096)
    finally:
        os.close(fd)
    return data


@pytest.mark.parametrize("first", [None, signal.SIGTERM], ids=["sigkill", "sigterm-then-sigkill"])
def test_no_process_of_the_command_outlives_a_killed_toolcap(
    toolcap: Toolcap, tmp_path: Path, first: int | None
) -> None:
    # A wrapper shell that ignores SIGTERM, with a child that ignores it too (inherited).
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    body = f"trap '' TERM; sleep 600 & echo $$ $! > {ready}; wait"
    process = toolcap.popen(["run", "--", "sh", "-c", body], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    pids = [int(p) for p in read_fifo(ready, process).split()]
    if first is not None:
        process.send_signal(first)  # passed on to the group, which ignores it
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert wait_dead(pids, seconds=60) == []


def test_unlimited_still_names_binary_output_and_keeps_it(toolcap: Toolcap) -> None:
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 100
    source = toolcap.home / "image.png"
    source.write_bytes(data)
    result = toolcap("run", "--limit", "unlimited", "--", "cat", str(source))
    assert result.stdout.decode() == (
        f"[toolcap: binary output not shown: PNG image, 25.0 KB; full output: "
        f"{reference_of(data)}]\n[exit status 0]\n")
    assert result.stderr == b"run: sent 0 B of 25.0 KB to the assistant (binary)\n"
    assert toolcap.store().read_bytes(reference_of(data)) == data


def test_unlimited_text_shorter_than_the_sniff_passes_whole(toolcap: Toolcap) -> None:
    result = toolcap("run", "--limit", "unlimited", "--", "printf", "no newline \\377 end")
    assert result.stdout == b"no newline \xff end\n[exit status 0]\n" and result.stderr == b""


def test_a_command_whose_error_is_in_the_middle_of_its_output_gets_it_delivered(
    toolcap: Toolcap,
) -> None:
    (toolcap.home / "toolcap.toml").write_text('[tools.run]\nsize_threshold = "2KB"\n')
    result = toolcap("run", "--no-spill", "--", *script("""
        import sys
        for n in range(1, 3001):
            print("step", n, "fine", flush=n % 500 == 0)
            if n == 1500:
                print("error: disk quota exceeded on /srv", file=sys.stderr, flush=True)
    """))
    assert len(result.stdout) <= 2048
    assert b"\n1501| error: disk quota exceeded on /srv\n" in result.stdout
    assert b"[toolcap: 1 of 1 lines of the cut part that match keep_lines" in result.stdout
    assert result.stdout.endswith(b"step 3000 fine\n[exit status 0]\n")
