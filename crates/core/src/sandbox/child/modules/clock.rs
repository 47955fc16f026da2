//! The host's clock and random seed inside the child. The parent passes both in
//! [`Start`]: `time.time()` counts from the parent's clock reading, and `random` is seeded
//! with the parent's value the first time it loads, so the host decides both.

use crate::sandbox::protocol::Start;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

static SEED: AtomicU64 = AtomicU64::new(0);
/// The parent's wall clock (ns since the epoch) and the child's monotonic clock at that time.
static ORIGIN: OnceLock<(u64, Instant)> = OnceLock::new();

/// Takes the run's seed and clock from the start message.
pub fn configure(start: &Start) {
    SEED.store(start.seed, Ordering::Relaxed);
    let _ = ORIGIN.set((start.now_ns, Instant::now()));
}

fn now_ns() -> u64 {
    match ORIGIN.get() {
        Some((origin, at)) => origin.saturating_add(at.elapsed().as_nanos() as u64),
        None => 0,
    }
}

/// Seeds the `random` module's shared generator with the host's value.
pub fn seed_random(vm: &VirtualMachine, random: &PyObjectRef) -> PyResult<()> {
    let seed = vm.ctx.new_int(SEED.load(Ordering::Relaxed));
    random.get_attr("seed", vm)?.call((seed,), vm)?;
    Ok(())
}

/// Makes `time.time` and `time.time_ns` read the host's clock.
pub fn patch_time(vm: &VirtualMachine, time: &PyObjectRef) -> PyResult<()> {
    let secs = vm.new_function("time", |_vm: &VirtualMachine| now_ns() as f64 / 1e9);
    let nanos = vm.new_function("time_ns", |vm: &VirtualMachine| vm.ctx.new_int(now_ns()));
    time.set_attr("time", secs, vm)?;
    time.set_attr("time_ns", nanos, vm)?;
    Ok(())
}
