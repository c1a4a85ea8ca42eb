//! The reproduction report: one section per experiment, written as `report.md` and a
//! self-contained `index.html` (inline CSS, no script, opens from disk without a server).
//!
//! Each [`Section`] holds the experiment's setup, our figures (paths relative to the report
//! directory), the paper's stated result, a table of measured numbers (paper vs ours), extra
//! tables, links to the raw CSV/JSON of its runs, and a [`Verdict`]; optionally how many of
//! its claims held, differed or were inconclusive, and the causes of those that did not hold,
//! which the summary table lists per experiment.
//!
//! Free text (intro, setup, the paper's result, verdict explanations, figure captions, table
//! cells) is Markdown: `report.md` carries it as is, `index.html` renders it
//! ([`crate::markdown`], raw HTML escaped).
//!
//! ```no_run
//! use tfrc_analysis::report::{Report, Section, Verdict};
//!
//! let report = Report::new("TFRC reproduction")
//!     .intro("Runs of every experiment of EXPERIMENTS.md in our simulator.")
//!     .section(
//!         Section::new("e000-loss", "TFRC under a loss period")
//!             .setup("RTT 250 ms, 1 % loss during 30–90 s, 180 s.")
//!             .figure("e000-loss/throughput.svg", "Throughput, sender and receiver")
//!             .paper_result("Back to the normal rate about 25 s after the loss period.")
//!             .measurement("recovery time (s)", "≈ 25", "23")
//!             .raw_data("e000-loss/run/flows.csv")
//!             .verdict(Verdict::Holds),
//!     );
//! report.write("report")?;
//! # Ok::<(), tfrc_analysis::report::ReportError>(())
//! ```

use std::collections::HashSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use base64::Engine;

use crate::markdown::{self, Flow};
use crate::table::{escape_html, Table};

/// What went wrong while writing a report. Each variant names the file or section.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A figure or raw-data path is absolute or leaves the report directory, so the report
    /// would not survive being copied elsewhere.
    #[error("section `{section}`: {} must be a path inside the report directory (relative, no `..`)", path.display())]
    PathOutsideReport {
        /// The section id.
        section: String,
        /// The path given.
        path: PathBuf,
    },
    /// A figure or raw-data file does not exist in the report directory.
    #[error("section `{section}`: {} does not exist (looked for {})", path.display(), full.display())]
    MissingFile {
        /// The section id.
        section: String,
        /// The path given.
        path: PathBuf,
        /// Where it was looked for.
        full: PathBuf,
    },
    /// Two sections have the same id (ids are the HTML anchors).
    #[error("two sections have the id `{0}`")]
    DuplicateSection(String),
}

/// Whether the paper's result holds in our runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Our numbers show what the paper states.
    Holds,
    /// They do not; the text says how they differ.
    Differs(String),
    /// The replications' confidence intervals straddle a claim's threshold: our runs can tell
    /// neither way; the text says which claims.
    Inconclusive(String),
    /// The experiment was not run; the text says why.
    NotRun(String),
    /// The source states no numeric criterion to judge by (RFC 8867's expected behaviours are
    /// words): the figures and tables are the result; the text says so.
    NoCriterion(String),
}

impl Verdict {
    /// Short name: `holds`, `differs`, `inconclusive`, `not run`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Differs(_) => "differs",
            Verdict::Inconclusive(_) => "inconclusive",
            Verdict::NotRun(_) => "not run",
            Verdict::NoCriterion(_) => "no criterion",
        }
    }

    /// The explanation, empty for `Holds`.
    pub fn explanation(&self) -> &str {
        match self {
            Verdict::Holds => "",
            Verdict::Differs(text)
            | Verdict::Inconclusive(text)
            | Verdict::NotRun(text)
            | Verdict::NoCriterion(text) => text,
        }
    }

    fn css_class(&self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Differs(_) => "differs",
            Verdict::Inconclusive(_) => "inconclusive",
            Verdict::NotRun(_) | Verdict::NoCriterion(_) => "not-run",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Holds => f.write_str("holds"),
            other => write!(f, "{}: {}", other.name(), other.explanation()),
        }
    }
}

/// A figure of a section: an image file beside the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figure {
    /// Path relative to the report directory.
    pub path: PathBuf,
    /// Caption (also the image's alt text).
    pub caption: String,
}

/// One measured quantity: what the paper says and what we measured, as text (the paper's
/// values are often ranges or approximations: `0.84–1.14`, `≈ 25 s`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measurement {
    /// What is measured, with its unit.
    pub quantity: String,
    /// The paper's value.
    pub paper: String,
    /// Ours.
    pub ours: String,
}

/// Formats a measured value: `precision` decimals, `n/a` when undefined.
pub fn format_value(value: Option<f64>, precision: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.precision$}"),
        _ => "n/a".to_string(),
    }
}

/// How many of a section's claims held, differed and were inconclusive (claims that could not
/// be measured are in none of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClaimCounts {
    /// Claims that hold.
    pub held: usize,
    /// Claims that differ.
    pub differ: usize,
    /// Claims whose interval straddles the threshold.
    pub inconclusive: usize,
}

impl fmt::Display for ClaimCounts {
    /// `held / differ / inconclusive`, e.g. `5 / 1 / 2` (the summary's column header names
    /// the three).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} / {} / {}", self.held, self.differ, self.inconclusive)
    }
}

/// The causes of a section's non-holding claims as the summary lists them: equal causes
/// grouped as `cause ×N` (`×N` only when N > 1), in the order first seen, comma-separated;
/// e.g. `paper-network-not-modelled ×2, noise`.
pub fn cause_summary(causes: &[String]) -> String {
    let mut grouped: Vec<(&str, usize)> = Vec::new();
    for cause in causes {
        match grouped.iter_mut().find(|(seen, _)| *seen == cause.as_str()) {
            Some((_, count)) => *count += 1,
            None => grouped.push((cause, 1)),
        }
    }
    grouped
        .iter()
        .map(|(cause, count)| {
            if *count > 1 {
                format!("{cause} ×{count}")
            } else {
                (*cause).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One experiment's section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Experiment id (`e000-loss`), used as the HTML anchor.
    pub id: String,
    /// Title.
    pub title: String,
    /// The setup (paragraphs separated by blank lines).
    pub setup: String,
    /// Our figures.
    pub figures: Vec<Figure>,
    /// The paper's stated result.
    pub paper_result: String,
    /// Measured numbers, paper vs ours.
    pub measurements: Vec<Measurement>,
    /// Further tables (e.g. Table I).
    pub tables: Vec<Table>,
    /// Raw CSV/JSON files of the runs, relative to the report directory.
    pub raw_data: Vec<PathBuf>,
    /// The verdict.
    pub verdict: Verdict,
    /// How many of its claims held, differed and were inconclusive (`None`: not counted, an
    /// empty cell in the summary).
    pub claim_counts: Option<ClaimCounts>,
    /// The cause of each of its claims that did not hold, one entry per claim (the summary
    /// groups equal ones, [`cause_summary`]).
    pub causes: Vec<String>,
}

impl Section {
    /// A section with nothing in it yet; the verdict starts as `NotRun("no result recorded")`.
    pub fn new(id: impl Into<String>, title: impl Into<String>) -> Section {
        Section {
            id: id.into(),
            title: title.into(),
            setup: String::new(),
            figures: Vec::new(),
            paper_result: String::new(),
            measurements: Vec::new(),
            tables: Vec::new(),
            raw_data: Vec::new(),
            verdict: Verdict::NotRun("no result recorded".to_string()),
            claim_counts: None,
            causes: Vec::new(),
        }
    }

    /// Sets the setup text.
    pub fn setup(mut self, text: impl Into<String>) -> Section {
        self.setup = text.into();
        self
    }

    /// Adds a figure (path relative to the report directory).
    pub fn figure(mut self, path: impl Into<PathBuf>, caption: impl Into<String>) -> Section {
        self.figures.push(Figure {
            path: path.into(),
            caption: caption.into(),
        });
        self
    }

    /// Sets the paper's stated result.
    pub fn paper_result(mut self, text: impl Into<String>) -> Section {
        self.paper_result = text.into();
        self
    }

    /// Adds a measured quantity.
    pub fn measurement(
        mut self,
        quantity: impl Into<String>,
        paper: impl Into<String>,
        ours: impl Into<String>,
    ) -> Section {
        self.measurements.push(Measurement {
            quantity: quantity.into(),
            paper: paper.into(),
            ours: ours.into(),
        });
        self
    }

    /// Adds a table.
    pub fn table(mut self, table: Table) -> Section {
        self.tables.push(table);
        self
    }

    /// Adds a raw data file (relative to the report directory).
    pub fn raw_data(mut self, path: impl Into<PathBuf>) -> Section {
        self.raw_data.push(path.into());
        self
    }

    /// Sets the verdict.
    pub fn verdict(mut self, verdict: Verdict) -> Section {
        self.verdict = verdict;
        self
    }

    /// Sets how many of its claims held, differed and were inconclusive, for the summary.
    pub fn claim_counts(mut self, held: usize, differ: usize, inconclusive: usize) -> Section {
        self.claim_counts = Some(ClaimCounts {
            held,
            differ,
            inconclusive,
        });
        self
    }

    /// Sets the causes of its claims that did not hold, one entry per claim (equal causes
    /// repeated), for the summary.
    pub fn causes(mut self, causes: Vec<String>) -> Section {
        self.causes = causes;
        self
    }

    fn anchor(&self) -> String {
        anchor(&self.id)
    }

    fn measurement_table(&self) -> Table {
        let mut table = Table::new("", vec!["quantity".into(), "paper".into(), "ours".into()]);
        for m in &self.measurements {
            table = table.row(vec![m.quantity.clone(), m.paper.clone(), m.ours.clone()]);
        }
        table
    }
}

/// An HTML id from free text: lowercase ASCII letters, digits, `-` and `_`; anything else
/// becomes `-`.
fn anchor(id: &str) -> String {
    let text: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    if text.is_empty() {
        "section".to_string()
    } else {
        text
    }
}

/// How `index.html` shows figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Images {
    /// `<img src="relative/path">`: the images stay beside the report.
    #[default]
    Linked,
    /// `<img src="data:…;base64,…">`: `index.html` is a single self-contained file.
    Embedded,
}

impl Images {
    /// [`Images::Embedded`] when `embed` (a command's `--embed-images`), else
    /// [`Images::Linked`].
    pub fn embedded_if(embed: bool) -> Images {
        if embed {
            Images::Embedded
        } else {
            Images::Linked
        }
    }
}

/// The files [`Report::write`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    /// `DIR/report.md`.
    pub markdown: PathBuf,
    /// `DIR/index.html`.
    pub html: PathBuf,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Title.
    pub title: String,
    /// Introductory text (paragraphs separated by blank lines).
    pub intro: String,
    /// Sections in order.
    pub sections: Vec<Section>,
    /// How the HTML shows figures.
    pub images: Images,
}

const CSS: &str = "
body { font-family: 'DejaVu Sans', Verdana, sans-serif; max-width: 1100px; margin: 2em auto;
  padding: 0 1em; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #0072b2; padding-bottom: .2em; }
h2 { margin-top: 2.2em; border-bottom: 1px solid #ccc; }
h3 { margin-bottom: .3em; }
table { border-collapse: collapse; margin: .8em 0; }
th, td { border: 1px solid #bbb; padding: .25em .7em; text-align: left; }
th { background: #eef3f8; }
caption { font-weight: bold; text-align: left; padding: .3em 0; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: .9em; color: #555; }
.verdict { font-weight: bold; padding: .4em .7em; border-radius: 4px; display: inline-block; }
.holds { background: #dff3e6; color: #0a5a2a; }
.differs { background: #fbe9dc; color: #8a3a00; }
.inconclusive { background: #fdf6d8; color: #6a5300; }
.not-run { background: #eee; color: #555; }
";

impl Report {
    /// An empty report.
    pub fn new(title: impl Into<String>) -> Report {
        Report {
            title: title.into(),
            intro: String::new(),
            sections: Vec::new(),
            images: Images::Linked,
        }
    }

    /// Sets the introduction.
    pub fn intro(mut self, text: impl Into<String>) -> Report {
        self.intro = text.into();
        self
    }

    /// Adds a section.
    pub fn section(mut self, section: Section) -> Report {
        self.sections.push(section);
        self
    }

    /// Chooses how the HTML shows figures.
    pub fn images(mut self, images: Images) -> Report {
        self.images = images;
        self
    }

    /// Whether the summary has the `claims` and `causes` columns: when some section has claim
    /// counts or causes (a report without claims keeps three columns).
    fn has_claim_columns(&self) -> bool {
        self.sections
            .iter()
            .any(|section| section.claim_counts.is_some() || !section.causes.is_empty())
    }

    /// The summary's column headers.
    fn summary_columns(&self) -> Vec<String> {
        let mut columns = vec!["experiment".into(), "title".into(), "verdict".into()];
        if self.has_claim_columns() {
            columns.push("held / differ / inconclusive".into());
            columns.push("causes".into());
        }
        columns
    }

    /// Checks section ids and that every figure and raw-data file is inside `dir` and exists.
    pub fn check(&self, dir: &Path) -> Result<(), ReportError> {
        let mut seen = HashSet::new();
        for section in &self.sections {
            if !seen.insert(section.anchor()) {
                return Err(ReportError::DuplicateSection(section.id.clone()));
            }
            let paths = section
                .figures
                .iter()
                .map(|f| &f.path)
                .chain(&section.raw_data);
            for path in paths {
                let inside = !path.as_os_str().is_empty()
                    && path.components().all(|c| matches!(c, Component::Normal(_)));
                if !inside {
                    return Err(ReportError::PathOutsideReport {
                        section: section.id.clone(),
                        path: path.clone(),
                    });
                }
                let full = dir.join(path);
                if !full.is_file() {
                    return Err(ReportError::MissingFile {
                        section: section.id.clone(),
                        path: path.clone(),
                        full,
                    });
                }
            }
        }
        Ok(())
    }

    /// The Markdown report. Figures and raw data are linked with paths relative to the report
    /// directory; free text is written as given (it may use Markdown), table cells escaped.
    pub fn to_markdown(&self) -> String {
        let mut out = format!("# {}\n\n", self.title.replace('\n', " "));
        if !self.intro.is_empty() {
            out.push_str(&format!("{}\n\n", self.intro.trim()));
        }
        if !self.sections.is_empty() {
            let mut summary = Table::new("Summary", self.summary_columns());
            for section in &self.sections {
                let mut row = vec![
                    format!("[{}](#{})", section.id, section.anchor()),
                    section.title.clone(),
                    section.verdict.name().to_string(),
                ];
                if self.has_claim_columns() {
                    row.extend(claim_cells(section));
                }
                summary = summary.row(row);
            }
            out.push_str(&summary.to_markdown());
            out.push('\n');
        }
        for section in &self.sections {
            out.push_str(&format!(
                "<a id=\"{}\"></a>\n\n## {} — {}\n\n",
                section.anchor(),
                section.id,
                section.title.replace('\n', " ")
            ));
            if !section.setup.is_empty() {
                out.push_str(&format!("### Setup\n\n{}\n\n", section.setup.trim()));
            }
            if !section.figures.is_empty() {
                out.push_str("### Our figures\n\n");
                for figure in &section.figures {
                    let caption = figure.caption.replace(['\n', '[', ']'], " ");
                    out.push_str(&format!(
                        "![{caption}]({})\n\n*{caption}*\n\n",
                        url_path(&figure.path)
                    ));
                }
            }
            if !section.paper_result.is_empty() {
                out.push_str(&format!(
                    "### Paper's result\n\n{}\n\n",
                    section.paper_result.trim()
                ));
            }
            if !section.measurements.is_empty() {
                out.push_str("### Our measurements\n\n");
                out.push_str(&section.measurement_table().to_markdown());
                out.push('\n');
            }
            for table in &section.tables {
                out.push_str(&table.to_markdown());
                out.push('\n');
            }
            if !section.raw_data.is_empty() {
                out.push_str("### Raw data\n\n");
                for path in &section.raw_data {
                    let link = url_path(path);
                    out.push_str(&format!("- [{}]({link})\n", path.display()));
                }
                out.push('\n');
            }
            let explanation = section.verdict.explanation().replace('\n', " ");
            if explanation.is_empty() {
                out.push_str(&format!("**Verdict: {}**\n\n", section.verdict.name()));
            } else {
                out.push_str(&format!(
                    "**Verdict: {}** — {explanation}\n\n",
                    section.verdict.name()
                ));
            }
        }
        out
    }

    /// The HTML report: one page, inline CSS. Titles and paths are escaped; free text and table
    /// cells are Markdown rendered by [`markdown::to_html`] (raw HTML escaped). With
    /// [`Images::Embedded`] figures are read from `dir` and embedded.
    pub fn to_html(&self, dir: &Path) -> Result<String, ReportError> {
        let title = escape_html(&self.title);
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{title}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
        );
        out.push_str(&markdown::to_html(&self.intro, Flow::Block));
        if !self.sections.is_empty() {
            out.push_str(&self.summary_html());
        }
        for section in &self.sections {
            out.push_str(&self.section_html(section, dir)?);
        }
        out.push_str("</body>\n</html>\n");
        Ok(out)
    }

    /// The HTML summary table: one row per section (id linked to its section, title, verdict,
    /// and the claim counts when any section has claims).
    fn summary_html(&self) -> String {
        let mut out = String::new();
        out.push_str("<table class=\"summary\">\n<caption>Summary</caption>\n<thead><tr>");
        for column in self.summary_columns() {
            out.push_str(&format!("<th>{}</th>", escape_html(&column)));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for section in &self.sections {
            out.push_str(&format!(
                "<tr><td><a href=\"#{anchor}\">{id}</a></td><td>{title}</td>\
                 <td><span class=\"verdict {class}\">{verdict}</span></td>",
                anchor = section.anchor(),
                id = escape_html(&section.id),
                title = escape_html(&section.title),
                class = section.verdict.css_class(),
                verdict = section.verdict.name(),
            ));
            if self.has_claim_columns() {
                for cell in claim_cells(section) {
                    out.push_str(&format!(
                        "<td>{}</td>",
                        markdown::to_html(&cell, Flow::Inline)
                    ));
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        out
    }

    /// One section in HTML: setup, figures (linked, or read from `dir` and embedded), the
    /// paper's result, our measurements and tables, raw data, and the verdict.
    fn section_html(&self, section: &Section, dir: &Path) -> Result<String, ReportError> {
        let mut out = String::new();
        out.push_str(&format!(
            "<section id=\"{}\">\n<h2>{} — {}</h2>\n",
            section.anchor(),
            escape_html(&section.id),
            escape_html(&section.title)
        ));
        if !section.setup.is_empty() {
            out.push_str("<h3>Setup</h3>\n");
            out.push_str(&markdown::to_html(&section.setup, Flow::Block));
        }
        if !section.figures.is_empty() {
            out.push_str("<h3>Our figures</h3>\n");
            for figure in &section.figures {
                let source = match self.images {
                    Images::Linked => escape_html(&url_path(&figure.path)),
                    Images::Embedded => data_uri(&dir.join(&figure.path))?,
                };
                // The alt text is the caption as written (an attribute shows no markup).
                out.push_str(&format!(
                    "<figure><img src=\"{source}\" alt=\"{alt}\">\
                     <figcaption>{caption}</figcaption></figure>\n",
                    alt = escape_html(&figure.caption),
                    caption = markdown::to_html(&figure.caption, Flow::Inline),
                ));
            }
        }
        if !section.paper_result.is_empty() {
            out.push_str("<h3>Paper's result</h3>\n");
            out.push_str(&markdown::to_html(&section.paper_result, Flow::Block));
        }
        if !section.measurements.is_empty() {
            out.push_str("<h3>Our measurements</h3>\n");
            out.push_str(&section.measurement_table().to_html());
        }
        for table in &section.tables {
            out.push_str(&table.to_html());
        }
        if !section.raw_data.is_empty() {
            out.push_str("<h3>Raw data</h3>\n<ul>\n");
            for path in &section.raw_data {
                out.push_str(&format!(
                    "<li><a href=\"{}\">{}</a></li>\n",
                    escape_html(&url_path(path)),
                    escape_html(&path.display().to_string())
                ));
            }
            out.push_str("</ul>\n");
        }
        let explanation = section.verdict.explanation();
        out.push_str(&format!(
            "<p><span class=\"verdict {}\">Verdict: {}</span>{}</p>\n</section>\n",
            section.verdict.css_class(),
            section.verdict.name(),
            if explanation.is_empty() {
                String::new()
            } else {
                format!(" {}", markdown::to_html(explanation, Flow::Inline))
            }
        ));
        Ok(out)
    }

    /// Checks the report ([`Report::check`]) and writes `dir/report.md` and `dir/index.html`,
    /// creating `dir` if needed. Figures and raw data must already be in `dir`.
    pub fn write(&self, dir: impl AsRef<Path>) -> Result<ReportFiles, ReportError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|source| ReportError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        self.check(dir)?;
        let files = ReportFiles {
            markdown: dir.join("report.md"),
            html: dir.join("index.html"),
        };
        let html = self.to_html(dir)?;
        for (path, text) in [(&files.markdown, self.to_markdown()), (&files.html, html)] {
            std::fs::write(path, text).map_err(|source| ReportError::Io {
                path: path.clone(),
                source,
            })?;
        }
        Ok(files)
    }
}

/// A section's `claims` and `causes` cells of the summary: empty when not counted.
fn claim_cells(section: &Section) -> [String; 2] {
    [
        section
            .claim_counts
            .map_or(String::new(), |counts| counts.to_string()),
        cause_summary(&section.causes),
    ]
}

/// A relative path as a URL path: `/` separators, characters outside the unreserved set
/// percent-encoded.
fn url_path(path: &Path) -> String {
    let mut out = String::new();
    for (index, component) in path.components().enumerate() {
        if index > 0 {
            out.push('/');
        }
        for byte in component.as_os_str().to_string_lossy().bytes() {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                out.push(byte as char);
            } else {
                out.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    out
}

fn data_uri(path: &Path) -> Result<String, ReportError> {
    let bytes = std::fs::read(path).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mime = match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("svg") => "image/svg+xml",
        Some("jpg") | Some("jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        _ => "image/png",
    };
    Ok(format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_and_url_paths_are_safe() {
        assert_eq!(anchor("e000-af-tcp"), "e000-af-tcp");
        assert_eq!(anchor("E002 grid/β"), "e002-grid--");
        assert_eq!(anchor(""), "section");
        assert_eq!(
            url_path(Path::new("e002 grid/fig (1)&.png")),
            "e002%20grid/fig%20%281%29%26.png"
        );
    }

    #[test]
    fn verdict_text() {
        assert_eq!(Verdict::Holds.to_string(), "holds");
        assert_eq!(
            Verdict::Differs("slower".into()).to_string(),
            "differs: slower"
        );
        assert_eq!(Verdict::NotRun("no ns-2".into()).name(), "not run");
    }

    #[test]
    fn causes_are_grouped_in_first_seen_order() {
        let causes = [
            "paper-network-not-modelled",
            "noise",
            "paper-network-not-modelled",
        ];
        let causes: Vec<String> = causes.map(String::from).to_vec();
        assert_eq!(
            cause_summary(&causes),
            "paper-network-not-modelled ×2, noise"
        );
        assert_eq!(cause_summary(&[]), "");
    }

    /// A summary with counts and causes, one section counted without causes, one not counted.
    fn counted_report() -> Report {
        Report::new("r")
            .section(
                Section::new("e001-a", "first")
                    .claim_counts(5, 1, 2)
                    .causes(["model", "noise", "model"].map(String::from).to_vec())
                    .verdict(Verdict::Differs("one claim".into())),
            )
            .section(
                Section::new("e002-b", "second")
                    .claim_counts(3, 0, 0)
                    .verdict(Verdict::Holds),
            )
            .section(Section::new("e003-c", "third"))
    }

    #[test]
    fn summary_markdown_has_counts_and_causes() {
        let md = counted_report().to_markdown();
        for line in [
            "| experiment | title | verdict | held / differ / inconclusive | causes |",
            "| [e001-a](#e001-a) | first | differs | 5 / 1 / 2 | model ×2, noise |",
            "| [e002-b](#e002-b) | second | holds | 3 / 0 / 0 |  |",
            "| [e003-c](#e003-c) | third | not run |  |  |",
        ] {
            assert!(md.contains(line), "no {line:?} in:\n{md}");
        }
    }

    #[test]
    fn summary_html_has_counts_and_causes() {
        let html = counted_report().to_html(Path::new(".")).unwrap();
        for text in [
            "<th>verdict</th><th>held / differ / inconclusive</th><th>causes</th></tr>",
            "differs</span></td><td>5 / 1 / 2</td><td>model ×2, noise</td></tr>",
            "holds</span></td><td>3 / 0 / 0</td><td></td></tr>",
            "not run</span></td><td></td><td></td></tr>",
        ] {
            assert!(html.contains(text), "no {text:?} in:\n{html}");
        }
    }

    #[test]
    fn a_summary_without_counts_keeps_three_columns() {
        let report = Report::new("r").section(Section::new("e", "t").verdict(Verdict::Holds));
        let md = report.to_markdown();
        assert!(md.contains("| experiment | title | verdict |\n"), "{md}");
        let html = report.to_html(Path::new(".")).unwrap();
        assert!(
            html.contains("<th>experiment</th><th>title</th><th>verdict</th></tr>"),
            "{html}"
        );
    }

    #[test]
    fn html_free_text_is_markdown_with_raw_html_escaped() {
        let report = Report::new("r")
            .intro("The claim **holds** here.\n\nSecond <script>alert(1)</script>.")
            .section(
                Section::new("e", "t")
                    .setup("Scenario `scenarios/e.toml`.")
                    .figure("e/rate.png", "Rate of `a` <b>x</b>")
                    .paper_result("*Nearly* 25 s.")
                    .verdict(Verdict::Differs("ours **37.8** s, see `tfrc sim`".into())),
            );
        let html = report.to_html(Path::new(".")).unwrap();
        for text in [
            "<p>The claim <strong>holds</strong> here.</p>",
            "<p>Second &lt;script&gt;alert(1)&lt;/script&gt;.</p>",
            "<p>Scenario <code>scenarios/e.toml</code>.</p>",
            "<p><em>Nearly</em> 25 s.</p>",
            "alt=\"Rate of `a` &lt;b&gt;x&lt;/b&gt;\"",
            "<figcaption>Rate of <code>a</code> &lt;b&gt;x&lt;/b&gt;</figcaption>",
            "Verdict: differs</span> ours <strong>37.8</strong> s, see <code>tfrc sim</code></p>",
        ] {
            assert!(html.contains(text), "no {text:?} in:\n{html}");
        }
        assert!(!html.contains("<script"), "{html}");
    }

    #[test]
    fn format_value_handles_undefined() {
        assert_eq!(format_value(Some(0.8512), 2), "0.85");
        assert_eq!(format_value(None, 2), "n/a");
        assert_eq!(format_value(Some(f64::NAN), 2), "n/a");
    }
}
