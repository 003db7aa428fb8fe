"""Running CP-SAT so that Ctrl-C stops it cleanly: the search runs in a helper thread while the main thread
waits; an interrupt asks the solver to stop, and `Interrupted` is raised once it has (never a verdict)."""

from __future__ import annotations

import signal
import threading

from .errors import Interrupted


def run(solver, model, callback=None) -> int:
    """solver.Solve(model, callback), interruptible from the terminal."""
    solver.parameters.catch_sigint_signal = False  # the interrupt is ours to report, not a search limit
    solve = (lambda: solver.Solve(model, callback)) if callback is not None else (lambda: solver.Solve(model))
    if threading.current_thread() is not threading.main_thread():
        return solve()
    out: dict = {}
    asked: list = []

    def work() -> None:
        try:
            out["status"] = solve()
        except BaseException as e:  # re-raised in the caller's thread
            out["error"] = e

    previous = signal.signal(signal.SIGINT, lambda *_: asked.append(True))
    try:
        t = threading.Thread(target=work, name="cp-sat", daemon=True)
        t.start()
        while t.is_alive():
            t.join(0.1)
            if asked:
                solver.StopSearch()
                t.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    if asked:
        raise Interrupted("interrupted")
    if "error" in out:
        raise out["error"]
    return out["status"]
