//! `tfrc claims`: the claims of `scenarios/claims.toml` as one Markdown catalogue (every claim
//! with its encoding, the verdict, threshold and cause vocabularies, the calibrated conditions).
//! docs/claims.md is this output; a test keeps the two the same.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::claims::{
    self, Aggregate, Claim, ClaimsFile, OneOrMany, Relation, CAUSES, THRESHOLDS, UNEXPLAINED,
};

/// Arguments of `tfrc claims`.
#[derive(Debug, Args)]
pub struct ClaimsArgs {
    /// The folder of claims.toml (default: ./scenarios, else the one in the source tree).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
}

/// `tfrc claims`: prints the catalogue of claims.toml as Markdown.
pub fn run(args: &ClaimsArgs) -> Result<()> {
    let dir = super::scenarios_dir(args.scenarios.as_ref());
    let file = claims::load(&dir.join("claims.toml"))?;
    print!("{}", markdown(&file));
    Ok(())
}

/// The verdicts a claim can get, with what each means (the report's and claims.csv's words).
pub const VERDICTS: [(&str, &str); 7] = [
    (
        "holds",
        "the 95 % confidence interval of our figure over the replications lies wholly on the \
         paper's side of the bound",
    ),
    ("differs", "the interval lies wholly on the other side"),
    ("inconclusive", "the interval straddles the bound"),
    (
        "reference",
        "the paper's number is printed beside ours; no verdict (relation `reference`)",
    ),
    (
        "see figure",
        "no numeric form: the paper's words are printed beside the figure (relation \
         `qualitative`)",
    ),
    (
        "calibration target",
        "under a calibrated condition, the claim whose paper figure fixed the condition's level: \
         it holds there by construction and is not judged",
    ),
    (
        "not measured",
        "no run or no defined value to judge (the reason is printed)",
    ),
];

/// How many claims the file has.
pub fn claim_count(file: &ClaimsFile) -> usize {
    file.experiment.values().map(|e| e.claim.len()).sum()
}

fn selector(map: &std::collections::BTreeMap<String, OneOrMany>) -> String {
    map.iter()
        .map(|(label, values)| match values {
            OneOrMany::One(value) => format!("{label}={value}"),
            OneOrMany::Many(values) => format!("{label}={}", values.join("|")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn window(window: [f64; 2]) -> String {
    format!("[{}, {}] s", window[0], window[1])
}

/// A claim's encoding in one line: what is measured, on which runs and flows, against what.
pub fn encoding(claim: &Claim) -> String {
    let mut measured = claim.metric.to_string();
    if let Some(side) = &claim.side {
        write!(measured, " ({side} side)").ok();
    }
    if let Some(level) = claim.level {
        write!(measured, " of {level} kb/s").ok();
    }
    if let Some(bin_s) = claim.bin_s {
        write!(measured, " per {bin_s} s bin").ok();
    }
    if let Some(statistic) = &claim.statistic {
        measured = format!("{statistic} of {measured}");
    }
    if let Some(flows) = &claim.flows {
        write!(measured, " of {}", flows.join(", ")).ok();
    }
    if let Some(aggregate) = &claim.aggregate {
        let word = match aggregate {
            Aggregate::Difference => "first minus second",
            other => other.name(),
        };
        write!(measured, " ({word})").ok();
    }
    if let Some(w) = claim.window {
        write!(measured, " over {}", window(w)).ok();
    }
    if let Some(w) = claim.baseline_window {
        write!(measured, " / the same over {}", window(w)).ok();
    }
    if !claim.variant.is_empty() {
        write!(measured, " in runs {}", selector(&claim.variant)).ok();
    }
    let mut denominator = Vec::new();
    if let Some(flows) = &claim.baseline_flows {
        denominator.push(format!("flows {}", flows.join(", ")));
    }
    if let Some(baseline) = &claim.baseline {
        denominator.push(format!("runs {}", selector(baseline)));
    }
    if let Some(id) = &claim.baseline_id {
        denominator.push(format!("of {id}"));
    }
    if !denominator.is_empty() {
        write!(measured, " / the same in {}", denominator.join(" ")).ok();
    }
    if let Some(across) = &claim.across {
        let along = claim
            .along
            .as_deref()
            .map(|label| format!(" along {label}"))
            .unwrap_or_default();
        let cut = claim
            .cut
            .map(|cut| format!(" (cut {cut})"))
            .unwrap_or_default();
        measured = format!("{across}{along}{cut} of: {measured}");
    }
    format!("{measured} → {}", claims::paper_text(claim))
}

fn escape_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// One experiment's claims as a Markdown table: number, claim, encoding, threshold, cause.
fn experiment_table(id: &str, experiment: &claims::ExperimentClaims) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "### {id}\n\nPaper {}, {}. {} claims.\n\n\
         | # | claim | encoding | threshold | cause, where it does not hold |\n|---|---|---|---|---|",
        experiment.paper,
        experiment.location,
        experiment.claim.len()
    )
    .ok();
    for (index, claim) in experiment.claim.iter().enumerate() {
        let mut threshold = claim.threshold.clone().unwrap_or_default();
        if claim.tolerance.is_some() {
            threshold.push_str(" (tolerance ours)");
        }
        if let Some(name) = &claim.calibrates {
            threshold.push_str(&format!("; fixes {name}"));
        }
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            index + 1,
            escape_cell(&claim.text),
            escape_cell(&encoding(claim)),
            escape_cell(&threshold),
            claim.cause.as_deref().unwrap_or("")
        )
        .ok();
    }
    writeln!(out).ok();
    out
}

/// The catalogue in Markdown.
pub fn markdown(file: &ClaimsFile) -> String {
    let mut out = String::new();
    let total = claim_count(file);
    let relation_count = |relation: Relation| {
        file.experiment
            .values()
            .flat_map(|e| &e.claim)
            .filter(|c| c.relation == relation)
            .count()
    };
    let (references, qualitative) = (
        relation_count(Relation::Reference),
        relation_count(Relation::Qualitative),
    );
    let judged = total - references - qualitative;
    writeln!(
        out,
        "# The papers' claims, as `tfrc reproduce` judges them\n\n\
         Generated by `tfrc claims` from `scenarios/claims.toml` (schema: \
         [../scenarios/README.md](../scenarios/README.md#claimstoml)); a test keeps this file \
         the same as the command's output: `cargo run -p tfrc-cli -- claims > docs/claims.md`.\n\n\
         **{total} claims** in {} experiments: {judged} judged against a bound, {references} \
         printed as references, {qualitative} qualitative. The metrics are defined once, in \
         [metrics.md](metrics.md); the experiments in [experiments.md](experiments.md).\n",
        file.experiment.len()
    )
    .ok();
    writeln!(out, "## Verdicts\n").ok();
    for (word, meaning) in VERDICTS {
        writeln!(out, "- **{word}**: {meaning}.").ok();
    }
    writeln!(
        out,
        "\nAn experiment differs if one of its claims differs, is inconclusive if none differs \
         and one is inconclusive, and holds if every judged claim holds.\n"
    )
    .ok();
    writeln!(out, "## Where a bound comes from (`threshold`)\n").ok();
    for (word, meaning) in THRESHOLDS {
        writeln!(out, "- `{word}`: {meaning}.").ok();
    }
    writeln!(
        out,
        "\n## Causes of a `differs` or `inconclusive` (`cause`)\n\n\
         Every claim with an `explanation` (the measured reason our runs do not show it) names \
         one cause; the report's summary counts them per experiment.\n"
    )
    .ok();
    for (word, meaning) in CAUSES {
        writeln!(out, "- `{word}`: {meaning}.").ok();
    }
    writeln!(
        out,
        "- `{UNEXPLAINED}`: printed for a non-hold whose claim records no cause yet.\n"
    )
    .ok();
    writeln!(out, "## Calibrated conditions\n").ok();
    if file.calibration.is_empty() {
        writeln!(out, "None.\n").ok();
    }
    for (name, calibration) in &file.calibration {
        writeln!(
            out,
            "### `{name}`\n\n- **Experiments:** {}\n- **Condition:** {}\n- **Level:** {} \
             (`{}`)\n- **Fixed from:** {}\n- **How:** {}\n",
            calibration.experiments.join(", "),
            calibration.condition,
            calibration.value,
            calibration.set.join(" "),
            calibration.source,
            calibration.method
        )
        .ok();
    }
    writeln!(out, "## Claims by experiment\n").ok();
    for (id, experiment) in &file.experiment {
        out.push_str(&experiment_table(id, experiment));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn read(path: &str) -> String {
        std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn claims_file() -> ClaimsFile {
        claims::load(&root().join("scenarios/claims.toml")).unwrap()
    }

    /// docs/claims.md is `tfrc claims`'s output for the repository's claims.toml.
    #[test]
    fn docs_claims_md_is_the_generated_catalogue() {
        let generated = markdown(&claims_file());
        let committed = read("docs/claims.md");
        assert!(
            committed == generated,
            "docs/claims.md is stale: regenerate it with `cargo run -p tfrc-cli -- claims > docs/claims.md`"
        );
    }

    /// docs/experiments.md gives the claim count of claims.toml, per experiment and in all, names
    /// the verdicts, and describes no encoding of its own (they are in docs/claims.md).
    #[test]
    fn docs_experiments_md_agrees_with_claims_toml() {
        let file = claims_file();
        let doc = read("docs/experiments.md");
        let total = claim_count(&file);
        assert!(
            doc.contains(&format!("**{total} claims**")),
            "docs/experiments.md does not state the {total} claims of claims.toml"
        );
        assert!(
            doc.contains(&format!("| **{total}** |")),
            "the summary table's total is not {total}"
        );
        for word in ["holds", "differs", "inconclusive"] {
            assert!(
                doc.contains(&format!("**{word}**")),
                "verdict {word} not named"
            );
        }
        for (id, experiment) in &file.experiment {
            let count = experiment.claim.len();
            let section = doc
                .split(&format!("\n### {id}\n"))
                .nth(1)
                .unwrap_or_else(|| panic!("no section for {id}"));
            let section = section.split("\n### ").next().unwrap_or(section);
            assert!(
                section.contains(&format!("- **Claims ({count}):** ")),
                "{id}: its section does not give its {count} claims"
            );
            let row = doc
                .lines()
                .find(|line| line.starts_with(&format!("| [{id}](#{id}) |")))
                .unwrap_or_else(|| panic!("{id}: no summary row"));
            assert!(
                row.trim_end().ends_with(&format!("| {count} |")),
                "{id}: summary row does not give {count} claims: {row}"
            );
        }
    }

    /// One definition of each metric: docs/metrics.md repeats every one-line definition of
    /// claims.toml verbatim, the recovery time's look-back is the code's, and no doc keeps the old
    /// 20 s one.
    #[test]
    fn metric_definitions_are_the_same_in_the_claims_the_code_and_the_docs() {
        let file = claims_file();
        let metrics_doc = read("docs/metrics.md");
        for (name, definition) in &file.metrics {
            assert!(
                metrics_doc.contains(&format!("- **{name}**: {definition}\n")),
                "docs/metrics.md does not repeat the definition of {name:?}"
            );
        }
        let reference = tfrc_analysis::metrics::RecoveryOptions::default().reference_s;
        assert!(metrics_doc.contains(&format!("default `reference_s` **{reference} s**")));
        assert!(file.metrics["recovery time"].contains(&format!("over the {reference} s before")));
        for path in [
            "docs/metrics.md",
            "docs/experiments.md",
            "docs/reproduce.md",
            "scenarios/README.md",
        ] {
            assert!(
                !read(path).contains("20 s before the disturbance"),
                "{path} still defines recovery time over 20 s"
            );
        }
    }

    #[test]
    fn encodings_name_what_is_measured() {
        let file = claims_file();
        let claim = &file.experiment["e002-rtt"].claim[6];
        let text = encoding(claim);
        assert!(
            text.contains("(sender side)") && text.contains("(sum)"),
            "{text}"
        );
        assert!(
            text.contains("runs feedbacks=4") && text.ends_with("< 1.00"),
            "{text}"
        );
    }
}
