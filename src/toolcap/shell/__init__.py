"""Shell-facing streams: cutting a stream of any length, spilling it, running a command.

Used by ``toolcap cap`` and ``toolcap run``; they produce exactly what
:meth:`toolcap.Policy.finalize` gives for the same bytes, in constant memory.
"""
