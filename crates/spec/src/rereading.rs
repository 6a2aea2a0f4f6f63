//! How often the SQL parser may read one place of a text, counted as it parses.
//!
//! sqlparser (0.62, which DataFusion 55 is built on) backtracks: a keyword with a syntax of its
//! own that does not parse as such (a `CAST(` without `AS type`, a `CASE (` without `WHEN`, a
//! `NOT (`, `EXTRACT(`, `CURRENT_TIMESTAMP(` … that goes wrong inside) is read again from its
//! start as a plain function call of that name. Each of N such calls nested in each other so
//! doubles the work inside it: 25 of them take minutes, 40 longer than anyone waits, although the
//! text is a few hundred bytes and nests far less than [`crate::nesting`] allows. (sqlparser 0.64
//! remembers such failures instead, apache/datafusion-sqlparser-rs#2352.)
//!
//! A [`Rereading`] counts, per place in the token stream, how many times the parser starts an
//! operand of an expression there. Text that parses in one pass starts each operand once or a few
//! times; past [`MAX_READS`] readings of one place, every further operand fails at once, with
//! sqlparser's `RecursionLimitExceeded`, which no speculative parse swallows, so that the parse
//! unwinds in time proportional to the text, and [`Rereading::exceeded`] says where and why. A
//! dialect counts by calling [`Rereading::read`] from its `parse_prefix`; one `Rereading` counts
//! one parser's reading of one token stream.

use std::cell::{Cell, RefCell};

use sqlparser::ast::Expr;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Location;

/// The most times the parser may start an operand at one place of the text: room for six calls
/// nested in each other that each parse only as the plain function call they are read again as
/// (`overlay(a, b, c)` is read first as `OVERLAY(a PLACING b FROM c)`), and far below the
/// thousands of readings that make the parse take seconds.
pub const MAX_READS: u32 = 64;

/// The readings of one token stream by one parser, per place (see the [module](self) docs).
#[derive(Debug, Default)]
pub struct Rereading {
    /// Readings so far, by index in the token stream.
    reads: RefCell<Vec<u32>>,
    /// Where the parser read one place more than [`MAX_READS`] times first.
    exceeded: Cell<Option<Location>>,
}

/// A text the parser would read the same place of more than [`MAX_READS`] times.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ReadTooOften {
    /// The place read too often (1-based line and column in the parsed text).
    pub at: Location,
    /// What happens there, the limit, and what to do.
    pub message: String,
}

impl Rereading {
    /// Counts the parser's starting an operand where it is now. `None` (go on parsing) while no
    /// place is read more than [`MAX_READS`] times; from then on an error for every operand, so
    /// that the parse stops. Call it first thing in `Dialect::parse_prefix`, returning what it
    /// returns when it is `Some`.
    ///
    /// # Examples
    /// ```
    /// use anduin_spec::rereading::Rereading;
    /// use sqlparser::dialect::GenericDialect;
    /// use sqlparser::parser::Parser;
    /// let dialect = GenericDialect {};
    /// let mut parser = Parser::new(&dialect).try_with_sql("x + 1").expect("tokenizes");
    /// let rereading = Rereading::default();
    /// assert!(rereading.read(&parser).is_none());
    /// assert!(rereading.exceeded().is_none());
    /// ```
    pub fn read(&self, parser: &Parser) -> Option<Result<Expr, ParserError>> {
        if self.exceeded.get().is_some() {
            return Some(Err(ParserError::RecursionLimitExceeded));
        }
        let index = parser.index();
        let mut reads = self.reads.borrow_mut();
        if reads.len() <= index {
            reads.resize(index + 1, 0);
        }
        let count = reads.get_mut(index).expect("resized to hold the index");
        *count += 1;
        if *count <= MAX_READS {
            return None;
        }
        self.exceeded.set(Some(parser.peek_token_ref().span.start));
        Some(Err(ParserError::RecursionLimitExceeded))
    }

    /// Where and why the parse was stopped, if it was: then its outcome, error or not, is not
    /// what the text says, and this is the error to report.
    pub fn exceeded(&self) -> Option<ReadTooOften> {
        self.exceeded.get().map(|at| ReadTooOften {
            at,
            message: format!(
                "the SQL parser reads this place more than {MAX_READS} times: calls nested in each other that do not parse as what their keyword starts (a `CAST(` without `AS type`, a `CASE` without `WHEN` or `END`, …) are each read again as a plain function call, which doubles the work at every level; anduin stops at {MAX_READS}: check the syntax of the calls around here, or nest fewer of them"
            ),
        })
    }

    /// The most times one place was read so far.
    pub fn most(&self) -> u32 {
        self.reads.borrow().iter().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::{Dialect, GenericDialect};

    /// The generic dialect, counting (only what the tests below need of it forwarded).
    #[derive(Debug, Default)]
    struct Counting {
        generic: GenericDialect,
        rereading: Rereading,
    }

    impl Dialect for Counting {
        fn dialect(&self) -> std::any::TypeId {
            self.generic.dialect()
        }
        fn is_identifier_start(&self, ch: char) -> bool {
            self.generic.is_identifier_start(ch)
        }
        fn is_identifier_part(&self, ch: char) -> bool {
            self.generic.is_identifier_part(ch)
        }
        fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
            self.rereading.read(parser)
        }
    }

    fn parse(sql: &str) -> (Result<Expr, ParserError>, Counting) {
        let dialect = Counting::default();
        let outcome = Parser::new(&dialect)
            .with_recursion_limit(4096)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_expr());
        (outcome, dialect)
    }

    #[test]
    fn text_that_parses_in_one_pass_reads_each_place_once() {
        let (e, d) = parse("CASE WHEN a > 1 THEN CAST(b AS BIGINT) ELSE f(c, NOT d) END");
        e.expect("parses");
        assert_eq!(d.rereading.most(), 1);
        assert!(d.rereading.exceeded().is_none());
    }

    #[test]
    fn nested_casts_without_their_type_are_stopped_where_a_place_is_read_too_often() {
        // Each `CAST(` that fails is read again as a call `cast(…)`: the innermost operand of
        // 40 of them would be read 2^40 times.
        let sql = format!("{}x", "CAST( ".repeat(40));
        let (e, d) = parse(&sql);
        // Whichever error comes out (here the first `CAST(`'s own), the count says why.
        assert!(e.is_err(), "{e:?}");
        let err = d.rereading.exceeded().expect("stopped");
        assert!(
            err.message
                .starts_with("the SQL parser reads this place more than 64 times"),
            "{}",
            err.message
        );
        assert_eq!(err.at.line, 1);
        // Stopped among the innermost calls, read the most, not at the first.
        assert!(err.at.column > 6 * 30, "{:?}", err.at);
    }

    #[test]
    fn six_nested_calls_read_again_as_function_calls_still_parse_and_seven_do_not() {
        // `overlay(a, b, c)` is read first as `OVERLAY(a PLACING b …)`, then as a call: the
        // innermost of n of them is read 2^n times.
        let nested =
            |n: usize| (0..n).fold("x".to_string(), |e, _| format!("overlay({e}, 'a', 1)"));
        let (e, d) = parse(&nested(6));
        e.expect("parses");
        assert_eq!(d.rereading.most(), MAX_READS);
        let (e, d) = parse(&nested(7));
        assert!(e.is_err(), "{e:?}");
        assert!(d.rereading.exceeded().is_some());
    }
}
