//! Builds the BPF programs (CO-RE, against a `vmlinux.h` dumped from the build host's BTF)
//! into Rust skeletons, and the host copy of the nesting arithmetic the unit tests check.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

const BPF_DIR: &str = "src/bpf";
const PROGRAMS: &[&str] = &["noise", "checkpoint", "fentry_check"];

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let include = out.join("include");
    fs::create_dir_all(&include).expect("create OUT_DIR/include");
    write_vmlinux_h(&include.join("vmlinux.h"));

    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => panic!("irqlens does not know the BPF target arch for {other}"),
        Err(e) => panic!("CARGO_CFG_TARGET_ARCH: {e}"),
    };
    for name in PROGRAMS {
        let source = Path::new(BPF_DIR).join(format!("{name}.bpf.c"));
        SkeletonBuilder::new()
            .source(&source)
            .clang_args([
                "-I".as_ref(),
                include.as_os_str(),
                "-I".as_ref(),
                BPF_DIR.as_ref(),
                format!("-D__TARGET_ARCH_{arch}").as_ref(),
                "-Wall".as_ref(),
            ])
            .build_and_generate(out.join(format!("{name}.skel.rs")))
            .unwrap_or_else(|e| panic!("building {}: {e:#}", source.display()));
    }

    // The nesting rules (R1-R7) live in one C header used by the BPF program; the unit
    // tests run that same header on the host.
    cc::Build::new()
        .file(Path::new(BPF_DIR).join("nest_host.c"))
        .include(BPF_DIR)
        .warnings(true)
        .compile("irqlens_nest_host");

    println!("cargo:rerun-if-changed={BPF_DIR}");
}

/// Dumps the running kernel's BTF as C. CO-RE relocations make the resulting object
/// portable to other kernels; the header only has to name the types.
fn write_vmlinux_h(path: &Path) {
    if path.exists() {
        return;
    }
    let btf = env::var("IRQLENS_VMLINUX_BTF").unwrap_or_else(|_| "/sys/kernel/btf/vmlinux".into());
    let output = Command::new("bpftool")
        .args(["btf", "dump", "file", &btf, "format", "c"])
        .output()
        .unwrap_or_else(|e| {
            panic!("running bpftool to dump {btf} (install bpftool: scripts/setup): {e}")
        });
    if !output.status.success() {
        panic!(
            "bpftool btf dump file {btf} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    fs::write(path, output.stdout).expect("write vmlinux.h");
}
