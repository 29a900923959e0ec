//! The release scripts/release makes: its binary needs nothing beyond the C library and
//! runs (it loads BPF programs), its tarball carries the files the README lists, and its
//! .deb installs them and removes them, leaving dpkg as it found it. Needs root (dpkg -i,
//! BPF) and what scripts/setup installs (cargo-deb, libelf's and zlib's static libraries),
//! and deploy/'s agent config and systemd unit, which the release ships.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::*;

/// What scripts/release made.
struct Release {
    /// target/dist/irqlens: the binary both packages carry
    binary: PathBuf,
    tarball: PathBuf,
    deb: PathBuf,
}

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Runs `command`, failing the test with its stderr unless it succeeds; its stdout.
fn stdout_of(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{command:?} failed ({}): {}",
        output.status,
        stderr.lines().rev().take(30).collect::<Vec<_>>().join("\n")
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// scripts/release's output, made once per test run: its dist build takes minutes the
/// first time, and each test reads a different part of what it made.
fn release() -> &'static Release {
    static RELEASE: OnceLock<Release> = OnceLock::new();
    RELEASE.get_or_init(|| {
        let started = std::time::Instant::now();
        let printed = stdout_of(Command::new("scripts/release").current_dir(workspace()));
        eprintln!("scripts/release took {:.0?}", started.elapsed());
        let paths: Vec<PathBuf> = printed.lines().map(|l| workspace().join(l)).collect();
        let [tarball, deb] = paths.as_slice() else {
            panic!("scripts/release should print the tarball's and the .deb's paths: {printed}")
        };
        for path in [tarball, deb] {
            assert!(path.is_file(), "{} is missing", path.display());
        }
        Release {
            binary: workspace().join("target/dist/irqlens"),
            tarball: tarball.clone(),
            deb: deb.clone(),
        }
    })
}

/// The paths `directory/PAGE` + `suffix` of the man pages irqlens generates (irqlens.1,
/// irqlens-noise.1, ...), asked of the binary these tests built rather than the release's.
fn man_page_paths(directory: &str, suffix: &str) -> Vec<String> {
    let generated = temp_path("release-man");
    let generated = generated.to_str().unwrap();
    irqlens_ok(&["--generate", "man-pages", "--man-dir", generated]);
    let pages: BTreeSet<String> = std::fs::read_dir(generated)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    std::fs::remove_dir_all(generated).unwrap();
    assert!(pages.contains("irqlens-noise.1"), "{pages:?}");
    pages
        .iter()
        .map(|page| format!("{directory}/{page}{suffix}"))
        .collect()
}

/// The libraries `binary` names as NEEDED in its dynamic section.
fn needed_libraries(binary: &Path) -> Vec<String> {
    stdout_of(Command::new("readelf").arg("-d").arg(binary))
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(|line| Some(line.split_once('[')?.1.split_once(']')?.0.to_owned()))
        .collect()
}

#[test]
#[ignore = "needs root: the release binary loads BPF programs (scripts/test runs it)"]
fn release_binary_needs_only_the_c_library_and_runs() {
    assert_root();
    let binary = &release().binary;
    let needed = needed_libraries(binary);
    assert!(
        needed.iter().any(|library| library.starts_with("libc.so")),
        "readelf -d should list libc: {needed:?}"
    );
    // glibc's own libraries; libelf, zlib and libbpf are linked in
    let beyond_libc: Vec<&String> = needed
        .iter()
        .filter(|library| {
            !["libc.so", "libm.so", "libgcc_s.so", "ld-linux"]
                .iter()
                .any(|own| library.starts_with(own))
        })
        .collect();
    assert!(
        beyond_libc.is_empty(),
        "NEEDED beyond libc: {beyond_libc:?}"
    );
    let sections = stdout_of(Command::new("readelf").args(["-S", "-W"]).arg(binary));
    assert!(
        !sections.contains(".symtab") && !sections.contains(".debug_"),
        "the release binary should be stripped: {sections}"
    );

    let version = stdout_of(Command::new(binary).arg("--version"));
    assert_eq!(
        version.trim(),
        format!("irqlens {}", env!("CARGO_PKG_VERSION"))
    );
    let document = stdout_of(Command::new(binary).args(["bh", "-d", "1s", "-q", "--json"]));
    assert_valid_document(document.as_bytes());
    let document: serde_json::Value = serde_json::from_str(&document).unwrap();
    assert!(
        document["run"]["programs"].as_u64().unwrap_or(0) > 0,
        "bh loaded no program: {document:#}"
    );
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

#[test]
#[ignore = "needs root: part of the release tests, which install a .deb (scripts/test runs it)"]
fn release_tarball_carries_the_binary_its_pages_completions_and_deploy_files() {
    assert_root();
    let release = release();
    let top = format!(
        "irqlens-{}-{}-linux",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    );
    let listed: BTreeSet<String> = stdout_of(Command::new("tar").arg("-tzf").arg(&release.tarball))
        .lines()
        .filter(|entry| !entry.ends_with('/'))
        .map(str::to_owned)
        .collect();
    let mut expected: BTreeSet<String> = [
        "bin/irqlens",
        "share/bash-completion/completions/irqlens",
        "share/zsh/site-functions/_irqlens",
        "share/fish/vendor_completions.d/irqlens.fish",
        "share/doc/irqlens/LICENSE",
        "share/doc/irqlens/README.md",
        "share/doc/irqlens/agent.toml.example",
        "lib/systemd/system/irqlens-agent.service",
    ]
    .iter()
    .map(|file| format!("{top}/{file}"))
    .collect();
    expected.extend(man_page_paths(&format!("{top}/share/man/man1"), ".gz"));
    assert_eq!(listed, expected);

    let unpacked = temp_path("release-tarball");
    std::fs::create_dir_all(&unpacked).unwrap();
    stdout_of(
        Command::new("tar")
            .arg("-xzf")
            .arg(&release.tarball)
            .arg("-C")
            .arg(&unpacked),
    );
    let read = |path: &Path| std::fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let tree = unpacked.join(&top);
    assert!(
        read(&tree.join("bin/irqlens")) == read(&release.binary),
        "the tarball's binary is not target/dist/irqlens"
    );
    // its tree goes under /usr/local, and its unit starts the binary from there
    let unit = read(&workspace().join("deploy/systemd/irqlens-agent.service"));
    let unit = String::from_utf8(unit).unwrap();
    let packed = read(&tree.join("lib/systemd/system/irqlens-agent.service"));
    assert_eq!(
        String::from_utf8(packed).unwrap(),
        unit.replace("/usr/bin/irqlens", "/usr/local/bin/irqlens")
    );
    std::fs::remove_dir_all(&unpacked).unwrap();
}

/// The installed package named irqlens, if any, and dpkg's record of every package.
fn dpkg_state() -> String {
    stdout_of(Command::new("dpkg-query").args([
        "-W",
        "-f",
        "${binary:Package} ${Version} ${db:Status-Abbrev}\n",
    ]))
}

fn irqlens_package_known() -> bool {
    Command::new("dpkg-query")
        .args(["-W", "irqlens"])
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Written before the test installs the package and removed after it removed it: a run
/// killed in between (no unwinding, so no [`Installed`] drop) leaves it, and the next run
/// then knows that the installed irqlens package is this test's, not the machine's.
const INSTALLED_MARK: &str = "/var/tmp/irqlens-release-test.installed";

/// Removes the package if the test stopped between installing and removing it.
struct Installed;

impl Installed {
    fn mark() -> Installed {
        std::fs::write(
            INSTALLED_MARK,
            "dpkg -r irqlens: installed by release_root\n",
        )
        .expect("the test's mark is written before it installs");
        Installed
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        if irqlens_package_known() {
            let _ = Command::new("dpkg").args(["-r", "irqlens"]).status();
        }
        if !irqlens_package_known() {
            let _ = std::fs::remove_file(INSTALLED_MARK);
        }
    }
}

#[test]
#[ignore = "needs root: installs and removes the release's .deb (scripts/test runs it)"]
fn release_deb_installs_its_files_and_removes_them() {
    assert_root();
    assert!(
        Command::new("dpkg")
            .arg("--version")
            .output()
            .is_ok_and(|output| output.status.success()),
        "dpkg is missing: this test installs the release's .deb with it"
    );
    let release = release();
    let files: BTreeSet<String> = stdout_of(Command::new("dpkg-deb").arg("-c").arg(&release.deb))
        .lines()
        .filter_map(|line| line.split_whitespace().last())
        .filter(|path| !path.ends_with('/'))
        .map(|path| path.trim_start_matches('.').to_owned())
        .collect();
    let mut expected: BTreeSet<String> = [
        "/usr/bin/irqlens",
        "/usr/share/bash-completion/completions/irqlens",
        "/usr/share/zsh/vendor-completions/_irqlens",
        "/usr/share/fish/vendor_completions.d/irqlens.fish",
        "/lib/systemd/system/irqlens-agent.service",
        "/usr/share/doc/irqlens/agent.toml.example",
        "/usr/share/doc/irqlens/README.md",
        "/usr/share/doc/irqlens/copyright",
    ]
    .map(str::to_owned)
    .into();
    expected.extend(man_page_paths("/usr/share/man/man1", ".gz"));
    assert_eq!(files, expected);
    // installing starts nothing: no maintainer script
    let control = stdout_of(Command::new("sh").arg("-c").arg(format!(
        "dpkg-deb --ctrl-tarfile '{}' | tar -t",
        release.deb.display()
    )));
    for script in ["preinst", "postinst", "prerm", "postrm"] {
        assert!(
            !control.contains(script),
            "the .deb has a {script}: {control}"
        );
    }

    if Path::new(INSTALLED_MARK).exists() {
        // an earlier run was killed between installing and removing its package
        drop(Installed);
    }
    assert!(
        !irqlens_package_known(),
        "a package named irqlens is installed: remove it (dpkg -r irqlens) before this test"
    );
    for file in &files {
        assert!(
            !Path::new(file).exists(),
            "{file} exists: the test would overwrite it"
        );
    }
    let before = dpkg_state();
    let installed = Installed::mark();
    stdout_of(Command::new("dpkg").arg("-i").arg(&release.deb));
    for file in &files {
        assert!(Path::new(file).is_file(), "{file} is not installed");
    }
    assert!(
        std::fs::read("/usr/bin/irqlens").unwrap() == std::fs::read(&release.binary).unwrap(),
        "the .deb's binary is not target/dist/irqlens"
    );
    stdout_of(Command::new("dpkg").args(["-r", "irqlens"]));
    drop(installed);
    for file in &files {
        assert!(!Path::new(file).exists(), "{file} is left after dpkg -r");
    }
    assert_eq!(dpkg_state(), before, "dpkg's state changed");
}
