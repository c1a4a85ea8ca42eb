//! Shortest paths (fewest hops) over the scenario's links, as ns-2's static routing computes
//! them. Used to find a flow's first link, its base RTT (for `NumFeedback_`) and the
//! bottleneck its data crosses.

use std::collections::{HashMap, VecDeque};

use tfrc_scenario::Scenario;

/// The scenario's nodes and which nodes each link joins.
#[derive(Debug, Clone)]
pub(crate) struct Topology {
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// For each node, its neighbours in the order of the links.
    neighbours: Vec<Vec<usize>>,
}

impl Topology {
    pub(crate) fn new(scenario: &Scenario) -> Topology {
        let names: Vec<String> = scenario.nodes().into_iter().map(str::to_owned).collect();
        let index: HashMap<String, usize> = names
            .iter()
            .enumerate()
            .map(|(position, name)| (name.clone(), position))
            .collect();
        let mut neighbours = vec![Vec::new(); names.len()];
        for link in &scenario.links {
            let (Some(&a), Some(&b)) = (index.get(&link.between[0]), index.get(&link.between[1]))
            else {
                continue;
            };
            neighbours[a].push(b);
            neighbours[b].push(a);
        }
        Topology {
            names,
            index,
            neighbours,
        }
    }

    /// The node names, in the order of [`Scenario::nodes`] (their ns-2 node ids).
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// The id of a node name.
    pub(crate) fn id(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The nodes of a shortest path from `from` to `to`, both included; `None` if unreachable.
    pub(crate) fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut previous: Vec<Option<usize>> = vec![None; self.names.len()];
        let mut seen = vec![false; self.names.len()];
        let mut queue = VecDeque::from([from]);
        seen[from] = true;
        while let Some(node) = queue.pop_front() {
            if node == to {
                let mut path = vec![to];
                let mut current = to;
                while let Some(before) = previous[current] {
                    path.push(before);
                    current = before;
                }
                path.reverse();
                return Some(path);
            }
            for &next in &self.neighbours[node] {
                if !seen[next] {
                    seen[next] = true;
                    previous[next] = Some(node);
                    queue.push_back(next);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_takes_fewest_hops() {
        let scenario = Scenario::from_str_named(
            r#"
            name = "t"
            duration = "1s"
            [[link]]
            between = ["a", "b"]
            rate = "1Mbps"
            delay = "1ms"
            [[link]]
            between = ["b", "c"]
            rate = "1Mbps"
            delay = "1ms"
            [[link]]
            between = ["a", "c"]
            rate = "1Mbps"
            delay = "1ms"
            [[link]]
            between = ["c", "d"]
            rate = "1Mbps"
            delay = "1ms"
            "#,
            "t.toml",
        )
        .expect("valid scenario");
        let topology = Topology::new(&scenario);
        let id = |name: &str| topology.id(name).expect("node exists");
        assert_eq!(
            topology.path(id("a"), id("d")),
            Some(vec![id("a"), id("c"), id("d")])
        );
        assert_eq!(topology.path(id("d"), id("d")), Some(vec![id("d")]));
        assert_eq!(
            topology.path(id("b"), id("d")),
            Some(vec![id("b"), id("c"), id("d")])
        );
    }
}
