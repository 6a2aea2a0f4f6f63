//! Split planning, a pure function: the files of a reader and their sizes, and its
//! parallelism, give byte ranges ([`Split`]s); each instance takes its share of them
//! ([`share`]). At a restore at another parallelism, what every old instance had left is
//! dealt again the same way.

use super::input::UNSIZED;
use super::Split;

/// One input file, as planned: its path and its size when the query first planned
/// ([`UNSIZED`] for a named pipe, read whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlannedFile {
    /// The path, as the reader's `path` resolved it.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
}

/// The splits of `files` for `parallelism` instances: at parallelism 1, one split per file;
/// otherwise the files are cut into splits of about `total / parallelism` bytes (never
/// smaller than `min_split` bytes; a file that is not `splittable` stays whole). Splits are
/// in file order, then byte order.
pub(crate) fn plan(
    files: &[PlannedFile],
    parallelism: usize,
    min_split: u64,
    splittable: bool,
) -> Vec<Split> {
    let sized = files.iter().filter(|f| f.size != UNSIZED);
    let total = sized.fold(0u64, |t, f| t.saturating_add(f.size));
    let parallelism = parallelism.max(1) as u64;
    let target = total.div_ceil(parallelism).max(min_split).max(1);
    let mut splits = Vec::new();
    for f in files {
        let pieces = if parallelism == 1 || !splittable || f.size == UNSIZED {
            1
        } else {
            f.size.div_ceil(target).max(1)
        };
        for i in 0..pieces {
            // Cut points spread evenly over the file (u128: no overflow for any size).
            let cut = |k: u64| {
                let at = u128::from(f.size) * u128::from(k) / u128::from(pieces);
                u64::try_from(at).unwrap_or(f.size)
            };
            splits.push(Split::new(&f.path, cut(i), cut(i + 1), f.size));
        }
    }
    splits
}

/// Which of `splits` instance `instance` of `parallelism` reads, in the order of `splits`.
/// The splits are dealt by size, largest first, each to the instance with the fewest bytes
/// so far (the lowest such instance on a tie): every instance computes the same deal.
pub(crate) fn share(splits: &[Split], instance: usize, parallelism: usize) -> Vec<Split> {
    let owners = deal(splits, parallelism);
    splits
        .iter()
        .zip(owners)
        .filter(|(_, owner)| *owner == instance)
        .map(|(s, _)| s.clone())
        .collect()
}

/// The instance each split goes to (see [`share`]).
fn deal(splits: &[Split], parallelism: usize) -> Vec<usize> {
    let parallelism = parallelism.max(1);
    let mut order: Vec<usize> = (0..splits.len()).collect();
    // Stable: equal sizes keep their file order.
    order.sort_by_key(|&i| std::cmp::Reverse(splits.get(i).map_or(0, Split::remaining)));
    let mut load = vec![0u64; parallelism];
    let mut owner = vec![0usize; splits.len()];
    for i in order {
        let (least, _) = load
            .iter()
            .enumerate()
            .min_by_key(|(k, l)| (**l, *k))
            .expect("parallelism is at least 1");
        if let (Some(l), Some(o), Some(s)) = (load.get_mut(least), owner.get_mut(i), splits.get(i))
        {
            *l = l.saturating_add(s.remaining().max(1));
            *o = least;
        }
    }
    owner
}

/// What instance `instance` of `parallelism` reads when a query resumes at that parallelism
/// from a checkpoint whose instances had `left` to read (each instance's splits): every split
/// not read to its end, dealt again (in file and byte order) as [`share`] deals.
pub(crate) fn reshare(left: Vec<Vec<Split>>, instance: usize, parallelism: usize) -> Vec<Split> {
    let mut all: Vec<Split> = left.into_iter().flatten().collect();
    all.sort_by(|a, b| (&a.path, a.from).cmp(&(&b.path, b.from)));
    share(&all, instance, parallelism)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(sizes: &[u64]) -> Vec<PlannedFile> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| PlannedFile {
                path: format!("f{i}"),
                size,
            })
            .collect()
    }

    fn ranges(splits: &[Split]) -> Vec<(String, u64, u64)> {
        splits
            .iter()
            .map(|s| (s.path.clone(), s.from, s.end))
            .collect()
    }

    #[test]
    fn at_parallelism_one_each_file_is_one_split() {
        let s = plan(&files(&[100, 0, 7]), 1, 1, true);
        assert_eq!(
            ranges(&s),
            [
                ("f0".into(), 0, 100),
                ("f1".into(), 0, 0),
                ("f2".into(), 0, 7)
            ]
        );
        assert!(s.iter().all(|s| s.exact && s.size == s.end));
    }

    #[test]
    fn a_large_file_is_cut_into_even_ranges_that_cover_it() {
        let s = plan(&files(&[1000]), 3, 1, true);
        assert_eq!(
            ranges(&s),
            [
                ("f0".into(), 0, 333),
                ("f0".into(), 333, 666),
                ("f0".into(), 666, 1000)
            ]
        );
        assert_eq!(
            s.iter().map(|s| s.exact).collect::<Vec<_>>(),
            [true, false, false]
        );
    }

    #[test]
    fn small_files_and_unsplittable_formats_stay_whole() {
        // 10 + 30 bytes at parallelism 2: the target is 20 bytes, so only f1 is cut.
        let s = plan(&files(&[10, 30]), 2, 1, true);
        assert_eq!(
            ranges(&s),
            [
                ("f0".into(), 0, 10),
                ("f1".into(), 0, 15),
                ("f1".into(), 15, 30)
            ]
        );
        // Never below the smallest split.
        assert_eq!(plan(&files(&[10, 30]), 2, 64, true).len(), 2);
        assert_eq!(plan(&files(&[10, 30]), 4, 1, false).len(), 2);
    }

    #[test]
    fn every_split_goes_to_exactly_one_instance_and_the_load_is_even() {
        let all = plan(&files(&[500, 40, 300, 160, 0, 1000]), 4, 1, true);
        for p in 1..=5 {
            let mut seen: Vec<Split> = (0..p).flat_map(|i| share(&all, i, p)).collect();
            seen.sort_by(|a, b| (&a.path, a.from).cmp(&(&b.path, b.from)));
            assert_eq!(seen, all, "parallelism {p}");
        }
        let loads: Vec<u64> = (0..4)
            .map(|i| share(&all, i, 4).iter().map(Split::remaining).sum())
            .collect();
        assert_eq!(loads.iter().sum::<u64>(), 2000);
        assert!(loads.iter().all(|l| (450..=550).contains(l)), "{loads:?}");
    }

    #[test]
    fn what_is_left_is_dealt_again_at_another_parallelism() {
        let all = plan(&files(&[900]), 3, 1, true);
        // Instance 0 read up to byte 100 of its split; instance 2 finished (nothing left).
        let mut zero = share(&all, 0, 3);
        zero[0].resume_at(100);
        let left = vec![zero, share(&all, 1, 3), Vec::new()];
        let two: Vec<Vec<Split>> = (0..2).map(|i| reshare(left.clone(), i, 2)).collect();
        let mut got: Vec<(String, u64, u64, bool)> = two
            .iter()
            .flatten()
            .map(|s| (s.path.clone(), s.from, s.end, s.exact))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("f0".into(), 100, 300, true),
                ("f0".into(), 300, 600, false)
            ]
        );
        assert!(two.iter().all(|s| s.len() == 1));
        // At parallelism 1, one instance takes all.
        assert_eq!(reshare(left, 0, 1).len(), 2);
    }
}
