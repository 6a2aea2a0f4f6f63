//! The moves of the compiled pattern that consume no row (splits, jumps, loop bookkeeping,
//! the anchors), followed from one program counter to the labels where threads wait.

use std::sync::Arc;

use super::super::equivalence::{Pruner, Rows};
use super::super::program::Inst;
use super::{Pattern, Step, Thread};

/// Which (instruction, fresh loops) states one closure has visited, so that each is followed
/// once (a later visit has the same history and a lower preference). A stamp per instruction
/// makes clearing one increment; the rare second mask at one instruction goes to `extra`.
#[derive(Debug, Default)]
pub(super) struct Seen {
    stamps: Vec<u32>,
    masks: Vec<u64>,
    extra: Vec<(usize, u64)>,
    now: u32,
    stack: Vec<(usize, u64)>,
}

impl Seen {
    pub(super) fn clear(&mut self, len: usize) {
        if self.stamps.len() != len || self.now == u32::MAX {
            self.stamps = vec![0; len];
            self.masks = vec![0; len];
            self.now = 0;
        }
        self.now += 1;
        self.extra.clear();
        self.stack.clear();
    }

    /// Marks `(pc, mask)`; false if it was marked already.
    fn mark(&mut self, pc: usize, mask: u64) -> bool {
        if self.stamps[pc] != self.now {
            self.stamps[pc] = self.now;
            self.masks[pc] = mask;
            return true;
        }
        if self.masks[pc] == mask || self.extra.contains(&(pc, mask)) {
            return false;
        }
        self.extra.push((pc, mask));
        true
    }
}

/// Where a closure is: at the partition's first row (`^` passes), or after its last (the
/// partition ended: `$` passes, and no thread waits for a row); and the partition's rows,
/// which the pruner reads for the summaries of aggregates (`None`: it compares the rows
/// aggregated instead).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct At<'a> {
    pub first: bool,
    pub ended: bool,
    pub rows: Option<Rows<'a>>,
}

/// Follows the moves that consume no row from `pc`, in preference order, adding a thread at
/// every `Label` reached unless `prune` finds an equivalent one in `out` already; returns
/// true when `Done` is reached (the threads after it in preference order are not added: the
/// match is preferred to them). `fresh` has a bit per loop whose current iteration began in
/// this closure: its `Check` ends the path.
pub(super) fn closure(
    p: &Pattern,
    seen: &mut Seen,
    prune: &mut Pruner,
    at: At<'_>,
    pc: usize,
    hist: Option<Arc<Step>>,
    out: &mut Vec<Thread>,
) -> bool {
    seen.clear(p.prog.len());
    seen.stack.push((pc, 0));
    while let Some((pc, fresh)) = seen.stack.pop() {
        if !seen.mark(pc, fresh) {
            continue;
        }
        match p.prog[pc] {
            // A thread waits here for the next row (at `$`: for the end).
            Inst::Label(_) | Inst::End if !at.ended => {
                if prune.admit(&p.needs, p.classes[pc], hist.as_ref(), out, at.rows) {
                    out.push(Thread {
                        pc,
                        hist: hist.clone(),
                    });
                }
            }
            // The partition has ended: no row comes, `$` passes.
            Inst::Label(_) => {}
            Inst::End => seen.stack.push((pc + 1, fresh)),
            Inst::Start => {
                if at.first {
                    seen.stack.push((pc + 1, fresh));
                }
            }
            Inst::Split(a, b) => {
                seen.stack.push((b, fresh));
                seen.stack.push((a, fresh));
            }
            Inst::Jump(t) => seen.stack.push((t, fresh)),
            Inst::Enter(l) => seen.stack.push((pc + 1, fresh | 1 << l)),
            Inst::Check(l) => {
                if fresh & (1 << l) == 0 {
                    seen.stack.push((pc + 1, fresh));
                }
            }
            Inst::Done => return true,
        }
    }
    false
}
