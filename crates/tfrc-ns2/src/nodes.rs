//! The ns-2 node ids of a scenario's nodes. Routes come from [`Scenario::route`], the one route
//! search of the toolkit (ns-2 computes its own static routes: fewest hops, like ours).

use std::collections::HashMap;

use tfrc_scenario::Scenario;

/// The scenario's node names and their ns-2 node ids (positions in [`Scenario::nodes`]).
#[derive(Debug, Clone)]
pub(crate) struct NodeIds {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl NodeIds {
    pub(crate) fn new(scenario: &Scenario) -> NodeIds {
        let names: Vec<String> = scenario.nodes().into_iter().map(str::to_owned).collect();
        let index: HashMap<String, usize> = names
            .iter()
            .enumerate()
            .map(|(position, name)| (name.clone(), position))
            .collect();
        NodeIds { names, index }
    }

    /// The node names, in the order of [`Scenario::nodes`] (their ns-2 node ids).
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// The id of a node name.
    pub(crate) fn id(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_order_of_first_appearance() {
        let scenario = Scenario::from_str_named(
            r#"
            name = "t"
            duration = "1s"
            [[link]]
            between = ["b", "a"]
            rate = "1Mbps"
            delay = "1ms"
            [[link]]
            between = ["a", "c"]
            rate = "1Mbps"
            delay = "1ms"
            "#,
            "t.toml",
        )
        .expect("valid scenario");
        let ids = NodeIds::new(&scenario);
        assert_eq!(ids.names(), ["b", "a", "c"]);
        assert_eq!(ids.id("c"), Some(2));
        assert_eq!(ids.id("nowhere"), None);
    }
}
