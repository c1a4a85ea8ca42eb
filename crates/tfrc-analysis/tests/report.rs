//! The report writer: both files hold every section, number and verdict; HTML is escaped;
//! figures are linked or embedded; bad paths are clear errors.

use std::path::Path;

use tfrc_analysis::plot::{LinePlot, LineStyle};
use tfrc_analysis::report::{Images, Report, ReportError, Section, Verdict};
use tfrc_analysis::table::{loss_rate_ratio_table, LossRateEntry};

/// A report over a temporary directory holding one PNG figure and one raw CSV file.
fn sample_report(dir: &Path) -> Report {
    LinePlot::new("Throughput", "time (s)", "throughput (kb/s)")
        .line(
            "a receiver",
            vec![(1.0, 900.0), (2.0, 950.0)],
            LineStyle::default(),
        )
        .draw(dir.join("e000-loss/throughput.png"))
        .unwrap();
    std::fs::create_dir_all(dir.join("e000-loss/run")).unwrap();
    std::fs::write(dir.join("e000-loss/run/flows.csv"), "time_s\n").unwrap();
    let table = loss_rate_ratio_table(
        "Table I: p_N/p_1",
        &[
            LossRateEntry {
                row: "2 flows, 250 ms".into(),
                feedbacks_per_rtt: 1,
                p: 0.02,
            },
            LossRateEntry {
                row: "2 flows, 250 ms".into(),
                feedbacks_per_rtt: 4,
                p: 0.0214,
            },
        ],
        2,
    );
    Report::new("TFRC <reproduction> & more")
        .intro("First paragraph.\n\nSecond paragraph.")
        .section(
            Section::new("e000-loss", "Loss period")
                .setup("RTT 250 ms, 1 % loss during 30–90 s.")
                .figure("e000-loss/throughput.png", "Throughput, sender & receiver")
                .paper_result("Back to the normal rate about 25 s after the loss period.")
                .measurement("recovery time (s)", "≈ 25", "23.0")
                .raw_data("e000-loss/run/flows.csv")
                .verdict(Verdict::Holds),
        )
        .section(
            Section::new("e002-grid", "Feedbacks per RTT")
                .paper_result("p_N / p_1 mostly 0.84–1.14.")
                .measurement("p_4/p_1 | 2 flows", "0.84–1.14", "1.07")
                .table(table)
                .verdict(Verdict::Differs("ratio <b>above</b> the range".into())),
        )
        .section(
            Section::new("e002-geo", "GEO link")
                .verdict(Verdict::NotRun("needs the link emulator".into())),
        )
}

#[test]
fn markdown_has_every_section_number_and_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let files = sample_report(dir.path()).write(dir.path()).unwrap();
    assert_eq!(files.markdown, dir.path().join("report.md"));
    let md = std::fs::read_to_string(&files.markdown).unwrap();
    assert!(md.starts_with("# TFRC <reproduction> & more\n"), "{md}");
    for text in [
        "## e000-loss — Loss period",
        "## e002-grid — Feedbacks per RTT",
        "## e002-geo — GEO link",
        "### Setup\n\nRTT 250 ms, 1 % loss during 30–90 s.",
        "![Throughput, sender & receiver](e000-loss/throughput.png)",
        "### Paper's result\n\nBack to the normal rate",
        "| recovery time (s) | ≈ 25 | 23.0 |",
        // A `|` inside a cell is escaped.
        "| p_4/p_1 \\| 2 flows | 0.84–1.14 | 1.07 |",
        "| 2 flows, 250 ms | 1.07 |",
        "- [e000-loss/run/flows.csv](e000-loss/run/flows.csv)",
        "**Verdict: holds**",
        "**Verdict: differs** — ratio <b>above</b> the range",
        "**Verdict: not run** — needs the link emulator",
        "| [e002-geo](#e002-geo) | GEO link | not run |",
    ] {
        assert!(md.contains(text), "report.md lacks {text:?}:\n{md}");
    }
}

#[test]
fn html_is_escaped_and_links_figures_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let files = sample_report(dir.path()).write(dir.path()).unwrap();
    let html = std::fs::read_to_string(&files.html).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<style>"), "CSS is inline");
    assert!(!html.contains("<script"), "no script needed");
    assert!(!html.contains("<link "), "no external stylesheet");
    for text in [
        "<title>TFRC &lt;reproduction&gt; &amp; more</title>",
        "<p>First paragraph.</p>\n<p>Second paragraph.</p>",
        "<section id=\"e000-loss\">",
        "<img src=\"e000-loss/throughput.png\" alt=\"Throughput, sender &amp; receiver\">",
        "<td>recovery time (s)</td><td>≈ 25</td><td>23.0</td>",
        "<caption>Table I: p_N/p_1</caption>",
        "<td>2 flows, 250 ms</td><td>1.07</td>",
        "<a href=\"e000-loss/run/flows.csv\">",
        "Verdict: differs</span> ratio &lt;b&gt;above&lt;/b&gt; the range",
        "Verdict: not run</span> needs the link emulator",
        "<a href=\"#e002-grid\">e002-grid</a>",
    ] {
        assert!(html.contains(text), "index.html lacks {text:?}:\n{html}");
    }
    assert!(!html.contains("<b>above"), "unescaped text in {html}");
    assert_eq!(html.matches("<section").count(), 3);
    assert_eq!(html.matches("</section>").count(), 3);
    assert_eq!(html.matches("class=\"verdict holds\"").count(), 2);
}

#[test]
fn embedded_images_make_a_single_file() {
    let dir = tempfile::tempdir().unwrap();
    let report = sample_report(dir.path()).images(Images::Embedded);
    let files = report.write(dir.path()).unwrap();
    let html = std::fs::read_to_string(&files.html).unwrap();
    // base64 of the PNG signature starts with iVBORw0KGgo.
    assert!(
        html.contains("<img src=\"data:image/png;base64,iVBORw0KGgo"),
        "{html}"
    );
    assert!(!html.contains("src=\"e000-loss/throughput.png\""));
}

#[test]
fn missing_or_outside_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Report::new("r").section(Section::new("x", "t").figure("nope.svg", "c"));
    let error = missing.write(dir.path()).unwrap_err();
    assert!(matches!(error, ReportError::MissingFile { .. }), "{error}");
    assert!(error.to_string().contains("nope.svg"), "{error}");
    assert!(error.to_string().contains("section `x`"), "{error}");
    assert!(
        !dir.path().join("index.html").exists(),
        "nothing written on error"
    );

    for path in ["../up.png", "/etc/passwd"] {
        let outside = Report::new("r").section(Section::new("y", "t").raw_data(path));
        let error = outside.write(dir.path()).unwrap_err();
        assert!(
            matches!(error, ReportError::PathOutsideReport { .. }),
            "{error}"
        );
    }

    let duplicate = Report::new("r")
        .section(Section::new("same", "a"))
        .section(Section::new("same", "b"));
    assert!(matches!(
        duplicate.write(dir.path()),
        Err(ReportError::DuplicateSection(id)) if id == "same"
    ));
}

#[test]
fn an_empty_report_is_still_a_page() {
    let dir = tempfile::tempdir().unwrap();
    let files = Report::new("Nothing yet")
        .write(dir.path().join("new"))
        .unwrap();
    let html = std::fs::read_to_string(files.html).unwrap();
    assert!(html.contains("<h1>Nothing yet</h1>") && html.trim_end().ends_with("</html>"));
    let md = std::fs::read_to_string(files.markdown).unwrap();
    assert_eq!(md, "# Nothing yet\n\n");
}
