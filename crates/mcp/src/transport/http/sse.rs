//! Server-sent events for the HTTP transport: one JSON-RPC message per `message` event, the
//! priming event (an id, a `retry` and empty data) that 2025-11-25 GET streams start with, and
//! keep-alive comments so idle streams survive proxies and client timeouts. Framed by hand
//! because the priming event needs an explicit empty `data:` line, which clients require before
//! they treat it as an event.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::stream::{BoxStream, Stream, StreamExt};

const KEEPALIVE: &[u8] = b": keep-alive\n\n";

/// How long a client waits before reconnecting a GET stream that the server closed.
pub const RETRY: Duration = Duration::from_secs(2);

/// One JSON-RPC message as an event. Serialised JSON has no raw line breaks, so one `data:`
/// line carries it.
pub fn message(json: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {json}\n\n"))
}

/// The event that lets a 2025-11-25 client resume: an id, the reconnect delay, empty data.
pub fn priming(id: &str, retry: Duration) -> Bytes {
    Bytes::from(format!("id: {id}\nretry: {}\ndata: \n\n", retry.as_millis()))
}

/// An event-stream response carrying `events`, with a keep-alive comment every `keepalive`.
/// The response ends when `events` ends.
pub fn response<S>(events: S, keepalive: Duration) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let body = with_keepalive(events.boxed(), keepalive).map(Ok::<_, Infallible>);
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            // Proxies such as nginx would otherwise buffer the stream.
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

fn with_keepalive(events: BoxStream<'static, Bytes>, every: Duration) -> impl Stream<Item = Bytes> + Send + 'static {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    futures::stream::unfold((events, tick), |(mut events, mut tick)| async move {
        tokio::select! {
            // Messages first: a keep-alive never delays one.
            biased;
            next = events.next() => next.map(|b| (b, (events, tick))),
            _ = tick.tick() => Some((Bytes::from_static(KEEPALIVE), (events, tick))),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing() {
        assert_eq!(&message(r#"{"a":"x\ny"}"#)[..], b"event: message\ndata: {\"a\":\"x\\ny\"}\n\n");
        assert_eq!(&priming("7", Duration::from_millis(2500))[..], b"id: 7\nretry: 2500\ndata: \n\n");
    }

    #[tokio::test(start_paused = true)]
    async fn keepalive_fills_silence_and_the_stream_ends_with_its_events() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
        let events = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        let mut s = Box::pin(with_keepalive(events.boxed(), Duration::from_secs(5)));
        assert_eq!(&s.next().await.unwrap()[..], KEEPALIVE);
        tx.send(Bytes::from_static(b"x")).await.unwrap();
        assert_eq!(&s.next().await.unwrap()[..], b"x");
        drop(tx);
        assert!(s.next().await.is_none());
    }
}
