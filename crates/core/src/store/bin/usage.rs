//! Token usage in `bin.db`: what the wrap gateway read from each model response, summed per
//! agent, revision (the agent's revision when the response came), provider and model.

use super::Bin;
use crate::error::Result;
use crate::gateway::{price::Table, Usage};
use rusqlite::{params, Connection};
use serde::Serialize;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS usage(
    agent_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    requests INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    PRIMARY KEY(agent_id, revision, provider, model)
) WITHOUT ROWID;
";

/// Adds the table to a `bin.db` made before it existed.
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    conn.execute_batch(SCHEMA)?;
    Ok(())
}

/// One row: an agent's usage of one model in one revision.
#[derive(Debug, Clone, Serialize)]
pub struct UsageRow {
    pub revision: u32,
    pub provider: String,
    pub model: String,
    pub requests: u64,
    #[serde(flatten)]
    pub usage: Usage,
}

/// An agent's token usage: totals, then by revision and by model.
#[derive(Debug, Clone, Serialize)]
pub struct UsageSummary {
    #[serde(flatten)]
    pub total: Usage,
    pub requests: u64,
    /// US dollars, where the price table knows every model used.
    pub cost_usd: Option<f64>,
    pub revisions: Vec<UsagePart>,
    pub models: Vec<UsagePart>,
}

/// Usage of one revision or one model.
#[derive(Debug, Clone, Serialize)]
pub struct UsagePart {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(flatten)]
    pub usage: Usage,
    pub requests: u64,
    pub cost_usd: Option<f64>,
}

impl Bin {
    /// Adds one response's usage to agent `id`'s current revision.
    pub fn usage_add(&self, id: &str, provider: &str, model: &str, u: &Usage) -> Result<()> {
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.conn.execute(
            "INSERT INTO usage(agent_id, revision, provider, model, requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
             SELECT id, revision, ?2, ?3, 1, ?4, ?5, ?6, ?7 FROM agents WHERE id = ?1
             ON CONFLICT(agent_id, revision, provider, model) DO UPDATE SET requests = requests + 1,
               input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
               cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens, cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens",
            params![id, provider, model, n(u.input_tokens), n(u.output_tokens), n(u.cache_read_tokens), n(u.cache_write_tokens)],
        )?;
        Ok(())
    }

    /// Agent `id`'s usage, by revision, provider and model.
    pub fn usage_of(&self, id: &str) -> Result<Vec<UsageRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT revision, provider, model, requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens FROM usage WHERE agent_id = ?1 ORDER BY revision, provider, model",
        )?;
        let rows = stmt.query_map(params![id], |r| {
            let u = |i: usize| r.get::<_, i64>(i).map(|v| u64::try_from(v).unwrap_or(0));
            Ok(UsageRow { revision: r.get(0)?, provider: r.get(1)?, model: r.get(2)?, requests: u(3)?, usage: Usage { input_tokens: u(4)?, output_tokens: u(5)?, cache_read_tokens: u(6)?, cache_write_tokens: u(7)? } })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Agent `id`'s usage, priced by `prices`; `None` when it made no model request through
    /// the gateway.
    pub fn usage_summary(&self, id: &str, prices: &Table) -> Result<Option<UsageSummary>> {
        let rows = self.usage_of(id)?;
        if rows.is_empty() {
            return Ok(None);
        }
        let cost = |r: &UsageRow| r.provider.parse().ok().and_then(|p| prices.cost(p, &r.model, &r.usage));
        let sum = |parts: &mut Vec<UsagePart>, r: &UsageRow, revision: Option<u32>, model: bool| {
            let at = parts.iter().position(|p| p.revision == revision && (!model || (p.provider.as_deref() == Some(&r.provider) && p.model.as_deref() == Some(&r.model))));
            let i = at.unwrap_or_else(|| {
                let (provider, m) = if model { (Some(r.provider.clone()), Some(r.model.clone())) } else { (None, None) };
                parts.push(UsagePart { revision, provider, model: m, usage: Default::default(), requests: 0, cost_usd: Some(0.0) });
                parts.len() - 1
            });
            let p = &mut parts[i];
            p.usage.add(&r.usage);
            p.requests += r.requests;
            p.cost_usd = p.cost_usd.zip(cost(r)).map(|(a, b)| a + b);
        };
        let (mut revisions, mut models, mut all) = (Vec::new(), Vec::new(), Vec::new());
        for r in &rows {
            sum(&mut revisions, r, Some(r.revision), false);
            sum(&mut models, r, None, true);
            sum(&mut all, r, None, false);
        }
        let Some(t) = all.pop() else { return Ok(None) };
        Ok(Some(UsageSummary { total: t.usage, requests: t.requests, cost_usd: t.cost_usd, revisions, models }))
    }
}
