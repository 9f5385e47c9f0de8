"""Every error toolcap raises is defined in core/_errors.py and still found where it was."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import toolcap
from toolcap.core import _errors

SOURCE = Path(toolcap.__file__).parent

# Where each error is raised, and so where callers have always imported it from.
RAISED_IN = {
    "toolcap": ["ConfigError", "StoreError"],
    "toolcap.store": ["StoreError", "InvalidReferenceError", "ArtifactNotFoundError"],
    "toolcap.core._refs": ["InvalidReferenceError"],
    "toolcap.store._records": ["ArtifactNotFoundError"],
    "toolcap.sessions._repair": ["RepairError"],
    "toolcap.core._jsonspans": ["JSONSpanError", "JsonSyntaxError"],
    "toolcap.cli._common": ["CommandError"],
    "toolcap.shell._run": ["CommandNotStarted"],
    "toolcap.proxy._io": ["WriterClosed"],
    "toolcap.proxy._contracts": ["ToolNameConflict"],
    "toolcap.proxy._upstream": ["UpstreamStartError"],
    "toolcap.proxy._sse": ["EventTooLarge"],
    "toolcap.proxy._long": ["MessageCutShort"],
}


def _is_exception_base(base: ast.expr) -> bool:
    name = ast.unparse(base).rpartition(".")[2]
    return name.endswith(("Error", "Exception", "Conflict", "Closed", "NotStarted"))


def test_no_error_class_is_defined_outside_the_errors_module() -> None:
    for path in sorted(SOURCE.rglob("*.py")):
        if path == SOURCE / "core" / "_errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(map(_is_exception_base, node.bases)):
                raise AssertionError(
                    f"{path.relative_to(SOURCE)}: class {node.name} is an error; define it in "
                    "core/_errors.py and import it from there")


def test_the_errors_module_lists_every_error_it_defines() -> None:
    defined = {name for name, value in vars(_errors).items()
               if isinstance(value, type) and issubclass(value, BaseException)}
    assert defined == set(_errors.__all__)
    for name in defined:
        assert name in (_errors.__doc__ or ""), f"{name} is not described in the module docstring"


@pytest.mark.parametrize("module", sorted(RAISED_IN))
def test_each_error_is_still_importable_from_where_it_is_raised(module: str) -> None:
    loaded = importlib.import_module(module)
    for name in RAISED_IN[module]:
        assert getattr(loaded, name) is getattr(_errors, name), f"{module}.{name}"
        assert name in loaded.__all__, f"{module} does not re-export {name}"


def test_expected_errors_keep_their_builtin_kinds() -> None:
    # Callers catch these by the builtin kind too: a bad value, a failed start, a failed store.
    assert issubclass(_errors.ConfigError, ValueError)
    assert issubclass(_errors.RepairError, ValueError)
    assert issubclass(_errors.JSONSpanError, ValueError)
    assert issubclass(_errors.CommandNotStarted, OSError)
    assert issubclass(_errors.InvalidReferenceError, _errors.StoreError)
    assert issubclass(_errors.ArtifactNotFoundError, _errors.StoreError)
