#!/usr/bin/env bash
# Every test: the Rust suites (unit and integration, one release profile, shared target dir),
# then the Neovim and tmux end-to-end suites. Installs what it needs first.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
# shellcheck source=scripts/setup.sh
source "$here/scripts/setup.sh"
setup_rust
apt_install git

echo "== cargo test (release)"
cargo build --release --all-targets
cargo test --release
