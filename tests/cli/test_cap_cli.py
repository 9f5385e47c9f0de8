"""``toolcap cap`` as a real process: constant memory, exact spill, byte-exact pass-through."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from helpers import PYTHON, TOOLCAP, Toolcap, assert_golden, reference_of
from toolcap import cap_text, human_size, keep_lines
from toolcap.core._refs import format_ref

MB = 1024 * 1024
CASES = Path(__file__).parent.parent / "data" / "cap"

# Writes N MiB of numbered 1 MiB blocks to stdout, as fast as Python can.
PRODUCER = """
import sys
n = int(sys.argv[1])
write = sys.stdout.buffer.write
for i in range(n):
    write(b"%08d" % i + b"x" * (1024 * 1024 - 10) + b"\\xff\\n")
"""


def produced(n: int) -> bytes:
    """What PRODUCER writes for ``n`` (built here for small ``n`` only)."""
    return b"".join(b"%08d" % i + b"x" * (MB - 10) + b"\xff\n" for i in range(n))


# Runs a command and writes the peak RSS of its children (KB) to a file. The command
# must not be started from the test process itself: a child's peak includes the
# address space it was forked from, and pytest's is large; this wrapper's is small.
PEAK = """
import os, resource, sys
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status = os.waitpid(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def cap_from_pipe(toolcap: Toolcap, mebibytes: int, *args: str) -> tuple[int, bytes, int]:
    """Pipe the producer into ``toolcap cap``; return its status, output and peak RSS (KB)."""
    producer = subprocess.Popen([PYTHON, "-c", PRODUCER, str(mebibytes)], stdout=subprocess.PIPE)
    out_path, peak_path = toolcap.home / "out.bin", toolcap.home / "peak"
    with open(out_path, "wb") as out:
        cap = subprocess.Popen([PYTHON, "-S", "-c", PEAK, str(peak_path), TOOLCAP, "cap", *args],
                               stdin=producer.stdout, stdout=out, stderr=subprocess.DEVNULL,
                               env=toolcap.env, cwd=toolcap.home)
        assert producer.stdout is not None
        producer.stdout.close()
        status = cap.wait()
    assert producer.wait() == 0
    return status, out_path.read_bytes(), int(peak_path.read_text())


def stored_digest(toolcap: Toolcap, reference: str) -> tuple[str, int]:
    """SHA-256 and size of an artifact's stored bytes, read in chunks."""
    digest, size = hashlib.sha256(), 0
    for chunk in toolcap.store().iter_bytes(reference):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def test_200_mb_from_a_pipe_is_cut_in_constant_memory_and_spilled_exactly(
    toolcap: Toolcap,
) -> None:
    status, small_out, small_peak = cap_from_pipe(toolcap, 1)
    assert status == 0
    status, out, peak = cap_from_pipe(toolcap, 200)
    assert status == 0
    # The same small constant whatever the input: not a byte of the 200 MB is held.
    assert peak < 64 * 1024, f"peak RSS {peak} KB"
    assert peak - small_peak < 16 * 1024, f"{small_peak} KB for 1 MB, {peak} KB for 200 MB"
    text = out.decode("utf-8")
    assert len(out) <= 32 * 1024 and "of 200.0 MB" in text
    assert text.startswith("00000000xxx") and text.endswith("x\ufffd\n")
    # The artifact was written while streaming: the whole input, under the one-shot reference.
    expected = hashlib.sha256()
    for i in range(200):
        expected.update(b"%08d" % i + b"x" * (MB - 10) + b"\xff\n")
    reference = format_ref(expected.hexdigest())
    assert reference in text
    assert stored_digest(toolcap, reference) == (expected.hexdigest(), 200 * MB)
    assert reference_of(produced(1)) in small_out.decode()


def test_streamed_output_equals_cap_text_with_the_same_reference(toolcap: Toolcap) -> None:
    data = "".join(f"ligne {i} — été\n" for i in range(20_000)).encode()
    for strategy in ("head", "tail", "head_tail"):
        result = toolcap("cap", "--limit", "4KB", "--strategy", strategy, input=data)
        assert result.returncode == 0
        expected = cap_text(data, "4KB", strategy=strategy, reference=reference_of(data))
        assert result.stdout.decode() == expected.text
        assert result.stderr.decode() == (
            f"cap: sent {_human(expected.kept_bytes)} of {_human(len(data))} to the assistant "
            "(size_threshold)\n")
    assert toolcap.store().read_bytes(reference_of(data)) == data


def _human(n: int) -> str:
    from toolcap import human_size

    return human_size(n)


def test_text_that_fits_passes_through_byte_for_byte_even_if_not_utf8(
    toolcap: Toolcap,
) -> None:
    data = b"a line of text\r\n\xe2\x82 half a euro, \xff one odd byte\n" * 100
    result = toolcap("cap", input=data)
    assert result.returncode == 0 and result.stdout == data and result.stderr == b""
    assert not toolcap.artifacts.exists()  # nothing cut, nothing stored


def test_binary_that_fits_is_named_and_kept_not_garbled(toolcap: Toolcap) -> None:
    data = b"\xff\xfe\x00binary\r\n\xe2\x82 half a euro\n" * 100
    result = toolcap("cap", input=data)
    assert result.returncode == 0 and "\ufffd" not in result.stdout.decode()
    assert result.stdout.decode() == (
        "[toolcap: binary output not shown: UTF-16 text (little-endian), 2.5 KB;"
        f" full output: {reference_of(data)}]")
    assert result.stderr == b"cap: sent 0 B of 2.5 KB to the assistant (binary)\n"
    assert toolcap.store().read_bytes(reference_of(data)) == data


def test_invalid_utf8_in_a_large_input_is_replaced_and_kept_exactly(toolcap: Toolcap) -> None:
    data = (b"ok, text with a few odd bytes: \xc3\x28 \xa0\xa1 \xf0\x28\x8c\xbc\n" * 10_000
            + b"\xff")
    result = toolcap("cap", "--limit", "2KB", input=data)
    assert result.returncode == 0
    text = result.stdout.decode("utf-8")  # valid UTF-8, whatever came in
    assert "\ufffd" in text and len(result.stdout) <= 2048
    assert toolcap.store().read_bytes(reference_of(data)) == data


def test_unlimited_passes_everything_through(toolcap: Toolcap) -> None:
    data = os.urandom(3 * MB)
    result = toolcap("cap", "--limit", "unlimited", input=data)
    assert result.stdout == data and result.returncode == 0


def test_no_spill_cuts_without_a_reference_and_stores_nothing(toolcap: Toolcap) -> None:
    data = b"y\n" * 100_000
    result = toolcap("cap", "--no-spill", "--limit", "1KB", input=data)
    assert result.returncode == 0 and b"[toolcap: output truncated" in result.stdout
    assert b"full output" not in result.stdout and len(result.stdout) <= 1024
    assert not toolcap.artifacts.exists()


def test_file_argument_and_config_tool_policy(toolcap: Toolcap) -> None:
    source = toolcap.home / "big.txt"
    source.write_bytes(b"".join(b"row %d\n" % i for i in range(50_000)))
    (toolcap.home / "toolcap.toml").write_text(
        '[tools.logs]\nsize_threshold = "2KB"\nstrategy = "tail"\n')
    result = toolcap("cap", "--tool", "logs", str(source))
    assert result.returncode == 0
    assert result.stdout.startswith(b"[toolcap: output truncated")
    assert result.stdout.endswith(b"row 49999\n") and len(result.stdout) <= 2048
    assert result.stderr.startswith(b"logs: sent ")


def test_without_limit_the_batch_ceiling_also_applies(toolcap: Toolcap) -> None:
    (toolcap.home / "toolcap.toml").write_text(
        'batch_ceiling = "2KB"\n[tools."*"]\nsize_threshold = "8KB"\n')
    result = toolcap("cap", input=b"z" * 100_000)
    assert len(result.stdout) <= 2048
    assert result.stderr.endswith(b"(batch_ceiling)\n")


def test_a_store_that_cannot_be_written_still_bounds_and_says_why(toolcap: Toolcap) -> None:
    blocker = toolcap.home / "not-a-directory"
    blocker.write_text("")
    toolcap.env["TOOLCAP_ARTIFACTS"] = str(blocker / "store")
    result = toolcap("cap", "--limit", "1KB", input=b"w\n" * 10_000)
    assert result.returncode == 0 and len(result.stdout) <= 1024
    assert b"full output" not in result.stdout
    assert b"the full output could not be kept" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--limit", "12 parsecs"], b"--limit: invalid size"),
    (["--limit", "100"], b"below the 1KB minimum"),
    (["--head-ratio", "1.5"], b"head_ratio must be between 0 and 1"),
    (["no/such/file"], b"cannot read no/such/file"),
])
def test_bad_arguments_are_one_line_errors_with_status_2(
    toolcap: Toolcap, args: list[str], message: bytes
) -> None:
    result = toolcap("cap", *args, input=b"")
    assert result.returncode == 2
    assert result.stderr.count(b"\n") == 1 and message in result.stderr


CASE_NAMES = sorted(p.stem for p in CASES.glob("*.input"))


@pytest.mark.parametrize("case", CASE_NAMES)
def test_data_driven_cut_cases(toolcap: Toolcap, case: str) -> None:
    """tests/data/cap/NAME.input through `toolcap cap $(cat NAME.args)` gives NAME.expected.

    To add a case, write the ``.input`` and ``.args`` files and run this test with
    ``TOOLCAP_WRITE_CASES=1`` to produce the ``.expected`` file; read it before committing.
    """
    args = shlex.split((CASES / f"{case}.args").read_text())
    result = toolcap("cap", *args, input=(CASES / f"{case}.input").read_bytes())
    assert result.returncode == 0, result.stderr
    assert_golden(CASES / f"{case}.expected", result.stdout)


def test_every_cap_case_has_its_three_files() -> None:
    assert CASE_NAMES, "no cap cases found"
    for name in CASE_NAMES:
        assert (CASES / f"{name}.args").is_file(), name
        assert (CASES / f"{name}.expected").is_file(), name


def test_a_reader_that_goes_away_is_not_an_error(toolcap: Toolcap) -> None:
    producer = subprocess.Popen([PYTHON, "-c", PRODUCER, "20"], stdout=subprocess.PIPE)
    cap = toolcap.popen(["cap", "--limit", "unlimited"], stdin=producer.stdout,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert producer.stdout is not None and cap.stdout is not None and cap.stderr is not None
    producer.stdout.close()
    assert cap.stdout.read(10) == b"00000000xx"
    cap.stdout.close()  # like `toolcap cap big.log | head -c 10`
    assert cap.wait(timeout=60) == 0
    assert cap.stderr.read() == b""
    producer.wait()


def test_cap_json_cut_by_the_limit_and_the_wire_has_one_true_marker(toolcap: Toolcap) -> None:
    data = b"".join(b'+\t"line %d" \\ of a diff\n' % i for i in range(200_000))
    result = toolcap("cap", "--json", "--limit", "64KB", input=data)
    document = json.loads(result.stdout)
    text = document["text"]
    assert len(result.stdout) <= 64 * 1024 + 300  # the text field fits the wire budget
    assert text.count("[toolcap:") == 1
    assert f"of {human_size(len(data))}; full output: {reference_of(data)}." in text
    head, _, rest = text.partition("\n[toolcap:")
    tail = rest.partition("]\n")[2]
    assert data.startswith(head.encode() + b"\n") and data.endswith(b"\n" + tail.encode())
    assert f"kept {human_size(len(head.encode()) + len(tail.encode()))} of" in text


def test_the_error_line_from_the_middle_of_a_piped_log_is_delivered(toolcap: Toolcap) -> None:
    log = (CASES.parent / "cuts" / "keep_lines_cargo_build.in").read_bytes()
    result = toolcap("cap", "--limit", "4KB", input=log)
    assert result.returncode == 0 and len(result.stdout) <= 4096
    assert b"\n267| error[E0308]: mismatched types\n" in result.stdout
    assert result.stdout.decode() == cap_text(log, "4KB", reference=reference_of(log),
                                              keep_lines=keep_lines()).text
    (toolcap.home / "toolcap.toml").write_text('[tools."*"]\nkeep_lines = []\n')
    off = toolcap("cap", "--limit", "4KB", input=log)
    assert off.stdout.decode() == cap_text(log, "4KB", reference=reference_of(log)).text


def test_a_bad_keep_lines_pattern_is_a_one_line_usage_error(toolcap: Toolcap) -> None:
    (toolcap.home / "toolcap.toml").write_text('[tools."*"]\nkeep_lines = ["err(or"]\n')
    result = toolcap("cap", input=b"x\n")
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.count(b"\n") == 1
    assert b"keep_lines: invalid pattern 'err(or'" in result.stderr
