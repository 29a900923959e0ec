//! deploy/, checked offline as CI can: the Kubernetes manifests as kustomize builds them
//! against the Kubernetes API's schemas (kubernetes-validate, strict, one pinned
//! release), the Helm chart by
//! `helm lint` and its rendering by the same schemas and against the manifests, the
//! systemd unit by `systemd-analyze verify` and `security`, and all of them against the
//! agent's contract: its binary, config file, port, capabilities and run directory. No
//! root needed. The tools come from scripts/setup: a missing one fails the test, saying so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use irqlens_test_support::python::run_script;
use serde_json::{Value, json};

use crate::common::{TempFile, temp_path};

/// The Kubernetes release whose API schemas the manifests must pass.
const KUBERNETES: &str = "1.33.0";

// The agent's contract, as the other files of the agent keep it.
const BINARY: &str = "/usr/bin/irqlens";
const CONFIG_FILE: &str = "/etc/irqlens/agent.toml";
const LISTEN: &str = "0.0.0.0:9464";
const PORT: u64 = 9464;
const RUN_DIRECTORY: &str = "/run/irqlens";
/// What the agent needs instead of root (Kubernetes's names; systemd's add `CAP_`).
const CAPABILITIES: [&str; 5] = [
    "BPF",
    "PERFMON",
    "SYS_RESOURCE",
    "DAC_READ_SEARCH",
    "SYSLOG",
];
/// The most `systemd-analyze security` may rate the unit's exposure, in tenths (3.0, "OK").
const EXPOSURE_AT_MOST: u32 = 30;
/// The host paths the agent reads: the kernel's BTF, tracefs, debugfs, the cgroups.
const HOST_PATHS_READ: [&str; 4] = [
    "/sys/kernel/btf",
    "/sys/kernel/tracing",
    "/sys/kernel/debug",
    "/sys/fs/cgroup",
];

/// A path under the repository's deploy/.
fn deploy(relative: &str) -> PathBuf {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    deploy.canonicalize().unwrap().join(relative)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Fails the test unless `tool` is on the PATH.
fn require(tool: &str) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|dir| dir.join(tool).is_file());
    assert!(found, "{tool} is missing: scripts/setup installs it");
}

/// Runs `tool` (which must be installed) with `args`.
fn run(tool: &str, args: &[&str]) -> Output {
    require(tool);
    Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// What a run printed, stdout then stderr.
fn said(output: &Output) -> String {
    [&output.stdout, &output.stderr]
        .map(|bytes| String::from_utf8_lossy(bytes).trim().to_owned())
        .join("\n")
        .trim()
        .to_owned()
}

/// Runs `tool`, failing the test with what it said unless it succeeds; what it said.
fn run_ok(tool: &str, args: &[&str]) -> String {
    checked(tool, args, run(tool, args))
}

/// What a run of `tool` said, failing the test unless it succeeded.
fn checked(tool: &str, args: &[&str], output: Output) -> String {
    let said = said(&output);
    assert!(
        output.status.success(),
        "{tool} {}: {}\n{said}",
        args.join(" "),
        output.status
    );
    said
}

/// The objects of a YAML stream as PyYAML reads them (empty documents left out), with
/// each ConfigMap's TOML files as tomllib reads them: one Python run.
fn objects_of(stream: &str) -> Vec<Value> {
    let script = r#"
import sys, json, tomllib, yaml
objects = [o for o in yaml.safe_load_all(sys.stdin) if o is not None]
for o in objects:
    if o.get("kind") == "ConfigMap":
        for name, text in o.get("data", {}).items():
            if name.endswith(".toml"):
                o["data"][name] = tomllib.loads(text)
print(json.dumps(objects))
"#;
    let json = run_script(script, &[], stream.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_slice(&json).unwrap()
}

/// A TOML document, as Python's tomllib reads it.
fn toml(text: &str) -> Value {
    let script = "import sys, json, tomllib\nprint(json.dumps(tomllib.loads(sys.stdin.read())))";
    let json = run_script(script, &[], text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_slice(&json).unwrap()
}

/// The files deploy/kubernetes/kustomization.yaml applies, in its order.
fn kustomized_files() -> Vec<PathBuf> {
    let kustomization = &objects_of(&read(&deploy("kubernetes/kustomization.yaml")))[0];
    kustomization["resources"]
        .as_array()
        .expect("kustomization.yaml lists its resources")
        .iter()
        .map(|file| deploy(&format!("kubernetes/{}", file.as_str().unwrap())))
        .collect()
}

/// What `kubectl apply -k deploy/kubernetes` applies: kustomize's build of it.
fn kustomize_build() -> String {
    run_ok(
        "kustomize",
        &["build", deploy("kubernetes").to_str().unwrap()],
    )
}

/// The objects deploy/kubernetes applies.
fn kustomized_objects() -> Vec<Value> {
    objects_of(&kustomize_build())
}

/// The objects the Helm chart renders as release `irqlens` in namespace `irqlens`, with
/// the ServiceMonitor, and `sets` (`--set` values) on top.
fn helm_template(sets: &[&str]) -> String {
    let chart = deploy("helm/irqlens");
    let mut args = vec![
        "template",
        "irqlens",
        chart.to_str().unwrap(),
        "--namespace",
        "irqlens",
        "--set",
        "serviceMonitor.enabled=true",
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    run_ok("helm", &args)
}

/// The object of `kind` among `objects`.
fn object<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    let mut found = objects.iter().filter(|o| o["kind"] == kind);
    let first = found.next().unwrap_or_else(|| panic!("no {kind}"));
    assert!(found.next().is_none(), "several {kind}s");
    first
}

/// The documents of a YAML stream as text (split at its `---` lines), those of nothing
/// but comments and blank lines left out.
fn documents(stream: &str) -> Vec<String> {
    let mut documents = vec![String::new()];
    for line in stream.lines() {
        if line == "---" {
            documents.push(String::new());
        } else {
            let current = documents.last_mut().unwrap();
            current.push_str(line);
            current.push('\n');
        }
    }
    documents.retain(|d| {
        d.lines()
            .any(|line| !line.trim().is_empty() && !line.starts_with('#'))
    });
    documents
}

/// The kind the Kubernetes API's schemas do not have: the Prometheus Operator's CRD.
const CUSTOM_KIND: &str = "ServiceMonitor";

/// Whether `document` (from `origin`) is of the custom kind; says so, and why it is not
/// validated against the API's schemas.
fn is_custom(document: &str, origin: &str) -> bool {
    let custom = (document.lines()).any(|line| {
        line.strip_prefix("kind:")
            .is_some_and(|kind| kind.trim() == CUSTOM_KIND)
    });
    if custom {
        println!(
            "{origin}: {CUSTOM_KIND} not validated by kubernetes-validate: a CRD of the \
             Prometheus Operator, which the Kubernetes API's schemas do not have (checked \
             against the Service it selects instead)"
        );
    }
    custom
}

/// Runs kubernetes-validate, strict, on the YAML `files`; what it said. (As a module: pip
/// may leave its script off the PATH.)
fn kubernetes_validate(files: &[PathBuf]) -> Result<String, String> {
    let module = "kubernetes_validate";
    let installed = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .expect("python3");
    assert!(
        installed.status.success(),
        "kubernetes-validate is missing: scripts/setup installs it"
    );
    let mut args = vec!["-m", module, "--strict", "--kubernetes-version", KUBERNETES];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let output = run("python3", &args);
    let said = said(&output);
    match output.status.success() {
        true => Ok(said),
        false => Err(format!("kubernetes-validate ({}): {said}", output.status)),
    }
}

/// Runs kubernetes-validate on the documents of `stream` but the custom kind's, written
/// to the temporary file `name`.
fn kubernetes_validate_stream(stream: &str, name: &str) -> Result<String, String> {
    let kept: Vec<String> = documents(stream)
        .into_iter()
        .filter(|document| !is_custom(document, name))
        .collect();
    let file = TempFile(temp_path(name));
    std::fs::write(&file.0, kept.join("---\n")).unwrap();
    kubernetes_validate(std::slice::from_ref(&file.0))
}

/// Every way the agent's objects break its contract, one line each (none: they keep it).
fn kubernetes_problems(objects: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut expect = |ok: bool, problem: String| {
        if !ok {
            problems.push(problem);
        }
    };
    let daemonset = object(objects, "DaemonSet");
    let pod = &daemonset["spec"]["template"];
    let spec = &pod["spec"];
    let containers = spec["containers"].as_array().unwrap();
    expect(containers.len() == 1, "not one container".into());
    let agent = &containers[0];
    let command: Vec<&str> = ["command", "args"]
        .iter()
        .flat_map(|key| agent[key].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    expect(
        command == [BINARY, "agent", "--config", CONFIG_FILE],
        format!("the container runs {command:?}"),
    );
    expect(spec["hostPID"] == true, "no hostPID".into());
    let security = &agent["securityContext"];
    expect(
        security["privileged"] != true,
        "the container is privileged".into(),
    );
    expect(
        security["readOnlyRootFilesystem"] == true,
        "the root file system is writable".into(),
    );
    expect(
        security["allowPrivilegeEscalation"] == false,
        "allowPrivilegeEscalation is not false".into(),
    );
    let added: BTreeSet<&str> = (security["capabilities"]["add"].as_array())
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    expect(
        added == BTreeSet::from(CAPABILITIES),
        format!("capabilities added: {added:?}"),
    );
    expect(
        security["capabilities"]["drop"] == serde_json::json!(["ALL"]),
        "the other capabilities are not dropped".into(),
    );

    // the port, everywhere it is named
    let ports = agent["ports"].as_array().cloned().unwrap_or_default();
    let metrics_port = ports.iter().find(|p| p["name"] == "metrics");
    expect(
        metrics_port.is_some_and(|p| p["containerPort"] == PORT),
        format!("the container's metrics port is not {PORT}: {ports:?}"),
    );
    let annotations = &pod["metadata"]["annotations"];
    expect(
        annotations["prometheus.io/scrape"] == "true"
            && annotations["prometheus.io/port"] == PORT.to_string().as_str()
            && annotations["prometheus.io/path"] == "/metrics",
        format!("scrape annotations: {annotations}"),
    );
    for probe in ["livenessProbe", "readinessProbe"] {
        let get = &agent[probe]["httpGet"];
        expect(
            get["path"] == "/metrics" && get["port"] == "metrics",
            format!("{probe}: {get}"),
        );
    }
    for bound in ["requests", "limits"] {
        for resource in ["cpu", "memory"] {
            expect(
                agent["resources"][bound][resource].is_string(),
                format!("no {resource} in resources.{bound}"),
            );
        }
    }
    let tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
    expect(
        tolerations.iter().any(|t| {
            t["operator"] == "Exists" && t.get("key").is_none() && t.get("effect").is_none()
        }),
        format!("no toleration of every taint: {tolerations:?}"),
    );

    // the mounts: each a host path (or the config) at the same place
    let volumes: BTreeMap<&str, &Value> = (spec["volumes"].as_array().unwrap().iter())
        .map(|v| (v["name"].as_str().unwrap(), v))
        .collect();
    let mounts: BTreeMap<&str, &Value> = (agent["volumeMounts"].as_array().unwrap().iter())
        .map(|m| (m["mountPath"].as_str().unwrap(), m))
        .collect();
    let host_path = |mount_path: &str| {
        let mount = mounts.get(mount_path)?;
        let volume = volumes.get(mount["name"].as_str()?)?;
        Some((
            volume["hostPath"]["path"].as_str()?,
            mount["readOnly"] == true,
        ))
    };
    for path in HOST_PATHS_READ {
        expect(
            host_path(path) == Some((path, true)),
            format!("{path} is not the host's, read-only"),
        );
    }
    expect(
        host_path(RUN_DIRECTORY) == Some((RUN_DIRECTORY, false)),
        format!("{RUN_DIRECTORY} is not the host's, writable"),
    );
    let config_dir = Path::new(CONFIG_FILE).parent().unwrap().to_str().unwrap();
    let config_map = object(objects, "ConfigMap");
    let config_volume = mounts
        .get(config_dir)
        .and_then(|m| volumes.get(m["name"].as_str()?));
    expect(
        config_volume.is_some_and(|v| v["configMap"]["name"] == config_map["metadata"]["name"]),
        format!("{config_dir} is not the ConfigMap"),
    );
    let config_name = Path::new(CONFIG_FILE)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    expect(
        config_map["data"][config_name]["listen"] == LISTEN,
        format!("the ConfigMap's {config_name} does not listen on {LISTEN}"),
    );

    // the Service selects the agent's pods on the port, and the ServiceMonitor the Service
    let service = object(objects, "Service");
    let selects = |selector: &Value, labels: &Value| {
        selector
            .as_object()
            .is_some_and(|s| !s.is_empty() && s.iter().all(|(k, v)| &labels[k] == v))
    };
    expect(
        selects(&service["spec"]["selector"], &pod["metadata"]["labels"]),
        "the Service does not select the agent's pods".into(),
    );
    let service_ports = service["spec"]["ports"].as_array().unwrap();
    expect(
        service_ports
            .iter()
            .any(|p| p["name"] == "metrics" && p["port"] == PORT && p["targetPort"] == "metrics"),
        format!("the Service's ports: {service_ports:?}"),
    );
    let monitor = object(objects, CUSTOM_KIND);
    expect(
        monitor["apiVersion"] == "monitoring.coreos.com/v1",
        format!("ServiceMonitor {}", monitor["apiVersion"]),
    );
    expect(
        selects(
            &monitor["spec"]["selector"]["matchLabels"],
            &service["metadata"]["labels"],
        ),
        "the ServiceMonitor does not select the Service".into(),
    );
    let namespace = &service["metadata"]["namespace"];
    expect(
        (monitor["spec"]["namespaceSelector"]["matchNames"].as_array())
            .is_some_and(|names| names.contains(namespace)),
        format!("the ServiceMonitor does not look in {namespace}"),
    );
    let endpoints = monitor["spec"]["endpoints"].as_array().unwrap();
    expect(
        endpoints
            .iter()
            .all(|e| e["port"] == "metrics" && e["path"] == "/metrics"),
        format!("the ServiceMonitor's endpoints: {endpoints:?}"),
    );
    for object in objects.iter().filter(|o| o["kind"] != "Namespace") {
        expect(
            object["metadata"]["namespace"] == "irqlens",
            format!("{} outside the namespace irqlens", object["kind"]),
        );
    }
    problems
}

/// A systemd unit's settings: each key of each section, with its values in order.
fn unit_settings(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut settings: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
        } else if let Some((key, value)) = line.split_once('=') {
            let key = format!("{section}.{}", key.trim());
            settings
                .entry(key)
                .or_default()
                .push(value.trim().to_owned());
        }
    }
    settings
}

/// Every way the unit breaks the agent's contract or drops its hardening, one line each.
fn unit_problems(text: &str) -> Vec<String> {
    let settings = unit_settings(text);
    let value = |key: &str| settings.get(&format!("Service.{key}")).map(|v| v.join(" "));
    let mut problems = Vec::new();
    let mut expect = |key: &str, wanted: &str| {
        if value(key).as_deref() != Some(wanted) {
            problems.push(format!("{key}={:?}, not {wanted}", value(key)));
        }
    };
    // the default file, which a fresh install lacks: the agent then runs on the defaults
    expect("ExecStart", &format!("{BINARY} agent"));
    expect("ExecReload", "/bin/kill -HUP $MAINPID");
    expect("Type", "simple");
    expect("Restart", "on-failure");
    let capabilities = CAPABILITIES.map(|c| format!("CAP_{c}")).join(" ");
    expect("CapabilityBoundingSet", &capabilities);
    expect("AmbientCapabilities", &capabilities);
    expect("ReadWritePaths", RUN_DIRECTORY);
    let run_name = Path::new(RUN_DIRECTORY).strip_prefix("/run").unwrap();
    expect("RuntimeDirectory", run_name.to_str().unwrap());
    // other irqlens runs' claims and journal are there too
    expect("RuntimeDirectoryPreserve", "yes");
    for hardening in [
        "NoNewPrivileges",
        "ProtectHome",
        "PrivateTmp",
        "ProtectKernelModules",
        "ProtectControlGroups",
        "LockPersonality",
        "MemoryDenyWriteExecute",
    ] {
        expect(hardening, "yes");
    }
    expect("ProtectSystem", "strict");
    expect("SystemCallArchitectures", "native");
    // it would hide /proc/kallsyms, where the agent names kernel functions
    if value("ProtectKernelTunables").is_some() {
        problems.push("ProtectKernelTunables hides /proc/kallsyms".into());
    }
    for bound in ["MemoryMax", "CPUQuota"] {
        if value(bound).is_none() {
            problems.push(format!("no {bound}"));
        }
    }
    problems
}

#[test]
fn the_kubernetes_manifests_pass_the_api_schemas() {
    // every manifest of the directory is applied
    let files = kustomized_files();
    let mut listed: Vec<_> = files.iter().map(|f| f.file_name().unwrap()).collect();
    let mut present: Vec<_> = std::fs::read_dir(deploy("kubernetes"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .filter(|name| name.to_str().unwrap().ends_with(".yaml") && name != "kustomization.yaml")
        .collect();
    listed.sort();
    present.sort();
    assert_eq!(listed, present, "kustomization.yaml's resources");
    let built = kustomize_build();
    let said = kubernetes_validate_stream(&built, "kustomize-build.yaml");
    println!("{}", said.unwrap());
}

#[test]
fn the_kubernetes_manifests_keep_the_agent_contract() {
    let objects = kustomized_objects();
    assert_eq!(kubernetes_problems(&objects), Vec::<String>::new());
    // the ConfigMap says what deploy/agent.toml says
    let config_map = object(&objects, "ConfigMap");
    let example = toml(&read(&deploy("agent.toml")));
    assert_eq!(config_map["data"]["agent.toml"], example);
}

/// An object as the Helm chart and the manifests both have it: without Helm's own labels
/// and its config checksum (the config itself is compared as TOML, not text).
fn without_helm_marks(mut object: Value) -> Value {
    for pointer in ["/metadata/labels", "/spec/template/metadata/labels"] {
        let Some(labels) = object.pointer_mut(pointer) else {
            continue;
        };
        let labels = labels.as_object_mut().unwrap();
        labels.retain(|key, _| key.starts_with("app.kubernetes.io/"));
        for helm in ["instance", "version", "managed-by"] {
            labels.remove(&format!("app.kubernetes.io/{helm}"));
        }
    }
    if let Some(annotations) = object.pointer_mut("/spec/template/metadata/annotations") {
        annotations
            .as_object_mut()
            .unwrap()
            .remove("checksum/config");
    }
    object
}

#[test]
fn the_helm_chart_lints_and_renders_the_manifests() {
    let chart = deploy("helm/irqlens");
    let chart = chart.to_str().unwrap();
    for sets in [&[][..], &["--set", "serviceMonitor.enabled=true"]] {
        let mut args = vec!["lint", "--strict", chart];
        args.extend(sets);
        println!("{}", run_ok("helm", &args));
    }
    let rendered = helm_template(&[]);
    println!(
        "{}",
        kubernetes_validate_stream(&rendered, "helm-template.yaml").unwrap()
    );
    // the same objects as deploy/kubernetes (less its Namespace, which helm makes)
    let helm: BTreeMap<String, Value> = objects_of(&rendered)
        .into_iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_owned(),
                without_helm_marks(o),
            )
        })
        .collect();
    let manifests: BTreeMap<String, Value> = kustomized_objects()
        .into_iter()
        .filter(|o| o["kind"] != "Namespace")
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_owned(),
                without_helm_marks(o),
            )
        })
        .collect();
    assert_eq!(
        helm.keys().collect::<Vec<_>>(),
        manifests.keys().collect::<Vec<_>>()
    );
    for (kind, object) in &helm {
        assert_eq!(object, &manifests[kind], "{kind}");
    }
}

#[test]
fn the_helm_chart_serves_on_the_port_of_its_config() {
    let objects = objects_of(&helm_template(&["config.listen=127.0.0.1:9100"]));
    let daemonset = object(&objects, "DaemonSet");
    let agent = &daemonset["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(agent["ports"][0]["containerPort"], 9100);
    let service = object(&objects, "Service");
    assert_eq!(service["spec"]["ports"][0]["port"], 9100);
    let config = &object(&objects, "ConfigMap")["data"]["agent.toml"];
    assert_eq!(config["listen"], "127.0.0.1:9100");
    // a listen address with no port is refused with a line that names it
    let chart = deploy("helm/irqlens");
    let output = run(
        "helm",
        &[
            "template",
            "irqlens",
            chart.to_str().unwrap(),
            "--set",
            "config.listen=9100x",
        ],
    );
    assert!(!output.status.success());
    assert!(
        said(&output).contains("config.listen \"9100x\""),
        "{}",
        said(&output)
    );
}

/// A copy of the agent's unit whose binary is this build's irqlens, where
/// `systemd-analyze` can find it (it checks that ExecStart's program exists), as the
/// temporary unit `name` (tests run at once).
fn unit_with_this_build(name: &str) -> TempFile {
    let unit = deploy("systemd/irqlens-agent.service");
    let text = read(&unit).replace(
        &format!("ExecStart={BINARY} "),
        &format!("ExecStart={} ", env!("CARGO_BIN_EXE_irqlens")),
    );
    let copy = TempFile(temp_path(&format!("{name}.service")));
    std::fs::write(&copy.0, text).unwrap();
    copy
}

#[test]
fn the_systemd_unit_verifies_and_keeps_the_agent_contract() {
    let unit = read(&deploy("systemd/irqlens-agent.service"));
    assert_eq!(unit_problems(&unit), Vec::<String>::new());
    let copy = unit_with_this_build("unit");
    let copy = copy.0.to_str().unwrap();
    // verify runs `man` for the unit's Documentation=: this build's pages, so that the
    // check does not depend on an irqlens installed on the machine
    let man = temp_path("unit-man");
    let pages = man.join("man1");
    std::fs::create_dir_all(&pages).unwrap();
    let generate = [
        "--generate",
        "man-pages",
        "--man-dir",
        pages.to_str().unwrap(),
    ];
    crate::common::irqlens_ok(&generate);
    // it warns of what it does not know (a misspelled setting) and still succeeds:
    // silence is the pass
    require("systemd-analyze");
    let verify = ["verify", copy];
    let output = Command::new("systemd-analyze")
        .args(verify)
        .env("MANPATH", &man)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&man);
    let verified = checked("systemd-analyze", &verify, output);
    assert_eq!(verified, "", "systemd-analyze verify");
    // systemd's exposure rating of the unit's hardening (0 to 10, in tenths here): what
    // it is now, so that whatever loosens it fails
    let threshold = format!("--threshold={EXPOSURE_AT_MOST}");
    let security = run_ok(
        "systemd-analyze",
        &["security", "--offline=true", &threshold, copy],
    );
    println!("{security}");
}

/// `objects` with the value at `pointer` in the object of `kind` set to `value`.
fn changed(objects: &[Value], kind: &str, pointer: &str, value: &Value) -> Vec<Value> {
    let mut objects = objects.to_vec();
    let object = objects.iter_mut().find(|o| o["kind"] == kind).unwrap();
    *object.pointer_mut(pointer).unwrap() = value.clone();
    objects
}

#[test]
fn every_check_refuses_a_broken_copy() {
    // the API's schemas: a misspelled field, a value of the wrong type
    let daemonset = read(&deploy("kubernetes/daemonset.yaml"));
    let copies: Vec<TempFile> = [
        ("hostPID: true", "hostPid: true"),
        ("containerPort: 9464", "containerPort: \"9464\""),
    ]
    .iter()
    .enumerate()
    .map(|(n, (good, broken))| {
        assert!(daemonset.contains(good), "{good}");
        let copy = TempFile(temp_path(&format!("broken-daemonset-{n}.yaml")));
        std::fs::write(&copy.0, daemonset.replace(good, broken)).unwrap();
        copy
    })
    .collect();
    let paths: Vec<PathBuf> = copies.iter().map(|copy| copy.0.clone()).collect();
    let refused = kubernetes_validate(&paths).unwrap_err();
    for path in &paths {
        let name = path.to_str().unwrap();
        assert!(
            refused.contains(&format!("ERROR {name} did not validate")),
            "{name} passed: {refused}"
        );
    }

    // the contract
    let objects = kustomized_objects();
    let pod = "/spec/template/spec";
    let agent = format!("{pod}/containers/0");
    let breaks = [
        (
            "DaemonSet",
            format!("{agent}/ports/0/containerPort"),
            json!(9465),
        ),
        (
            "DaemonSet",
            format!("{agent}/securityContext/capabilities/add"),
            json!([
                "BPF",
                "PERFMON",
                "SYS_RESOURCE",
                "DAC_READ_SEARCH",
                "SYSLOG",
                "SYS_ADMIN"
            ]),
        ),
        (
            "DaemonSet",
            format!("{agent}/securityContext/privileged"),
            json!(true),
        ),
        (
            "DaemonSet",
            format!("{agent}/volumeMounts/1/readOnly"),
            json!(false),
        ),
        (
            "DaemonSet",
            format!("{agent}/args/2"),
            json!("/etc/irqlens.toml"),
        ),
        ("DaemonSet", format!("{pod}/hostPID"), json!(false)),
        (
            "ConfigMap",
            "/data/agent.toml/listen".into(),
            json!("0.0.0.0:9465"),
        ),
        ("Service", "/spec/ports/0/targetPort".into(), json!("http")),
        (
            "ServiceMonitor",
            "/spec/endpoints/0/port".into(),
            json!("http"),
        ),
    ];
    for (kind, pointer, value) in &breaks {
        let problems = kubernetes_problems(&changed(&objects, kind, pointer, value));
        assert!(!problems.is_empty(), "{kind} {pointer} = {value} passed");
    }

    // the unit
    let unit = read(&deploy("systemd/irqlens-agent.service"));
    for (good, broken) in [
        ("CAP_SYSLOG\n", "CAP_SYSLOG CAP_SYS_ADMIN\n"),
        (
            "ExecStart=/usr/bin/irqlens agent",
            "ExecStart=/usr/bin/irqlens noise",
        ),
        (
            "RuntimeDirectoryPreserve=yes",
            "RuntimeDirectoryPreserve=no",
        ),
        (
            "ProtectSystem=strict",
            "ProtectSystem=strict\nProtectKernelTunables=yes",
        ),
        ("MemoryMax=512M\n", ""),
    ] {
        assert!(unit.contains(good), "{good}");
        let problems = unit_problems(&unit.replace(good, broken));
        assert!(!problems.is_empty(), "{broken:?} passed");
    }
    // systemd-analyze has something to say of a misspelled setting and of a bad value
    let copy = unit_with_this_build("broken-unit");
    let text = read(&copy.0);
    for (good, broken) in [
        ("ProtectHome=yes", "ProtectHomes=yes"),
        ("ProtectSystem=strict", "ProtectSystem=strcit"),
    ] {
        std::fs::write(&copy.0, text.replace(good, broken)).unwrap();
        let output = run("systemd-analyze", &["verify", copy.0.to_str().unwrap()]);
        assert_ne!(said(&output), "", "systemd-analyze verify passed {broken}");
    }
}
