//! The queries a server serves, by name, and the feed of their engine events.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::events::EventFeed;
use crate::QueryControl;

/// Why a query could not be added to a [`Registry`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Another query of that name is served already.
    #[error("a query named \"{name}\" is served already: give this one another name (--name)")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// The name cannot be used in a URL path or a file name.
    #[error("the query name \"{name}\" is not usable: {why}")]
    BadName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The queries served, by name; queries are added and removed while the server runs.
/// Clones share the same queries and the same event feed.
#[derive(Clone)]
pub struct Registry {
    queries: Arc<RwLock<BTreeMap<String, Arc<dyn QueryControl>>>>,
    events: EventFeed,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("queries", &self.names())
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

/// How many events wait for the slowest `GET /api/v1/events` client before it misses some.
const EVENT_BUFFER: usize = 1024;

impl Registry {
    /// No queries yet.
    pub fn new() -> Self {
        Self {
            queries: Arc::default(),
            events: EventFeed::new(EVENT_BUFFER),
        }
    }

    /// Serves `query` under its name (`query.info().name`).
    pub fn add(&self, query: Arc<dyn QueryControl>) -> Result<String, RegistryError> {
        let name = query.info().name;
        check_name(&name)?;
        let mut queries = self
            .queries
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if queries.contains_key(&name) {
            return Err(RegistryError::Duplicate { name });
        }
        queries.insert(name.clone(), query);
        tracing::debug!(query = %name, "query served by the API");
        Ok(name)
    }

    /// Stops serving the query `name`; whether it was served.
    pub fn remove(&self, name: &str) -> bool {
        self.queries
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(name)
            .is_some()
    }

    /// The query `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn QueryControl>> {
        self.queries
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .map(Arc::clone)
    }

    /// The names served, sorted.
    pub fn names(&self) -> Vec<String> {
        self.queries
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// Every query served with its name, sorted by name.
    pub fn entries(&self) -> Vec<(String, Arc<dyn QueryControl>)> {
        self.queries
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(n, q)| (n.clone(), Arc::clone(q)))
            .collect()
    }

    /// The subscriber to hand the run of query `name` (`Events::with`): its engine events
    /// go to every `GET /api/v1/events` client. It never blocks the publisher.
    pub fn event_feed(&self, name: &str) -> EventFeed {
        self.events.for_query(name)
    }

    /// The feed every query's events go through.
    pub(crate) fn events(&self) -> &EventFeed {
        &self.events
    }
}

/// The longest query name, in bytes: it is part of the registration's file name
/// (`NAME.PID.json`), which the system limits to 255 bytes.
pub const MAX_NAME_LEN: usize = 100;

/// The rule for a query name, as [`check_name`] applies it.
pub const NAME_RULE: &str = "a query name is 1 to 100 bytes, does not start with a dot, and \
                             has no slash, backslash or control character";

/// Whether `name` can be a query's name: a URL path segment and part of a file name. Not
/// empty, at most [`MAX_NAME_LEN`] bytes, not starting with a dot (nor `.` or `..`), no `/`
/// or `\\`, no control characters ([`NAME_RULE`]).
pub fn check_name(name: &str) -> Result<(), RegistryError> {
    let why = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > MAX_NAME_LEN {
        Some("it is longer than 100 bytes")
    } else if name.starts_with('.') {
        Some("it starts with a dot")
    } else if name.contains(['/', '\\']) {
        Some("it contains a slash")
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    };
    match why {
        Some(why) => Err(RegistryError::BadName {
            name: name.escape_debug().to_string(),
            why,
        }),
        None => Ok(()),
    }
}

/// A usable name made from `stem` (a query file's stem): leading dots dropped, slashes,
/// backslashes and control characters replaced by `_`, cut to [`MAX_NAME_LEN`] bytes (at a
/// character boundary); `None` when nothing usable is left.
pub fn usable_name(stem: &str) -> Option<String> {
    let mut name: String = stem
        .trim_start_matches('.')
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if name.len() > MAX_NAME_LEN {
        let mut end = MAX_NAME_LEN;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    check_name(&name).ok().map(|()| name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeQuery;

    #[test]
    fn a_query_is_served_under_its_name_until_removed_and_a_second_of_that_name_is_refused() {
        let r = Registry::new();
        assert_eq!(
            r.add(Arc::new(FakeQuery::new("sensors"))),
            Ok("sensors".to_string())
        );
        assert_eq!(
            r.add(Arc::new(FakeQuery::new("sensors"))),
            Err(RegistryError::Duplicate {
                name: "sensors".into()
            })
        );
        assert!(r.get("sensors").is_some());
        assert_eq!(r.names(), ["sensors"]);
        assert!(r.remove("sensors"));
        assert!(!r.remove("sensors"));
        assert!(r.get("sensors").is_none());
    }

    #[test]
    fn names_that_cannot_be_a_path_segment_or_a_file_name_are_refused() {
        let long = "x".repeat(MAX_NAME_LEN + 1);
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "a\\b",
            "a\nb",
            long.as_str(),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_name("sensors-2.v1").is_ok());
        assert!(check_name(&"x".repeat(MAX_NAME_LEN)).is_ok());
    }

    #[test]
    fn a_file_stem_is_made_usable_or_found_unusable() {
        assert_eq!(usable_name("sensors").as_deref(), Some("sensors"));
        assert_eq!(usable_name(".hidden").as_deref(), Some("hidden"));
        assert_eq!(usable_name("a\nb\u{1b}").as_deref(), Some("a_b_"));
        assert_eq!(usable_name("..."), None);
        assert_eq!(usable_name(""), None);
        let long = usable_name(&"é".repeat(80)).expect("cut");
        assert_eq!(long.len(), MAX_NAME_LEN);
        assert!(check_name(&long).is_ok());
    }
}
