use cairn::config::Config;
use cairn::project::{Home, Project};
use cairn::sandbox::pool::Pool;
use std::path::PathBuf;
fn main() {
    let dir = PathBuf::from("/tmp/profex");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("proj")).unwrap();
    std::fs::write(dir.join("proj/a.txt"), "a").unwrap();
    let p = Project::new(&dir.join("proj"), Home::new(dir.join("home")), Config::default(), PathBuf::from("/work/main/target/release/cairn")).unwrap();
    cairn::command::execute(&p, cairn::command::Command::Init).unwrap();
    let pool = Pool::new(&p.exe, true);
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let mut v = Vec::new();
    for _ in 0..n {
        let t = std::time::Instant::now();
        cairn::orchestrator::queue(&p, "x = 1", Some(cairn::lifecycle::Provider::Inline), cairn::lifecycle::Priority::Normal).unwrap();
        let rec = cairn::orchestrator::run_next(&p, Some(&pool)).unwrap().unwrap();
        assert_eq!(rec.state.as_str(), "reviewing");
        v.push(t.elapsed());
    }
    v.sort();
    eprintln!("median {:?} min {:?}", v[v.len() / 2], v[0]);
}
