//! Draws one figure of each kind from the test fixture run (and made-up grouped data), as PNG
//! and SVG, into the directory given as the first argument (default `plot-gallery`).
//!
//! ```sh
//! cargo run -p tfrc-analysis --example plot_gallery -- /tmp/gallery
//! ```

use std::path::PathBuf;

use tfrc_analysis::plot::{self, BarChart, Source};
use tfrc_analysis::run::{Direction, Run};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "plot-gallery".into()),
    );
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/run-small");
    let run = Run::load(&fixture)?;
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
    let throughput = plot::throughput_over_time(
        "Throughput per flow (fixture)",
        &sources,
        &[],
        &[Direction::Sent, Direction::Received],
    );
    let rtt = plot::rtt_over_time("RTT estimate (fixture)", &sources[..1], &[]);
    let goodput_vs_loss = plot::grouped_xy(
        "Goodput vs wireless loss rate",
        "packet loss rate",
        "goodput (kb/s)",
        &[
            (
                "TFRC".to_string(),
                vec![
                    (1e-4, 4800.0),
                    (1e-3, 3900.0),
                    (1e-2, 1500.0),
                    (1e-1, 200.0),
                ],
            ),
            (
                "β = 1".to_string(),
                vec![
                    (1e-4, 4850.0),
                    (1e-3, 4300.0),
                    (1e-2, 2300.0),
                    (1e-1, 330.0),
                ],
            ),
        ],
    )
    .log_x();
    let friendliness = plot::grouped_xy(
        "TCP-friendliness vs number of flows",
        "number of flows",
        "T2/T1",
        &[
            (
                "β = 1".to_string(),
                vec![
                    (4.0, 0.93),
                    (8.0, 0.9),
                    (16.0, 0.87),
                    (32.0, 0.86),
                    (64.0, 0.85),
                ],
            ),
            (
                "β = 3".to_string(),
                vec![
                    (4.0, 0.8),
                    (8.0, 0.74),
                    (16.0, 0.7),
                    (32.0, 0.69),
                    (64.0, 0.7),
                ],
            ),
        ],
    )
    .reference("paper, β = 1 (about 0.85)", 0.85);
    let bars = BarChart::new(
        "Burstiness index per scenario",
        "burstiness index (std/mean)",
        vec!["single".into(), "reverse".into(), "shared".into()],
    )
    .series("TCP", vec![Some(0.31), Some(0.52), Some(0.44)])
    .series("TFRC", vec![Some(0.28), None, Some(0.47)]);
    for extension in ["png", "svg"] {
        throughput.draw(out.join(format!("throughput.{extension}")))?;
        rtt.draw(out.join(format!("rtt.{extension}")))?;
        goodput_vs_loss.draw(out.join(format!("goodput-vs-loss.{extension}")))?;
        bars.draw(out.join(format!("burstiness.{extension}")))?;
        friendliness.draw(out.join(format!("friendliness.{extension}")))?;
    }
    println!("figures written to {}", out.display());
    Ok(())
}
