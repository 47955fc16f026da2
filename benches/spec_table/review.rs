//! Rows about review: accept (against a bare writer with the same parallelism and the same
//! durability) and the host's ghost-text computation.

use crate::fixture::path_of;
use crate::stats::{sample, time, Row, Stat};
use crate::{done, Ctx};
use cairn::command::{self, Command, Output};
use rusqlite::Connection;
use std::io::Write;
use std::path::PathBuf;

pub fn all(c: &Ctx, rows: &mut Vec<Row>) {
    accept(c, rows);
    ghost(c, rows);
    overlap_map(c, rows);
}

/// The overlap map of 10 pending proposals of 20 files each (neighbours share 10 files and
/// append at the same place, so they overlap), recomputed after one agent writes a file: what
/// the host does on a `wrote` event before it redraws. The target is on the p95.
fn overlap_map(c: &Ctx, rows: &mut Vec<Row>) {
    let stride = (c.files / 200).max(1);
    let ids: Vec<String> = (0..10)
        .map(|i| {
            let files: Vec<String> = (i * 10..i * 10 + 20).map(|k| path_of(k * stride + 7)).collect();
            c.run_inline(&format!("for p in {files:?}:\n    write_file(p, read_file(p) + '# agent {i}\\n')\n"))
        })
        .collect();
    let mut round = 0;
    let v = sample((c.runs * 5).max(20), || {
        round += 1;
        let id = &ids[round % ids.len()];
        let path = path_of((round % ids.len()) * 10 * stride + 7);
        let overlay = c.p.existing_overlay(id).expect("overlay").expect("an overlay");
        let mut content = std::fs::read(c.root.join(&path)).expect("read");
        content.extend_from_slice(format!("# write {round}\n").as_bytes());
        let (t, board) = time(|| {
            overlay.write(&path, &content, 0o644).expect("write");
            cairn::review::board::build(&c.p).expect("board")
        });
        let ours: Vec<_> = board.agents.iter().filter(|a| ids.contains(&a.id)).collect();
        assert_eq!(ours.len(), 10);
        assert!(ours.iter().all(|a| a.hunks == 20) && board.overlaps.len() >= 9 * 10, "{} overlaps", board.overlaps.len());
        t
    });
    let op = format!("overlap map of 10 proposals × 20 files after one write (p95 {:.1} ms)", v.p95());
    done(rows, Row::new("overlap_map", op, v, "< 100 ms p95"));
    for id in ids {
        command::execute(&c.p, Command::Reject { id, reason: None }).expect("reject");
    }
}

/// What accept does, done bare: every file written under a temporary name and fsynced, then
/// renamed in place and its directory fsynced (both on accept's threads), then one fsynced
/// SQLite commit recording the new hashes.
fn bare_write(items: &[(PathBuf, Vec<u8>)], threads: usize, db: &mut Connection) {
    let tmps = cairn::par::map(items, threads, "bare", |(path, data)| {
        let tmp = path.with_extension("bench-tmp");
        let mut f = std::fs::File::create(&tmp).expect("create");
        f.write_all(data).expect("write");
        f.sync_all().expect("fsync");
        tmp
    })
    .expect("bare write");
    let pairs: Vec<(&PathBuf, PathBuf)> = items.iter().map(|(p, _)| p).zip(tmps).collect();
    cairn::par::map(&pairs, threads, "bare", |(path, tmp)| {
        std::fs::rename(tmp, path).expect("rename");
        std::fs::File::open(path.parent().expect("parent")).and_then(|d| d.sync_all()).expect("fsync dir");
    })
    .expect("bare rename");
    let tx = db.transaction().expect("tx");
    for (path, data) in items {
        tx.execute("INSERT OR REPLACE INTO files(path, hash) VALUES (?1, ?2)", (path.to_string_lossy(), cairn::store::hash_bytes(data).to_vec())).expect("insert");
    }
    tx.commit().expect("commit");
}

/// `sync`: every dirty page of the machine written out.
fn flush() {
    let _ = std::process::Command::new("sync").status();
}

fn accept(c: &Ctx, rows: &mut Vec<Row>) {
    let stride = c.files / 100;
    let targets: Vec<String> = (0..100).map(|i| path_of(i * stride + 3)).collect();
    // The bare side writes the neighbours (same directories, same sizes), so either side may
    // go first without the other meeting its change.
    let neighbours: Vec<String> = (0..100).map(|i| path_of(i * stride + 4)).collect();
    let threads = cairn::par::io_threads(targets.len());
    let mut db = Connection::open(c.work.join("bare.db")).expect("bare db");
    db.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, hash BLOB);").expect("bare schema");
    let list = format!("{targets:?}");
    let (mut ours, mut bare) = (Vec::new(), Vec::new());
    // The two sides differ by a few milliseconds of fsyncs, less than the disk's drift over a
    // run: many rounds, each timing both sides back to back, the first side alternating.
    for round in 0..(c.runs * 3).max(21) {
        let id = c.run_inline(&format!("for p in {list}:\n    write_file(p, read_file(p) + '# round {round}\\n')\n"));
        let items: Vec<(PathBuf, Vec<u8>)> = neighbours
            .iter()
            .map(|rel| {
                let path = c.root.join(rel);
                let mut data = std::fs::read(&path).expect("read");
                data.extend_from_slice(format!("# bare {round}\n").as_bytes());
                (path, data)
            })
            .collect();
        let mut accept = || {
            // Both sides start from a clean page cache (untimed): the run's own unflushed
            // writes would otherwise land on whichever side fsyncs first.
            flush();
            let (t, out) = time(|| command::execute(&c.p, Command::Accept { id: id.clone(), force: false }).expect("accept"));
            assert!(matches!(out, Output::Accepted(ref r) if r.written.len() == 100));
            ours.push(t);
        };
        let mut write_bare = || {
            flush();
            bare.push(time(|| bare_write(&items, threads, &mut db)).0);
        };
        if round % 2 == 0 {
            accept();
            write_bare();
        } else {
            write_bare();
            accept();
        }
        cairn::sync::refresh(&c.p, &neighbours).expect("refresh");
    }
    let paired = Stat { values: ours.iter().zip(&bare).map(|(o, b)| o.as_secs_f64() / b.as_secs_f64()).collect(), unit: "×" };
    done(
        rows,
        Row::new("accept100", format!("accept 100 files (files and directories fsynced; the journal, old contents included, fsynced before any rename; {threads} threads)"), Stat::ms(&ours), "≤ 1.2× bare")
            .vs(format!("bare: same files, {threads} threads, fsyncs, one fsynced commit ({} rounds)", bare.len()), Stat::ms(&bare)),
    );
    done(rows, Row::new("accept100_ratio", "accept 100 files ÷ bare, per round (each round times both, the first side alternating)", paired, "≤ 1.2×"));
    let mut round = 0;
    let one = sample(c.runs, || {
        round += 1;
        let id = c.run_inline(&format!("write_file('{}', 'one {round}')", path_of(5)));
        flush();
        time(|| command::execute(&c.p, Command::Accept { id, force: false }).expect("accept")).0
    });
    done(rows, Row::new("accept1", "accept 1 file", one, "< 10 ms"));
}

/// The hunks of a 1,000-line file with 50 changed lines, as the host computes them for one
/// push (diff and payload). The Neovim side (round trip, render): the host rows.
fn ghost(c: &Ctx, rows: &mut Vec<Row>) {
    let lines: Vec<String> = (0..1000).map(|i| format!("line {i} of the ghost bench")).collect();
    std::fs::write(c.root.join("ghost.txt"), lines.join("\n") + "\n").expect("write");
    cairn::sync::refresh(&c.p, &["ghost.txt".to_string()]).expect("refresh");
    let id = c.run_inline("t = read_file('ghost.txt').split('\\n')\nfor i in range(0, 1000, 20):\n    t[i] = t[i] + ' changed'\nwrite_file('ghost.txt', '\\n'.join(t))\n");
    let v = sample(c.runs * 3, || {
        let (t, n) = time(|| match command::execute(&c.p, Command::Hunks { id: id.clone() }).expect("hunks") {
            Output::Hunks { files, .. } => {
                assert_eq!(files.iter().map(|f| f.hunks.len()).sum::<usize>(), 50);
                serde_json::to_vec(&files).expect("payload").len()
            }
            _ => 0,
        });
        assert!(n > 0);
        t
    });
    done(rows, Row::new("ghost_host", "ghost text, 1,000 lines / 50 hunks (host: diff + payload)", v, "< 5 ms"));
}
