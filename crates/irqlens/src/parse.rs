//! Parsing of the times users type: µs by default (with an optional unit) and run
//! durations.

use std::time::Duration;

pub use irqlens_model::units::parse_micros;

/// A run length: plain seconds (`10`) or with units (`10s`, `5m`, `1h`, `1h30m`).
pub fn parse_run_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let duration = match text.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => humantime::parse_duration(text)
            .map_err(|e| format!("'{text}' is not a duration (examples: 10s, 5m, 1h): {e}"))?,
    };
    if duration.is_zero() {
        return Err(format!("duration '{text}' must be longer than zero"));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_durations() {
        assert_eq!(parse_run_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_run_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_run_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_run_duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_run_duration("10x").is_err());
        assert!(
            parse_run_duration("0s")
                .unwrap_err()
                .contains("longer than zero")
        );
    }
}
