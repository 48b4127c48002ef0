"""No module imports another package's private module (issue 14, point 3).

A module or name whose dotted path has a part starting with ``_`` (``a1x_diagnostics.parsing._lines``,
``from a1x_diagnostics.parsing import _rules``) belongs to the package above that part; only modules
inside that package may import it. Others go through its public API (its ``__init__`` or a public
module), so a package can rework its private modules without breaking another one. Every import
counts: at the top, inside functions, under ``TYPE_CHECKING``."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("a1x_tui", "a1x_supervisor", "a1x_diagnostics", "a1x_configs")


def _module_of(path: Path, root: Path) -> tuple[str, ...]:
    parts = path.relative_to(root).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def _private(part: str) -> bool:
    return part.startswith("_") and part not in ("__init__", "__main__")


def _imported(node: ast.Import | ast.ImportFrom, module: tuple[str, ...], is_package: bool) -> list[tuple[str, ...]]:
    """The dotted paths an import statement names: each module of ``import``, each ``from M import n`` as M.n."""
    if isinstance(node, ast.Import):
        return [tuple(alias.name.split(".")) for alias in node.names]
    base: tuple[str, ...] = tuple(node.module.split(".")) if node.module else ()
    if node.level:  # relative: from the importer's package, one level up per extra dot
        package = module if is_package else module[:-1]
        base = package[: len(package) - (node.level - 1)] + base
    return [(*base, alias.name) for alias in node.names if alias.name != "*"] or [base]


def violations(root: Path = REPO) -> list[str]:
    out = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = _module_of(path, root)
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                for dotted in _imported(node, module, path.name == "__init__.py"):
                    if not dotted or dotted[0] not in PACKAGES:
                        continue
                    cut = next((i for i, part in enumerate(dotted) if _private(part)), None)
                    if cut is None:
                        continue
                    owner = dotted[:cut]
                    if module[: len(owner)] != owner:
                        out.append(f"{path.relative_to(root)}:{node.lineno}: imports {'.'.join(dotted[:cut + 1])}, "
                                   f"private to {'.'.join(owner)}")
    return list(dict.fromkeys(out))  # once a statement: ``from a._b import x, y`` names ``a._b`` twice


def test_no_module_imports_another_package_s_private_module() -> None:
    found = violations()
    assert not found, "private modules imported from outside their package:\n" + "\n".join(found)


def test_the_walk_sees_each_form_of_import(tmp_path: Path) -> None:
    def write(rel: str, text: str) -> None:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    for package in PACKAGES:
        write(f"{package}/__init__.py", "")
    write("a1x_diagnostics/parsing/__init__.py", "from a1x_diagnostics.parsing._lines import iter_lines\n")
    write("a1x_diagnostics/parsing/sub/x.py", "from .._lines import segments\nfrom a1x_diagnostics import _scan\n")
    write("a1x_diagnostics/alpagym/reader.py",
          "import os\n\ndef f():\n    from a1x_diagnostics.parsing._lines import x\n"
          "    import a1x_diagnostics.detectors._store\n    from a1x_diagnostics.parsing import _rules\n"
          "    from ..parsing._lines import y\n")
    write("a1x_supervisor/pipeline.py", "from a1x_supervisor.stages._context import StageContext\n"
          "from a1x_diagnostics.parsing import iter_lines\nfrom a1x_tui.__main__ import main\n")
    write("a1x_tui/x.py", "from a1x_tui._stdout import stdout_closed\n")
    found = sorted(line.split(": imports ")[0] for line in violations(tmp_path))
    assert found == ["a1x_diagnostics/alpagym/reader.py:4", "a1x_diagnostics/alpagym/reader.py:5",
                     "a1x_diagnostics/alpagym/reader.py:6", "a1x_diagnostics/alpagym/reader.py:7",
                     "a1x_supervisor/pipeline.py:1"]
