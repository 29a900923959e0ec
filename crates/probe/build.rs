//! Builds the BPF programs (CO-RE, against the `vmlinux.h` committed for the target
//! architecture, so no BTF of the build host and no bpftool are needed) into Rust
//! skeletons, and the host copy of the nesting arithmetic the unit tests check.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use libbpf_cargo::SkeletonBuilder;

const BPF_DIR: &str = "src/bpf";
const PROGRAMS: &[&str] = &["noise", "checkpoint", "fentry_check", "account"];
/// A `vmlinux.h` of one's own (e.g. `bpftool btf dump file /sys/kernel/btf/vmlinux format c`)
/// instead of the committed one.
const VMLINUX_H_ENV: &str = "IRQLENS_VMLINUX_H";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => panic!(
            "irqlens has no vmlinux.h for {other}: set {VMLINUX_H_ENV} to one \
             (bpftool btf dump file /sys/kernel/btf/vmlinux format c) and add the arch to build.rs"
        ),
        Err(e) => panic!("CARGO_CFG_TARGET_ARCH: {e}"),
    };
    let vmlinux_dir = vmlinux_include_dir(&out, arch);

    for name in PROGRAMS {
        let source = Path::new(BPF_DIR).join(format!("{name}.bpf.c"));
        SkeletonBuilder::new()
            .source(&source)
            .clang_args([
                "-I".as_ref(),
                vmlinux_dir.as_os_str(),
                "-I".as_ref(),
                BPF_DIR.as_ref(),
                format!("-D__TARGET_ARCH_{arch}").as_ref(),
                "-Wall".as_ref(),
            ])
            .build_and_generate(out.join(format!("{name}.skel.rs")))
            .unwrap_or_else(|e| panic!("building {}: {e:#}", source.display()));
    }

    // The nesting rules (R1-R7) and account's attribution live in C headers used by the
    // BPF programs; the unit tests run those same headers on the host, and account runs
    // its attribution's end there.
    cc::Build::new()
        .file(Path::new(BPF_DIR).join("nest_host.c"))
        .file(Path::new(BPF_DIR).join("account_host.c"))
        .include(BPF_DIR)
        .warnings(true)
        .compile("irqlens_nest_host");

    println!("cargo:rerun-if-changed={BPF_DIR}");
    println!("cargo:rerun-if-env-changed={VMLINUX_H_ENV}");
}

/// The directory whose `vmlinux.h` the programs include: `src/bpf/vmlinux/<arch>`, or one
/// in OUT_DIR holding a copy of `$IRQLENS_VMLINUX_H`. CO-RE relocations make the programs
/// portable to other kernels; the header only has to name the types and fields they use.
fn vmlinux_include_dir(out: &Path, arch: &str) -> PathBuf {
    let Some(own) = env::var_os(VMLINUX_H_ENV).filter(|path| !path.is_empty()) else {
        return Path::new(BPF_DIR).join("vmlinux").join(arch);
    };
    let own = PathBuf::from(own);
    println!("cargo:rerun-if-changed={}", own.display());
    let dir = out.join("vmlinux");
    fs::create_dir_all(&dir).expect("create OUT_DIR/vmlinux");
    fs::copy(&own, dir.join("vmlinux.h"))
        .unwrap_or_else(|e| panic!("{VMLINUX_H_ENV}={}: {e}", own.display()));
    dir
}
