use super::*;

use irqlens_model::agent::DEFAULT_LISTEN;

fn temp_file(name: &str, content: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("irqlens-agent-{}-{name}", std::process::id()));
    std::fs::write(&path, content).unwrap();
    path
}

fn named(path: &Path) -> Source {
    Source::of(Some(path))
}

#[test]
fn a_full_file_reads_into_the_model() {
    let config = parse(
        r#"
listen = "127.0.0.1:9100"
cpus = "0-1"
log_level = "debug"

[bh]
enabled = false

[account]
by = "unit"

[noise]
every = "10m"
duration = "10s"
cpus = 1
"#,
    )
    .unwrap();
    assert_eq!(config.listen, "127.0.0.1:9100");
    assert_eq!(config.cpus, Some("0-1".parse().unwrap()));
    assert_eq!(config.log_level, LogLevel::Debug);
    assert!(!config.bh.enabled && config.account.enabled);
    assert_eq!(config.account.by, WorkloadBy::Unit);
    assert_eq!(config.noise.cpus, Some(CpuList::single(1)));
    assert!(!config.noise.enabled);
    assert_eq!(parse("").unwrap(), AgentConfig::default());
    assert_eq!(AgentConfig::default().listen, DEFAULT_LISTEN);
}

#[test]
fn an_error_is_one_line_naming_the_line_its_table_and_key() {
    for (text, expected) in [
        (
            "listne = 1\n",
            "line 1: `listne = 1`: unknown field `listne`",
        ),
        (
            "# comment\n[bh]\nenabled = \"yes\"\n",
            "line 3, in [bh]: `enabled = \"yes\"`:",
        ),
        (
            "[account]\nby = \"pods\"\n",
            "line 2, in [account]: `by = \"pods\"`: unknown variant `pods`",
        ),
        (
            "[noise]\nevery = \"10 fortnights\"\n",
            "in [noise]: `every = \"10 fortnights\"`",
        ),
        (
            "[gpu]\nenabled = true\n",
            "line 1: `[gpu]`: unknown field `gpu`",
        ),
        (
            "cpus = [1, 2]\n",
            "line 1: `cpus = [1, 2]`: expected a CPU list",
        ),
        ("listen = \n", "line 1"),
        ("[bh]\n[bh]\n", "line 2"),
        ("[wakeup]\nduration = 99999999999999999999\n", "line 2"),
    ] {
        let err = parse(text).unwrap_err();
        assert!(
            err.contains(expected),
            "{text:?}: expected '{expected}' in: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // a bound names its key
    let err = parse("[wakeup]\nevery = 10\n").unwrap_err();
    assert!(
        err.starts_with("[wakeup] every (s) must be 60 to 86400"),
        "{err}"
    );
    // a long line is quoted in part
    let long = format!("listne = \"{}\"\n", "x".repeat(10_000));
    assert!(parse(&long).unwrap_err().len() < 300);
}

#[test]
fn a_missing_default_file_is_the_defaults_a_missing_named_one_an_error() {
    let missing = std::env::temp_dir().join("irqlens-agent-no-such-file.toml");
    let err = named(&missing).read().unwrap_err();
    assert!(format!("{err:#}").starts_with("--config "), "{err:#}");
    let default = Source {
        path: missing,
        named: false,
    };
    assert_eq!(default.read().unwrap(), AgentConfig::default());
}

#[test]
fn a_huge_or_special_file_is_refused_before_it_is_read() {
    let huge = temp_file("huge.toml", &vec![b'#'; MAX_CONFIG_BYTES as usize + 1]);
    let err = format!("{:#}", named(&huge).read().unwrap_err());
    assert!(err.contains("a configuration is at most 65536"), "{err}");
    std::fs::remove_file(&huge).unwrap();
    // at the bound, it is read
    let full = temp_file("full.toml", &vec![b'#'; MAX_CONFIG_BYTES as usize]);
    assert_eq!(named(&full).read().unwrap(), AgentConfig::default());
    std::fs::remove_file(&full).unwrap();
    // /dev/zero would be read for ever
    let err = format!("{:#}", named(Path::new("/dev/zero")).read().unwrap_err());
    assert!(err.ends_with("not a regular file"), "{err}");
    let err = format!("{:#}", named(&std::env::temp_dir()).read().unwrap_err());
    assert!(err.ends_with("not a regular file"), "{err}");
    let binary = temp_file("binary.toml", &[0xff, 0xfe, 0x00, 0x80]);
    let err = format!("{:#}", named(&binary).read().unwrap_err());
    assert!(err.contains("not UTF-8 text"), "{err}");
    std::fs::remove_file(&binary).unwrap();
}

#[test]
fn the_command_line_wins_over_the_file_and_is_held_to_the_same_bounds() {
    let file = temp_file(
        "overrides.toml",
        b"listen = \"127.0.0.1:1\"\n[account]\nby = \"unit\"\n",
    );
    let overrides = Overrides {
        listen: Some("9464".into()),
        cpus: Some(CpuList::single(0)),
        by: Some(WorkloadBy::Container),
        no_bh: true,
        no_account: false,
        log_level: Some(LogLevel::Warn),
    };
    let resolved = resolve(&named(&file), &overrides).unwrap();
    assert_eq!(resolved.listen, "127.0.0.1:9464".parse().unwrap());
    assert_eq!(resolved.cpus, CpuList::single(0));
    assert_eq!(resolved.config.account.by, WorkloadBy::Container);
    assert!(!resolved.config.bh.enabled && resolved.config.account.enabled);
    assert_eq!(resolved.config.log_level, LogLevel::Warn);
    // an address the file gives is named as the file's key, the command line's as its option
    let err = resolve(
        &named(&file),
        &Overrides {
            listen: Some("x".into()),
            ..Overrides::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("--listen 'x': "), "{err}");
    std::fs::write(&file, "listen = \"localhost:80\"\n").unwrap();
    let err = resolve(&named(&file), &Overrides::default()).unwrap_err();
    assert!(
        err.to_string().starts_with("listen 'localhost:80': "),
        "{err}"
    );
    let beyond = Overrides {
        cpus: Some("8191".parse().unwrap()),
        ..Overrides::default()
    };
    std::fs::write(&file, "").unwrap();
    let err = format!("{:#}", resolve(&named(&file), &beyond).unwrap_err());
    assert!(
        err.starts_with("cpus: CPU 8191 is offline or does not exist"),
        "{err}"
    );
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn an_active_run_measures_its_own_cpus_or_the_agents() {
    let file = temp_file(
        "active.toml",
        b"cpus = \"0\"\n[wakeup]\nenabled = true\ncpus = \"0\"\n[noise]\nenabled = true\n",
    );
    let resolved = resolve(&named(&file), &Overrides::default()).unwrap();
    assert_eq!(resolved.wakeup_cpus, CpuList::single(0));
    assert_eq!(resolved.noise_cpus, resolved.cpus);
    // CPUs this machine does not have: refused, the section named
    std::fs::write(&file, "[wakeup]\nenabled = true\ncpus = \"8191\"\n").unwrap();
    let err = format!(
        "{:#}",
        resolve(&named(&file), &Overrides::default()).unwrap_err()
    );
    assert!(err.starts_with("[wakeup] cpus: CPU 8191"), "{err}");
    std::fs::remove_file(&file).unwrap();
}

/// What the packages and manifests ship (deploy/agent.toml, which the ConfigMap and the Helm
/// chart's values are checked to equal) is a configuration the agent takes as it is.
#[test]
fn the_shipped_example_configuration_reads() {
    let example = include_str!("../../../../../../deploy/agent.toml");
    let config = parse(example).unwrap_or_else(|e| panic!("deploy/agent.toml: {e}"));
    assert_eq!(config.cpus, None, "cpus = \"all\" is every CPU");
    assert!(config.bh.enabled && config.account.enabled);
}
