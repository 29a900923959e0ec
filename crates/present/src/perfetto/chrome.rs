//! The Chrome Trace Event Format, JSON Object Format: `{"displayTimeUnit": "ns",
//! "otherData": {...}, "traceEvents": [...]}`, written one event at a time so a long run
//! never holds its trace in memory. Values go through serde_json (it escapes names).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::micros;

/// Where an event is drawn: a process-like group and a thread-like lane in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Track {
    pub pid: u32,
    pub tid: u32,
}

/// One trace event; `ts` and `dur` are µs.
#[derive(Serialize)]
pub struct TraceEvent<'a> {
    pub name: &'a str,
    pub ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    pub pid: u32,
    pub tid: u32,
    /// An instant's scope: "t" (its lane), "p", "g".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s: Option<&'static str>,
    #[serde(skip_serializing_if = "Value::is_null")]
    pub args: Value,
}

impl<'a> TraceEvent<'a> {
    /// `ph: X`: a slice from `start_ns` to `end_ns`.
    pub fn complete(name: &'a str, track: Track, start_ns: u64, end_ns: u64, args: Value) -> Self {
        TraceEvent {
            ts: Some(micros(start_ns)),
            dur: Some(micros(end_ns.saturating_sub(start_ns))),
            ..Self::bare(name, "X", track, args)
        }
    }

    /// `ph: i`: a moment on its lane.
    pub fn instant(name: &'a str, track: Track, at_ns: u64, args: Value) -> Self {
        TraceEvent {
            ts: Some(micros(at_ns)),
            s: Some("t"),
            ..Self::bare(name, "i", track, args)
        }
    }

    /// `ph: M`: `process_name`, `thread_name` (args.name), `process_sort_index`,
    /// `thread_sort_index` (args.sort_index).
    pub fn metadata(name: &'a str, track: Track, args: Value) -> Self {
        Self::bare(name, "M", track, args)
    }

    fn bare(name: &'a str, ph: &'static str, track: Track, args: Value) -> Self {
        TraceEvent {
            name,
            ph,
            ts: None,
            dur: None,
            pid: track.pid,
            tid: track.tid,
            s: None,
            args,
        }
    }
}

/// An open `traceEvents` array; `end` closes the document.
pub struct ChromeTrace<W: Write> {
    out: W,
    events: u64,
}

impl<W: Write> ChromeTrace<W> {
    /// Writes the document's head; `other_data` is what the viewer shows as the trace's
    /// metadata.
    pub fn begin(mut out: W, other_data: &Value) -> io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        serde_json::to_writer(&mut out, other_data)?;
        out.write_all(b",\"traceEvents\":[")?;
        Ok(ChromeTrace { out, events: 0 })
    }

    pub fn write(&mut self, event: &TraceEvent) -> io::Result<()> {
        // one event a line: the file stays greppable and diffable
        self.out
            .write_all(if self.events == 0 { b"\n" } else { b",\n" })?;
        serde_json::to_writer(&mut self.out, event)?;
        self.events += 1;
        Ok(())
    }

    /// Closes the array and the document, and flushes.
    pub fn end(mut self) -> io::Result<W> {
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_is_json_with_ns_precision_and_escaped_names() {
        let mut trace = ChromeTrace::begin(Vec::new(), &serde_json::json!({"a": 1})).unwrap();
        let track = Track { pid: 1, tid: 2 };
        let quoted = "irq \"x\"\n";
        trace
            .write(&TraceEvent::complete(
                quoted,
                track,
                12_345_678,
                12_346_000,
                Value::Null,
            ))
            .unwrap();
        trace
            .write(&TraceEvent::instant("i", track, 1, Value::Null))
            .unwrap();
        let bytes = trace.end().unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\"ts\":12345.678"), "{text}");
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["displayTimeUnit"], "ns");
        assert_eq!(doc["traceEvents"][0]["name"], quoted);
        assert_eq!(doc["traceEvents"][0]["dur"], 0.322);
        assert_eq!(doc["traceEvents"][1]["ts"], 0.001);
        assert!(doc["traceEvents"][1].get("args").is_none());
    }
}
