//! `--prometheus` input errors: one clear line, a non-zero exit, nothing loaded. No root
//! needed (the address is checked and bound before irqlens touches the kernel).

use std::net::TcpListener;

use crate::common::assert_fails_with;

#[test]
fn a_bad_address_is_named() {
    for command in ["noise", "bh", "wakeup", "account"] {
        assert_fails_with(
            &[command, "-d", "1", "--prometheus", "x"],
            "irqlens: --prometheus 'x': expected PORT, IP:PORT or [IPv6]:PORT",
        );
    }
    assert_fails_with(
        &["noise", "-d", "1", "--prometheus", "70000"],
        "--prometheus '70000': a port goes from 1 to 65535",
    );
}

#[test]
fn a_taken_port_is_named() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    assert_fails_with(
        &["noise", "-d", "1", "--prometheus", &port],
        &format!("--prometheus '127.0.0.1:{port}': cannot listen"),
    );
}
