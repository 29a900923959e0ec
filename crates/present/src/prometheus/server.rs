//! The HTTP server of `--prometheus`: one thread, one current-thread runtime, and bounds on
//! all that a client can make it hold, so no request or crowd of connections can stop a
//! scrape, grow the process (whose memory the run may lock) or end the run.

use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::body::{Body, Bytes, Incoming};
use hyper::header::{
    ACCEPT, ALLOW, CONNECTION, CONTENT_TYPE as CONTENT_TYPE_HEADER, HeaderValue, VARY,
};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::registry::Registry;
use tokio::sync::{Semaphore, oneshot};

use super::{Format, encode};

/// Connections served at once; past it a new connection is closed at once. Far more than
/// the Prometheus servers and curls that scrape one run, yet their buffers (at most
/// [`MAX_HEAD_BYTES`] each) stay a few MiB.
pub const MAX_CONNECTIONS: usize = 1024;

/// The largest request head (request line and headers) read, the connection's read
/// buffer: a scrape's head is a few hundred bytes. Past it the answer is a 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// How long a client has to send a request's head, from its connection or its previous
/// answer: a client that sends nothing, or a byte at a time, goes away by itself.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a connection lives, reading and writing, whatever it does (a reader that
/// takes an answer slowly included). Prometheus's scrapes are 10 s apart at the least by
/// default, so a kept-alive connection would idle past it anyway; it connects again.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);

/// The server thread's stack. Under mlockall(MCL_FUTURE) a new thread's stack is resident
/// whole, so it is small: answering a scrape needs little (the tasks live on the heap).
const STACK_BYTES: usize = 256 * 1024;

/// The pause after a failed accept: out of file descriptors, the connection stays queued
/// and accepting again at once would spin.
const ACCEPT_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// The name of the server's thread.
pub const THREAD_NAME: &str = "irqlens/metrics";

/// What clients can make the server hold, the constants above unless a test says otherwise.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections served at once.
    pub connections: usize,
    /// The largest request head, bytes.
    pub head_bytes: usize,
    /// The time a client has to send a request's head.
    pub header_timeout: Duration,
    /// The time a connection lives.
    pub connection_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // half the open files at most, so that the run's own files never run short
            connections: MAX_CONNECTIONS.min(open_file_limit() / 2),
            head_bytes: MAX_HEAD_BYTES,
            header_timeout: HEADER_READ_TIMEOUT,
            connection_deadline: CONNECTION_DEADLINE,
        }
    }
}

/// The process's soft limit on open files (as good as none when it cannot be read).
fn open_file_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a live rlimit for the call to fill.
    match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX),
        _ => usize::MAX,
    }
}

/// The HTTP server and its thread. Dropping it stops both: the listening socket and every
/// connection close, and the thread is joined.
pub struct Serving {
    /// Dropped to stop the server.
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Serving {
    /// Serves `registry` on `listener` from a thread spawned by the calling one, whose CPU
    /// affinity it inherits.
    pub fn start(listener: TcpListener, registry: Registry, limits: Limits) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .context("cannot serve")?;
        listener.set_nonblocking(true)?;
        let listener = {
            let _in_runtime = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .stack_size(STACK_BYTES)
            .spawn(move || {
                unlock_own_stack();
                runtime.spawn(accept(listener, Arc::new(registry), limits));
                // until Serving is dropped, and its sender with it
                let _ = runtime.block_on(stopped);
                // dropping the runtime drops every task: the listener and each connection
                // close
            })?;
        Ok(Serving {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections and serves each in a task of its own, within `limits`.
async fn accept(listener: tokio::net::TcpListener, registry: Arc<Registry>, limits: Limits) {
    let connections = Arc::new(Semaphore::new(limits.connections));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.head_bytes)
        // header names as most servers write them, for the simplest scrapers
        .title_case_headers(true);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(ACCEPT_RETRY_PAUSE).await;
                continue;
            }
        };
        // past the limit the stream is dropped: closed at once
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            continue;
        };
        let registry = Arc::clone(&registry);
        let service = service_fn(move |request| {
            let response = respond(&request, &registry);
            async move { Ok::<_, Infallible>(response) }
        });
        let connection = http.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            // a client that errs or overstays is its own problem
            let _ = tokio::time::timeout(limits.connection_deadline, connection).await;
            drop(permit);
        });
    }
}

const TEXT: &str = "text/plain; charset=utf-8";
const NOT_FOUND: &str = "Not found: irqlens serves GET /metrics\n";
const NOT_ALLOWED: &str = "Method not allowed: irqlens serves GET /metrics\n";

/// The answer to `request`: the metrics for GET /metrics, in the format its `Accept`
/// header asks for, 405 for another method, 404 for another path. The body is whole, sent with its length (never in chunks, for the
/// simplest scrapers). A request's body is never read: the connection closes after the
/// answer instead, so a claimed length costs nothing.
fn respond(request: &Request<Incoming>, registry: &Registry) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (request.method(), request.uri().path()) {
        (&Method::GET, "/metrics") => {
            let accept = request.headers().get(ACCEPT);
            let format = Format::negotiate(accept.and_then(|a| a.to_str().ok()));
            (
                StatusCode::OK,
                format.content_type(),
                encode(registry, format),
            )
        }
        (_, "/metrics") => (StatusCode::METHOD_NOT_ALLOWED, TEXT, NOT_ALLOWED.into()),
        _ => (StatusCode::NOT_FOUND, TEXT, NOT_FOUND.into()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE_HEADER, HeaderValue::from_static(content_type));
    if status == StatusCode::OK {
        // a cache between must not hand one client's format to another
        headers.insert(VARY, HeaderValue::from_static("Accept"));
    }
    if status == StatusCode::METHOD_NOT_ALLOWED {
        headers.insert(ALLOW, HeaderValue::from_static("GET"));
    }
    if !request.body().is_end_stream() {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Unlocks the calling thread's stack: the run may have locked all memory to come
/// (mlockall(MCL_FUTURE)) before this thread started, and it only answers scrapes.
pub fn unlock_own_stack() {
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread, alive while it runs
    // this; the stack it gives is this thread's own mapping, which munlock only lets be
    // paged out; `attr` is destroyed once read.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) == 0 {
            let (mut stack, mut size) = (std::ptr::null_mut(), 0);
            if libc::pthread_attr_getstack(&attr, &mut stack, &mut size) == 0 {
                // best effort: the stack is small anyway
                libc::munlock(stack, size);
            }
            libc::pthread_attr_destroy(&mut attr);
        }
    }
}
