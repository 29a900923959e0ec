use super::*;

/// A configuration from JSON (the file is TOML: the binary's tests read that; the keys,
/// their defaults and bounds are the same through any serde format).
fn from_json(json: &str) -> Result<AgentConfig, String> {
    let config: AgentConfig = serde_json::from_str(json).map_err(|e| e.to_string())?;
    config.check()?;
    Ok(config)
}

#[test]
fn an_empty_file_is_the_defaults_passive_on_active_off() {
    let config = from_json("{}").unwrap();
    assert_eq!(config, AgentConfig::default());
    assert_eq!(config.listen, "0.0.0.0:9464");
    assert_eq!(config.cpus, None);
    assert!(config.noise_passive.enabled && config.bh.enabled && config.account.enabled);
    assert!(!config.noise.enabled && !config.wakeup.enabled);
    assert_eq!(config.account.by, WorkloadBy::Pod);
    // following every socket read is what the hackbench bound cannot afford
    assert!(!config.account.sockets);
    assert!(
        from_json(r#"{"account": {"sockets": true}}"#)
            .unwrap()
            .account
            .sockets
    );
    assert_eq!(config.log_level, LogLevel::Info);
    config.check().unwrap();
}

#[test]
fn unknown_keys_are_refused_at_every_level() {
    for json in [
        r#"{"listne": "9464"}"#,
        r#"{"bh": {"enabled": true, "rate": 5}}"#,
        r#"{"account": {"by": "pod", "top": 5}}"#,
        r#"{"noise": {"evry": 60}}"#,
    ] {
        let err = from_json(json).unwrap_err();
        assert!(err.contains("unknown field"), "{json}: {err}");
    }
}

#[test]
fn durations_take_seconds_or_a_unit() {
    for (text, seconds) in [
        ("45", 45),
        ("30s", 30),
        ("10m", 600),
        ("1h", 3600),
        ("1d", 86400),
    ] {
        assert_eq!(
            parse_duration(text),
            Ok(Duration::from_secs(seconds)),
            "{text}"
        );
    }
    for bad in ["", "m", "10x", "-5s", "1.5m", "99999999999999999999"] {
        assert!(parse_duration(bad).is_err(), "{bad}");
    }
    assert!(
        parse_duration("999999999999999999d")
            .unwrap_err()
            .contains("too large")
    );
    let config = from_json(r#"{"noise": {"every": "2m", "duration": 30}}"#).unwrap();
    assert_eq!(
        (config.noise.every, config.noise.duration),
        (Duration::from_secs(120), Duration::from_secs(30))
    );
}

#[test]
fn every_bound_is_refused_naming_its_key() {
    for (json, key) in [
        (r#"{"listen": ""}"#, "listen"),
        (&format!(r#"{{"listen": "{}"}}"#, "9".repeat(200)), "listen"),
        (r#"{"cpus": "9000"}"#, "CPU 9000"),
        (r#"{"cpus": "3-1"}"#, "runs backwards"),
        (r#"{"cpus": true}"#, "CPU list"),
        (r#"{"noise": {"every": 59}}"#, "[noise] every"),
        (r#"{"noise": {"every": "2d"}}"#, "[noise] every"),
        (r#"{"wakeup": {"duration": 0}}"#, "[wakeup] duration"),
        (
            r#"{"wakeup": {"duration": "11m", "every": "1h"}}"#,
            "[wakeup] duration",
        ),
        (
            r#"{"wakeup": {"duration": "5m", "every": "9m"}}"#,
            "half of every",
        ),
        (r#"{"wakeup": {"every": -1}}"#, "expected a duration"),
        (r#"{"noise": {"cpus": "8192"}}"#, "beyond"),
        (r#"{"account": {"by": "namespace"}}"#, "unknown variant"),
        (r#"{"log_level": "loud"}"#, "unknown variant"),
        (r#"{"bh": {"enabled": "yes"}}"#, "expected a boolean"),
        (r#"{"bh": true}"#, "expected struct PassiveConfig"),
    ] {
        let err = from_json(json).unwrap_err();
        assert!(err.contains(key), "{json}: expected '{key}' in: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // the bounds themselves are allowed
    from_json(r#"{"noise": {"enabled": true, "every": 60, "duration": 30, "cpus": "1"}}"#).unwrap();
    from_json(r#"{"wakeup": {"every": "1d", "duration": "10m", "cpus": "0-8191"}}"#).unwrap();
}

#[test]
fn a_huge_number_is_refused_not_wrapped() {
    let err = from_json(r#"{"noise": {"every": 18446744073709551615}}"#).unwrap_err();
    assert!(err.contains("[noise] every"), "{err}");
    let err = from_json(r#"{"noise": {"every": 1e400}}"#).unwrap_err();
    assert!(err.contains("expected a duration"), "{err}");
}

#[test]
fn log_levels_parse_as_rust_log_names_them() {
    for (text, level) in [
        ("info", LogLevel::Info),
        ("WARN", LogLevel::Warn),
        ("off", LogLevel::Off),
    ] {
        assert_eq!(text.parse::<LogLevel>(), Ok(level));
    }
    assert!(
        "verbose"
            .parse::<LogLevel>()
            .unwrap_err()
            .contains("not a log level")
    );
    assert_eq!(LogLevel::Debug.to_string(), "debug");
}

#[test]
fn a_reload_restarts_only_what_changed() {
    let old = AgentConfig::default();
    assert!(old.changes(&old).is_empty());
    let mut new = old.clone();
    new.bh.enabled = false;
    assert_eq!(old.changes(&new).restart, ["bh"]);
    let mut new = old.clone();
    new.account.by = WorkloadBy::Unit;
    assert_eq!(old.changes(&new).restart, ["account"]);
    // noise's runs label their workloads as account does
    let (mut old_noise, mut new_noise) = (old.clone(), new.clone());
    old_noise.noise.enabled = true;
    new_noise.noise.enabled = true;
    assert_eq!(old_noise.changes(&new_noise).restart, ["account", "noise"]);
    // following the sockets is account's alone
    let mut new_noise = old_noise.clone();
    new_noise.account.sockets = true;
    assert_eq!(old_noise.changes(&new_noise).restart, ["account"]);
    // the CPUs are every passive capability's, and an active run's without its own
    let mut new = old.clone();
    new.cpus = Some(CpuList::single(1));
    new.noise.cpus = Some(CpuList::single(0));
    new.wakeup.cpus = None;
    let mut old_with_noise_cpus = old.clone();
    old_with_noise_cpus.noise.cpus = Some(CpuList::single(0));
    assert_eq!(
        old_with_noise_cpus.changes(&new).restart,
        ["noise_passive", "bh", "account", "wakeup"]
    );
    let mut new = old.clone();
    new.noise_passive.enabled = false;
    assert_eq!(old.changes(&new).restart, ["noise_passive"]);
    let mut new = old.clone();
    new.noise.enabled = true;
    assert_eq!(old.changes(&new).restart, ["noise"]);
    // the endpoint stays up: a new address waits for a restart
    let mut new = old.clone();
    new.listen = "127.0.0.1:9999".into();
    let changes = old.changes(&new);
    assert!(changes.restart.is_empty());
    assert_eq!(changes.at_restart, ["listen"]);
    let mut new = old.clone();
    new.log_level = LogLevel::Debug;
    let changes = old.changes(&new);
    assert!(changes.log_level && changes.restart.is_empty());
}

#[test]
fn cpus_all_is_every_cpu_as_the_default() {
    let config = from_json(r#"{"cpus": "all", "noise": {"cpus": " all "}}"#).unwrap();
    assert_eq!(config.cpus, None);
    assert_eq!(config.noise.cpus, None);
    assert!(from_json(r#"{"cpus": "al"}"#).is_err());
}
