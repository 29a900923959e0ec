//! Clients of an HTTP server on this machine, polite and hostile, for the tests of
//! `--prometheus`'s endpoint (in-process and against the binary): a whole GET, and
//! connections that claim a body they never send, send a large one, send their head a
//! byte at a time, send a head past any bound, or send nothing; whether the server closed
//! one; and the memory and threads of a process.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a polite GET waits for its answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// The pieces a large body or header is sent in, so that the client holds little.
static PIECE: [u8; 64 * 1024] = [b'a'; 64 * 1024];

/// `method` `path` with `Connection: close`: the whole response, head and body, within
/// 5 s.
pub fn request(address: SocketAddr, method: &str, path: &str) -> io::Result<String> {
    request_with(address, method, path, "")
}

/// `request` with `headers` (each line ending in `\r\n`) besides its own.
fn request_with(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
) -> io::Result<String> {
    let mut stream = try_connect(address)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: test\r\n{headers}Connection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

/// GET `path`: the whole response. Panics if it does not come within 5 s.
pub fn get(address: SocketAddr, path: &str) -> String {
    request(address, "GET", path).unwrap_or_else(|err| panic!("GET {path} from {address}: {err}"))
}

/// GET `path` with an `Accept` header: the whole response. Panics as [`get`].
pub fn get_accepting(address: SocketAddr, path: &str, accept: &str) -> String {
    request_with(address, "GET", path, &format!("Accept: {accept}\r\n"))
        .unwrap_or_else(|err| panic!("GET {path} from {address}: {err}"))
}

fn try_connect(address: SocketAddr) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
    Ok(stream)
}

fn connect(address: SocketAddr) -> TcpStream {
    try_connect(address).unwrap_or_else(|err| panic!("connecting to {address}: {err}"))
}

/// A connection that sent `GET /metrics` claiming a body of `claimed` bytes, and no byte
/// of it.
pub fn claimed_body(address: SocketAddr, claimed: u64) -> TcpStream {
    let mut stream = connect(address);
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: test\r\nContent-Length: {claimed}\r\n\r\n"
    )
    .unwrap();
    stream
}

/// A connection that sends `GET /metrics` with a body of `bytes`, from a thread that
/// ends when all is sent or the server stops taking it. The thread gives the connection
/// back, still open.
pub fn sent_body(address: SocketAddr, bytes: usize) -> JoinHandle<TcpStream> {
    let mut stream = connect(address);
    std::thread::spawn(move || {
        let head =
            format!("GET /metrics HTTP/1.1\r\nHost: test\r\nContent-Length: {bytes}\r\n\r\n");
        // the server answers without reading the body, then closes: a write then fails
        let _ = stream
            .write_all(head.as_bytes())
            .and_then(|()| send_pieces(&mut stream, bytes));
        stream
    })
}

fn send_pieces(stream: &mut TcpStream, mut bytes: usize) -> io::Result<()> {
    while bytes > 0 {
        let piece = bytes.min(PIECE.len());
        stream.write_all(&PIECE[..piece])?;
        bytes -= piece;
    }
    Ok(())
}

/// A connection that sends a request head one byte each `pause`, from a thread that ends
/// after `bytes` (the head never ends) or when the server has closed the connection.
/// Returns a handle of the connection to read from.
pub fn slow_head(address: SocketAddr, pause: Duration, bytes: usize) -> TcpStream {
    let stream = connect(address);
    let mut writer = stream.try_clone().unwrap();
    std::thread::spawn(move || {
        let head = b"GET /metrics HTTP/1.1\r\nHost: test\r\nX-Slow: ".iter();
        for &byte in head.chain(PIECE.iter()).take(bytes) {
            if writer.write_all(&[byte]).is_err() {
                return;
            }
            std::thread::sleep(pause);
        }
    });
    stream
}

/// A connection that sent (as much as the server took of) a request head with one header
/// of `bytes`.
pub fn large_header(address: SocketAddr, bytes: usize) -> TcpStream {
    let mut stream = connect(address);
    // the server answers 431 past its bound and closes: a write then fails
    let _ = stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\nX-Large: ")
        .and_then(|()| send_pieces(&mut stream, bytes))
        .and_then(|()| stream.write_all(b"\r\n\r\n"));
    stream
}

/// `count` connections that send nothing.
pub fn idle(address: SocketAddr, count: usize) -> Vec<TcpStream> {
    (0..count).map(|_| connect(address)).collect()
}

/// How the server ended a connection, as its client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// End of file: the server closed it, having read all that was sent.
    Eof,
    /// A reset: the server closed it with bytes unread.
    Reset,
}

/// How the server ended `stream` within `limit` (what it sent first is read and dropped),
/// or `None` if it is still open then.
pub fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Closed> {
    let deadline = Instant::now() + limit;
    let mut sink = [0; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut sink) {
            Ok(0) => return Some(Closed::Eof),
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::ConnectionReset => {
                return Some(Closed::Reset);
            }
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(err) => panic!("reading a connection: {err}"),
        }
    }
}

/// Whether `stream` is still open: nothing to read, no end of file, no reset.
pub fn still_open(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let peeked = stream.peek(&mut [0]);
    stream.set_nonblocking(false).unwrap();
    matches!(peeked, Err(err) if err.kind() == io::ErrorKind::WouldBlock)
}

/// A field of /proc/`pid`/status (`pid` a number or `self`), as a number: `VmRSS` in KiB,
/// `Threads`.
pub fn status_field(pid: &str, field: &str) -> u64 {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {path}"))
}
