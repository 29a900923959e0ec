//! docs/output.md's pandas snippet on real recordings (tests/fixtures): every integer reads
//! back exactly as Python's json reads it, kernel pointers and times past 2^53 included. No
//! root needed.

use irqlens_test_support::python::{
    documented_pandas_reader, documented_pandas_snippet, run_script,
};

use crate::common::fixture;

/// Checks `read_recording` (the documented reader, before it) against Python's json on the
/// recording `sys.argv[1]` and on the same lines 200 days later (times past 2^53 ns, as on
/// a machine up that long); prints the integers checked, those past 2^53, and the dtypes
/// of the integer columns.
const CHECK: &str = r#"
import gzip, json, os, sys, tempfile

def exact_lines(path):
    with gzip.open(path, "rt") as lines:
        return [json.loads(line) for line in lines]

def check(path):
    lines = exact_lines(path)
    df = read_recording(path)
    assert len(df) == len(lines), (len(df), len(lines))
    checked, dtypes = 0, set()
    for name in df.columns:
        expected = [line.get(name) for line in lines]
        if not any(type(v) is int for v in expected):
            continue
        dtypes.add(str(df[name].dtype))
        for row, (want, got) in enumerate(zip(expected, df[name].tolist())):
            if type(want) is int:
                assert got is not pd.NA and got == want and type(got) is int, (name, row, want, got)
                checked += 1
            else:
                assert got is pd.NA, (name, row, want, got)
    return checked, sum(type(v) is int and v > 2**53 for line in lines for v in line.values()), dtypes

late_ns = 200 * 86_400 * 10**9
lines = exact_lines(sys.argv[1])
for line in lines:
    if "time_ns" in line:
        line["time_ns"] += late_ns
late = os.path.join(tempfile.mkdtemp(), "late.jsonl.gz")
with gzip.open(late, "wt") as out:
    out.writelines(json.dumps(line) + "\n" for line in lines)
for path in (sys.argv[1], late):
    checked, past_53_bits, dtypes = check(path)
    print(checked, past_53_bits, *sorted(dtypes))
"#;

/// What CHECK printed for `recording`: per file, (integers checked, past 2^53, dtypes).
fn checked(recording: &str) -> Vec<(u64, u64, Vec<String>)> {
    let script = format!("{}\n{CHECK}", documented_pandas_reader());
    let path = fixture(recording);
    let stdout = run_script(&script, &[&path], b"")
        .unwrap_or_else(|stderr| panic!("the documented reader on {recording}: {stderr}"));
    String::from_utf8(stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let mut words = line.split_whitespace();
            let mut number = || words.next().unwrap().parse().unwrap();
            (number(), number(), words.map(String::from).collect())
        })
        .collect()
}

#[test]
fn the_documented_reader_reads_every_integer_exactly() {
    // a wakeup run's checkpoints: kernel pointers (ptr, func) up to 2^64, in some lines only
    let files = checked("v1/wakeup-task.jsonl.gz");
    let [(integers, pointers, dtypes), (integers_late, times_late, _)] = &files[..] else {
        panic!("{files:?}")
    };
    assert!(*integers > 100_000, "{integers} integers checked");
    assert!(*pointers > 1_000, "{pointers} integers past 2^53");
    assert_eq!(dtypes, &["UInt64"]);
    // 200 days later every checkpoint's time is past 2^53 too
    assert_eq!(integers_late, integers);
    assert!(times_late > pointers, "{times_late} past 2^53");
}

#[test]
fn the_documented_snippet_runs_on_a_current_recording() {
    // the version 2 noise recording: the snippet whole, then its reader's integers checked
    let path = fixture("v2/noise-hist.jsonl.gz");
    let snippet = documented_pandas_snippet(&path);
    let shown =
        format!("{snippet}\nprint(records.groupby([\"cpu\", \"class\"]).duration_ns.describe())");
    let stdout = run_script(&shown, &[], b"").unwrap_or_else(|stderr| panic!("{stderr}"));
    let table = String::from_utf8(stdout).unwrap();
    assert!(table.contains("irq") && table.contains("count"), "{table}");
    let files = checked("v2/noise-hist.jsonl.gz");
    assert!(
        files.iter().all(|(integers, ..)| *integers > 1_000),
        "{files:?}"
    );
}
