//! How deep SQL text may nest, checked on its tokens before anything builds a tree of it.
//!
//! sqlparser, DataFusion and the evaluation of a compiled expression all walk expression trees
//! recursively, and a flat chain `a + a + … + a` of n terms is a tree n levels deep. So every
//! piece of SQL anduin reads (a `.flow` expression, a whole `.sql` script) is first measured
//! here, in one pass over its tokens with constant work per token: a chain of operators, or
//! parentheses, calls, `CASE`, `NOT` … nested in each other, beyond [`MAX_DEPTH`] levels (or
//! more than [`MAX_NESTING`] parentheses, calls and `CASE` inside each other) is refused with
//! its place, and what is accepted is parsed and compiled with a stack big enough for its
//! depth ([`with_stack`]), whatever thread does it.
//!
//! The measure is an upper bound on the depth of the tree the text parses to: a segment of
//! tokens (between commas, parentheses and clause keywords) adds one level per operator in it,
//! a parenthesised group one level to the deepest of its segments.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

/// The most operators in a row, and the deepest nesting of operators, parentheses, calls and
/// `CASE` added up, that anduin accepts in one expression.
///
/// Hand-written and generated Flink or Arroyo queries stay far below it (a condition of a few
/// hundred `OR`ed comparisons is 2 levels per comparison); a longer chain is better written
/// `x IN (…)`, or split over several operators.
pub const MAX_DEPTH: usize = 1_000;

/// The most parentheses, calls and `CASE` nested inside each other that anduin accepts in one
/// expression (sqlparser alone stops at 50).
pub const MAX_NESTING: usize = 200;

/// The most `WHEN` branches one `CASE` may have.
pub const MAX_CASE_BRANCHES: usize = 128;

/// sqlparser's own limit on its recursion (set it with `Parser::with_recursion_limit`): above
/// anything the measure lets through (a level of the measure may take sqlparser two calls), so
/// that the measure, which says where and why, is what refuses text.
pub const PARSER_RECURSION_LIMIT: usize = 2 * MAX_DEPTH + 64;

/// Stack reserved per level of a tree being parsed, planned or evaluated: what the deepest
/// recursion per level of sqlparser, DataFusion's planner and its physical expressions takes
/// (a function call, the most: about 100 KiB unoptimised, a tenth of it optimised), with room to
/// spare. Reserved, not used: the pages a thread does not touch cost no memory.
const STACK_PER_LEVEL: usize = if cfg!(debug_assertions) {
    192 * 1024
} else {
    32 * 1024
};

/// Stack for what is around the tree's walk (the caller's frames, a kernel at a leaf).
const STACK_BASE: usize = 256 * 1024;

/// Text that nests too deeply, with the place where it crosses the limit (1-based line and
/// column in the text measured).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TooDeep {
    /// Where the limit is crossed.
    pub at: Location,
    /// What is too deep, how deep, the limit, and what to do.
    pub message: String,
}

/// Measures `tokens` (sqlparser's, whitespace included or not) and returns the bound on the
/// depth of their tree, or where and why it exceeds [`MAX_DEPTH`].
///
/// # Examples
/// ```
/// use sqlparser::dialect::GenericDialect;
/// use sqlparser::tokenizer::Tokenizer;
/// let depth = |sql: &str| {
///     let toks = Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location().expect("tokenizes");
///     anduin_spec::nesting::depth_bound(&toks)
/// };
/// assert_eq!(depth("a + b * 2").expect("shallow"), 3);
/// let chain = vec!["a"; 5_000].join(" + ");
/// let err = depth(&chain).expect_err("too long");
/// assert!(err.message.starts_with("the expression has 4999 operators in a row"));
/// ```
pub fn depth_bound(tokens: &[TokenWithSpan]) -> Result<usize, TooDeep> {
    let mut m = Measure::default();
    for t in tokens {
        m.token(t)?;
    }
    m.finish()
}

/// Runs `f`, which walks a tree at most `depth` levels deep, with enough stack for it: on the
/// current thread's stack when it has room (a shallow expression on any thread), else on a
/// larger one made for the call.
pub fn with_stack<T>(depth: usize, f: impl FnOnce() -> T) -> T {
    let needed = depth
        .saturating_mul(STACK_PER_LEVEL)
        .saturating_add(STACK_BASE);
    stacker::maybe_grow(needed, needed.saturating_add(STACK_BASE), f)
}

/// One open group: the whole text, a parenthesis, a bracket or a `CASE`.
#[derive(Default)]
struct Group {
    /// Whether `END` closes it.
    case: bool,
    /// A `CASE`'s `WHEN` branches so far: each may be a level of the tree the engine builds
    /// of it (a chain of if-else).
    branches: usize,
    /// Operators in the current segment.
    ops: usize,
    /// Deepest group closed in the current segment.
    child: usize,
    /// Deepest finished segment.
    best: usize,
    /// Where the current segment crossed the limit with its operators alone.
    crossed: Option<Location>,
}

impl Group {
    fn segment(&self) -> usize {
        self.ops + self.child
    }

    fn depth(&self) -> usize {
        1 + self.branches + self.best.max(self.segment())
    }
}

struct Measure {
    open: Vec<Group>,
}

impl Default for Measure {
    fn default() -> Self {
        Self {
            open: vec![Group::default()],
        }
    }
}

impl Measure {
    fn top(&mut self) -> &mut Group {
        if self.open.is_empty() {
            self.open.push(Group::default());
        }
        self.open.last_mut().expect("pushed if empty")
    }

    fn token(&mut self, t: &TokenWithSpan) -> Result<(), TooDeep> {
        let at = t.span.start;
        match &t.token {
            Token::LParen | Token::LBracket | Token::LBrace => {
                // A bracket after an expression subscripts it: one more level of its chain.
                if t.token == Token::LBracket {
                    self.operator(at)?;
                }
                self.push(false, at)
            }
            Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::CASE => {
                self.push(true, at)
            }
            Token::RParen | Token::RBracket | Token::RBrace => self.close(false, at),
            Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::END => {
                if self.open.last().is_some_and(|g| g.case) {
                    self.close(true, at)
                } else {
                    Ok(())
                }
            }
            Token::Word(w)
                if w.quote_style.is_none()
                    && w.keyword == Keyword::WHEN
                    && self.open.last().is_some_and(|g| g.case) =>
            {
                self.branch(at)?;
                self.end_segment()
            }
            Token::Comma | Token::SemiColon => self.end_segment(),
            Token::Word(w) if w.quote_style.is_none() && separates(w.keyword) => self.end_segment(),
            Token::Word(w) if w.quote_style.is_none() && is_operator(w.keyword) => {
                self.operator(at)
            }
            t if is_operand(t) => Ok(()),
            _ => self.operator(at),
        }
    }

    fn push(&mut self, case: bool, at: Location) -> Result<(), TooDeep> {
        // The whole text is the first group.
        if self.open.len() > MAX_NESTING {
            return Err(TooDeep {
                at,
                message: format!(
                    "the expression nests more than {MAX_NESTING} parentheses, calls or CASE inside each other; anduin accepts at most {MAX_NESTING}: split it into several steps"
                ),
            });
        }
        self.open.push(Group {
            case,
            ..Group::default()
        });
        Ok(())
    }

    fn operator(&mut self, at: Location) -> Result<(), TooDeep> {
        let g = self.top();
        g.ops += 1;
        if g.ops > MAX_DEPTH && g.crossed.is_none() {
            g.crossed = Some(at);
        }
        if g.crossed.is_none() && g.segment() > MAX_DEPTH {
            return Err(nested(at, g.segment()));
        }
        Ok(())
    }

    /// A `WHEN` of the innermost `CASE`.
    fn branch(&mut self, at: Location) -> Result<(), TooDeep> {
        let g = self.top();
        g.branches += 1;
        if g.branches > MAX_CASE_BRANCHES {
            return Err(TooDeep {
                at,
                message: format!(
                    "the CASE has more than {MAX_CASE_BRANCHES} WHEN branches; anduin accepts at most {MAX_CASE_BRANCHES} (checking and running a longer one takes time and stack that grow faster than its length): split it, write a set of alternatives as `x IN (…)`, or look values up with a join"
                ),
            });
        }
        Ok(())
    }

    /// A comma, `;` or clause keyword: the operators after it are a sibling of those before.
    fn end_segment(&mut self) -> Result<(), TooDeep> {
        let g = self.top();
        if let Some(at) = g.crossed {
            return Err(chain(at, g.ops));
        }
        g.best = g.best.max(g.segment());
        g.ops = 0;
        g.child = 0;
        Ok(())
    }

    fn close(&mut self, case: bool, at: Location) -> Result<(), TooDeep> {
        // An unbalanced closing bracket is the parser's to report.
        if self.open.len() < 2 {
            return Ok(());
        }
        // A `)` closes any `CASE` left open inside its parentheses.
        while self.open.len() > 1 {
            let g = self.open.pop().expect("more than one group");
            if let Some(crossed) = g.crossed {
                return Err(chain(crossed, g.ops));
            }
            let depth = g.depth();
            let parent = self.top();
            parent.child = parent.child.max(depth);
            if parent.crossed.is_none() && parent.segment() > MAX_DEPTH {
                return Err(nested(at, parent.segment()));
            }
            if g.case == case {
                break;
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<usize, TooDeep> {
        let mut depth = 0;
        while let Some(g) = self.open.pop() {
            if let Some(at) = g.crossed {
                return Err(chain(at, g.ops));
            }
            depth = g.depth().max(depth + 1);
        }
        Ok(depth)
    }
}

fn chain(at: Location, ops: usize) -> TooDeep {
    TooDeep {
        at,
        message: format!(
            "the expression has {ops} operators in a row; anduin accepts at most {MAX_DEPTH}: split it into several steps, or write a long list of alternatives as `x IN (…)`"
        ),
    }
}

fn nested(at: Location, depth: usize) -> TooDeep {
    TooDeep {
        at,
        message: format!(
            "the expression nests more than {MAX_DEPTH} levels deep here (operators in a row inside parentheses, calls and CASE add up to {depth}); anduin accepts at most {MAX_DEPTH}: split it into several steps"
        ),
    }
}

/// Tokens that are values or names, and whitespace: no level of their own.
fn is_operand(t: &Token) -> bool {
    matches!(
        t,
        Token::Word(_)
            | Token::Number(..)
            | Token::Char(_)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::TripleSingleQuotedString(_)
            | Token::TripleDoubleQuotedString(_)
            | Token::DollarQuotedString(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_)
            | Token::TripleSingleQuotedByteStringLiteral(_)
            | Token::TripleDoubleQuotedByteStringLiteral(_)
            | Token::SingleQuotedRawStringLiteral(_)
            | Token::DoubleQuotedRawStringLiteral(_)
            | Token::TripleSingleQuotedRawStringLiteral(_)
            | Token::TripleDoubleQuotedRawStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::QuoteDelimitedStringLiteral(_)
            | Token::NationalQuoteDelimitedStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::Placeholder(_)
            | Token::Whitespace(_)
            | Token::Period
            | Token::EOF
    )
}

/// Keywords that put an expression inside another.
fn is_operator(k: Keyword) -> bool {
    use Keyword::*;
    matches!(
        k,
        NOT | AND
            | OR
            | XOR
            | IS
            | IN
            | BETWEEN
            | LIKE
            | ILIKE
            | SIMILAR
            | RLIKE
            | REGEXP
            | COLLATE
            | AT
            | DIV
            | OVERLAPS
            | MEMBER
            | OPERATOR
            | ANY
            | ALL
            | SOME
            | INTERVAL
            | EXISTS
    )
}

/// Keywords after which the tokens are a sibling of those before (clauses, list parts).
fn separates(k: Keyword) -> bool {
    use Keyword::*;
    matches!(
        k,
        SELECT
            | FROM
            | WHERE
            | GROUP
            | HAVING
            | QUALIFY
            | ORDER
            | LIMIT
            | ON
            | JOIN
            | UNION
            | INSERT
            | INTO
            | CREATE
            | WITH
            | PARTITION
            | MEASURES
            | DEFINE
            | PATTERN
            | WHEN
            | THEN
            | ELSE
            | AS
            | FOR
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn depth(sql: &str) -> Result<usize, TooDeep> {
        let toks = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .expect("tokenizes");
        depth_bound(&toks)
    }

    #[test]
    fn shallow_expressions_measure_their_depth() {
        assert_eq!(depth("x").expect("ok"), 1);
        assert_eq!(depth("a + b").expect("ok"), 2);
        assert_eq!(depth("f(a + b, c)").expect("ok"), 3);
        assert_eq!(depth("NOT NOT NOT x").expect("ok"), 4);
        assert_eq!(
            depth("CASE WHEN a > 1 THEN b + 1 + 2 ELSE c END").expect("ok"),
            5
        );
    }

    #[test]
    fn each_when_of_a_case_is_a_level_and_too_many_are_refused_at_the_one_past_the_limit() {
        let case = |n: usize| {
            let whens: Vec<String> = (0..n).map(|i| format!("WHEN x = {i} THEN true")).collect();
            format!("CASE {} ELSE false END", whens.join(" "))
        };
        // The text, the CASE, its 3 branches, the `=` of a branch.
        assert_eq!(depth(&case(3)).expect("ok"), 1 + 1 + 3 + 1);
        assert!(depth(&case(MAX_CASE_BRANCHES)).is_ok());
        let e = depth(&case(MAX_CASE_BRANCHES + 1)).expect_err("too many");
        assert!(e.message.contains("WHEN branches"), "{}", e.message);
        let past = case(MAX_CASE_BRANCHES + 1);
        let at = past.rfind("WHEN").expect("a WHEN") + 1;
        assert_eq!((e.at.line, e.at.column), (1, at as u64));
    }

    #[test]
    fn a_long_chain_is_refused_at_the_operator_past_the_limit_with_its_length() {
        let text = vec!["value"; 3_000].join(" + ");
        let e = depth(&text).expect_err("too long");
        // The 1001st `+` is after 1001 values of 5 characters and 1000 ` + `.
        assert_eq!((e.at.line, e.at.column), (1, 1001 * 5 + 1000 * 3 + 2));
        assert!(
            e.message.starts_with(
                "the expression has 2999 operators in a row; anduin accepts at most 1000"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_chain_at_the_limit_is_accepted() {
        let text = vec!["x"; MAX_DEPTH + 1].join(" AND ");
        assert_eq!(depth(&text).expect("at the limit"), MAX_DEPTH + 1);
    }

    #[test]
    fn the_items_of_a_list_do_not_add_up() {
        let list = vec!["x + 1"; 5_000].join(", ");
        assert_eq!(depth(&format!("x IN ({list})")).expect("a list"), 4);
    }

    #[test]
    fn deep_parentheses_are_refused_without_reading_them_all() {
        let text = "(".repeat(1_000_000);
        let e = depth(&text).expect_err("too deep");
        assert_eq!(e.at.column, MAX_NESTING as u64 + 1);
        assert!(
            e.message
                .starts_with("the expression nests more than 200 parentheses"),
            "{}",
            e.message
        );
    }

    #[test]
    fn chains_inside_parentheses_add_up_to_the_nesting() {
        let inner = vec!["x"; 600].join(" + ");
        let text = format!("({inner}) * 2 + {}", vec!["y"; 600].join(" + "));
        let e = depth(&text).expect_err("adds up");
        assert!(e.message.contains("nests more than"), "{}", e.message);
    }
}
