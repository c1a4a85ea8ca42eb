//! DropTail: a FIFO that drops arrivals when full.

use tfrc_proto::Instant;

use super::{Enqueue, Fifo, Queue, QueueDrop};
use crate::error::ParameterError;
use crate::packet::PacketMeta;

/// A FIFO that drops arriving packets when full, like ns-2's `Queue/DropTail`.
///
/// As in ns-2 (`DropTail::enque` drops when `length + 1 >= qlim`), the limit counts the packet
/// being transmitted: at most `limit − 1` packets wait in the queue, so a link direction holds
/// at most `limit` packets in total. `$ns queue-limit $a $b 50` therefore corresponds to
/// `DropTail::new(50)`.
#[derive(Debug, Clone)]
pub struct DropTail {
    limit: usize,
    fifo: Fifo,
}

impl DropTail {
    /// A DropTail queue of `limit` packets (at least 2: with ns-2's counting, a limit of 1
    /// would drop every packet).
    pub fn new(limit: usize) -> Result<Self, ParameterError> {
        if limit < 2 {
            return Err(ParameterError::new(
                "DropTail queue",
                "limit",
                limit,
                "at least 2 packets (the limit includes the packet in transmission)",
            ));
        }
        Ok(DropTail {
            limit,
            fifo: Fifo::default(),
        })
    }

    /// The limit in packets, including the packet in transmission.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

impl Queue for DropTail {
    fn enqueue(&mut self, _now: Instant, packet: PacketMeta) -> Enqueue {
        if self.fifo.len() + 1 >= self.limit {
            Enqueue::Dropped(QueueDrop::Overflow)
        } else {
            self.fifo.push(packet);
            Enqueue::Queued
        }
    }

    fn dequeue(&mut self, _now: Instant) -> Option<PacketMeta> {
        self.fifo.pop()
    }

    fn len_packets(&self) -> usize {
        self.fifo.len()
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rejects_useless_limits() {
        assert!(DropTail::new(0).is_err());
        let error = DropTail::new(1).unwrap_err();
        assert_eq!(error.parameter, "limit");
        assert!(DropTail::new(2).is_ok());
    }

    #[test]
    fn drops_when_full_and_keeps_fifo_order() {
        let mut queue = DropTail::new(4).unwrap();
        let now = Instant::ZERO;
        for id in 0..3 {
            assert_eq!(
                queue.enqueue(now, PacketMeta::new(id, 0, 100)),
                Enqueue::Queued
            );
        }
        assert_eq!(
            queue.enqueue(now, PacketMeta::new(3, 0, 100)),
            Enqueue::Dropped(QueueDrop::Overflow)
        );
        assert_eq!(queue.len_packets(), 3);
        assert_eq!(queue.len_bytes(), 300);
        assert_eq!(queue.dequeue(now).map(|p| p.id), Some(0));
        assert_eq!(
            queue.enqueue(now, PacketMeta::new(4, 0, 100)),
            Enqueue::Queued
        );
        let ids: Vec<_> = std::iter::from_fn(|| queue.dequeue(now).map(|p| p.id)).collect();
        assert_eq!(ids, vec![1, 2, 4]);
        assert_eq!(queue.len_bytes(), 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever the arrival/departure pattern, no more than limit − 1 packets wait.
        #[test]
        fn never_exceeds_its_limit(
            limit in 2usize..40,
            operations in proptest::collection::vec(any::<bool>(), 0..400),
        ) {
            let mut queue = DropTail::new(limit).unwrap();
            let mut accepted = 0usize;
            let mut dequeued = 0usize;
            for (id, arrive) in operations.into_iter().enumerate() {
                if arrive {
                    if queue.enqueue(Instant::ZERO, PacketMeta::new(id as u64, 0, 1000))
                        == Enqueue::Queued
                    {
                        accepted += 1;
                    }
                } else if queue.dequeue(Instant::ZERO).is_some() {
                    dequeued += 1;
                }
                prop_assert!(queue.len_packets() < limit);
                prop_assert_eq!(queue.len_packets(), accepted - dequeued);
                prop_assert_eq!(queue.len_bytes(), 1000 * queue.len_packets() as u64);
            }
        }
    }
}
