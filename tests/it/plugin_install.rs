//! The plugin as a user installs it (`:help cairn-install`): the Lua side says which version of
//! the binary it drives (`:checkhealth cairn` compares them), and every option of every
//! command says what it does in `--help`.

use crate::support::*;

#[test]
fn the_plugins_version_is_the_binarys() {
    let lua = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/cairn/version.lua")).unwrap();
    let plugin = lua.lines().find_map(|l| l.strip_prefix("return '")).and_then(|l| l.strip_suffix('\'')).unwrap_or_default();
    assert_eq!(plugin, env!("CARGO_PKG_VERSION"), "lua/cairn/version.lua");
    let out = std::process::Command::new(exe()).arg("--version").output().unwrap();
    // What health.lua reads: `cairn VERSION`.
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("cairn {plugin}"));
}

/// Every visible subcommand has a description, and so has each of its options and arguments
/// (`cairn run --help` listed `--provider` and `--json` with nothing beside them).
#[test]
fn every_option_of_every_command_is_described() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if a.is_hide_set() || id == "help" || id == "version" {
                continue;
            }
            if a.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
                missing.push(format!("{path}: {id}"));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            let name = format!("{path} {}", sub.get_name());
            if sub.get_about().is_none_or(|h| h.to_string().trim().is_empty()) {
                missing.push(format!("{name} (the command itself)"));
            }
            walk(sub, &name, missing);
        }
    }
    let mut missing = Vec::new();
    walk(&cairn::cli::Cli::command(), "cairn", &mut missing);
    assert!(missing.is_empty(), "no description in --help:\n{}", missing.join("\n"));
    // And as the user reads it.
    let help = Run::from(std::process::Command::new(exe()).args(["run", "--help"]).output().unwrap());
    for option in ["--provider", "--json", "--interpreter"] {
        let line = help.stdout.lines().find(|l| l.trim_start().starts_with(option)).unwrap_or_default();
        assert!(line.trim().split("  ").filter(|s| !s.trim().is_empty()).count() >= 2, "{option} has no description:\n{}", help.stdout);
    }
}
