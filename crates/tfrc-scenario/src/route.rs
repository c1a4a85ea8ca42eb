//! Routes: the one fewest-hop search of the toolkit. The simulator's forwarding tables, the
//! testbed's routes, the ns-2 generator's paths and every base RTT come from [`next_hops`], so
//! they all choose the same path when several have equally few hops.
//!
//! **Which path on a tie.** Routing is static and hop by hop, as ns-2's static routing with unit
//! link costs: for each destination, one tree of fewest-hop paths. The tree is grown breadth
//! first from the destination; a node's next hop is the link direction through which the search
//! first reaches it, taking each reached node's incoming directions in the order they are listed
//! (for a scenario: link by link in file order, each link's forward direction before its
//! reverse, see [`Scenario::link_directions`]). Two routes towards one destination therefore
//! never part once they meet. The route back (for feedback or ACKs) is a route of its own and
//! need not cross the same links on a tie.

use core::hash::Hash;
use core::time::Duration;
use std::collections::{HashMap, VecDeque};

use crate::Scenario;

/// For every node from which `destination` can be reached over the directed `edges`
/// (`(from, to)` pairs), the index in `edges` of the first hop of its fewest-hop route there
/// (ties as the module docs say). The destination itself has no entry.
pub fn next_hops<N: Copy + Eq + Hash>(edges: &[(N, N)], destination: N) -> HashMap<N, usize> {
    let mut incoming: HashMap<N, Vec<usize>> = HashMap::new();
    for (index, &(_, to)) in edges.iter().enumerate() {
        incoming.entry(to).or_default().push(index);
    }
    let mut next_hop = HashMap::new();
    let mut frontier = VecDeque::from([destination]);
    while let Some(node) = frontier.pop_front() {
        for &edge in incoming.get(&node).map(Vec::as_slice).unwrap_or_default() {
            let from = edges[edge].0;
            if from != destination && !next_hop.contains_key(&from) {
                next_hop.insert(from, edge);
                frontier.push_back(from);
            }
        }
    }
    next_hop
}

/// The edges (indices in `edges`) of the fewest-hop route from `from` to `to`, in order: the
/// next hops of [`next_hops`]`(edges, to)` followed from `from`. Empty when `from == to`, `None`
/// when `to` cannot be reached.
pub fn fewest_hops<N: Copy + Eq + Hash>(edges: &[(N, N)], from: N, to: N) -> Option<Vec<usize>> {
    let next_hop = next_hops(edges, to);
    let mut route = Vec::new();
    let mut node = from;
    while node != to {
        let edge = *next_hop.get(&node)?;
        route.push(edge);
        node = edges[edge].1;
    }
    Some(route)
}

/// One link direction crossed by a [`Route`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    /// The link's index in [`Scenario::links`].
    pub link: usize,
    /// `true` for the direction `between[0]` → `between[1]`.
    pub forward: bool,
}

impl Hop {
    /// The direction's index in [`Scenario::link_directions`] (`2 × link`, plus one for the
    /// reverse direction): the numbering the simulator and the ns-2 generator give directions.
    pub fn direction_index(self) -> usize {
        2 * self.link + usize::from(!self.forward)
    }
}

/// The link directions a packet crosses from one node to another, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The directions, first hop first; empty for a route from a node to itself.
    pub hops: Vec<Hop>,
}

/// Why there is no route between two nodes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// No link joins this node.
    #[error("no node named {node}")]
    UnknownNode {
        /// The name asked for.
        node: String,
    },
    /// Both nodes exist, but no chain of links leads from one to the other.
    #[error("no route from {from} to {to}")]
    Unreachable {
        /// Where the route would start.
        from: String,
        /// Where it would end.
        to: String,
    },
}

impl Scenario {
    /// Every link direction as `(from node, to node)`: each link's forward direction, then its
    /// reverse, link by link in file order. A direction's position is its
    /// [`Hop::direction_index`].
    pub fn link_directions(&self) -> Vec<(&str, &str)> {
        self.links
            .iter()
            .flat_map(|link| {
                let [a, b] = &link.between;
                [(a.as_str(), b.as_str()), (b.as_str(), a.as_str())]
            })
            .collect()
    }

    /// The fewest-hop route from node `from` to node `to`, as the simulator forwards packets
    /// (ties: see the [module docs](crate::route)).
    pub fn route(&self, from: &str, to: &str) -> Result<Route, RouteError> {
        let nodes = self.nodes();
        for node in [from, to] {
            if !nodes.contains(&node) {
                return Err(RouteError::UnknownNode {
                    node: node.to_owned(),
                });
            }
        }
        let edges = self.link_directions();
        let indices = fewest_hops(&edges, from, to).ok_or_else(|| RouteError::Unreachable {
            from: from.to_owned(),
            to: to.to_owned(),
        })?;
        let hops = indices
            .into_iter()
            .map(|index| Hop {
                link: index / 2,
                forward: index % 2 == 0,
            })
            .collect();
        Ok(Route { hops })
    }

    /// The base RTT of a route: the propagation delays of its directions plus those of the same
    /// links' other directions (the way back over the same links), with no queueing and no
    /// transmission time.
    pub fn path_base_rtt(&self, route: &Route) -> Duration {
        route
            .hops
            .iter()
            .map(|hop| {
                let link = &self.links[hop.link];
                link.forward.delay + link.reverse.delay
            })
            .sum()
    }

    /// [`Scenario::path_base_rtt`] of the route from `from` to `to`, `None` when there is none.
    pub fn base_rtt(&self, from: &str, to: &str) -> Option<Duration> {
        self.route(from, to)
            .ok()
            .map(|route| self.path_base_rtt(&route))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(links: &[(&str, &str, u32)]) -> Scenario {
        let mut text = String::from("name = \"t\"\nduration = \"1s\"\n");
        for (a, b, delay_ms) in links {
            text.push_str(&format!(
                "[[link]]\nbetween = [\"{a}\", \"{b}\"]\nrate = \"1Mbps\"\ndelay = \"{delay_ms}ms\"\n"
            ));
        }
        Scenario::from_str_named(&text, "t.toml").expect("valid scenario")
    }

    fn hops(route: &Route) -> Vec<(usize, bool)> {
        route
            .hops
            .iter()
            .map(|hop| (hop.link, hop.forward))
            .collect()
    }

    #[test]
    fn fewest_hops_wins_over_link_order() {
        let scenario = scenario(&[("a", "b", 1), ("b", "c", 1), ("a", "c", 1), ("c", "d", 1)]);
        let route = scenario.route("a", "d").unwrap();
        assert_eq!(hops(&route), [(2, true), (3, true)]);
        assert_eq!(scenario.route("d", "d").unwrap().hops, []);
        assert_eq!(
            hops(&scenario.route("d", "b").unwrap()),
            [(3, false), (1, false)]
        );
    }

    /// Two two-hop paths from `s` to `d`: the one through `a` (listed first among the links
    /// that reach `d`) is taken, even though the source's own first link leads to `b`.
    #[test]
    fn ties_take_the_first_listed_link_towards_the_destination() {
        let scenario = scenario(&[("a", "d", 1), ("s", "b", 2), ("b", "d", 3), ("s", "a", 4)]);
        assert_eq!(
            hops(&scenario.route("s", "d").unwrap()),
            [(3, true), (0, true)]
        );
        // The way back is a route of its own: from `d`, towards `s`, `b` is reached through
        // link 1 (listed before link 3), so it goes through `b`.
        assert_eq!(
            hops(&scenario.route("d", "s").unwrap()),
            [(2, false), (1, false)]
        );
    }

    #[test]
    fn unreachable_and_unknown_nodes_are_named() {
        let scenario = scenario(&[("a", "b", 1), ("c", "d", 1)]);
        let error = scenario.route("a", "d").unwrap_err();
        assert_eq!(
            error,
            RouteError::Unreachable {
                from: "a".into(),
                to: "d".into()
            }
        );
        assert_eq!(error.to_string(), "no route from a to d");
        let error = scenario.route("a", "nowhere").unwrap_err();
        assert_eq!(error.to_string(), "no node named nowhere");
        assert_eq!(
            scenario.route("elsewhere", "a").unwrap_err(),
            RouteError::UnknownNode {
                node: "elsewhere".into()
            }
        );
    }

    #[test]
    fn base_rtt_of_a_multi_hop_path_sums_both_ways() {
        let mut scenario = scenario(&[("s", "r1", 1), ("r1", "r2", 24), ("r2", "d", 1)]);
        // An asymmetric link: the way back counts the reverse direction's own delay.
        scenario.links[1].reverse.delay = Duration::from_millis(10);
        let route = scenario.route("s", "d").unwrap();
        assert_eq!(route.hops.len(), 3);
        assert_eq!(scenario.path_base_rtt(&route), Duration::from_millis(38));
        let back = scenario.route("d", "s").unwrap();
        assert_eq!(scenario.path_base_rtt(&back), Duration::from_millis(38));
        let empty = scenario.route("s", "s").unwrap();
        assert_eq!(scenario.path_base_rtt(&empty), Duration::ZERO);
    }

    #[test]
    fn generic_search_over_directed_edges() {
        // One-way edges: a → b → c, and c → a directly.
        let edges = [("a", "b"), ("b", "c"), ("c", "a")];
        assert_eq!(fewest_hops(&edges, "a", "c"), Some(vec![0, 1]));
        assert_eq!(fewest_hops(&edges, "c", "b"), Some(vec![2, 0]));
        assert_eq!(fewest_hops(&edges, "a", "a"), Some(vec![]));
        assert_eq!(fewest_hops(&edges, "a", "z"), None);
        let next = next_hops(&edges, "c");
        assert_eq!(next.get("a"), Some(&0));
        assert_eq!(next.get("b"), Some(&1));
        assert_eq!(next.get("c"), None);
        // Parallel edges (a scenario has none, a testbed may): the first listed is taken.
        assert_eq!(
            fewest_hops(&[("x", "y"), ("x", "y")], "x", "y"),
            Some(vec![0])
        );
    }
}
