//! The gateway's own answers, in each provider's error shape, so the CLI reads them as it
//! reads its provider's: an exhausted quota (a spent budget) as the one the CLI stops on
//! rather than retries (Anthropic's `billing_error`, OpenAI's `insufficient_quota`, Google's
//! `RESOURCE_EXHAUSTED` with a daily quota's violation), a wrong credential, a path the
//! gateway does not forward, a request too large, an upstream that did not answer.

use super::Provider;
use serde_json::json;

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    Quota,
    Auth,
    NotFound,
    TooLarge,
    Upstream,
}

/// The status and JSON body of the error `why` from `provider`, saying `message`.
pub(super) fn error(provider: Provider, why: Why, message: &str) -> (u16, String) {
    let message = format!("cairn gateway: {message}");
    let body = match provider {
        Provider::Anthropic => {
            let (status, kind) = match why {
                Why::Quota => (402, "billing_error"),
                Why::Auth => (401, "authentication_error"),
                Why::NotFound => (404, "not_found_error"),
                Why::TooLarge => (413, "request_too_large"),
                Why::Upstream => (502, "api_error"),
            };
            (status, json!({"type": "error", "error": {"type": kind, "message": message}}))
        }
        Provider::OpenAi => {
            let (status, kind, code) = match why {
                Why::Quota => (429, "insufficient_quota", "insufficient_quota"),
                Why::Auth => (401, "invalid_request_error", "invalid_api_key"),
                Why::NotFound => (404, "invalid_request_error", "unknown_url"),
                Why::TooLarge => (413, "invalid_request_error", "request_too_large"),
                Why::Upstream => (502, "server_error", "bad_gateway"),
            };
            (status, json!({"error": {"message": message, "type": kind, "param": null, "code": code}}))
        }
        Provider::Gemini => {
            let (status, kind) = match why {
                Why::Quota => (429, "RESOURCE_EXHAUSTED"),
                Why::Auth => (401, "UNAUTHENTICATED"),
                Why::NotFound => (404, "NOT_FOUND"),
                Why::TooLarge => (400, "INVALID_ARGUMENT"),
                Why::Upstream => (502, "UNAVAILABLE"),
            };
            let details = if why == Why::Quota {
                json!([{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "cairn/wrap_budget", "quotaId": "CairnBudgetPerDay"}]}])
            } else {
                json!([])
            };
            (status, json!({"error": {"code": status, "message": message, "status": kind, "details": details}}))
        }
    };
    (body.0, body.1.to_string())
}

/// The reason phrase of the statuses the gateway answers with.
pub(super) fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        _ => "Bad Gateway",
    }
}
