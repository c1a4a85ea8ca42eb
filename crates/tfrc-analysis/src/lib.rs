//! Analysis of TFRC runs: what turns the output of `tfrc sim`, the testbed and ns-2 into the
//! papers' numbers, figures and a report.
//!
//! - [`run`]: loads a run directory (`flows.csv`, `state.csv`, `links.csv`, `summary.json`;
//!   `docs/output-format.md`) into typed rows, with errors that name the file and line. Every
//!   source writes the same schema, so everything below works on any of them.
//! - [`metrics`]: the metrics of `EXPERIMENTS.md` as pure functions on slices — throughput,
//!   goodput, cumulative mean p, Jain index, CoV, burstiness, receiving ratio, T2/T1,
//!   utilization, convergence and recovery time. Undefined results are `None`, never NaN.
//!   `docs/metrics.md` states each definition as implemented.
//! - [`measure`]: those metrics applied to a loaded run (per-flow goodput, receiving ratio,
//!   mean p and RTT, burstiness; Jain index, bottleneck utilization; convergence after each
//!   arrival, recovery after a disturbance), recomputed from the CSV files so that every source
//!   is measured alike.
//! - [`plot`]: figures in the papers' forms, PNG or SVG: series over time per flow (overlaying
//!   several sources such as ours and ns-2's), one line per group on a linear or log axis,
//!   grouped bar charts, with dotted reference lines for the paper's values. Text uses an
//!   embedded font (DejaVu Sans, `assets/fonts`), so no system font or fontconfig is needed.
//! - [`table`]: Markdown/HTML tables, and paper 002's Table I (`p_N / p_1`).
//! - [`report`]: the reproduction report, `report.md` and a self-contained `index.html`, one
//!   section per experiment with setup, figures, the paper's result, measured numbers and a
//!   verdict; the summary counts each experiment's claims and lists their causes.
//! - [`markdown`]: the report's free text (Markdown) rendered as HTML for `index.html`, raw
//!   HTML escaped.
//!
//! # Example
//! ```no_run
//! use tfrc_analysis::{metrics, plot, run::{Direction, Run}};
//!
//! let ours = Run::load("out/e000-const-bw")?;
//! let ns2 = Run::load("out/e000-const-bw-ns2")?;
//! let goodputs: Vec<f64> = ours.summary.flows.iter().filter_map(|f| f.goodput_bps).collect();
//! println!("Jain index: {:?}", metrics::jain_index(&goodputs));
//! plot::throughput_over_time(
//!     "e000-const-bw: throughput",
//!     &[plot::Source { name: "ours", run: &ours }, plot::Source { name: "ns-2", run: &ns2 }],
//!     &["a"],
//!     &[Direction::Sent, Direction::Received],
//! )
//! .draw("report/e000-const-bw/throughput.svg")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod markdown;
pub mod measure;
pub mod metrics;
pub mod plot;
pub mod report;
pub mod run;
pub mod table;
