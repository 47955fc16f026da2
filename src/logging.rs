//! Logging: `tracing` to `$CAIRN_HOME/logs/cairn.log`, never to stdout (which is the RPC pipe
//! of `cairn nvim`). `CAIRN_LOG` sets the filter (e.g. `cairn=debug`); `-v` means debug.

use std::path::Path;
use std::sync::Mutex;

/// Installs the file logger. Failing to open the log is not an error: cairn runs without it.
pub fn init(home: &Path, verbose: bool) {
    let dir = home.join("logs");
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    // Only the user reads the log (hosts a proxy refused, commands, paths).
    let _ = std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700));
    let Ok(file) = std::os::unix::fs::OpenOptionsExt::mode(std::fs::OpenOptions::new().create(true).append(true), 0o600).open(dir.join("cairn.log")) else { return };
    let _ = file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600));
    let default = if verbose { "debug" } else { "info" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("CAIRN_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_writer(Mutex::new(Quiet(file))).try_init();
}

/// The log file, whose write errors (a full disk) are dropped: the log is a help, and the
/// command's own error, printed once, is what the user must see.
struct Quiet(std::fs::File);

impl std::io::Write for Quiet {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(self.0.write(buf).unwrap_or(buf.len()))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}
