//! What `irqlens check` reads of the machine for its configuration checks: advise's
//! reading, and the rest of what isolating CPUs involves (isolcpus, nohz_full, THP, the
//! clocksource, irqbalance's banned CPUs, the NAPI and IRQ threads). Reads only.

use std::fs;

use anyhow::{Result, bail};
use irqlens_model::check::{BannedCpus, Configuration};
use irqlens_model::tune::parse_cpu_mask;
use irqlens_model::units::CpuList;

use crate::machine::{self, read_trimmed};

/// Where distributions keep irqbalance's settings (Debian's, then Red Hat's).
const IRQBALANCE_FILES: [&str; 2] = ["/etc/default/irqbalance", "/etc/sysconfig/irqbalance"];

/// The root group's RT runtime where cgroup v1's cpu controller is mounted (alone, or with
/// cpuacct); cgroup v2 has none.
const RT_GROUP_RUNTIME_FILES: [&str; 2] = [
    "/sys/fs/cgroup/cpu/cpu.rt_runtime_us",
    "/sys/fs/cgroup/cpu,cpuacct/cpu.rt_runtime_us",
];

/// Reads what the configuration checks of `cpus` need. Err: a CPU of `cpus` is not online.
pub fn read_configuration(cpus: &CpuList) -> Result<Configuration> {
    let mut machine = machine::read(&[], &[])?;
    let offline = cpus.without(&machine.online_cpus);
    if !offline.is_empty() {
        bail!(
            "CPUs {offline} are not online (online: {})",
            machine.online_cpus
        );
    }
    machine.idle_states = machine::idle_states_of(cpus, &machine.online_cpus);
    let irqbalance_banned = if machine.irqbalance_running {
        irqbalance_banned()
    } else {
        None
    };
    let system = "/sys/devices/system";
    Ok(Configuration {
        machine,
        isolated: isolated_cpus(),
        nohz_full: nohz_full_cpus(),
        transparent_hugepage: read_trimmed("/sys/kernel/mm/transparent_hugepage/enabled")
            .and_then(|modes| selected_mode(&modes)),
        clocksource: read_trimmed(format!(
            "{system}/clocksource/clocksource0/current_clocksource"
        )),
        irqbalance_banned,
        bottom_half_threads: ["napi/", "irq/"]
            .into_iter()
            .flat_map(machine::threads_named)
            .collect(),
        rt_group_runtime: RT_GROUP_RUNTIME_FILES.into_iter().find_map(|path| {
            let runtime = read_trimmed(path)?.parse().ok()?;
            Some((path.to_string(), runtime))
        }),
        default_irq_affinity: read_trimmed("/proc/irq/default_smp_affinity")
            .and_then(|mask| parse_cpu_mask(&mask)),
    })
}

fn read_cpu_list(path: String) -> Option<CpuList> {
    read_trimmed(path)?.parse().ok()
}

/// The mode a sysfs choice file selects: the word in brackets (`always [madvise] never`).
fn selected_mode(modes: &str) -> Option<String> {
    modes
        .split_whitespace()
        .find_map(|word| word.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_owned)
}

/// The CPUs isolcpus= took out of the scheduler's domains (`/sys/devices/system/cpu/
/// isolated`, numbered among the possible CPUs); empty when none.
pub fn isolated_cpus() -> CpuList {
    read_cpu_list("/sys/devices/system/cpu/isolated".into()).unwrap_or_default()
}

/// The nohz_full= CPUs; none: the kernel has no such file (no CONFIG_NO_HZ_FULL).
pub fn nohz_full_cpus() -> Option<CpuList> {
    read_trimmed("/sys/devices/system/cpu/nohz_full")
        // "(null)" when no nohz_full= was given
        .map(|text| text.parse().unwrap_or_default())
}

/// The CPUs the running irqbalance bans: its environment is what it was started with
/// (systemd reads the distribution's file into it); the files only when the environment
/// cannot be read.
fn irqbalance_banned() -> Option<BannedCpus> {
    let environments: Vec<String> = machine::irqbalance_pids()
        .into_iter()
        .filter_map(|pid| fs::read(format!("/proc/{pid}/environ")).ok())
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', "\n"))
        .collect();
    if !environments.is_empty() {
        return environments.iter().find_map(|environment| {
            Some(BannedCpus {
                cpus: parse_banned(environment)?,
                from: "irqbalance's environment".into(),
            })
        });
    }
    IRQBALANCE_FILES.into_iter().find_map(|path| {
        Some(BannedCpus {
            cpus: parse_banned(&fs::read_to_string(path).ok()?)?,
            from: path.into(),
        })
    })
}

/// The banned CPUs of an environment or a shell-style settings file, one `NAME=VALUE` a
/// line, in irqbalance's order (its `setup_banned_cpus`): a set IRQBALANCE_BANNED_CPUS (a
/// hex mask, `0` for none) wins over IRQBALANCE_BANNED_CPULIST (a list, `-` for none);
/// none when neither is set to something readable.
fn parse_banned(text: &str) -> Option<CpuList> {
    let value = |name: &str| {
        text.lines()
            .filter_map(|line| line.trim().strip_prefix(name)?.strip_prefix('='))
            .map(|value| value.trim().trim_matches(|c| c == '"' || c == '\''))
            .rfind(|value| !value.is_empty())
    };
    if let Some(mask) = value("IRQBALANCE_BANNED_CPUS") {
        return parse_cpu_mask(mask);
    }
    match value("IRQBALANCE_BANNED_CPULIST")? {
        "-" => Some(CpuList::default()),
        list => list.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selected_mode_is_the_bracketed_word() {
        assert_eq!(
            selected_mode("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            selected_mode("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(selected_mode("always madvise never"), None);
    }

    #[test]
    fn banned_cpus_as_irqbalance_reads_them_and_skip_comments_and_empty_values() {
        let file = "# IRQBALANCE_BANNED_CPULIST=0\nIRQBALANCE_BANNED_CPUS=\"0c\"\n";
        assert_eq!(parse_banned(file), Some("2-3".parse().unwrap()));
        // a set mask wins (irqbalance reads it first), `0` bans none
        let environment = "PATH=/bin\nIRQBALANCE_BANNED_CPUS=3\nIRQBALANCE_BANNED_CPULIST=1,4-5\n";
        assert_eq!(parse_banned(environment), Some("0-1".parse().unwrap()));
        let none = "IRQBALANCE_BANNED_CPUS=0\nIRQBALANCE_BANNED_CPULIST=-\n";
        assert_eq!(parse_banned(none), Some(CpuList::default()));
        let list = "IRQBALANCE_BANNED_CPUS=\nIRQBALANCE_BANNED_CPULIST=1,4-5\n";
        assert_eq!(parse_banned(list), Some("1,4-5".parse().unwrap()));
        assert_eq!(
            parse_banned("IRQBALANCE_BANNED_CPULIST=-"),
            Some(CpuList::default())
        );
        assert_eq!(
            parse_banned("IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ARGS=x\n"),
            None
        );
        assert_eq!(parse_banned(""), None);
    }

    #[test]
    fn this_machine_is_checked_for_its_last_cpu() {
        use irqlens_analyze::check::{configuration, profile_checks};
        use irqlens_model::check::Profile;
        let online = crate::system::online_cpus().unwrap();
        let last = CpuList::single(online.iter().last().unwrap());
        let config = read_configuration(&last).unwrap();
        for profile in [Profile::Realtime, Profile::Network, Profile::Hpc] {
            let checks = configuration(&config, &last, profile);
            let ids: Vec<&str> = checks.iter().map(|check| check.id.as_str()).collect();
            assert_eq!(ids, profile_checks(profile));
            if profile == Profile::Realtime {
                for check in &checks {
                    println!(
                        "{:<20} {} {:<40} {}",
                        check.id,
                        check.status.label(),
                        check.found,
                        check.expected
                    );
                    for (what, text) in [("cause", &check.cause), ("advice", &check.advice)] {
                        if let Some(text) = text {
                            println!("{:>26} {text}", format!("{what}:"));
                        }
                    }
                    if !check.remedies.is_empty() {
                        println!("{:>26} {}", "remedies:", check.remedies.join(", "));
                    }
                }
            }
        }
    }

    #[test]
    fn this_machine_reads_for_its_first_cpu() {
        let online = crate::system::online_cpus().unwrap();
        let first = CpuList::single(online.iter().next().unwrap());
        let config = read_configuration(&first).unwrap();
        assert_eq!(config.machine.online_cpus, online);
        assert!(
            config
                .machine
                .idle_states
                .iter()
                .all(|s| first.contains(s.cpu))
        );
        assert!(config.isolated.without(&online).is_empty());
        assert!(
            config
                .machine
                .sysctls
                .contains_key("kernel.sched_rt_runtime_us")
        );
        // every machine has IRQ threads or none; those read are named as asked
        assert!(
            config
                .bottom_half_threads
                .iter()
                .all(|t| t.comm.starts_with("napi/") || t.comm.starts_with("irq/"))
        );
        let past_the_last = online.iter().last().unwrap() + 1;
        let error = read_configuration(&CpuList::single(past_the_last)).unwrap_err();
        assert!(error.to_string().contains("not online"), "{error}");
    }
}
