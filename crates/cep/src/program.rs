//! A row pattern compiled to a small program for the matcher (a Pike VM): `Label(v)` consumes
//! one row mapped to variable `v`, `Split(a, b)` tries `a` before `b` (this order is the
//! pattern's preferment: greedy quantifiers prefer another iteration, reluctant ones prefer to
//! stop), `Jump` continues elsewhere, `Done` is a complete match. Bounded quantifiers are
//! unrolled. An iteration of an unbounded loop starts with `Enter(loop)` and ends with
//! `Check(loop)`, which ends the path when the iteration consumed no row (so that an empty
//! iteration cannot repeat forever, and a loop whose body may be empty still terminates).

use super::syntax::Pat;

/// One instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inst {
    Label(usize),
    Split(usize, usize),
    Jump(usize),
    /// An iteration of unbounded loop number `.0` begins.
    Enter(usize),
    /// An iteration of loop `.0` ends: the path dies if it consumed no row.
    Check(usize),
    /// `^`: the path goes on only at the partition's first row.
    Start,
    /// `$`: the path waits here for the end of the partition (of the input), and dies if a
    /// row comes.
    End,
    Done,
}

/// The most unbounded loops a pattern may have.
pub(crate) const MAX_LOOPS: usize = 64;

/// The largest program a pattern may compile to.
pub(crate) const MAX_PROGRAM: usize = 100_000;

/// Compiles `pat`; `None` when the unrolled program would be larger than [`MAX_PROGRAM`].
#[cfg(test)]
pub(crate) fn compile(pat: &Pat) -> Result<Vec<Inst>, TooBig> {
    compile_marked(pat).map(|(prog, _)| prog)
}

/// Compiles `pat` as `compile` does, and says per instruction whether it is a `Label` inside
/// an exclusion `{- … -}`.
pub(crate) fn compile_marked(pat: &Pat) -> Result<(Vec<Inst>, Vec<bool>), TooBig> {
    let mut c = Compiler {
        prog: Vec::new(),
        loops: 0,
        excluding: 0,
        excluded: Vec::new(),
    };
    c.emit_pat(pat).ok_or(TooBig::Steps)?;
    c.push(Inst::Done).ok_or(TooBig::Steps)?;
    if c.loops > MAX_LOOPS {
        return Err(TooBig::Loops(c.loops));
    }
    Ok((c.prog, c.excluded))
}

/// Why a pattern does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TooBig {
    /// More than [`MAX_PROGRAM`] instructions once unrolled.
    Steps,
    /// More than [`MAX_LOOPS`] unbounded quantifiers once unrolled (how many).
    Loops(usize),
}

struct Compiler {
    prog: Vec<Inst>,
    loops: usize,
    /// Exclusions open around the place being compiled.
    excluding: usize,
    /// Per instruction: a `Label` inside an exclusion.
    excluded: Vec<bool>,
}

impl Compiler {
    fn push(&mut self, i: Inst) -> Option<usize> {
        if self.prog.len() >= MAX_PROGRAM {
            return None;
        }
        self.prog.push(i);
        self.excluded
            .push(self.excluding > 0 && matches!(i, Inst::Label(_)));
        Some(self.prog.len() - 1)
    }

    fn here(&self) -> usize {
        self.prog.len()
    }

    /// A split whose targets are patched later.
    fn split(&mut self, first_is_body: bool, body: usize, exit: usize) -> Inst {
        if first_is_body {
            Inst::Split(body, exit)
        } else {
            Inst::Split(exit, body)
        }
    }

    fn emit_pat(&mut self, pat: &Pat) -> Option<()> {
        match pat {
            Pat::Empty => {}
            Pat::Start => {
                self.push(Inst::Start)?;
            }
            Pat::End => {
                self.push(Inst::End)?;
            }
            Pat::Exclude(inner) => {
                self.excluding += 1;
                let r = self.emit_pat(inner);
                self.excluding -= 1;
                r?;
            }
            Pat::Var(v) => {
                self.push(Inst::Label(*v))?;
            }
            Pat::Concat(parts) => {
                for p in parts {
                    self.emit_pat(p)?;
                }
            }
            Pat::Alt(alts) => {
                let mut jumps = Vec::new();
                for (i, alt) in alts.iter().enumerate() {
                    if i + 1 < alts.len() {
                        let split = self.push(Inst::Split(0, 0))?;
                        self.emit_pat(alt)?;
                        jumps.push(self.push(Inst::Jump(0))?);
                        let next = self.here();
                        self.prog[split] = Inst::Split(split + 1, next);
                    } else {
                        self.emit_pat(alt)?;
                    }
                }
                let end = self.here();
                for j in jumps {
                    self.prog[j] = Inst::Jump(end);
                }
            }
            Pat::Repeat {
                inner,
                min,
                max,
                greedy,
            } => {
                for _ in 0..*min {
                    self.emit_pat(inner)?;
                }
                match max {
                    None => {
                        // L: Split(body, end); body: Enter; inner; Check; Jump L; end:
                        let id = self.loops;
                        self.loops += 1;
                        let l = self.push(Inst::Split(0, 0))?;
                        self.push(Inst::Enter(id))?;
                        self.emit_pat(inner)?;
                        self.push(Inst::Check(id))?;
                        self.push(Inst::Jump(l))?;
                        let end = self.here();
                        self.prog[l] = self.split(*greedy, l + 1, end);
                    }
                    Some(max) => {
                        // (max - min) nested optional copies, each exiting to the end.
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.push(Inst::Split(0, 0))?);
                            self.emit_pat(inner)?;
                        }
                        let end = self.here();
                        for s in splits {
                            self.prog[s] = self.split(*greedy, s + 1, end);
                        }
                    }
                }
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::syntax::parse;
    use super::*;

    fn prog(p: &str) -> Vec<Inst> {
        compile(&parse(p).expect("parses").pat).expect("compiles")
    }

    #[test]
    fn greedy_and_reluctant_plus_differ_only_in_split_order() {
        use Inst::*;
        assert_eq!(
            prog("A B+"),
            [
                Label(0),
                Label(1),
                Split(3, 7),
                Enter(0),
                Label(1),
                Check(0),
                Jump(2),
                Done
            ]
        );
        assert_eq!(
            prog("A B+?"),
            [
                Label(0),
                Label(1),
                Split(7, 3),
                Enter(0),
                Label(1),
                Check(0),
                Jump(2),
                Done
            ]
        );
    }

    #[test]
    fn alternation_prefers_the_left_branch() {
        use Inst::*;
        assert_eq!(
            prog("A | B | C"),
            [
                Split(1, 3),
                Label(0),
                Jump(7),
                Split(4, 6),
                Label(1),
                Jump(7),
                Label(2),
                Done
            ]
        );
    }

    #[test]
    fn bounded_quantifiers_unroll() {
        use Inst::*;
        assert_eq!(
            prog("A{1,3}"),
            [Label(0), Split(2, 5), Label(0), Split(4, 5), Label(0), Done]
        );
        assert_eq!(prog("A{2}"), [Label(0), Label(0), Done]);
    }

    #[test]
    fn huge_unrolls_are_refused() {
        let p = parse("((A{1000}){1000}){1000}").expect("parses");
        assert_eq!(compile(&p.pat), Err(TooBig::Steps));
        let p = parse("(A+){65}").expect("parses");
        assert_eq!(compile(&p.pat), Err(TooBig::Loops(65)));
    }
}
