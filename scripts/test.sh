#!/usr/bin/env bash
# Every test: the Rust suites (unit and integration, one release profile, one target dir),
# a 1,000-file smoke run of the bench, then the Neovim end-to-end specs (plugin, RPC host,
# tmux) in Neovim 0.11 and 0.12.
# Installs what it needs first: tmux, git, ripgrep and strace from apt, both Neovims, the MCP
# Python SDK, Claude Code (npm) and jj (crates.io) into .venv/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
# shellcheck source=scripts/setup.sh
source "$here/scripts/setup.sh"
setup_rust
apt_install git tmux ripgrep strace
setup_neovims
setup_mcp_client
setup_agents
setup_acp_client
setup_jj

echo "== cargo test (release)"
cargo build --release --workspace --all-targets
cargo test --release --workspace

echo "== bench smoke run (1,000 files; times nothing, keeps the bench from rotting)"
CAIRN_BENCH_FILES=1000 CAIRN_BENCH_NVIM="$here/.venv/nvim-0.11/bin/nvim" cargo bench --bench spec_table

echo "== neovim specs"
passed=0
failed=0
for nvim in "$here/.venv/nvim-0.11/bin/nvim" "$here/.venv/nvim-0.12/bin/nvim"; do
    version="$("$nvim" --version | head -n 1)"
    for spec in "$here"/tests/nvim/*_spec.lua; do
        echo "-- $version: $(basename "$spec")"
        log="$(mktemp)"
        set +e
        CAIRN_REPO="$here" timeout 300 "$nvim" --headless -u NONE -i NONE -n -l "$spec" >"$log" 2>&1
        set -e
        grep -E '^(ok|not ok) - |^[^c].*' "$log" | grep -v '^cairn: ' || true
        line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)"
        if [ -z "$line" ]; then
            echo "   (no result line: the spec crashed)"
            failed=$((failed + 1))
        else
            passed=$((passed + ${line%% passed*}))
            rest="${line#*, }"
            failed=$((failed + ${rest%% failed*}))
        fi
        rm -f "$log"
    done
done
echo "neovim: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
