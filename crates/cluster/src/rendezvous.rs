//! Which member each partition belongs to: rendezvous (highest random
//! weight) hashing with bounded loads. Every node computes the same answer
//! from the same member list. Each partition goes to the member of highest
//! weight for it that still has room, taking the (partition, member) pairs
//! from the heaviest down, and a member has room for `P / N` partitions,
//! rounded up for the first `P mod N` to fill up and down for the others:
//! every member holds within one partition of an even share. A join or a
//! leave moves the share of the member that came or went, and at most as
//! many again (plus one) between the others, as bounds tighten or loosen
//! (the tests check it on random memberships; it is not proven).

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

/// The member each of `partitions` partitions belongs to (index `p` for
/// partition `p`); empty without members. The order of `members` does not
/// matter; a member named twice counts once.
pub fn targets<'a>(partitions: u16, members: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut members: Vec<&str> = members.into_iter().collect();
    members.sort_unstable();
    members.dedup();
    if members.is_empty() {
        return Vec::new();
    }
    let (n, p) = (members.len(), usize::from(partitions));
    let (floor, mut ceilings_left) = (p / n, p % n);
    // Every pair, heaviest first (ties, which need equal hashes, go to the
    // lower partition, then the greater id).
    let mut pairs: Vec<(u64, u16, usize)> = (0..partitions)
        .flat_map(|q| (0..n).map(move |m| (q, m)))
        .map(|(q, m)| (weight(members[m], q), q, m))
        .collect();
    pairs.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)));
    let mut owner: Vec<Option<usize>> = vec![None; p];
    let mut load = vec![0usize; n];
    let mut left = p;
    for (_, q, m) in pairs {
        if left == 0 {
            break;
        }
        let slot = &mut owner[usize::from(q)];
        let room = if ceilings_left > 0 { floor + 1 } else { floor };
        if slot.is_some() || load[m] >= room {
            continue;
        }
        *slot = Some(m);
        load[m] += 1;
        left -= 1;
        if load[m] == floor + 1 {
            ceilings_left -= 1;
        }
    }
    owner
        .into_iter()
        .map(|m| members[m.expect("every partition placed: the bounds sum to P")])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn of(partitions: u16, members: &[String]) -> Vec<String> {
        targets(partitions, members.iter().map(String::as_str))
            .into_iter()
            .map(String::from)
            .collect()
    }

    fn loads(targets: &[String], members: &[String]) -> Vec<usize> {
        members
            .iter()
            .map(|m| targets.iter().filter(|t| *t == m).count())
            .collect()
    }

    #[test]
    fn no_member_no_target() {
        assert!(targets(3, std::iter::empty()).is_empty());
    }

    #[test]
    fn sixteen_partitions_over_four_nodes_are_four_each() {
        let members: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        assert_eq!(loads(&of(16, &members), &members), [4, 4, 4, 4]);
    }

    proptest! {
        /// Every member holds P/N partitions, rounded up or down; the order
        /// of the list never matters; a join moves the newcomer's share and
        /// at most as many again (those the newcomer's arrival pushes over
        /// a bound), and only towards the newcomer or off a member over
        /// its new bound.
        #[test]
        fn shares_are_even_and_a_join_moves_little(
            ids in proptest::collection::btree_set("[a-z0-9-]{1,12}", 1..8),
            newcomer in "[a-z0-9-]{1,12}",
            partitions in 1u16..300,
        ) {
            prop_assume!(!ids.contains(&newcomer));
            let before: Vec<String> = ids.iter().cloned().collect();
            let old = of(partitions, &before);
            let n = before.len();
            let p = usize::from(partitions);
            for load in loads(&old, &before) {
                prop_assert!(load == p / n || load == p.div_ceil(n), "{load} of {p} over {n}");
            }
            let mut reversed = before.clone();
            reversed.reverse();
            prop_assert_eq!(&of(partitions, &reversed), &old);

            let mut after = before.clone();
            after.insert(0, newcomer.clone());
            let new = of(partitions, &after);
            let moved = old.iter().zip(&new).filter(|(o, n)| o != n).count();
            let share = new.iter().filter(|t| **t == newcomer).count();
            prop_assert!(moved <= 2 * share + 1, "{moved} moved for a share of {share}");
        }

        /// A leave moves the leaver's share and at most as many again.
        #[test]
        fn a_leave_moves_little(
            ids in proptest::collection::btree_set("[a-z0-9-]{1,12}", 2..8),
            leaver in 0usize..8,
            partitions in 1u16..300,
        ) {
            let before: Vec<String> = ids.iter().cloned().collect();
            let leaver = before[leaver % before.len()].clone();
            let after: Vec<String> = before.iter().filter(|m| **m != leaver).cloned().collect();
            let (old, new) = (of(partitions, &before), of(partitions, &after));
            let moved = old.iter().zip(&new).filter(|(o, n)| o != n).count();
            let share = old.iter().filter(|t| **t == leaver).count();
            prop_assert!(moved <= 2 * share + 1, "{moved} moved for a share of {share}");
        }
    }
}
