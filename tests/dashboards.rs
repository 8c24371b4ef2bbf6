//! The Grafana dashboard (`deploy/grafana/battlelog.json`), the alert rules
//! (`deploy/prometheus/alerts.yml`) and the scrape config
//! (`deploy/prometheus/prometheus.yml`) parse, their PromQL parses (with a
//! PromQL parser, as Prometheus would refuse a rule that does not), and
//! every metric they name is one the services export; the dashboard shows
//! every metric family; every alert has a severity, a summary and a
//! runbook section in `deploy/README.md`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use promql_parser::parser::Expr;
use promql_parser::util::{ExprVisitor, walk_expr};
use serde_yaml_ng::Value;

use battlelog_test_support::metrics::{EXPORTED, Kind};

/// The series Prometheus itself writes for every scrape target.
const SYNTHETIC: &[&str] = &["up"];

fn deploy_file(path: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The metric family a series name belongs to (`…_bucket` of a histogram
/// is the histogram), or `None` when no exported family has that series.
fn family(series: &str) -> Option<&'static str> {
    EXPORTED.iter().find_map(|(name, kind)| {
        let matches = match kind {
            Kind::Counter | Kind::Gauge => series == *name,
            Kind::Histogram => ["_bucket", "_sum", "_count"].iter().any(|s| series == format!("{name}{s}")),
        };
        matches.then_some(*name)
    })
}

/// Collects the metric names of every selector in an expression.
#[derive(Default)]
struct Names(BTreeSet<String>);

impl ExprVisitor for Names {
    type Error = String;

    fn pre_visit(&mut self, expr: &Expr) -> Result<bool, String> {
        let selector = match expr {
            Expr::VectorSelector(vs) => Some(vs),
            Expr::MatrixSelector(ms) => Some(&ms.vs),
            _ => None,
        };
        if let Some(vs) = selector {
            let name = vs.name.clone().ok_or_else(|| format!("a selector without a metric name: {vs}"))?;
            self.0.insert(name);
        }
        Ok(true)
    }
}

/// The metric names in `promql`, which must parse. Grafana's variables are
/// replaced by what they stand for first (`$__rate_interval` is a duration;
/// `$job` sits inside a label matcher's quotes).
fn metric_names(what: &str, promql: &str) -> BTreeSet<String> {
    let promql = promql.replace("$__rate_interval", "5m");
    let expr = promql_parser::parser::parse(&promql)
        .unwrap_or_else(|e| panic!("{what}: PromQL does not parse: {e}\n{promql}"));
    let mut names = Names::default();
    walk_expr(&mut names, &expr).unwrap_or_else(|e| panic!("{what}: {e}"));
    names.0
}

/// Every name must be an exported series (or Prometheus's own `up`);
/// returns the families they belong to.
fn check_exported(what: &str, names: &BTreeSet<String>) -> BTreeSet<&'static str> {
    let mut families = BTreeSet::new();
    for name in names {
        if SYNTHETIC.contains(&name.as_str()) {
            continue;
        }
        let family = family(name).unwrap_or_else(|| panic!("{what}: `{name}` is not a metric the services export"));
        families.insert(family);
    }
    families
}

#[test]
fn the_dashboard_shows_every_exported_metric_and_only_those() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&deploy_file("grafana/battlelog.json")).expect("battlelog.json is JSON");
    assert_eq!(dashboard["uid"], "battlelog", "a stable uid, so that re-importing replaces it");
    let mut shown = BTreeSet::new();
    let mut panels = 0;
    for panel in dashboard["panels"].as_array().expect("panels") {
        if panel["type"] == "row" {
            continue;
        }
        panels += 1;
        let title = panel["title"].as_str().expect("a panel title");
        let targets = panel["targets"].as_array().unwrap_or_else(|| panic!("panel {title}: targets"));
        assert!(!targets.is_empty(), "panel {title} queries something");
        for target in targets {
            let expr = target["expr"].as_str().unwrap_or_else(|| panic!("panel {title}: a PromQL expr"));
            let what = format!("dashboard panel {title:?}");
            shown.extend(check_exported(&what, &metric_names(&what, expr)));
        }
    }
    for variable in dashboard["templating"]["list"].as_array().expect("templating") {
        let Some(query) = variable["query"].as_str().and_then(|q| q.strip_prefix("label_values(")) else { continue };
        let selector = query.rsplit_once(',').map(|(s, _)| s).expect("label_values(<selector>, <label>)");
        check_exported("dashboard variable", &metric_names("dashboard variable", selector));
    }
    assert!(panels >= 20, "the dashboard has its panels ({panels})");
    let missing: Vec<&str> = EXPORTED.iter().map(|(n, _)| *n).filter(|n| !shown.contains(n)).collect();
    assert!(missing.is_empty(), "exported metrics no panel shows: {missing:?}");
}

#[test]
fn every_alert_names_exported_metrics_and_has_a_runbook_section() {
    let rules: Value = serde_yaml_ng::from_str(&deploy_file("prometheus/alerts.yml")).expect("alerts.yml is YAML");
    let runbook = deploy_file("README.md");
    let scrape: Value = serde_yaml_ng::from_str(&deploy_file("prometheus/prometheus.yml")).expect("prometheus.yml");
    let jobs: Vec<&str> = scrape["scrape_configs"]
        .as_sequence()
        .expect("scrape_configs")
        .iter()
        .map(|c| c["job_name"].as_str().expect("job_name"))
        .collect();
    let loaded: Vec<&str> =
        scrape["rule_files"].as_sequence().expect("rule_files").iter().filter_map(Value::as_str).collect();
    assert_eq!(loaded, ["alerts.yml"], "prometheus.yml loads the alert rules");
    let mut alerts = Vec::new();
    for group in rules["groups"].as_sequence().expect("groups") {
        for rule in group["rules"].as_sequence().expect("rules") {
            let name = rule["alert"].as_str().expect("every rule is an alert with a name");
            let expr = rule["expr"].as_str().unwrap_or_else(|| panic!("{name}: expr"));
            let what = format!("alert {name}");
            let names = metric_names(&what, expr);
            assert!(!names.is_empty(), "{what} watches a metric");
            check_exported(&what, &names);
            // `up{job="…"}` must name a job prometheus.yml scrapes.
            for job in expr.split("job=\"").skip(1).filter_map(|rest| rest.split('"').next()) {
                assert!(jobs.contains(&job), "{what}: job {job:?} is not in prometheus.yml ({jobs:?})");
            }
            let severity = rule["labels"]["severity"].as_str().unwrap_or_else(|| panic!("{what}: a severity"));
            assert!(["critical", "warning", "info"].contains(&severity), "{what}: severity {severity}");
            assert!(rule["annotations"]["summary"].as_str().is_some(), "{what}: a summary");
            let anchor = format!("deploy/README.md#{}", name.to_ascii_lowercase());
            assert_eq!(rule["annotations"]["runbook"].as_str(), Some(anchor.as_str()), "{what}: its runbook link");
            assert!(
                runbook.lines().any(|l| l.trim() == format!("### {name}")),
                "{what}: deploy/README.md has no section `### {name}` saying what it means and what to do"
            );
            assert!(!alerts.contains(&name), "{what} is defined twice");
            alerts.push(name);
        }
    }
    for required in [
        "BattlelogJournalDown",
        "BattlelogJournalFlushSlow",
        "BattlelogJournalOutboxLagGrowing",
        "BattlelogGrpcErrorRateHigh",
    ] {
        assert!(alerts.contains(&required), "alerts.yml has {required}");
    }
}

/// Prometheus scrapes each service's metrics port (issue 22's port numbers),
/// and the webhooks' admin port with a bearer token.
#[test]
fn the_scrape_config_reaches_each_service_metrics_port() {
    let scrape: Value = serde_yaml_ng::from_str(&deploy_file("prometheus/prometheus.yml")).expect("prometheus.yml");
    let expected = [
        ("battlelog-journal", "journal:9103"),
        ("battlelog-roller", "roller:9102"),
        ("battlelog-resolver", "resolver:9101"),
        ("battlelog-web", "web:9104"),
        ("battlelog-webhooks", "webhooks:9105"),
    ];
    let configs = scrape["scrape_configs"].as_sequence().expect("scrape_configs");
    assert_eq!(configs.len(), expected.len(), "one job per service");
    for (job, target) in expected {
        let config = configs.iter().find(|c| c["job_name"].as_str() == Some(job)).unwrap_or_else(|| panic!("{job}"));
        let targets: Vec<&str> = config["static_configs"][0]["targets"]
            .as_sequence()
            .expect("targets")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(targets, [target], "{job}");
        // The metrics ports want no token: no scrape carries one (a
        // `service` token would also admit webhooks' replays).
        assert!(config["authorization"].is_null(), "{job}: scraped without credentials");
    }
}
