//! irqlens trial's bad input: one line and a non-zero exit, before anything is built (no
//! root needed).

use crate::common::*;

#[test]
fn bad_input_is_refused_in_one_line() {
    for (args, expected) in [
        (&["trial", "net", "--rates", "0"][..], "'0' is not a rate"),
        (
            &["trial", "net", "--rates", "50k,fast"],
            "'fast' is not a rate",
        ),
        (
            &["trial", "net", "--designs", "stock,polled"],
            "'polled' is not a design",
        ),
        // the one spelling, sim's: trial's old one is named
        (
            &["trial", "net", "--designs", "softirq"],
            "trial's old 'softirq' is now 'stock'",
        ),
        // what only the simulation has
        (
            &["trial", "net", "--designs", "threaded-fifo,stock+ihm"],
            "--designs: trial cannot build stock+ihm: handler migration",
        ),
        (
            &["trial", "net", "--designs", "stock+process-aware"],
            "trial cannot build stock+process-aware: its process-aware design is \
             threaded-fifo+process-aware",
        ),
        // today's NAPI mechanisms veth cannot show, or that trial's socket has no way to
        (
            &[
                "trial",
                "net",
                "--designs",
                "stock+defer=100:20+busy-poll+suspend=20000",
            ],
            "trial cannot build stock+defer=100:20+busy-poll+suspend=20000: IRQ suspension \
             (+suspend) needs a device IRQ",
        ),
        (
            &[
                "trial",
                "net",
                "--designs",
                "threaded-fifo+thread-busy-poll",
            ],
            "threaded busy polling (+thread-busy-poll) Linux 6.19",
        ),
        (
            &["trial", "net", "--designs", "stock+busy-poll=0"],
            "trial cannot build stock+busy-poll=0: busy-poll=0 is epoll's single poll",
        ),
        (
            &["trial", "net", "--designs", "stock+defer=100"],
            "'stock+defer=100': defer is N:T",
        ),
        (
            &["trial", "net", "--sending-cpu", "1", "--receiving-cpu", "1"],
            "--sending-cpu and --receiving-cpu must differ",
        ),
        (
            &["trial", "net", "--receiving-cpu", "4095"],
            "CPU 4095 is offline or does not exist",
        ),
        (&["trial", "net", "-d", "0"], "must be longer than zero"),
        (&["trial", "net", "--rounds", "0"], "0 is not in 1..=20"),
        (&["trial", "net", "--consumer-nice", "20"], "20"),
        (&["trial", "net", "--payload", "8"], "8"),
    ] {
        assert_fails_with(args, expected);
    }
}

/// The designs trial builds of today's NAPI mechanisms pass --designs: the next option
/// checked (--payload, after --designs) is the one refused.
#[test]
fn defer_and_busy_poll_designs_are_taken() {
    assert_fails_with(
        &[
            "trial",
            "net",
            "--designs",
            "stock+defer=100:20,stock+busy-poll,stock+busy-poll=50,stock+busy-poll=always,\
             threaded-niced+defer=2:50+busy-poll=10",
            "--payload",
            "8",
        ],
        "--payload",
    );
}

#[test]
fn a_trials_recording_has_no_timeline_for_perfetto() {
    let path =
        std::env::temp_dir().join(format!("irqlens-trial-perfetto-{}.gz", std::process::id()));
    let document = serde_json::json!({"tool": "irqlens", "command": "trial", "points": []});
    irqlens_record::result::write(&path, &document).unwrap();
    let file = path.to_string_lossy();
    let refused = std::panic::catch_unwind(|| {
        assert_fails_with(
            &["report", &file, "--perfetto", "x.json"],
            "a trial's recording has no timeline for --perfetto",
        )
    });
    std::fs::remove_file(&path).unwrap();
    if let Err(panic) = refused {
        std::panic::resume_unwind(panic);
    }
}
