//! Figures are written, are valid PNG / SVG, and really contain the plotted data.

use std::path::{Path, PathBuf};

use tfrc_analysis::plot::{self, BarChart, Dash, LinePlot, LineStyle, PlotError, Source};
use tfrc_analysis::run::{Direction, Run};

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

fn fixture_run() -> Run {
    Run::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/run-small")).unwrap()
}

/// The `points` attributes of the SVG's polylines stroked in `colour` (e.g. `#0072B2`), each as
/// a list of (x, y) pixel coordinates.
fn polylines(svg: &str, colour: &str) -> Vec<Vec<(i32, i32)>> {
    svg.lines()
        .filter(|line| {
            line.starts_with("<polyline") && line.contains(&format!("stroke=\"{colour}\""))
        })
        .map(|line| {
            let start = line.find("points=\"").unwrap() + "points=\"".len();
            let end = start + line[start..].find('"').unwrap();
            line[start..end]
                .split_whitespace()
                .map(|pair| {
                    let (x, y) = pair.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

/// The trimmed contents of the SVG's `<text>` elements.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|rest| {
            let start = rest.find('>').unwrap() + 1;
            let end = rest.find("</text>").unwrap();
            rest[start..end].trim().to_string()
        })
        .collect()
}

fn assert_has_text(svg: &str, text: &str) {
    let all = texts(svg);
    assert!(all.iter().any(|t| t == text), "no text {text:?} in {all:?}");
}

fn both_formats(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("{name}.png")),
        dir.join(format!("{name}.svg")),
    )
}

fn assert_png(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    assert!(
        bytes.len() > 1000,
        "{} is only {} bytes",
        path.display(),
        bytes.len()
    );
    assert_eq!(
        &bytes[..8],
        PNG_SIGNATURE,
        "{} is not a PNG",
        path.display()
    );
}

fn read_svg(path: &Path) -> String {
    let svg = std::fs::read_to_string(path).unwrap();
    assert!(
        svg.starts_with("<svg"),
        "{} has no SVG root",
        path.display()
    );
    assert!(
        svg.trim_end().ends_with("</svg>"),
        "{} is not closed",
        path.display()
    );
    svg
}

#[test]
fn a_line_appears_with_all_its_points() {
    let dir = tempfile::tempdir().unwrap();
    let points: Vec<(f64, f64)> = (0..7).map(|i| (i as f64, (i * i) as f64)).collect();
    let figure = LinePlot::new("Squares", "time (s)", "value (units)").line(
        "squares",
        points,
        LineStyle::default(),
    );
    let (png, svg) = both_formats(dir.path(), "squares");
    figure.draw(&png).unwrap();
    figure.draw(&svg).unwrap();
    assert_png(&png);
    let svg = read_svg(&svg);
    // The data line (the legend's sample is made of 2-point segments).
    let lines: Vec<_> = polylines(&svg, "#0072B2")
        .into_iter()
        .filter(|l| l.len() > 2)
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(line.len(), 7);
    // x grows left to right, y = x² grows upwards (smaller pixel y).
    assert!(
        line.windows(2).all(|w| w[1].0 > w[0].0 && w[1].1 < w[0].1),
        "{line:?}"
    );
    for text in ["Squares", "time (s)", "value (units)", "squares"] {
        assert_has_text(&svg, text);
    }
}

#[test]
fn throughput_overlay_has_a_line_and_legend_per_source_flow_and_direction() {
    let run = fixture_run();
    let sources = [
        Source {
            name: "ours",
            run: &run,
        },
        Source {
            name: "ns-2",
            run: &run,
        },
    ];
    let figure = plot::throughput_over_time(
        "Throughput",
        &sources,
        &[],
        &[Direction::Sent, Direction::Received],
    );
    assert_eq!(figure.lines.len(), 8);
    assert_eq!(figure.lines[0].label, "ours: a sender");
    assert_eq!(figure.lines[0].style.dash, Dash::Dashed);
    assert_eq!(figure.lines[1].label, "ours: a receiver");
    assert_eq!(figure.lines[1].style.dash, Dash::Solid);
    assert_eq!(figure.lines[7].label, "ns-2: b receiver");
    // Each source × flow pair has its own colour.
    assert_ne!(figure.lines[1].style.color, figure.lines[5].style.color);
    assert_eq!(
        figure.lines[1].points,
        vec![(1.0, 384.0), (2.0, 496.0), (3.0, 500.0)]
    );

    let dir = tempfile::tempdir().unwrap();
    let (png, svg) = both_formats(dir.path(), "throughput");
    figure.draw(&png).unwrap();
    figure.draw(&svg).unwrap();
    assert_png(&png);
    let svg = read_svg(&svg);
    for line in &figure.lines {
        assert_has_text(&svg, &line.label);
    }
    // The receiver line of ours/a (colour 0) is solid: one polyline of 3 points.
    assert!(polylines(&svg, "#0072B2").iter().any(|l| l.len() == 3));
}

#[test]
fn single_source_rtt_plot_has_plain_labels() {
    let run = fixture_run();
    let figure = plot::rtt_over_time(
        "RTT",
        &[Source {
            name: "ours",
            run: &run,
        }],
        &["a"],
    );
    assert_eq!(figure.lines.len(), 1);
    assert_eq!(figure.lines[0].label, "a");
    assert_eq!(figure.lines[0].points, vec![(2.0, 0.062), (3.0, 0.064)]);
    assert_eq!(figure.y_label, "RTT estimate (s)");
}

#[test]
fn log_axis_drops_non_positive_x_and_sorts_groups() {
    let groups = vec![
        (
            "β = 1".to_string(),
            vec![(0.01, 2.0), (0.0001, 4.0), (0.0, 9.0), (0.1, 1.0)],
        ),
        ("β = 3".to_string(), vec![(0.0001, 4.5), (0.1, 1.5)]),
    ];
    let figure =
        plot::grouped_xy("Goodput vs loss", "loss rate", "goodput (Mb/s)", &groups).log_x();
    assert_eq!(figure.lines[0].points[0], (0.0, 9.0));
    let dir = tempfile::tempdir().unwrap();
    let (png, svg) = both_formats(dir.path(), "loss");
    figure.draw(&png).unwrap();
    figure.draw(&svg).unwrap();
    assert_png(&png);
    let svg = read_svg(&svg);
    // The x = 0 point is left out of the line: 3 of 4 points drawn.
    let first = polylines(&svg, "#0072B2");
    assert!(first.iter().any(|l| l.len() == 3), "{first:?}");
    // Markers: one circle per drawn point, plus the legend's.
    let circles = svg.matches("<circle").count();
    assert!(circles >= 5, "{circles} circles");
    // Equal decades are equally wide on a log axis.
    let line = first.iter().find(|l| l.len() == 3).unwrap();
    let (x_1e4, x_1e2, x_1e1) = (line[0].0, line[1].0, line[2].0);
    assert!(
        ((x_1e2 - x_1e4) - 2 * (x_1e1 - x_1e2)).abs() <= 2,
        "{line:?}"
    );
}

#[test]
fn bar_chart_writes_values_categories_and_missing_bars() {
    let figure = BarChart::new(
        "Goodput per scenario",
        "goodput (kb/s)",
        vec!["single".into(), "reverse & co".into()],
    )
    .series("TCP", vec![Some(250.0), Some(120.5)])
    .series("TFRC", vec![Some(230.25), None]);
    let dir = tempfile::tempdir().unwrap();
    let (png, svg) = both_formats(dir.path(), "bars");
    figure.draw(&png).unwrap();
    figure.draw(&svg).unwrap();
    assert_png(&png);
    let svg = read_svg(&svg);
    for text in [
        "250.00",
        "120.50",
        "230.25",
        "n/a",
        "single",
        "reverse &amp; co",
        "TCP",
        "TFRC",
    ] {
        assert_has_text(&svg, text);
    }
    // Three filled bars in the two series colours (legend boxes add one each).
    let bars = svg.matches("fill=\"#0072B2\"").count() + svg.matches("fill=\"#D55E00\"").count();
    assert_eq!(bars, 3 + 2, "{svg}");
}

#[test]
fn bad_requests_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let empty =
        LinePlot::new("Nothing", "x", "y").line("nan", vec![(f64::NAN, 1.0)], LineStyle::default());
    let error = empty.draw(dir.path().join("empty.svg")).unwrap_err();
    assert!(matches!(error, PlotError::NoData { .. }), "{error}");
    assert!(error.to_string().contains("empty.svg"), "{error}");

    let figure = LinePlot::new("t", "x", "y").line("l", vec![(1.0, 1.0)], LineStyle::default());
    let error = figure.draw(dir.path().join("figure.jpg")).unwrap_err();
    assert!(
        matches!(error, PlotError::UnsupportedFormat { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("figure.jpg"), "{error}");

    // Only non-positive x on a log axis: nothing to draw.
    let log = LinePlot::new("t", "x", "y")
        .line("l", vec![(0.0, 1.0)], LineStyle::default())
        .log_x();
    assert!(matches!(
        log.draw(dir.path().join("log.png")),
        Err(PlotError::NoData { .. })
    ));

    // A parent that is a file cannot be created.
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let error = figure.draw(dir.path().join("file/figure.png")).unwrap_err();
    assert!(matches!(error, PlotError::Drawing { .. }), "{error}");
}

#[test]
fn reference_line_spans_the_x_range_and_widens_y() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("friendliness.svg");
    let groups = vec![(
        "β = 1".to_string(),
        vec![(4.0, 0.9), (16.0, 0.88), (64.0, 0.86)],
    )];
    let figure = plot::grouped_xy("T2/T1", "number of flows", "T2/T1", &groups)
        .reference("paper, β = 1", 0.85)
        .reference("ignored", f64::NAN);
    figure.draw(&path).unwrap();
    let svg = read_svg(&path);
    assert_has_text(&svg, "paper, β = 1");
    assert!(!texts(&svg).iter().any(|t| t == "ignored"));
    // Dotted black: many short 2-point polylines; together they span the data's x range.
    let dots = polylines(&svg, "#000000");
    let data = polylines(&svg, "#0072B2")
        .into_iter()
        .find(|l| l.len() == 3)
        .unwrap();
    let horizontal: Vec<_> = dots
        .iter()
        .filter(|l| l.len() == 2 && l[0].1 == l[1].1 && l[0].0 < l[1].0)
        .collect();
    // The reference line is the row with the most segments (axis ticks are one per row).
    let row = |y: i32| horizontal.iter().filter(|l| l[0].1 == y).count();
    let reference_row = horizontal
        .iter()
        .map(|l| l[0].1)
        .max_by_key(|&y| row(y))
        .unwrap();
    let dotted: Vec<_> = horizontal
        .iter()
        .filter(|l| l[0].1 == reference_row)
        .collect();
    assert!(dotted.len() > 20, "{} dots", dotted.len());
    let left = dotted.iter().map(|l| l[0].0).min().unwrap();
    let right = dotted.iter().map(|l| l[1].0).max().unwrap();
    assert!(
        left <= data[0].0 + 2 && right >= data[2].0 - 8,
        "{left}..{right} vs {data:?}"
    );
    // y = 0.85 is below every data point: lower on the image (larger pixel y).
    let reference_y = dotted.iter().map(|l| l[0].1).max().unwrap();
    assert!(
        data.iter().all(|p| p.1 < reference_y),
        "{data:?} vs {reference_y}"
    );
}

#[test]
fn single_point_and_nested_output_directory_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/one.svg");
    LinePlot::new("One point", "x", "y")
        .line(
            "p",
            vec![(3.0, 0.0)],
            LineStyle {
                markers: true,
                ..Default::default()
            },
        )
        .draw(&path)
        .unwrap();
    let svg = read_svg(&path);
    assert!(svg.contains("<circle"));
}

/// A band is drawn as one filled polygon in the line's colour, spanning every band entry, and
/// the y axis makes room for it.
#[test]
fn a_band_is_shaded_around_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let groups = vec![(
        "mean over replications".to_string(),
        (0..5)
            .map(|i| {
                let y = f64::from(i);
                (f64::from(i), y, y - 1.0, y + 3.0)
            })
            .collect::<Vec<_>>(),
    )];
    let figure = plot::grouped_xy_with_bands("Banded", "n", "value", &groups);
    assert_eq!(figure.lines[0].band.len(), 5);
    let (png, svg) = both_formats(dir.path(), "banded");
    figure.draw(&png).unwrap();
    figure.draw(&svg).unwrap();
    assert_png(&png);
    let svg = read_svg(&svg);
    let polygons: Vec<&str> = svg
        .lines()
        .filter(|line| line.starts_with("<polygon") && line.contains("#0072B2"))
        .collect();
    assert_eq!(polygons.len(), 1, "{polygons:?}");
    // Upper edge forward and lower edge back: 10 corners.
    let corners = polygons[0]
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .split_whitespace()
        .count();
    assert_eq!(corners, 10);
    // The band's top (7) is on the axis: a tick label at or above 7 exists.
    assert!(texts(&svg)
        .iter()
        .filter_map(|t| t.parse::<f64>().ok())
        .any(|v| v >= 7.0));
}
