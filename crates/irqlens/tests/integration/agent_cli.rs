//! `irqlens agent` without root: a configuration it cannot use is one error line and exit
//! status 1, naming the key (and its line), before anything is loaded.

use crate::common::{assert_fails_with, temp_path};

/// Runs `irqlens agent --config FILE` with `text` in FILE and `more` options, which must
/// fail naming `expected`.
fn refused(name: &str, text: &[u8], more: &[&str], expected: &str) {
    let path = temp_path(name);
    std::fs::write(&path, text).unwrap();
    let mut args = vec!["agent", "--config", path.to_str().unwrap()];
    args.extend(more);
    assert_fails_with(&args, expected);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_missing_named_configuration_is_an_error() {
    assert_fails_with(
        &["agent", "--config", "/nonexistent/agent.toml"],
        "--config /nonexistent/agent.toml: No such file or directory",
    );
}

#[test]
fn a_bad_key_or_value_is_named_with_its_line() {
    refused(
        "unknown.toml",
        b"listen = \"127.0.0.1:9464\"\n[bh]\nenabeld = true\n",
        &[],
        "line 3, in [bh]: `enabeld = true`: unknown field `enabeld`",
    );
    refused(
        "type.toml",
        b"[account]\nenabled = \"yes\"\n",
        &[],
        "line 2, in [account]: `enabled = \"yes\"`",
    );
    refused("syntax.toml", b"[bh\n", &[], "line 1");
    refused(
        "bound.toml",
        b"[noise]\nevery = \"30s\"\n",
        &[],
        "[noise] every (s) must be 60 to 86400, not 30",
    );
    refused(
        "cpus.toml",
        b"cpus = \"4000\"\n",
        &[],
        "cpus: CPU 4000 is offline or does not exist",
    );
    refused(
        "listen.toml",
        b"listen = \"localhost\"\n",
        &[],
        "listen 'localhost': expected PORT, IP:PORT or [IPv6]:PORT",
    );
}

#[test]
fn an_active_run_it_cannot_honour_is_refused() {
    refused(
        "half.toml",
        b"[wakeup]\nenabled = true\nevery = \"60s\"\nduration = \"31s\"\n",
        &[],
        "[wakeup] duration (31 s) must be at most half of every (60 s)",
    );
    refused(
        "long.toml",
        b"[noise]\nenabled = true\nevery = \"1h\"\nduration = \"11m\"\n",
        &[],
        "[noise] duration (s) must be 1 to 600, not 660",
    );
    refused(
        "zero.toml",
        b"[noise]\nduration = 0\n",
        &[],
        "[noise] duration (s) must be 1 to 600, not 0",
    );
    refused(
        "active-cpus.toml",
        b"[noise]\nenabled = true\ncpus = \"4000\"\n",
        &[],
        "[noise] cpus: CPU 4000 is offline or does not exist",
    );
    refused(
        "passive.toml",
        b"[noise_passive]\nenabled = 1\n",
        &[],
        "line 2, in [noise_passive]: `enabled = 1`",
    );
}

#[test]
fn a_huge_or_binary_file_is_refused_before_it_is_read_whole() {
    refused(
        "huge.toml",
        &vec![b'#'; 1 << 20],
        &[],
        "a configuration is at most 65536",
    );
    refused("binary.toml", &[0xff, 0xfe, 0, 1], &[], "not UTF-8 text");
    assert_fails_with(
        &["agent", "--config", "/dev/zero"],
        "--config /dev/zero: not a regular file",
    );
}

#[test]
fn the_command_line_is_checked_as_the_file_is() {
    refused(
        "empty.toml",
        b"",
        &["--listen", "0"],
        "--listen '0': a port goes from 1 to 65535",
    );
    refused(
        "empty.toml",
        b"",
        &["--log-level", "loud"],
        "'loud' is not a log level",
    );
    refused(
        "empty.toml",
        b"",
        &["--cpus", "7000"],
        "cpus: CPU 7000 is offline",
    );
}
