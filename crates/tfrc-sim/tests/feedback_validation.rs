//! The sender's feedback validation (receipt proof, loss intervals with their proofs, p against
//! the proven intervals, hidden-loss and replay checks, the X_recv cap;
//! `tfrc_proto::Sender::handle_packet`) never refuses an honest receiver: every paper scenario,
//! over its first and last sweep variants, runs with no TFRC feedback refused and no lie found,
//! X_recv capped for at most a few feedbacks and p seldom raised.

use std::path::Path;
use std::time::Duration;

use tfrc_scenario::Scenario;
use tfrc_sim::simulation::Simulation;

/// Longest stretch simulated per variant: enough for slow start, losses and steady state.
const MAX_DURATION: Duration = Duration::from_secs(60);

#[test]
fn honest_receivers_of_every_paper_scenario_are_never_refused() {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&directory)
        .expect("scenarios/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == "toml")
                && path.file_name().is_some_and(|n| n != "claims.toml")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let (mut flows, mut feedbacks, mut capped, mut unconfirmed, mut lossy) = (0u64, 0, 0, 0, 0u64);
    let mut raised = 0u64;
    for file in &files {
        let scenario = Scenario::from_path(file).expect("valid scenario");
        let variants = scenario.expand().expect("expands");
        let picked = [variants.first(), variants.last()];
        for variant in picked.into_iter().flatten() {
            let mut variant = variant.clone();
            variant.duration = variant.duration.min(MAX_DURATION);
            let mut simulation = Simulation::new(&variant, None).expect("builds");
            let end = simulation.end();
            simulation.run_until(end).expect("runs");
            let senders = simulation.tfrc_sender_stats();
            let summary = simulation.finish().expect("finishes");
            for (name, stats) in senders {
                let refused = (
                    stats.unproven,
                    stats.hidden_loss,
                    stats.replayed,
                    stats.foreign,
                    stats.malformed,
                    stats.false_intervals,
                    stats.under_reported,
                    stats.lies,
                );
                assert_eq!(
                    refused,
                    (0, 0, 0, 0, 0, 0, 0, 0),
                    "{} flow {name}: {stats:?}",
                    file.display()
                );
                flows += 1;
                feedbacks += stats.feedbacks;
                capped += stats.x_recv_capped;
                raised += stats.p_raised;
                unconfirmed += stats.unconfirmed;
                let flow = summary.flows.iter().find(|flow| flow.name == name);
                lossy += u64::from(flow.and_then(|flow| flow.mean_p).is_some_and(|p| p > 0.0));
            }
        }
    }
    println!(
        "{} files, {flows} TFRC flows ({lossy} with losses), {feedbacks} feedbacks accepted, \
         {capped} with X_recv capped, {unconfirmed} unconfirmed (p = 0 above an undetected loss), \
         {raised} with p raised to the sender's reading of the loss intervals",
        files.len()
    );
    assert!(
        flows >= 20 && lossy >= 10,
        "{flows} flows, {lossy} with losses"
    );
    // Feedback above a loss not yet detected waits for the next: rare.
    assert!(
        unconfirmed * 100 <= feedbacks,
        "{unconfirmed} of {feedbacks} unconfirmed"
    );
    // A cap that fires on honest feedback is a cap set too low: at most 1 in 1000.
    assert!(capped * 1000 <= feedbacks, "{capped} of {feedbacks} capped");
    // The sender's reading of honest intervals is the receiver's but for outages and bursts.
    assert!(
        raised * 1000 <= feedbacks,
        "{raised} of {feedbacks} with p raised"
    );
}
