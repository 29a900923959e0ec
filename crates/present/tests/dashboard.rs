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
    // a panel for each capability
    for (capability, names) in &served {
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
