//! One round of a node's ownership work, decided from what the owners
//! bucket holds and who is alive: claim the free partitions it is the
//! target of, renew the ones it owns and is still the target of, release
//! the ones it owns but another live member is now the target of. A pure
//! function: the node runs the steps against the bucket ([`crate::node`]).

use crate::rendezvous::targets;

/// A partition's entry in the owners bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    /// No entry, or a deleted one: the partition is free.
    Free,
    /// Owned by `node`, at the entry's `revision`.
    Node { node: String, revision: u64 },
}

/// A write to the owners bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Create the entry (it must not exist).
    Claim(u16),
    /// Rewrite the entry at this revision, which restarts its age.
    Renew(u16, u64),
    /// Delete the entry at this revision: the target claims it next.
    Release(u16, u64),
}

/// The steps of node `me` this round. `members` are the live members' ids;
/// `me` counts as one whether or not its own entry is among them.
/// `owners[p]` is partition `p`'s entry.
pub(crate) fn plan(me: &str, members: &[&str], owners: &[Owner]) -> Vec<Step> {
    let mut live: Vec<&str> = members.to_vec();
    if !live.contains(&me) {
        live.push(me);
    }
    let partitions = u16::try_from(owners.len()).unwrap_or(u16::MAX);
    let current: Vec<Option<&str>> = owners
        .iter()
        .map(|o| match o {
            Owner::Free => None,
            Owner::Node { node, .. } => Some(node.as_str()),
        })
        .collect();
    let targets = targets(partitions, live.iter().copied(), &current);
    owners
        .iter()
        .enumerate()
        .filter_map(|(p, owner)| {
            let mine = targets.get(p) == Some(&me);
            let p = u16::try_from(p).ok()?;
            match owner {
                Owner::Free if mine => Some(Step::Claim(p)),
                Owner::Node { node, revision } if node == me => Some(if mine {
                    Step::Renew(p, *revision)
                } else {
                    Step::Release(p, *revision)
                }),
                // Another's, or free and another's to claim: its owner
                // releases it, or its entry expires when the owner is gone.
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(node: &str, revision: u64) -> Owner {
        Owner::Node {
            node: node.into(),
            revision,
        }
    }

    #[test]
    fn a_lone_node_claims_every_free_partition_and_renews_its_own() {
        let owners = vec![Owner::Free, owned("a", 7), Owner::Free];
        assert_eq!(
            plan("a", &[], &owners),
            vec![Step::Claim(0), Step::Renew(1, 7), Step::Claim(2)]
        );
    }

    #[test]
    fn each_partition_has_one_claimant_and_others_entries_are_left_alone() {
        let members = ["a", "b", "c"];
        let owners = vec![Owner::Free; 64];
        let mut claimed = vec![0; 64];
        for me in members {
            for step in plan(me, &members, &owners) {
                let Step::Claim(p) = step else {
                    panic!("{step:?} on free partitions")
                };
                claimed[usize::from(p)] += 1;
            }
        }
        assert!(claimed.iter().all(|&c| c == 1), "{claimed:?}");
        // Partitions a dead member still holds are nobody's to write.
        let held = vec![owned("gone", 3); 64];
        assert!(
            members
                .iter()
                .all(|me| plan(me, &members, &held).is_empty())
        );
    }

    #[test]
    fn a_newcomer_makes_the_owner_release_what_is_now_its() {
        let owners: Vec<Owner> = (0..64).map(|_| owned("a", 1)).collect();
        let steps = plan("a", &["a", "b"], &owners);
        let released = steps
            .iter()
            .filter(|s| matches!(s, Step::Release(..)))
            .count();
        assert!(released > 0 && released < 64, "{steps:?}");
        // The newcomer waits for the release: the entries are a's.
        assert!(plan("b", &["a", "b"], &owners).is_empty());
    }
}
