"""Imports point down the pipeline: every import in ipuplan, at module level or inside a function, goes to a
lower layer or stays in its own package; the checker shares no solver, placement or lowering code."""

import ast
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "ipuplan"

# bottom to top; a package may import any package of a lower row, none of its own row but itself
LAYERS = (
    ("errors", "heap", "formats"),
    ("source", "plan", "ir", "cpsat"),
    ("artefacts", "layout", "numerics", "model"),
    ("target", "summary"),
    ("codelets",),
    ("reference", "catalogue"),
    ("scales", "bounds"),
    ("options", "solver"),
    ("backend",),
    ("package",),
    ("checker", "runner"),
    ("job", "report"),
    ("pipeline", "sweep"),
    ("api", "cli"),
)
RANK = {name: i for i, row in enumerate(LAYERS) for name in row}
# rule 5: the checker re-derives what it checks; it may not borrow the code that built it
NEVER = {"checker": ("solver", "cpsat", "backend")}


def _unit(parts: tuple[str, ...]) -> str:
    """The layer unit of a module path under ipuplan: its package, or the module itself at the top level;
    the command-line modules (cli, cli_build, ...) are one unit."""
    name = parts[0].removesuffix(".py")
    return "cli" if name.startswith("cli") else name


def _imports(path: Path):
    """(line, module path under ipuplan) of every ipuplan import in `path`, wherever it stands."""
    rel = path.relative_to(PKG).with_suffix("").parts
    package = rel[:-1]  # a module's package; for __init__ the package itself
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = base + tuple(node.module.split(".")) if node.module else base
                if not target:  # `from .. import x` at the top: x is the module
                    target = tuple(a.name for a in node.names[:1])
            elif node.module and node.module.split(".")[0] == "ipuplan":
                target = tuple(node.module.split(".")[1:])
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1:] for a in node.names if a.name.split(".")[0] == "ipuplan"]
            if not names or not names[0]:
                continue
            target = tuple(names[0])
        else:
            continue
        yield node.lineno, target


def _violations() -> list[str]:
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).parts
        if rel == ("__init__.py",):
            continue  # the package's lazy public surface
        src = _unit(rel)
        for line, target in _imports(path):
            if not target:
                continue
            dst = _unit(target)
            where = f"ipuplan/{'/'.join(rel)}:{line} imports {'.'.join(target)}"
            if src not in RANK or dst not in RANK:
                bad.append(f"{where}: {src if src not in RANK else dst} has no row in LAYERS")
            elif dst != src and RANK[dst] >= RANK[src]:
                bad.append(f"{where}: {dst} is not below {src}")
            elif dst in NEVER.get(src, ()):
                bad.append(f"{where}: {src} may not use {dst}")
    return bad


def test_imports_point_down_the_pipeline():
    bad = _violations()
    assert not bad, "\n".join(bad)


def test_the_rule_sees_an_import_inside_a_function(tmp_path, monkeypatch):
    """A lazy upward import is still upward: a solver module reaching for the placement is reported."""
    root = tmp_path / "ipuplan"
    (root / "solver").mkdir(parents=True)
    (root / "backend").mkdir()
    (root / "solver" / "late.py").write_text("def f():\n    from ..backend.placement import tiles\n")
    (root / "backend" / "__init__.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "PKG", root)
    assert _violations() == ["ipuplan/solver/late.py:2 imports backend.placement: backend is not below solver"]
