#!/usr/bin/env bash
# The main job on the example project: build cairn, copy examples/hello to a scratch
# directory, run an agent, show its proposal, accept it into the copy.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/setup.sh
source "$here/scripts/setup.sh"
setup_rust

cargo build --release --manifest-path "$here/Cargo.toml"
cairn() { "$here/target/release/cairn" "$@"; }

scratch="$(mktemp -d "${TMPDIR:-/tmp}/cairn-demo.XXXXXX")"
export CAIRN_HOME="$scratch/home"
cp -r "$here/examples/hello" "$scratch/hello"
cd "$scratch/hello"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
step cairn init
printf '\n\033[1m$ cairn run agents/docstrings.pym\033[0m\n'
id="$(cairn run agents/docstrings.pym)"
echo "$id"
step cairn status "$id"
step cairn diff "$id"
step cairn accept "$id"
step cat src/greeter/core.py
printf '\nThe change landed in the scratch copy %s/hello; examples/hello is untouched.\n' "$scratch"
