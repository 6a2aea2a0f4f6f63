//! `RUNNING` and `FINAL` before a navigation or an aggregate in DEFINE and MEASURES
//! (`FINAL LAST(B.ts)`): sqlparser does not parse them, so they are blanked before it parses
//! and where each `FINAL` stood is remembered for the compiler ([`super::expr`]).

use sqlparser::tokenizer::Token;

/// `RUNNING` and `FINAL` before a call (`FINAL LAST(B.ts)`), which sqlparser does not parse:
/// `text` with them blanked (every other character in its place), and where each `FINAL`'s
/// call starts (line, column). `RUNNING` is what an expression computes anyway.
pub(crate) fn modifiers(text: &str) -> (String, Vec<(u64, u64)>) {
    use sqlparser::dialect::GenericDialect;
    use sqlparser::tokenizer::Tokenizer;
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, text).tokenize_with_location() else {
        return (text.to_string(), Vec::new());
    };
    let solid: Vec<_> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let word = |i: usize| match solid.get(i).map(|t| &t.token) {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_uppercase()),
        _ => None,
    };
    let mut blanks = Vec::new();
    let mut finals = Vec::new();
    for i in 0..solid.len() {
        let Some(w) = word(i) else { continue };
        let call =
            word(i + 1).is_some() && solid.get(i + 2).is_some_and(|t| t.token == Token::LParen);
        if call && (w == "RUNNING" || w == "FINAL") {
            blanks.push(solid[i].span);
            if w == "FINAL" {
                let at = solid[i + 1].span.start;
                finals.push((at.line, at.column));
            }
        }
    }
    if blanks.is_empty() {
        return (text.to_string(), finals);
    }
    let mut lines: Vec<Vec<char>> = text.split('\n').map(|l| l.chars().collect()).collect();
    for b in blanks {
        if let Some(line) = usize::try_from(b.start.line)
            .ok()
            .and_then(|l| l.checked_sub(1))
            .and_then(|l| lines.get_mut(l))
        {
            for col in b.start.column..b.end.column {
                if let Some(c) = usize::try_from(col)
                    .ok()
                    .and_then(|c| c.checked_sub(1))
                    .and_then(|c| line.get_mut(c))
                {
                    *c = ' ';
                }
            }
        }
    }
    let out: Vec<String> = lines.iter().map(|l| l.iter().collect()).collect();
    (out.join("\n"), finals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_and_final_are_blanked_in_place_and_finals_remembered() {
        let (text, finals) =
            modifiers("RUNNING COUNT(*) AS r,\n  FINAL LAST(B.ts) AS f, final AS x");
        assert_eq!(
            text,
            "        COUNT(*) AS r,\n        LAST(B.ts) AS f, final AS x"
        );
        // The call's name: line 2, column 9.
        assert_eq!(finals, [(2, 9)]);
        // A column named final, or FINAL not before a call, stays.
        let (text, finals) = modifiers("final + 1, FINAL (x)");
        assert_eq!(text, "final + 1, FINAL (x)");
        assert!(finals.is_empty());
    }
}
