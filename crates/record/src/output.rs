//! Creating the files irqlens writes (recordings, traces, pages, calibrations) so that
//! each is the file the user named: irqlens runs as root, and a name in a world-writable
//! directory may have been planted by someone else (`fs.protected_symlinks` and
//! `fs.protected_regular` are off on many machines and containers).

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of a file irqlens creates: recordings and traces hold kernel addresses
/// (KASLR) and the machine's process names, for the user alone. A user who wants to
/// share one can chmod it, or make the file first with the mode wanted: an existing
/// file keeps its mode.
pub const MODE: u32 = 0o600;

/// Opens `path` for writing, truncated, made with [`MODE`] if it does not exist.
/// Refused: a symbolic link (never followed, whatever it points to), a regular file with
/// other hard links, and one that another user owns in a sticky world-writable
/// directory (as the kernel's `protected_regular` refuses it); anything but a regular
/// file, a FIFO or a character device (a block device would be overwritten); a file of a
/// kernel interface (/proc, /sys: root may open /proc/version for writing, and a write to
/// /proc/sys changes the machine); and a file that refuses a write (/dev/full), so that
/// a run that could not keep its output fails before it measures. A FIFO or a character
/// device (such as /dev/null) is written as it is.
pub fn create(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .mode(MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP) => {
                refused("is a symbolic link: irqlens writes through none (name the file itself)")
            }
            _ => err,
        })?;
    let found = file.metadata()?;
    let kind = found.file_type();
    if !(kind.is_file() || kind.is_fifo() || kind.is_char_device()) {
        return Err(refused(
            "is neither a file, a FIFO nor a character device: irqlens writes none of those",
        ));
    }
    if is_kernel_interface(&file)? {
        return Err(refused(
            "is a kernel interface (procfs, sysfs, ...), not a file to write output to",
        ));
    }
    // an empty write reaches the file's own write operation, which /dev/full and a
    // read-only kernel file refuse, without writing anything
    let _written_nothing: usize = (&file).write(&[])?;
    if !kind.is_file() {
        return Ok(file);
    }
    if found.nlink() > 1 {
        return Err(refused(
            "has other hard links: irqlens writes none of them (remove it or name another file)",
        ));
    }
    if planted(path, &found)? {
        return Err(refused(
            "belongs to another user in a sticky world-writable directory: irqlens does not \
             write into it (remove it or name another file)",
        ));
    }
    file.set_len(0)?;
    Ok(file)
}

/// Whether `file` lives on one of the kernel's pseudo file systems, whose files are
/// interfaces to the kernel rather than storage.
fn is_kernel_interface(file: &File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: statfs is plain data, filled by fstatfs on success.
    let mut stats: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for as long as `file` is, and `stats` is writable.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut stats) } != 0 {
        return Err(io::Error::last_os_error());
    }
    const PSEUDO: [libc::c_long; 8] = [
        libc::PROC_SUPER_MAGIC,
        libc::SYSFS_MAGIC,
        libc::DEBUGFS_MAGIC,
        libc::TRACEFS_MAGIC,
        libc::CGROUP_SUPER_MAGIC,
        libc::CGROUP2_SUPER_MAGIC,
        libc::BPF_FS_MAGIC,
        libc::SECURITYFS_MAGIC,
    ];
    Ok(PSEUDO.contains(&(stats.f_type as libc::c_long)))
}

/// Whether the existing `file` at `path` is one another user could have put there for
/// irqlens to write into.
fn planted(path: &Path, file: &std::fs::Metadata) -> io::Result<bool> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.metadata()?,
        _ => Path::new(".").metadata()?,
    };
    let mode = directory.permissions().mode();
    let sticky_and_open = mode & 0o1000 != 0 && mode & 0o002 != 0;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    Ok(sticky_and_open && file.uid() != me && file.uid() != directory.uid())
}

fn refused(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("irqlens-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_new_file_is_made_private_and_an_old_one_truncated_keeping_its_mode() {
        let dir = scratch("new");
        let path = dir.join("out");
        create(&path).unwrap().write_all(b"first, longer").unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            MODE
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        create(&path).unwrap().write_all(b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o644
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_link_is_refused_and_its_target_left_alone() {
        let dir = scratch("link");
        let target = dir.join("target");
        std::fs::write(&target, b"precious").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = create(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        // a dangling link is not made into a file either
        let dangling = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nothing"), &dangling).unwrap();
        assert!(create(&dangling).is_err());
        assert!(!dir.join("nothing").exists());
        let hard = dir.join("hard");
        std::fs::hard_link(&target, &hard).unwrap();
        let err = create(&hard).unwrap_err();
        assert!(err.to_string().contains("hard links"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn kernel_files_devices_that_refuse_writes_and_block_devices_are_refused() {
        for path in [
            "/proc/version",
            "/proc/sys/kernel/hostname",
            "/dev/full",
            "/dev/loop0",
        ] {
            if !Path::new(path).exists() {
                continue;
            }
            assert!(create(Path::new(path)).is_err(), "{path} was taken");
        }
    }

    #[test]
    fn a_device_is_written_as_it_is() {
        create(Path::new("/dev/null"))
            .unwrap()
            .write_all(b"x")
            .unwrap();
    }
}
