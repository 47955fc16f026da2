//! Accept's archive step stalled from outside (strace delays every rename of `cairn accept`)
//! while other processes read the agent's overlay, as `cairn diff`, a status poll or the Neovim
//! host would: no reader re-creates the overlay, and undo works every time.

use crate::support::*;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

#[test]
fn readers_during_a_stalled_archive_step_never_break_undo() {
    if Command::new("strace").arg("-V").output().is_err() {
        panic!("strace is missing: run `bash scripts/test.sh` (it installs it)");
    }
    let f = Fixture::with_files(&[("a.txt", "0\n"), ("b.txt", "b\n")]);
    f.init();
    for round in 0..50 {
        let s = f.run_ok(&format!("write_file('a.txt', '{}\\n')\nwrite_file('n{round}/new.txt', 'x')\n", round + 1));
        let stop = AtomicBool::new(false);
        let reads = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for verb in [["diff", s.id.as_str()], ["status", s.id.as_str()]] {
                let (stop, reads, f) = (&stop, &reads, &f);
                scope.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = f.cmd().args(verb).stdout(Stdio::null()).stderr(Stdio::null()).status();
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            let mut c = Command::new("strace");
            c.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=rename,renameat,renameat2", "-e", "inject=rename,renameat,renameat2:delay_exit=40000"]);
            c.arg(exe()).arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(["accept", &s.id]).env_remove("CAIRN_HOME");
            let out = c.stdout(Stdio::null()).stderr(Stdio::piped()).output().unwrap();
            stop.store(true, Ordering::Relaxed);
            assert!(out.status.success(), "round {round}: accept failed: {}", String::from_utf8_lossy(&out.stderr));
        });
        assert!(reads.load(Ordering::Relaxed) >= 2, "round {round}: the readers never ran during the accept");
        assert!(!f.project().overlay_path(&s.id).exists(), "round {round}: a reader re-created the live overlay");
        assert_eq!(f.read_str("a.txt").unwrap(), format!("{}\n", round + 1));
        f.cairn(&["undo", &s.id]).ok();
        assert_eq!(f.read_str("a.txt").unwrap(), "0\n", "round {round}: undo did not restore");
        assert!(!f.root.join(format!("n{round}")).exists(), "round {round}: undo left the new directory");
    }
}
