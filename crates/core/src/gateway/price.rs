//! What tokens cost: a price table of model-name prefixes (USD per million tokens: input,
//! output, cache read, cache write), built in for the common models and overridden or extended
//! by the user's `$CAIRN_HOME/prices.toml` (`[models."PREFIX"] input = 3.0 ...`); the longest
//! prefix that matches a model wins, and a model none matches has no cost (never a guess).
//! OpenAI and Gemini count cached tokens inside the input; Anthropic apart from it.

use super::{Provider, Usage};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
}

/// Built-in prices (list prices when written; `prices.toml` wins).
const BUILT_IN: &[(&str, f64, f64, f64, f64)] = &[
    ("claude-opus-4-5", 5.0, 25.0, 0.5, 6.25),
    ("claude-opus-4", 15.0, 75.0, 1.5, 18.75),
    ("claude-sonnet-4", 3.0, 15.0, 0.3, 3.75),
    ("claude-3-7-sonnet", 3.0, 15.0, 0.3, 3.75),
    ("claude-haiku-4-5", 1.0, 5.0, 0.1, 1.25),
    ("claude-3-5-haiku", 0.8, 4.0, 0.08, 1.0),
    ("gpt-5-mini", 0.25, 2.0, 0.025, 0.0),
    ("gpt-5-nano", 0.05, 0.4, 0.005, 0.0),
    ("gpt-5", 1.25, 10.0, 0.125, 0.0),
    ("gpt-4.1-mini", 0.4, 1.6, 0.1, 0.0),
    ("gpt-4.1", 2.0, 8.0, 0.5, 0.0),
    ("gpt-4o-mini", 0.15, 0.6, 0.075, 0.0),
    ("gpt-4o", 2.5, 10.0, 1.25, 0.0),
    ("o4-mini", 1.1, 4.4, 0.275, 0.0),
    ("o3", 2.0, 8.0, 0.5, 0.0),
    ("gemini-2.5-pro", 1.25, 10.0, 0.31, 0.0),
    ("gemini-2.5-flash-lite", 0.1, 0.4, 0.025, 0.0),
    ("gemini-2.5-flash", 0.3, 2.5, 0.075, 0.0),
];

/// The table: prefix → price.
#[derive(Debug, Clone, Default)]
pub struct Table(BTreeMap<String, Price>);

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    models: BTreeMap<String, Price>,
}

impl Table {
    /// The built-in table with `$CAIRN_HOME/prices.toml` over it (a file that does not parse
    /// is left out, with a warning in the log).
    pub fn load(cairn_home: &Path) -> Table {
        let path = cairn_home.join("prices.toml");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        Table::with(&text).unwrap_or_else(|e| {
            tracing::warn!("{}: {e} (left out)", path.display());
            Table::with("").unwrap_or_default()
        })
    }

    /// The built-in table with the user's `text` (prices.toml) over it.
    pub fn with(text: &str) -> Result<Table, String> {
        let mut t = Table(BUILT_IN.iter().map(|(m, i, o, r, w)| (m.to_string(), Price { input: *i, output: *o, cache_read: Some(*r), cache_write: Some(*w) })).collect());
        t.0.extend(toml::from_str::<File>(text).map_err(|e| e.to_string())?.models);
        Ok(t)
    }

    /// The price of `model`: the longest matching prefix's.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.0.iter().filter(|(p, _)| model.starts_with(p.as_str())).max_by_key(|(p, _)| p.len()).map(|(_, price)| *price)
    }

    /// What `usage` of `model` from `provider` cost, in USD.
    pub fn cost(&self, provider: Provider, model: &str, u: &Usage) -> Option<f64> {
        let p = self.price(model)?;
        let m = |n: u64, per: f64| n as f64 * per / 1e6;
        let read = p.cache_read.unwrap_or(p.input);
        let write = p.cache_write.unwrap_or(p.input);
        let fresh_input = match provider {
            Provider::Anthropic => u.input_tokens,
            Provider::OpenAi | Provider::Gemini => u.input_tokens.saturating_sub(u.cache_read_tokens),
        };
        Some(m(fresh_input, p.input) + m(u.output_tokens, p.output) + m(u.cache_read_tokens, read) + m(u.cache_write_tokens, write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_prices_and_the_users_file_wins() {
        let t = Table::with("[models.\"claude-sonnet-4\"]\ninput = 2.0\noutput = 10.0\n[models.\"local-\"]\ninput = 0.0\noutput = 0.0\n").unwrap();
        assert!(Table::with("[models.x]\ninput = \"free\"\n").is_err());
        let u = Usage { input_tokens: 1_000_000, output_tokens: 1_000_000, cache_read_tokens: 0, cache_write_tokens: 0 };
        assert_eq!(t.cost(Provider::Anthropic, "claude-sonnet-4-5-20250929", &u), Some(12.0));
        assert_eq!(t.cost(Provider::Anthropic, "claude-opus-4-5-x", &u), Some(30.0));
        assert_eq!(t.cost(Provider::OpenAi, "local-llama", &u), Some(0.0));
        assert_eq!(t.cost(Provider::OpenAi, "mystery", &u), None);
        let cached = Usage { input_tokens: 1_000_000, output_tokens: 0, cache_read_tokens: 1_000_000, cache_write_tokens: 0 };
        assert_eq!(t.cost(Provider::OpenAi, "gpt-5", &cached), Some(0.125));
    }
}
