"""The package's shape: what it exports, what the pure core may import, what it installs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import toolcap

SOURCE = Path(toolcap.__file__).parent
PURE_CORE = ["_errors", "_sizes", "_utf8", "_marker", "_cut", "_allocate", "_json"]
# Modules whose import would mean I/O or a dependency has crept into the pure core.
IO_MODULES = {"os", "io", "sys", "pathlib", "socket", "subprocess", "logging", "shutil",
              "tempfile", "threading", "asyncio", "urllib", "http"}


def test_all_matches_what_the_package_exports() -> None:
    public = {name for name in dir(toolcap) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(toolcap, name)).__name__ == "module"}
    assert set(toolcap.__all__) == (public - modules) | {"__version__"}
    for name in toolcap.__all__:
        assert getattr(toolcap, name) is not None


def test_the_pure_core_imports_nothing_of_the_rest_and_does_no_io() -> None:
    for name in PURE_CORE:
        path = SOURCE / f"{name}.py"
        assert path.is_file(), f"the pure core lists {name}, which does not exist"
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            modules = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules = [("toolcap." if node.level else "") + node.module]
            for module in modules:
                top, _, rest = module.partition(".")
                assert top not in IO_MODULES, f"{name} imports {module}"
                if top == "toolcap":
                    assert rest in PURE_CORE, f"{name} imports {module}, outside the pure core"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called = node.func.id
                assert called not in {"open", "print", "input"}, f"{name} calls {called}"


def test_importing_toolcap_pulls_in_no_integration() -> None:
    code = (
        "import sys, toolcap; heavy = {'mcp', 'fsspec', 's3fs', 'openai', 'anthropic',"
        " 'langchain_core', 'pydantic', 'httpx', 'tqdm'};"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_package_is_typed() -> None:
    assert (SOURCE / "py.typed").is_file()
