//! SPEC §9 config layering and validation; GC per `[gc]`.

use crate::support::*;
use cairn::config;

#[test]
fn layering_home_then_project_then_env() {
    let f = Fixture::new();
    f.home_config("[orchestrator]\nmax_concurrent_agents = 2\npoll_interval_ms = 100\n[tmux]\nsplit = \"vertical\"\n");
    f.write(".cairn.toml", "[orchestrator]\nmax_concurrent_agents = 4\n[llm]\ncommand = [\"my-llm\", \"--fast\"]\n");
    let env = |k: &str| match k {
        "CAIRN_ORCHESTRATOR_POLL_INTERVAL_MS" => Some("50".to_string()),
        "CAIRN_UI_GHOST_TEXT" => Some("false".to_string()),
        _ => None,
    };
    let loaded = config::load(&f.home, Some(&f.root), &env).unwrap();
    let c = loaded.config;
    assert_eq!(c.orchestrator.max_concurrent_agents, 4, "project file wins over home");
    assert_eq!(c.orchestrator.poll_interval_ms, 50, "env wins over files");
    assert_eq!(c.tmux.split, "vertical");
    assert!(!c.ui.ghost_text);
    assert_eq!(c.llm.command, ["my-llm", "--fast"]);
    assert_eq!(c.sandbox.timeout_seconds, 60, "defaults fill the rest");
    assert!(loaded.warnings.is_empty());
}

#[test]
fn unknown_keys_warn_and_bad_values_error_naming_the_key() {
    let f = Fixture::new();
    f.home_config("[orchestrator]\nmax_concurrent_agentz = 3\n[colors]\nx = 1\n");
    let loaded = config::load(&f.home, None, &|_| None).unwrap();
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(loaded.warnings.iter().any(|w| w.contains("'orchestrator.max_concurrent_agentz'")), "{:?}", loaded.warnings);
    assert!(loaded.warnings.iter().any(|w| w.contains("'colors.x'")), "{:?}", loaded.warnings);

    let cases = [
        ("[orchestrator]\nmax_concurrent_agents = \"five\"\n", "orchestrator.max_concurrent_agents"),
        ("[orchestrator]\nmax_concurrent_agents = 0\n", "an integer >= 1"),
        ("[tmux]\nsplit = \"diagonal\"\n", "tmux.split"),
        ("[llm]\ncommand = \"not a list\"\n", "llm.command"),
        ("[ui]\nkeymaps = 1\n", "ui.keymaps"),
        ("not toml at all [", "config.toml"),
    ];
    for (toml, needle) in cases {
        f.home_config(toml);
        let err = config::load(&f.home, None, &|_| None).err().unwrap_or_else(|| panic!("{toml} accepted")).to_string();
        assert!(err.contains(needle), "{toml}: {err}");
    }
    f.home_config("");
    let err = config::load(&f.home, None, &|k| (k == "CAIRN_SANDBOX_TIMEOUT_SECONDS").then(|| "soon".to_string())).err().unwrap();
    assert!(err.to_string().contains("sandbox.timeout_seconds (from $CAIRN_SANDBOX_TIMEOUT_SECONDS)"), "{err}");

    // Through the CLI: a warning on stderr, an error with exit 1.
    let f2 = Fixture::with_files(&[("a.txt", "a")]);
    f2.home_config("[ui]\nunknown_key = true\n");
    let r = f2.cairn(&["list-agents"]).ok();
    assert!(r.stderr.contains("warning: unknown config key 'ui.unknown_key'"), "{}", r.stderr);
    f2.home_config("[ui]\nkeymaps = \"yes\"\n");
    let r = f2.cairn(&["list-agents"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("ui.keymaps"), "{}", r.stderr);
}

#[test]
fn every_config_key_is_documented() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/cairn.txt")).expect("doc/cairn.txt");
    for def in config::SCHEMA {
        let tag = format!("*cairn-config-{}.{}*", def.section, def.key);
        assert!(doc.contains(&tag), "doc/cairn.txt does not document {}.{} (expected the tag {tag})", def.section, def.key);
    }
}

#[test]
fn gc_removes_old_terminal_agents_and_keeps_latest() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    f.home_config("[gc]\nmax_age_hours = 0\nkeep_latest = 2\nmax_workspaces = 1\n");
    let p = f.project();
    let mut ids = Vec::new();
    for i in 0..5 {
        let s = f.run_ok(&format!("write_file('f{i}.txt', 'x')"));
        // What a preview session left (its `cairn` killed): its written layer.
        let upper = f.home.join("workspaces").join(&s.id).join("rw/upper");
        std::fs::create_dir_all(&upper).unwrap();
        std::fs::write(upper.join("x.txt"), "x").unwrap();
        f.cairn(&["reject", &s.id]).ok();
        ids.push(s.id);
    }
    let live = f.run_ok("write_file('live.txt', 'x')");
    let r = f.cairn(&["gc"]).ok();
    assert!(r.stdout.contains("removed 3 agents"), "{}", r.stdout);
    let left: Vec<String> = p.bin().unwrap().list(true).unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(left, [ids[3].clone(), ids[4].clone(), live.id.clone()], "keeps the 2 newest terminal ones and every active one");
    for old in &ids[..3] {
        assert!(!p.archived_overlay_path(old).exists(), "overlay of {old} kept");
        assert!(!f.home.join("workspaces").join(old).exists(), "workspace of {old} kept");
        assert!(!f.root.join(".grail/agents").join(old).exists());
    }
    let spaces = std::fs::read_dir(f.home.join("workspaces")).unwrap().count();
    assert_eq!(spaces, 1, "max_workspaces = 1");
}

#[test]
fn the_disk_cap_removes_decided_agents_oldest_first_and_cairn_up_collects_by_itself() {
    let f = Fixture::with_files(&[("a.txt", "a")]);
    // Old age never applies here: only the cap (1 MB) removes, and only decided agents.
    f.home_config("[gc]\nmax_age_hours = 100000\nkeep_latest = 1\nmax_total_size_mb = 1\n[orchestrator]\npoll_interval_ms = 20\n");
    let p = f.project();
    let mut ids = Vec::new();
    for i in 0..4 {
        let s = f.run_ok(&format!("write_file('big{i}.txt', 'x' * 600000)"));
        f.cairn(&["reject", &s.id]).ok();
        ids.push(s.id);
    }
    let live = f.run_ok("write_file('live.txt', 'y' * 600000)");
    let before = f.cairn(&["status"]).ok().stdout;
    assert!(before.contains("MB in overlays and preview workspaces"), "cairn status shows the total: {before}");
    assert!(cairn::gc::total_bytes(&p) > 3 * 1024 * 1024, "four decided proposals of 600 kB and a live one");
    // `cairn up` collects by itself, soon after it starts.
    let _up = Up::start(&f);
    // Oldest first: keep_latest and the pending one stay.
    let want = [ids[3].clone(), live.id.clone()];
    let left = || -> Vec<String> { p.bin().unwrap().list(true).unwrap().into_iter().map(|r| r.id).collect() };
    wait_until(60, "the oldest decided agents removed by cairn up", || left() == want);
    assert!(ids[..3].iter().all(|id| !p.archived_overlay_path(id).exists()), "their overlays gone");
    assert!(p.archived_overlay_path(&ids[3]).exists() || p.overlay_path(&ids[3]).exists(), "the newest decided one kept");
}

/// Within `[gc]`'s limits, collection never takes what undo needs: accepted agents younger
/// than `max_age_hours`, and the `keep_latest` newest whatever their age, can be undone after
/// `cairn gc` and after `cairn up`'s own collection, including one whose accept overwrote a
/// user's edit (its old content lives in the journal, not the overlay). Their undos restore
/// the tree exactly.
#[test]
fn gc_never_removes_what_undo_needs_within_its_limits() {
    let f = Fixture::with_files(&[("a.txt", "a0\n"), ("b.txt", "b0\n"), ("c.txt", "c0\n"), ("d.txt", "d0\n")]);
    // Young enough (an hour) for three of them; keep_latest keeps the newest whatever the age.
    f.home_config("[gc]\nmax_age_hours = 1\nkeep_latest = 1\nmax_total_size_mb = 1000\nauto_interval_minutes = 1\n");
    let p = f.project();
    let mut accepted = Vec::new();
    for name in ["a", "b", "c"] {
        let s = f.run_ok(&format!("write_file('{name}.txt', '{name}1\\n' * 3000)"));
        accepted.push(s.id.clone());
    }
    // The user edits d.txt after the agent read it: the forced accept journals the user's text.
    let s = f.run_ok("read_file('d.txt')\nwrite_file('d.txt', 'agent\\n')");
    f.write("d.txt", "the user's edit\n");
    f.cairn(&["accept", &accepted[0]]).ok();
    f.cairn(&["accept", &accepted[1]]).ok();
    f.cairn(&["accept", &accepted[2]]).ok();
    f.cairn(&["accept", "--force", &s.id]).ok();
    accepted.push(s.id);
    // Rejected ones beside them are what GC may take (past keep_latest, but young: kept too).
    let rejected = f.run_ok("write_file('e.txt', 'x')");
    f.cairn(&["reject", &rejected.id]).ok();

    let r = f.cairn(&["gc"]).ok();
    assert!(r.stdout.contains("removed 0 agents"), "nothing within the limits is removed: {}", r.stdout);
    // The rejected one, made two hours old, is past the limits: `cairn up`'s own collection
    // takes it (which shows that it ran) and nothing else.
    let db = rusqlite::Connection::open(f.root.join(".agentfs/bin.db")).unwrap();
    db.execute("UPDATE agents SET state_changed_ms = state_changed_ms - 7200000 WHERE id = ?1", [&rejected.id]).unwrap();
    drop(db);
    {
        let _up = Up::start(&f);
        wait_until(60, "cairn up's collection of the old rejected agent", || p.bin().unwrap().list(true).unwrap().iter().all(|r| r.id != rejected.id));
    }
    let listed: Vec<String> = p.bin().unwrap().list(true).unwrap().into_iter().map(|r| r.id).collect();
    for id in &accepted {
        assert!(listed.contains(id), "{id} kept: {listed:?}");
    }
    // Undo newest first: each restores what was there before its accept.
    for id in accepted.iter().rev() {
        f.cairn(&["undo", id]).ok();
    }
    assert_eq!(std::fs::read_to_string(f.root.join("d.txt")).unwrap(), "the user's edit\n", "the journaled user edit is back");
    for (name, want) in [("a", "a0\n"), ("b", "b0\n"), ("c", "c0\n")] {
        assert_eq!(std::fs::read_to_string(f.root.join(format!("{name}.txt"))).unwrap(), want);
    }
}
