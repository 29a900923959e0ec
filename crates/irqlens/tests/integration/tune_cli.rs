//! irqlens tune's bad input: one line, a non-zero exit, nothing changed (no root needed:
//! it is refused before anything is read or written).

use crate::common::*;

fn netdev_budget() -> String {
    std::fs::read_to_string("/proc/sys/net/core/netdev_budget").unwrap()
}

/// An IRQ line this machine has.
fn an_irq() -> String {
    std::fs::read_dir("/proc/irq")
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().into_string().ok())
        .find(|name| name.parse::<u32>().is_ok())
        .expect("an IRQ line")
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let budget = netdev_budget();
    let far_cpu = format!("irq:{}=4095", an_irq());
    let offline = format!("--change {far_cpu}: CPU 4095 is offline or does not exist");
    for (args, expected) in [
        (
            &[
                "tune",
                "-c",
                "1",
                "--change",
                "sysctl:net.core.netdev_budget",
            ][..],
            "expected KNOB=VALUE",
        ),
        (&["tune", "-c", "1", "--change", "frob:1=0"], "unknown knob"),
        (
            &[
                "tune",
                "-c",
                "4095",
                "--change",
                "sysctl:net.core.netdev_budget=600",
            ],
            "CPU 4095 is offline or does not exist",
        ),
        (
            &[
                "tune",
                "-c",
                "1",
                "--change",
                "sysctl:kernel.no_such_knob=1",
            ],
            "there is no sysctl kernel.no_such_knob",
        ),
        // checked against the machine before anything is measured
        (
            &["tune", "-c", "0", "--change", far_cpu.as_str()],
            offline.as_str(),
        ),
        (
            &["tune", "-c", "0", "--change", "irq:4000000=0"],
            "there is no IRQ 4000000",
        ),
        (
            &[
                "tune",
                "-c",
                "0",
                "--change",
                "sysctl:net.core.netdev_budget=-5",
            ],
            "-5 is negative",
        ),
        (&["tune", "-c", "1"], "nothing to tune"),
        (
            &["tune", "-c", "1", "--change", "dma-latency=0"],
            "cpu_dma_latency",
        ),
        (
            &["tune", "-c", "1", "--rounds", "1", "--change", "irq:1=0"],
            "--rounds",
        ),
        // undoing kept remedies is a kind of --revert only
        (
            &["tune", "-c", "1", "--kept", "--change", "irq:1=0"],
            "--revert",
        ),
    ] {
        assert_fails_with(args, expected);
    }
    assert_eq!(netdev_budget(), budget);
}

#[test]
fn a_dry_run_says_what_it_would_write_and_writes_nothing() {
    let budget = netdev_budget();
    let output = irqlens_ok(&[
        "tune",
        "-c",
        "0",
        "--change",
        "sysctl:net.core.netdev_budget=1234",
        "--dry-run",
    ]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(&format!(
            "would write 1234 to /proc/sys/net/core/netdev_budget (now {})",
            budget.trim()
        )),
        "{text}"
    );
    assert_eq!(netdev_budget(), budget);
}
