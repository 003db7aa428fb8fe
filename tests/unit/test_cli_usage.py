"""The command line as a newcomer meets it: every usage error is one line on stderr and exit 2, never a
traceback; output paths are refused before any work; --version, --json, a broken pipe and Ctrl-C behave."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.conftest import MODELS, ROOT

SMALL = ROOT / "targets" / "small64.yaml"
VS = MODELS / "vit-small.yaml"


def _one_line(r) -> None:
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert r.code == 2, (r.code, r.out, r.err)
    assert len(lines) == 1 and "Traceback" not in r.err + r.out, r.err


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """A vit-small b2 build on 64 tiles (plan, placement, package) and matching pixels."""
    from tests.tests_helpers import run_main
    d = tmp_path_factory.mktemp("usage")
    assert run_main("build", VS, "--target", SMALL, "--batch", "2", "-o", d / "out") == 0
    np.save(d / "x.npy", np.zeros((2, 3, 28, 28), np.float32))
    return d


@pytest.mark.parametrize("args", [
    ["frobnicate"],
    ["show", str(VS), "--bogus"],
    ["solve"],
    ["show", str(VS), "--batch", "abc"],
    ["solve", str(VS), "--time-limit", "nan"],
    ["solve", str(VS), "--time-limit", "inf"],
    ["solve", str(VS), "--effort", "nan"],
    ["solve", str(VS), "--seed", "-1"],
    ["solve", str(VS), "--catalogue", "wide"],
    ["sweep", str(VS), "--layers", "0,full"],
    ["explain", ".", "--what-if", "memory", "--time-limit", "0"],
    ["explain", ".", "--what-if", "memory", "--time-limit", "nan"],
])
def test_usage_errors_are_one_line_exit_2(cli, args):
    _one_line(cli(*args))


def test_bare_command_prints_help_exit_2(cli):
    r = cli()
    assert r.code == 2 and "Usage" in r.out + r.err and "Traceback" not in r.err


def test_version(cli):
    import ipuplan
    r = cli("--version")
    assert r.code == 0 and ipuplan.__version__ in r.out


def test_run_without_pixels(cli, solved):
    _one_line(cli("run", solved / "out" / "model.ipupkg"))


@pytest.mark.parametrize("flag", ["-o", "--profile"])
def test_run_output_paths_checked_first(cli, solved, tmp_path, flag):
    args = ["run", solved / "out" / "model.ipupkg", "--pixels", solved / "x.npy"]
    _one_line(cli(*args, flag, tmp_path))  # a directory
    if flag == "-o":
        _one_line(cli(*args, "-o", tmp_path / "o2.txt"))  # numpy would write o2.txt.npy
        assert not (tmp_path / "o2.txt").exists() and not (tmp_path / "o2.txt.npy").exists()


def test_run_seed_and_pixel_dtype(cli, solved, tmp_path):
    pkg = solved / "out" / "model.ipupkg"
    _one_line(cli("run", pkg, "--pixels", solved / "x.npy", "--seed", "-1"))
    for dt in (np.float64, np.float16):
        np.save(tmp_path / "p.npy", np.zeros((2, 3, 28, 28), dt))
        _one_line(cli("run", pkg, "--pixels", tmp_path / "p.npy"))


def test_solve_output_that_is_a_file_is_refused_before_solving(cli, tmp_path):
    f = tmp_path / "plan"
    f.write_text("keep")
    t0 = time.perf_counter()
    r = cli("solve", VS, "--target", SMALL, "--batch", "2", "-o", f)
    _one_line(r)
    assert f.read_text() == "keep" and time.perf_counter() - t0 < 10


@pytest.mark.parametrize("cmd", [["solve", str(VS), "--target", str(SMALL)], ["sweep", str(VS), "--batch", "1"]])
def test_unwritable_or_file_outputs(cli, tmp_path, cmd):
    _one_line(cli(*cmd, "-o", "/proc/nope/out"))
    f = tmp_path / "file"
    f.write_text("x")
    _one_line(cli(*cmd, "-o", f))


def test_report_into_a_directory_is_refused(cli, solved, tmp_path):
    _one_line(cli("report", solved / "out", "-o", tmp_path))


def test_explain_on_a_truncated_plan(cli, solved, tmp_path):
    import shutil
    d = tmp_path / "cut"
    shutil.copytree(solved / "out", d)
    raw = (d / "plan.json").read_bytes()
    (d / "plan.json").write_bytes(raw[: len(raw) // 2])
    _one_line(cli("explain", d))


def test_json_on_check_and_run(cli, solved):
    r = cli("check", solved / "out" / "model.ipupkg", "--json")
    assert r.code == 0 and json.loads(r.out)["ok"] is True
    r = cli("run", solved / "out" / "model.ipupkg", "--pixels", solved / "x.npy", "--json")
    assert r.code == 0 and "output" in json.loads(r.out)


def test_a_file_of_the_solve_directory_names_the_directory(cli, solved):
    """`check out/plan.json` and `explain out/plan.json` read `out`, as `check out` does; a JSON file that a
    solve does not write is still refused in one line."""
    for name in ("plan.json", "placement.json"):
        r = cli("check", solved / "out" / name)
        assert r.code == 0 and "CHECK PASSED" in r.out, (name, r.out, r.err)
        r = cli("explain", solved / "out" / name, "--json")
        assert r.code == 0 and json.loads(r.out)["verdict"] == "FIT", (name, r.out, r.err)
    stray = solved / "stray.json"
    stray.write_text("{}")
    _one_line(cli("check", stray))


def test_copied_solve_directory_checks_and_explains_elsewhere(solved, tmp_path):
    """A solve directory carries its inputs: copied elsewhere, `check` and `explain` run from an unrelated
    directory without the original model file."""
    import shutil
    d = tmp_path / "copy"
    shutil.copytree(solved / "out", d)
    for cmd in (["check", str(d)], ["explain", str(d)]):
        r = subprocess.run([sys.executable, "-m", "ipuplan.cli", *cmd], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr


def test_broken_pipe_is_quiet_and_keeps_the_verdict_code(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "ipuplan.cli", "solve", str(VS), "--target", str(SMALL), "--batch", "2",
                          "-o", str(tmp_path / "o")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    p.stdout.readline()
    p.stdout.close()  # as `| head -1` does
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0 and "Traceback" not in err and "Broken pipe" not in err


def test_ctrl_c_is_interrupted_and_keeps_the_previous_plan(tmp_path):
    out = tmp_path / "o"
    subprocess.run([sys.executable, "-m", "ipuplan.cli", "solve", str(VS), "--target", str(SMALL), "--batch", "2",
                    "-o", str(out)], check=True, capture_output=True, cwd=ROOT)
    before = (out / "plan.json").read_bytes()
    p = subprocess.Popen([sys.executable, "-m", "ipuplan.cli", "solve", str(MODELS / "siglip.yaml"), "--batch", "2",
                          "--layers", "1", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until the search runs: the model's line (stderr) comes just before it
        line = p.stderr.readline().decode()
        if "model:" in line or not line:
            break
    time.sleep(3)  # the search takes ~40 s to its first plan; this lands inside it
    p.send_signal(signal.SIGINT)
    rest = p.communicate(timeout=120)
    assert p.returncode == 130, rest
    assert "interrupted" in (rest[0] + rest[1]).decode() and "Traceback" not in rest[1].decode()
    assert (out / "plan.json").read_bytes() == before
    assert not list(out.glob(".ipuplan-staging-*"))


def test_progress_is_periodic_lines_when_not_a_terminal(capsys, monkeypatch):
    """Off a terminal, progress is a line at most every `every` seconds and one at the end, with the figures."""
    from rich.console import Console

    from ipuplan import cli_common
    monkeypatch.setattr(cli_common, "err", Console(stderr=True, force_terminal=False))
    import itertools
    clock = itertools.count(0.0, 0.4)  # every reading of the clock 0.4 s later
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    with cli_common.progress("run", every=1.0) as update:
        for i in range(1, 5):
            update(f"superstep {i}", i, 4)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("run: ")]
    assert len(lines) >= 2 and "4/4 (100%)" in lines[-1] and "elapsed" in lines[0]


def test_solve_prints_the_final_bound(cli, tmp_path):
    r = cli("solve", VS, "--target", SMALL, "--batch", "2", "-o", tmp_path / "o")
    doc = json.loads((tmp_path / "o" / "plan.json").read_text())
    bound = f"{doc['cycles']['best_bound']:,}"
    assert r.code == 0 and f"no plan is faster than {bound}" in r.out


def test_what_if_memory_on_an_exchange_limited_case_says_so(cli, tmp_path):
    out = tmp_path / "tb"
    assert cli("solve", VS, "--batch", "2", "--target", SMALL, "--exchange-table-budget", "64", "-o", out).code == 1
    r = cli("explain", out, "--what-if", "memory", "--json")
    w = json.loads(r.out)["what_if"]
    assert w.get("limited_by") == "exchange" and "more SRAM per tile alone does not make it fit" in w["note"]
    assert "confirmed" not in json.dumps(w)


def test_json_on_reference_and_report(cli, solved, tmp_path):
    r = cli("reference", VS, "--pixels", solved / "x.npy", "-o", tmp_path / "y.npy", "--json")
    assert r.code == 0 and json.loads(r.out)["shape"] == [2, 144]
    r = cli("report", solved / "out", "-o", tmp_path / "r.html", "--json")
    assert r.code == 0 and json.loads(r.out)["bytes"] > 0


def test_shell_completion_is_offered(cli):
    r = cli("--help")
    assert r.code == 0 and "--install-completion" in r.out and "--show-completion" in r.out


def test_json_on_place_and_export(cli, solved, tmp_path):
    (tmp_path / "b.csv").write_text("id,lower,upper,size\n0,0,2,64\n1,1,3,64\n2,3,4,64\n")
    r = cli("place", tmp_path / "b.csv", "--capacity", "1024", "--json")
    doc = json.loads(r.out)
    assert r.code == 0 and doc["verdict"] == "PLACED" and len(doc["offsets"]) == 3
    r = cli("place", tmp_path / "b.csv", "--capacity", "100", "--json")
    assert r.code == 1 and json.loads(r.out)["verdict"] == "IMPOSSIBLE"
    r = cli("export", solved / "out", "--exchange-snapshot", "-o", tmp_path / "s.json", "--json")
    assert r.code == 0 and json.loads(r.out)["schema_version"] == 4


def test_a_package_shipped_alone_checks_and_runs_elsewhere(solved, tmp_path):
    """The package carries its model, target, plan and placement: copied alone to another directory, `check` and
    `run` work from an unrelated working directory."""
    import shutil
    ship = tmp_path / "ship"
    ship.mkdir()
    shutil.copy(solved / "out" / "model.ipupkg", ship / "model.ipupkg")
    shutil.copy(solved / "x.npy", ship / "x.npy")
    for cmd in (["check", "ship/model.ipupkg"], ["run", "ship/model.ipupkg", "--pixels", "ship/x.npy", "--compare"]):
        r = subprocess.run([sys.executable, "-m", "ipuplan.cli", *cmd], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
    assert "PACKAGE CHECK PASSED" in subprocess.run([sys.executable, "-m", "ipuplan.cli", "check", "ship/model.ipupkg"],
                                                    capture_output=True, text=True, cwd=tmp_path).stdout


def test_check_names_an_unknown_verdict_as_such(cli, tmp_path):
    """`check` on a solve that ended UNKNOWN has nothing to verify: one line saying so (not "INFEASIBLE"), exit 2."""
    d = tmp_path / "u"
    r = cli("solve", VS, "--target", SMALL, "--batch", "2", "--time-limit", "0.001", "-o", d)
    assert r.code == 3 and json.loads((d / "verdict.json").read_text())["verdict"] == "UNKNOWN", r.out + r.err
    r = cli("check", d)
    _one_line(r)
    assert "UNKNOWN" in r.err and "INFEASIBLE" not in r.err, r.err
