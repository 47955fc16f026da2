//! Samples and how a row shows them: median with min and max, never one lone timing.

use std::time::{Duration, Instant};

/// Samples of one quantity.
#[derive(Debug, Clone)]
pub struct Stat {
    pub values: Vec<f64>,
    pub unit: &'static str,
}

impl Stat {
    pub fn ms(samples: &[Duration]) -> Stat {
        Stat { values: samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect(), unit: "ms" }
    }

    pub fn mb(value: f64) -> Stat {
        Stat { values: vec![value], unit: "MB" }
    }

    pub fn median(&self) -> f64 {
        let mut v = self.values.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n => (v[(n - 1) / 2] + v[n / 2]) / 2.0,
        }
    }

    /// The 95th percentile (nearest rank).
    pub fn p95(&self) -> f64 {
        let mut v = self.values.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n => v[((n as f64 * 0.95).ceil() as usize).clamp(1, n) - 1],
        }
    }

    fn min(&self) -> f64 {
        self.values.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn max(&self) -> f64 {
        self.values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }

    /// `12.3 ms [11.0–15.2]`, or the one value of a measurement that is not a timing.
    pub fn show(&self) -> String {
        match self.values.len() {
            0 => "—".into(),
            1 => format!("{} {}", num(self.values[0]), self.unit),
            _ => format!("{} {} [{}–{}]", num(self.median()), self.unit, num(self.min()), num(self.max())),
        }
    }

    pub fn brief(&self) -> String {
        if self.values.is_empty() {
            "—".into()
        } else {
            format!("{} {}", num(self.median()), self.unit)
        }
    }
}

fn num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

pub fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let t = Instant::now();
    let r = f();
    (t.elapsed(), r)
}

/// `n` timings of `f`.
pub fn sample(n: usize, mut f: impl FnMut() -> Duration) -> Stat {
    Stat::ms(&(0..n).map(|_| f()).collect::<Vec<_>>())
}

/// One line of the table.
pub struct Row {
    /// Stable name for the growth table.
    pub key: &'static str,
    pub op: String,
    pub ours: Stat,
    /// Reference tools, timed in the same run; the first is the one the ratio is against.
    pub refs: Vec<(String, Stat)>,
    pub target: &'static str,
}

impl Row {
    pub fn new(key: &'static str, op: impl Into<String>, ours: Stat, target: &'static str) -> Row {
        Row { key, op: op.into(), ours, refs: Vec::new(), target }
    }

    pub fn vs(mut self, name: impl Into<String>, stat: Stat) -> Row {
        self.refs.push((name.into(), stat));
        self
    }

    pub fn ratio(&self) -> Option<f64> {
        let (_, r) = self.refs.iter().find(|(_, s)| !s.values.is_empty())?;
        Some(self.ours.median() / r.median())
    }
}

/// Peak resident memory of a live process (`VmHWM`), in MB.
pub fn peak_rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
