#!/bin/bash
# Wall time, system time and peak RSS of `ipuplan run PKG --pixels X --compare` with the code of CHECKOUT on the
# import path (a worktree for the other side of a before/after). Usage: bench/run_speed.sh CHECKOUT PKG PIXELS
set -euo pipefail
code=$(cd "$1" && pwd)
/usr/bin/time -f "code $code: %e s wall, %S s system, peak RSS %M KB" env PYTHONPATH="$code" python3 -P -c '
import sys, ipuplan
print("code", ipuplan.__file__)
sys.argv = ["ipuplan", "run", sys.argv[1], "--pixels", sys.argv[2], "--compare"]
from ipuplan.cli import main
main()' "$2" "$3" 2>&1 | grep -v '^ '
