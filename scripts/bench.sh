#!/usr/bin/env bash
# The performance table (SPEC §12, issue 14) at 1,000, 10,000 and 100,000 files, with the
# reference tools timed in the same run (git, cp, rg, grep, a naive Python indexer) and the
# host rows measured in a real Neovim; then the growth table. Set CAIRN_BENCH_FILES to choose
# the sizes (comma-separated) and CAIRN_BENCH_RUNS for more samples per row (at least 7).
# The 100,000-file fixture takes 1 GB under target/bench/ (generated once, then reused).
# Then the scale family (issue 37: init, cold and warm `cairn run`, `cairn wrap -- true`,
# preview open, `cairn up`'s memory and idle CPU, GC of 100 decided agents) at 1,000,000
# generated files beside the same at 10,000; CAIRN_BENCH_SCALE_FILES chooses its sizes
# (empty: skip it), CAIRN_BENCH_ONLY=scale runs it alone. Its 1,000,000-file fixture takes
# 4 GB under target/bench/ (generated once: about 1 minute on 2 cores); the family then takes
# about 3 minutes on 2 cores (7 samples a row, both sizes; CAIRN_BENCH_IDLE_SECS and
# CAIRN_BENCH_SETTLE_SECS set `cairn up`'s idle window, 28 s after 5 s by default).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
# shellcheck source=scripts/setup.sh
source "$here/scripts/setup.sh"
setup_rust
apt_install git ripgrep
setup_neovims
CAIRN_BENCH_FILES="${CAIRN_BENCH_FILES:-1000,10000,100000}" \
CAIRN_BENCH_SCALE_FILES="${CAIRN_BENCH_SCALE_FILES-1000000,10000}" \
CAIRN_BENCH_NVIM="${CAIRN_BENCH_NVIM:-$here/.venv/nvim-0.11/bin/nvim}" \
    cargo bench --bench spec_table
