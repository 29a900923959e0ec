//! Present: terminal tables and JSON.

pub mod noise;

use std::io::IsTerminal;
use std::time::Duration;

/// ns as whole µs, as rtla prints them.
pub fn us(ns: u64) -> u64 {
    ns / 1_000
}

/// ns as µs with one decimal.
pub fn us1(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1_000.0)
}

/// `h:mm:ss` of a run's length, as rtla's duration line.
pub fn clock_time(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Whether a live view may redraw the terminal.
pub fn live_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// Whether progress may be shown on stderr.
pub fn progress_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// One self-overwriting progress line on stderr.
pub fn write_progress(elapsed: Duration, total: Option<Duration>, samples: u64) {
    let total = total.map_or(String::new(), |t| {
        format!(" of {}", clock_time(t.as_nanos() as u64))
    });
    eprint!(
        "\r\x1b[Kirqlens: {}{total}, {samples} noise samples",
        clock_time(elapsed.as_nanos() as u64)
    );
}

pub fn clear_progress() {
    eprint!("\r\x1b[K");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(us(1_999), 1);
        assert_eq!(us1(1_950), "1.9");
        assert_eq!(us1(1_960), "2.0");
        assert_eq!(clock_time(3_725_000_000_000), "1:02:05");
    }
}
