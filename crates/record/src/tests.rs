use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use proptest::prelude::*;

use super::*;
use irqlens_model::event::EventData;
use irqlens_model::kernel::Comm;
use irqlens_model::workload::{CgroupId, CgroupNames};

fn header() -> Header {
    Header {
        format: FORMAT.into(),
        version: VERSION,
        capability: Capability::Bh,
        argv: vec!["irqlens".into(), "bh".into(), "-c".into(), "1".into()],
        options: None,
        irqlens_version: "0.1.0".into(),
        started_at: "2026-11-23T12:00:00Z".into(),
        cpus: CpuList::single(1),
        load: Some(LoadScenario::Zero),
        pid: Some(4242),
        system: SystemSnapshot {
            interrupts: "           CPU0\n 11:  5  IO-APIC 11-fasteoi virtio0\n".into(),
            ..Default::default()
        },
    }
}

fn events() -> Vec<Line> {
    (0..50)
        .map(|i| {
            let what = if i % 2 == 0 {
                spinner_in()
            } else {
                EventData::TaskletEntry {
                    tasklet: 0,
                    func: 0xffff_ffff_8100_0000 + i,
                }
            };
            Line::Event(Event::new(what, 1, 1_000 * i))
        })
        .collect()
}

/// A switch to the spinner (its tgid left zero).
fn spinner_in() -> EventData {
    EventData::Switch {
        next_pid: 11,
        next_tgid: 0,
        next_comm: Comm::new("spinner"),
        next_cgroup: SPINNER_CGROUP,
    }
}

/// The spinner's cgroup, which the end line names.
const SPINNER_CGROUP: CgroupId = CgroupId(4242);

fn end(inputs: u64) -> Line {
    Line::End(Box::new(End {
        finished_at: "2026-11-23T12:00:03Z".into(),
        inputs,
        info: serde_json::json!({"elapsed_ns": 3}),
        interrupts: String::new(),
        softirqs: String::new(),
        kernel_functions: vec![KernelFunction {
            address: 0xffff_ffff_8100_0001,
            name: "flush_to_ldisc".into(),
        }],
        cgroups: CgroupNames {
            paths: [(SPINNER_CGROUP, "/irqlens-test/spinner".into())].into(),
        },
    }))
}

/// The test recording's lines: the header, the events, and an end line counting
/// `end_inputs` if given.
fn lines(end_inputs: Option<u64>) -> Vec<Line> {
    let mut lines = vec![Line::Header(Box::new(header()))];
    lines.extend(events());
    lines.extend(end_inputs.map(end));
    lines
}

/// The text of a recording of `lines`, as the recorder writes it (before gzip).
fn jsonl(lines: &[Line]) -> String {
    let text: Vec<String> = lines
        .iter()
        .map(|line| serde_json::to_string(line).unwrap())
        .collect();
    text.join("\n")
}

/// The bytes of a recording of `lines`, as the recorder writes them.
fn gzip_lines(lines: &[Line]) -> Vec<u8> {
    gzip(jsonl(lines).as_bytes())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = GzEncoder::new(Vec::new(), Compression::fast());
    out.write_all(bytes).unwrap();
    out.finish().unwrap()
}

fn recording() -> Vec<u8> {
    gzip_lines(&lines(Some(events().len() as u64)))
}

/// Reads a whole recording: its inputs, or the first error.
fn read(bytes: Vec<u8>) -> Result<Vec<Line>, String> {
    let read = || -> anyhow::Result<Vec<Line>> {
        let mut reader = Reader::from_reader("rec", std::io::Cursor::new(bytes))?;
        let mut inputs = Vec::new();
        while let Some(line) = reader.next_input()? {
            inputs.push(line);
        }
        reader.end()?;
        Ok(inputs)
    };
    read().map_err(|e| format!("{e:#}"))
}

fn event_times(lines: &[Line]) -> Vec<u64> {
    lines
        .iter()
        .filter_map(|line| match line {
            Line::Event(event) => Some(event.time_ns),
            _ => None,
        })
        .collect()
}

#[test]
fn the_cgroups_the_events_name_are_read_back_from_the_end() {
    let mut reader = Reader::from_reader("rec", std::io::Cursor::new(recording())).unwrap();
    let end = reader.skip_inputs().unwrap();
    assert_eq!(
        end.cgroups.path(SPINNER_CGROUP),
        Some("/irqlens-test/spinner")
    );
    // an end line from before the field names none
    let mut old = serde_json::to_value(end).unwrap();
    old.as_object_mut().unwrap().remove("cgroups");
    let old: End = serde_json::from_value(old).unwrap();
    assert_eq!(old.cgroups, CgroupNames::default());
}

#[test]
fn what_is_written_is_read_back() {
    let inputs = read(recording()).unwrap();
    assert_eq!(event_times(&inputs), event_times(&events()));
    let [Line::Event(switch), Line::Event(tasklet), ..] = &inputs[..] else {
        panic!("events")
    };
    assert_eq!(switch.what, spinner_in());
    assert_eq!(
        tasklet.what,
        EventData::TaskletEntry {
            tasklet: 0,
            func: 0xffff_ffff_8100_0001
        }
    );
}

#[test]
fn the_recorder_writes_what_the_reader_reads() {
    let path = std::env::temp_dir().join(format!("irqlens-test-{}.jsonl.gz", std::process::id()));
    let mut recorder: Box<dyn Sink> = Box::new(Recorder::create(&path, header()).unwrap());
    for line in events() {
        recorder.put(&line).unwrap();
    }
    let functions = [0xffff_ffff_8100_0001].map(|address| KernelFunction {
        address,
        name: "flush_to_ldisc".into(),
    });
    recorder
        .finish(&End {
            finished_at: "2026-11-23T12:00:05Z".into(),
            inputs: 50,
            info: serde_json::json!({"elapsed_ns": 7}),
            interrupts: String::new(),
            softirqs: String::new(),
            kernel_functions: functions.to_vec(),
            cgroups: CgroupNames::default(),
        })
        .unwrap();
    let mut reader = Reader::open(&path).unwrap();
    assert_eq!(reader.header().capability, Capability::Bh);
    let mut count = 0;
    while reader.next_input().unwrap().is_some() {
        count += 1;
    }
    let end = reader.end().unwrap();
    assert_eq!((count, end.inputs), (50, 50));
    assert_eq!(end.kernel_functions[0].name, "flush_to_ldisc");
    assert_eq!(end.info["elapsed_ns"], 7);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_recording_cut_short_is_truncated() {
    let bytes = recording();
    let error = read(bytes[..bytes.len() / 2].to_vec()).unwrap_err();
    assert!(error.contains("truncated"), "{error}");
}

#[test]
fn a_recording_without_its_end_line_is_truncated() {
    let error = read(gzip_lines(&lines(None))).unwrap_err();
    assert!(
        error.contains("truncated after line 51: no end line"),
        "{error}"
    );
}

#[test]
fn an_end_line_that_miscounts_the_inputs_is_refused() {
    let error = read(gzip_lines(&lines(Some(49)))).unwrap_err();
    assert!(error.contains("counts 49 inputs but 50"), "{error}");
}

#[test]
fn a_newer_version_is_refused_by_name() {
    let mut newer = serde_json::to_value(Line::Header(Box::new(header()))).unwrap();
    newer["version"] = serde_json::json!(VERSION + 1);
    newer["a_field_of_the_future"] = serde_json::json!([1, 2]);
    let error = read(gzip(newer.to_string().as_bytes())).unwrap_err();
    let expected = format!("format version {} is newer", VERSION + 1);
    assert!(error.contains(&expected), "{error}");
}

#[test]
fn other_files_are_not_recordings() {
    for bytes in [
        b"plain text\n".to_vec(),
        gzip(b"{\"type\":\"header\",\"format\":\"something-else\"}\n"),
        gzip(b"[1,2,3]\n"),
        Vec::new(),
    ] {
        let error = read(bytes).unwrap_err();
        assert!(error.contains("not an irqlens recording"), "{error}");
    }
}

#[test]
fn a_flipped_byte_is_an_error_naming_the_damage() {
    let mut bytes = recording();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    let error = read(bytes).unwrap_err();
    assert!(
        ["corrupt", "truncated", "line"]
            .iter()
            .any(|what| error.contains(what)),
        "{error}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the bytes, reading ends in lines or an error, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = read(bytes.clone());
        let _ = read(gzip(&bytes));
    }

    /// Damage to a real recording (bytes changed, then cut) is read or refused, never a
    /// panic, and a recording read whole is exactly what was written.
    #[test]
    fn damaged_recordings_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        keep in 0.0f64..=1.0,
    ) {
        let mut bytes = recording();
        for (at, value) in flips {
            let at = at.index(bytes.len());
            bytes[at] ^= value;
        }
        bytes.truncate(((bytes.len() as f64) * keep) as usize);
        if let Ok(inputs) = read(bytes) {
            prop_assert_eq!(event_times(&inputs), event_times(&events()));
        }
    }

    /// Damage inside the JSON text (the gzip layer intact) is refused, never a panic.
    #[test]
    fn damaged_text_never_panics(
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut text = jsonl(&lines(Some(50))).into_bytes();
        let at = at.index(text.len());
        text[at] = byte;
        let _ = read(gzip(&text));
    }
}

#[test]
fn a_json_document_is_named_as_one() {
    for text in [
        "{\n  \"advice\": []\n}\n",
        "  [\n  {\"tool\": \"irqlens\"}\n]\n",
    ] {
        let error = read(text.as_bytes().to_vec()).unwrap_err();
        assert!(
            error.contains("a JSON document, not an irqlens recording"),
            "{error}"
        );
    }
}

#[test]
fn an_unknown_capability_is_named() {
    let mut future = serde_json::to_value(Line::Header(Box::new(header()))).unwrap();
    future["capability"] = serde_json::json!("storm");
    let error = read(gzip(future.to_string().as_bytes())).unwrap_err();
    assert!(
        error.contains("a recording of `storm`, which this irqlens does not know"),
        "{error}"
    );
    assert!(!error.contains('\n'), "{error}");
}

/// Gives its bytes one at a time, as a pipe may, and cannot seek.
struct Trickle(std::io::Cursor<Vec<u8>>);

impl std::io::Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let len = buf.len().min(1);
        self.0.read(&mut buf[..len])
    }
}

#[test]
fn a_gunzipped_recording_and_one_from_a_pipe_read_as_the_file() {
    let text = jsonl(&lines(Some(events().len() as u64)));
    let expected = event_times(&events());
    assert_eq!(
        event_times(&read(text.clone().into_bytes()).unwrap()),
        expected
    );
    for bytes in [recording(), text.into_bytes()] {
        let mut reader = Reader::from_reader("pipe", Trickle(std::io::Cursor::new(bytes))).unwrap();
        let mut times = Vec::new();
        while let Some(line) = reader.next_input().unwrap() {
            times.extend(event_times(&[line]));
        }
        assert_eq!(times, expected);
    }
}
