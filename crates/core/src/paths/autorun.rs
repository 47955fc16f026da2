//! Files that run by themselves: what another tool runs or obeys on its own in a project
//! (direnv, CI, git hooks, editors, build scripts, package managers, agent CLIs' settings), so
//! review flags a proposal that writes one. Re-exported as `paths::runs_by_itself`.

use super::{file_name, parent};

/// Why `rel` deserves a second look in review: a file that another tool runs or obeys on its
/// own, without anyone asking (direnv, mise, CI, git hooks and LFS, editors, build scripts and
/// toolchains, package managers, agent CLIs' settings and instructions), or one the proposal
/// gives a key that makes a tool run a file of the project (Cargo's `build` and `proc-macro`,
/// pyproject's `backend-path`; `old` and `new` are its content now and in the proposal).
/// `None` for an ordinary file.
pub fn runs_by_itself(rel: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> Option<&'static str> {
    by_name(rel).or_else(|| by_key(rel, old, new?))
}

/// Files another tool runs or obeys by their name (or a directory's, at any depth but for
/// `hooks/`, which only the root's names as git's hooks).
fn by_name(rel: &str) -> Option<&'static str> {
    let name = file_name(rel);
    let under = |dir: &str| rel.starts_with(dir) || rel.contains(&format!("/{dir}"));
    let root = |dir: &str| rel.starts_with(dir);
    let ends = |suffixes: &[&str]| suffixes.iter().any(|s| name.ends_with(s));
    let env = name == ".env" || (name.starts_with(".env.") && !ends(&[".example", ".sample", ".template", ".dist"]));
    Some(match name {
        ".envrc" => "direnv runs it on entering the directory",
        "mise.toml" | ".mise.toml" | "mise.local.toml" | ".mise.local.toml" => "mise runs its hooks and tasks (on entering the directory)",
        _ if env => "tools load it into their environment (dotenv, bun, compose)",
        "conftest.py" => "pytest imports it before any test",
        "sitecustomize.py" | "usercustomize.py" => "Python imports it at start-up",
        "build.rs" => "cargo runs it when building",
        "rust-toolchain" | "rust-toolchain.toml" => "rustup obeys it (a `path` runs a toolchain from here)",
        "package.json" => "npm runs its scripts (install, test, lifecycle)",
        ".npmrc" | ".yarnrc" | ".yarnrc.yml" => "the package manager obeys it",
        ".pnpmfile.cjs" | ".pnpmfile.mjs" | "pnpmfile.js" | "pnpm-workspace.yaml" => "pnpm runs or obeys it (hooks, settings)",
        "bunfig.toml" => "bun obeys it (preloaded scripts)",
        "setup.py" => "pip runs it when installing",
        "hatch_build.py" => "hatch runs it when building",
        "gradlew" | "gradle-wrapper.properties" | "Directory.Build.props" | "Directory.Build.targets" => "the build runs or obeys it (wrapper, imports)",
        ".pre-commit-config.yaml" => "pre-commit runs its hooks",
        "lefthook.yml" | "lefthook.yaml" | ".lefthook.yml" | ".lefthook.yaml" | "lefthook-local.yml" => "git hooks run what it lists (lefthook)",
        ".gitlab-ci.yml" | ".travis.yml" | "Jenkinsfile" | "azure-pipelines.yml" | "bitbucket-pipelines.yml" | ".drone.yml" | ".woodpecker.yml" => "CI runs it",
        ".gitattributes" | ".gitmodules" => "git obeys it (filters, submodules)",
        ".lfsconfig" => "git-lfs obeys it (custom transfer programs, its server)",
        ".nvim.lua" | ".nvimrc" | ".exrc" | ".vimrc" | ".lazy.lua" => "Neovim or Vim runs it in this directory ('exrc', lazy.nvim)",
        _ if name.ends_with(".code-workspace") => "VS Code runs or obeys it (tasks, settings)",
        _ if name.starts_with("eslint.config.") || name.starts_with("prettier.config.") || ends(&[".eslintrc.js", ".eslintrc.cjs", ".prettierrc.js", ".prettierrc.cjs", ".prettierrc.mjs"]) => "editors run it on opening the project (ESLint, Prettier)",
        "config" | "config.toml" if file_name(parent(rel)) == ".cargo" => "cargo obeys it (runners, aliases)",
        ".devcontainer.json" => "the dev container tooling runs it",
        ".mcp.json" | "opencode.json" | ".aider.conf.yml" => "agent CLIs start the MCP servers it lists, or obey it",
        "CLAUDE.md" | "CLAUDE.local.md" | "AGENTS.md" | "AGENTS.override.md" | "GEMINI.md" | ".cursorrules" | ".windsurfrules" | ".clinerules" | "copilot-instructions.md" => "agent CLIs read it as their instructions",
        _ if under(".github/workflows/") || under(".github/actions/") => "GitHub Actions runs it",
        _ if under(".gitlab/") || under(".circleci/") || under(".buildkite/") || under(".forgejo/workflows/") || under(".gitea/workflows/") || under(".woodpecker/") => "CI runs it",
        _ if under(".husky/") || under(".githooks/") => "git runs it as a hook",
        _ if under(".devcontainer/") => "the dev container tooling runs it",
        _ if under(".vscode/") || under(".idea/") || under(".zed/") || under(".helix/") => "the editor runs or obeys it (tasks, settings, language servers, MCP servers)",
        _ if under(".mvn/") || under(".yarn/") || under(".mise/") => "the build tool runs or obeys it (wrapper, plugins, releases)",
        _ if under(".claude/") => "Claude Code obeys it (hooks, commands, MCP servers, permissions)",
        _ if under(".codex/") => "Codex CLI obeys it (its configuration, MCP servers)",
        _ if under(".gemini/") => "Gemini CLI obeys it (settings, MCP servers, commands)",
        _ if under(".cursor/") || under(".windsurf/") || under(".opencode/") || under(".continue/") || under(".github/instructions/") => "agent CLIs obey it (rules, MCP servers, instructions)",
        _ if root("hooks/") || root(".git-hooks/") || root("git-hooks/") => "git may run it as a hook (core.hooksPath)",
        _ => return None,
    })
}

/// Keys that make a tool run a file of the project, by the file's name: flagged when the
/// proposal adds or changes one.
const RUNNING_KEYS: &[(&str, &[&[&str]], &str)] = &[
    ("Cargo.toml", &[&["package", "build"], &["project", "build"], &["lib", "proc-macro"], &["lib", "proc_macro"]], "cargo runs the build script or procedural macro it declares (`build`, `proc-macro`)"),
    ("pyproject.toml", &[&["build-system", "backend-path"]], "pip runs the build backend it names from the project (`backend-path`)"),
];

fn by_key(rel: &str, old: Option<&[u8]>, new: &[u8]) -> Option<&'static str> {
    let (_, keys, why) = RUNNING_KEYS.iter().find(|(name, ..)| *name == file_name(rel))?;
    let parse = |b: &[u8]| std::str::from_utf8(b).ok().and_then(|t| t.parse::<toml::Table>().ok());
    let Some(new) = parse(new) else {
        // Not TOML to us: flagged when it names a key at all (its tool may read it otherwise).
        let text = String::from_utf8_lossy(new);
        return keys.iter().any(|k| k.last().is_some_and(|k| text.contains(k))).then_some(*why);
    };
    let old = old.and_then(parse);
    let at = |t: &toml::Table, path: &[&str]| -> Option<toml::Value> {
        let (first, rest) = path.split_first()?;
        rest.iter().try_fold(t.get(*first)?, |v, k| v.get(*k)).cloned()
    };
    keys.iter().any(|path| at(&new, path).is_some_and(|v| old.as_ref().and_then(|o| at(o, path)) != Some(v))).then_some(*why)
}

