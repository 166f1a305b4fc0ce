//! Change notifications: who wants to hear that resources (or the tool or prompt list) changed,
//! and delivering it.
//!
//! Two shapes, one per era. In the handshake era a session subscribes to resource URIs with
//! `resources/subscribe` and hears `notifications/resources/updated` for them, and every
//! initialised session hears `notifications/resources/list_changed` (and the tool and prompt
//! list changes). In 2026-07-28 a client opens a stream with `subscriptions/listen` naming what
//! it wants (`toolsListChanged`, `promptsListChanged`, `resourcesListChanged`,
//! `resourceSubscriptions`); the server acknowledges with
//! `notifications/subscriptions/acknowledged` and sends only what was asked, each message
//! carrying the request's id as `io.modelcontextprotocol/subscriptionId`. Such a stream lives as
//! long as its request: cancelling the request ends it, and the server's closing signal ends it
//! gracefully with a result. Listeners are kept in the server's [`crate::SessionSet`], because a
//! 2026-07-28 request has no registered session (on HTTP each request gets a fresh one).

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::protocol::{RpcError, notification};

/// The `_meta` key naming the `subscriptions/listen` request a message belongs to.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What a `subscriptions/listen` stream asked for (and, acknowledged, what it gets).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub tools_list_changed: bool,
    pub prompts_list_changed: bool,
    pub resources_list_changed: bool,
    pub resource_uris: BTreeSet<String>,
}

impl Filter {
    /// Reads `params.notifications`. Types this server never sends are left out, as the
    /// acknowledgement must: resource types when `resources` is false, `promptsListChanged`
    /// when `prompts` is.
    pub fn parse(params: &Map<String, Value>, resources: bool, prompts: bool) -> Result<Filter, RpcError> {
        let n = match params.get("notifications") {
            None | Some(Value::Null) => return Ok(Filter::default()),
            Some(Value::Object(n)) => n,
            Some(_) => return Err(RpcError::invalid_params("`notifications` must be an object")),
        };
        let flag = |k: &str| -> Result<bool, RpcError> {
            match n.get(k) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(RpcError::invalid_params(format!("`notifications.{k}` must be a boolean"))),
            }
        };
        let mut uris = BTreeSet::new();
        match n.get("resourceSubscriptions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for item in items {
                    match item.as_str() {
                        Some(u) if !u.trim().is_empty() => {
                            uris.insert(u.to_string());
                        }
                        _ => {
                            return Err(RpcError::invalid_params(
                                "`notifications.resourceSubscriptions` must list resource URIs (strings)",
                            ));
                        }
                    }
                }
            }
            Some(_) => return Err(RpcError::invalid_params("`notifications.resourceSubscriptions` must be an array")),
        }
        Ok(Filter {
            tools_list_changed: flag("toolsListChanged")?,
            prompts_list_changed: prompts && flag("promptsListChanged")?,
            resources_list_changed: resources && flag("resourcesListChanged")?,
            resource_uris: if resources { uris } else { BTreeSet::new() },
        })
    }

    /// The filter as the acknowledgement states it.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if self.tools_list_changed {
            out.insert("toolsListChanged".into(), Value::Bool(true));
        }
        if self.prompts_list_changed {
            out.insert("promptsListChanged".into(), Value::Bool(true));
        }
        if self.resources_list_changed {
            out.insert("resourcesListChanged".into(), Value::Bool(true));
        }
        if !self.resource_uris.is_empty() {
            out.insert("resourceSubscriptions".into(), json!(self.resource_uris));
        }
        Value::Object(out)
    }
}

/// One open `subscriptions/listen` stream.
struct Listener {
    /// The request's id: the subscription's id.
    id: Value,
    filter: Filter,
    out: mpsc::Sender<String>,
}

/// The open streams of a server.
#[derive(Default)]
pub struct Listeners {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Listener>>,
}

/// Removes its stream from the server's listeners when dropped (the request ended, however).
pub struct ListenerGuard<'a> {
    listeners: &'a Listeners,
    key: u64,
}

impl Drop for ListenerGuard<'_> {
    fn drop(&mut self) {
        self.listeners.open.lock().expect("listeners lock").remove(&self.key);
    }
}

/// A notification on subscription `id`.
fn on_subscription(method: &str, id: &Value, mut params: Map<String, Value>) -> String {
    params.insert("_meta".into(), json!({ META_SUBSCRIPTION_ID: id }));
    notification(method, Value::Object(params)).to_string()
}

/// The acknowledgement that opens stream `id`.
pub fn acknowledgement(id: &Value, filter: &Filter) -> String {
    let mut params = Map::new();
    params.insert("notifications".into(), filter.to_json());
    on_subscription("notifications/subscriptions/acknowledged", id, params)
}

/// The result that ends stream `id` gracefully.
pub fn closing_result(id: &Value) -> Value {
    json!({ "resultType": "complete", "_meta": { META_SUBSCRIPTION_ID: id } })
}

impl Listeners {
    /// Opens stream `id`: the acknowledgement goes out first, then the stream is live until
    /// the guard drops.
    pub fn open(&self, id: Value, filter: Filter, out: mpsc::Sender<String>) -> ListenerGuard<'_> {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let _ = out.try_send(acknowledgement(&id, &filter));
        self.open.lock().expect("listeners lock").insert(key, Listener { id, filter, out });
        ListenerGuard { listeners: self, key }
    }

    pub fn count(&self) -> usize {
        self.open.lock().expect("listeners lock").len()
    }

    /// Sends to every stream `wants` accepts; a stream whose reader is too slow misses it.
    fn send(&self, method: &str, params: &Map<String, Value>, wants: impl Fn(&Filter) -> bool) {
        for l in self.open.lock().expect("listeners lock").values() {
            if wants(&l.filter) {
                let _ = l.out.try_send(on_subscription(method, &l.id, params.clone()));
            }
        }
    }

    pub fn tools_changed(&self) {
        self.send("notifications/tools/list_changed", &Map::new(), |f| f.tools_list_changed);
    }

    pub fn prompts_changed(&self) {
        self.send("notifications/prompts/list_changed", &Map::new(), |f| f.prompts_list_changed);
    }

    pub fn resources_list_changed(&self) {
        self.send("notifications/resources/list_changed", &Map::new(), |f| f.resources_list_changed);
    }

    pub fn resource_updated(&self, uri: &str) {
        let mut params = Map::new();
        params.insert("uri".into(), Value::from(uri));
        self.send("notifications/resources/updated", &params, |f| f.resource_uris.contains(uri));
    }
}

/// `notifications/resources/updated` for `uri`, as a handshake-era session hears it.
pub fn updated_line(uri: &str) -> String {
    notification("notifications/resources/updated", json!({ "uri": uri })).to_string()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::session::{Session, Transport};
    use crate::testing;

    async fn next(rx: &mut mpsc::Receiver<String>) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("in time").expect("open");
        serde_json::from_str(&line).unwrap()
    }

    async fn send(d: &crate::Dispatcher<testing::FakeApp>, s: &Arc<Session>, v: Value) {
        d.on_line(s, v.to_string().as_bytes()).await;
    }

    #[tokio::test]
    async fn handshake_sessions_subscribe_to_uris_and_hear_list_changes() {
        let d = testing::dispatcher();
        let (s, mut rx) = testing::session(&d, Transport::Stdio);
        let init =
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}});
        send(&d, &s, init).await;
        let caps = next(&mut rx).await["result"]["capabilities"]["resources"].clone();
        assert_eq!(caps, json!({"subscribe": true, "listChanged": true}));
        send(&d, &s, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let sub =
            json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "fake://greeting"}});
        send(&d, &s, sub).await;
        assert_eq!(next(&mut rx).await["result"], json!({}));
        let _registered = d.sessions().register(&s);
        d.sessions().notify_resource_updated("fake://other");
        d.sessions().notify_resource_updated("fake://greeting");
        let n = next(&mut rx).await;
        assert_eq!(
            (n["method"].as_str(), n["params"]["uri"].as_str()),
            (Some("notifications/resources/updated"), Some("fake://greeting"))
        );
        d.sessions().notify_resources_list_changed();
        assert_eq!(next(&mut rx).await["method"], "notifications/resources/list_changed");
        let unsub =
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/unsubscribe", "params": {"uri": "fake://greeting"}});
        send(&d, &s, unsub).await;
        assert_eq!(next(&mut rx).await["id"], 2);
        d.sessions().notify_resource_updated("fake://greeting");
        d.sessions().notify_resources_list_changed();
        assert_eq!(
            next(&mut rx).await["method"],
            "notifications/resources/list_changed",
            "no update after unsubscribe"
        );
    }

    #[tokio::test]
    async fn a_listen_stream_is_acknowledged_fed_and_ended() {
        let d = testing::dispatcher();
        let (s, mut rx) = testing::session(&d, Transport::Socket);
        let listen = json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            "notifications": {"resourceSubscriptions": ["fake://greeting"], "toolsListChanged": true}}});
        send(&d, &s, listen).await;
        let ack = next(&mut rx).await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], "sub-1");
        while d.sessions().listeners.count() == 0 {
            tokio::task::yield_now().await;
        }
        d.sessions().notify_resource_updated("fake://greeting");
        let n = next(&mut rx).await;
        assert_eq!(n["params"]["uri"], "fake://greeting");
        assert_eq!(n["params"]["_meta"][META_SUBSCRIPTION_ID], "sub-1");
        d.sessions().notify_prompts_changed();
        d.sessions().notify_tools_changed();
        assert_eq!(next(&mut rx).await["method"], "notifications/tools/list_changed", "prompts were not asked for");
        // The transport stops reading: the stream ends with its result.
        s.streams_end.cancel();
        let end = next(&mut rx).await;
        assert_eq!(end["id"], "sub-1");
        assert_eq!(end["result"]["_meta"][META_SUBSCRIPTION_ID], "sub-1");
        assert_eq!(end["result"]["resultType"], "complete");
        // The handshake era's method is not served in 2026-07-28, and vice versa.
        let old = json!({"jsonrpc": "2.0", "id": 9, "method": "resources/subscribe", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, "uri": "fake://greeting"}});
        send(&d, &s, old).await;
        assert_eq!(next(&mut rx).await["error"]["code"], -32601);
    }

    #[test]
    fn filter_keeps_only_what_is_served() {
        let p = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true,
            "resourcesListChanged": true, "resourceSubscriptions": ["a://x", "a://x", "b://y"]}});
        let f = Filter::parse(p.as_object().unwrap(), true, true).unwrap();
        assert_eq!(
            f.to_json(),
            json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
                   "resourceSubscriptions": ["a://x", "b://y"]})
        );
        let f = Filter::parse(p.as_object().unwrap(), false, false).unwrap();
        assert_eq!(f.to_json(), json!({"toolsListChanged": true}));
        let bad = json!({"notifications": {"resourceSubscriptions": [1]}});
        assert!(Filter::parse(bad.as_object().unwrap(), true, true).is_err());
    }

    #[test]
    fn streams_hear_only_what_they_asked_for_after_the_acknowledgement() {
        let listeners = Listeners::default();
        let (tx, mut rx) = mpsc::channel(8);
        let filter = Filter { resource_uris: ["a://x".to_string()].into(), ..Filter::default() };
        let guard = listeners.open(json!(7), filter, tx);
        listeners.resource_updated("a://other");
        listeners.tools_changed();
        listeners.resource_updated("a://x");
        let ack: Value = serde_json::from_str(&rx.try_recv().unwrap()).unwrap();
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
        let upd: Value = serde_json::from_str(&rx.try_recv().unwrap()).unwrap();
        assert_eq!(upd["method"], "notifications/resources/updated");
        assert_eq!(upd["params"]["uri"], "a://x");
        assert_eq!(upd["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
        assert!(rx.try_recv().is_err());
        drop(guard);
        assert_eq!(listeners.count(), 0);
    }
}
