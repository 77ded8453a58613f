//! A query as people write one: words (all of them must match), "phrases",
//! `field:value` for the facets (`session:`, `agent:`, `type:`, `source:`,
//! `tool:`, `file:`, `status:`), `-word` to leave out, `OR`. A query that does
//! not parse, or names another field, is refused with where and why.

use tantivy::Index;
use tantivy::query::{BooleanQuery, PhraseQuery, Query, QueryParser};
use tantivy::query_grammar::{UserInputAst, UserInputLeaf};

use crate::fields::{Fields, QUERY_FIELDS};
use crate::phrase::Phrase;

use crate::limits::QUERY_CHARS_MAX;

/// Why a query was refused.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// Nothing to find.
    #[error("the query is empty: give words to find, or field:value")]
    Empty,
    /// Longer than [`QUERY_CHARS_MAX`] characters.
    #[error("the query is {0} characters long; at most {QUERY_CHARS_MAX} are taken")]
    TooLong(usize),
    /// It does not parse.
    #[error("the query does not parse at character {position}: {why}")]
    Syntax {
        /// Where, counting characters from 1.
        position: usize,
        /// What was expected.
        why: String,
    },
    /// It names a field a query may not name.
    #[error("the query names the field {0:?}; the fields are {fields}", fields = QUERY_FIELDS.join(", "))]
    UnknownField(String),
    /// tantivy refused it.
    #[error("the query: {0}")]
    Other(String),
}

/// `query` as tantivy's, over `text` and the facets.
pub(crate) fn parse(index: &Index, f: &Fields, query: &str) -> Result<Box<dyn Query>, QueryError> {
    let chars = query.chars().count();
    if chars > QUERY_CHARS_MAX {
        return Err(QueryError::TooLong(chars));
    }
    if query.trim().is_empty() {
        return Err(QueryError::Empty);
    }
    let (ast, errors) = tantivy::query_grammar::parse_query_lenient(query);
    if let Some(e) = errors.first() {
        let position = query[..e.pos.min(query.len())].chars().count() + 1;
        return Err(QueryError::Syntax {
            position,
            why: e.message.clone(),
        });
    }
    check_fields(&ast)?;
    let mut parser = QueryParser::for_index(index, vec![f.text]);
    parser.set_conjunction_by_default();
    let parsed = parser
        .parse_query(query)
        .map_err(|e| QueryError::Other(e.to_string()))?;
    Ok(forward_phrases(parsed))
}

/// `query` with each of its phrases moved forward only (see `phrase.rs`).
fn forward_phrases(query: Box<dyn Query>) -> Box<dyn Query> {
    if let Some(phrase) = query.downcast_ref::<PhraseQuery>() {
        return Box::new(Phrase(phrase.clone()));
    }
    if let Some(all) = query.downcast_ref::<BooleanQuery>() {
        let clauses = all
            .clauses()
            .iter()
            .map(|(occur, q)| (*occur, forward_phrases(q.box_clone())))
            .collect();
        return Box::new(BooleanQuery::with_minimum_required_clauses(
            clauses,
            all.get_minimum_number_should_match(),
        ));
    }
    query
}

/// Whether `query` (as [`parse`] makes it) holds a phrase anywhere.
pub(crate) fn holds_phrase(query: &dyn Query) -> bool {
    if query.downcast_ref::<Phrase>().is_some() {
        return true;
    }
    query
        .downcast_ref::<BooleanQuery>()
        .is_some_and(|all| all.clauses().iter().any(|(_, q)| holds_phrase(q.as_ref())))
}

/// Refuses a field a query may not name.
fn check_fields(ast: &UserInputAst) -> Result<(), QueryError> {
    match ast {
        UserInputAst::Clause(clauses) => {
            for (_, clause) in clauses {
                check_fields(clause)?;
            }
            Ok(())
        }
        UserInputAst::Boost(inner, _) => check_fields(inner),
        UserInputAst::Leaf(leaf) => {
            let field = match leaf.as_ref() {
                UserInputLeaf::Literal(l) => l.field_name.as_deref(),
                UserInputLeaf::Range { field, .. } => field.as_deref(),
                UserInputLeaf::Set { field, .. } => field.as_deref(),
                _ => None,
            };
            match field {
                Some(name) if !QUERY_FIELDS.contains(&name) => {
                    Err(QueryError::UnknownField(name.to_string()))
                }
                _ => Ok(()),
            }
        }
    }
}

/// Checks that `query` parses, without an index at hand (a search across
/// several indexes refuses a bad query once, before it reads any).
pub fn check(query: &str) -> Result<(), QueryError> {
    let (schema, fields) = crate::fields::schema();
    let index = Index::create_in_ram(schema);
    crate::fields::register(&index);
    parse(&index, &fields, query).map(|_| ())
}
