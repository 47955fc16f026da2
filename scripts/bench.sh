#!/usr/bin/env bash
# The performance table (SPEC §12, issue 14) at 1,000, 10,000 and 100,000 files, with the
# reference tools timed in the same run (git, cp, rg, grep, a naive Python indexer) and the
# host rows measured in a real Neovim; then the growth table. Set CAIRN_BENCH_FILES to choose
# the sizes (comma-separated) and CAIRN_BENCH_RUNS for more samples per row (at least 7).
# The 100,000-file fixture takes 1 GB under target/bench/ (generated once, then reused).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
# shellcheck source=scripts/setup.sh
source "$here/scripts/setup.sh"
setup_rust
apt_install git ripgrep
setup_neovims
CAIRN_BENCH_FILES="${CAIRN_BENCH_FILES:-1000,10000,100000}" \
CAIRN_BENCH_NVIM="${CAIRN_BENCH_NVIM:-$here/.venv/nvim-0.11/bin/nvim}" \
    cargo bench --bench spec_table
