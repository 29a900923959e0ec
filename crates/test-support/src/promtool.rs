//! Prometheus's own linter, `promtool check metrics` (scripts/setup installs it), as the
//! judge of what a scrape in the classic text format gets; and the values such a scrape
//! holds.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `promtool check metrics` on `exposition`: `Ok` when it finds nothing to say, its
/// exit status and every problem it reports otherwise (a parse error, a lint finding).
pub fn check_metrics(exposition: &str) -> Result<(), String> {
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (scripts/setup installs it)");
    // promtool may stop reading at a parse error: what it says then is the answer
    let _ = promtool
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes());
    let output = promtool.wait_with_output().unwrap();
    let said = [&output.stdout, &output.stderr]
        .map(|bytes| String::from_utf8_lossy(bytes).trim().to_owned())
        .join("\n");
    match (output.status.success(), said.trim().is_empty()) {
        (true, true) => Ok(()),
        _ => Err(format!(
            "promtool check metrics ({}): {said}",
            output.status
        )),
    }
}

/// The sum of the samples named `name` whose labels include each of `labels`, in an
/// exposition in the classic text format; `None` when it has none.
pub fn sample_sum(exposition: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut sum = None;
    for line in exposition.lines().filter(|line| !line.starts_with('#')) {
        // a label's value may hold a space, the value itself none
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (sample, label_text) = match series.split_once('{') {
            Some((sample, rest)) => (sample, rest),
            None => (series, ""),
        };
        let wanted = labels
            .iter()
            .all(|(key, value)| label_text.contains(&format!("{key}=\"{value}\"")));
        if sample == name && wanted {
            *sum.get_or_insert(0.0) += value.parse::<f64>().unwrap_or(f64::NAN);
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_summed_by_name_and_labels() {
        let text = "# HELP a_total x\na_total{cpu=\"0\",class=\"irq\"} 2\n\
                    a_total{cpu=\"1\",class=\"irq\"} 3.5\nb 7\nc{source=\"a b\"} 1\n";
        assert_eq!(sample_sum(text, "a_total", &[]), Some(5.5));
        assert_eq!(sample_sum(text, "a_total", &[("cpu", "1")]), Some(3.5));
        assert_eq!(sample_sum(text, "b", &[]), Some(7.0));
        assert_eq!(sample_sum(text, "c", &[("source", "a b")]), Some(1.0));
        assert_eq!(sample_sum(text, "a", &[]), None);
        assert_eq!(sample_sum(text, "a_total", &[("cpu", "2")]), None);
    }
}
