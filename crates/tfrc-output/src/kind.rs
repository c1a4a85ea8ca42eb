//! What kind of flow a row or summary is about, as every output names it.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

/// The scenario's flow kind, written as its lowercase name (`tfrc`, `tcp`, `cbr`, `pareto`,
/// `exp-onoff`) in `flows.csv`, `state.csv`, `summary.json` and the Arrow tables (a `utf8`
/// column, as before the kind had a type). The default, `tfrc`, only serves rows built with
/// `Default` (the CSV headers are traced from a default row).
///
/// Read from its name by serde's derive, so that an unknown name is an error naming the known
/// ones ("unknown variant `udp`, expected one of `tfrc`, …"), and so that the Arrow schema
/// traced from the row types sees a fieldless enum (traced as strings, see
/// [`crate::arrow::fields_of`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    /// A TFRC sender and receiver.
    #[default]
    Tfrc,
    /// A TCP sender and sink.
    Tcp,
    /// Constant bit rate over UDP.
    Cbr,
    /// Pareto on/off over UDP.
    Pareto,
    /// Exponential on/off over UDP.
    #[serde(rename = "exp-onoff")]
    ExpOnOff,
}

impl FlowKind {
    /// Every kind, in the order the scenario format lists them.
    pub const ALL: [FlowKind; 5] = [
        FlowKind::Tfrc,
        FlowKind::Tcp,
        FlowKind::Cbr,
        FlowKind::Pareto,
        FlowKind::ExpOnOff,
    ];

    /// The kind's name in the files (and in the scenario's `kind = …`).
    pub fn name(self) -> &'static str {
        match self {
            FlowKind::Tfrc => "tfrc",
            FlowKind::Tcp => "tcp",
            FlowKind::Cbr => "cbr",
            FlowKind::Pareto => "pareto",
            FlowKind::ExpOnOff => "exp-onoff",
        }
    }

    /// Whether flows of this kind are congestion controlled (TFRC, TCP): the flows that share
    /// a bottleneck fairly, whose goodputs enter Jain's index and whose convergence is measured;
    /// the others (CBR, on/off) are open-loop cross traffic.
    pub fn is_congestion_controlled(self) -> bool {
        matches!(self, FlowKind::Tfrc | FlowKind::Tcp)
    }
}

impl fmt::Display for FlowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// Written as its name: a string, so CSV cells, JSON values and Arrow `utf8` columns are what
/// they were when the kind was a `String`.
impl Serialize for FlowKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_tfrc_and_tcp_are_congestion_controlled() {
        for kind in FlowKind::ALL {
            assert_eq!(kind.to_string(), kind.name());
            // Padded as the name would be (`tfrc sim`'s summary table aligns on it).
            assert_eq!(format!("{kind:<9}|"), format!("{:<9}|", kind.name()));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<FlowKind>(&json).unwrap(), kind);
        }
        let controlled: Vec<FlowKind> = FlowKind::ALL
            .into_iter()
            .filter(|kind| kind.is_congestion_controlled())
            .collect();
        assert_eq!(controlled, [FlowKind::Tfrc, FlowKind::Tcp]);
    }

    #[test]
    fn an_unknown_kind_is_rejected_with_the_known_ones() {
        let error = serde_json::from_str::<FlowKind>("\"TFRC\"")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "unknown variant `TFRC`, expected one of `tfrc`, `tcp`, `cbr`, `pareto`, \
                 `exp-onoff`"
            ),
            "{error}"
        );
    }
}
