//! A wrap session's side of its model gateway ([`crate::gateway`]): each response's usage
//! recorded in `bin.db` for the agent's current revision, and the `[wrap]` budgets (tokens or
//! cost, per session and per revision) asked before each request. Past one, the gateway
//! answers the CLI with its provider's quota error; the user is told once (an event on the
//! agent, the session's last line), and the turn goes to review with what it has.

use crate::gateway::{price::Table, Meter, Provider, Usage};
use crate::project::Project;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The budgets of a session (0: none).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Budget {
    pub tokens: u64,
    pub tokens_revision: u64,
    pub cost: f64,
    pub cost_revision: f64,
}

impl Budget {
    pub fn of(w: &crate::config::Wrap) -> Budget {
        Budget { tokens: w.max_tokens, tokens_revision: w.max_tokens_revision, cost: w.max_cost_usd, cost_revision: w.max_cost_usd_revision }
    }

    fn any(&self) -> bool {
        self.tokens > 0 || self.tokens_revision > 0 || self.cost > 0.0 || self.cost_revision > 0.0
    }
}

/// The meter of one session's agent.
pub(crate) struct Session {
    project: Project,
    agent: String,
    budget: Budget,
    prices: Table,
    /// This session's tokens and cost so far.
    spent: Mutex<(u64, f64)>,
    /// The budget that stopped the agent, once (the user is told once).
    stopped: Mutex<Option<String>>,
    told: AtomicBool,
    /// The turn a spent budget ended went to review.
    ended: AtomicBool,
}

impl Session {
    pub fn new(project: &Project, agent: &str) -> Session {
        Session {
            project: project.clone(),
            agent: agent.to_string(),
            budget: Budget::of(&project.config.wrap),
            prices: Table::load(&project.home.dir),
            spent: Mutex::new((0, 0.0)),
            stopped: Mutex::new(None),
            told: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        }
    }

    /// The meter of agent `agent`'s session, the gateway of `req` reporting to it.
    pub fn attach(project: &Project, agent: &str, req: &mut crate::runbox::wrap::Request) -> std::sync::Arc<Session> {
        let meter = std::sync::Arc::new(Session::new(project, agent));
        if let Some(g) = req.gateway.as_mut() {
            g.meter = meter.clone();
        }
        meter
    }

    /// The budget that stopped the agent, if one did.
    pub fn stopped(&self) -> Option<String> {
        self.stopped.lock().ok().and_then(|s| s.clone())
    }

    /// Once a budget stopped the agent: its turn goes to review with what it has (once);
    /// returns whether it did.
    pub fn end_turn_once(&self, project: &Project, agent: &str) -> crate::error::Result<bool> {
        if self.stopped().is_none() || self.ended.swap(true, Ordering::SeqCst) {
            return Ok(false);
        }
        let executing = project.bin()?.get(agent)?.state == crate::lifecycle::State::Executing;
        if executing && project.existing_overlay(agent)?.is_some_and(|o| o.changed_count().unwrap_or(0) > 0) {
            super::turn_ended(project, agent)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The agent's current revision's tokens and cost.
    fn revision_spent(&self) -> crate::error::Result<(u64, f64)> {
        let bin = self.project.bin()?;
        let rev = bin.get(&self.agent)?.revision;
        let rows = bin.usage_of(&self.agent)?;
        Ok(rows.iter().filter(|r| r.revision == rev).fold((0, 0.0), |(t, c), r| {
            let provider = r.provider.parse().unwrap_or(Provider::Anthropic);
            (t + r.usage.total(), c + self.prices.cost(provider, &r.model, &r.usage).unwrap_or(0.0))
        }))
    }

    /// Which budget is spent, if one is.
    fn over(&self) -> Option<String> {
        let b = self.budget;
        let (tokens, cost) = self.spent.lock().map(|s| *s).unwrap_or_default();
        if b.tokens > 0 && tokens >= b.tokens {
            return Some(format!("this session used {tokens} tokens of its budget of {} ([wrap] max_tokens)", b.tokens));
        }
        if b.cost > 0.0 && cost >= b.cost {
            return Some(format!("this session cost ${cost:.4} of its budget of ${:.4} ([wrap] max_cost_usd)", b.cost));
        }
        if b.tokens_revision > 0 || b.cost_revision > 0.0 {
            let (tokens, cost) = match self.revision_spent() {
                Ok(s) => s,
                Err(e) => return Some(format!("the budget cannot be checked: {e}")),
            };
            if b.tokens_revision > 0 && tokens >= b.tokens_revision {
                return Some(format!("this revision used {tokens} tokens of its budget of {} ([wrap] max_tokens_revision)", b.tokens_revision));
            }
            if b.cost_revision > 0.0 && cost >= b.cost_revision {
                return Some(format!("this revision cost ${cost:.4} of its budget of ${:.4} ([wrap] max_cost_usd_revision)", b.cost_revision));
            }
        }
        None
    }
}

impl Meter for Session {
    fn record(&self, provider: Provider, model: &str, usage: &Usage) {
        if let Ok(mut s) = self.spent.lock() {
            s.0 += usage.total();
            s.1 += self.prices.cost(provider, model, usage).unwrap_or(0.0);
        }
        if let Err(e) = self.project.bin().and_then(|b| b.usage_add(&self.agent, provider.as_str(), model, usage)) {
            tracing::warn!(agent = self.agent, "the usage of a model response was not recorded: {e}");
        }
    }

    fn exhausted(&self) -> Option<String> {
        if !self.budget.any() {
            return None;
        }
        let why = self.over()?;
        if !self.told.swap(true, Ordering::SeqCst) {
            tracing::warn!(agent = self.agent, "budget reached: {why}");
            if let Ok(mut s) = self.stopped.lock() {
                *s = Some(why.clone());
            }
            if let Ok(bin) = self.project.bin() {
                if let Ok(rec) = bin.get(&self.agent) {
                    let _ = bin.append(&self.agent, rec.state, &crate::events::EventKind::Log { message: format!("budget reached: {why}; its model requests are refused") });
                }
            }
        }
        Some(why)
    }
}
