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
