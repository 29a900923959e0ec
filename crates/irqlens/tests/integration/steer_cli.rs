//! `irqlens steer` without root: what it is given is checked before anything is loaded.

use crate::common::assert_fails_with;

#[test]
fn a_device_no_namespace_has_is_refused_before_anything_is_loaded() {
    assert_fails_with(
        &["steer", "--dev", "lo", "--dev", "no-such-dev0", "-d", "1"],
        "--dev no-such-dev0: no network device of that name in any network namespace",
    );
}
