//! The metrics of a conformance run, the verdict rules, and the files: `runs.csv` (a row per
//! run and metric), `conformance.csv` (a row per cell and metric) and `index.html`.
//!
//! "Reference" is the simulator the matrix compares ours with (ns-2.35 or ns-3.37); its columns
//! carry its name (`reference_mean`, `ns3_mean`).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use tfrc_analysis::metrics::{confidence_interval_95, mean, welch_difference_95};
use tfrc_output::{FlowKind, FlowSummary, Summary};

use super::matrix::Reference;

/// How a metric is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Agrees when |ours − ns-2| ≤ max(5 % of ns-2's mean, the 95 % CI half-width of the
    /// difference).
    FivePercentOrCi,
    /// Agrees when |ours − ns-2| ≤ 20 % of ns-2's mean, plus [`NS2_P_RESOLUTION`].
    TwentyPercent,
    /// Agrees when |ours − reference| ≤ max(10 % of the reference's mean, the 95 % CI
    /// half-width of the difference): throughput against ns-3, an independent implementation
    /// of the same algorithms rather than a translation of the same agents.
    TenPercentOrCi,
    /// Agrees when |ours − reference| ≤ max([`JAIN_TOLERANCE`], the 95 % CI half-width).
    JainOrCi,
    /// Reported only.
    Reported,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::FivePercentOrCi => "max(5%, CI)",
            Rule::TwentyPercent => "20% + 0.000005",
            Rule::TenPercentOrCi => "max(10%, CI)",
            Rule::JainOrCi => "max(0.05, CI)",
            Rule::Reported => "reported",
        }
    }
}

/// Half the last digit of the p that ns-2's TFRC sink prints (`%7.5f`, docs/ns2.md): a
/// p below it prints as 0 (a 100 Mb/s flow's first loss gives p ≈ 3e-6), so ns-2's p is
/// known to ±0.000005 and differences within that are not differences.
pub const NS2_P_RESOLUTION: f64 = 0.000_005;

/// The largest difference of Jain's index that agrees without a wider interval.
pub const JAIN_TOLERANCE: f64 = 0.05;

/// The papers' metrics (an ns-2 matrix: TFRC against TCP), in column order, with their rules.
pub const PAPER_METRICS: [(&str, Rule); 9] = [
    ("tfrc_throughput_bps", Rule::FivePercentOrCi),
    ("tcp_throughput_bps", Rule::FivePercentOrCi),
    ("ratio", Rule::FivePercentOrCi),
    ("p", Rule::TwentyPercent),
    ("tfrc_cov_100ms", Rule::Reported),
    ("tcp_rtt_s", Rule::Reported),
    ("tfrc_rtt_s", Rule::Reported),
    ("tcp_timeouts", Rule::Reported),
    ("bottleneck_utilization", Rule::Reported),
];

/// Today's TCP metrics (an ns-3 matrix: one or two TCP classes, A and B), in column order,
/// with their rules, stated before the first comparison was run (docs/conformance.md):
/// - `a_throughput_bps`, `b_throughput_bps`: mean goodput of a class's flows;
/// - `a_share`: class A's share of the TCP goodput;
/// - `jain`: Jain's index over every TCP flow's goodput;
/// - `bottleneck_utilization`; `tcp_rtt_s`: mean RTT of the TCP flows (queueing included);
/// - `retransmissions`: retransmitted segments per TCP flow.
pub const MODERN_METRICS: [(&str, Rule); 7] = [
    ("a_throughput_bps", Rule::TenPercentOrCi),
    ("b_throughput_bps", Rule::TenPercentOrCi),
    ("a_share", Rule::Reported),
    ("jain", Rule::JainOrCi),
    ("bottleneck_utilization", Rule::FivePercentOrCi),
    ("tcp_rtt_s", Rule::Reported),
    ("retransmissions", Rule::Reported),
];

/// Which metrics a matrix measures: the papers' for an ns-2 matrix, today's TCP classes for an
/// ns-3 matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricSet {
    /// [`PAPER_METRICS`].
    Papers,
    /// [`MODERN_METRICS`], with the cell's two classes.
    Modern,
}

impl MetricSet {
    /// The set a matrix with this reference measures.
    pub fn of(reference: Reference) -> Self {
        match reference {
            Reference::Ns2 => MetricSet::Papers,
            Reference::Ns3 => MetricSet::Modern,
        }
    }

    /// The metrics with their rules, in column order.
    pub fn metrics(self) -> &'static [(&'static str, Rule)] {
        match self {
            MetricSet::Papers => &PAPER_METRICS,
            MetricSet::Modern => &MODERN_METRICS,
        }
    }
}

/// A cell's TCP classes by variant name (an ns-3 matrix names its TCP flows `cubic1`, `bbr2`, …).
#[derive(Debug, Clone, Default)]
pub struct Classes {
    /// Class A's variant, if the cell has such flows.
    pub a: Option<String>,
    /// Class B's variant.
    pub b: Option<String>,
}

impl Classes {
    /// Whether `flow` belongs to the class of `variant`: its name is the variant and a number.
    fn holds(variant: Option<&String>, flow: &FlowSummary) -> bool {
        variant.is_some_and(|variant| {
            flow.name
                .strip_prefix(variant.as_str())
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
    }
}

/// One run's metrics, in the order of its set's metrics (`None`: not defined in this cell or
/// not measured by this simulator).
pub type RunMetrics = Vec<Option<f64>>;

/// The metrics of one run from its summary, for `set` (`classes` for [`MetricSet::Modern`]).
pub fn run_metrics(set: MetricSet, summary: &Summary, classes: &Classes) -> RunMetrics {
    match set {
        MetricSet::Papers => paper_metrics(summary).to_vec(),
        MetricSet::Modern => modern_metrics(summary, classes).to_vec(),
    }
}

/// [`MODERN_METRICS`] of one run.
fn modern_metrics(summary: &Summary, classes: &Classes) -> [Option<f64>; 7] {
    let goodput = |variant: Option<&String>| -> Vec<f64> {
        summary
            .flows
            .iter()
            .filter(|flow| Classes::holds(variant, flow))
            .filter_map(|flow| flow.goodput_bps)
            .collect()
    };
    let a = goodput(classes.a.as_ref());
    let b = goodput(classes.b.as_ref());
    let tcp: Vec<&FlowSummary> = summary
        .flows
        .iter()
        .filter(|flow| flow.kind == FlowKind::Tcp)
        .collect();
    let all: Vec<f64> = tcp.iter().filter_map(|flow| flow.goodput_bps).collect();
    let total: f64 = all.iter().sum();
    let a_share =
        (!a.is_empty() && !b.is_empty() && total > 0.0).then(|| a.iter().sum::<f64>() / total);
    let rtts: Vec<f64> = tcp.iter().filter_map(|flow| flow.mean_rtt_s).collect();
    let retransmissions: Vec<f64> = tcp
        .iter()
        .filter_map(|flow| flow.retransmissions.map(|count| count as f64))
        .collect();
    [
        mean(&a),
        mean(&b),
        a_share,
        (all.len() > 1)
            .then(|| tfrc_output::jain_index(&all))
            .flatten(),
        summary
            .bottleneck
            .as_ref()
            .and_then(|bottleneck| bottleneck.utilization),
        mean(&rtts),
        mean(&retransmissions),
    ]
}

/// [`PAPER_METRICS`] of one run from its summary:
/// - throughput: mean goodput of the flows of the class (TFRC, TCP);
/// - ratio: mean TFRC goodput / mean TCP goodput;
/// - p: `mean_p` of the first TFRC flow (ns-2 prints p for that flow only, docs/ns2.md);
/// - CoV: mean over TFRC flows of `cov_sent_100ms`; RTT: mean `mean_rtt_s` of the class;
/// - timeouts: mean retransmission timeouts per TCP flow; the bottleneck's utilisation.
fn paper_metrics(summary: &Summary) -> [Option<f64>; 9] {
    let of_kind = |kind: FlowKind, value: &dyn Fn(&tfrc_output::FlowSummary) -> Option<f64>| {
        let values: Option<Vec<f64>> = summary
            .flows
            .iter()
            .filter(|flow| flow.kind == kind)
            .map(value)
            .collect();
        values.and_then(|values| mean(&values))
    };
    let tfrc = of_kind(FlowKind::Tfrc, &|flow| flow.goodput_bps);
    let tcp = of_kind(FlowKind::Tcp, &|flow| flow.goodput_bps);
    let ratio = match (tfrc, tcp) {
        (Some(tfrc), Some(tcp)) if tcp > 0.0 => Some(tfrc / tcp),
        _ => None,
    };
    let p = summary
        .flows
        .iter()
        .find(|flow| flow.kind == FlowKind::Tfrc)
        .and_then(|flow| flow.mean_p);
    [
        tfrc,
        tcp,
        ratio,
        p,
        of_kind(FlowKind::Tfrc, &|flow| flow.cov_sent_100ms),
        of_kind(FlowKind::Tcp, &|flow| flow.mean_rtt_s),
        of_kind(FlowKind::Tfrc, &|flow| flow.mean_rtt_s),
        of_kind(FlowKind::Tcp, &|flow| flow.timeouts.map(|t| t as f64)),
        summary
            .bottleneck
            .as_ref()
            .and_then(|bottleneck| bottleneck.utilization),
    ]
}

/// The comparison of one metric in one cell.
#[derive(Debug, Clone, Serialize)]
pub struct MetricRow {
    /// Cell name.
    pub cell: String,
    /// The cell's group.
    pub group: String,
    /// Metric name ([`MetricSet::metrics`]).
    pub metric: String,
    /// How it is judged.
    pub rule: String,
    /// The reference's replications with a value (column `ns2_n` or `ns3_n`).
    pub reference_n: usize,
    /// The reference's ensemble mean and its 95 % CI.
    pub reference_mean: Option<f64>,
    pub reference_ci_low: Option<f64>,
    pub reference_ci_high: Option<f64>,
    /// Ours.
    pub ours_n: usize,
    pub ours_mean: Option<f64>,
    pub ours_ci_low: Option<f64>,
    pub ours_ci_high: Option<f64>,
    /// ours − reference.
    pub difference: Option<f64>,
    /// Half-width of the difference's 95 % CI (Welch).
    pub difference_ci: Option<f64>,
    /// (ours − reference) / reference.
    pub relative_difference: Option<f64>,
    /// The largest |difference| that agrees.
    pub tolerance: Option<f64>,
    /// `agrees`, `disagrees`, `reported` (not judged), or `n/a` (not measured on a side).
    pub verdict: String,
}

/// Compares the ensembles of one metric.
pub fn compare(
    (cell, group): (&str, &str),
    (metric, rule): (&str, Rule),
    ns2: &[f64],
    ours: &[f64],
) -> MetricRow {
    let reference_ci = confidence_interval_95(ns2);
    let ours_ci = confidence_interval_95(ours);
    let difference = welch_difference_95(ns2, ours);
    let reference_mean = reference_ci.map(|ci| ci.mean);
    let tolerance = match (rule, reference_mean, difference) {
        (Rule::FivePercentOrCi, Some(m), Some((_, half))) => Some((0.05 * m.abs()).max(half)),
        (Rule::TwentyPercent, Some(m), Some(_)) => Some(0.2 * m.abs() + NS2_P_RESOLUTION),
        (Rule::TenPercentOrCi, Some(m), Some((_, half))) => Some((0.1 * m.abs()).max(half)),
        (Rule::JainOrCi, Some(_), Some((_, half))) => Some(JAIN_TOLERANCE.max(half)),
        _ => None,
    };
    let verdict = match (difference, tolerance, rule) {
        (None, _, _) => "n/a",
        (Some(_), _, Rule::Reported) => "reported",
        // Both exactly equal (e.g. p = 0 on both sides: no loss) agrees whatever the tolerance.
        (Some((d, _)), Some(t), _) if d.abs() <= t || d == 0.0 => "agrees",
        _ => "disagrees",
    };
    MetricRow {
        cell: cell.to_string(),
        group: group.to_string(),
        metric: metric.to_string(),
        rule: rule.name().to_string(),
        reference_n: ns2.len(),
        reference_mean,
        reference_ci_low: reference_ci.map(|ci| ci.low),
        reference_ci_high: reference_ci.map(|ci| ci.high),
        ours_n: ours.len(),
        ours_mean: ours_ci.map(|ci| ci.mean),
        ours_ci_low: ours_ci.map(|ci| ci.low),
        ours_ci_high: ours_ci.map(|ci| ci.high),
        difference: difference.map(|(d, _)| d),
        difference_ci: difference.map(|(_, half)| half),
        relative_difference: match (difference, reference_mean) {
            (Some((d, _)), Some(m)) if m != 0.0 => Some(d / m),
            _ => None,
        },
        tolerance,
        verdict: verdict.to_string(),
    }
}

/// A cell's result.
#[derive(Debug, Clone)]
pub struct CellResult {
    /// Name.
    pub name: String,
    /// Group.
    pub group: String,
    /// The matrix's note.
    pub note: Option<String>,
    /// Expected to agree.
    pub expect_agree: bool,
    /// One row per metric.
    pub rows: Vec<MetricRow>,
    /// Per metric, (the reference's values, ours) over the replications.
    pub values: Vec<(Vec<f64>, Vec<f64>)>,
    /// Failed runs (simulator, replication, why).
    pub failures: Vec<String>,
    /// What the reference could not express or approximated (from its generator), once per
    /// cell.
    pub reference_notes: Vec<String>,
}

impl CellResult {
    /// `agrees`, `disagrees` or `failed`.
    pub fn verdict(&self) -> &'static str {
        if !self.failures.is_empty() {
            "failed"
        } else if self.rows.iter().any(|row| row.verdict == "disagrees") {
            "disagrees"
        } else {
            "agrees"
        }
    }
}

/// Writes `conformance.csv`, whose reference columns carry the reference's name (`ns2_mean`).
pub fn write_csv(path: &Path, cells: &[CellResult], reference: Reference) -> Result<()> {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_path(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let header = [
        "cell", "group", "metric", "rule", "n", "mean", "ci_low", "ci_high",
    ]
    .iter()
    .enumerate()
    .map(|(index, column)| {
        if index >= 4 {
            format!("{}_{column}", reference.key())
        } else {
            (*column).to_string()
        }
    })
    .chain(
        [
            "ours_n",
            "ours_mean",
            "ours_ci_low",
            "ours_ci_high",
            "difference",
            "difference_ci",
            "relative_difference",
            "tolerance",
            "verdict",
        ]
        .map(String::from),
    );
    writer
        .write_record(header)
        .with_context(|| format!("cannot write {}", path.display()))?;
    for row in cells.iter().flat_map(|cell| &cell.rows) {
        writer
            .serialize(row)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    writer
        .flush()
        .with_context(|| format!("cannot write {}", path.display()))
}

fn format_value(metric: &str, value: Option<f64>) -> String {
    match value {
        None => "–".to_string(),
        Some(v) if metric.ends_with("_bps") => format!("{:.1} kb/s", v / 1000.0),
        Some(v) if metric.ends_with("_s") => format!("{:.1} ms", v * 1000.0),
        Some(v) if metric == "p" => format!("{v:.5}"),
        Some(v) => format!("{v:.3}"),
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The heat map colour of a relative difference: white at 0, red at ±40 % and beyond.
fn heat(relative: Option<f64>) -> String {
    match relative {
        None => "#eeeeee".to_string(),
        Some(r) => {
            let strength = (r.abs() / 0.4).min(1.0);
            let other = (255.0 * (1.0 - 0.75 * strength)) as u8;
            format!("#ff{other:02x}{other:02x}")
        }
    }
}

/// Both ensembles of a metric as dots on one axis (the reference above, ours below, means as
/// bars).
fn strip_svg(metric: &str, ns2: &[f64], ours: &[f64], reference: Reference) -> String {
    let all: Vec<f64> = ns2.iter().chain(ours).copied().collect();
    if all.is_empty() {
        return String::new();
    }
    let low = all.iter().copied().fold(f64::INFINITY, f64::min);
    let high = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if high > low { high - low } else { 1.0 };
    let x = |v: f64| 10.0 + 280.0 * (v - low) / span;
    let mut svg = String::from(
        "<svg width=\"300\" height=\"44\" viewBox=\"0 0 300 44\" xmlns=\"http://www.w3.org/2000/svg\">",
    );
    for (values, y, colour) in [(ns2, 12.0, "#1f77b4"), (ours, 30.0, "#ff7f0e")] {
        for &v in values {
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{y}\" r=\"3\" fill=\"{colour}\" fill-opacity=\"0.6\"/>",
                x(v)
            );
        }
        if let Some(m) = mean(values) {
            let _ = write!(
                svg,
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1}\" y2=\"{2}\" stroke=\"{colour}\" stroke-width=\"2\"/>",
                x(m),
                y - 8.0,
                y + 8.0
            );
        }
    }
    let _ = write!(
        svg,
        "<title>{metric}: {} to {} ({} above, ours below; bars: means)</title></svg>",
        format_value(metric, Some(low)),
        format_value(metric, Some(high)),
        reference.label()
    );
    svg
}

/// Writes `index.html`: the summary line, the heat map of relative differences per cell and
/// metric, and per cell its table and both distributions of each metric.
pub fn write_html(
    path: &Path,
    cells: &[CellResult],
    header: &str,
    reference: Reference,
) -> Result<()> {
    let agree = cells.iter().filter(|c| c.verdict() == "agrees").count();
    let rules = match MetricSet::of(reference) {
        MetricSet::Papers => {
            "max(5 %, its 95 % confidence interval) for throughput and the TFRC/TCP ratio, and \
             within 20 % (+ 0.000005, the resolution of the p ns-2 prints) for p"
        }
        MetricSet::Modern => {
            "max(10 %, its 95 % confidence interval) for each TCP class's throughput, max(5 %, \
             the interval) for the bottleneck's utilisation and max(0.05, the interval) for \
             Jain's index"
        }
    };
    let mut html = String::new();
    let _ = write!(
        html,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{0} conformance</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:3px 6px;font-size:13px}}\
         .agrees{{color:#2a7d2a}}.disagrees,.failed{{color:#b00020;font-weight:bold}}</style></head><body>\
         <h1>Our simulator against {0}</h1><p>{1}</p>\
         <p><b>{agree} of {2} cells agree.</b> A metric agrees when the difference of the ensemble means is within \
         {rules}; the other metrics are reported. Colour: |relative difference|, white 0, red ≥ 40 %.</p>",
        reference.label(),
        escape(header),
        cells.len()
    );
    html.push_str(&heat_map(cells, reference));
    html.push_str("<h2>Cells</h2>");
    for cell in cells {
        html.push_str(&cell_html(cell, reference));
    }
    let _ = writeln!(
        html,
        "<p><b>{agree} of {} cells agree.</b></p></body></html>",
        cells.len()
    );
    std::fs::write(path, html).with_context(|| format!("cannot write {}", path.display()))
}

/// The heat map: a row per cell, its verdict and each metric's relative difference,
/// coloured by its size.
fn heat_map(cells: &[CellResult], reference: Reference) -> String {
    let mut html = String::new();
    html.push_str("<h2>Heat map</h2><table><tr><th>cell</th><th>verdict</th>");
    for (metric, _) in MetricSet::of(reference).metrics() {
        let _ = write!(html, "<th>{metric}</th>");
    }
    html.push_str("</tr>");
    for cell in cells {
        let verdict = cell.verdict();
        let _ = write!(
            html,
            "<tr><td><a href=\"#{0}\">{0}</a></td><td class=\"{verdict}\">{verdict}</td>",
            cell.name
        );
        for row in &cell.rows {
            let mark = match row.verdict.as_str() {
                "agrees" => " ✓",
                "disagrees" => " ✗",
                _ => "",
            };
            let text = row
                .relative_difference
                .map_or("–".to_string(), |r| format!("{:+.1} %", 100.0 * r));
            let _ = write!(
                html,
                "<td style=\"background:{}\">{text}{mark}</td>",
                heat(row.relative_difference)
            );
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    html
}

/// One cell's part of the page: its verdict, group and note, failures, ns-2's notes, and a
/// row per metric with both ensembles, the difference, the verdict and the replications.
fn cell_html(cell: &CellResult, reference: Reference) -> String {
    let mut html = String::new();
    let verdict = cell.verdict();
    let _ = write!(
        html,
        "<h3 id=\"{0}\">{0} <span class=\"{verdict}\">({verdict})</span></h3><p>group {1}",
        cell.name,
        escape(&cell.group)
    );
    if let Some(note) = &cell.note {
        let _ = write!(html, "; {}", escape(note));
    }
    html.push_str("</p>");
    for failure in &cell.failures {
        let _ = write!(html, "<p class=\"failed\">{}</p>", escape(failure));
    }
    for note in &cell.reference_notes {
        let _ = write!(
            html,
            "<p><i>{}: {}</i></p>",
            reference.label(),
            escape(note)
        );
    }
    let _ = write!(
        html,
        "<table><tr><th>metric</th><th>rule</th><th>{0} mean [95 % CI]</th>\
         <th>ours mean [95 % CI]</th><th>difference</th><th>verdict</th><th>replications ({0} ●, ours ●)</th></tr>",
        reference.label()
    );
    for (row, (ns2, ours)) in cell.rows.iter().zip(&cell.values) {
        let interval = |m: Option<f64>, low: Option<f64>, high: Option<f64>| {
            format!(
                "{} [{}, {}]",
                format_value(&row.metric, m),
                format_value(&row.metric, low),
                format_value(&row.metric, high)
            )
        };
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            row.metric,
            row.rule,
            interval(row.reference_mean, row.reference_ci_low, row.reference_ci_high),
            interval(row.ours_mean, row.ours_ci_low, row.ours_ci_high),
            row.relative_difference
                .map_or("–".to_string(), |r| format!("{:+.1} %", 100.0 * r)),
            row.verdict,
            row.verdict,
            strip_svg(&row.metric, ns2, ours, reference)
        );
    }
    html.push_str("</table>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary with one flow per `(name, goodput)` and the bottleneck at `utilization`.
    fn summary(flows: &[(&str, f64)], utilization: f64) -> Summary {
        let flows: Vec<serde_json::Value> = flows
            .iter()
            .map(|(name, goodput)| {
                serde_json::json!({
                    "name": name, "kind": "tcp", "from": "s", "to": "d", "start_s": 0.0,
                    "stop_s": 60.0, "sent_bytes": 0, "recv_bytes": 0, "sent_packets": 0,
                    "recv_packets": 0, "goodput_bytes": 0, "send_rate_bps": null,
                    "recv_rate_bps": null, "goodput_bps": goodput, "receiving_ratio": null,
                    "mean_p": null, "mean_rtt_s": 0.1, "cov_sent_100ms": null,
                    "retransmissions": 10
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "tool": "t", "scenario": "c", "seed": 1, "duration_s": 60.0,
            "interval_s": 1.0, "flows": flows, "jain_index": null,
            "bottleneck": { "from": "r1", "to": "r2", "capacity_bps": 1e7, "utilization": utilization },
            "links": [], "parameters": {}
        }))
        .unwrap()
    }

    #[test]
    fn modern_metrics_find_each_class_by_its_flows_names() {
        let classes = Classes {
            a: Some("cubic".into()),
            b: Some("bbr".into()),
        };
        let run = summary(
            &[
                ("cubic1", 1e6),
                ("cubic2", 3e6),
                ("bbr1", 6e6),
                ("newreno1", 9e6),
            ],
            0.97,
        );
        let metrics = run_metrics(MetricSet::Modern, &run, &classes);
        assert_eq!(metrics.len(), MODERN_METRICS.len());
        assert_eq!(metrics[0], Some(2e6), "class A: the two cubic flows");
        assert_eq!(
            metrics[1],
            Some(6e6),
            "class B: bbr1 only (newreno1 is neither)"
        );
        // A's share of every TCP flow's goodput: 4 / 19.
        assert!((metrics[2].unwrap() - 4.0 / 19.0).abs() < 1e-12);
        let jain = 19.0f64.powi(2) / (4.0 * (1.0 + 9.0 + 36.0 + 81.0));
        assert!((metrics[3].unwrap() - jain).abs() < 1e-12);
        assert_eq!(metrics[4], Some(0.97));
        assert_eq!(metrics[6], Some(10.0));
        // One class: no B, no share.
        let alone = run_metrics(
            MetricSet::Modern,
            &summary(&[("bbr1", 5e6)], 0.5),
            &Classes {
                a: Some("bbr".into()),
                b: None,
            },
        );
        assert_eq!(
            (alone[0], alone[1], alone[2], alone[3]),
            (Some(5e6), None, None, None)
        );
        // "reno" is not a prefix match of "newreno1".
        let reno = run_metrics(
            MetricSet::Modern,
            &summary(&[("newreno1", 5e6)], 0.5),
            &Classes {
                a: Some("reno".into()),
                b: None,
            },
        );
        assert_eq!(reno[0], None);
    }

    #[test]
    fn ten_percent_and_jain_rules() {
        let reference = [100.0; 4];
        let near = compare(
            ("c", "g"),
            ("m", Rule::TenPercentOrCi),
            &reference,
            &[109.0; 4],
        );
        assert_eq!(near.verdict, "agrees");
        let far = compare(
            ("c", "g"),
            ("m", Rule::TenPercentOrCi),
            &reference,
            &[111.0; 4],
        );
        assert_eq!(far.verdict, "disagrees");
        let jain = [0.90; 4];
        let close = compare(("c", "g"), ("jain", Rule::JainOrCi), &jain, &[0.94; 4]);
        assert_eq!(close.verdict, "agrees");
        let apart = compare(("c", "g"), ("jain", Rule::JainOrCi), &jain, &[0.96; 4]);
        assert_eq!(apart.verdict, "disagrees");
    }

    #[test]
    fn five_percent_or_the_interval_whichever_is_wider() {
        let ns2 = [100.0, 100.0, 100.0, 100.0];
        // 4 % apart with no spread: within 5 %.
        let row = compare(("c", "g"), ("m", Rule::FivePercentOrCi), &ns2, &[104.0; 4]);
        assert_eq!(row.verdict, "agrees");
        // 10 % apart with no spread: outside.
        let row = compare(("c", "g"), ("m", Rule::FivePercentOrCi), &ns2, &[110.0; 4]);
        assert_eq!(row.verdict, "disagrees");
        assert_eq!(row.relative_difference, Some(0.1));
        // 10 % apart but noisy: the interval covers it.
        let noisy = [80.0, 140.0, 90.0, 130.0];
        let row = compare(("c", "g"), ("m", Rule::FivePercentOrCi), &ns2, &noisy);
        assert_eq!(row.verdict, "agrees", "{row:?}");
        assert!(row.tolerance.unwrap() > 10.0);
    }

    #[test]
    fn p_is_judged_at_twenty_percent_and_reported_metrics_are_not_judged() {
        let ns2 = [0.010, 0.011, 0.009];
        let near = compare(("c", "g"), ("p", Rule::TwentyPercent), &ns2, &[0.0115; 3]);
        assert_eq!(near.verdict, "agrees");
        let far = compare(("c", "g"), ("p", Rule::TwentyPercent), &ns2, &[0.0125; 3]);
        assert_eq!(far.verdict, "disagrees");
        let zero = compare(("c", "g"), ("p", Rule::TwentyPercent), &[0.0; 3], &[0.0; 3]);
        assert_eq!(zero.verdict, "agrees");
        // Below ns-2's printed resolution: 0 in ns-2, 3e-6 in ours is no difference; 2e-5 is.
        let tiny = compare(
            ("c", "g"),
            ("p", Rule::TwentyPercent),
            &[0.0; 3],
            &[3e-6; 3],
        );
        assert_eq!(tiny.verdict, "agrees");
        let small = compare(
            ("c", "g"),
            ("p", Rule::TwentyPercent),
            &[0.0; 3],
            &[2e-5; 3],
        );
        assert_eq!(small.verdict, "disagrees");
        let reported = compare(("c", "g"), ("rtt", Rule::Reported), &ns2, &[1.0; 3]);
        assert_eq!(reported.verdict, "reported");
        let missing = compare(("c", "g"), ("rtt", Rule::FivePercentOrCi), &[], &[1.0; 3]);
        assert_eq!(missing.verdict, "n/a");
    }
}
