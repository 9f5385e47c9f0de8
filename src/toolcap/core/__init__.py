"""The pure core: sizes, UTF-8, the marker, cuts, allocation, JSON-byte projection.

Nothing here does I/O or imports anything of toolcap outside this package;
``tests/test_package.py`` checks it. The public names are re-exported from
:mod:`toolcap`; import them from there.
"""
