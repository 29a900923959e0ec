//! Parsing of the times users type: µs by default (with an optional unit) and run
//! durations.

use std::time::Duration;

// clap is told to hand `-3` over as a value, not as a flag: the parsers say what is wrong
// with it
pub use irqlens_model::units::{parse_micros, refuse_sign_and_size};

/// A histogram bucket size: µs as every other time option (`2`, `2us`, `1ms`), a whole
/// number of µs.
pub fn parse_bucket_size(text: &str) -> Result<u64, String> {
    let size = parse_micros(text)?;
    if size.as_nanos() % 1_000 != 0 {
        return Err(format!("'{}' is not a whole number of µs", text.trim()));
    }
    Ok(size.as_micros() as u64)
}

/// A count (`-E`): a clear message for a negative or too large value.
pub fn parse_count(text: &str) -> Result<usize, String> {
    refuse_sign_and_size(text)?;
    let text = text.trim();
    text.parse()
        .map_err(|_| format!("'{text}' is not a whole number"))
}

/// A run length: plain seconds (`10`) or with units (`10s`, `5m`, `1h`, `1h30m`).
pub fn parse_run_duration(text: &str) -> Result<Duration, String> {
    refuse_sign_and_size(text)?;
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

    #[test]
    fn negative_and_huge_values_are_named_as_such() {
        for parse in [
            |t: &str| parse_micros(t).map(|_| ()),
            |t: &str| parse_run_duration(t).map(|_| ()),
            |t: &str| parse_bucket_size(t).map(|_| ()),
            |t: &str| parse_count(t).map(|_| ()),
        ] {
            assert_eq!(parse("-3"), Err("'-3' must be positive".into()));
            assert_eq!(parse("-3ms").unwrap_err(), "'-3ms' must be positive");
            assert_eq!(
                parse("99999999999999999999"),
                Err("'99999999999999999999' is too large".into())
            );
        }
        assert!(
            parse_micros("18446744073709551615s")
                .unwrap_err()
                .contains("too large")
        );
        assert!(parse_micros("-q").unwrap_err().contains("not a time"));
    }

    #[test]
    fn bucket_sizes_take_units() {
        assert_eq!(parse_bucket_size("2"), Ok(2));
        assert_eq!(parse_bucket_size("2us"), Ok(2));
        assert_eq!(parse_bucket_size("1ms"), Ok(1_000));
        assert_eq!(parse_bucket_size("2000ns"), Ok(2));
        assert!(
            parse_bucket_size("1500ns")
                .unwrap_err()
                .contains("whole number of µs")
        );
        assert_eq!(parse_count("256"), Ok(256));
    }
}
