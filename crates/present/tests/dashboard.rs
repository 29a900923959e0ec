//! dashboards/irqlens.json, the Grafana dashboard the README offers: every query names
//! metrics irqlens serves (as `prometheus::metric_names` lists them), quantiles come from
//! bucket series, and every panel asks the datasource the import names.

use std::collections::BTreeSet;

use irqlens_present::prometheus::metric_names;
use serde_json::Value;

fn dashboard() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../dashboards/irqlens.json");
    let text = std::fs::read_to_string(path).expect("dashboards/irqlens.json");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every string under `key` anywhere in `value`.
fn strings_under<'a>(value: &'a Value, key: &str, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match v {
                    Value::String(s) if k == key => found.push(s),
                    _ => strings_under(v, key, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| strings_under(v, key, found)),
        _ => {}
    }
}

/// The metric names in a PromQL expression: the identifiers that begin with `irqlens_`
/// (functions, label names and values, `$__rate_interval` never do).
fn metrics_in(expr: &str) -> Vec<&str> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("irqlens_") {
        let preceded = rest[..at].chars().next_back().is_some_and(is_name);
        let end = rest[at..]
            .find(|c| !is_name(c))
            .map_or(rest.len(), |n| at + n);
        if !preceded {
            names.push(&rest[at..end]);
        }
        rest = &rest[end..];
    }
    names
}

#[test]
fn metric_names_are_found_in_promql() {
    assert_eq!(
        metrics_in(
            "histogram_quantile(0.9, sum by (le) (rate(irqlens_a_bucket{x=\"irqlens_b\"}[5m]))) / not_irqlens_c"
        ),
        ["irqlens_a_bucket", "irqlens_b"]
    );
    assert!(metrics_in("rate(up[5m])").is_empty());
}

#[test]
fn every_query_names_metrics_irqlens_serves() {
    let served = metric_names();
    let all: BTreeSet<&String> = served.values().flatten().collect();
    let dashboard = dashboard();
    let mut exprs = Vec::new();
    strings_under(&dashboard, "expr", &mut exprs);
    // the variables' queries too
    strings_under(&dashboard["templating"], "definition", &mut exprs);
    assert!(exprs.len() >= 10, "{} queries", exprs.len());
    let mut used = BTreeSet::new();
    for expr in exprs {
        let names = metrics_in(expr);
        assert!(!names.is_empty(), "a query with no irqlens metric: {expr}");
        for name in names {
            assert!(
                all.contains(&name.to_owned()),
                "{name} (in {expr}) is not a metric irqlens serves"
            );
            used.insert(name);
        }
        if expr.contains("histogram_quantile") {
            assert!(expr.contains("_bucket") && expr.contains("le"), "{expr}");
        }
    }
    // a panel for each measuring capability (the agent's own figures, its health, are
    // listed so that queries of them are checked, and asked of no panel here)
    for (capability, names) in served.iter().filter(|(c, _)| **c != "agent") {
        assert!(
            names.iter().any(|name| used.contains(name.as_str())
                && name.starts_with(&format!("irqlens_{capability}_"))),
            "no panel for {capability}"
        );
    }
    assert!(used.contains("irqlens_build_info"));
}

#[test]
fn every_panel_asks_the_datasource_the_import_names() {
    let dashboard = dashboard();
    let inputs = dashboard["__inputs"].as_array().expect("__inputs");
    assert!(
        inputs
            .iter()
            .any(|input| input["name"] == "DS_PROMETHEUS" && input["pluginId"] == "prometheus")
    );
    let mut uids = Vec::new();
    strings_under(&dashboard, "uid", &mut uids);
    let datasources: Vec<_> = uids.iter().filter(|uid| **uid != "irqlens").collect();
    assert!(!datasources.is_empty());
    for uid in datasources {
        assert_eq!(*uid, "${DS_PROMETHEUS}");
    }
}

/// PromQL's aggregation operators.
const AGGREGATIONS: [&str; 12] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
];

/// Each aggregation in a PromQL expression: its operator, its `by` labels (`None`
/// without a `by` before its arguments), and the text of its arguments on.
fn aggregations(expr: &str) -> Vec<(&str, Option<Vec<&str>>, &str)> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut at = 0;
    while at < expr.len() {
        let rest = &expr[at..];
        let word_len = rest.find(|c| !is_name(c)).unwrap_or(rest.len());
        let preceded = expr[..at].chars().next_back().is_some_and(is_name);
        if word_len == 0 || preceded {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let word = &rest[..word_len];
        let after = rest[word_len..].trim_start();
        if AGGREGATIONS.contains(&word) {
            let (by, arguments) = match after.strip_prefix("by") {
                Some(grouping) => {
                    let grouping = grouping.trim_start().strip_prefix('(').unwrap();
                    let (labels, arguments) = grouping.split_once(')').unwrap();
                    (Some(labels.split(',').map(str::trim).collect()), arguments)
                }
                None => (None, after),
            };
            if arguments.trim_start().starts_with('(') {
                found.push((word, by, arguments.trim_start()));
            }
        }
        at += word_len;
    }
    found
}

#[test]
fn aggregations_are_found_with_their_labels() {
    let found = aggregations(
        "topk(5, max by (instance) (histogram_quantile(0.99, sum by (instance, le) (rate(x_sum[5m])))))",
    );
    let operators: Vec<_> = found.iter().map(|(op, by, _)| (*op, by.clone())).collect();
    assert_eq!(
        operators,
        [
            ("topk", None),
            ("max", Some(vec!["instance"])),
            ("sum", Some(vec!["instance", "le"])),
        ]
    );
    // a label or metric named like an operator is not one
    assert!(aggregations("rate(x{sum=\"1\"}[5m]) / count_of_things").is_empty());
}

/// Whether an aggregation keeps the hosts apart: it groups by `instance`, or it is the
/// fleet's top (or bottom) k of a figure per host (`topk(5, max by (instance) (...))`).
fn keeps_hosts_apart(operator: &str, by: &Option<Vec<&str>>, arguments: &str) -> bool {
    match by {
        Some(labels) => labels.contains(&"instance"),
        None if operator == "topk" || operator == "bottomk" => {
            // what it ranks, after `(k,`
            let ranked = arguments[1..]
                .split_once(',')
                .map_or("", |(_, r)| r.trim_start());
            aggregations(ranked).first().is_some_and(|(inner, by, _)| {
                ranked.starts_with(inner) && by.as_deref() == Some(&["instance"][..])
            })
        }
        None => false,
    }
}

#[test]
fn every_panel_keeps_the_hosts_apart() {
    let dashboard = dashboard();
    let mut exprs = Vec::new();
    strings_under(&dashboard["panels"], "expr", &mut exprs);
    let mut fleet_tops = BTreeSet::new();
    for expr in &exprs {
        for (operator, by, arguments) in aggregations(expr) {
            assert!(
                keeps_hosts_apart(operator, &by, arguments),
                "`{operator}` merges the hosts (group by instance, or rank hosts with topk(k, max by (instance) (...))): {expr}"
            );
            if by.is_none() {
                fleet_tops.insert(*expr);
            }
        }
        if expr.contains("histogram_quantile") {
            assert!(
                expr.contains("histogram_quantile(") && expr.contains("by (instance, le"),
                "a quantile of the buckets of one host: {expr}"
            );
        }
        // every selector follows the dashboard's host variable
        for name in metrics_in(expr) {
            let selector = format!("{name}{{instance=~\"$instance\"");
            assert_eq!(
                expr.matches(&selector).count(),
                expr.matches(name).count(),
                "{name} without the instance variable: {expr}"
            );
        }
    }
    // the fleet row ranks hosts by noise, by interrupt time (the agent's default: its
    // noise runs are off) and by latency tails
    for figure in [
        "irqlens_noise_seconds_total",
        "irqlens_account_interrupt_seconds_total",
        "irqlens_bh_latency_seconds_bucket",
        "irqlens_wakeup_latency_seconds_bucket",
    ] {
        assert!(
            fleet_tops.iter().any(|expr| expr.contains(figure)),
            "no worst hosts by {figure}"
        );
    }
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    assert!(variables.iter().any(|v| v["name"] == "instance"));
    // a series of several hosts is named by its host
    let mut legends = Vec::new();
    strings_under(&dashboard["panels"], "legendFormat", &mut legends);
    for legend in legends {
        assert!(legend.contains("{{instance}}"), "legend {legend}");
    }
}

#[test]
fn every_fleet_panel_drills_into_the_host_clicked() {
    let dashboard = dashboard();
    let uid = dashboard["uid"].as_str().unwrap();
    let drill = format!("/d/{uid}/");
    let mut fleet_panels = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        let mut exprs = Vec::new();
        strings_under(&panel["targets"], "expr", &mut exprs);
        let ranks_hosts = exprs.iter().any(|expr| {
            aggregations(expr)
                .iter()
                .any(|(operator, by, _)| *operator == "topk" && by.is_none())
        });
        if !ranks_hosts {
            continue;
        }
        fleet_panels += 1;
        let mut urls = Vec::new();
        strings_under(&panel["fieldConfig"], "url", &mut urls);
        assert!(
            urls.iter().any(|url| url.starts_with(&drill)
                && url.contains("var-instance=${__field.labels.instance}")
                && url.contains("${__url_time_range}")),
            "{}: no link to this dashboard for the host clicked ({urls:?})",
            panel["title"]
        );
    }
    assert!(fleet_panels >= 4, "{fleet_panels} fleet panels");
}

#[test]
fn the_host_check_refuses_what_merges_hosts() {
    let merges = [
        "sum by (class) (rate(irqlens_x{instance=~\"$instance\"}[5m]))",
        "sum(rate(irqlens_x{instance=~\"$instance\"}[5m]))",
        "histogram_quantile(0.99, sum by (le, cpu) (rate(irqlens_x_bucket[5m])))",
        "topk(10, sum by (instance, class) (rate(irqlens_x[5m])))",
        "topk(5, max by (cpu) (rate(irqlens_x[5m])))",
    ];
    for expr in merges {
        let found = aggregations(expr);
        assert!(
            found
                .iter()
                .any(|(op, by, args)| !keeps_hosts_apart(op, by, args)),
            "{expr}"
        );
    }
    let fleet = "topk(5, max by (instance) (rate(irqlens_x[5m])))";
    assert!(
        aggregations(fleet)
            .iter()
            .all(|(op, by, args)| keeps_hosts_apart(op, by, args))
    );
}
