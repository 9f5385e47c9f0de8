"""Memory a big result freed is kept for the next one, and given back once big
results stop coming (glibc's allocator, set when the proxy starts)."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap
import threading

import pytest

from toolcap.proxy._heap import HeapReuse

glibc = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)


def test_memory_is_given_back_once_after_big_messages_stop_not_between_them() -> None:
    trimmed = threading.Event()
    calls: list[int] = []

    def trim(pad: int) -> int:
        calls.append(pad)
        trimmed.set()
        return 1

    reuse = HeapReuse(trim, keep_seconds=0.2)
    assert not calls  # nothing noted, nothing given back
    reuse.note()
    reuse.note()  # a burst: one give-back after it, not one each
    assert reuse.wait_trimmed(1, 30)
    assert calls == [0]
    reuse.note()
    assert reuse.wait_trimmed(2, 30)
    assert calls == [0, 0]


@glibc
def test_a_freed_big_buffer_stays_resident_for_reuse_then_is_given_back() -> None:
    # In a process of its own: the setting is the whole process's.
    script = textwrap.dedent("""
        import threading
        from toolcap.proxy._heap import keep_freed_memory

        def rss_mb():
            for line in open("/proc/self/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024

        reuse = keep_freed_memory(keep_seconds=0.2)
        assert reuse is not None
        before = rss_mb()
        faults = []

        def big():  # on a thread, as the upstream's reader does it
            import resource
            block = bytearray(200 << 20)  # more than a thread's own heap could hold
            block[::4096] = b"x" * len(block[::4096])
            del block
            start = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
            again = bytearray(200 << 20)
            again[::4096] = b"y" * len(again[::4096])
            faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - start)

        worker = threading.Thread(target=big)
        worker.start()
        worker.join()
        kept = rss_mb()
        reuse.note()
        assert reuse.wait_trimmed(1, 30)
        print(before, kept, rss_mb(), faults[0])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    before, kept, after, faults = (int(word) for word in done.stdout.split())
    assert faults < 1000  # the second 200 MB took the pages the first one freed (51,200)
    assert kept - before >= 150  # kept while big results may still come
    assert after - before < 50  # and given back after


def test_a_big_message_is_noted_when_its_handling_starts_and_when_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolcap.proxy import _heap

    class Noted:
        def __init__(self) -> None:
            self.times = 0

        def note(self) -> None:
            self.times += 1

    noted = Noted()
    monkeypatch.setattr(_heap, "_reuse", noted)
    with _heap.handling(big=False):
        pass
    assert noted.times == 0  # a small message keeps nothing
    with _heap.handling(big=True):
        assert noted.times == 1
    assert noted.times == 2  # the wait before giving memory back starts again here
