//! Which member a partition belongs to: rendezvous (highest random weight)
//! hashing. Every node computes the same answer from the same member list,
//! and a join or a leave moves only the partitions of the member that came
//! or went (about P/N of them).

/// A member's weight for `partition`: a hash of both, the same on every
/// node and every build (FNV-1a, then a 64-bit finaliser to spread it).
fn weight(member: &str, partition: u16) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in member.bytes().chain(partition.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // splitmix64's finaliser.
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// The member `partition` belongs to: the one of highest weight (ties, which
/// need equal hashes, go to the greater id). None without members.
pub fn target<'a>(partition: u16, members: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    members
        .into_iter()
        .max_by_key(|member| (weight(member, partition), *member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn targets(partitions: u16, members: &[String]) -> Vec<String> {
        (0..partitions)
            .map(|p| {
                target(p, members.iter().map(String::as_str))
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn no_member_no_target() {
        assert_eq!(target(3, std::iter::empty()), None);
    }

    #[test]
    fn partitions_spread_evenly() {
        let members: Vec<String> = ["n1", "n2", "n3"].map(String::from).to_vec();
        let targets = targets(1024, &members);
        for m in &members {
            let owned = targets.iter().filter(|t| *t == m).count();
            // 1024 / 3 = 341; a hash that spreads well stays within 15%.
            assert!((290..=392).contains(&owned), "{m} gets {owned} of 1024");
        }
    }

    proptest! {
        /// A join moves partitions only to the newcomer, and a leave only
        /// away from the one who left; the order of the list never matters.
        #[test]
        fn a_join_moves_only_the_newcomers_share(
            ids in proptest::collection::btree_set("[a-z0-9-]{1,12}", 1..8),
            newcomer in "[a-z0-9-]{1,12}",
            partitions in 1u16..300,
        ) {
            prop_assume!(!ids.contains(&newcomer));
            let before: Vec<String> = ids.iter().cloned().collect();
            let mut after = before.clone();
            after.insert(0, newcomer.clone());
            let (old, new) = (targets(partitions, &before), targets(partitions, &after));
            for (o, n) in old.iter().zip(&new) {
                prop_assert!(o == n || *n == newcomer, "{o} -> {n}");
            }
            let mut reversed = before.clone();
            reversed.reverse();
            prop_assert_eq!(targets(partitions, &reversed), old);
        }
    }
}
