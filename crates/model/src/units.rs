//! CPU lists like `0-3,8` and times in µs, as users type them and recordings keep them.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The messages a typed number's sign and size get before it is parsed: `-3` "must be
/// positive", a 20-digit value "is too large" (rather than "not a time").
pub fn refuse_sign_and_size(text: &str) -> Result<(), String> {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix('-')
        && rest.starts_with(|c: char| c.is_ascii_digit() || c == '.')
    {
        return Err(format!("'{text}' must be positive"));
    }
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && text[..digits].parse::<u64>().is_err() {
        return Err(format!("'{text}' is too large"));
    }
    Ok(())
}

/// A time given in µs by default, or with a unit: `500`, `500us`, `2ms`, `1s`, `100ns`.
pub fn parse_micros(text: &str) -> Result<Duration, String> {
    refuse_sign_and_size(text)?;
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a time (examples: 500, 500us, 2ms, 1s)"))?;
    let nanos_per_unit = match unit {
        "" | "us" | "µs" => 1_000,
        "ns" => 1,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => {
            return Err(format!(
                "'{text}' has an unknown time unit '{unit}' (ns, us, ms, s)"
            ));
        }
    };
    value
        .checked_mul(nanos_per_unit)
        .map(Duration::from_nanos)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// A set of CPU numbers, written and read as a list of ranges: `0-3,8`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuList(BTreeSet<u32>);

impl CpuList {
    /// Just `cpu`.
    pub fn single(cpu: u32) -> Self {
        CpuList(BTreeSet::from([cpu]))
    }

    /// The CPUs, in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    /// How many CPUs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it has no CPU.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `cpu` is in it.
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }

    /// CPUs of `self` that are not in `other`.
    pub fn without(&self, other: &CpuList) -> CpuList {
        CpuList(self.0.difference(&other.0).copied().collect())
    }

    /// The CPUs in both lists.
    pub fn shared_with(&self, other: &CpuList) -> CpuList {
        CpuList(self.0.intersection(&other.0).copied().collect())
    }

    /// A CPU list as the kernel's command line takes it (isolcpus=, nohz_full=, rcu_nocbs=,
    /// irqaffinity=; `bitmap_parselist`, the "cpu lists" of kernel-parameters.rst): besides
    /// `0-3,8`, `all`, `N` for the last CPU (`last`), and groups `0-7:2/4` (the first 2 CPUs
    /// of every 4 from 0 to 7: 0,1,4,5).
    pub fn parse_kernel(text: &str, last: u32) -> Result<CpuList, String> {
        let text = text.trim();
        let bad = || format!("'{text}' is not a CPU list (example: 0-3,8)");
        let cpu = |word: &str| match word.trim() {
            "N" => Ok(last),
            number => number.parse::<u32>().map_err(|_| bad()),
        };
        let mut cpus = BTreeSet::new();
        for part in text.split(',') {
            let part = part.trim();
            let (range, group) = match part.split_once(':') {
                Some((range, group)) => (range, Some(group)),
                None => (part, None),
            };
            let (first, end) = match range.split_once('-') {
                _ if range == "all" => (0, last),
                Some((a, b)) => (cpu(a)?, cpu(b)?),
                None => (cpu(range)?, cpu(range)?),
            };
            // a plain range is a group of one, all used
            let (used, size): (u32, u32) = match group {
                None => (1, 1),
                Some(group) => {
                    let (used, size) = group.split_once('/').ok_or_else(bad)?;
                    (
                        used.trim().parse().map_err(|_| bad())?,
                        size.trim().parse().map_err(|_| bad())?,
                    )
                }
            };
            if used == 0 || used > size {
                return Err(format!(
                    "'{part}' in '{text}': a group uses 1 to all of its CPUs"
                ));
            }
            if first > end {
                return Err(format!("CPU range '{part}' in '{text}' runs backwards"));
            }
            if end >= CPU_LIMIT {
                return Err(format!(
                    "CPU {end} in '{text}' is beyond any kernel's (CPUs are numbered below {CPU_LIMIT})"
                ));
            }
            cpus.extend((first..=end).filter(|&c| (c - first) % size < used));
        }
        Ok(CpuList(cpus))
    }
}

impl FromIterator<u32> for CpuList {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        CpuList(iter.into_iter().collect())
    }
}

/// The kernel's largest CONFIG_NR_CPUS: a CPU list names CPUs below it, so that a list
/// read from a command line or a file costs at most this many entries.
pub const CPU_LIMIT: u32 = 8192;

impl FromStr for CpuList {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let mut cpus = BTreeSet::new();
        for part in text.split(',') {
            let bad = || format!("'{text}' is not a CPU list (example: 0-3,8)");
            let (first, last): (u32, u32) = match part.split_once('-') {
                Some((a, b)) => (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                ),
                None => {
                    let cpu: u32 = part.trim().parse().map_err(|_| bad())?;
                    (cpu, cpu)
                }
            };
            if first > last {
                return Err(format!("CPU range '{part}' in '{text}' runs backwards"));
            }
            if last >= CPU_LIMIT {
                return Err(format!(
                    "CPU {last} in '{text}' is beyond any kernel's (CPUs are numbered below {CPU_LIMIT})"
                ));
            }
            cpus.extend(first..=last);
        }
        Ok(CpuList(cpus))
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cpus = self.0.iter().copied().peekable();
        let mut first = true;
        while let Some(start) = cpus.next() {
            let mut end = start;
            while cpus.peek() == Some(&(end + 1)) {
                end = cpus.next().unwrap_or(end);
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl serde::Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

/// In JSON, the list of CPU numbers: `[0, 1, 2, 3, 8]`.
impl schemars::JsonSchema for CpuList {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CpuList".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<u32>>::json_schema(generator)
    }
}

impl<'de> serde::Deserialize<'de> for CpuList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <Vec<u32> as serde::Deserialize>::deserialize(deserializer).map(CpuList::from_iter)
    }
}

/// Reads a value written as text (its `Display`) back with its `FromStr`.
pub fn deserialize_text<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: FromStr,
    T::Err: fmt::Display,
{
    use serde::Deserialize;
    String::deserialize(deserializer)?
        .parse()
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_default_unit_and_suffixes() {
        assert_eq!(parse_micros("500"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_micros("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_micros("2ms"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_micros("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_micros("100ns"), Ok(Duration::from_nanos(100)));
    }

    #[test]
    fn a_cpu_list_names_cpus_below_any_kernels_limit_only() {
        let top: CpuList = "8190-8191".parse().unwrap();
        assert_eq!(top.iter().count(), 2);
        // a range of hundreds of millions is refused, not built
        let error = "0-400000000".parse::<CpuList>().unwrap_err();
        assert!(error.contains("beyond any kernel's"), "{error}");
        assert!("8192".parse::<CpuList>().is_err());
    }

    #[test]
    fn micros_rejects_garbage() {
        assert!(parse_micros("").is_err());
        assert!(parse_micros("ms").is_err());
        assert!(
            parse_micros("5 parsecs")
                .unwrap_err()
                .contains("unknown time unit")
        );
        assert!(parse_micros("-5").is_err());
        assert!(parse_micros("99999999999999999999").is_err());
    }

    #[test]
    fn cpu_list_round_trip() {
        let cpus: CpuList = "0-3,8".parse().unwrap();
        assert_eq!(cpus.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 8]);
        assert_eq!(cpus.to_string(), "0-3,8");
        let cpus: CpuList = "5,1,2,3".parse().unwrap();
        assert_eq!(cpus.to_string(), "1-3,5");
        assert_eq!("7".parse::<CpuList>().unwrap().to_string(), "7");
    }

    #[test]
    fn kernel_cpu_lists_take_all_n_and_groups() {
        let parse = |text| CpuList::parse_kernel(text, 7).map(|cpus| cpus.to_string());
        assert_eq!(parse("0-3,8"), Ok("0-3,8".into()));
        assert_eq!(parse("all"), Ok("0-7".into()));
        assert_eq!(parse("N"), Ok("7".into()));
        assert_eq!(parse("2-N"), Ok("2-7".into()));
        // the first 2 of every group of 4 (kernel-parameters.rst's example)
        assert_eq!(parse("0-7:2/4"), Ok("0-1,4-5".into()));
        assert_eq!(parse("1-9:1/3"), Ok("1,4,7".into()));
        assert_eq!(parse("all:1/2"), Ok("0,2,4,6".into()));
        assert_eq!(parse("0-3:4/4,6"), Ok("0-3,6".into()));
        for bad in [
            "", "x", "0-", "3-1", "0-7:0/4", "0-7:5/4", "0-7:2/0", "0-7:2", "0-7:a/4", "0-8192",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn cpu_list_errors() {
        assert!("".parse::<CpuList>().is_err());
        assert!("a".parse::<CpuList>().is_err());
        assert!("1-".parse::<CpuList>().is_err());
        assert!("3-1".parse::<CpuList>().unwrap_err().contains("backwards"));
        assert!("0,,1".parse::<CpuList>().is_err());
    }

    #[test]
    fn cpu_list_difference() {
        let all: CpuList = "0-3".parse().unwrap();
        let some: CpuList = "1,2".parse().unwrap();
        assert_eq!(all.without(&some).to_string(), "0,3");
    }
}
