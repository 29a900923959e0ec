//! Parsing of the times users type: µs by default (with an optional unit) and run
//! durations; and of rtla's actions (`--on-threshold`, `--on-end`).

use std::time::Duration;

use irqlens_model::workload::WorkloadBy;

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

/// A share of a CPU, percent: a number from 0 to 100 (`99.5`, or `99.5%`).
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(percent) if (0.0..=100.0).contains(&percent) => Ok(percent),
        _ => Err(format!(
            "'{text}' is not a percentage from 0 to 100 (example: 99.5)"
        )),
    }
}

/// `--by`: what rows are grouped by.
pub fn parse_workload_by(text: &str) -> Result<WorkloadBy, String> {
    [
        WorkloadBy::Cgroup,
        WorkloadBy::Pod,
        WorkloadBy::Container,
        WorkloadBy::Unit,
    ]
    .into_iter()
    .find(|by| by.name() == text.trim())
    .ok_or_else(|| format!("'{text}' is not one of cgroup, pod, container, unit"))
}

/// The longest `--cgroup` path (the kernel's PATH_MAX).
const MOST_CGROUP_PATH: usize = 4096;

/// `--cgroup`: a cgroup v2 path from the hierarchy's root, as /proc/PID/cgroup shows it
/// (`/kubepods.slice/...`), kept as /proc shows paths: no empty part (`//a/` is `/a`,
/// as the file system takes it), no trailing `/`.
pub fn parse_cgroup_path(text: &str) -> Result<String, String> {
    if !text.starts_with('/') {
        return Err(format!(
            "'{text}' is not a cgroup path from the hierarchy's root (like /system.slice/sshd.service, as /proc/PID/cgroup shows it)"
        ));
    }
    if text.len() > MOST_CGROUP_PATH || text.contains('\0') {
        return Err("a cgroup path is at most 4096 bytes, without NUL".into());
    }
    if text.split('/').any(|part| part == "." || part == "..") {
        return Err(format!("'{text}': a cgroup path has no . or .. parts"));
    }
    let parts: Vec<&str> = text.split('/').filter(|part| !part.is_empty()).collect();
    Ok(format!("/{}", parts.join("/")))
}

/// What `--on-threshold` and `--on-end` do (rtla's actions), in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `shell,command=CMD`: runs CMD with `sh -c`.
    Shell(String),
    /// `signal,num=N,pid=P`: sends signal N to process P.
    Signal { number: i32, target: SignalTarget },
}

/// Where a signal action sends its signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalTarget {
    /// A process id.
    Pid(u32),
    /// irqlens's parent (`pid=parent`), such as the shell or script that started it.
    Parent,
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Shell(command) => write!(f, "shell,command={command}"),
            Action::Signal { number, target } => {
                write!(f, "signal,num={number},pid=")?;
                match target {
                    SignalTarget::Pid(pid) => write!(f, "{pid}"),
                    SignalTarget::Parent => write!(f, "parent"),
                }
            }
        }
    }
}

/// An action as rtla writes it: `shell,command=CMD` (CMD is the rest of the text, commas
/// included) or `signal,num=N,pid=P` (P a pid or `parent`).
pub fn parse_action(text: &str) -> Result<Action, String> {
    let (kind, arguments) = text.split_once(',').unwrap_or((text, ""));
    match kind {
        "shell" => match arguments.strip_prefix("command=") {
            Some(command) if !command.trim().is_empty() => Ok(Action::Shell(command.into())),
            _ => Err(format!("'{text}': expected shell,command=CMD")),
        },
        "signal" => parse_signal(text, arguments),
        "trace" => Err(format!(
            "'{text}': irqlens records the run with --record FILE (or --auto) instead of trace"
        )),
        "continue" => Err(format!(
            "'{text}': not supported: a stop threshold ends irqlens's run"
        )),
        _ => Err(format!(
            "'{text}': unknown action (expected shell,command=CMD or signal,num=N,pid=P)"
        )),
    }
}

fn parse_signal(text: &str, arguments: &str) -> Result<Action, String> {
    let usage = || format!("'{text}': expected signal,num=N,pid=P (P a pid or parent)");
    let (mut number, mut target) = (None, None);
    for argument in arguments.split(',') {
        match argument.split_once('=') {
            Some(("num", value)) => {
                number = Some(
                    value
                        .parse::<i32>()
                        .ok()
                        .filter(|n| (1..=64).contains(n))
                        .ok_or_else(|| format!("'{text}': num is a signal number, 1 to 64"))?,
                );
            }
            Some(("pid", "parent")) => target = Some(SignalTarget::Parent),
            Some(("pid", value)) => {
                target = Some(SignalTarget::Pid(
                    value
                        .parse::<u32>()
                        .ok()
                        .filter(|&pid| pid > 0 && pid <= i32::MAX as u32)
                        .ok_or_else(|| format!("'{text}': pid is a process id or parent"))?,
                ));
            }
            _ => return Err(usage()),
        }
    }
    match (number, target) {
        (Some(number), Some(target)) => Ok(Action::Signal { number, target }),
        _ => Err(usage()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_paths_are_kept_as_proc_shows_them() {
        for (given, kept) in [
            ("/", "/"),
            ("/a/b/", "/a/b"),
            ("//kubepods.slice", "/kubepods.slice"),
            ("/a//b", "/a/b"),
        ] {
            assert_eq!(parse_cgroup_path(given).as_deref(), Ok(kept), "{given}");
        }
        for bad in ["", "a/b", "/a/../b", "/./a", "/a\0b"] {
            assert!(parse_cgroup_path(bad).is_err(), "{bad:?}");
        }
        assert!(parse_cgroup_path(&format!("/{}", "x".repeat(4096))).is_err());
    }

    #[test]
    fn actions_as_rtla_writes_them() {
        assert_eq!(
            parse_action("shell,command=echo a,b > /tmp/x"),
            Ok(Action::Shell("echo a,b > /tmp/x".into()))
        );
        assert_eq!(
            parse_action("signal,num=2,pid=parent"),
            Ok(Action::Signal {
                number: 2,
                target: SignalTarget::Parent
            })
        );
        assert_eq!(
            parse_action("signal,pid=1234,num=15"),
            Ok(Action::Signal {
                number: 15,
                target: SignalTarget::Pid(1234)
            })
        );
    }

    #[test]
    fn actions_are_named_as_written() {
        for written in [
            "shell,command=touch /tmp/x",
            "signal,num=10,pid=parent",
            "signal,num=9,pid=77",
        ] {
            assert_eq!(parse_action(written).unwrap().to_string(), written);
        }
    }

    #[test]
    fn bad_actions_are_named_in_one_line() {
        for (bad, why) in [
            ("shell", "expected shell,command=CMD"),
            ("shell,command=", "expected shell,command=CMD"),
            ("shell,cmd=ls", "expected shell,command=CMD"),
            ("signal,num=2", "expected signal,num=N,pid=P"),
            ("signal,pid=1", "expected signal,num=N,pid=P"),
            ("signal,num=2,pid=1,x=3", "expected signal,num=N,pid=P"),
            ("signal,num=0,pid=1", "num is a signal number"),
            ("signal,num=TERM,pid=1", "num is a signal number"),
            ("signal,num=2,pid=0", "pid is a process id"),
            ("signal,num=2,pid=-1", "pid is a process id"),
            ("trace", "--record"),
            ("continue", "not supported"),
            ("reboot", "unknown action"),
            ("", "unknown action"),
        ] {
            let err = parse_action(bad).unwrap_err();
            assert!(
                err.starts_with(&format!("'{bad}': ")) && err.contains(why),
                "{bad}: {err}"
            );
            assert!(!err.contains('\n'));
        }
    }

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
