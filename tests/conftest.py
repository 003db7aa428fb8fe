"""Shared fixtures: repository paths, a CLI runner that calls ipuplan in-process, the default job built once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
TARGET = ROOT / "targets" / "c600.yaml"


def pytest_configure(config):
    """The suite's process keeps freed memory and uses small pages, as the command line does (ipuplan/heap.py)."""
    from ipuplan import heap
    heap.apply()


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    """With `-n 2` (the README's command; `--dist loadgroup` is in pyproject's addopts) a module's tests run in one
    worker process, so its module-scoped fixtures are built once. The modules with a test that reads the SigLIP b2
    build (their other tests too, e.g. one asking for it through `getfixturevalue`) share one group, so the suite
    builds it once, and that group starts first, so that the other worker's modules fill the time beside it."""
    def module(item):
        return item.nodeid.split("::")[0]

    shared = {module(i) for i in items if "siglip_b2" in getattr(i, "fixturenames", ())}
    group = {i.nodeid: "siglip-b2" if module(i) in shared else module(i) for i in items}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group[item.nodeid]))
    items.sort(key=lambda i: group[i.nodeid] != "siglip-b2")


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run `ipuplan ARGS...` in-process (from the repository root); return exit code, stdout, stderr."""
    from ipuplan.cli import main

    def run(*args: str) -> CliResult:
        monkeypatch.chdir(ROOT)
        monkeypatch.setattr(sys, "argv", ["ipuplan", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        cap = capsys.readouterr()
        return CliResult(code, cap.out, cap.err)

    return run


@pytest.fixture(scope="session")
def siglip_b2(tmp_path_factory):
    """The default job at full size, built once per session (its solve is the suite's longest): `ipuplan build
    models/siglip.yaml --batch 2`. Returns the exit code, the output and the directory; tests only read it."""
    import contextlib
    import io

    from tests.tests_helpers import run_main
    d = tmp_path_factory.mktemp("siglip-b2")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_main("build", MODELS / "siglip.yaml", "--batch", "2", "-o", d)
    return CliResult(code, out.getvalue(), err.getvalue()), d
