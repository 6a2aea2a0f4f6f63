//! The pruner of one partition's row: which threads of an attempt (and of a later attempt,
//! against the earlier ones that stand for it) are kept, and the steps of the row, shared so
//! that equal histories are one allocation.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ahash::RandomState;

use super::super::matcher::{Pattern, Step, Thread, MOST_SKIPPED};
use super::signature::{key, Rows};
use super::Needs;

fn address(hist: Option<&Arc<Step>>) -> usize {
    hist.map_or(0, |s| Arc::as_ptr(s) as usize)
}

/// Scratch space of one attempt's row: which classes of labels (labels with the same future,
/// see `label_classes.rs`, each numbered by its first instruction) have a thread, and, once
/// a second one arrives at a class, the keys of the threads there.
#[derive(Debug, Default)]
pub(crate) struct Pruner {
    stamps: Vec<u32>,
    /// The index of the first thread at each class (valid where stamped).
    first: Vec<u32>,
    /// Stamped where the first thread's key is in `keys`.
    keyed: Vec<u32>,
    now: u32,
    keys: HashSet<(usize, Box<[u64]>), RandomState>,
    /// Stamped (with `row`) at the classes where an attempt that stands for later ones has a
    /// thread after the row being pushed.
    claimed: Vec<u32>,
    row: u32,
    /// Where the conditions read the history: the threads of the attempts that stand for
    /// later ones, after the row (class, history), whose keys at a class are worked out into
    /// `claim_keys` when a rival's thread reaches it: those of `claims[claims_from[class]..]`
    /// (where `claims_keyed[class]` is stamped with the row, else all), each once however
    /// many attempts claim after it (keying them all again at every claim made a row cost
    /// the square of the attempts in flight times their length).
    claims: Vec<(usize, Option<Arc<Step>>)>,
    claims_keyed: Vec<u32>,
    claims_from: Vec<usize>,
    claim_keys: HashSet<(usize, Box<[u64]>), RandomState>,
    /// The threads being admitted are a later attempt's: a thread at a class where an
    /// earlier attempt that stands for it has an equivalent one goes (see
    /// [`Pattern::earlier_stands_for_later`]).
    ///
    /// [`Pattern::earlier_stands_for_later`]: super::matcher::Pattern::earlier_stands_for_later
    rival: bool,
    /// Rivals' threads that went for a claiming attempt's since [`Pruner::count_claimed`].
    hits: u64,
    /// Where the conditions aggregate over a variable: how many rows attempts skip before
    /// they stand for later ones again (see [`Pruner::agg_turn`]), and how many are left.
    agg_skip: u32,
    agg_wait: u32,
}

impl Pruner {
    /// Starts a new list of threads for a program of `len` instructions (not a rival's).
    pub(crate) fn clear(&mut self, len: usize) {
        if self.stamps.len() != len || self.now == u32::MAX {
            self.stamps = vec![0; len];
            self.first = vec![0; len];
            self.keyed = vec![0; len];
            self.now = 0;
        }
        self.now += 1;
        self.keys.clear();
        self.rival = false;
    }

    /// Starts a row of a partition, for a program of `len` instructions: no class is
    /// claimed, no attempt is a rival.
    pub(crate) fn start_row(&mut self, len: usize) {
        if self.claimed.len() != len || self.row == u32::MAX {
            self.claimed = vec![0; len];
            self.claims_keyed = vec![0; len];
            self.claims_from = vec![0; len];
            self.row = 0;
        }
        self.row += 1;
        self.rival = false;
        self.end_row();
    }

    /// The row has been pushed: the claiming attempts' histories are let go.
    pub(crate) fn end_row(&mut self) {
        self.claims.clear();
        self.claim_keys.clear();
    }

    /// An attempt of pattern `p` that stands for later ones has `threads` (waiting for the
    /// next row): a later attempt's thread equivalent to one of them can only find what that
    /// one finds first.
    pub(crate) fn claim(&mut self, p: &Pattern, threads: &[Thread]) {
        for t in threads {
            self.claimed[p.classes[t.pc]] = self.row;
        }
        if !p.needs.nothing() {
            self.claims
                .extend(threads.iter().map(|t| (p.classes[t.pc], t.hist.clone())));
        }
    }

    /// Whether a rival's thread at a label of `class` with `hist` is equivalent to one of the
    /// claiming attempts': at a label of the same class, showing the conditions the same
    /// rows (which are the same rows of the partition in both attempts: what depends on the
    /// first row of the match rules rivals out, see [`Needs::from_start`]).
    fn claimed(
        &mut self,
        needs: &Needs,
        class: usize,
        hist: Option<&Arc<Step>>,
        rows: Option<Rows<'_>>,
    ) -> bool {
        if self.claimed[class] != self.row {
            return false;
        }
        if needs.nothing() {
            return true;
        }
        if self.claims_keyed[class] != self.row {
            self.claims_keyed[class] = self.row;
            self.claims_from[class] = 0;
        }
        let from = self.claims_from[class];
        for (at, h) in self.claims.iter().skip(from) {
            if *at == class {
                self.claim_keys
                    .insert((class, key(needs, h.as_ref(), rows)));
            }
        }
        self.claims_from[class] = self.claims.len();
        self.claim_keys.contains(&(class, key(needs, hist, rows)))
    }

    /// Starts counting the rivals' threads that go for a claiming attempt's.
    pub(crate) fn count_claimed(&mut self) {
        self.hits = 0;
    }

    /// Where the conditions aggregate over a variable, whether attempts stand for later ones
    /// in the row being pushed: not for as many rows as [`Pruner::agg_outcome`] said. Comparing
    /// aggregates' summaries costs a walk over each partial match, and rarely pays where the
    /// attempts differ in what they aggregated (a later one has fewer rows): after a row
    /// without a claim, they skip 1, 2, 4… up to [`MOST_SKIPPED`] rows. Whether they stand for
    /// later ones changes what it costs to find the matches, never which are found.
    ///
    /// [`MOST_SKIPPED`]: super::super::matcher::MOST_SKIPPED
    pub(crate) fn agg_turn(&mut self) -> bool {
        if self.agg_wait > 0 {
            self.agg_wait -= 1;
            return false;
        }
        true
    }

    /// A row in which the attempts stood for later ones is pushed: if no rival's thread went,
    /// the next [`Pruner::agg_turn`] waits twice as long as the last one (at least a row); if
    /// one did, it does not wait.
    pub(crate) fn agg_outcome(&mut self) {
        if self.hits > 0 {
            self.agg_skip = 0;
        } else {
            self.agg_skip = (self.agg_skip * 2).clamp(1, MOST_SKIPPED);
        }
        self.agg_wait = self.agg_skip;
    }

    /// Whether the threads admitted next are a later attempt's (checked against the claims).
    pub(crate) fn set_rival(&mut self, rival: bool) {
        self.rival = rival;
    }

    /// Whether a thread at a label of `class` with `hist` is kept in the list `out` (the
    /// threads before it, all preferred to it): not when one of them at `class` is
    /// equivalent, nor when it is a rival's equivalent to one of a claiming attempt's.
    /// `rows` are what the summaries of aggregates read (`None`: their rows are compared).
    #[inline]
    pub(crate) fn admit(
        &mut self,
        needs: &Needs,
        class: usize,
        hist: Option<&Arc<Step>>,
        out: &[Thread],
        rows: Option<Rows<'_>>,
    ) -> bool {
        if self.rival && self.claimed(needs, class, hist, rows) {
            self.hits += 1;
            return false;
        }
        if self.stamps[class] != self.now {
            self.stamps[class] = self.now;
            self.first[class] = u32::try_from(out.len()).unwrap_or(u32::MAX);
            return true;
        }
        if needs.nothing() {
            return false;
        }
        let first = out
            .get(self.first[class] as usize)
            .expect("the first thread at a class is in the list");
        let first_hist = first.hist.as_ref();
        if address(first_hist) == address(hist) {
            return false;
        }
        if self.keyed[class] != self.now {
            self.keyed[class] = self.now;
            self.keys.insert((class, key(needs, first_hist, rows)));
        }
        self.keys.insert((class, key(needs, hist, rows)))
    }
}

/// The steps made in one attempt's row, so that a (previous step, variable) pair gets one.
#[derive(Debug, Default)]
pub(crate) struct Steps {
    few: Vec<(usize, usize, Arc<Step>)>,
    many: HashMap<(usize, usize), Arc<Step>, RandomState>,
    /// Steps inside an exclusion, apart: their flag differs.
    marked: Vec<(usize, usize, Arc<Step>)>,
}

/// Beyond this many steps in a row, they are looked up by hash.
const FEW: usize = 16;

impl Steps {
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.few.clear();
        self.many.clear();
        self.marked.clear();
    }

    /// The step mapping row `row` to `var` after `prev`: the one made before in this row, or
    /// a new one.
    #[inline]
    pub(crate) fn after(
        &mut self,
        row: u64,
        var: usize,
        prev: Option<&Arc<Step>>,
        excluded: bool,
    ) -> Arc<Step> {
        let at = address(prev);
        if excluded {
            if let Some((_, _, s)) = self.marked.iter().find(|(a, v, _)| *a == at && *v == var) {
                return Arc::clone(s);
            }
            let s = Step::marked(row, var, prev.cloned(), true);
            self.marked.push((at, var, Arc::clone(&s)));
            return s;
        }
        if let Some((_, _, s)) = self.few.iter().find(|(a, v, _)| *a == at && *v == var) {
            return Arc::clone(s);
        }
        if let Some(s) = self.many.get(&(at, var)) {
            return Arc::clone(s);
        }
        let s = Step::after(row, var, prev.cloned());
        if self.few.len() < FEW {
            self.few.push((at, var, Arc::clone(&s)));
        } else {
            self.many.insert((at, var), Arc::clone(&s));
        }
        s
    }
}
