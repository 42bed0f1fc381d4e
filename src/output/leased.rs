//! The JSON of URLs handed out or due (`sitemapd queue`, the daemon's
//! `POST /v1/lease`), one shape for both.

use serde_json::{Value, json};
use sitemapd_scheduler::Leased;
use sitemapd_scheduler::policy::Reason;

/// One URL of a lease or a peek: the scheduler's [`Leased`] (`url`, `due`,
/// `score`, `reason`, `not_before`; for a lease `lease` and `expires`), with
/// two changes for a lease: `lease`, the id, is a string (ids are 64-bit,
/// and JavaScript or jq would round them as numbers), and `reason` is
/// `leased`, as everywhere a URL under a live lease is shown, with
/// `due_reason` beside it saying why it was due (its urgency class).
pub(crate) fn leased_json(item: &Leased) -> Value {
    let mut v = serde_json::to_value(item).unwrap_or(Value::Null);
    if let (Some(id), Value::Object(map)) = (item.lease, &mut v) {
        map.insert("lease".into(), Value::String(id.to_string()));
        map.insert("due_reason".into(), json!(item.reason));
        map.insert("reason".into(), json!(Reason::Leased));
    }
    v
}
