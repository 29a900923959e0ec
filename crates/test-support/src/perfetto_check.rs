//! What a trace must satisfy for ui.perfetto.dev and chrome://tracing to import it whole
//! (the Trace Event Format's field rules, and Perfetto's: slices on one lane nest or are
//! disjoint, a partial overlap is dropped or mangled). The tests hold every trace
//! irqlens writes to it.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

/// The slices of a valid trace, counted per (process name, lane name).
pub type SliceCounts = BTreeMap<(String, String), usize>;

/// Checks `doc` event by event; the first broken rule is the error.
pub fn check_trace(doc: &Value) -> Result<SliceCounts, String> {
    let events = doc
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or("no traceEvents array")?;
    let mut slices: HashMap<(u64, u64), Vec<(i64, i64)>> = HashMap::new();
    let mut process_names = HashMap::new();
    let mut lane_names = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        let fail = |rule: &str| format!("event {index} {event}: {rule}");
        let text = |field: &str| event.get(field).and_then(Value::as_str);
        let integer = |field: &str| event.get(field).and_then(Value::as_u64);
        let name = text("name").ok_or_else(|| fail("no name string"))?;
        let ph = text("ph").ok_or_else(|| fail("no ph string"))?;
        let (Some(pid), Some(tid)) = (integer("pid"), integer("tid")) else {
            return Err(fail("pid and tid must be integers"));
        };
        if ph == "M" {
            let args = event
                .get("args")
                .ok_or_else(|| fail("metadata without args"))?;
            let value = match name {
                "process_name" | "thread_name" => args.get("name").and_then(Value::as_str),
                "process_sort_index" | "thread_sort_index" => {
                    args.get("sort_index").and_then(Value::as_i64).map(|_| "")
                }
                _ => return Err(fail("unknown metadata name")),
            };
            let value = value.ok_or_else(|| fail("metadata args.name/sort_index missing"))?;
            match name {
                "process_name" => process_names.insert(pid, value.to_owned()),
                "thread_name" => lane_names.insert((pid, tid), value.to_owned()),
                _ => None,
            };
            continue;
        }
        let non_negative = |field: &str, rule: &str| {
            event
                .get(field)
                .and_then(Value::as_f64)
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| fail(rule))
        };
        let ts = non_negative("ts", "ts must be a number >= 0")?;
        match ph {
            "X" => {
                let dur = non_negative("dur", "an X event's dur must be a number >= 0")?;
                // Perfetto keeps ns: compare there, not in rounded floats
                let (start, end) = (to_ns(ts), to_ns(ts + dur));
                slices.entry((pid, tid)).or_default().push((start, end));
            }
            "i" | "I" => {
                if !matches!(text("s"), None | Some("t" | "p" | "g")) {
                    return Err(fail("an instant's scope s must be t, p or g"));
                }
            }
            "C" | "B" | "E" => {}
            _ => return Err(fail("phase not among X, i, I, M, C, B, E")),
        }
    }
    let mut counts = SliceCounts::new();
    for ((pid, tid), mut lane) in slices {
        check_nesting(&mut lane).map_err(|e| format!("pid {pid} tid {tid}: {e}"))?;
        let process = process_names.get(&pid).cloned().unwrap_or_default();
        let lane_name = lane_names.get(&(pid, tid)).cloned().unwrap_or_default();
        *counts.entry((process, lane_name)).or_default() += lane.len();
    }
    Ok(counts)
}

fn to_ns(micros: f64) -> i64 {
    (micros * 1_000.0).round() as i64
}

/// Slices of one lane, sorted outer first, must each lie inside the one enclosing it or
/// after it.
fn check_nesting(slices: &mut [(i64, i64)]) -> Result<(), String> {
    slices.sort_by_key(|&(start, end)| (start, std::cmp::Reverse(end)));
    let mut open: Vec<(i64, i64)> = Vec::new();
    for &(start, end) in slices.iter() {
        while open.last().is_some_and(|&(_, open_end)| open_end <= start) {
            open.pop();
        }
        if let Some(&(outer_start, outer_end)) = open.last()
            && end > outer_end
        {
            return Err(format!(
                "slice {start}..{end} ns overlaps {outer_start}..{outer_end} ns partially"
            ));
        }
        open.push((start, end));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slice(ts: f64, dur: f64) -> Value {
        json!({"name": "s", "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 2})
    }

    #[test]
    fn nested_and_disjoint_slices_pass_partial_overlap_fails() {
        let names = [
            json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "CPU 0"}}),
            json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "irq"}}),
        ];
        let good = json!({"traceEvents": [
            names[0], names[1], slice(1.0, 10.0), slice(2.0, 3.0), slice(5.0, 6.0), slice(11.0, 1.0)
        ]});
        let counts = check_trace(&good).unwrap();
        assert_eq!(counts[&("CPU 0".into(), "irq".into())], 4);
        let bad = json!({"traceEvents": [slice(1.0, 10.0), slice(2.0, 3.0), slice(4.0, 8.0)]});
        assert!(check_trace(&bad).unwrap_err().contains("partially"));
    }

    #[test]
    fn field_rules_are_enforced() {
        let broken = [
            json!({"ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1}),
            json!({"name": "a", "ph": "X", "ts": 1, "dur": -1, "pid": 1, "tid": 1}),
            json!({"name": "a", "ph": "X", "ts": 1, "dur": 1, "pid": "1", "tid": 1}),
            json!({"name": "a", "ph": "i", "pid": 1, "tid": 1}),
            json!({"name": "a", "ph": "i", "ts": 1, "s": "x", "pid": 1, "tid": 1}),
            json!({"name": "a", "ph": "Q", "ts": 1, "pid": 1, "tid": 1}),
            json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {}}),
        ];
        for event in broken {
            assert!(
                check_trace(&json!({"traceEvents": [event]})).is_err(),
                "{event} should fail"
            );
        }
        assert!(check_trace(&json!({"events": []})).is_err());
    }
}
