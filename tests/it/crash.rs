//! SPEC §1.4: SIGKILL of `cairn accept` at many instants loses nothing. After each kill every
//! file is wholly old or wholly new, bin.db is consistent, and accept run again finishes.

use crate::support::*;
use cairn::lifecycle::State;
use std::os::unix::process::ExitStatusExt;

const FILES: usize = 200;

fn content(version: usize, file: usize) -> String {
    format!("version {version} of file {file}\n").repeat(40)
}

#[test]
fn sigkill_during_accept_at_many_instants() {
    let f = Fixture::new();
    for j in 0..FILES {
        f.write(&format!("src/f{j:03}.txt"), content(0, j));
    }
    f.init();
    let p = f.project();
    let mut interrupted = 0;
    // Kill points: right after start, then once k files show new content, k = 0, 8, 16, ...
    let points: Vec<Option<usize>> = std::iter::once(None).chain((0..24).map(|i| Some(i * 8))).collect();
    for (round, point) in points.iter().enumerate() {
        let (old_v, new_v) = (round, round + 1);
        let script = format!(
            "for j in range({FILES}):\n    write_file('src/f%03d.txt' % j, ('version {new_v} of file %d\\n' % j) * 40)\nwrite_file('added/r{round}.txt', 'new')\n"
        );
        let s = f.run_ok(&script);
        let is_new = |j: usize| f.read_str(&format!("src/f{j:03}.txt")).as_deref() == Some(content(new_v, j).as_str());
        let mut child = f.cmd().args(["accept", &s.id]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        if let Some(k) = point {
            // Wait for progress (or for the accept to end by itself).
            wait_until(60, "accept progress", || (0..FILES).filter(|&j| is_new(j)).count() >= *k || matches!(child.try_wait(), Ok(Some(_))));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.signal() == Some(9) {
            interrupted += 1;
        }

        // Every file wholly old or wholly new; nothing else appeared.
        for j in 0..FILES {
            let got = f.read_str(&format!("src/f{j:03}.txt")).expect("file lost");
            assert!(got == content(old_v, j) || got == content(new_v, j), "round {round}: src/f{j:03}.txt is torn");
        }
        let bin = p.bin().unwrap();
        assert!(bin.integrity_ok().unwrap(), "bin.db corrupt after kill");
        let rec = bin.get(&s.id).unwrap();
        assert!(
            (rec.state == State::Reviewing) || (rec.state == State::Accepted && !rec.accept_pending),
            "round {round}: inconsistent state {:?} pending={}",
            rec.state,
            rec.accept_pending
        );

        // Running accept again completes it (or says it is already done).
        let again = f.cairn(&["accept", &s.id]);
        if rec.state == State::Accepted {
            assert_eq!(again.code, 1, "a finished accept cannot run twice");
        } else {
            assert_eq!(again.code, 0, "round {round}: re-run failed: {again:?}");
        }
        for j in 0..FILES {
            assert!(is_new(j), "round {round}: src/f{j:03}.txt not new after re-run");
        }
        assert_eq!(f.read_str(&format!("added/r{round}.txt")).as_deref(), Some("new"));
        assert_eq!(p.bin().unwrap().get(&s.id).unwrap().state, State::Accepted);
        let leftovers: Vec<_> = f.tree().into_iter().filter(|(p, _)| p.contains(".cairn-tmp")).map(|(p, _)| p).collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    }
    assert!(interrupted >= 20, "only {interrupted} kills landed mid-accept");
}
