//! Which `Label`s of a compiled pattern have the same future: a partial match waiting at one
//! behaves as one waiting at the other (the same variable's condition decides the row, and
//! the moves after it reach, in the same order, labels that have the same future again, or
//! the end of the pattern). Unrolled quantifiers copy a pattern's instructions, so
//! `(A+ | A+)+ B` has four labels of A inside loops that do the same (the first iteration's
//! copy and the loop's, of each alternative): the pruner treats partial matches at labels of
//! one class as at one place ([`super::equivalence`]).
//!
//! Worked out once per pattern as a bisimulation (Moore's partition refinement): labels
//! start grouped by variable, and a group splits while its labels' successors fall in other
//! groups, until none does.

use std::collections::{HashMap, HashSet};

use super::program::Inst;

/// Beyond this many instructions, every label is its own class (the work is the program's
/// length times its labels, per round).
const MAX_PROGRAM: usize = 4096;

/// Beyond this many moves between labels (the successors of every label, added up), every
/// label is its own class: a round of the refinement costs that many steps, and it may take
/// a round per label. Nested optional copies make the moves quadratic in the bound
/// (`(A?){1000} B`: each of the 1000 labels of A reaches every later one, 500 000 moves; a
/// refinement of those took hours): such a pattern is matched without merging its labels.
const MAX_MOVES: usize = 1 << 14;

/// Where the moves after consuming a row lead, in preference order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Next {
    /// A thread waits at this instruction (a `Label`, or an `End` that waits for the end of
    /// the partition).
    Wait(usize),
    /// A match is complete (the places after it are not followed).
    Done,
}

/// The class of each instruction: for a `Label`, the first instruction of its class; for
/// any other, itself.
pub(crate) fn label_classes(prog: &[Inst]) -> Vec<usize> {
    let mut class: Vec<usize> = (0..prog.len()).collect();
    if prog.len() > MAX_PROGRAM {
        return class;
    }
    let labels: Vec<usize> = (0..prog.len())
        .filter(|pc| matches!(prog[*pc], Inst::Label(_)))
        .collect();
    let mut after: HashMap<usize, Vec<Next>> = HashMap::new();
    let mut total = 0;
    for pc in &labels {
        let m = moves(prog, pc + 1);
        total += m.len();
        if total > MAX_MOVES {
            return class;
        }
        after.insert(*pc, m);
    }
    // Grouped by variable to begin with.
    for pc in &labels {
        let Inst::Label(v) = prog[*pc] else {
            continue;
        };
        class[*pc] = labels
            .iter()
            .copied()
            .find(|q| prog[*q] == Inst::Label(v))
            .unwrap_or(*pc);
    }
    loop {
        // A label's key: its class and the classes its successors are in, in order (a
        // class met twice counts once, as the pruner keeps the first thread there).
        let mut first_of: HashMap<(usize, Vec<Option<usize>>), usize> = HashMap::new();
        let mut next = class.clone();
        for pc in &labels {
            let mut seen: Vec<Option<usize>> = Vec::new();
            for n in &after[pc] {
                let c = match n {
                    Next::Wait(q) => Some(class[*q]),
                    Next::Done => None,
                };
                if c.is_none() || !seen.contains(&c) {
                    seen.push(c);
                }
            }
            next[*pc] = *first_of.entry((class[*pc], seen)).or_insert(*pc);
        }
        if next == class {
            return class;
        }
        class = next;
    }
}

/// The places the moves from `pc` reach that consume no row, as the matcher's closure
/// follows them after a row (not at the partition's first row: `^` stops them).
fn moves(prog: &[Inst], pc: usize) -> Vec<Next> {
    let mut out = Vec::new();
    // Sets, not lists: a label of `(A?){n}` reaches n others (a list made it n² per label).
    let mut seen: HashSet<(usize, u64)> = HashSet::new();
    let mut waits: HashSet<usize> = HashSet::new();
    let mut stack = vec![(pc, 0u64)];
    while let Some((pc, fresh)) = stack.pop() {
        if !seen.insert((pc, fresh)) {
            continue;
        }
        match prog[pc] {
            Inst::Label(_) | Inst::End => {
                if waits.insert(pc) {
                    out.push(Next::Wait(pc));
                }
            }
            Inst::Start => {}
            Inst::Split(a, b) => {
                stack.push((b, fresh));
                stack.push((a, fresh));
            }
            Inst::Jump(t) => stack.push((t, fresh)),
            Inst::Enter(l) => stack.push((pc + 1, fresh | 1 << l)),
            Inst::Check(l) => {
                if fresh & (1 << l) == 0 {
                    stack.push((pc + 1, fresh));
                }
            }
            Inst::Done => {
                out.push(Next::Done);
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::program::compile;
    use super::super::syntax::parse;
    use super::*;

    /// The labels of `pattern`, grouped by class.
    fn groups(pattern: &str) -> Vec<Vec<usize>> {
        let prog = compile(&parse(pattern).expect("parses").pat).expect("compiles");
        let class = label_classes(&prog);
        let mut out: Vec<Vec<usize>> = Vec::new();
        for pc in (0..prog.len()).filter(|pc| matches!(prog[*pc], Inst::Label(_))) {
            match out.iter_mut().find(|g| class[g[0]] == class[pc]) {
                Some(g) => g.push(pc),
                None => out.push(vec![pc]),
            }
        }
        out
    }

    #[test]
    fn copies_of_a_loop_with_the_same_future_are_one_class() {
        // (A+ | A+)+ B: the first iteration's two alternatives and the loop's, each an A
        // then a loop of A, then B: after any of the eight A, another A (preferred) or B,
        // as in A+ B.
        let g = groups("(A+ | A+)+ B");
        assert_eq!(g.iter().map(Vec::len).collect::<Vec<_>>(), [8, 1], "{g:?}");
        // A+ B: the first A is followed by more A or B, as the loop's is.
        assert_eq!(groups("A+ B"), [vec![0, 3], vec![6]]);
        assert_eq!(groups("(A*)* B").len(), 2);
    }

    #[test]
    fn labels_whose_futures_differ_stay_apart() {
        // The first A is followed by B, the second by C.
        assert_eq!(groups("A B | A C").len(), 4);
        // A{2} B: after the first A another A must come, after the second B.
        assert_eq!(groups("A A B").len(), 3);
        // Greedy and reluctant loops prefer their places in other orders: the greedy
        // alternative's two A, the reluctant one's, and B.
        assert_eq!(groups("(A+ | A+?) B").len(), 3);
        // Which variable a row is mapped to tells them apart.
        assert_eq!(groups("(A | B)* C").len(), 3);
    }

    #[test]
    fn nested_optional_copies_are_classed_in_few_moves_or_left_alone() {
        // Issue 18 (H1): `(A?){1000} B` took hours to class; its moves are too many to
        // refine (each label of A reaches every later one), so its labels stay apart.
        let prog = compile(&parse("(A?){1000} B").expect("parses").pat).expect("compiles");
        let class = label_classes(&prog);
        assert!((0..prog.len()).all(|pc| class[pc] == pc));
        // A small bound is still classed: the copies of A with the same future are one.
        let g = groups("(A?){3} B");
        assert_eq!(g.len(), 4, "{g:?}");
    }
}
