//! The `/metrics` endpoint (hyper 1.x, HTTP/1.1). The body is rendered by
//! the sampler after each sample; a request only copies it, so no client
//! (slow, huge headers, odd paths) can hold up sampling. Limits come from
//! hyper's configuration: header read timeout, read buffer size (headers
//! beyond it get 431), plus a whole-connection time limit and a cap on
//! open connections.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{ACCEPT, ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

/// The two encodings of the last sample.
#[derive(Debug, Default)]
pub struct Bodies {
    pub openmetrics: Bytes,
    pub text: Bytes,
}

/// Requests answered, for the exporter's own health metrics.
#[derive(Debug, Default)]
pub struct Stats {
    pub openmetrics: AtomicU64,
    pub text: AtomicU64,
    /// Answered with an error (404, 405, 503).
    pub errors: AtomicU64,
}

/// What the sampler and the server share.
#[derive(Debug, Default)]
pub struct State {
    pub bodies: RwLock<Bodies>,
    pub stats: Stats,
}

pub type Shared = Arc<State>;

pub const OPENMETRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const TEXT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Connections served at once; more wait in the kernel's backlog.
const MAX_CONNECTIONS: usize = 64;
/// Time to send the request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Time a connection may live (a scrape takes milliseconds).
const CONNECTION_LIMIT: Duration = Duration::from_secs(30);
/// Read buffer, and so the largest request head (hyper's minimum is 8 KiB).
const MAX_HEAD: usize = 16 * 1024;

/// True when the scraper asks for OpenMetrics (Prometheus does, first).
pub fn wants_openmetrics(accept: Option<&HeaderValue>) -> bool {
    accept
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("application/openmetrics-text"))
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// Answer one request, counting it.
pub fn respond(state: &Shared, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let r = answer(state, req.method(), req.uri().path(), req.headers().get(ACCEPT));
    let s = &state.stats;
    let counter = if !r.status().is_success() {
        &s.errors
    } else if r.headers().get(CONTENT_TYPE).is_some_and(|t| t == OPENMETRICS_TYPE) {
        &s.openmetrics
    } else {
        &s.text
    };
    counter.fetch_add(1, Ordering::Relaxed);
    r
}

fn answer(state: &Shared, method: &Method, path: &str, accept: Option<&HeaderValue>) -> Response<Full<Bytes>> {
    if path != "/metrics" {
        return plain(StatusCode::NOT_FOUND, "not found: iolens serves /metrics\n");
    }
    if method != Method::GET && method != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed: use GET\n");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let om = wants_openmetrics(accept);
    let b = state.bodies.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (body, ty) = if om {
        (b.openmetrics.clone(), OPENMETRICS_TYPE)
    } else {
        (b.text.clone(), TEXT_TYPE)
    };
    drop(b);
    if body.is_empty() {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "no sample yet\n");
    }
    let mut r = Response::new(Full::new(body));
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ty));
    r
}

/// Bind `addr` (an error names it).
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("listening on {addr}: {e}"))
}

/// Serve until the task is dropped.
pub async fn serve(listener: TcpListener, bodies: Shared) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // EMFILE and the like: wait a little instead of spinning.
                eprintln!("iolens: accepting a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let bodies = bodies.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let r = respond(&bodies, &req);
                async move { Ok::<_, Infallible>(r) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(MAX_HEAD)
                .serve_connection(TokioIo::new(stream), service);
            // A client that stalls is cut off; errors (bad requests) have
            // been answered by hyper where HTTP allows it.
            let _ = tokio::time::timeout(CONNECTION_LIMIT, conn).await;
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_metrics_is_served() {
        let state = Shared::default();
        let get = |path| answer(&state, &Method::GET, path, None).status();
        // Before the first sample.
        assert_eq!(get("/metrics"), StatusCode::SERVICE_UNAVAILABLE);
        state.bodies.write().unwrap().text = Bytes::from_static(b"iolens_samples_total 1\n");
        assert_eq!(get("/metrics"), StatusCode::OK);
        // The README: other paths get 404, "/" included.
        for path in ["/", "/index.html", "/metrics/", "/other"] {
            assert_eq!(get(path), StatusCode::NOT_FOUND, "{path}");
        }
        let post = answer(&state, &Method::POST, "/metrics", None);
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
}
