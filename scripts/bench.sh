#!/usr/bin/env bash
# The SPEC §12 table (cargo bench, generated 10,000-file fixture) and the ghost-text figures
# measured in a real Neovim.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
# shellcheck source=scripts/setup.sh
source "$here/scripts/setup.sh"
setup_rust
setup_neovims
cargo bench --bench spec_table
for nvim in "$here/.venv/nvim-0.11/bin/nvim" "$here/.venv/nvim-0.12/bin/nvim"; do
    CAIRN_REPO="$here" "$nvim" --headless -u NONE -i NONE -n -l tests/nvim/bench_ghost.lua 2>&1 | grep '^ghost'
done
