//! `irqlens wakeup` bad input: one clear line on stderr, a non-zero exit, nothing loaded.
//! No root needed (every check happens before irqlens touches the kernel).

use crate::common::assert_fails_with;

#[test]
fn period_out_of_range() {
    assert_fails_with(
        &["wakeup", "-p", "10", "-d", "1"],
        "--period must be 100 us to 10 s",
    );
    assert_fails_with(&["wakeup", "-p", "abc", "-d", "1"], "-p");
}

#[test]
fn bad_priority() {
    assert_fails_with(
        &["wakeup", "-P", "f:100", "-d", "1"],
        "real-time priorities go from 1 to 99",
    );
}

#[test]
fn task_mode_needs_a_live_process_or_a_real_name() {
    assert_fails_with(
        &["wakeup", "--pid", "999999999", "-d", "1"],
        "--pid 999999999: no such process",
    );
    assert_fails_with(
        &["wakeup", "--comm", "a-name-longer-than-15", "-d", "1"],
        "a thread name has 1 to 15 bytes",
    );
    assert_fails_with(
        &["wakeup", "--pid", "1", "--comm", "init", "-d", "1"],
        "cannot be used with",
    );
}

#[test]
fn task_mode_refuses_a_name_no_thread_has() {
    // a name no thread has, mistyped or not started yet, would measure nothing
    let name = format!("nosuch{}", std::process::id());
    assert_fails_with(
        &["wakeup", "--comm", &name, "-d", "1"],
        &format!("--comm '{name}': no thread has that name now"),
    );
}

#[test]
fn untraced_is_for_timer_mode() {
    assert_fails_with(
        &["wakeup", "--pid", "1", "--no-trace", "-d", "1"],
        "--no-trace is for timer mode",
    );
}

#[test]
fn offline_cpu_and_hist_options() {
    assert_fails_with(
        &["wakeup", "-c", "4095", "-d", "1"],
        "CPU 4095 is offline or does not exist",
    );
    assert_fails_with(&["wakeup", "hist", "-E", "0", "-d", "1"], "histogram needs");
}

#[test]
fn negative_and_huge_values_are_named_as_such() {
    assert_fails_with(&["wakeup", "-p", "-5ms", "-d", "1"], "must be positive");
    assert_fails_with(&["wakeup", "-i", "-1", "-d", "1"], "'-1' must be positive");
    assert_fails_with(
        &["wakeup", "hist", "-b", "-3", "-d", "1"],
        "'-3' must be positive",
    );
    assert_fails_with(
        &["wakeup", "-s", "99999999999999999999", "-d", "1"],
        "is too large",
    );
}

#[test]
fn bad_dma_latency_and_alignment() {
    assert_fails_with(
        &["wakeup", "--dma-latency", "soon", "-d", "1"],
        "'soon' is not a time",
    );
    assert_fails_with(
        &["wakeup", "--dma-latency", "1500ns", "-d", "1"],
        "not a whole number of µs",
    );
    assert_fails_with(
        &["wakeup", "--dma-latency", "-1", "-d", "1"],
        "'-1' must be positive",
    );
    assert_fails_with(
        &["wakeup", "-A", "2ms", "-d", "1"],
        "--aligned must not exceed the period",
    );
    assert_fails_with(
        &["wakeup", "--pid", "1", "-A", "-d", "1"],
        "--aligned is for timer mode",
    );
}

#[test]
fn cgroups_are_for_task_mode_and_must_exist() {
    assert_fails_with(
        &["wakeup", "--cgroup", "/system.slice", "-d", "1"],
        "--cgroup is for task mode (--pid/--comm)",
    );
    assert_fails_with(
        &[
            "wakeup",
            "--pid",
            "1",
            "--cgroup",
            "/irqlens-no-such-cgroup",
            "-d",
            "1",
        ],
        "no cgroup /irqlens-no-such-cgroup",
    );
    assert_fails_with(
        &["wakeup", "--pid", "1", "--cgroup", "relative", "-d", "1"],
        "is not a cgroup path from the hierarchy's root",
    );
}
